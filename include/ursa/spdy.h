/* A SPDY/3.1 session codec without I/O of its own (the framing Kubernetes' streams use: containerd's
 * exec/attach/port-forward server, kubectl <= 1.30, and the payload of v2.portforward.k8s.io).
 *
 * The caller owns the socket. It feeds whatever bytes it read into spdy_session_feed(), which
 * parses complete frames and calls the callbacks; frames the session wants to send (replies to
 * pings, WINDOW_UPDATEs, everything the spdy_* send functions produce) are appended to one output
 * queue that the caller drains with spdy_session_output() / spdy_session_output_consumed().
 * Typical loop:
 *
 *	n = read(fd, tmp, sizeof tmp);  ... spdy_session_feed(s, tmp, n) ...
 *	while ((p = spdy_session_output(s, &len)) != NULL) { w = write(fd, p, len); spdy_session_output_consumed(s, w); }
 *
 * Roles: a SPDY_CLIENT opens streams with odd ids (1, 3, 5, ...), a SPDY_SERVER with even ids. The
 * peer opens streams with the other parity; a SYN_STREAM with the wrong parity or a non-increasing
 * id is a protocol error.
 *
 * Header blocks are compressed with zlib and the SPDY/3 dictionary: one deflate stream per
 * direction for the whole session (as the protocol requires), so frames must be emitted and fed in
 * order. Header names are sent lower-cased (Go's framer rejects upper case); lookups are
 * case-insensitive.
 *
 * Flow control: the session sends WINDOW_UPDATE (stream and session level, SPDY/3.1) for received
 * data once the application has consumed it: automatically after on_data returns, or, with
 * SPDY_MANUAL_WINDOW, when the caller calls spdy_stream_consumed(). The peer's windows are tracked
 * (spdy_stream_send_window) but NOT enforced on sending: Go's spdystream (kubectl, containerd,
 * client-go) neither sends nor honours WINDOW_UPDATE, so holding data back would stall it. Callers
 * pace themselves by the output queue's length (spdy_session_output_len).
 *
 * Limits (struct spdy_limits; spdy_limits_default()): a frame whose payload exceeds max_frame, a
 * header block that inflates beyond max_header_block or has more than max_headers entries, more
 * than max_streams open streams (peer's SYN_STREAM beyond it: RST_STREAM REFUSED_STREAM, the session
 * lives on). Frame / header-block limits are protocol errors: never a crash, never unbounded memory.
 *
 * Protocol errors: spdy_session_feed() returns a negative code, queues GOAWAY (PROTOCOL_ERROR) and
 * the session is dead from then on (every later feed or send returns the same code); the caller
 * flushes the output if it likes and closes the connection. Stream-level errors from the peer (DATA
 * for an unknown or closed stream, a second SYN_REPLY) are answered with RST_STREAM and do not kill
 * the session.
 *
 * Threads: a session is used by one thread at a time. Callbacks run only inside
 * spdy_session_feed(), on the caller's thread; they may call the spdy_* send functions (including
 * for other streams) but must not free the session (stop after feed returns instead).
 *
 * Errors (all functions that can fail): 0 or a negative code from ursa/errors.h:
 *   E_BAD_REQUEST  the peer broke the protocol (session dead, GOAWAY queued)
 *   E_TOO_LARGE    a frame or header block from the peer exceeded a limit (session dead, GOAWAY queued)
 *   E_NOT_FOUND    send on a stream id the session does not know (never opened, or already closed/reset)
 *   E_CONFLICT     send on a stream whose local side is already finished (FIN sent) or that was reset
 *   E_INVALID      bad arguments (a header name that is empty or not lower-caseable, value too big,
 *                  reply on a stream we opened, ...)
 *   E_UNAVAILABLE  the session is dead or has sent/received GOAWAY (no new streams)
 *   E_TOO_MANY     no more stream ids, or max_streams reached locally
 */
#ifndef URSA_SPDY_H
#define URSA_SPDY_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ursa/buf.h"

#define SPDY_VERSION 3
#define SPDY_INITIAL_WINDOW 65536u     /* per stream and per session, until SETTINGS say otherwise */
#define SPDY_MAX_DATA_FRAME 32768u     /* spdy_send_data splits longer writes into frames of this size */

/* Frame types (control frames) and flags, as on the wire. */
enum spdy_frame_type {
	SPDY_SYN_STREAM = 1,
	SPDY_SYN_REPLY = 2,
	SPDY_RST_STREAM = 3,
	SPDY_SETTINGS = 4,
	SPDY_PING = 6,
	SPDY_GOAWAY = 7,
	SPDY_HEADERS = 8,
	SPDY_WINDOW_UPDATE = 9,
};
#define SPDY_FLAG_FIN 0x01
#define SPDY_FLAG_UNIDIRECTIONAL 0x02

