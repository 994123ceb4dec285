/* The gateway's own HTTP/1.1 client for plain requests to partitions (plain.c): kept-alive
 * connections over OpenSSL (or plain TCP for http:// endpoints) on non-blocking sockets that
 * the caller's epoll loop drives, one small pool of idle connections per endpoint, responses
 * parsed with libhttp-parser. Watches, streams and fan-out keep libcurl (upstream.c, stream.c).
 *
 * Pure parts (h1resp.c): the endpoint URL, the request head and the response parser. The
 * client (h1conn.c) belongs to one thread, the one running the epoll loop it was given; none
 * of its functions may be called from another. */
#ifndef URSA_GW_H1_H
#define URSA_GW_H1_H
#include <http_parser.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "gw.h"
#include "ursa/buf.h"

/* --- endpoints (h1resp.c) ------------------------------------------------------------------- */
struct h1_endpoint {
	bool tls;            /* https:// */
	char *host;          /* without brackets (an IPv6 literal's) */
	char *port;          /* decimal; "443" / "80" when the URL has none */
	char *authority;     /* the Host header: host[:port] as the URL spells it */
	char *prefix;        /* the URL's path ("" for none), put before every request's path */
};
/* Parses a partition endpoint base URL ("https://127.0.0.1:7101", "http://[::1]:80/x"). 0 with
 * *ret filled (release it), or E_BAD_REQUEST: another scheme, no host, a bad port, user info, a
 * query, or bytes that do not belong in a URL. */
int h1_endpoint_parse(const char *base, struct h1_endpoint *ret);
void h1_endpoint_release(struct h1_endpoint *e);

/* --- requests (h1resp.c) -------------------------------------------------------------------- */
/* True for the methods a kept connection that died under them may send again (GET, HEAD). */
bool h1_method_retryable(const char *method);
/* Appends rq's request head to out: the request line (the endpoint's prefix and rq->path, bytes
 * that may not appear in a request target percent-encoded), Host, upstream_header_lines (an
 * empty value leaves the header out), and for methods other than GET and HEAD a Content-Length
 * of rq->len; then the blank line. The body is not appended. */
void h1_request_head(const struct h1_endpoint *ep, const struct upstream_req *rq, struct buf *out);

/* --- responses (h1resp.c) ------------------------------------------------------------------- */
enum h1_parse_result {
	H1_MORE = 0,       /* the response is not complete yet: feed more */
	H1_DONE = 1,       /* complete: h1_parser.resp holds it */
	H1_BAD = -1,       /* malformed, an upgrade, or the connection closed before the end */
	H1_TOO_LARGE = -2, /* a body over UPSTREAM_MAX_RESPONSE */
};
/* One response being read. Interim (1xx) responses are skipped. */
struct h1_parser {
	http_parser hp;
	struct upstream_resp resp; /* status, content_type, warning, etag, body: the parser's until
				    * H1_DONE, then the caller may take them (upstream_resp_release) */
	struct buf field;          /* the header name being read (kept short: only names we keep) */
	struct buf value;          /* the value being read of a header we keep */
	int want;                  /* which header the value being read goes to (0: none) */
	bool in_value;
	bool head;                 /* the request was HEAD: no body follows the headers */
	bool done;
	bool keep_alive;           /* H1_DONE: the connection may carry another request */
	bool too_large;
	size_t fed;                /* bytes fed so far (0: the server has sent nothing) */
};
void h1_parser_init(struct h1_parser *p, bool head);
/* Back to the state of h1_parser_init, keeping allocations of the body buffer. */
void h1_parser_reset(struct h1_parser *p, bool head);
void h1_parser_release(struct h1_parser *p);
/* Feeds n bytes of the connection; n 0 says the peer closed it (a body delimited by the close
 * ends there). H1_DONE with *ret_used the bytes that belonged to the response (more is junk: the
 * connection must not be reused), H1_MORE (all used), H1_BAD or H1_TOO_LARGE (the parser is
 * done with; release it). */
enum h1_parse_result h1_parser_feed(struct h1_parser *p, const char *data, size_t n, size_t *ret_used);

/* --- the client (h1conn.c) ------------------------------------------------------------------ */
struct h1_client;
struct h1_call;
/* The outcome of a call: err 0 with *resp filled (the callback may take the body and strings;
 * what it leaves is released after it returns), E_UNAVAILABLE when nothing reached the
 * endpoint (no connection within H1_CONNECT_MS, refused, the TLS handshake failed), or
 * E_TIMEOUT (sent, outcome unknown: the deadline passed, the connection broke, the response
 * was malformed or over UPSTREAM_MAX_RESPONSE). */
typedef void (*h1_done_fn)(void *ud, int err, struct upstream_resp *resp);
#define H1_CONNECT_MS 1000    /* TCP connect and TLS handshake */
#define H1_IDLE_MAX 128       /* idle connections kept per endpoint */
/* A client whose sockets join epoll set ep with data.u64 = tag + fd (the caller passes events of
 * tags >= tag to h1_client_event). TLS peers are verified against ca_file (NULL: the system's
 * store) and the endpoint's host name or address. NULL if the TLS context could not be made. */
struct h1_client *h1_client_new(int ep, uint64_t tag, const char *ca_file);
/* Closes every connection. Calls still running are dropped without their callbacks: cancel
 * them first. NULL is fine. */
void h1_client_free(struct h1_client *c);
/* Sends rq to the endpoint base (a URL h1_endpoint_parse accepts) on an idle kept connection or
 * a new one. rq and its strings must stay valid until done runs. deadline_ms (mono_ms clock, 0:
 * none) bounds the whole call. done runs exactly once, from h1_client_event or h1_client_timers
 * (never from inside this function), unless the call is cancelled. A kept connection that turns
 * out closed before any byte of the answer came is replaced by a new one once for GET and HEAD;
 * other methods end with E_TIMEOUT then (the request may have been received). The returned
 * handle is valid until done runs or h1_call_cancel. */
struct h1_call *h1_client_send(struct h1_client *c, const char *base, const struct upstream_req *rq,
			       int64_t deadline_ms, h1_done_fn done, void *ud);
/* Ends a call without its callback; its connection is closed. */
void h1_call_cancel(struct h1_call *call);
/* A socket event (tag already subtracted). */
void h1_client_event(struct h1_client *c, int fd, uint32_t events);
/* When h1_client_timers must run next (mono_ms), or -1 for no call in flight. */
int64_t h1_client_due(const struct h1_client *c);
/* Ends the calls whose connect limit or deadline passed. */
void h1_client_timers(struct h1_client *c, int64_t now);
/* Connections open now (idle or busy), for tests. */
size_t h1_client_connections(const struct h1_client *c);

#endif
