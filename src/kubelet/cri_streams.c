/* The CRI runtime's streams: the streaming URL of containerd for a container (exec, attach) or
 * a sandbox (port-forward), the SPDY upgrade to it, and exec/attach translated between the
 * client's WebSocket (v4/v5 channel protocol, remotecmd.h) and a SPDY client session with
 * containerd (v4.channel.k8s.io: one SPDY stream per channel, stdin EOF = FIN). Port-forward is
 * a byte tunnel (streams.c) and needs no SPDY here. */
#define _GNU_SOURCE
#include "runtime_cri_impl.h"
#include "streams_impl.h"
#include "wsconn.h"
#include "ursa/errors.h"
#include "ursa/spdy.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define DIAL_TIMEOUT_MS 10000
#define MAX_HEAD 16384

/* ---- finding the container or sandbox ---- */

struct kv {
	ProtobufCMessage base;
	char *key, *value;
};

static void sel_add(struct kv *e, struct kv **p, size_t *n, const ProtobufCMessageDescriptor *d, const char *k,
		    const char *v)
{
	protobuf_c_message_init(d, &e[*n]);
	e[*n].key = (char *)k;
	e[*n].value = (char *)v;
	p[*n] = &e[*n];
	(*n)++;
}

/* The running container's id (new string) or NULL. */
static char *running_container(struct runtime *rt, const char *uid, const char *name, int *ret_code)
{
	Runtime__V1__ListContainersRequest req = RUNTIME__V1__LIST_CONTAINERS_REQUEST__INIT;
	Runtime__V1__ContainerFilter f = RUNTIME__V1__CONTAINER_FILTER__INIT;
	Runtime__V1__ContainerStateValue st = RUNTIME__V1__CONTAINER_STATE_VALUE__INIT;
	Runtime__V1__ListContainersResponse *r = NULL;
	const ProtobufCMessageDescriptor *d = &runtime__v1__container_filter__label_selector_entry__descriptor;
	struct kv e[3], *p[3];
	size_t n = 0;
	struct cri_err err;
	sel_add(e, p, &n, d, CRI_LABEL_OWNER, rt->owner);
	sel_add(e, p, &n, d, CRI_LABEL_UID, uid);
	sel_add(e, p, &n, d, CRI_LABEL_CONTAINER, name);
	f.label_selector = (Runtime__V1__ContainerFilter__LabelSelectorEntry **)p;
	f.n_label_selector = n;
	st.state = RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING;
	f.state = &st;
	req.filter = &f;
	*ret_code = cri_list_containers(rt->cri, &req, &r, &err);
	char *id = NULL;
	int64_t newest = -1;
	for (size_t i = 0; r && i < r->n_containers; i++)
		if (r->containers[i]->created_at > newest) {
			newest = r->containers[i]->created_at;
			free(id);
			id = xstrdup(r->containers[i]->id);
		}
	cri_free(r);
	return id;
}

static char *ready_sandbox(struct runtime *rt, const char *uid, int *ret_code)
{
	Runtime__V1__ListPodSandboxRequest req = RUNTIME__V1__LIST_POD_SANDBOX_REQUEST__INIT;
	Runtime__V1__PodSandboxFilter f = RUNTIME__V1__POD_SANDBOX_FILTER__INIT;
	Runtime__V1__PodSandboxStateValue st = RUNTIME__V1__POD_SANDBOX_STATE_VALUE__INIT;
	Runtime__V1__ListPodSandboxResponse *r = NULL;
	const ProtobufCMessageDescriptor *d = &runtime__v1__pod_sandbox_filter__label_selector_entry__descriptor;
	struct kv e[2], *p[2];
	size_t n = 0;
	struct cri_err err;
	sel_add(e, p, &n, d, CRI_LABEL_OWNER, rt->owner);
	sel_add(e, p, &n, d, CRI_LABEL_UID, uid);
	f.label_selector = (Runtime__V1__PodSandboxFilter__LabelSelectorEntry **)p;
	f.n_label_selector = n;
	st.state = RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY;
	f.state = &st;
	req.filter = &f;
	*ret_code = cri_list_pod_sandbox(rt->cri, &req, &r, &err);
	char *id = NULL;
	int64_t newest = -1;
	for (size_t i = 0; r && i < r->n_items; i++)
		if (r->items[i]->created_at > newest) {
			newest = r->items[i]->created_at;
			free(id);
			id = xstrdup(r->items[i]->id);
		}
	cri_free(r);
	return id;
}

