/* Upgrade tunnels: one hop of a protocol-switching request (exec, attach, port-forward) that a
 * daemon passes on without parsing the protocol. The hop dials the next one over TLS, sends the
 * upgrade request (the client's upgrade headers copied), reads the response head; a 101 is
 * answered to the client (with the next hop's protocol headers) and from then on the client's
 * switched connection and the next hop's TLS connection are pumped both ways on the daemon's
 * tunnel thread (one libuv loop per process), with small buffers per direction: a side is not
 * read while its peer cannot take more. When either side ends, what is buffered for the other is
 * flushed (for up to 2 s) and both are freed. Any other answer is relayed as an ordinary
 * response. */
#ifndef URSA_TUNNEL_H
#define URSA_TUNNEL_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct http_request;
struct http_reply;

struct tunnel_hop {
	const char *base;            /* "https://127.0.0.1:10250" (http:// for plain TCP) */
	const char *ca_file;         /* PEM bundle the hop's certificate must chain to (its IP or name
				      * checked); NULL: not verified */
	const char *bearer;          /* Authorization: Bearer <it>, or NULL */
	const char *const *headers;  /* more request headers: name, value, ..., NULL (may be NULL) */
	long timeout_ms;             /* connecting and the response head; 0: 10 s */
};

/* Passes the upgrade request req on to hop at path (absolute, with its query). Blocking: run it
 * on a worker thread. Returns 0 when reply holds the answer: the 101 (the tunnel then runs on
 * its own) or the hop's non-101 answer (body up to 1 MiB); E_UNAVAILABLE (reply untouched) when
 * the hop could not be reached, E_TIMEOUT when it did not answer in time, E_BAD_GATEWAY-like
 * failures as E_UNAVAILABLE. Upgrade headers copied from the client: Connection, Upgrade,
 * Sec-WebSocket-Key, -Version, -Protocol, X-Stream-Protocol-Version (every one); relayed back
 * with a 101: Upgrade, Connection, Sec-WebSocket-Accept, Sec-WebSocket-Protocol,
 * X-Stream-Protocol-Version. */
int tunnel_proxy(struct http_request *req, struct http_reply *reply, const struct tunnel_hop *hop, const char *path);

/* True if req asks for a protocol switch (an Upgrade header and "upgrade" among Connection's
 * tokens). */
bool tunnel_is_upgrade(const struct http_request *req);

/* Tunnels now pumping in this process (switched and not yet freed). */
long tunnel_open_count(void);

/* --- pure parts (unit-tested, fuzzed) ----------------------------------------------------- */
#define TUNNEL_HEAD_MAX 16384  /* a response head longer than this is refused */
#define TUNNEL_HEAD_FIELDS 48

struct tunnel_head {
	int status;              /* 100..999 */
	size_t head_len;         /* bytes up to and including the blank line */
	long long content_length;/* -1 if absent */
	bool chunked;            /* Transfer-Encoding: chunked */
	size_t nfields;
	struct {
		const char *name, *value; /* into the parsed data (not NUL-terminated) */
		size_t name_len, value_len;
	} f[TUNNEL_HEAD_FIELDS];
};
/* Parses the HTTP/1.x response head at the start of data: 1 when complete (ret filled; its
 * fields point into data), 0 when more bytes are needed, -1 when malformed (or longer than
 * TUNNEL_HEAD_MAX, or more than TUNNEL_HEAD_FIELDS fields). */
int tunnel_head_parse(const char *data, size_t len, struct tunnel_head *ret);
/* The i-th value of the field named name (case-insensitive): NULL when there is none; its
 * length in *ret_len. */
const char *tunnel_head_get(const struct tunnel_head *h, const char *name, size_t i, size_t *ret_len);

/* Decodes a complete chunked body in place: its length, or -1 if malformed or incomplete. */
ssize_t tunnel_dechunk(char *data, size_t len);

#endif
