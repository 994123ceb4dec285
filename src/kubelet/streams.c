/* The kubelet's stream endpoints (see streams.h).
 *
 * The request is checked and its target found (runtime stream_target; for the CRI runtime the
 * streaming server of containerd is dialled) on the server's worker thread, so that errors are
 * ordinary HTTP answers. Once the connection is switched, a thread of the stream's own runs a
 * poll loop over the client's socket and the other side: the command's pipes or terminal (process
 * exec), the container's log (process attach), containerd's streaming connection (CRI: a byte
 * tunnel for port-forward, a SPDY session for exec and attach), or the SPDY session of a
 * port-forward served here (process). Backpressure: a side is not read while the other side has
 * STREAM_HIGH bytes waiting. */
#define _GNU_SOURCE
#include "streams.h"
#include "procexec.h"
#include "remotecmd.h"
#include "shim.h"
#include "streams_impl.h"
#include "wsconn.h"
#include "ursa/errors.h"
#include "ursa/http.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"
#include <errno.h>
#include <jansson.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_SEGMENT 253
#define TICK_MS 250
#define CLOSE_WAIT_MS 2000   /* after our close frame, how long the peer has to answer */
#define DRAIN_MS 1000        /* after the command ended, how long its output may still come */
#define SIZE_WAIT_MS 300     /* with a terminal, how long the command waits for the client's size */

void rt_stream_target_release(struct rt_stream_target *t)
{
	free(t->url);
	for (char **e = t->envp; e && *e; e++)
		free(*e);
	free(t->envp);
	free(t->working_dir);
	free(t->log_path);
	memset(t, 0, sizeof(*t));
}

struct kl_streams {
	const struct runtime_ops *ops;
	struct runtime *rt;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	size_t active;
	atomic_bool stopping;
};

void stream_free(struct stream *s)
{
	if (!s)
		return;
	wsconn_free(s->wc);
	rc_query_release(&s->q);
	rt_stream_target_release(&s->t);
	free(s->cmdline);
	if (s->bfd >= 0)
		close(s->bfd);
	buf_release(&s->bextra);
	buf_release(&s->to_back);
	buf_release(&s->to_client);
	buf_release(&s->cextra);
	free(s);
}

bool stream_stopping(const struct stream *s)
{
	return atomic_load(&s->ss->stopping);
}

/* ---- byte helpers ---- */

/* Writes what it can of b to fd (non-blocking) and drops it from b: 0, or -1 when fd broke. */
int stream_flush(int fd, struct buf *b)
{
	while (b->len) {
		ssize_t n = send(fd, b->ptr, b->len, MSG_NOSIGNAL);
		if (n < 0 && errno == ENOTSOCK)
			n = write(fd, b->ptr, b->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n <= 0)
			return -1;
		memmove(b->ptr, b->ptr + n, b->len - (size_t)n);
		b->len -= (size_t)n;
		b->ptr[b->len] = '\0';
	}
	return 0;
}

/* Reads up to max bytes from fd into b: >0 read, 0 nothing now, -1 end of file or error. */
ssize_t stream_fill(int fd, struct buf *b, size_t max)
{
	buf_grow(b, max);
	ssize_t n;
	do
		n = read(fd, b->ptr + b->len, max);
	while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	if (n <= 0)
		return -1;
	b->len += (size_t)n;
	b->ptr[b->len] = '\0';
	return n;
}

void stream_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* ---- the WebSocket side of exec and attach ---- */

void stream_send_status(struct stream *s, const struct buf *status)
{
	if (s->wc) {
		wsconn_send(s->wc, RC_ERROR, status->ptr, status->len);
		wsconn_close(s->wc, 1000, NULL);
	}
}

/* One turn of the WebSocket side alone: waits up to timeout_ms for the socket, then reads and
 * writes what it can (messages go to msg_fn). -1 when the connection is done. */
static int ws_turn(struct stream *s, int timeout_ms)
{
	short ev = wsconn_events(s->wc, true);
	if (!ev)
		return -1;
	struct pollfd p = { .fd = s->fd, .events = ev };
	int r = poll(&p, 1, wsconn_pending_input(s->wc) ? 0 : timeout_ms);
	if (r < 0 && errno != EINTR)
		return -1;
	return wsconn_io(s->wc, r > 0 ? p.revents : 0) < 0 ? -1 : 0;
}

