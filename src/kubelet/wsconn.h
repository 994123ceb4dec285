/* A server-side WebSocket connection over a switched socket (streams.c), framing by libwslay.
 * Driven by its owner's poll loop on one thread: wsconn_events says what to poll the fd for,
 * wsconn_io does the reads and writes once poll said so. Complete messages arrive through
 * on_msg (text or binary, fragments joined, at most max_msg bytes: a longer one, a malformed
 * frame or an unmasked one closes the connection with 1009/1002 as RFC 6455 says). Pings are
 * answered by wslay. */
#ifndef URSA_KUBELET_WSCONN_H
#define URSA_KUBELET_WSCONN_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct wsconn;
/* A complete data message; data is borrowed for the call. */
typedef void (*wsconn_msg_fn)(void *ud, const uint8_t *data, size_t len, bool text);

/* fd: a connected socket (set non-blocking here; borrowed: the owner closes it after
 * wsconn_free); extra: bytes of the connection already read (copied). */
struct wsconn *wsconn_new(int fd, const void *extra, size_t extra_len, size_t max_msg, wsconn_msg_fn on_msg, void *ud);
void wsconn_free(struct wsconn *c);

/* Poll events wanted on the fd now (POLLIN, POLLOUT); 0 when the connection is over. read_ok
 * false holds reading back (backpressure), except that buffered extra bytes are still parsed. */
short wsconn_events(struct wsconn *c, bool read_ok);
/* Does the I/O poll reported (revents); also parses buffered bytes. -1 once the connection is
 * over (closed both ways, broken, or the peer hung up), else 0. */
int wsconn_io(struct wsconn *c, short revents);
/* True while bytes read but not parsed wait (call wsconn_io(c, 0) without polling). */
bool wsconn_pending_input(const struct wsconn *c);

/* Queues a binary message of prefix (one byte, unless prefix < 0) followed by data. 0, or -1
 * once the connection is closing. */
int wsconn_send(struct wsconn *c, int prefix, const void *data, size_t len);
/* Queues a close frame (code 0: none) and stops reading; the connection ends once it is sent
 * and the peer answered (or hung up, or wsconn_io's caller gives up). */
void wsconn_close(struct wsconn *c, uint16_t code, const char *reason);
/* Bytes queued for the peer, not yet written. */
size_t wsconn_queued(const struct wsconn *c);
/* True once the peer sent a close frame or hung up. */
bool wsconn_peer_gone(const struct wsconn *c);

#endif
