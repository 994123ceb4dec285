/* Port-forward served by the kubelet itself (process runtime: pods share the node's network, so
 * a forwarded connection goes to 127.0.0.1:port). The client's SPDY/3.1 session arrives raw (a
 * plain SPDY upgrade) or in WebSocket binary messages; per forwarded connection the client opens
 * two streams with the same requestid header: streamtype "error" and "data", port "N". Both are
 * answered at once; when the pair is complete the port is dialled and bytes are copied between
 * the data stream and the socket; a port that cannot be reached gets a message on the error
 * stream, and the session stays for other connections. */
#define _GNU_SOURCE
#include "streams_impl.h"
#include "wsconn.h"
#include "ursa/log.h"
#include "ursa/spdy.h"
#include "ursa/xalloc.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_FWD 128                   /* forwarded connections at once per session */
#define MAX_TO_PORT (4u << 20)        /* bytes from the client waiting for a slow port */

struct fwd {
	char reqid[32];
	int port;
	uint32_t err_id, data_id;
	int fd;                 /* -1 until dialled */
	bool dialled, client_fin, port_eof, fin_sent, done;
	struct buf to_port;
};

struct pf {
	struct stream *s;
	struct spdy_session *sp;
	struct fwd *f[MAX_FWD];
	size_t nf;
	char pod[300];
};

static struct fwd *find_req(struct pf *p, const char *reqid)
{
	for (size_t i = 0; i < p->nf; i++)
		if (!strcmp(p->f[i]->reqid, reqid))
			return p->f[i];
	return NULL;
}

static struct fwd *find_id(struct pf *p, uint32_t id)
{
	for (size_t i = 0; i < p->nf; i++)
		if (p->f[i]->data_id == id || p->f[i]->err_id == id)
			return p->f[i];
	return NULL;
}

static void fwd_free(struct fwd *f)
{
	if (f->fd >= 0)
		close(f->fd);
	buf_release(&f->to_port);
	free(f);
}

static void dial(struct pf *p, struct fwd *f)
{
	f->dialled = true;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)f->port) };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		stream_nonblock(fd);
		f->fd = fd;
		return;
	}
	int e = errno;
	if (fd >= 0)
		close(fd);
	char msg[512];
	int n = snprintf(msg, sizeof(msg), "error forwarding port %d to pod %s: failed to connect to localhost:%d: %s",
			 f->port, p->pod, f->port, strerror(e));
	spdy_send_data(p->sp, f->err_id, msg, (size_t)n, true);
	spdy_close_stream(p->sp, f->data_id);
	f->done = true;
}

static int on_syn(void *ud, uint32_t id, uint32_t assoc, uint8_t prio, const struct spdy_header *h, size_t n, bool fin)
{
	(void)assoc, (void)prio, (void)fin;
	struct pf *p = ud;
	const char *type = spdy_header_get(h, n, "streamtype");
	const char *port = spdy_header_get(h, n, "port");
	const char *reqid = spdy_header_get(h, n, "requestid");
	long pn = port ? strtol(port, NULL, 10) : 0;
	bool is_err = type && !strcmp(type, "error"), is_data = type && !strcmp(type, "data");
	if ((!is_err && !is_data) || pn < 1 || pn > 65535)
		return SPDY_RST_PROTOCOL_ERROR;
	char rid[32];
	/* without requestid (old clients) the pair is the error stream and the data stream after it */
	snprintf(rid, sizeof(rid), "%s", reqid ? reqid : "");
	struct fwd *f = reqid ? find_req(p, rid) : NULL;
	if (!reqid && is_data) {
		for (size_t i = 0; i < p->nf && !f; i++)
			if (p->f[i]->err_id && !p->f[i]->data_id && p->f[i]->port == (int)pn)
				f = p->f[i];
	}
	if (!f) {
		if (p->nf >= MAX_FWD)
			return SPDY_RST_REFUSED_STREAM;
		f = xcalloc(1, sizeof(*f));
		f->fd = -1;
		f->port = (int)pn;
		snprintf(f->reqid, sizeof(f->reqid), "%s", rid);
		p->f[p->nf++] = f;
	}
	if ((is_err && f->err_id) || (is_data && f->data_id))
		return SPDY_RST_PROTOCOL_ERROR;
	if (is_err)
		f->err_id = id;
	else
		f->data_id = id;
	spdy_reply(p->sp, id, NULL, 0, false);
	if (f->err_id && f->data_id && !f->dialled)
		dial(p, f);
	return 0;
}

static void on_data(void *ud, uint32_t id, const char *data, size_t len)
{
	struct pf *p = ud;
	struct fwd *f = find_id(p, id);
	if (!f || id != f->data_id || f->done)
		return;
	if (f->to_port.len + len > MAX_TO_PORT) { /* the port does not read: give up on this one */
		spdy_reset_stream(p->sp, f->data_id, SPDY_RST_FLOW_CONTROL_ERROR);
		f->done = true;
		return;
	}
	buf_add(&f->to_port, data, len);
}

static void on_fin(void *ud, uint32_t id)
{
	struct pf *p = ud;
	struct fwd *f = find_id(p, id);
	if (f && id == f->data_id)
		f->client_fin = true;
}

static void on_rst(void *ud, uint32_t id, uint32_t status)
{
	(void)status;
	struct pf *p = ud;
	struct fwd *f = find_id(p, id);
	if (f && id == f->data_id)
		f->done = true;
}