int crirt_stream_target(struct runtime *rt, const struct rt_stream_req *req, struct rt_stream_target *out,
			char **ret_err)
{
	char *uid = NULL, *id = NULL;
	bool has_container = false;
	int rc = 0;
	struct cri_err err = { .grpc_code = -1 };
	pthread_mutex_lock(&rt->lock);
	const struct cpod *best = NULL;
	for (const struct cpod *p = rt->pods; p; p = p->next)
		if (!strcmp(p->tenant, req->tenant) && !strcmp(p->ns, req->ns) && !strcmp(p->name, req->pod) &&
		    (!best || (best->stopped && !p->stopped)))
			best = p;
	if (best && !best->stopped) {
		uid = xstrdup(best->uid);
		for (size_t i = 0; req->container && i < best->nc; i++)
			has_container |= !strcmp(best->c[i].name, req->container);
	}
	pthread_mutex_unlock(&rt->lock);
	memset(out, 0, sizeof(*out));
	if (!uid) {
		*ret_err = xasprintf("pod \"%s\" (namespace \"%s\", tenant \"%s\") is not running on this node", req->pod,
				     req->ns, req->tenant);
		return E_NOT_FOUND;
	}
	if (req->kind == RT_STREAM_PORTFORWARD) {
		id = ready_sandbox(rt, uid, &rc);
		if (!id) {
			*ret_err = rc ? xasprintf("the runtime cannot list sandboxes: %s", err_reason(rc))
				      : xasprintf("pod \"%s\" has no ready sandbox", req->pod);
			rc = rc ? rc : E_CONFLICT;
			goto out;
		}
		Runtime__V1__PortForwardRequest pr = RUNTIME__V1__PORT_FORWARD_REQUEST__INIT;
		Runtime__V1__PortForwardResponse *r = NULL;
		int32_t ports[RC_MAX_PORTS];
		for (size_t i = 0; i < req->nports && i < RC_MAX_PORTS; i++)
			ports[i] = req->ports[i];
		pr.pod_sandbox_id = id;
		pr.port = ports;
		pr.n_port = req->nports;
		rc = cri_port_forward(rt->cri, &pr, &r, &err);
		if (rc == 0)
			out->url = xstrdup(r->url);
		cri_free(r);
	} else {
		if (!has_container) {
			*ret_err = xasprintf("container \"%s\" is not valid for pod \"%s\"", req->container, req->pod);
			rc = E_NOT_FOUND;
			goto out;
		}
		id = running_container(rt, uid, req->container, &rc);
		if (!id) {
			*ret_err = rc ? xasprintf("the runtime cannot list containers: %s", err_reason(rc))
				      : xasprintf("container \"%s\" in pod \"%s\" is not running", req->container, req->pod);
			rc = rc ? rc : E_CONFLICT;
			goto out;
		}
		bool err_wanted = req->err && !req->tty;
		if (req->kind == RT_STREAM_EXEC) {
			Runtime__V1__ExecRequest er = RUNTIME__V1__EXEC_REQUEST__INIT;
			Runtime__V1__ExecResponse *r = NULL;
			size_t n = 0;
			while (req->cmd && req->cmd[n])
				n++;
			er.container_id = id;
			er.cmd = (char **)req->cmd;
			er.n_cmd = n;
			er.tty = req->tty;
			er.stdin = req->in;
			er.stdout = req->out;
			er.stderr = err_wanted;
			rc = cri_exec(rt->cri, &er, &r, &err);
			if (rc == 0)
				out->url = xstrdup(r->url);
			cri_free(r);
		} else {
			Runtime__V1__AttachRequest ar = RUNTIME__V1__ATTACH_REQUEST__INIT;
			Runtime__V1__AttachResponse *r = NULL;
			ar.container_id = id;
			ar.tty = req->tty;
			ar.stdin = req->in;
			ar.stdout = req->out;
			ar.stderr = err_wanted;
			rc = cri_attach(rt->cri, &ar, &r, &err);
			if (rc == 0)
				out->url = xstrdup(r->url);
			cri_free(r);
		}
	}
	if (rc != 0)
		*ret_err = xasprintf("the runtime refused the stream: %s", err.message[0] ? err.message : err_reason(rc));
	else if (!out->url || strncmp(out->url, "http://", 7)) {
		*ret_err = xasprintf("the runtime's streaming URL \"%s\" is not http://", out->url ? out->url : "");
		rt_stream_target_release(out);
		rc = E_INTERNAL;
	}
out:
	free(uid);
	free(id);
	return rc;
}

