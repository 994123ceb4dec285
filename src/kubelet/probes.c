/* Liveness, readiness and startup probes (probes.h). */
#define _GNU_SOURCE
#include "probes.h"
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include "runtime_common.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"
#include "klmetrics.h"
#include "hooks.h"

#define MAX_EXEC_ARGS 256
#define MAX_HEADERS 64

/* ---- specs ---- */

const char *probe_kind_title(enum rt_probe_kind kind)
{
	switch (kind) {
	case RT_PROBE_LIVENESS:
		return "Liveness";
	case RT_PROBE_READINESS:
		return "Readiness";
	default:
		return "Startup";
	}
}

static const char *kind_lower(enum rt_probe_kind kind)
{
	return kind == RT_PROBE_LIVENESS ? "liveness" : kind == RT_PROBE_READINESS ? "readiness" : "startup";
}

void rt_probe_free(struct rt_probe *p)
{
	if (!p)
		return;
	if (p->exec)
		for (char **a = p->exec; *a; a++)
			free(*a);
	free(p->exec);
	free(p->host);
	free(p->path);
	for (size_t i = 0; i < p->nheaders; i++) {
		free(p->headers[i].name);
		free(p->headers[i].value);
	}
	free(p->headers);
	free(p->service);
	free(p);
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

struct rt_probe *rt_probe_dup(const struct rt_probe *p)
{
	if (!p)
		return NULL;
	struct rt_probe *d = xmalloc(sizeof(*d));
	*d = *p;
	if (p->exec) {
		size_t n = 0;
		while (p->exec[n])
			n++;
		d->exec = xcalloc(n + 1, sizeof(*d->exec));
		for (size_t i = 0; i < n; i++)
			d->exec[i] = xstrdup(p->exec[i]);
	}
	d->host = dup_or_null(p->host);
	d->path = dup_or_null(p->path);
	d->service = dup_or_null(p->service);
	d->headers = p->nheaders ? xcalloc(p->nheaders, sizeof(*d->headers)) : NULL;
	for (size_t i = 0; i < p->nheaders; i++) {
		d->headers[i].name = xstrdup(p->headers[i].name);
		d->headers[i].value = xstrdup(p->headers[i].value);
	}
	return d;
}

/* A number field: absent or 0 gives def; -1 if not an integer in min..PROBE_MAX_SECONDS. */
static int num_field(const json_t *j, const char *key, int def, int min, int *ret)
{
	const json_t *v = json_object_get(j, key);
	if (!v || json_is_null(v) || (json_is_integer(v) && json_integer_value(v) == 0)) {
		*ret = def;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > PROBE_MAX_SECONDS)
		return -1;
	*ret = (int)json_integer_value(v);
	return 0;
}

/* port: a number, or the name of one of the container's ports. */
static int port_field(const json_t *v, const json_t *c, int *ret)
{
	if (json_is_integer(v) && json_integer_value(v) >= 1 && json_integer_value(v) <= 65535) {
		*ret = (int)json_integer_value(v);
		return 0;
	}
	const char *name = json_string_value(v);
	if (!name || !*name)
		return -1;
	long long n;
	if (parse_int64(name, &n) == 0)
		return n >= 1 && n <= 65535 ? (*ret = (int)n, 0) : -1;
	size_t i;
	const json_t *p;
	json_array_foreach(json_object_get(c, "ports"), i, p) {
		const char *pn = json_str(p, "name");
		const json_t *cp = json_object_get(p, "containerPort");
		if (pn && strcmp(pn, name) == 0 && json_is_integer(cp) && json_integer_value(cp) >= 1 &&
		    json_integer_value(cp) <= 65535) {
			*ret = (int)json_integer_value(cp);
			return 0;
		}
	}
	return -1;
}

static int parse_exec(const json_t *h, struct rt_probe *p)
{
	const json_t *cmd = json_object_get(h, "command");
	if (!json_is_array(cmd) || json_array_size(cmd) == 0 || json_array_size(cmd) > MAX_EXEC_ARGS)
		return -1;
	p->exec = xcalloc(json_array_size(cmd) + 1, sizeof(*p->exec));
	size_t i;
	const json_t *a;
	json_array_foreach(cmd, i, a) {
		if (!json_is_string(a) || strlen(json_string_value(a)) != json_string_length(a))
			return -1;
		p->exec[i] = xstrdup(json_string_value(a));
	}
	return 0;
}

static int parse_http(const json_t *h, const json_t *c, struct rt_probe *p)
{
	if (port_field(json_object_get(h, "port"), c, &p->port))
		return -1;
	const char *host = json_str(h, "host"), *path = json_str(h, "path"), *scheme = json_str(h, "scheme");
	if (host && *host)
		p->host = xstrdup(host);
	if (scheme && strcmp(scheme, "HTTPS") == 0)
		p->https = true;
	else if (scheme && *scheme && strcmp(scheme, "HTTP") != 0)
		return -1;
	struct buf b = BUF_INIT;
	if (!path || path[0] != '/')
		buf_addch(&b, '/');
	buf_adds(&b, path ? path : "");
	p->path = buf_detach(&b, NULL);
	if (strpbrk(p->path, " \r\n"))
		return -1;
	const json_t *hs = json_object_get(h, "httpHeaders");
	if (!hs || json_is_null(hs))
		return 0;
	if (!json_is_array(hs) || json_array_size(hs) > MAX_HEADERS)
		return -1;
	p->headers = xcalloc(json_array_size(hs) ? json_array_size(hs) : 1, sizeof(*p->headers));
	size_t i;
	const json_t *e;
	json_array_foreach(hs, i, e) {
		const char *n = json_str(e, "name"), *v = json_str(e, "value");
		if (!n || !*n || strpbrk(n, ": \r\n") || (v && strpbrk(v, "\r\n")))
			return -1;
		p->headers[p->nheaders].name = xstrdup(n);
		p->headers[p->nheaders].value = xstrdup(v ? v : "");
		p->nheaders++;
	}
	return 0;
}

int kl_probe_handler_from_json(const json_t *h, const json_t *c, enum rt_probe_handler handler, struct rt_probe *p)
{
	p->handler = handler;
	if (!json_is_object(h))
		return -1;
	if (handler == RT_PROBE_EXEC)
		return parse_exec(h, p);
	return handler == RT_PROBE_HTTP ? parse_http(h, c, p) : -1;
}

int kl_probe_from_json(const json_t *j, const json_t *c, enum rt_probe_kind kind, struct rt_probe **ret,
		       struct buf *err)
{
	*ret = NULL;
	if (!j || json_is_null(j))
		return 0;
	const char *cname = json_str(c, "name");
	const char *field = kind == RT_PROBE_LIVENESS ? "livenessProbe" : kind == RT_PROBE_READINESS ? "readinessProbe"
												: "startupProbe";
	if (!json_is_object(j)) {
		buf_addf(err, "container \"%s\": %s must be an object", cname, field);
		return E_INVALID;
	}
	struct rt_probe *p = xcalloc(1, sizeof(*p));
	p->grace_s = -1;
	const char *handlers[] = { "exec", "httpGet", "tcpSocket", "grpc" };
	int nh = 0, bad = 0;
	for (int h = 0; h < 4; h++) {
		const json_t *hj = json_object_get(j, handlers[h]);
		if (!hj || json_is_null(hj))
			continue;
		nh++;
		p->handler = (enum rt_probe_handler)h;
		if (!json_is_object(hj)) {
			bad = 1;
			continue;
		}
		if (h == RT_PROBE_EXEC)
			bad |= parse_exec(hj, p);
		else if (h == RT_PROBE_HTTP)
			bad |= parse_http(hj, c, p);
		else if (h == RT_PROBE_TCP)
			bad |= port_field(json_object_get(hj, "port"), c, &p->port);
		else {
			const json_t *port = json_object_get(hj, "port");
			const char *svc = json_str(hj, "service");
			bad |= !json_is_integer(port) || port_field(port, c, &p->port);
			if (svc && *svc)
				p->service = xstrdup(svc);
		}
		if (h == RT_PROBE_TCP) {
			const char *host = json_str(hj, "host");
			if (host && *host)
				p->host = xstrdup(host);
		}
	}
	if (nh != 1 || bad) {
		buf_addf(err, "container \"%s\": %s needs exactly one valid handler (exec, httpGet, tcpSocket or grpc; "
			      "a port must be 1..65535 or the name of a container port)", cname, field);
		goto fail;
	}
	if (num_field(j, "initialDelaySeconds", 0, 0, &p->initial_delay_s) ||
	    num_field(j, "periodSeconds", 10, 1, &p->period_s) || num_field(j, "timeoutSeconds", 1, 1, &p->timeout_s) ||
	    num_field(j, "successThreshold", 1, 1, &p->success_threshold) ||
	    num_field(j, "failureThreshold", 3, 1, &p->failure_threshold)) {
		buf_addf(err, "container \"%s\": %s: the seconds and thresholds must be integers from 0 to %d", cname,
			 field, PROBE_MAX_SECONDS);
		goto fail;
	}
	if (kind != RT_PROBE_READINESS && p->success_threshold != 1) {
		buf_addf(err, "container \"%s\": %s: successThreshold must be 1", cname, field);
		goto fail;
	}
	const json_t *g = json_object_get(j, "terminationGracePeriodSeconds");
	if (json_is_integer(g) && json_integer_value(g) >= 1 && json_integer_value(g) <= PROBE_MAX_SECONDS)
		p->grace_s = json_integer_value(g);
	else if (g && !json_is_null(g)) {
		buf_addf(err, "container \"%s\": %s: terminationGracePeriodSeconds must be 1 to %d", cname, field,
			 PROBE_MAX_SECONDS);
		goto fail;
	}
	*ret = p;
	return 0;
fail:
	rt_probe_free(p);
	return E_INVALID;
}

/* ---- pure parts ---- */

void probe_state_init(struct probe_state *s, enum rt_probe_kind kind)
{
	s->result = kind == RT_PROBE_LIVENESS ? PROBE_SUCCESS : kind == RT_PROBE_READINESS ? PROBE_FAILURE : PROBE_UNKNOWN;
	s->last = PROBE_UNKNOWN;
	s->run = 0;
}

bool probe_state_record(struct probe_state *s, bool success, const struct rt_probe *p)
{
	enum probe_result r = success ? PROBE_SUCCESS : PROBE_FAILURE;
	if (s->last == r) {
		if (s->run < PROBE_MAX_SECONDS)
			s->run++;
	} else {
		s->last = r;
		s->run = 1;
	}
	int threshold = success ? p->success_threshold : p->failure_threshold;
	if (s->run >= threshold && s->result != r) {
		s->result = r;
		return true;
	}
	return false;
}

bool probe_http_ok(long status)
{
	return status >= 200 && status < 400;
}

int64_t probe_first_due(const struct rt_probe *p, int64_t started_ms)
{
	return started_ms + (int64_t)p->initial_delay_s * 1000;
}

int64_t probe_next_due(const struct rt_probe *p, int64_t ran_ms)
{
	return ran_ms + (int64_t)p->period_s * 1000;
}

void probe_grpc_request(const char *service, struct buf *out)
{
	size_t n = service ? strlen(service) : 0;
	struct buf msg = BUF_INIT;
	if (n) { /* HealthCheckRequest.service = 1 (string) */
		buf_addch(&msg, 0x0a);
		for (size_t v = n; ; v >>= 7) {
			buf_addch(&msg, (char)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0)));
			if (v < 0x80)
				break;
		}
		buf_add(&msg, service, n);
	}
	uint8_t hdr[5] = { 0, (uint8_t)(msg.len >> 24), (uint8_t)(msg.len >> 16), (uint8_t)(msg.len >> 8),
			   (uint8_t)msg.len };
	buf_add(out, hdr, 5);
	buf_add(out, msg.len ? msg.ptr : "", msg.len);
	buf_release(&msg);
}

