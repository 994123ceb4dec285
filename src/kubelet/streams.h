/* The kubelet's stream endpoints (the partition's proxy target for kubectl exec, attach,
 * port-forward), served by the kubelet's HTTP server (logs.c) with the same bearer token:
 *   GET|POST /exec/{namespace}/{pod}/{container}?tenant=T&command=..(repeated)&stdin=1&stdout=1&stderr=1&tty=1
 *   GET|POST /attach/{namespace}/{pod}/{container}?tenant=T&stdin=1&stdout=1&stderr=1&tty=1
 *   GET|POST /portforward/{namespace}/{pod}?tenant=T[&port=N...]   (also /portForward/)
 * Exec and attach upgrade to WebSocket with subprotocol v5.channel.k8s.io or v4.channel.k8s.io
 * (remotecmd.h); port-forward to WebSocket with v2.portforward.k8s.io or
 * SPDY/3.1+portforward.k8s.io (SPDY/3.1 frames in binary messages), or to plain SPDY/3.1
 * (Upgrade: SPDY/3.1, X-Stream-Protocol-Version: portforward.k8s.io). Errors before the upgrade
 * are plain-text answers: 400 (bad query, no or unknown upgrade, SPDY for exec/attach: kubectl 1.30+
 * needed), 401 (token, checked by logs.c), 404 (no such pod or container), 409 (not running), 429 (too
 * many streams), 500/503 (the runtime failed), 501 (a runtime without streams: fake), 502
 * (containerd's streaming server could not be reached or refused the upgrade).
 *
 * After the switch: the error channel's last message is the command's Status (Success; Failure
 * NonZeroExitCode with the exit code; a command that cannot start is exit code 127 (not found) or
 * 126 (not executable) with the runtime's words on stderr, as with the process runtime, for both
 * runtimes), then a close frame 1000. A malformed frame closes with 1002, a message over
 * KL_MAX_WS_MESSAGE with 1009; a client that goes away ends the stream (process exec: the command's
 * process group is killed).
 *
 * Each stream runs on a thread of its own once the connection is switched. */
#ifndef URSA_KUBELET_STREAMS_H
#define URSA_KUBELET_STREAMS_H
#include <stdbool.h>
#include <stddef.h>
#include "runtime.h"

struct http_request;
struct http_reply;
struct kl_streams;

#define KL_MAX_STREAMS 4096
#define KL_MAX_WS_MESSAGE (1u << 20) /* longer WebSocket messages close the stream (1009) */

/* ops/rt are borrowed and must outlive the streams. */
struct kl_streams *kl_streams_new(const struct runtime_ops *ops, struct runtime *rt);
/* Serves the request if its path is one of the stream endpoints (true), else leaves rp alone
 * (false). Runs on a server worker thread; the caller has checked the token. */
bool kl_streams_serve(struct kl_streams *s, struct http_request *req, struct http_reply *rp);
/* Streams running now. */
size_t kl_streams_active(struct kl_streams *s);
/* Ends every stream (their clients see the connection close) and frees. NULL is fine. */
void kl_streams_free(struct kl_streams *s);

#endif
