#include "ursa/buf.h"
#include "ursa/xalloc.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void buf_init(struct buf *b)
{
	b->ptr = NULL;
	b->len = 0;
	b->alloc = 0;
}

void buf_release(struct buf *b)
{
	free(b->ptr);
	buf_init(b);
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->ptr)
		b->ptr[0] = '\0';
}

void buf_grow(struct buf *b, size_t extra)
{
	size_t need = b->len + extra + 1;
	if (need <= b->alloc)
		return;
	size_t n = b->alloc ? b->alloc : 64;
	while (n < need)
		n = n * 3 / 2 + 16;
	b->ptr = xrealloc(b->ptr, n);
	b->alloc = n;
}

void buf_add(struct buf *b, const void *data, size_t len)
{
	buf_grow(b, len);
	if (len)
		memcpy(b->ptr + b->len, data, len);
	b->len += len;
	b->ptr[b->len] = '\0';
}

void buf_adds(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

void buf_addch(struct buf *b, char c)
{
	buf_grow(b, 1);
	b->ptr[b->len++] = c;
	b->ptr[b->len] = '\0';
}

void buf_vaddf(struct buf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	buf_grow(b, 64);
	int n = vsnprintf(b->ptr + b->len, b->alloc - b->len, fmt, ap);
	if (n < 0)
		abort();
	if ((size_t)n >= b->alloc - b->len) {
		buf_grow(b, (size_t)n);
		vsnprintf(b->ptr + b->len, b->alloc - b->len, fmt, ap2);
	}
	va_end(ap2);
	b->len += (size_t)n;
}

void buf_addf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	buf_vaddf(b, fmt, ap);
	va_end(ap);
}

void buf_add_query_escaped(struct buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
		    *p == '_' || *p == '.' || *p == '~') {
			buf_addch(b, (char)*p);
		} else {
			char esc[3] = { '%', hex[*p >> 4], hex[*p & 15] };
			buf_add(b, esc, 3);
		}
	}
}

void buf_add_json_str(struct buf *b, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	buf_grow(b, len + 2);
	buf_addch(b, '"');
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		switch (c) {
		case '"': buf_add(b, "\\\"", 2); break;
		case '\\': buf_add(b, "\\\\", 2); break;
		case '\n': buf_add(b, "\\n", 2); break;
		case '\r': buf_add(b, "\\r", 2); break;
		case '\t': buf_add(b, "\\t", 2); break;
		default:
			if (c < 0x20) {
				char esc[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };
				buf_add(b, esc, 6);
			} else {
				buf_addch(b, (char)c);
			}
		}
	}
	buf_addch(b, '"');
}

char *buf_detach(struct buf *b, size_t *ret_len)
{
	if (!b->ptr)
		buf_grow(b, 0), b->ptr[0] = '\0';
	char *p = b->ptr;
	if (ret_len)
		*ret_len = b->len;
	buf_init(b);
	return p;
}

const char *buf_cstr(const struct buf *b)
{
	return b->ptr ? b->ptr : "";
}

struct sv sv_from(const char *s)
{
	return (struct sv){ s, s ? strlen(s) : 0 };
}

bool sv_eq(struct sv a, const char *s)
{
	size_t n = strlen(s);
	return a.len == n && memcmp(a.ptr, s, n) == 0;
}

bool sv_has_prefix(struct sv a, const char *prefix)
{
	size_t n = strlen(prefix);
	return a.len >= n && memcmp(a.ptr, prefix, n) == 0;
}

char *sv_dup(struct sv a)
{
	return xstrndup(a.ptr ? a.ptr : "", a.len);
}

int parse_int64(const char *s, long long *ret_v)
{
	if (!s || !*s)
		return -1;
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || *end)
		return -1;
	*ret_v = v;
	return 0;
}

int parse_int64_sv(struct sv s, long long *ret_v)
{
	char tmp[32];
	if (s.len == 0 || s.len >= sizeof(tmp))
		return -1;
	memcpy(tmp, s.ptr, s.len);
	tmp[s.len] = '\0';
	return parse_int64(tmp, ret_v);
}

int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int buf_read_fd(struct buf *b, int fd, size_t max)
{
	char tmp[8192];
	size_t total = 0;
	while (total < max) {
		size_t want = max - total < sizeof(tmp) ? max - total : sizeof(tmp);
		ssize_t n = read(fd, tmp, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		buf_add(b, tmp, (size_t)n);
		total += (size_t)n;
	}
	return 0;
}

const char *buf_setf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	buf_reset(b);
	va_start(ap, fmt);
	buf_vaddf(b, fmt, ap);
	va_end(ap);
	return buf_cstr(b);
}
