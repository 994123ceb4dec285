/* Growable owned byte buffer (always NUL-terminated) and a non-owning string view. */
#ifndef URSA_BUF_H
#define URSA_BUF_H
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

struct buf {
	char *ptr;    /* NUL-terminated once anything was added; NULL for an empty, unallocated buf */
	size_t len;
	size_t alloc;
};
#define BUF_INIT { NULL, 0, 0 }

/* A view into someone else's bytes; not NUL-terminated. */
struct sv {
	const char *ptr;
	size_t len;
};
#define SV(lit) ((struct sv){ (lit), sizeof(lit) - 1 })

void buf_init(struct buf *b);
void buf_release(struct buf *b);          /* frees and resets to empty */
void buf_reset(struct buf *b);            /* keeps the allocation, len = 0 */
void buf_grow(struct buf *b, size_t extra);
void buf_add(struct buf *b, const void *data, size_t len);
void buf_adds(struct buf *b, const char *s);
void buf_addch(struct buf *b, char c);
void buf_addf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_vaddf(struct buf *b, const char *fmt, va_list ap);
/* b's content replaced by the formatted text; returns buf_cstr(b) (valid until b's next change):
 * field paths built for one message after another. */
const char *buf_setf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Adds s percent-encoded for a query value or path segment (all but A-Z a-z 0-9 - _ . ~). */
void buf_add_query_escaped(struct buf *b, const char *s);
/* Adds s as a JSON string literal with quotes and escapes. */
void buf_add_json_str(struct buf *b, const char *s, size_t len);
/* Takes ownership of the bytes: returns them (never NULL) and resets b. */
char *buf_detach(struct buf *b, size_t *ret_len);
/* Returns b's contents as a C string ("" when empty); borrowed. */
const char *buf_cstr(const struct buf *b);
/* Appends what fd gives until end of file or max bytes (retrying EINTR); fd stays open.
 * 0, or -errno of a failed read (what came before it stays in b). */
int buf_read_fd(struct buf *b, int fd, size_t max);

struct sv sv_from(const char *s);
bool sv_eq(struct sv a, const char *s);
bool sv_has_prefix(struct sv a, const char *prefix);
char *sv_dup(struct sv a);                 /* new heap string */

/* The value of a hexadecimal digit (0-9, a-f, A-F), or -1. */
int hex_digit(char c);

/* Strict integer parse of the whole string; 0 on success, -1 otherwise. */
int parse_int64(const char *s, long long *ret_v);
int parse_int64_sv(struct sv s, long long *ret_v);

#endif
