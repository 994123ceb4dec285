/* HTTP server over libmicrohttpd: two epoll threads that never block, and a pool of worker
 * threads running handlers (the connection sleeps meanwhile); request bodies are collected
 * (capped) before the handler runs; long responses (watch, log -f) are streams
 * whose connection is suspended while no data is pending, so thousands of them need no threads.
 * A server may also have a fast handler that runs on the epoll thread itself and answers at once,
 * defers its reply to be finished later from any thread (an event loop waiting on I/O), or passes
 * the request on to the workers. */
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

/* Optional. Runs on an epoll thread once the whole body is in, before any worker: it must not
 * block (no etcd, no blocking I/O, no lock held long). Returns false to pass the request to the
 * worker pool's handler (reply left untouched); true when it filled reply, or deferred it with
 * http_reply_defer. Bodies over max_body never reach it (413). */
typedef bool (*http_fast_handler)(void *ud, struct http_request *req, struct http_reply *reply);

struct http_server_options {
	const char *listen;     /* "127.0.0.1:7101" */
	const char *tls_cert;   /* PEM files; both or neither */
	const char *tls_key;
	unsigned threads;       /* handler worker threads (default 16) */
	size_t max_body;        /* default 3 MiB; larger bodies get 413 before the handler */
	unsigned conn_timeout_s;/* idle keep-alive timeout (default 120) */
	http_fast_handler fast; /* may be NULL: every request goes to the workers */
	void *fast_ud;
	/* The caller's event loop drives the server (http_server_fd, http_server_run) instead of
	 * two internal epoll threads: the fast handler, stream fills and replies all run on that
	 * loop's thread. The worker pool is the same either way. */
	bool external;
	/* External mode: called (from any thread, often not the loop's) whenever a suspended
	 * connection was resumed (a worker's reply, a deferred reply, a stream's wake), so that the
	 * loop runs http_server_run soon: libmicrohttpd does not signal its own descriptor then. */
	void (*wake)(void *ud);
	void *wake_ud;
	/* SO_REUSEPORT on the listening socket: several processes serve one address and the
	 * kernel spreads new connections over them (the gateway's worker processes). */
	bool reuse_port;
};

struct http_server;
/* Starts serving at once. Returns NULL with a message in *ret_err (new string) on failure. */
struct http_server *http_server_start(const struct http_server_options *o, http_handler h, void *ud, char **ret_err);
/* Stops: no new connections, open streams are ended (up to 2 s), handlers and deferred replies
 * are waited for (up to 15 s), then everything is freed. With options.external, call it on the
 * driving thread or after that loop has stopped driving (it drives the server while it waits). */
void http_server_stop(struct http_server *s);
/* External mode only. http_server_fd: an epoll descriptor that is readable when the server has
 * work; http_server_run: does that work without blocking (on the driving thread only);
 * http_server_timeout_ms: the longest the loop may wait before calling http_server_run again
 * (-1: no limit; 0: at once, data is already buffered). */
int http_server_fd(struct http_server *s);
void http_server_run(struct http_server *s);
long http_server_timeout_ms(struct http_server *s);
/* Closes the listening socket now (connections in progress go on); http_server_stop does it
 * too. In external mode, on the driving thread. */
void http_server_quiesce(struct http_server *s);

/* Request accessors (all borrowed; valid until the reply is sent). */
const char *http_method(const struct http_request *r);
const char *http_path(const struct http_request *r);
const char *http_query(const struct http_request *r, const char *key); /* NULL if absent */
const char *http_header(const struct http_request *r, const char *name);
/* Every value of a header sent more than once (X-Stream-Protocol-Version): up to max of them in
 * out (borrowed, in the order sent); returns how many there are. */
size_t http_header_all(const struct http_request *r, const char *name, const char **out, size_t max);
const char *http_body(const struct http_request *r, size_t *ret_len);
/* The raw query string as the client sent it (after '?', still percent-encoded), or NULL if
 * the request target had no '?'. For proxies that pass every parameter on unchanged. */