/* ---- dialling the streaming server ---- */

/* Reads until the end of the response head (or timeout); the head in head, the rest in extra. */
static int read_head(int fd, struct buf *head, struct buf *extra, char **ret_err)
{
	int64_t until = mono_ms() + DIAL_TIMEOUT_MS;
	for (;;) {
		char *end = head->len ? strstr(head->ptr, "\r\n\r\n") : NULL;
		if (end) {
			size_t hl = (size_t)(end - head->ptr) + 4;
			buf_add(extra, head->ptr + hl, head->len - hl);
			head->len = hl;
			head->ptr[hl] = '\0';
			return 0;
		}
		if (head->len > MAX_HEAD) {
			*ret_err = xstrdup("the streaming server's answer head is too long");
			return -1;
		}
		int64_t left = until - mono_ms();
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (left <= 0 || poll(&p, 1, (int)left) <= 0) {
			*ret_err = xstrdup("the streaming server did not answer in time");
			return -1;
		}
		buf_grow(head, 4096);
		ssize_t n = recv(fd, head->ptr + head->len, 4096, 0);
		if (n <= 0) {
			*ret_err = xstrdup("the streaming server closed the connection");
			return -1;
		}
		head->len += (size_t)n;
		head->ptr[head->len] = '\0';
	}
}

int stream_dial_upgrade(const char *url, const char *protocol, int *ret_fd, struct buf *extra, char **ret_err)
{
	if (strncmp(url, "http://", 7)) {
		*ret_err = xasprintf("unsupported streaming URL \"%s\"", url);
		return -1;
	}
	const char *hp = url + 7, *slash = strchr(hp, '/');
	size_t hpn = slash ? (size_t)(slash - hp) : strlen(hp);
	const char *path = slash ? slash : "/";
	char host[256], port[16] = "80";
	const char *colon = NULL;
	if (hpn >= sizeof(host)) {
		*ret_err = xstrdup("streaming URL host too long");
		return -1;
	}
	if (hp[0] == '[') { /* [v6]:port */
		const char *rb = memchr(hp, ']', hpn);
		if (!rb) {
			*ret_err = xstrdup("malformed streaming URL");
			return -1;
		}
		snprintf(host, sizeof(host), "%.*s", (int)(rb - hp - 1), hp + 1);
		colon = rb + 1 < hp + hpn && rb[1] == ':' ? rb + 1 : NULL;
	} else {
		colon = memchr(hp, ':', hpn);
		snprintf(host, sizeof(host), "%.*s", (int)(colon ? (size_t)(colon - hp) : hpn), hp);
	}
	if (colon)
		snprintf(port, sizeof(port), "%.*s", (int)(hp + hpn - colon - 1), colon + 1);
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
	int gr = getaddrinfo(host, port, &hints, &ai);
	if (gr != 0) {
		*ret_err = xasprintf("cannot resolve the streaming server \"%s\": %s", host, gai_strerror(gr));
		return -1;
	}
	int fd = -1;
	for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
		if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) < 0) {
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(ai);
	if (fd < 0) {
		*ret_err = xasprintf("cannot connect to the streaming server %s:%s: %s", host, port, strerror(errno));
		return -1;
	}
	struct buf req = BUF_INIT, head = BUF_INIT;
	buf_addf(&req,
		 "POST %s HTTP/1.1\r\nHost: %.*s\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
		 "X-Stream-Protocol-Version: %s\r\nContent-Length: 0\r\nUser-Agent: ursa-kubelet\r\n\r\n",
		 path, (int)hpn, hp, protocol);
	int ret = -1;
	size_t off = 0;
	while (off < req.len) {
		ssize_t n = send(fd, req.ptr + off, req.len - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			*ret_err = xasprintf("cannot write to the streaming server: %s", strerror(errno));
			goto out;
		}
		off += (size_t)n;
	}
	if (read_head(fd, &head, extra, ret_err) < 0)
		goto out;
	if (strncmp(head.ptr, "HTTP/1.1 101", 12) && strncmp(head.ptr, "HTTP/1.0 101", 12)) {
		char *eol = strstr(head.ptr, "\r\n");
		/* the body (the runtime's reason) follows the head: show some of it */
		*ret_err = xasprintf("the streaming server refused the upgrade: %.*s%s%.200s", (int)(eol ? eol - head.ptr : 0),
				     head.ptr, extra->len ? ": " : "", extra->len ? extra->ptr : "");
		goto out;
	}
	*ret_fd = fd;
	fd = -1;
	ret = 0;
out:
	if (fd >= 0)
		close(fd);
	buf_release(&req);
	buf_release(&head);
	return ret;
}