/* Runs the loop's tail: lets queued messages and our close frame go out (up to CLOSE_WAIT_MS). */
void stream_linger(struct stream *s)
{
	int64_t until = mono_ms() + CLOSE_WAIT_MS;
	while (s->wc && mono_ms() < until && !stream_stopping(s))
		if (ws_turn(s, TICK_MS) < 0)
			break;
	/* Closing a socket with unread input resets it, and the client may lose our last frames:
	 * finish writing, then read what the client still sends until it closes (briefly). */
	if (s->fd >= 0 && !stream_stopping(s)) {
		shutdown(s->fd, SHUT_WR);
		int64_t end = mono_ms() + 500;
		char tmp[16384];
		while (mono_ms() < end) {
			struct pollfd p = { .fd = s->fd, .events = POLLIN };
			if (poll(&p, 1, 100) < 0 && errno != EINTR)
				break;
			if (p.revents && recv(s->fd, tmp, sizeof(tmp), 0) <= 0 && errno != EAGAIN)
				break;
		}
	}
}

/* ---- process exec ---- */

struct pexec {
	struct stream *s;
	struct procexec px;
	struct buf in;         /* stdin bytes waiting for the command */
	bool in_eof;           /* the client closed stdin (v5) */
	bool started;
	bool sized;            /* a size came before the start: w, h */
	unsigned w, h;
};

static void on_exec_msg(void *ud, const uint8_t *data, size_t len, bool text)
{
	struct pexec *e = ud;
	if (text || len == 0)
		return;
	switch (data[0]) {
	case RC_STDIN:
		if (!e->in_eof)
			buf_add(&e->in, data + 1, len - 1);
		break;
	case RC_RESIZE: {
		unsigned w, h;
		if (rc_parse_resize(data + 1, len - 1, &w, &h) < 0)
			break;
		if (e->started)
			procexec_resize(&e->px, w, h);
		else
			e->sized = true, e->w = w, e->h = h;
		break;
	}
	case RC_CLOSE:
		if (e->s->v5 && len >= 2 && data[1] == RC_STDIN)
			e->in_eof = true;
		break;
	default:
		break;
	}
}

static void exec_failed(struct stream *s, int code, const char *msg)
{
	struct buf b = BUF_INIT;
	/* The runtime's words on the command's stderr (stdout with a terminal), then the exit code. */
	buf_addf(&b, "%s\r\n", msg);
	if (s->q.err || s->q.tty)
		wsconn_send(s->wc, s->q.tty ? RC_STDOUT : RC_STDERR, b.ptr, b.len);
	buf_reset(&b);
	rc_status_exit(&b, code, s->cmdline);
	stream_send_status(s, &b);
	buf_release(&b);
	stream_linger(s);
}

/* Reads the command's output fd (if open) into a message of channel ch. */
static void pump_out(struct stream *s, int *fd, int ch)
{
	char chunk[32768];
	ssize_t n;
	do
		n = read(*fd, chunk, sizeof(chunk));
	while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return;
	if (n <= 0) { /* EOF (EIO on a terminal whose side is closed) */
		close(*fd);
		*fd = -1;
		return;
	}
	wsconn_send(s->wc, ch, chunk, (size_t)n);
}

/* A terminal's client sends its size right after the upgrade (kubectl does): the command starts
 * once it came (or SIZE_WAIT_MS passed), so that it never sees a 0x0 terminal at first. False
 * when the connection ended meanwhile. */
static bool wait_for_size(struct pexec *e)
{
	struct stream *s = e->s;
	for (int64_t until = mono_ms() + SIZE_WAIT_MS; !e->sized && mono_ms() < until;)
		if (stream_stopping(s) || ws_turn(s, 20) < 0)
			return false;
	return true;
}

