/* One skeleton for every Ursa daemon (src/common/daemon/daemon.c): a daemon is a table, and
 * daemon_main does what all of them do around it:
 *   flags       the table's own flags, then --health-listen (when the daemon serves one) and
 *               --log-level; --help; a bad flag or a failed check exits 2
 *   logging     log component and level
 *   signals     SIGINT and SIGTERM blocked in every thread (waited for, never delivered),
 *               SIGPIPE ignored
 *   health      /healthz, /readyz and /metrics at --health-listen (ursa/health.h)
 *   start       the daemon's start; its failure is its exit code
 *   readiness   READY=1 to systemd (ursa/notify.h), or the daemon's own ready hook
 *   wait        for SIGINT/SIGTERM, or for the daemon to report its lease lost
 *   shutdown    "shutting down", the health server, then the daemon's stop; exit 0, or 1 when
 *               the lease was lost (the supervisor restarts it as a standby)
 * `program NAME args...` runs a subcommand instead (the kubelet's `shim`). */
#ifndef URSA_DAEMON_H
#define URSA_DAEMON_H
#include <stdbool.h>
#include "ursa/health.h"
#include "ursa/options.h"

struct daemon; /* the running skeleton, handed to the definition's start and run */

struct daemon_command {
	const char *name;                      /* argv[1] */
	int (*main)(int argc, char **argv);    /* gets argv from NAME on; returns the exit code */
};

struct daemon_def {
	const char *program;        /* "ursa-scheduler": --help, messages, the ursa_leader label */
	const char *summary;        /* --help's paragraph */
	const char *component;      /* log component */
	const struct opt *opts;     /* the daemon's flags (pointers into ud's storage, defaults set) */
	int nopts;
	/* Non-NULL: the daemon has --health-listen; this example address goes in its help. */
	const char *health_example;
	health_metrics_fn metrics;  /* optional: the daemon's own families on /metrics (called with ud) */
	const struct daemon_command *commands; /* optional, ends with a NULL name */
	/* Optional: checks the parsed flags, printing what is wrong; nonzero exits 2. */
	int (*check)(void *ud);
	/* Starts the daemon (its own "started" log line included). 0, or the exit code, with an
	 * error (new string) in *ret_err logged as "cannot start" or NULL when it said why itself. */
	int (*start)(void *ud, struct daemon *dm, char **ret_err);
	/* Optional, polled every 200 ms once started: true when the daemon lost its lease. */
	bool (*lost)(void *ud);
	/* Optional: tells whoever waits that the daemon serves (default: notify_ready()). */
	void (*ready)(void *ud);
	/* Stops what start started, in order (may leave with _exit). */
	void (*stop)(void *ud);
	/* Optional: replaces start..stop (daemon_serve) after flags, logging and signals; the
	 * gateway's --workers master, which runs daemon_serve in each worker it forks. */
	int (*run)(void *ud, struct daemon *dm);
};

/* The daemon's main(): returns its exit code (2 bad flags, 1 lost lease or its start's code). */
int daemon_main(const struct daemon_def *def, void *ud, int argc, char **argv);
/* Health listener, start, readiness, wait, shutdown: what daemon_main does after the flags
 * (for a definition's run). Returns the exit code. */
int daemon_serve(struct daemon *dm);

/* For start: waits up to ms for SIGINT/SIGTERM; true if one came (then daemon_serve stops at
 * once after start returns). Also true when one came earlier. */
bool daemon_sleep(struct daemon *dm, int ms);
/* The health server (NULL when --health-listen is not given); ursa_leader through
 * daemon_set_leader. Borrowed: the skeleton stops it before the definition's stop. */
struct health_server *daemon_health(struct daemon *dm);
void daemon_set_leader(struct daemon *dm, bool leader);

#endif