/* RST_STREAM status codes. */
enum spdy_rst_status {
	SPDY_RST_PROTOCOL_ERROR = 1,
	SPDY_RST_INVALID_STREAM = 2,
	SPDY_RST_REFUSED_STREAM = 3,
	SPDY_RST_UNSUPPORTED_VERSION = 4,
	SPDY_RST_CANCEL = 5,
	SPDY_RST_INTERNAL_ERROR = 6,
	SPDY_RST_FLOW_CONTROL_ERROR = 7,
	SPDY_RST_STREAM_IN_USE = 8,
	SPDY_RST_STREAM_ALREADY_CLOSED = 9,
	SPDY_RST_FRAME_TOO_LARGE = 11,
};

/* GOAWAY status codes. */
enum spdy_goaway_status {
	SPDY_GOAWAY_OK = 0,
	SPDY_GOAWAY_PROTOCOL_ERROR = 1,
	SPDY_GOAWAY_INTERNAL_ERROR = 2,
};

/* SETTINGS ids the session understands (others are passed to on_settings and otherwise ignored). */
enum spdy_setting_id {
	SPDY_SETTINGS_MAX_CONCURRENT_STREAMS = 4,
	SPDY_SETTINGS_INITIAL_WINDOW_SIZE = 7,
};

enum spdy_role { SPDY_CLIENT, SPDY_SERVER };

/* One header. Sending: name and value are NUL-terminated strings the caller keeps alive for the
 * call only (the codec copies/compresses them at once); value_len is ignored (strlen is used).
 * Receiving: borrowed views valid only during the callback; name is lower-case and NUL-terminated;
 * value is NUL-terminated and value_len long (several values of one name arrive joined by NUL
 * bytes inside value_len, as SPDY encodes them; value then reads as the first one). */
struct spdy_header {
	const char *name;
	const char *value;
	size_t value_len;
};

/* The first value of header name (case-insensitive) in h[0..n), or NULL. Borrowed from h. */
const char *spdy_header_get(const struct spdy_header *h, size_t n, const char *name);

struct spdy_limits {
	size_t max_frame;         /* largest frame payload accepted (control or data); default 1 MiB */
	size_t max_header_block;  /* largest inflated header block; default 64 KiB */
	size_t max_headers;       /* most name/value pairs in one block; default 128 */
	size_t max_streams;       /* most streams open at once (both directions); default 1024 */
};
struct spdy_limits spdy_limits_default(void);

/* Session options: bits for spdy_session_new's flags. */
#define SPDY_MANUAL_WINDOW 0x1u  /* WINDOW_UPDATE only via spdy_stream_consumed (default: after on_data) */

/* Callbacks; every member may be NULL (the event is then ignored, with the default noted). ud is the
 * pointer given to spdy_session_new. Borrowed pointers are valid during the call only. */
struct spdy_callbacks {
	/* The peer opened stream id (SYN_STREAM) with headers h[0..n). fin: the peer will send no data
	 * (its side is already closed). Return 0 to accept: the application answers later (or now) with
	 * spdy_reply(); or return an enum spdy_rst_status > 0 to have the session refuse it with
	 * RST_STREAM of that status (the stream is then forgotten). NULL: every stream is refused with
	 * REFUSED_STREAM. */
	int (*on_syn_stream)(void *ud, uint32_t id, uint32_t assoc_id, uint8_t priority,
			     const struct spdy_header *h, size_t n, bool fin);
	/* The peer answered a stream we opened (SYN_REPLY), with headers; fin as above. */
	void (*on_syn_reply)(void *ud, uint32_t id, const struct spdy_header *h, size_t n, bool fin);
	/* A HEADERS frame on an open stream (rare); fin as above. */
	void (*on_headers)(void *ud, uint32_t id, const struct spdy_header *h, size_t n, bool fin);
	/* len > 0 bytes of data on stream id. */
	void (*on_data)(void *ud, uint32_t id, const char *data, size_t len);
	/* The peer finished its side of stream id (FIN flag on DATA, SYN_STREAM, SYN_REPLY or HEADERS;
	 * called after the data/headers callback of that frame). No more on_data for id. */
	void (*on_fin)(void *ud, uint32_t id);
	/* The peer reset stream id (RST_STREAM status); the stream is forgotten: sends on it fail. */
	void (*on_rst)(void *ud, uint32_t id, uint32_t status);
	/* The answer to our spdy_ping(ping_id). (Peer pings are answered by the session itself.) */
	void (*on_ping)(void *ud, uint32_t ping_id);
	/* The peer is going away: streams above last_good_id that we opened were not processed. */
	void (*on_goaway)(void *ud, uint32_t last_good_id, uint32_t status);
	/* One SETTINGS entry (the session applies INITIAL_WINDOW_SIZE itself). */
	void (*on_settings)(void *ud, uint32_t setting_id, uint32_t value, uint8_t flags);
	/* The peer granted delta more bytes on stream id (0 = the session window). */
	void (*on_window_update)(void *ud, uint32_t id, uint32_t delta);
	/* A frame from the peer ended stream id: its FIN after ours, or its RST_STREAM (after on_rst).
	 * The session forgets the stream right after this call. A stream that the caller's own call
	 * ends (its FIN after the peer's, spdy_reset_stream, a refusal from on_syn_stream) is forgotten
	 * at once without this callback: the caller knows. */
	void (*on_stream_closed)(void *ud, uint32_t id);
};