static void run_proc_exec(struct stream *s)
{
	struct pexec e = { .s = s };
	char *err = NULL;
	s->msg_fn = on_exec_msg;
	s->msg_ud = &e;
	if (s->q.tty && !wait_for_size(&e)) {
		buf_release(&e.in);
		return;
	}
	struct procexec_tty tty = { s->q.tty, e.sized ? e.w : 0, e.sized ? e.h : 0 };
	int code = procexec_start(&s->t, s->q.cmd, &tty, s->q.in, s->q.out || s->q.tty, s->q.err && !s->q.tty,
				  &e.px, &err);
	e.started = code == 0;
	if (code != 0) {
		exec_failed(s, code, err);
		free(err);
		return;
	}
	int stdin_fd = s->q.tty ? e.px.pty : e.px.in;
	int out_fd = s->q.tty ? e.px.pty : e.px.out, err_fd = s->q.tty ? -1 : e.px.err;
	bool exited = false, in_closed = false;
	int exit_code = 0;
	int64_t drain_until = 0;
	for (;;) {
		if (stream_stopping(s))
			break;
		if (!exited && procexec_reap(&e.px, &exit_code)) {
			exited = true;
			drain_until = mono_ms() + DRAIN_MS;
		}
		bool outs_done = out_fd < 0 && err_fd < 0;
		if (exited && (outs_done || mono_ms() >= drain_until))
			break;
		/* stdin: closed once the client closed it and everything was written */
		if (e.in_eof && !e.in.len && !in_closed && stdin_fd >= 0) {
			if (s->q.tty) {
				if (write(stdin_fd, "\x04", 1) < 0) {
					/* the terminal is gone: the command ends anyway */
				}
			} else {
				close(e.px.in);
				e.px.in = -1;
			}
			in_closed = true;
		}
		struct pollfd p[5];
		int n = 0, iws = -1, iin = -1, iout = -1, ierr = -1, ipid = -1;
		short wev = wsconn_events(s->wc, e.in.len < STREAM_HIGH);
		if (!wev)
			break;
		p[iws = n++] = (struct pollfd){ .fd = s->fd, .events = wev };
		bool room = wsconn_queued(s->wc) < STREAM_HIGH;
		if (exited && !room) /* the client is slow, the output is not lost: wait for it */
			drain_until = mono_ms() + DRAIN_MS;
		if (stdin_fd >= 0 && !in_closed && e.in.len && stdin_fd != out_fd)
			p[iin = n++] = (struct pollfd){ .fd = stdin_fd, .events = POLLOUT };
		if (out_fd >= 0 && (room || (stdin_fd == out_fd && e.in.len)))
			p[iout = n++] = (struct pollfd){ .fd = out_fd, .events = (short)((room ? POLLIN : 0) |
				(stdin_fd == out_fd && e.in.len && !in_closed ? POLLOUT : 0)) };
		if (err_fd >= 0 && room)
			p[ierr = n++] = (struct pollfd){ .fd = err_fd, .events = POLLIN };
		if (e.px.pidfd >= 0 && !exited)
			p[ipid = n++] = (struct pollfd){ .fd = e.px.pidfd, .events = POLLIN };
		int timeout = wsconn_pending_input(s->wc) ? 0 : (e.px.pidfd < 0 || exited) ? 50 : TICK_MS;
		int r = poll(p, (nfds_t)n, timeout);
		if (r < 0 && errno != EINTR)
			break;
		if (r < 0)
			continue;
		if (wsconn_io(s->wc, p[iws].revents) < 0)
			break;
		if (e.in.len && !in_closed &&
		    ((iin >= 0 && p[iin].revents) || (iout >= 0 && (p[iout].revents & (POLLOUT | POLLERR))))) {
			if (stream_flush(stdin_fd, &e.in) < 0) {
				buf_reset(&e.in);
				e.in_eof = true;
				if (!s->q.tty) {
					close(e.px.in);
					e.px.in = -1;
				}
				in_closed = true;
			}
		}
		if (iout >= 0 && (p[iout].revents & (POLLIN | POLLHUP | POLLERR)) && room)
			pump_out(s, &out_fd, RC_STDOUT);
		if (ierr >= 0 && (p[ierr].revents & (POLLIN | POLLHUP | POLLERR)))
			pump_out(s, &err_fd, RC_STDERR);
		if (s->q.tty)
			e.px.pty = out_fd;
		else {
			e.px.out = out_fd;
			e.px.err = err_fd;
		}
		(void)ipid;
	}
	if (!exited) { /* the client left (or the kubelet stops): the command goes too */
		procexec_kill(&e.px);
		if (wsconn_events(s->wc, false))
			wsconn_close(s->wc, 1001, "stream ended");
		stream_linger(s);
	} else {
		/* its output is what it is: descendants that keep the pipes open are not waited for */
		procexec_close(&e.px);
		struct buf b = BUF_INIT;
		if (exit_code == 0)
			rc_status_success(&b);
		else
			rc_status_exit(&b, exit_code, s->cmdline);
		stream_send_status(s, &b);
		buf_release(&b);
		stream_linger(s);
	}
	buf_release(&e.in);
}