int stream_dial_tunnel(struct stream *s, char **ret_err)
{
	return stream_dial_upgrade(s->t.url, "portforward.k8s.io", &s->bfd, &s->bextra, ret_err);
}

int stream_dial_cri_cmd(struct stream *s, char **ret_err)
{
	return stream_dial_upgrade(s->t.url, "v4.channel.k8s.io", &s->bfd, &s->bextra, ret_err);
}

/* ---- exec and attach: WebSocket channels <-> SPDY streams ---- */

struct cricmd {
	struct stream *s;
	struct spdy_session *sp;
	uint32_t id[5];        /* by channel: stdin, stdout, stderr, error, resize; 0: none */
	struct buf status;     /* the error stream's Status */
	bool status_done;
	bool stdin_closed;
};

static int channel_of(const struct cricmd *c, uint32_t id)
{
	for (int ch = 0; ch < 5; ch++)
		if (c->id[ch] == id && id)
			return ch;
	return -1;
}

static void on_sp_data(void *ud, uint32_t id, const char *data, size_t len)
{
	struct cricmd *c = ud;
	int ch = channel_of(c, id);
	if (ch == RC_STDOUT || ch == RC_STDERR)
		wsconn_send(c->s->wc, ch, data, len);
	else if (ch == RC_ERROR && c->status.len + len <= 65536)
		buf_add(&c->status, data, len);
}

static void on_sp_fin(void *ud, uint32_t id)
{
	struct cricmd *c = ud;
	if (channel_of(c, id) == RC_ERROR)
		c->status_done = true;
}

static void on_cmd_msg(void *ud, const uint8_t *data, size_t len, bool text)
{
	struct cricmd *c = ud;
	if (text || !len)
		return;
	if (data[0] == RC_STDIN && c->id[RC_STDIN] && !c->stdin_closed) {
		if (len > 1)
			spdy_send_data(c->sp, c->id[RC_STDIN], data + 1, len - 1, false);
	} else if (data[0] == RC_RESIZE && c->id[RC_RESIZE]) {
		spdy_send_data(c->sp, c->id[RC_RESIZE], data + 1, len - 1, false);
	} else if (data[0] == RC_CLOSE && c->s->v5 && len >= 2 && data[1] == RC_STDIN && c->id[RC_STDIN] &&
		   !c->stdin_closed) {
		c->stdin_closed = true;
		spdy_close_stream(c->sp, c->id[RC_STDIN]);
	}
}

static int open_typed(struct cricmd *c, int ch, const char *type)
{
	struct spdy_header h[1] = { { "streamtype", type, 0 } };
	return spdy_open_stream(c->sp, h, 1, 0, false, &c->id[ch]);
}

