/* Unary gRPC over libcurl's HTTP/2, shared by the etcd and CRI clients. See ursa/grpc.h. */
#include "ursa/grpc.h"
#include "ursa/errors.h"
#include "ursa/xalloc.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- pure pieces ---- */

struct curl_slist *grpc_headers(struct curl_slist *h, long timeout_ms)
{
	char t[48];

	h = curl_slist_append(h, "Expect:");
	h = curl_slist_append(h, "content-type: application/grpc");
	h = curl_slist_append(h, "te: trailers");
	if (timeout_ms <= 0)
		return h;
	/* the value has at most 8 digits */
	if (timeout_ms <= 99999999)
		snprintf(t, sizeof(t), "grpc-timeout: %ldm", timeout_ms);
	else
		snprintf(t, sizeof(t), "grpc-timeout: %ldS", timeout_ms / 1000 > 99999999 ? 99999999L : timeout_ms / 1000);
	return curl_slist_append(h, t);
}

void grpc_frame(struct buf *out, const void *msg, size_t len)
{
	char prefix[GRPC_PREFIX] = { 0, (char)(len >> 24), (char)(len >> 16), (char)(len >> 8), (char)len };

	buf_grow(out, GRPC_PREFIX + len);
	buf_add(out, prefix, GRPC_PREFIX);
	if (len)
		buf_add(out, msg, len);
}

int grpc_unframe(const void *body, size_t len, size_t cap, const uint8_t **ret_msg, size_t *ret_len)
{
	const uint8_t *p = body;
	uint32_t n;

	if (!p || len < GRPC_PREFIX || p[0] != 0)
		return E_INTERNAL; /* truncated, or compressed (we never offer an encoding) */
	n = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | (uint32_t)p[4];
	if (n > cap || (size_t)n != len - GRPC_PREFIX)
		return E_INTERNAL;
	*ret_msg = p + GRPC_PREFIX;
	*ret_len = n;
	return 0;
}

void grpc_status_release(struct grpc_status *st)
{
	buf_release(&st->message);
	st->has_code = false;
	st->code = 0;
}

void grpc_pct_decode(const char *in, size_t len, size_t cap, struct buf *out)
{
	for (size_t i = 0; i < len && out->len < cap; i++) {
		int hi, lo;
		if (in[i] == '%' && i + 2 < len && (hi = hex_digit(in[i + 1])) >= 0 && (lo = hex_digit(in[i + 2])) >= 0) {
			buf_addch(out, (char)(hi << 4 | lo));
			i += 2;
		} else {
			buf_addch(out, in[i]);
		}
	}
	if (!out->ptr)
		buf_add(out, "", 0);
}

/* If line is "name: value", the value without surrounding blanks. */
static bool header_value(const char *line, size_t len, const char *name, struct sv *ret)
{
	size_t n = strlen(name);

	if (len <= n || line[n] != ':' || strncasecmp(line, name, n) != 0)
		return false;
	ret->ptr = line + n + 1;
	ret->len = len - n - 1;
	while (ret->len && (ret->ptr[0] == ' ' || ret->ptr[0] == '\t'))
		ret->ptr++, ret->len--;
	while (ret->len && strchr(" \t\r\n", ret->ptr[ret->len - 1]))
		ret->len--;
	return true;
}

void grpc_status_header_line(struct grpc_status *st, const char *line, size_t len)
{
	struct sv v;
	long long code;

	if (header_value(line, len, "grpc-status", &v)) {
		/* codes are 0..16; anything longer than a few digits is not one */
		if (v.len == 0 || v.len > 4)
			return;
		for (size_t i = 0; i < v.len; i++)
			if (v.ptr[i] < '0' || v.ptr[i] > '9')
				return;
		if (parse_int64_sv(v, &code) < 0)
			return;
		st->code = code;
		st->has_code = true;
	} else if (header_value(line, len, "grpc-message", &v)) {
		buf_reset(&st->message);
		grpc_pct_decode(v.ptr, v.len, GRPC_MAX_STATUS_MESSAGE, &st->message);
	}
}

int grpc_code_error(int64_t code)
{
	switch (code) {
	case GRPC_NOT_FOUND:
		return E_NOT_FOUND;
	case GRPC_ALREADY_EXISTS:
		return E_ALREADY_EXISTS;
	case GRPC_INVALID_ARGUMENT:
	case GRPC_OUT_OF_RANGE:
		return E_BAD_REQUEST;
	case GRPC_FAILED_PRECONDITION:
	case GRPC_ABORTED:
		return E_CONFLICT;
	case GRPC_CANCELED:
	case GRPC_DEADLINE_EXCEEDED:
		return E_TIMEOUT;
	case GRPC_UNAVAILABLE:
		return E_UNAVAILABLE;
	case GRPC_UNAUTHENTICATED:
		return E_UNAUTHORIZED;
	case GRPC_PERMISSION_DENIED:
		return E_FORBIDDEN;
	case GRPC_RESOURCE_EXHAUSTED:
		return E_TOO_MANY;
	case GRPC_UNIMPLEMENTED:
		return E_METHOD;
	default:
		return E_INTERNAL;
	}
}