/* ---- process attach: the container's output, from its log ---- */

static void on_ignore_msg(void *ud, const uint8_t *data, size_t len, bool text)
{
	(void)ud, (void)data, (void)len, (void)text;
}

static bool log_final(int fd)
{
	struct stat st;
	return fstat(fd, &st) < 0 || st.st_nlink == 0 || shim_log_is_final(&st);
}

/* Sends the complete CRI records of raw ("<ts> <stream> <F|P> <text>\n") and keeps the rest. */
static void send_records(struct stream *s, struct buf *raw)
{
	size_t off = 0;
	const char *nl;
	while (off < raw->len && (nl = memchr(raw->ptr + off, '\n', raw->len - off))) {
		const char *line = raw->ptr + off, *end = nl;
		const char *sp1 = memchr(line, ' ', (size_t)(end - line));
		const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(end - sp1 - 1)) : NULL;
		if (sp2 && end - sp2 >= 2) {
			bool is_err = (size_t)(sp2 - sp1 - 1) == 6 && !memcmp(sp1 + 1, "stderr", 6);
			bool full = sp2[1] == 'F';
			const char *text = end - sp2 > 2 ? sp2 + 3 : end;
			struct buf m = BUF_INIT;
			buf_add(&m, text, (size_t)(end - text));
			if (full)
				buf_addch(&m, '\n');
			int ch = is_err && s->q.err && !s->q.tty ? RC_STDERR : RC_STDOUT;
			if ((ch == RC_STDOUT && (s->q.out || s->q.tty)) || ch == RC_STDERR)
				wsconn_send(s->wc, ch, m.ptr, m.len);
			buf_release(&m);
		}
		off = (size_t)(nl - raw->ptr) + 1;
	}
	memmove(raw->ptr, raw->ptr + off, raw->len - off);
	raw->len -= off;
	if (raw->ptr)
		raw->ptr[raw->len] = '\0';
}

static void run_proc_attach(struct stream *s)
{
	s->msg_fn = on_ignore_msg;
	int fd = open(s->t.log_path, O_RDONLY | O_CLOEXEC);
	struct buf raw = BUF_INIT;
	bool ended = false;
	if (fd >= 0)
		lseek(fd, 0, SEEK_END);
	for (;;) {
		if (stream_stopping(s) || fd < 0)
			break;
		short wev = wsconn_events(s->wc, true);
		if (!wev)
			break;
		struct pollfd p = { .fd = s->fd, .events = wev };
		int r = poll(&p, 1, wsconn_pending_input(s->wc) ? 0 : 150);
		if (r < 0 && errno != EINTR)
			break;
		if (wsconn_io(s->wc, r > 0 ? p.revents : 0) < 0)
			break;
		if (wsconn_queued(s->wc) >= STREAM_HIGH)
			continue;
		bool final = log_final(fd);
		ssize_t n = stream_fill(fd, &raw, 65536);
		send_records(s, &raw);
		if (n <= 0 && final) {
			ended = true;
			break;
		}
	}
	if (fd >= 0)
		close(fd);
	buf_release(&raw);
	struct buf b = BUF_INIT;
	if (ended || fd < 0) {
		if (fd < 0)
			rc_status_failure(&b, "the container's output cannot be read");
		else
			rc_status_success(&b);
		stream_send_status(s, &b);
	} else if (wsconn_events(s->wc, false)) {
		wsconn_close(s->wc, 1001, "stream ended");
	}
	buf_release(&b);
	stream_linger(s);
}