void stream_run_cri_cmd(struct stream *s)
{
	static const struct spdy_callbacks cbs = { .on_data = on_sp_data, .on_fin = on_sp_fin };
	struct cricmd c = { .s = s };
	/* No WINDOW_UPDATEs (manual window, never consumed): containerd's spdystream ignores them, and
	 * one that arrives after it stopped reading turns its close into a TCP reset that drops the
	 * output and Status it had not yet sent (a slow reader lost the end of `kubectl cp`). */
	c.sp = spdy_session_new(SPDY_CLIENT, &cbs, &c, NULL, SPDY_MANUAL_WINDOW);
	s->msg_fn = on_cmd_msg;
	s->msg_ud = &c;
	stream_nonblock(s->bfd);
	bool tty = s->q.tty;
	/* the streams containerd expects for the request's options (error first, as kubectl does) */
	int rc = open_typed(&c, RC_ERROR, "error");
	if (!rc && s->q.in)
		rc = open_typed(&c, RC_STDIN, "stdin");
	if (!rc && s->q.out)
		rc = open_typed(&c, RC_STDOUT, "stdout");
	if (!rc && s->q.err && !tty)
		rc = open_typed(&c, RC_STDERR, "stderr");
	if (!rc && tty)
		rc = open_typed(&c, RC_RESIZE, "resize");
	if (s->bextra.len && spdy_session_feed(c.sp, s->bextra.ptr, s->bextra.len) < 0)
		rc = -1;
	bool back_eof = false;
	while (rc == 0 && !stream_stopping(s)) {
		struct pollfd p[2];
		short ev = wsconn_events(s->wc, spdy_session_output_len(c.sp) < STREAM_HIGH);
		if (!ev)
			break;
		p[0] = (struct pollfd){ .fd = s->fd, .events = ev };
		p[1] = (struct pollfd){ .fd = s->bfd, .events = (short)((wsconn_queued(s->wc) < STREAM_HIGH ? POLLIN : 0) |
				(spdy_session_output_len(c.sp) ? POLLOUT : 0)) };
		int r = poll(p, 2, wsconn_pending_input(s->wc) ? 0 : 250);
		if (r < 0 && errno != EINTR)
			break;
		if (r < 0)
			continue;
		if (wsconn_io(s->wc, p[0].revents) < 0)
			break;
		size_t olen;
		const char *o;
		bool broken = false;
		while ((o = spdy_session_output(c.sp, &olen))) {
			ssize_t n = send(s->bfd, o, olen, MSG_NOSIGNAL);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				break;
			if (n <= 0) {
				broken = true;
				break;
			}
			spdy_session_output_consumed(c.sp, (size_t)n);
		}
		if (broken) {
			back_eof = true;
			break;
		}
		if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
			char tmp[65536];
			ssize_t n = recv(s->bfd, tmp, sizeof(tmp), 0);
			if (n < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (n <= 0) {
				back_eof = true;
				break;
			}
			if (spdy_session_feed(c.sp, tmp, (size_t)n) < 0) {
				back_eof = true;
				break;
			}
		}
		if (c.status_done && !c.id[RC_STDOUT] && !c.id[RC_STDERR])
			break;
	}
	if (back_eof || c.status_done) {
		struct buf b = BUF_INIT;
		struct buf m = BUF_INIT;
		int code = c.status.len ? rc_exec_failure(c.status.ptr, c.status.len, &m) : 0;
		if (code) {
			/* the runtime could not start the command: its words on stderr and the shell's exit
			 * code (127 not found, 126 not executable), as the process runtime reports it */
			buf_adds(&m, "\r\n");
			if (s->q.err || s->q.tty)
				wsconn_send(s->wc, s->q.tty ? RC_STDOUT : RC_STDERR, m.ptr, m.len);
			rc_status_exit(&b, code, s->cmdline);
		} else if (c.status.len) {
			buf_add(&b, c.status.ptr, c.status.len);
		} else {
			rc_status_failure(&b, "the runtime's stream ended without a status");
		}
		stream_send_status(s, &b);
		buf_release(&b);
		buf_release(&m);
	} else if (wsconn_events(s->wc, false)) {
		wsconn_close(s->wc, 1001, "stream ended");
	}
	stream_linger(s);
	spdy_session_free(c.sp);
	buf_release(&c.status);
}
