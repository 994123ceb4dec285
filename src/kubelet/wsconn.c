/* A server-side WebSocket connection on libwslay's event API (see wsconn.h). */
#define _GNU_SOURCE
#include "wsconn.h"
#include "ursa/buf.h"
#include "ursa/xalloc.h"
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <wslay/wslay.h>

#define READ_BUDGET (256 * 1024) /* bytes read per wsconn_io, so one side cannot starve the other */

struct wsconn {
	wslay_event_context_ptr ctx;
	int fd;
	struct buf extra;       /* bytes read with the request, parsed first */
	size_t extra_off;
	size_t budget;
	bool peer_gone, broken;
	wsconn_msg_fn on_msg;
	void *ud;
	struct buf out;         /* prefix + data of a message being queued */
	/* wslay sends control frames before queued data: our close waits until the data is out */
	bool close_pending;
	uint16_t close_code;
	char close_reason[124];
};

static ssize_t on_recv(wslay_event_context_ptr ctx, uint8_t *data, size_t len, int flags, void *ud)
{
	(void)flags;
	struct wsconn *c = ud;
	if (c->extra_off < c->extra.len) {
		size_t n = c->extra.len - c->extra_off < len ? c->extra.len - c->extra_off : len;
		memcpy(data, c->extra.ptr + c->extra_off, n);
		c->extra_off += n;
		return (ssize_t)n;
	}
	if (c->budget == 0 || c->fd < 0) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	if (len > c->budget)
		len = c->budget;
	ssize_t n;
	do
		n = recv(c->fd, data, len, 0);
	while (n < 0 && errno == EINTR);
	if (n > 0) {
		c->budget -= (size_t)n;
		return n;
	}
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	c->peer_gone = true;
	wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
	return -1;
}

static ssize_t on_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags, void *ud)
{
	struct wsconn *c = ud;
	ssize_t n;
	if (c->fd < 0) { /* no socket (the fuzz target): everything is written */
		return (ssize_t)len;
	}
	do
		n = send(c->fd, data, len, MSG_NOSIGNAL | ((flags & WSLAY_MSG_MORE) ? MSG_MORE : 0));
	while (n < 0 && errno == EINTR);
	if (n >= 0)
		return n;
	if (errno == EAGAIN || errno == EWOULDBLOCK) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	c->peer_gone = true;
	wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
	return -1;
}

static void on_msg_recv(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *arg, void *ud)
{
	(void)ctx;
	struct wsconn *c = ud;
	if (arg->opcode == WSLAY_BINARY_FRAME || arg->opcode == WSLAY_TEXT_FRAME)
		c->on_msg(c->ud, arg->msg, arg->msg_length, arg->opcode == WSLAY_TEXT_FRAME);
}

struct wsconn *wsconn_new(int fd, const void *extra, size_t extra_len, size_t max_msg, wsconn_msg_fn on_msg, void *ud)
{
	static const struct wslay_event_callbacks cbs = {
		.recv_callback = on_recv,
		.send_callback = on_send,
		.on_msg_recv_callback = on_msg_recv,
	};
	struct wsconn *c = xcalloc(1, sizeof(*c));
	c->fd = fd;
	c->on_msg = on_msg;
	c->ud = ud;
	buf_add(&c->extra, extra, extra_len);
	if (fd >= 0) {
		int fl = fcntl(fd, F_GETFL);
		if (fl >= 0)
			fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	}
	if (wslay_event_context_server_init(&c->ctx, &cbs, c) != 0)
		abort(); /* out of memory */
	wslay_event_config_set_max_recv_msg_length(c->ctx, max_msg);
	return c;
}

void wsconn_free(struct wsconn *c)
{
	if (!c)
		return;
	wslay_event_context_free(c->ctx);
	buf_release(&c->extra);
	buf_release(&c->out);
	free(c);
}

static bool over(const struct wsconn *c)
{
	if (c->broken)
		return true;
	if (c->peer_gone)
		return true;
	return !wslay_event_want_read(c->ctx) && !wslay_event_want_write(c->ctx);
}

bool wsconn_pending_input(const struct wsconn *c)
{
	return c->extra_off < c->extra.len && !over(c) && wslay_event_want_read(c->ctx);
}

short wsconn_events(struct wsconn *c, bool read_ok)
{
	if (over(c))
		return 0;
	if (c->close_pending && !wslay_event_get_queued_msg_count(c->ctx)) { /* the data is out: now the close */
		c->close_pending = false;
		wslay_event_queue_close(c->ctx, c->close_code, (const uint8_t *)c->close_reason,
					c->close_code ? strlen(c->close_reason) : 0);
	}
	short ev = 0;
	if (wslay_event_want_read(c->ctx) && read_ok)
		ev |= POLLIN;
	if (wslay_event_want_write(c->ctx))
		ev |= POLLOUT;
	return ev;
}

int wsconn_io(struct wsconn *c, short revents)
{
	if (over(c))
		return -1;
	if ((revents & (POLLIN | POLLHUP | POLLERR)) || wsconn_pending_input(c)) {
		c->budget = (revents & (POLLIN | POLLHUP | POLLERR)) ? READ_BUDGET : 0;
		/* a protocol error (malformed, oversized) queues a close frame: it goes out before the end */
		if (wslay_event_want_read(c->ctx) && wslay_event_recv(c->ctx) != 0)
			c->broken = c->peer_gone || !wslay_event_want_write(c->ctx);
	}
	for (int round = 0; round < 2; round++) {
		if (wslay_event_want_write(c->ctx) && wslay_event_send(c->ctx) != 0)
			c->broken = true;
		if (!c->close_pending || c->broken || wslay_event_get_queued_msg_count(c->ctx))
			break;
		c->close_pending = false;
		wslay_event_queue_close(c->ctx, c->close_code, (const uint8_t *)c->close_reason,
					c->close_code ? strlen(c->close_reason) : 0);
	}
	return over(c) ? -1 : 0;
}

int wsconn_send(struct wsconn *c, int prefix, const void *data, size_t len)
{
	if (over(c) || c->close_pending || wslay_event_get_close_sent(c->ctx))
		return -1;
	buf_reset(&c->out);
	if (prefix >= 0)
		buf_addch(&c->out, (char)prefix);
	buf_add(&c->out, data, len);
	struct wslay_event_msg m = { .opcode = WSLAY_BINARY_FRAME, .msg = (const uint8_t *)c->out.ptr,
				     .msg_length = c->out.len };
	return wslay_event_queue_msg(c->ctx, &m) == 0 ? 0 : -1;
}

void wsconn_close(struct wsconn *c, uint16_t code, const char *reason)
{
	if (over(c) || c->close_pending || wslay_event_get_close_sent(c->ctx))
		return;
	size_t rn = reason ? strlen(reason) : 0;
	if (rn > 120)
		rn = 120;
	c->close_code = code;
	memcpy(c->close_reason, reason ? reason : "", rn);
	c->close_reason[rn] = '\0';
	if (wslay_event_get_queued_msg_count(c->ctx)) {
		c->close_pending = true;
		return;
	}
	wslay_event_queue_close(c->ctx, code, (const uint8_t *)c->close_reason, code ? rn : 0);
}

size_t wsconn_queued(const struct wsconn *c)
{
	return wslay_event_get_queued_msg_length(c->ctx);
}

bool wsconn_peer_gone(const struct wsconn *c)
{
	return c->peer_gone || wslay_event_get_close_received(c->ctx);
}
