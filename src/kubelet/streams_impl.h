/* The kubelet's streams' shared state (internal to streams.c, cri_streams.c, portfwd.c). */
#ifndef URSA_KUBELET_STREAMS_IMPL_H
#define URSA_KUBELET_STREAMS_IMPL_H
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "remotecmd.h"
#include "runtime.h"
#include "streams.h"
#include "ursa/buf.h"

#define STREAM_HIGH (256 * 1024) /* bytes waiting for one side before the other is not read */

enum stream_backend {
	BE_PROC_EXEC,   /* process runtime: a command run here (procexec.h) */
	BE_PROC_ATTACH, /* process runtime: the container's log */
	BE_SPDY_PF,     /* process runtime: port-forward, a SPDY session served here (portfwd.c) */
	BE_TUNNEL,      /* CRI port-forward: bytes to and from containerd's streaming server */
	BE_CRI_CMD,     /* CRI exec/attach: remote command <-> a SPDY client session to containerd */
};

struct http_upgraded;
struct wsconn;

struct stream {
	struct kl_streams *ss;
	enum stream_backend be;
	bool ws, v5, counted;
	struct rc_query q;
	struct rt_stream_target t;
	char *cmdline;
	char pod[256];           /* the pod's name, for messages */
	struct http_upgraded *u;
	int fd;                  /* the client's switched socket */
	struct buf cextra;       /* bytes the client sent with its request */
	struct wsconn *wc;       /* NULL for a plain SPDY upgrade */
	/* what the WebSocket's messages go to (set by the running backend) */
	void (*msg_fn)(void *ud, const uint8_t *data, size_t len, bool text);
	void *msg_ud;
	int bfd;                 /* containerd's streaming connection, or -1 */
	struct buf bextra;       /* bytes containerd sent after its 101 */
	struct buf to_back, to_client;
};

void stream_free(struct stream *s);
bool stream_stopping(const struct stream *s);
/* Non-blocking I/O on b: flush 0 or -1 (broken); fill >0 read, 0 nothing now, -1 EOF/error. */
int stream_flush(int fd, struct buf *b);
ssize_t stream_fill(int fd, struct buf *b, size_t max);
void stream_nonblock(int fd);
/* Sends the error channel's Status and a close frame; stream_linger lets them go out. */
void stream_send_status(struct stream *s, const struct buf *status);
void stream_linger(struct stream *s);
/* The byte tunnel between the client and s->bfd (streams.c). */
void stream_run_tunnel(struct stream *s);

/* cri_streams.c: dials containerd's streaming URL (s->t.url) and upgrades to SPDY/3.1 with
 * X-Stream-Protocol-Version portforward.k8s.io (tunnel) or v4.channel.k8s.io (exec/attach, then
 * opens the SPDY streams): 0 with s->bfd and s->bextra set, or -1 with *ret_err (new string). */
int stream_dial_tunnel(struct stream *s, char **ret_err);
int stream_dial_cri_cmd(struct stream *s, char **ret_err);
/* Dials url ("http://host:port/path"), sends an upgrade to SPDY/3.1 with protocol as
 * X-Stream-Protocol-Version, reads the answer's head: 0 with *ret_fd (blocking) and the bytes
 * after the head appended to extra; -1 with *ret_err. */
int stream_dial_upgrade(const char *url, const char *protocol, int *ret_fd, struct buf *extra, char **ret_err);
/* cri_streams.c: exec/attach through containerd (v5 <-> SPDY). */
void stream_run_cri_cmd(struct stream *s);
/* portfwd.c: port-forward served here (process runtime): SPDY server to 127.0.0.1:port. */
void stream_run_portforward(struct stream *s);

#endif
