/* Feeds arbitrary bytes to a SPDY/3.1 server session and a client session (ursa/spdy.h), split at
 * a point the first byte picks, with callbacks that reply, send data, reset and close, so every
 * receive path and the sends they trigger run on hostile input. Small limits make the caps bite. */
#include "ursa/spdy.h"
#include <stdint.h>
#include <string.h>

struct ctx {
	struct spdy_session *s;
	size_t bytes;
};

static int on_syn_stream(void *ud, uint32_t id, uint32_t assoc, uint8_t prio, const struct spdy_header *h, size_t n,
			 bool fin)
{
	struct ctx *c = ud;
	(void)assoc;
	(void)fin;
	for (size_t i = 0; i < n; i++)
		c->bytes += strlen(h[i].name) + h[i].value_len;
	if (spdy_header_get(h, n, "refuse"))
		return SPDY_RST_REFUSED_STREAM;
	struct spdy_header r = { "streamtype", "error", 0 };
	spdy_reply(c->s, id, &r, 1, prio == 7);
	return 0;
}

static void on_syn_reply(void *ud, uint32_t id, const struct spdy_header *h, size_t n, bool fin)
{
	struct ctx *c = ud;
	(void)fin;
	c->bytes += n;
	if (spdy_header_get(h, n, "reset"))
		spdy_reset_stream(c->s, id, SPDY_RST_CANCEL);
}

static void on_data(void *ud, uint32_t id, const char *data, size_t len)
{
	struct ctx *c = ud;
	c->bytes += len;
	if (len && data[0] == 'e')
		spdy_send_data(c->s, id, data, len, false); /* echo */
	else if (len && data[0] == 'f')
		spdy_close_stream(c->s, id);
}

static void on_fin(void *ud, uint32_t id)
{
	struct ctx *c = ud;
	spdy_send_data(c->s, id, "bye", 3, true);
}

static void on_ping(void *ud, uint32_t id)
{
	(void)ud;
	(void)id;
}

static const struct spdy_callbacks cbs = {
	.on_syn_stream = on_syn_stream, .on_syn_reply = on_syn_reply, .on_data = on_data, .on_fin = on_fin,
	.on_ping = on_ping,
};

static void run(enum spdy_role role, const uint8_t *data, size_t size, size_t split)
{
	struct spdy_limits lim = spdy_limits_default();
	lim.max_frame = 1 << 16;
	lim.max_header_block = 1 << 14;
	lim.max_headers = 32;
	lim.max_streams = 16;
	struct ctx c = { 0 };
	c.s = spdy_session_new(role, &cbs, &c, &lim, role == SPDY_SERVER ? 0 : SPDY_MANUAL_WINDOW);
	if (role == SPDY_CLIENT) {
		/* streams 1 and 3 exist, so SYN_REPLY and DATA for them reach the callbacks */
		struct spdy_header h = { "streamtype", "stdin", 0 };
		uint32_t id;
		spdy_open_stream(c.s, &h, 1, 0, false, &id);
		spdy_open_stream(c.s, &h, 1, 0, false, &id);
	}
	if (spdy_session_feed(c.s, data, split) == 0)
		spdy_session_feed(c.s, data + split, size - split);
	size_t len;
	while (spdy_session_output(c.s, &len))
		spdy_session_output_consumed(c.s, len > 100 ? len / 2 : len);
	spdy_stream_consumed(c.s, 1, 10);
	spdy_session_free(c.s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t split = size ? (size_t)data[0] % (size + 1) : 0;
	run(SPDY_SERVER, data, size, split);
	run(SPDY_CLIENT, data, size, size / 2);
	return 0;
}