const char *http_query_string(const struct http_request *r);
/* Replaces the path the request's handlers see (path borrowed: it must live as long as the
 * request, e.g. a suffix of http_path's). The gateway drops a client's /tenants/<t> prefix so. */
void http_request_set_path(struct http_request *r, const char *path);
const char *http_client_addr(const struct http_request *r);
/* Bounds the kernel's send buffer of r's connection to about bytes (SO_SNDBUF; the kernel
 * doubles it), for the rest of the connection's life (its autotuning stays off). */
void http_request_limit_send_buffer(struct http_request *r, int bytes); /* "127.0.0.1" */
/* Per-request start time (mono µs), for latency metrics. */
int64_t http_started_us(const struct http_request *r);
/* One pointer the handlers may keep with a request (say, what the fast handler found out, for
 * the worker it passes the request to). NULL until set; the server never frees it. */
void http_request_set_data(struct http_request *r, void *data);
void *http_request_data(const struct http_request *r);

/* Reply builders. */
void http_reply_set(struct http_reply *rp, int status, const char *content_type, struct buf *body /* taken */);
void http_reply_header(struct http_reply *rp, const char *name, const char *value);
int http_reply_status(const struct http_reply *rp);

/* Deferred reply: called by a handler (fast or worker) before it hands the request to another
 * thread, it tells the server that the reply comes later. The client's connection stays
 * suspended (not read, not timed out; a client that leaves is noticed only when the reply is
 * written); the request and reply stay valid, for one thread at a time, until
 * http_deferred_finish, which sends whatever reply then holds (status 500 if it was never set).
 * Exactly one finish per defer, from any thread; afterwards req and reply must not be touched.
 * The server's stop waits (up to 15 s) for deferred replies. */
struct http_deferred;
struct http_deferred *http_reply_defer(struct http_reply *rp);
void http_deferred_finish(struct http_deferred *d);
/* A whole reply in hand (not a stream, an upgrade or a deferred reply): what is left of the
 * request is sending it. */
bool http_reply_is_plain(const struct http_reply *rp);
/* fn(ud) runs once when the request is over: its reply sent (a stream's too: when it ends), or
 * its connection gone. On a server thread: it must not block. One per request (the last set). */
void http_request_on_complete(struct http_request *r, void (*fn)(void *ud), void *ud);
/* Instead of http_deferred_finish: the handler runs again for the same request, on a worker,
 * ahead of requests not yet started (a fair queue's turn came; http_request_data kept). The
 * reply must still be untouched. */
void http_deferred_rerun(struct http_deferred *d);

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

/* Protocol switch (HTTP/1.1 Upgrade: WebSocket, SPDY). http_reply_upgrade answers 101 with the
 * headers set by http_reply_header (the caller sets Upgrade, Connection and the protocol's own);
 * the request must carry an Upgrade header. Once the 101 is out, on_switched(ud, u, fd, extra,
 * extra_len) runs on a server thread (it must not block): fd is a plain stream socket (TLS, if
 * any, is done by the server; it may be one end of a socketpair), extra the bytes the client
 * already sent after the request. The callee owns u from then on and must end it exactly once
 * with http_upgraded_close, from any thread (never close(fd) itself; shutdown is fine). If the
 * connection never switches (the client left first), on_switched runs once with u NULL and
 * fd -1 so that ud can be freed. Works from worker handlers, fast handlers and deferred
 * replies, with or without TLS, in external mode too. http_server_stop shuts the sockets of
 * switched connections down (their owners then see EOF and close) and waits up to 2 s. */
struct http_upgraded;
typedef void (*http_upgrade_fn)(void *ud, struct http_upgraded *u, int fd, const char *extra, size_t extra_len);
void http_reply_upgrade(struct http_reply *rp, http_upgrade_fn on_switched, void *ud);
void http_upgraded_close(struct http_upgraded *u);

#endif
