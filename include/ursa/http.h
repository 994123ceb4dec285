/* HTTP server over libmicrohttpd: two epoll threads that never block, and a pool of worker
 * threads running handlers (the connection sleeps meanwhile); request bodies are collected
 * (capped) before the handler runs; long responses (watch, log -f) are streams
 * whose connection is suspended while no data is pending, so thousands of them need no threads. */
#ifndef URSA_HTTP_H
#define URSA_HTTP_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ursa/buf.h"

struct http_request;
struct http_reply;
struct http_stream;

/* Runs on a server thread once the whole body is in. Must fill reply (status defaults to 500). */
typedef void (*http_handler)(void *ud, struct http_request *req, struct http_reply *reply);

struct http_server_options {
	const char *listen;     /* "127.0.0.1:7101" */
	const char *tls_cert;   /* PEM files; both or neither */
	const char *tls_key;
	unsigned threads;       /* handler worker threads (default 16) */
	size_t max_body;        /* default 3 MiB; larger bodies get 413 before the handler */
	unsigned conn_timeout_s;/* idle keep-alive timeout (default 120) */
};

struct http_server;
/* Starts serving at once. Returns NULL with a message in *ret_err (new string) on failure. */
struct http_server *http_server_start(const struct http_server_options *o, http_handler h, void *ud, char **ret_err);
void http_server_stop(struct http_server *s);

/* Request accessors (all borrowed; valid until the reply is sent). */
const char *http_method(const struct http_request *r);
const char *http_path(const struct http_request *r);
const char *http_query(const struct http_request *r, const char *key); /* NULL if absent */
const char *http_header(const struct http_request *r, const char *name);
const char *http_body(const struct http_request *r, size_t *ret_len);
/* The raw query string as the client sent it (after '?', still percent-encoded), or NULL if
 * the request target had no '?'. For proxies that pass every parameter on unchanged. */
const char *http_query_string(const struct http_request *r);
const char *http_client_addr(const struct http_request *r); /* "127.0.0.1" */
/* Per-request start time (mono µs), for latency metrics. */
int64_t http_started_us(const struct http_request *r);

/* Reply builders. */
void http_reply_set(struct http_reply *rp, int status, const char *content_type, struct buf *body /* taken */);
void http_reply_header(struct http_reply *rp, const char *name, const char *value);
int http_reply_status(const struct http_reply *rp);

/* Streaming reply. fill(ud, out, max) appends up to about max bytes to out and returns 1 if
 * it appended something, 0 if nothing is pending now (the connection sleeps until
 * http_stream_wake), or -1 at the end of the stream. done(ud) runs once when the
 * connection ends (client gone or end of stream); after it no wake may be called.
 * The returned stream pointer stays valid until done(ud) runs. */
struct http_stream *http_reply_stream(struct http_reply *rp, int status, const char *content_type,
				      int (*fill)(void *ud, struct buf *out, size_t max), void (*done)(void *ud),
				      void *ud);
/* Wakes a sleeping stream (thread-safe, cheap, may be called from any thread at any time
 * before done runs). */
void http_stream_wake(struct http_stream *s);

#endif