int grpc_http_error(long http_status)
{
	switch (http_status) {
	case 503:
		return E_UNAVAILABLE;
	case 504:
		return E_TIMEOUT;
	case 413:
		return E_TOO_LARGE;
	default:
		return E_INTERNAL;
	}
}

/* ---- one exchange ---- */

struct upload {
	struct grpc_exchange *x;
	size_t off;
};

static size_t on_read(char *dst, size_t size, size_t nmemb, void *ud)
{
	struct upload *u = ud;
	const struct buf *b = u->x->framed;
	size_t n = size * nmemb;

	u->x->sent = true;
	if (n > b->len - u->off)
		n = b->len - u->off;
	memcpy(dst, b->ptr + u->off, n);
	u->off += n;
	return n;
}

/* curl rewinds when it re-sends on a fresh connection. */
static int on_seek(void *ud, curl_off_t offset, int origin)
{
	struct upload *u = ud;

	if (origin != SEEK_SET || offset < 0 || (size_t)offset > u->x->framed->len)
		return CURL_SEEKFUNC_FAIL;
	u->off = (size_t)offset;
	return CURL_SEEKFUNC_OK;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *ud)
{
	struct grpc_exchange *x = ud;
	size_t n = size * nmemb;

	if (x->body.len + n > x->max_body) {
		x->too_big = true;
		return 0;
	}
	buf_add(&x->body, data, n);
	return n;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *ud)
{
	struct grpc_exchange *x = ud;

	grpc_status_header_line(&x->status, data, size * nmemb);
	return size * nmemb;
}

void grpc_exchange_perform(CURL *c, struct grpc_exchange *x)
{
	struct upload up = { x, 0 };

	x->sent = false;
	x->too_big = false;
	x->http_status = 0;
	x->http_version = 0;
	grpc_status_release(&x->status);
	buf_reset(&x->body);
	curl_easy_setopt(c, CURLOPT_URL, x->url);
	curl_easy_setopt(c, CURLOPT_POST, 1L);
	curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
	curl_easy_setopt(c, CURLOPT_READDATA, &up);
	curl_easy_setopt(c, CURLOPT_SEEKFUNCTION, on_seek);
	curl_easy_setopt(c, CURLOPT_SEEKDATA, &up);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)x->framed->len);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, x);
	x->cc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &x->http_status);
	curl_easy_getinfo(c, CURLINFO_HTTP_VERSION, &x->http_version);
	/* the callbacks' data lives on this stack frame */
	curl_easy_setopt(c, CURLOPT_READDATA, NULL);
	curl_easy_setopt(c, CURLOPT_SEEKDATA, NULL);
}

void grpc_exchange_release(struct grpc_exchange *x)
{
	grpc_status_release(&x->status);
	buf_release(&x->body);
}

int grpc_exchange_outcome(const struct grpc_exchange *x, grpc_error_fn map, const uint8_t **ret_msg,
			  size_t *ret_len)
{
	if (!x->status.has_code)
		return grpc_http_error(x->http_status == 200 ? 500 : x->http_status);
	if (x->status.code != 0)
		return map ? map(x->status.code, buf_cstr(&x->status.message)) : grpc_code_error(x->status.code);
	if (x->http_status != 200 || grpc_unframe(x->body.ptr, x->body.len, x->max_body, ret_msg, ret_len) < 0)
		return E_INTERNAL;
	return 0;
}

/* ---- handle pool ---- */

void curl_pool_init(struct curl_pool *p, size_t max_idle, void (*setup)(void *ud, CURL *c), void *ud)
{
	*p = (struct curl_pool){ .max_idle = max_idle, .setup = setup, .ud = ud };
	pthread_mutex_init(&p->lock, NULL);
}

static void handle_free(CURL *c)
{
	char *priv = NULL;
	curl_easy_getinfo(c, CURLINFO_PRIVATE, &priv);
	curl_easy_cleanup(c);
	free(priv);
}

void curl_pool_release(struct curl_pool *p)
{
	for (size_t i = 0; i < p->n; i++)
		handle_free(p->h[i]);
	free(p->h);
	pthread_mutex_destroy(&p->lock);
}

CURL *curl_pool_take(struct curl_pool *p)
{
	CURL *c = NULL;
	pthread_mutex_lock(&p->lock);
	if (p->n)
		c = p->h[--p->n];
	pthread_mutex_unlock(&p->lock);
	if (c)
		return c;
	if (!(c = curl_easy_init()))
		abort();
	p->setup(p->ud, c);
	return c;
}

void curl_pool_give(struct curl_pool *p, CURL *c)
{
	pthread_mutex_lock(&p->lock);
	if (p->max_idle && p->n >= p->max_idle) {
		pthread_mutex_unlock(&p->lock);
		handle_free(c); /* a burst's extra handles do not stay (their buffers are ~100 KB each) */
		return;
	}
	if (p->n == p->alloc) {
		p->alloc = p->alloc ? p->alloc * 2 : 8;
		p->h = xrealloc(p->h, p->alloc * sizeof(*p->h));
	}
	p->h[p->n++] = c;
	pthread_mutex_unlock(&p->lock);
}