static void on_pf_msg(void *ud, const uint8_t *data, size_t len, bool text)
{
	struct pf *p = ud;
	if (!text && spdy_session_feed(p->sp, data, len) < 0)
		wsconn_close(p->s->wc, 1002, "SPDY protocol error");
}

/* Moves the session's output to the client. false when the client's side broke. */
static bool flush_session(struct pf *p)
{
	size_t n;
	const char *o;
	while ((o = spdy_session_output(p->sp, &n))) {
		if (p->s->wc) {
			if (wsconn_send(p->s->wc, -1, o, n) < 0)
				return false;
			spdy_session_output_consumed(p->sp, n);
			continue;
		}
		ssize_t w = send(p->s->fd, o, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return true;
		if (w <= 0)
			return false;
		spdy_session_output_consumed(p->sp, (size_t)w);
	}
	return true;
}

static size_t client_queued(struct pf *p)
{
	return p->s->wc ? wsconn_queued(p->s->wc) + spdy_session_output_len(p->sp) : spdy_session_output_len(p->sp);
}

/* A forwarded connection's socket work; drops finished ones. */
static void service(struct pf *p, struct fwd *f, short revents)
{
	if (f->fd >= 0 && f->to_port.len && (revents & POLLOUT) && stream_flush(f->fd, &f->to_port) < 0)
		f->port_eof = f->client_fin = true;
	if (f->fd >= 0 && f->client_fin && !f->to_port.len)
		shutdown(f->fd, SHUT_WR);
	if (f->fd >= 0 && !f->port_eof && (revents & (POLLIN | POLLHUP | POLLERR))) {
		char tmp[32768];
		ssize_t n = recv(f->fd, tmp, sizeof(tmp), 0);
		if (n > 0)
			spdy_send_data(p->sp, f->data_id, tmp, (size_t)n, false);
		else if (n == 0 || (errno != EAGAIN && errno != EINTR))
			f->port_eof = true;
	}
	if (f->port_eof && !f->fin_sent) {
		spdy_close_stream(p->sp, f->data_id);
		spdy_close_stream(p->sp, f->err_id);
		f->fin_sent = true;
	}
	if (f->fin_sent && f->client_fin)
		f->done = true;
}

void stream_run_portforward(struct stream *s)
{
	static const struct spdy_callbacks cbs = { .on_syn_stream = on_syn, .on_data = on_data, .on_fin = on_fin,
						   .on_rst = on_rst };
	struct pf p = { .s = s };
	snprintf(p.pod, sizeof(p.pod), "%s", s->pod);
	/* manual window, never consumed: kubectl ignores WINDOW_UPDATE (see cri_streams.c) */
	p.sp = spdy_session_new(SPDY_SERVER, &cbs, &p, NULL, SPDY_MANUAL_WINDOW);
	s->msg_fn = on_pf_msg;
	s->msg_ud = &p;
	if (!s->wc && s->cextra.len && spdy_session_feed(p.sp, s->cextra.ptr, s->cextra.len) < 0)
		goto out;
	while (!stream_stopping(s)) {
		if (!flush_session(&p))
			break;
		struct pollfd fds[MAX_FWD + 1];
		size_t idx[MAX_FWD + 1];
		int n = 0;
		bool room = client_queued(&p) < STREAM_HIGH;
		if (s->wc) {
			short ev = wsconn_events(s->wc, true);
			if (!ev)
				break;
			fds[n++] = (struct pollfd){ .fd = s->fd, .events = ev };
		} else {
			if (spdy_session_closing(p.sp) && !spdy_session_output_len(p.sp))
				break;
			fds[n++] = (struct pollfd){ .fd = s->fd, .events = (short)(POLLIN |
					(spdy_session_output_len(p.sp) ? POLLOUT : 0)) };
		}
		for (size_t i = 0; i < p.nf; i++) {
			struct fwd *f = p.f[i];
			if (f->fd < 0)
				continue;
			short ev = (short)((room && !f->port_eof ? POLLIN : 0) | (f->to_port.len ? POLLOUT : 0));
			idx[n] = i;
			fds[n++] = (struct pollfd){ .fd = f->fd, .events = ev };
		}
		int r = poll(fds, (nfds_t)n, s->wc && wsconn_pending_input(s->wc) ? 0 : 250);
		if (r < 0 && errno != EINTR)
			break;
		if (r < 0)
			continue;
		if (s->wc) {
			if (wsconn_io(s->wc, fds[0].revents) < 0)
				break;
		} else if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			char tmp[65536];
			ssize_t got = recv(s->fd, tmp, sizeof(tmp), 0);
			if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR))
				break;
			if (got > 0 && spdy_session_feed(p.sp, tmp, (size_t)got) < 0) {
				flush_session(&p);
				break;
			}
		}
		short rev[MAX_FWD] = { 0 };
		for (int k = 1; k < n; k++)
			rev[idx[k]] = fds[k].revents;
		for (size_t i = 0; i < p.nf; i++)
			if (p.f[i]->fd >= 0)
				service(&p, p.f[i], rev[i]);
		for (size_t i = 0; i < p.nf;) {
			if (p.f[i]->done) {
				fwd_free(p.f[i]);
				p.f[i] = p.f[--p.nf];
			} else {
				i++;
			}
		}
	}
	flush_session(&p);
	if (s->wc && wsconn_events(s->wc, false))
		wsconn_close(s->wc, 1000, NULL);
	stream_linger(s);
out:
	for (size_t i = 0; i < p.nf; i++)
		fwd_free(p.f[i]);
	spdy_session_free(p.sp);
}