int probe_grpc_status(const uint8_t *body, size_t len)
{
	if (len < 5 || body[0] != 0)
		return -1;
	size_t mlen = ((size_t)body[1] << 24) | ((size_t)body[2] << 16) | ((size_t)body[3] << 8) | body[4];
	if (mlen != len - 5)
		return -1;
	const uint8_t *m = body + 5, *end = body + len;
	int status = 0; /* proto3: absent is UNKNOWN */
	while (m < end) {
		uint8_t key = *m++;
		int wire = key & 7;
		uint64_t v = 0;
		if (key & 0x80)
			return -1; /* field numbers past 15: not in this message */
		if (wire == 0 || wire == 2) {
			int shift = 0;
			for (;;) {
				if (m >= end || shift > 63)
					return -1;
				uint8_t b = *m++;
				v |= (uint64_t)(b & 0x7f) << shift;
				shift += 7;
				if (!(b & 0x80))
					break;
			}
		} else {
			return -1;
		}
		if (wire == 2) {
			if (v > (uint64_t)(end - m))
				return -1;
			m += v;
		} else if ((key >> 3) == 1) {
			status = v > 3 ? 0 : (int)v;
		}
	}
	return status;
}

/* ---- one run ---- */

static const char *target_host(const struct rt_probe *p, const char *ip)
{
	if (p->host)
		return p->host;
	return ip && *ip ? ip : "127.0.0.1";
}

