/* The pure parts of the gateway's HTTP/1.1 client: endpoint URLs, request heads, and responses
 * read with libhttp-parser (Content-Length, chunked and close-delimited bodies, HEAD, 1xx). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "h1.h"
#include "ursa/errors.h"
#include "ursa/xalloc.h"

/* --- endpoints ------------------------------------------------------------------------------ */
void h1_endpoint_release(struct h1_endpoint *e)
{
	free(e->host);
	free(e->port);
	free(e->authority);
	free(e->prefix);
	memset(e, 0, sizeof(*e));
}

static bool url_byte_ok(unsigned char c)
{
	return c > 0x20 && c < 0x7f && c != '"' && c != '<' && c != '>' && c != '\\' && c != '^' && c != '`' &&
	       c != '{' && c != '|' && c != '}';
}

int h1_endpoint_parse(const char *base, struct h1_endpoint *ret)
{
	struct h1_endpoint e = { 0 };
	const char *s;
	if (strncasecmp(base, "https://", 8) == 0) {
		e.tls = true;
		s = base + 8;
	} else if (strncasecmp(base, "http://", 7) == 0) {
		s = base + 7;
	} else {
		return E_BAD_REQUEST;
	}
	for (const char *q = s; *q; q++)
		if (!url_byte_ok((unsigned char)*q) || *q == '?' || *q == '#')
			return E_BAD_REQUEST;
	size_t alen = strcspn(s, "/");
	const char *auth = s, *aend = s + alen;
	if (!alen || memchr(auth, '@', alen))
		return E_BAD_REQUEST;
	const char *hs = auth, *he, *pstart = NULL;
	if (*auth == '[') {
		const char *rb = memchr(auth, ']', alen);
		if (!rb || rb == auth + 1)
			return E_BAD_REQUEST;
		hs = auth + 1;
		he = rb;
		if (rb + 1 < aend) {
			if (rb[1] != ':')
				return E_BAD_REQUEST;
			pstart = rb + 2;
		}
	} else {
		const char *colon = memchr(auth, ':', alen);
		he = colon ? colon : aend;
		if (colon)
			pstart = colon + 1;
		if (he == hs)
			return E_BAD_REQUEST;
	}
	long port = e.tls ? 443 : 80;
	if (pstart) {
		if (pstart == aend || aend - pstart > 5)
			return E_BAD_REQUEST;
		port = 0;
		for (const char *q = pstart; q < aend; q++) {
			if (*q < '0' || *q > '9')
				return E_BAD_REQUEST;
			port = port * 10 + (*q - '0');
		}
		if (port < 1 || port > 65535)
			return E_BAD_REQUEST;
	}
	e.host = xstrndup(hs, (size_t)(he - hs));
	e.port = xasprintf("%ld", port);
	e.authority = xstrndup(auth, alen);
	e.prefix = xstrdup(aend);
	*ret = e;
	return 0;
}

/* --- requests ------------------------------------------------------------------------------- */
static bool bodyless(const char *method)
{
	return strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
}

bool h1_method_retryable(const char *method)
{
	return bodyless(method);
}

/* The request target as sent: bytes a target may not hold are percent-encoded (a decoded
 * space, a control byte, anything past ASCII), never sent raw to split the request line. */
static void add_target(struct buf *out, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p > 0x20 && *p < 0x7f) {
			buf_addch(out, (char)*p);
		} else {
			char e[3] = { '%', hex[*p >> 4], hex[*p & 15] };
			buf_add(out, e, 3);
		}
	}
}

void h1_request_head(const struct h1_endpoint *ep, const struct upstream_req *rq, struct buf *out)
{
	buf_adds(out, rq->method);
	buf_addch(out, ' ');
	add_target(out, ep->prefix);
	add_target(out, *rq->path ? rq->path : "/");
	buf_adds(out, " HTTP/1.1\r\nHost: ");
	buf_adds(out, ep->authority);
	buf_adds(out, "\r\n");
	/* The header lines libcurl was given ("Name: value\0" each, "Name:" to leave one out). */
	struct buf lines = BUF_INIT;
	size_t offs[UPSTREAM_HEADERS_MAX];
	size_t n = upstream_header_lines(rq, &lines, offs);
	for (size_t i = 0; i < n; i++) {
		const char *l = lines.ptr + offs[i];
		size_t len = strlen(l);
		if (len && l[len - 1] == ':')
			continue;
		buf_add(out, l, len);
		buf_adds(out, "\r\n");
	}
	buf_release(&lines);
	if (!bodyless(rq->method))
		buf_addf(out, "Content-Length: %zu\r\n", rq->body ? rq->len : 0);
	buf_adds(out, "\r\n");
}

/* --- responses ------------------------------------------------------------------------------ */
enum { KEEP_NONE, KEEP_CTYPE, KEEP_WARNING, KEEP_ETAG, KEEP_MOVING };
#define FIELD_MAX 32 /* longer names are none we keep */

static struct h1_parser *P(http_parser *hp)
{
	return hp->data;
}