/* ---- a byte tunnel: the client (WebSocket messages or raw bytes) <-> bfd ---- */

static void on_tunnel_msg(void *ud, const uint8_t *data, size_t len, bool text)
{
	struct stream *s = ud;
	if (!text)
		buf_add(&s->to_back, data, len);
}

void stream_run_tunnel(struct stream *s)
{
	s->msg_fn = on_tunnel_msg;
	s->msg_ud = s;
	stream_nonblock(s->bfd);
	if (s->bextra.len) { /* what the backend sent right after its answer */
		if (s->wc)
			wsconn_send(s->wc, -1, s->bextra.ptr, s->bextra.len);
		else
			buf_add(&s->to_client, s->bextra.ptr, s->bextra.len);
		buf_reset(&s->bextra);
	}
	if (!s->wc && s->cextra.len) {
		buf_add(&s->to_back, s->cextra.ptr, s->cextra.len);
		buf_reset(&s->cextra);
	}
	bool back_eof = false, client_eof = false;
	while (!stream_stopping(s)) {
		struct pollfd p[2];
		size_t client_q = s->wc ? wsconn_queued(s->wc) : s->to_client.len;
		if (s->wc) {
			short ev = wsconn_events(s->wc, s->to_back.len < STREAM_HIGH);
			if (!ev)
				break;
			p[0] = (struct pollfd){ .fd = s->fd, .events = ev };
		} else {
			p[0] = (struct pollfd){ .fd = s->fd, .events = (short)((!client_eof && s->to_back.len < STREAM_HIGH ? POLLIN : 0) |
					(s->to_client.len ? POLLOUT : 0)) };
		}
		p[1] = (struct pollfd){ .fd = s->bfd, .events = (short)((!back_eof && client_q < STREAM_HIGH ? POLLIN : 0) |
				(s->to_back.len ? POLLOUT : 0)) };
		if (back_eof && !client_q)
			break;
		if (client_eof && !s->to_back.len)
			break;
		int r = poll(p, 2, s->wc && wsconn_pending_input(s->wc) ? 0 : TICK_MS);
		if (r < 0 && errno != EINTR)
			break;
		if (r < 0)
			continue;
		if (s->wc) {
			if (wsconn_io(s->wc, p[0].revents) < 0)
				break;
		} else {
			if ((p[0].revents & POLLOUT) && stream_flush(s->fd, &s->to_client) < 0)
				break;
			if ((p[0].revents & (POLLIN | POLLHUP | POLLERR)) && stream_fill(s->fd, &s->to_back, 65536) < 0)
				client_eof = true;
		}
		if ((p[1].revents & POLLOUT) && stream_flush(s->bfd, &s->to_back) < 0)
			break;
		if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
			struct buf *dst = s->wc ? &s->bextra : &s->to_client;
			if (stream_fill(s->bfd, dst, 65536) < 0)
				back_eof = true;
			if (s->wc && s->bextra.len) {
				wsconn_send(s->wc, -1, s->bextra.ptr, s->bextra.len);
				buf_reset(&s->bextra);
			}
		}
		if (back_eof && s->wc && wsconn_events(s->wc, false) && !wsconn_queued(s->wc))
			wsconn_close(s->wc, 1000, NULL);
	}
	if (s->wc && wsconn_events(s->wc, false))
		wsconn_close(s->wc, back_eof ? 1000 : 1001, NULL);
	stream_linger(s);
}

/* ---- threads ---- */

static void on_msg(void *ud, const uint8_t *data, size_t len, bool text)
{
	struct stream *s = ud;
	if (s->msg_fn)
		s->msg_fn(s->msg_ud, data, len, text);
}

/* Frees s and gives its place back (the count kl_streams_serve took). */
static void stream_done(struct stream *s)
{
	struct kl_streams *ss = s->ss;
	stream_free(s);
	pthread_mutex_lock(&ss->lock);
	ss->active--;
	pthread_cond_broadcast(&ss->cond);
	pthread_mutex_unlock(&ss->lock);
}