static void host_port(struct buf *b, const char *host, int port)
{
	if (strchr(host, ':'))
		buf_addf(b, "[%s]:%d", host, port);
	else
		buf_addf(b, "%s:%d", host, port);
}

static bool run_exec(const struct rt_probe *p, const struct prober_ops *ops, void *ud, const char *cid,
		     struct buf *msg)
{
	struct buf out = BUF_INIT;
	int code = -1;
	int rc = ops && ops->exec ? ops->exec(ud, cid, p->exec, p->timeout_s, &out, &code) : E_METHOD;
	bool ok = rc == 0 && code == 0;
	while (out.len && (out.ptr[out.len - 1] == '\n' || out.ptr[out.len - 1] == '\r'))
		out.ptr[--out.len] = '\0';
	if (ok)
		goto out;
	if (rc == E_TIMEOUT)
		buf_addf(msg, "command timed out after %ds", p->timeout_s);
	else if (rc == E_METHOD && !out.len)
		buf_adds(msg, "exec probes are not supported by this runtime");
	else if (rc != 0)
		buf_addf(msg, "exec failed: %s", buf_cstr(&out));
	else if (out.len)
		buf_add(msg, out.ptr, out.len);
	else
		buf_addf(msg, "command \"%s\" exited with %d", p->exec[0], code);
out:
	buf_release(&out);
	return ok;
}

