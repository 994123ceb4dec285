/* Fuzzes the kubelet's WebSocket side (wsconn.c over libwslay, with the stream's message handling
 * of remotecmd.c): the bytes are what a client sent on a switched connection. wslay parses them
 * through our callbacks (no socket: the bytes are the connection's "extra" input); every complete
 * message goes through the channel dispatch (resize JSON, close channel); a reply and a close are
 * queued afterwards. Nothing may crash, leak or loop: malformed or oversized frames end the
 * connection with a close. The same bytes are also parsed as a query string and as a runtime's
 * Status (rc_query_parse, rc_exec_failure). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "remotecmd.h"
#include "wsconn.h"

struct seen {
	size_t messages, bytes;
};

static void on_msg(void *ud, const uint8_t *data, size_t len, bool text)
{
	struct seen *s = ud;
	s->messages++;
	s->bytes += len;
	if (len > 4096)
		abort(); /* the limit given below */
	if (text || !len)
		return;
	unsigned w, h;
	if (data[0] == RC_RESIZE && rc_parse_resize(data + 1, len - 1, &w, &h) == 0 && (w > 65535 || h > 65535))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seen s = { 0 };
	struct wsconn *c = wsconn_new(-1, data, size, 4096, on_msg, &s);
	for (int i = 0; i < 10000 && wsconn_pending_input(c); i++)
		wsconn_io(c, 0);
	wsconn_send(c, RC_STDOUT, "out", 3);
	wsconn_close(c, 1000, "bye");
	for (int i = 0; i < 100 && wsconn_events(c, false); i++)
		wsconn_io(c, 0);
	wsconn_free(c);

	char *qs = malloc(size + 1);
	memcpy(qs, data, size);
	qs[size] = '\0';
	struct rc_query q;
	const char *err = NULL;
	if (rc_query_parse(qs, &q, &err) == 0) {
		if (q.ncmd > RC_MAX_ARGS || q.nports > RC_MAX_PORTS || (q.ncmd && (!q.cmd || q.cmd[q.ncmd])))
			abort();
		for (size_t i = 0; i < q.nports; i++)
			if (q.ports[i] < 1 || q.ports[i] > 65535)
				abort();
		rc_query_release(&q);
	} else if (!err) {
		abort();
	}
	free(qs);
	struct buf m = BUF_INIT;
	int code = rc_exec_failure((const char *)data, size, &m);
	if (code != 0 && code != 126 && code != 127)
		abort();
	buf_release(&m);
	return 0;
}