static void *stream_main(void *arg)
{
	struct stream *s = arg;
	if (s->ws)
		s->wc = wsconn_new(s->fd, s->cextra.ptr, s->cextra.len, KL_MAX_WS_MESSAGE, on_msg, s);
	else
		stream_nonblock(s->fd);
	switch (s->be) {
	case BE_PROC_EXEC:
		run_proc_exec(s);
		break;
	case BE_PROC_ATTACH:
		run_proc_attach(s);
		break;
	case BE_TUNNEL:
		stream_run_tunnel(s);
		break;
	case BE_SPDY_PF:
		stream_run_portforward(s);
		break;
	case BE_CRI_CMD:
		stream_run_cri_cmd(s);
		break;
	}
	http_upgraded_close(s->u);
	stream_done(s);
	return NULL;
}

static void on_switched(void *ud, struct http_upgraded *u, int fd, const char *extra, size_t extra_len)
{
	struct stream *s = ud;
	if (!u) { /* the client left before the switch */
		stream_done(s);
		return;
	}
	s->u = u;
	s->fd = fd;
	buf_add(&s->cextra, extra, extra_len);
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, 256 * 1024);
	pthread_t t;
	if (pthread_create(&t, &at, stream_main, s) != 0) {
		log_warn("kubelet: cannot start a stream thread", "err=\"%s\"", strerror(errno));
		http_upgraded_close(u);
		stream_done(s);
	}
	pthread_attr_destroy(&at);
}

/* ---- requests ---- */

/* A refused stream: a Kubernetes Status, which kubectl prints (plain text it would try to read as
 * YAML, and print an empty "Error from server"). */
static void reply_text(struct http_reply *rp, int status, const char *text)
{
	const char *reason = status == 400   ? "BadRequest"
			     : status == 401 ? "Unauthorized"
			     : status == 404 ? "NotFound"
			     : status == 405 ? "MethodNotAllowed"
			     : status == 409 ? "Conflict"
			     : status == 429 ? "TooManyRequests"
			     : status == 503 ? "ServiceUnavailable"
					     : "InternalError";
	json_t *st = json_pack("{s:s,s:s,s:{},s:s,s:s,s:s,s:i}", "kind", "Status", "apiVersion", "v1", "metadata",
			       "status", "Failure", "message", text, "reason", reason, "code", status);
	struct buf b = BUF_INIT;
	json_dump_buf(st, &b);
	json_decref(st);
	http_reply_set(rp, status, "application/json", &b);
}

/* n path segments of p into seg (new strings); false if the path has another shape. */
static bool split_segments(const char *p, char **seg, int n)
{
	for (int i = 0; i < n; i++) {
		const char *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);
		if ((slash != NULL) != (i < n - 1) || len == 0 || len > MAX_SEGMENT) {
			for (int k = 0; k < i; k++)
				free(seg[k]);
			return false;
		}
		seg[i] = xstrndup(p, len);
		p += len + (slash ? 1 : 0);
	}
	return true;
}

static bool has_token(const char *header, const char *token)
{
	if (!header)
		return false;
	size_t n = strlen(token);
	for (const char *p = header; *p;) {
		while (*p == ' ' || *p == ',' || *p == '\t')
			p++;
		const char *end = p;
		while (*end && *end != ',')
			end++;
		const char *e = end;
		while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if ((size_t)(e - p) == n && !strncasecmp(p, token, n))
			return true;
		p = end;
	}
	return false;
}

static int status_of(int code)
{
	switch (code) {
	case E_NOT_FOUND:
		return 404;
	case E_CONFLICT:
		return 409;
	case E_UNAVAILABLE:
		return 503;
	case E_INVALID:
		return 400;
	default:
		return 500;
	}
}

static char *join_cmd(char *const *cmd)
{
	struct buf b = BUF_INIT;
	for (size_t i = 0; cmd && cmd[i]; i++) {
		if (i)
			buf_addch(&b, ' ');
		buf_adds(&b, cmd[i]);
	}
	if (!b.ptr)
		buf_adds(&b, "");
	return buf_detach(&b, NULL);
}

