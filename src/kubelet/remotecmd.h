/* The pure parts of the kubelet's streams (streams.c): the request's query, the WebSocket
 * handshake's subprotocol and accept key, and the remote command protocol's messages.
 *
 * Remote command over WebSocket (v4.channel.k8s.io, v5.channel.k8s.io): every binary message
 * starts with a channel byte: 0 stdin, 1 stdout, 2 stderr, 3 error (one metav1.Status JSON at
 * the end), 4 resize ({"Width":w,"Height":h}); v5 adds 255 "close" whose payload is the one
 * channel the peer closes (stdin: EOF). Port-forward over WebSocket carries a SPDY/3.1 byte
 * stream in binary messages (no channel byte). */
#ifndef URSA_KUBELET_REMOTECMD_H
#define URSA_KUBELET_REMOTECMD_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ursa/buf.h"

enum { RC_STDIN = 0, RC_STDOUT = 1, RC_STDERR = 2, RC_ERROR = 3, RC_RESIZE = 4, RC_CLOSE = 255 };

#define RC_MAX_ARGS 256         /* command= parameters */
#define RC_MAX_CMD_BYTES 65536  /* their decoded bytes together */
#define RC_MAX_PORTS 32

/* The WebSocket subprotocols, best first. */
#define RC_PROTO_V5 "v5.channel.k8s.io"
#define RC_PROTO_V4 "v4.channel.k8s.io"
#define RC_PROTO_PF_V2 "v2.portforward.k8s.io"
#define RC_PROTO_PF_TUNNEL "SPDY/3.1+portforward.k8s.io"

/* What the query of /exec, /attach and /portforward asks for. */
struct rc_query {
	char **cmd;      /* NULL-terminated new strings (command=, repeated), NULL when there is none */
	size_t ncmd;
	bool in, out, err, tty;
	int ports[RC_MAX_PORTS]; /* port= (repeated) or ports=a,b */
	size_t nports;
};

/* Parses a raw query string (percent-encoded, '+' is a space; NULL is an empty one) into *q
 * (initialised here; release with rc_query_release). Unknown keys are ignored. 0, or -1 with
 * *ret_err (static text) for too many or too long arguments, a NUL byte, a bad escape or a
 * port outside 1..65535. */
int rc_query_parse(const char *qs, struct rc_query *q, const char **ret_err);
void rc_query_release(struct rc_query *q);

/* The subprotocol to answer from a Sec-WebSocket-Protocol header (comma-separated, may be NULL):
 * the first of want (NULL-terminated, best first) the client offered; NULL if none. */
const char *rc_pick_protocol(const char *offered, const char *const *want);

/* Sec-WebSocket-Accept for a client's Sec-WebSocket-Key (RFC 6455 4.2.2): 28 characters and NUL. */
void rc_ws_accept(const char *key, char out[29]);

/* The error channel's closing Status (JSON, appended to out): Success; a non-zero exit
 * (Failure, reason NonZeroExitCode, details.causes [{reason ExitCode, message "<code>"}], which
 * kubectl turns into its own exit code); or another failure (reason InternalError, message). */
void rc_status_success(struct buf *out);
void rc_status_exit(struct buf *out, int code, const char *cmdline);
void rc_status_failure(struct buf *out, const char *message);

/* A runtime's Status for a command that could not start (containerd: InternalError "... OCI runtime
 * exec failed: ... exec: \"x\": executable file not found in $PATH ..."): 127 (not found) or 126
 * (permission denied) with the runtime's words appended to msg; 0 for any other status. */
int rc_exec_failure(const char *status_json, size_t len, struct buf *msg);

/* The resize channel's payload {"Width":w,"Height":h}: 0, or -1 when it is not such a JSON
 * object with sizes in 0..65535. */
int rc_parse_resize(const uint8_t *data, size_t len, unsigned *ret_w, unsigned *ret_h);

#endif