/* strerror as Go words it ("connection refused"). */
static void add_errno(struct buf *b, int err)
{
	const char *s = strerror(err);
	buf_addch(b, (char)(s[0] >= 'A' && s[0] <= 'Z' ? s[0] - 'A' + 'a' : s[0]));
	buf_adds(b, s[0] ? s + 1 : "");
}

static bool run_tcp(const struct rt_probe *p, const char *ip, struct buf *msg)
{
	const char *host = target_host(p, ip);
	char port[16];
	snprintf(port, sizeof(port), "%d", p->port);
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
	struct buf hp = BUF_INIT;
	host_port(&hp, host, p->port);
	bool ok = false;
	int fd = -1;
	if (getaddrinfo(host, port, &hints, &ai) != 0 || !ai) {
		buf_addf(msg, "dial tcp %s: lookup %s: no such host", buf_cstr(&hp), host);
		goto out;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		buf_addf(msg, "dial tcp %s: ", buf_cstr(&hp));
		add_errno(msg, errno);
		goto out;
	}
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
		ok = true;
		goto out;
	}
	if (errno != EINPROGRESS) {
		buf_addf(msg, "dial tcp %s: connect: ", buf_cstr(&hp));
		add_errno(msg, errno);
		goto out;
	}
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };
	int n = poll(&pfd, 1, p->timeout_s * 1000);
	if (n <= 0) {
		buf_addf(msg, "dial tcp %s: i/o timeout", buf_cstr(&hp));
		goto out;
	}
	int soerr = 0;
	socklen_t sl = sizeof(soerr);
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
	if (soerr) {
		buf_addf(msg, "dial tcp %s: connect: ", buf_cstr(&hp));
		add_errno(msg, soerr);
		goto out;
	}
	ok = true;
out:
	if (fd >= 0)
		close(fd);
	if (ai)
		freeaddrinfo(ai);
	buf_release(&hp);
	return ok;
}

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
	struct buf *b = ud;
	size_t len = size * n;
	if (b->len < PROBE_MAX_OUTPUT)
		buf_add(b, data, len < PROBE_MAX_OUTPUT - b->len ? len : PROBE_MAX_OUTPUT - b->len);
	return len;
}

static CURL *easy_for(const struct rt_probe *p, const char *url, struct curl_slist *hdrs, struct buf *body,
		      char *errbuf)
{
	CURL *e = curl_easy_init();
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)p->timeout_s * 1000);
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L); /* as Kubernetes: probes do not verify */
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, body);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	return e;
}

