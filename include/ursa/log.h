/* One-line structured logs: "ts=... level=... msg=... key=value ...".
 * Only daemons log; the shared library reports errors by return codes. */
#ifndef URSA_LOG_H
#define URSA_LOG_H

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

void log_set_level(enum log_level lvl);
/* By the name a --log-level flag takes: "debug", "info", "warn" or "error" (else info). */
void log_set_level_name(const char *name);
void log_set_component(const char *name);
/* fmt holds extra "key=value" pairs; user-controlled strings should be quoted with %s in "..." */
void log_msg(enum log_level lvl, const char *msg, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define log_info(msg, ...) log_msg(LOG_INFO, msg, __VA_ARGS__)
#define log_warn(msg, ...) log_msg(LOG_WARN, msg, __VA_ARGS__)
#define log_error(msg, ...) log_msg(LOG_ERROR, msg, __VA_ARGS__)
#define log_debug(msg, ...) log_msg(LOG_DEBUG, msg, __VA_ARGS__)

#endif