/* The header whose value was being read is complete: keep it where it goes. */
static void end_value(struct h1_parser *p)
{
	if (!p->in_value)
		return;
	p->in_value = false;
	struct buf *v = &p->value;
	size_t a = 0, z = v->len;
	while (a < z && (v->ptr[a] == ' ' || v->ptr[a] == '\t'))
		a++;
	while (z > a && (v->ptr[z - 1] == ' ' || v->ptr[z - 1] == '\t'))
		z--;
	struct upstream_resp *r = &p->resp;
	switch (p->want) {
	case KEEP_CTYPE:
		if (!r->content_type && z > a)
			r->content_type = xstrndup(v->ptr + a, z - a);
		break;
	case KEEP_ETAG:
		if (!r->etag && z > a)
			r->etag = xstrndup(v->ptr + a, z - a);
		break;
	case KEEP_MOVING:
		if (!r->moving && z > a)
			r->moving = xstrndup(v->ptr + a, z - a);
		break;
	case KEEP_WARNING:
		if (z == a)
			break;
		if (!r->warning) {
			r->warning = xstrndup(v->ptr + a, z - a);
		} else {
			char *w = xasprintf("%s, %.*s", r->warning, (int)(z - a), v->ptr + a);
			free(r->warning);
			r->warning = w;
		}
		break;
	}
	p->want = KEEP_NONE;
	buf_reset(v);
}

static int on_header_field(http_parser *hp, const char *at, size_t len)
{
	struct h1_parser *p = P(hp);
	if (p->in_value) {
		end_value(p);
		buf_reset(&p->field);
	}
	if (p->field.len + len > FIELD_MAX) {
		buf_reset(&p->field);
		buf_addch(&p->field, '-'); /* no name we keep starts so: it never matches */
		return 0;
	}
	buf_add(&p->field, at, len);
	return 0;
}

static int on_header_value(http_parser *hp, const char *at, size_t len)
{
	struct h1_parser *p = P(hp);
	if (!p->in_value) {
		p->in_value = true;
		const char *f = buf_cstr(&p->field);
		p->want = strcasecmp(f, "Content-Type") == 0 ? KEEP_CTYPE
			  : strcasecmp(f, "Warning") == 0    ? KEEP_WARNING
			  : strcasecmp(f, "ETag") == 0       ? KEEP_ETAG
			  : hp->status_code == 429 && strcasecmp(f, MOVING_HEADER) == 0 ? KEEP_MOVING
							     : KEEP_NONE;
		buf_reset(&p->field);
	}
	if (p->want != KEEP_NONE)
		buf_add(&p->value, at, len);
	return 0;
}

static int on_headers_complete(http_parser *hp)
{
	struct h1_parser *p = P(hp);
	end_value(p);
	buf_reset(&p->field);
	p->resp.status = hp->status_code;
	if (hp->status_code < 100 || hp->status_code > 999)
		return -1; /* the parser takes "HTTP/1.1 2": a status has three digits */
	if (hp->status_code / 100 == 1)
		return 0; /* interim: no body (the parser knows), the real answer follows */
	p->keep_alive = http_should_keep_alive(hp) != 0;
	if (p->head)
		return 1; /* no body, whatever the headers say */
	if (hp->content_length != ULLONG_MAX && hp->content_length > 0) {
		if (hp->content_length > UPSTREAM_MAX_RESPONSE) {
			p->too_large = true;
			return -1;
		}
		buf_grow(&p->resp.body, (size_t)hp->content_length);
	}
	return 0;
}

static int on_body(http_parser *hp, const char *at, size_t len)
{
	struct h1_parser *p = P(hp);
	if (p->resp.body.len + len > UPSTREAM_MAX_RESPONSE) {
		p->too_large = true;
		return -1;
	}
	buf_add(&p->resp.body, at, len);
	return 0;
}

static void clear_resp(struct upstream_resp *r)
{
	free(r->content_type);
	free(r->warning);
	free(r->etag);
	free(r->moving);
	r->content_type = r->warning = r->etag = r->moving = NULL;
	r->status = 0;
	buf_reset(&r->body);
}

static int on_message_complete(http_parser *hp)
{
	struct h1_parser *p = P(hp);
	if (hp->status_code / 100 == 1 && hp->status_code != 101) {
		clear_resp(&p->resp); /* the interim answer's headers are not the answer's */
		return 0;
	}
	p->done = true;
	http_parser_pause(hp, 1); /* what follows is not this response's */
	return 0;
}

static const http_parser_settings settings = {
	.on_header_field = on_header_field,
	.on_header_value = on_header_value,
	.on_headers_complete = on_headers_complete,
	.on_body = on_body,
	.on_message_complete = on_message_complete,
};

void h1_parser_init(struct h1_parser *p, bool head)
{
	memset(p, 0, sizeof(*p));
	h1_parser_reset(p, head);
}

void h1_parser_reset(struct h1_parser *p, bool head)
{
	clear_resp(&p->resp);
	buf_reset(&p->field);
	buf_reset(&p->value);
	http_parser_init(&p->hp, HTTP_RESPONSE);
	p->hp.data = p;
	p->want = KEEP_NONE;
	p->in_value = p->done = p->keep_alive = p->too_large = false;
	p->head = head;
	p->fed = 0;
}

void h1_parser_release(struct h1_parser *p)
{
	upstream_resp_release(&p->resp);
	buf_release(&p->field);
	buf_release(&p->value);
}

enum h1_parse_result h1_parser_feed(struct h1_parser *p, const char *data, size_t n, size_t *ret_used)
{
	if (p->done) {
		*ret_used = 0;
		return H1_DONE;
	}
	p->fed += n;
	size_t used = http_parser_execute(&p->hp, &settings, data, n);
	if (p->hp.upgrade || p->resp.status == 101) {
		*ret_used = used;
		return H1_BAD; /* a switch of protocols was not asked for */
	}
	if (p->done) {
		*ret_used = used;
		return H1_DONE;
	}
	*ret_used = used;
	if (p->too_large)
		return H1_TOO_LARGE;
	if (HTTP_PARSER_ERRNO(&p->hp) != HPE_OK || p->hp.upgrade || n == 0 || used != n)
		return H1_BAD;
	return H1_MORE;
}