static bool run_http(const struct rt_probe *p, const char *ip, struct buf *msg)
{
	struct buf url = BUF_INIT, body = BUF_INIT, h = BUF_INIT;
	buf_adds(&url, p->https ? "https://" : "http://");
	host_port(&url, target_host(p, ip), p->port);
	buf_adds(&url, p->path ? p->path : "/");
	struct curl_slist *hdrs = NULL;
	bool ua = false, accept = false;
	for (size_t i = 0; i < p->nheaders; i++) {
		buf_reset(&h);
		buf_addf(&h, "%s: %s", p->headers[i].name, p->headers[i].value);
		hdrs = curl_slist_append(hdrs, buf_cstr(&h));
		ua |= strcasecmp(p->headers[i].name, "User-Agent") == 0;
		accept |= strcasecmp(p->headers[i].name, "Accept") == 0;
	}
	if (!ua)
		hdrs = curl_slist_append(hdrs, "User-Agent: kube-probe/1.30");
	if (!accept)
		hdrs = curl_slist_append(hdrs, "Accept: */*");
	char errbuf[CURL_ERROR_SIZE] = "";
	CURL *e = easy_for(p, buf_cstr(&url), hdrs, &body, errbuf);
	CURLcode cc = curl_easy_perform(e);
	long status = 0;
	bool ok = false;
	if (cc != CURLE_OK) {
		buf_addf(msg, "Get \"%s\": %s", buf_cstr(&url), errbuf[0] ? errbuf : curl_easy_strerror(cc));
	} else {
		curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
		ok = probe_http_ok(status);
		if (!ok)
			buf_addf(msg, "HTTP probe failed with statuscode: %ld", status);
	}
	curl_easy_cleanup(e);
	curl_slist_free_all(hdrs);
	buf_release(&url);
	buf_release(&body);
	buf_release(&h);
	return ok;
}

static const char *grpc_status_name(int s)
{
	static const char *names[] = { "UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN" };
	return s >= 0 && s <= 3 ? names[s] : "UNKNOWN";
}

/* grpc.health.v1.Health/Check over HTTP/2 without TLS (prior knowledge), as the kubelet does. */
static bool run_grpc(const struct rt_probe *p, const char *ip, struct buf *msg)
{
	struct buf url = BUF_INIT, body = BUF_INIT, req = BUF_INIT;
	buf_adds(&url, "http://");
	host_port(&url, target_host(p, ip), p->port);
	buf_adds(&url, "/grpc.health.v1.Health/Check");
	probe_grpc_request(p->service, &req);
	struct curl_slist *hdrs = NULL;
	hdrs = curl_slist_append(hdrs, "Content-Type: application/grpc");
	hdrs = curl_slist_append(hdrs, "TE: trailers");
	hdrs = curl_slist_append(hdrs, "User-Agent: kube-probe/1.30");
	char errbuf[CURL_ERROR_SIZE] = "";
	CURL *e = easy_for(p, buf_cstr(&url), hdrs, &body, errbuf);
	curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
	curl_easy_setopt(e, CURLOPT_POST, 1L);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, req.ptr);
	curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)req.len);
	CURLcode cc = curl_easy_perform(e);
	bool ok = false;
	struct buf hp = BUF_INIT;
	host_port(&hp, target_host(p, ip), p->port);
	if (cc == CURLE_OPERATION_TIMEDOUT) {
		buf_addf(msg, "timeout: health rpc did not complete within %ds", p->timeout_s);
	} else if (cc != CURLE_OK) {
		buf_addf(msg, "timeout: failed to connect service \"%s\" within %ds: %s", buf_cstr(&hp), p->timeout_s,
			 errbuf[0] ? errbuf : curl_easy_strerror(cc));
	} else {
		int st = probe_grpc_status((const uint8_t *)body.ptr, body.len);
		ok = st == 1;
		if (st < 0)
			buf_addf(msg, "error: health rpc to %s failed: the service did not answer a HealthCheckResponse",
				 buf_cstr(&hp));
		else if (!ok)
			buf_addf(msg, "service unhealthy (responded with \"%s\")", grpc_status_name(st));
	}
	curl_easy_cleanup(e);
	curl_slist_free_all(hdrs);
	buf_release(&url);
	buf_release(&body);
	buf_release(&req);
	buf_release(&hp);
	return ok;
}

bool probe_run(const struct rt_probe *p, const char *ip, const struct prober_ops *ops, void *ud, const char *cid,
	       struct buf *msg)
{
	switch (p->handler) {
	case RT_PROBE_EXEC:
		return run_exec(p, ops, ud, cid, msg);
	case RT_PROBE_HTTP:
		return run_http(p, ip, msg);
	case RT_PROBE_TCP:
		return run_tcp(p, ip, msg);
	default:
		return run_grpc(p, ip, msg);
	}
}

/* ---- host-process containers ---- */