bool kl_streams_serve(struct kl_streams *ss, struct http_request *req, struct http_reply *rp)
{
	const char *path = http_path(req);
	enum rt_stream_kind kind;
	const char *rest;
	if (!strncmp(path, "/exec/", 6)) {
		kind = RT_STREAM_EXEC;
		rest = path + 6;
	} else if (!strncmp(path, "/attach/", 8)) {
		kind = RT_STREAM_ATTACH;
		rest = path + 8;
	} else if (!strncmp(path, "/portforward/", 13) || !strncmp(path, "/portForward/", 13)) {
		kind = RT_STREAM_PORTFORWARD;
		rest = path + 13;
	} else {
		return false;
	}
	int nseg = kind == RT_STREAM_PORTFORWARD ? 2 : 3;
	char *seg[3] = { NULL, NULL, NULL };
	struct stream *s = NULL;
	char *err = NULL;
	if (strcmp(http_method(req), "GET") && strcmp(http_method(req), "POST")) {
		reply_text(rp, 405, "method not allowed");
		return true;
	}
	if (!split_segments(rest, seg, nseg)) {
		reply_text(rp, 404, kind == RT_STREAM_PORTFORWARD ? "not found: want /portforward/{namespace}/{pod}"
								  : "not found: want /{exec|attach}/{namespace}/{pod}/{container}");
		return true;
	}
	s = xcalloc(1, sizeof(*s));
	s->ss = ss;
	s->fd = -1;
	s->bfd = -1;
	const char *qerr = NULL;
	if (rc_query_parse(http_query_string(req), &s->q, &qerr) < 0) {
		reply_text(rp, 400, qerr);
		goto fail;
	}
	const char *tenant = http_query(req, "tenant");
	if (!tenant || !*tenant)
		tenant = "system";
	/* the transport */
	const char *upgrade = http_header(req, "Upgrade");
	const char *proto = NULL;
	if (has_token(upgrade, "websocket")) {
		static const char *const cmd_protos[] = { RC_PROTO_V5, RC_PROTO_V4, NULL };
		static const char *const pf_protos[] = { RC_PROTO_PF_V2, RC_PROTO_PF_TUNNEL, NULL };
		proto = rc_pick_protocol(http_header(req, "Sec-WebSocket-Protocol"),
					 kind == RT_STREAM_PORTFORWARD ? pf_protos : cmd_protos);
		const char *key = http_header(req, "Sec-WebSocket-Key");
		if (!proto || !key || strlen(key) > 64) {
			reply_text(rp, 400, kind == RT_STREAM_PORTFORWARD
				   ? "port-forward over WebSocket needs subprotocol v2.portforward.k8s.io (kubectl 1.31 or later)"
				   : "exec and attach over WebSocket need subprotocol v5.channel.k8s.io or v4.channel.k8s.io "
				     "(kubectl 1.30 or later)");
			goto fail;
		}
		s->ws = true;
		s->v5 = !strcmp(proto, RC_PROTO_V5);
	} else if (has_token(upgrade, "SPDY/3.1") && kind == RT_STREAM_PORTFORWARD) {
		s->ws = false;
	} else if (has_token(upgrade, "SPDY/3.1")) {
		reply_text(rp, 400, "exec and attach are served over WebSocket (v5.channel.k8s.io) only, not SPDY: "
				    "use kubectl 1.30 or later");
		goto fail;
	} else {
		reply_text(rp, 400, "upgrade required: exec, attach and port-forward are WebSocket (or SPDY for "
				    "port-forward) streams");
		goto fail;
	}
	if (kind == RT_STREAM_EXEC && !s->q.ncmd) {
		reply_text(rp, 400, "you must specify at least one command for the container");
		goto fail;
	}
	if (kind != RT_STREAM_PORTFORWARD && !s->q.in && !s->q.out && !s->q.err) {
		reply_text(rp, 400, "you must specify at least one of stdin, stdout, stderr");
		goto fail;
	}
	pthread_mutex_lock(&ss->lock);
	bool full = ss->active >= KL_MAX_STREAMS || atomic_load(&ss->stopping);
	if (!full)
		ss->active++;
	pthread_mutex_unlock(&ss->lock);
	if (full) {
		reply_text(rp, 429, "too many streams");
		goto fail;
	}
	s->counted = true;
	if (!ss->ops->stream_target) {
		reply_text(rp, 501, "this node's runtime has no streams");
		goto fail;
	}
	struct rt_stream_req rq = {
		.kind = kind, .tenant = tenant, .ns = seg[0], .pod = seg[1], .container = seg[2],
		.cmd = s->q.cmd, .tty = s->q.tty, .in = s->q.in, .out = s->q.out, .err = s->q.err,
		.ports = s->q.ports, .nports = s->q.nports,
	};
	int rc = ss->ops->stream_target(ss->rt, &rq, &s->t, &err);
	if (rc != 0) {
		reply_text(rp, status_of(rc), err ? err : "cannot reach the container");
		goto fail;
	}
	s->cmdline = join_cmd(s->q.cmd);
	snprintf(s->pod, sizeof(s->pod), "%s", seg[1]);
	if (s->t.url) {
		/* CRI: containerd's streaming server */
		rc = kind == RT_STREAM_PORTFORWARD ? stream_dial_tunnel(s, &err) : stream_dial_cri_cmd(s, &err);
		if (rc != 0) {
			reply_text(rp, 502, err ? err : "cannot reach the runtime's streaming server");
			goto fail;
		}
		s->be = kind == RT_STREAM_PORTFORWARD ? BE_TUNNEL : BE_CRI_CMD;
	} else {
		s->be = kind == RT_STREAM_EXEC ? BE_PROC_EXEC : kind == RT_STREAM_ATTACH ? BE_PROC_ATTACH : BE_SPDY_PF;
	}
	if (s->ws) {
		char accept[29];
		rc_ws_accept(http_header(req, "Sec-WebSocket-Key"), accept);
		http_reply_header(rp, "Upgrade", "websocket");
		http_reply_header(rp, "Connection", "Upgrade");
		http_reply_header(rp, "Sec-WebSocket-Accept", accept);
		http_reply_header(rp, "Sec-WebSocket-Protocol", proto);
	} else {
		http_reply_header(rp, "Upgrade", "SPDY/3.1");
		http_reply_header(rp, "Connection", "Upgrade");
		http_reply_header(rp, "X-Stream-Protocol-Version", "portforward.k8s.io");
	}
	http_reply_upgrade(rp, on_switched, s);
	for (int i = 0; i < 3; i++)
		free(seg[i]);
	free(err);
	return true;
fail:
	if (s && s->counted) {
		pthread_mutex_lock(&ss->lock);
		ss->active--;
		pthread_cond_broadcast(&ss->cond);
		pthread_mutex_unlock(&ss->lock);
	}
	stream_free(s);
	for (int i = 0; i < 3; i++)
		free(seg[i]);
	free(err);
	return true;
}