struct spdy_session;

/* A new session. cb is copied; ud is passed back to every callback. limits NULL = defaults. flags:
 * SPDY_MANUAL_WINDOW or 0. Never fails (allocation failure aborts). Free with spdy_session_free. */
struct spdy_session *spdy_session_new(enum spdy_role role, const struct spdy_callbacks *cb, void *ud,
				      const struct spdy_limits *limits, unsigned flags);
/* Frees the session and everything it holds (pending output is dropped). NULL is fine. Not from a
 * callback. */
void spdy_session_free(struct spdy_session *s);

/* Parses len bytes the peer sent (any split: partial frames are kept until complete). 0, or
 * E_BAD_REQUEST / E_TOO_LARGE (protocol error: session dead, GOAWAY queued; see the top). */
int spdy_session_feed(struct spdy_session *s, const void *data, size_t len);

/* The queued output: a pointer to the first unsent byte and its length in *ret_len, or NULL and
 * *ret_len = 0 when nothing is queued. Borrowed: valid until the next call on s. */
const char *spdy_session_output(struct spdy_session *s, size_t *ret_len);
/* Marks the first n bytes of the queued output as written (n <= the length output() gave). */
void spdy_session_output_consumed(struct spdy_session *s, size_t n);
/* Bytes queued and not yet consumed (for backpressure: stop reading the source while large). */
size_t spdy_session_output_len(const struct spdy_session *s);

/* True once the session is dead (protocol error), or GOAWAY was sent or received. */
bool spdy_session_closing(const struct spdy_session *s);
/* The code spdy_session_feed returned when the session died, or 0. */
int spdy_session_error(const struct spdy_session *s);

/* ---- sending ---- */

/* Opens a stream (SYN_STREAM, priority 0..7, no associated stream) with headers h[0..n); fin: we
 * send no data (our side closed at once). The id (odd for a client, even for a server) in *ret_id.
 * 0, E_INVALID (bad header), E_UNAVAILABLE, E_TOO_MANY. */
int spdy_open_stream(struct spdy_session *s, const struct spdy_header *h, size_t n, uint8_t priority, bool fin,
		     uint32_t *ret_id);
/* Answers a stream the peer opened (SYN_REPLY) with headers h[0..n) (n may be 0); fin as above.
 * 0, E_NOT_FOUND, E_INVALID (not the peer's stream, or already replied), E_UNAVAILABLE (dead). */
int spdy_reply(struct spdy_session *s, uint32_t id, const struct spdy_header *h, size_t n, bool fin);
/* Queues len bytes (len may be 0 only with fin) on stream id in DATA frames of at most
 * SPDY_MAX_DATA_FRAME bytes; fin: the last frame carries FIN (our side is finished). Allowed on
 * a stream we opened before its SYN_REPLY arrives and on a peer's stream once replied.
 * 0, E_NOT_FOUND, E_CONFLICT (our side already finished), E_INVALID (peer stream not replied yet),
 * E_UNAVAILABLE (session dead). */
int spdy_send_data(struct spdy_session *s, uint32_t id, const void *data, size_t len, bool fin);
/* Finishes our side of stream id: an empty DATA frame with FIN. Same errors as spdy_send_data. */
int spdy_close_stream(struct spdy_session *s, uint32_t id);
/* Resets stream id (RST_STREAM status) and forgets it (on_stream_closed is called). 0 or
 * E_NOT_FOUND / E_UNAVAILABLE. */
int spdy_reset_stream(struct spdy_session *s, uint32_t id, enum spdy_rst_status status);
/* Sends PING; the id (odd for a client, even for a server) in *ret_id (may be NULL); on_ping
 * fires when the answer comes. 0 or E_UNAVAILABLE. */
int spdy_ping(struct spdy_session *s, uint32_t *ret_id);
/* Sends GOAWAY(status) with the last peer stream id we accepted; no new streams either way
 * after it. 0 or E_UNAVAILABLE (already dead). */
int spdy_goaway(struct spdy_session *s, enum spdy_goaway_status status);
/* Sends SETTINGS with one entry (flags 0). 0 or E_UNAVAILABLE. */
int spdy_send_setting(struct spdy_session *s, uint32_t setting_id, uint32_t value);
/* With SPDY_MANUAL_WINDOW: the application consumed n bytes of stream id's data; queues
 * WINDOW_UPDATE (stream and session) once half a window is pending. Without it, a no-op.
 * 0 or E_NOT_FOUND (unknown stream: only the session window is credited). */
int spdy_stream_consumed(struct spdy_session *s, uint32_t id, size_t n);
/* What the peer's window still allows on stream id (negative when we went beyond it; see the
 * top: not enforced), or INT64_MIN for an unknown stream. */
int64_t spdy_stream_send_window(const struct spdy_session *s, uint32_t id);

/* ---- pure pieces (exposed for tests and fuzzing) ---- */

/* The SPDY/3 header compression dictionary (a protocol constant): bytes and length. */
const unsigned char *spdy_dictionary(size_t *ret_len);

#endif