/* The NUL-separated environ of pid as a NULL-terminated array (new), NULL if unreadable. */
static char **proc_environ(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct buf b = BUF_INIT;
	int rc = buf_read_fd(&b, fd, 1 << 20);
	close(fd);
	if (rc < 0) {
		buf_release(&b);
		return NULL;
	}
	size_t n = 0;
	for (size_t i = 0; i < b.len; i++)
		n += b.ptr[i] == '\0';
	char **env = xcalloc(n + 2, sizeof(*env));
	size_t k = 0;
	for (size_t i = 0; i < b.len;) {
		const char *s = b.ptr + i;
		size_t l = strnlen(s, b.len - i);
		if (l)
			env[k++] = xstrdup(s);
		i += l + 1;
	}
	buf_release(&b);
	return env;
}

/* Uid or Gid (the real one) of pid from /proc/<pid>/status; -1 if unknown. */
static long proc_id(pid_t pid, const char *field)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	long v = -1;
	if (!f)
		return -1;
	size_t fl = strlen(field);
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, fl) == 0 && line[fl] == ':') {
			v = strtol(line + fl + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

int probe_exec_local(pid_t pid, char *const *cmd, int timeout_s, struct buf *out, int *ret_code)
{
	char **env = proc_environ(pid);
	if (!env) {
		buf_adds(out, "the container's process is gone");
		return E_NOT_FOUND;
	}
	char cwd[64];
	snprintf(cwd, sizeof(cwd), "/proc/%d/cwd", (int)pid);
	long uid = proc_id(pid, "Uid"), gid = proc_id(pid, "Gid");
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0) {
		buf_addf(out, "pipe: %s", strerror(errno));
		for (char **e = env; *e; e++)
			free(*e);
		free(env);
		return E_INTERNAL;
	}
	pid_t child = fork();
	if (child == 0) {
		setpgid(0, 0);
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		int devnull = open("/dev/null", O_RDONLY);
		if (devnull >= 0)
			dup2(devnull, 0);
		if (chdir(cwd) != 0 && chdir("/") != 0)
			_exit(126);
		if (geteuid() == 0 && gid >= 0 && uid >= 0 &&
		    (setgroups(0, NULL) != 0 || setgid((gid_t)gid) != 0 || setuid((uid_t)uid) != 0))
			_exit(126);
		execvpe(cmd[0], cmd, env);
		dprintf(1, "exec %s: %s\n", cmd[0], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	close(fds[1]);
	for (char **e = env; *e; e++)
		free(*e);
	free(env);
	if (child < 0) {
		close(fds[0]);
		buf_addf(out, "fork: %s", strerror(errno));
		return E_INTERNAL;
	}
	int64_t deadline = mono_ms() + (int64_t)timeout_s * 1000;
	bool timed_out = false;
	char chunk[4096];
	for (;;) {
		int64_t left = deadline - mono_ms();
		if (left <= 0) {
			timed_out = true;
			break;
		}
		struct pollfd pfd = { .fd = fds[0], .events = POLLIN };
		if (poll(&pfd, 1, (int)left) <= 0)
			continue;
		ssize_t n = read(fds[0], chunk, sizeof(chunk));
		if (n <= 0)
			break;
		if (out->len < PROBE_MAX_OUTPUT)
			buf_add(out, chunk, (size_t)n < PROBE_MAX_OUTPUT - out->len ? (size_t)n : PROBE_MAX_OUTPUT - out->len);
	}
	close(fds[0]);
	if (timed_out)
		kill(-child, SIGKILL);
	int st = 0;
	while (waitpid(child, &st, 0) < 0 && errno == EINTR)
		;
	if (timed_out)
		return E_TIMEOUT;
	*ret_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return 0;
}

void probe_kill_local(pid_t pid, unsigned long long start, long long grace_s)
{
	if (pid <= 0 || !rt_proc_alive(pid, start))
		return;
	kill(-pid, SIGTERM);
	int64_t kill_at = mono_ms() + (grace_s > 0 ? grace_s : 0) * 1000;
	while (mono_ms() < kill_at && rt_proc_alive(pid, start))
		usleep(50000);
	if (rt_proc_alive(pid, start))
		kill(-pid, SIGKILL);
}

/* ---- the prober ---- */

/* One probed container instance. Lives in g_list until its thread ends (stop: asked to end). The
 * specs and identity never change; the state fields change under g_lock. */
struct pcont {
	char *uid, *tenant, *ns, *pod, *cname, *cid, *ip;
	struct rt_probe *probe[RT_PROBE_KINDS];
	struct rt_hook *pre_stop; /* runs before a kill (hooks.h) */
	long long pod_grace_s;
	struct prober_ops ops;
	void *ud;
	int64_t started_ms;
	struct probe_state st[RT_PROBE_KINDS];
	int64_t due[RT_PROBE_KINDS];
	bool started, hold, stop;
	struct pcont *next;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER; /* wakes threads (stop) and prober_forget_owner */
static struct pcont *g_list;

static void pcont_free(struct pcont *c)
{
	free(c->uid);
	free(c->tenant);
	free(c->ns);
	free(c->pod);
	free(c->cname);
	free(c->cid);
	free(c->ip);
	for (int k = 0; k < RT_PROBE_KINDS; k++)
		rt_probe_free(c->probe[k]);
	rt_hook_free(c->pre_stop);
	free(c);
}

static bool ready_of(const struct pcont *c)
{
	if (!c->started)
		return false;
	return !c->probe[RT_PROBE_READINESS] || c->st[RT_PROBE_READINESS].result == PROBE_SUCCESS;
}

/* The next probe to run (-1: none may run now or later). */
static int next_kind(const struct pcont *c)
{
	int best = -1;
	for (int k = 0; k < RT_PROBE_KINDS; k++) {
		if (!c->probe[k] || c->hold)
			continue;
		if ((k == RT_PROBE_STARTUP) == c->started)
			continue; /* the startup probe before start only, the others after */
		if (best < 0 || c->due[k] < c->due[best])
			best = k;
	}
	return best;
}

static void wait_until(int64_t due_ms)
{
	struct timespec ts = { .tv_sec = due_ms / 1000, .tv_nsec = (due_ms % 1000) * 1000000 };
	pthread_cond_timedwait(&g_cond, &g_lock, &ts);
}

static void unlink_pcont(struct pcont *c)
{
	for (struct pcont **pp = &g_list; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			return;
		}
}

/* After a run of kind k that changed its result (g_lock held): what follows. *ret_kill: stop the
 * container; *ret_notify: the pod's status changed. */
static void on_result(struct pcont *c, int k, bool *ret_kill, bool *ret_notify)
{
	enum probe_result r = c->st[k].result;
	if (k == RT_PROBE_STARTUP && r == PROBE_SUCCESS) {
		c->started = true;
		*ret_notify = true;
	} else if (k == RT_PROBE_READINESS) {
		*ret_notify = true;
	} else if (r == PROBE_FAILURE) { /* liveness, startup */
		c->hold = true;
		*ret_kill = true;
		*ret_notify = true;
	}
}

static void *pcont_main(void *arg)
{
	struct pcont *c = arg;
	struct buf msg = BUF_INIT;
	pthread_mutex_lock(&g_lock);
	while (!c->stop) {
		int k = next_kind(c);
		if (k < 0) {
			pthread_cond_wait(&g_cond, &g_lock);
			continue;
		}
		if (c->due[k] > now_ms()) {
			wait_until(c->due[k]);
			continue;
		}
		pthread_mutex_unlock(&g_lock);
		buf_reset(&msg);
		int64_t t0 = mono_ms();
		bool ok = probe_run(c->probe[k], c->ip, &c->ops, c->ud, c->cid, &msg);
		kl_metrics_probe(k, ok, (double)(mono_ms() - t0) / 1000.0);
		pthread_mutex_lock(&g_lock);
		if (c->stop)
			break;
		c->due[k] = probe_next_due(c->probe[k], now_ms());
		bool kill = false, notify = false;
		if (probe_state_record(&c->st[k], ok, c->probe[k]))
			on_result(c, k, &kill, &notify);
		pthread_mutex_unlock(&g_lock);
		if (!ok)
			rt_event(c->tenant, c->ns, c->pod, c->uid, c->cname, true, "Unhealthy", "%s probe failed: %s",
				 probe_kind_title((enum rt_probe_kind)k), buf_cstr(&msg));
		if (kill) {
			long long grace = c->probe[k]->grace_s >= 0 ? c->probe[k]->grace_s : c->pod_grace_s;
			rt_event(c->tenant, c->ns, c->pod, c->uid, c->cname, false, "Killing",
				 "Container %s failed %s probe, will be restarted", c->cname,
				 kind_lower((enum rt_probe_kind)k));
			log_info("probe failed: restarting the container", "pod=\"%s/%s\" container=\"%s\" probe=%s",
				 c->ns, c->pod, c->cname, kind_lower((enum rt_probe_kind)k));
			struct hook_target ht = { .uid = c->uid, .tenant = c->tenant, .ns = c->ns, .pod = c->pod,
						  .container = c->cname, .cid = c->cid, .ip = c->ip, .ops = &c->ops,
						  .ud = c->ud };
			grace = hook_pre_stop(c->pre_stop, &ht, grace);
			if (c->ops.kill)
				c->ops.kill(c->ud, c->uid, c->cname, c->cid, grace);
		}
		if (notify)
			rt_pod_changed(c->uid);
		pthread_mutex_lock(&g_lock);
	}
	unlink_pcont(c);
	pthread_cond_broadcast(&g_cond);
	pthread_mutex_unlock(&g_lock);
	buf_release(&msg);
	pcont_free(c);
	return NULL;
}

static struct pcont *find_live(const char *uid, const char *cname)
{
	for (struct pcont *c = g_list; c; c = c->next)
		if (!c->stop && strcmp(c->uid, uid) == 0 && (!cname || strcmp(c->cname, cname) == 0))
			return c;
	return NULL;
}

static struct pcont *pcont_new(const struct prober_target *t)
{
	struct pcont *c = xcalloc(1, sizeof(*c));
	c->uid = xstrdup(t->uid);
	c->tenant = xstrdup(t->tenant ? t->tenant : "system");
	c->ns = xstrdup(t->ns ? t->ns : "default");
	c->pod = xstrdup(t->pod ? t->pod : "");
	c->cname = xstrdup(t->spec->name);
	c->cid = xstrdup(t->cid ? t->cid : "");
	c->ip = xstrdup(t->ip && *t->ip ? t->ip : "127.0.0.1");
	c->pod_grace_s = t->pod_grace_s;
	if (t->ops)
		c->ops = *t->ops;
	c->ud = t->ud;
	c->started_ms = t->started_at > 0 ? t->started_at * 1000 : now_ms();
	for (int k = 0; k < RT_PROBE_KINDS; k++) {
		c->probe[k] = rt_probe_dup(t->spec->probes[k]);
		probe_state_init(&c->st[k], (enum rt_probe_kind)k);
		if (c->probe[k])
			c->due[k] = probe_first_due(c->probe[k], c->started_ms);
	}
	c->pre_stop = rt_hook_dup(t->spec->hooks[RT_HOOK_PRE_STOP]);
	c->started = !c->probe[RT_PROBE_STARTUP];
	return c;
}

void prober_container(const struct prober_target *t, bool *ret_started, bool *ret_ready)
{
	bool any = false;
	for (int k = 0; k < RT_PROBE_KINDS; k++)
		any |= t->spec->probes[k] != NULL;
	if (!any) {
		*ret_started = *ret_ready = true;
		return;
	}
	pthread_mutex_lock(&g_lock);
	struct pcont *c = find_live(t->uid, t->spec->name);
	if (c && strcmp(c->cid, t->cid ? t->cid : "") != 0) {
		c->stop = true; /* an older instance */
		pthread_cond_broadcast(&g_cond);
		c = NULL;
	}
	if (!c) {
		c = pcont_new(t);
		pthread_t th;
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&attr, 256 * 1024);
		if (pthread_create(&th, &attr, pcont_main, c) != 0) {
			log_warn("prober: cannot start a thread", "pod=\"%s/%s\" container=\"%s\"", c->ns, c->pod,
				 c->cname);
			pcont_free(c);
			pthread_attr_destroy(&attr);
			pthread_mutex_unlock(&g_lock);
			*ret_started = *ret_ready = false;
			return;
		}
		pthread_attr_destroy(&attr);
		c->next = g_list;
		g_list = c;
	}
	*ret_started = c->started;
	*ret_ready = ready_of(c);
	pthread_mutex_unlock(&g_lock);
}

static void stop_matching(const char *uid, const char *cname, void *ud)
{
	bool any = false;
	pthread_mutex_lock(&g_lock);
	for (struct pcont *c = g_list; c; c = c->next)
		if (!c->stop && (ud ? c->ud == ud : strcmp(c->uid, uid) == 0) && (!cname || strcmp(c->cname, cname) == 0))
			c->stop = any = true;
	if (any)
		pthread_cond_broadcast(&g_cond);
	pthread_mutex_unlock(&g_lock);
}

void prober_container_gone(const char *uid, const char *container)
{
	stop_matching(uid, container, NULL);
}

void prober_forget_pod(const char *uid)
{
	stop_matching(uid, NULL, NULL);
}

void prober_forget_owner(void *ud)
{
	stop_matching(NULL, NULL, ud);
	pthread_mutex_lock(&g_lock);
	for (;;) {
		bool left = false;
		for (struct pcont *c = g_list; c; c = c->next)
			left |= c->ud == ud;
		if (!left)
			break;
		pthread_cond_wait(&g_cond, &g_lock);
	}
	pthread_mutex_unlock(&g_lock);
}