struct kl_streams *kl_streams_new(const struct runtime_ops *ops, struct runtime *rt)
{
	struct kl_streams *ss = xcalloc(1, sizeof(*ss));
	ss->ops = ops;
	ss->rt = rt;
	pthread_mutex_init(&ss->lock, NULL);
	pthread_cond_init(&ss->cond, NULL);
	atomic_init(&ss->stopping, false);
	return ss;
}

size_t kl_streams_active(struct kl_streams *ss)
{
	pthread_mutex_lock(&ss->lock);
	size_t n = ss->active;
	pthread_mutex_unlock(&ss->lock);
	return n;
}

void kl_streams_free(struct kl_streams *ss)
{
	if (!ss)
		return;
	atomic_store(&ss->stopping, true);
	/* every loop looks at stopping at least every TICK_MS, then lingers up to CLOSE_WAIT_MS */
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 5;
	pthread_mutex_lock(&ss->lock);
	while (ss->active > 0)
		if (pthread_cond_timedwait(&ss->cond, &ss->lock, &ts) != 0)
			break;
	bool left = ss->active > 0;
	pthread_mutex_unlock(&ss->lock);
	if (left) /* a stream thread still holds ss: keep it (the daemon is ending) */
		return;
	pthread_mutex_destroy(&ss->lock);
	pthread_cond_destroy(&ss->cond);
	free(ss);
}
