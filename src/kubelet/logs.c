/* The kubelet's HTTP endpoints: health and container logs (see logs.h).
 *
 * Every log response is a stream that reads the CRI log file from an offset and turns its
 * records into plain lines. A follower that reached the end sleeps (its connection is
 * suspended); one shared ticker thread looks at the sleeping followers' files every 150 ms
 * and wakes those whose file grew, became final or was removed. */
#define _GNU_SOURCE
#include "logs.h"
#include "shim.h"
#include "stats.h"
#include "streams.h"
#include "runtime_common.h"
#include "ursa/http.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"
#include "klmetrics.h"
#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TICK_MS 150
/* A suspended connection does not notice its client hanging up (include/ursa/http.h has no
 * way to probe it), so a follower of a quiet log lives until the log grows, becomes final or
 * is removed. Their number is capped. */
#define MAX_STREAMS 1024
#define MAX_SEGMENT 253

struct follower {
	struct kl_logs *l;
	struct http_stream *stream;
	int fd;
	off_t off;
	struct buf raw;          /* bytes read but not yet a complete record */
	bool follow, timestamps;
	bool line_start;         /* the previous record ended a line (F) */
	bool final_seen;
	long long limit, sent;   /* limit < 0: none */
	time_t since;            /* 0: none */
	atomic_bool ending;
	/* under l->lock */
	bool sleeping;
	off_t sleep_off;
	struct follower *prev, *next;
};

struct kl_logs {
	struct http_server *srv;
	const struct runtime_ops *ops;
	struct runtime *rt;
	char *auth;              /* "Bearer <token>" or NULL */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stopping;
	pthread_t ticker;
	struct follower *followers;
	size_t nstreams;
	struct kl_streams *streams; /* exec, attach, port-forward (streams.h) */
};

static void reply_text(struct http_reply *rp, int status, const char *text)
{
	struct buf b = BUF_INIT;
	buf_adds(&b, text);
	buf_addch(&b, '\n');
	http_reply_set(rp, status, "text/plain; charset=utf-8", &b);
}

/* ---- turning CRI records into lines ---- */

/* "<ts> <stream> <F|P> <text>": views into line; false if it is not such a record. */
static bool parse_record(struct sv line, struct sv *ts, char *tag, struct sv *text)
{
	const char *end = line.ptr + line.len;
	const char *sp1 = memchr(line.ptr, ' ', line.len);
	const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(end - sp1 - 1)) : NULL;
	if (!sp2 || end - sp2 < 2 || (sp2[1] != 'F' && sp2[1] != 'P') || (end - sp2 > 2 && sp2[2] != ' '))
		return false;
	*ts = (struct sv){ line.ptr, (size_t)(sp1 - line.ptr) };
	*tag = sp2[1];
	const char *t = end - sp2 > 2 ? sp2 + 3 : end;
	*text = (struct sv){ t, (size_t)(end - t) };
	return true;
}

static bool before_since(const struct follower *f, struct sv ts)
{
	if (!f->since || ts.len >= 64)
		return false;
	char tmp[64];
	memcpy(tmp, ts.ptr, ts.len);
	tmp[ts.len] = '\0';
	time_t t;
	return rfc3339_parse(tmp, &t) == 0 && t < f->since;
}

static void emit_record(struct follower *f, struct sv line, struct buf *out)
{
	struct sv ts, text;
	char tag;
	if (!parse_record(line, &ts, &tag, &text)) {
		buf_add(out, line.ptr, line.len);
		buf_addch(out, '\n');
		f->line_start = true;
		return;
	}
	if (before_since(f, ts))
		return;
	if (f->timestamps && f->line_start) {
		buf_add(out, ts.ptr, ts.len);
		buf_addch(out, ' ');
	}
	buf_add(out, text.ptr, text.len);
	f->line_start = tag == 'F';
	if (f->line_start)
		buf_addch(out, '\n');
}

static void emit_complete(struct follower *f, struct buf *out)
{
	size_t off = 0;
	const char *nl;
	while (off < f->raw.len && (nl = memchr(f->raw.ptr + off, '\n', f->raw.len - off))) {
		emit_record(f, (struct sv){ f->raw.ptr + off, (size_t)(nl - f->raw.ptr - off) }, out);
		off = (size_t)(nl - f->raw.ptr) + 1;
	}
	if (off) {
		memmove(f->raw.ptr, f->raw.ptr + off, f->raw.len - off);
		f->raw.len -= off;
		f->raw.ptr[f->raw.len] = '\0';
	}
}

/* ---- the stream ---- */

static bool file_over(int fd)
{
	struct stat st;
	return fstat(fd, &st) < 0 || st.st_nlink == 0 || shim_log_is_final(&st);
}

/* Reads and converts up to about max bytes. 1: appended; 0: at the end, wait; -1: done. */
static int read_some(struct follower *f, struct buf *out, size_t max)
{
	size_t start = out->len;
	char tmp[65536];
	while (out->len - start < max) {
		ssize_t n = pread(f->fd, tmp, sizeof(tmp), f->off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n > 0) {
			f->off += n;
			buf_add(&f->raw, tmp, (size_t)n);
			emit_complete(f, out);
			continue;
		}
		if (out->len > start)
			break;
		if (!f->follow || n < 0)
			return -1;
		if (file_over(f->fd)) {
			/* One more read after seeing the mark: the writer finished before setting it. */
			if (f->final_seen)
				return -1;
			f->final_seen = true;
			continue;
		}
		return 0;
	}
	return 1;
}

static int on_fill(void *ud, struct buf *out, size_t max)
{
	struct follower *f = ud;
	if (atomic_load(&f->ending) || (f->limit >= 0 && f->sent >= f->limit))
		return -1;
	size_t start = out->len;
	int r = read_some(f, out, max);
	if (r == 0) {
		pthread_mutex_lock(&f->l->lock);
		f->sleeping = true;
		f->sleep_off = f->off;
		pthread_mutex_unlock(&f->l->lock);
		return 0;
	}
	size_t added = out->len - start;
	if (f->limit >= 0 && f->sent + (long long)added > f->limit) {
		added = (size_t)(f->limit - f->sent);
		out->len = start + added;
		if (out->ptr)
			out->ptr[out->len] = '\0';
	}
	f->sent += (long long)added;
	if (r < 0)
		return added ? 1 : -1;
	return added ? 1 : 0;
}

static void on_done(void *ud)
{
	struct follower *f = ud;
	struct kl_logs *l = f->l;
	pthread_mutex_lock(&l->lock);
	if (f->prev)
		f->prev->next = f->next;
	else if (l->followers == f)
		l->followers = f->next;
	if (f->next)
		f->next->prev = f->prev;
	l->nstreams--;
	pthread_mutex_unlock(&l->lock);
	close(f->fd);
	buf_release(&f->raw);
	free(f);
}

static void *ticker_main(void *arg)
{
	struct kl_logs *l = arg;
	pthread_mutex_lock(&l->lock);
	while (!l->stopping) {
		struct timespec ts;
		wall_deadline(&ts, TICK_MS);
		pthread_cond_timedwait(&l->cond, &l->lock, &ts);
		for (struct follower *f = l->followers; f && !l->stopping; f = f->next) {
			struct stat st;
			if (!f->sleeping)
				continue;
			if (fstat(f->fd, &st) == 0 && st.st_size <= f->sleep_off && st.st_nlink > 0 &&
			    !shim_log_is_final(&st))
				continue;
			f->sleeping = false;
			http_stream_wake(f->stream);
		}
	}
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

/* ---- requests ---- */

static bool flag_true(const char *v)
{
	return v && (!strcmp(v, "true") || !strcmp(v, "1"));
}

/* Optional non-negative integer query parameter; -1 if malformed. */
static int query_int(struct http_request *req, const char *key, long long def, long long *ret)
{
	const char *v = http_query(req, key);
	*ret = def;
	if (!v)
		return 0;
	if (parse_int64(v, ret) < 0 || *ret < 0)
		return -1;
	return 0;
}

/* Start of the last n records of the file. */
static off_t tail_offset(int fd, long long n)
{
	struct stat st;
	if (n < 0 || fstat(fd, &st) < 0)
		return 0;
	off_t size = st.st_size, pos = size;
	if (n == 0)
		return size;
	char tmp[65536];
	long long count = 0;
	while (pos > 0) {
		size_t chunk = pos > (off_t)sizeof(tmp) ? sizeof(tmp) : (size_t)pos;
		pos -= (off_t)chunk;
		if (pread(fd, tmp, chunk, pos) != (ssize_t)chunk)
			return 0;
		for (size_t i = chunk; i-- > 0;) {
			if (tmp[i] == '\n' && pos + (off_t)i < size - 1 && ++count == n)
				return pos + (off_t)i + 1;
		}
	}
	return 0;
}

/* The three path segments after /containerLogs/; false if the path has another shape. */
static bool split_segments(const char *p, char *seg[3])
{
	for (int i = 0; i < 3; i++) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		if ((slash != NULL) != (i < 2) || n == 0 || n > MAX_SEGMENT) {
			for (int k = 0; k < i; k++)
				free(seg[k]);
			return false;
		}
		seg[i] = xstrndup(p, n);
		p += n + (slash ? 1 : 0);
	}
	return true;
}

static void serve_logs(struct kl_logs *l, struct http_request *req, struct http_reply *rp, const char *rest)
{
	char *seg[3];
	if (!split_segments(rest, seg)) {
		reply_text(rp, 404, "not found: want /containerLogs/{namespace}/{pod}/{container}");
		return;
	}
	const char *tenant = http_query(req, "tenant");
	if (!tenant || !*tenant)
		tenant = "system";
	long long tail, limit, since_s;
	time_t since = 0;
	const char *since_time = http_query(req, "sinceTime");
	if (query_int(req, "tailLines", -1, &tail) < 0 || query_int(req, "limitBytes", -1, &limit) < 0 ||
	    query_int(req, "sinceSeconds", 0, &since_s) < 0 || (since_time && rfc3339_parse(since_time, &since) < 0)) {
		reply_text(rp, 400, "bad request: tailLines, limitBytes and sinceSeconds must be non-negative integers "
				    "and sinceTime RFC3339");
		goto out;
	}
	if (since_s > 0)
		since = (time_t)(now_ms() / 1000 - since_s);
	bool previous = flag_true(http_query(req, "previous"));
	char *path = !previous ? l->ops->log_path(l->rt, tenant, seg[0], seg[1], seg[2])
		   : l->ops->prev_log_path ? l->ops->prev_log_path(l->rt, tenant, seg[0], seg[1], seg[2]) : NULL;
	int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	free(path);
	if (fd < 0 && previous) {
		/* Kubernetes' words; a bad request, as its kubelet answers */
		struct buf b = BUF_INIT;
		buf_addf(&b, "previous terminated container \"%s\" in pod \"%s\" not found", seg[2], seg[1]);
		reply_text(rp, 400, b.ptr);
		buf_release(&b);
		goto out;
	}
	if (fd < 0) {
		struct buf b = BUF_INIT;
		buf_addf(&b, "container \"%s\" in pod \"%s\" (namespace \"%s\", tenant \"%s\") not found or has no log",
			 seg[2], seg[1], seg[0], tenant);
		reply_text(rp, 404, b.ptr);
		buf_release(&b);
		goto out;
	}
	pthread_mutex_lock(&l->lock);
	bool full = l->nstreams >= MAX_STREAMS;
	pthread_mutex_unlock(&l->lock);
	if (full) {
		close(fd);
		reply_text(rp, 429, "too many log streams");
		goto out;
	}
	struct follower *f = xcalloc(1, sizeof(*f));
	f->l = l;
	f->fd = fd;
	f->off = tail_offset(fd, tail);
	f->follow = flag_true(http_query(req, "follow"));
	f->timestamps = flag_true(http_query(req, "timestamps"));
	f->line_start = true;
	f->limit = limit;
	f->since = since;
	atomic_init(&f->ending, false);
	pthread_mutex_lock(&l->lock);
	f->stream = http_reply_stream(rp, 200, "text/plain; charset=utf-8", on_fill, on_done, f);
	l->nstreams++;
	f->next = l->followers;
	if (f->next)
		f->next->prev = f;
	l->followers = f;
	pthread_mutex_unlock(&l->lock);
out:
	for (int i = 0; i < 3; i++)
		free(seg[i]);
}

static bool authorized(const struct kl_logs *l, struct http_request *req)
{
	if (!l->auth)
		return true;
	const char *h = http_header(req, "Authorization");
	size_t n = strlen(l->auth);
	return h && strlen(h) == n && CRYPTO_memcmp(h, l->auth, n) == 0;
}

static void on_request(void *ud, struct http_request *req, struct http_reply *rp)
{
	struct kl_logs *l = ud;
	const char *path = http_path(req);
	/* Health checks stay open; container logs need the token. */
	if (strcmp(path, "/healthz") != 0 && !authorized(l, req)) {
		reply_text(rp, 401, "Unauthorized");
		http_reply_header(rp, "WWW-Authenticate", "Bearer");
		return;
	}
	if (kl_streams_serve(l->streams, req, rp))
		return;
	if (strcmp(http_method(req), "GET")) {
		reply_text(rp, 405, "method not allowed");
		return;
	}
	if (!strcmp(path, "/healthz")) {
		struct buf b = BUF_INIT;
		buf_adds(&b, "ok");
		http_reply_set(rp, 200, "text/plain; charset=utf-8", &b);
		return;
	}
	if (!strcmp(path, "/metrics")) { /* the kubelet's histograms (klmetrics.h) */
		struct buf b = BUF_INIT;
		kl_metrics_render(&b);
		http_reply_set(rp, 200, "text/plain; version=0.0.4; charset=utf-8", &b);
		return;
	}
	if (!strcmp(path, "/stats/usage")) { /* resource usage for metrics.k8s.io (stats.h) */
		struct buf b = BUF_INIT;
		kl_stats_usage(l->ops->name, &b);
		http_reply_set(rp, 200, "application/json", &b);
		return;
	}
	static const char prefix[] = "/containerLogs/";
	if (!strncmp(path, prefix, sizeof(prefix) - 1)) {
		serve_logs(l, req, rp, path + sizeof(prefix) - 1);
		return;
	}
	reply_text(rp, 404, "not found");
}

struct kl_logs *kl_logs_start(const char *listen, const char *tls_cert, const char *tls_key, const char *auth_token,
			      const struct runtime_ops *ops, struct runtime *rt, char **ret_err)
{
	struct kl_logs *l = xcalloc(1, sizeof(*l));
	l->ops = ops;
	l->rt = rt;
	l->auth = auth_token && *auth_token ? xasprintf("Bearer %s", auth_token) : NULL;
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->cond, NULL);
	l->streams = kl_streams_new(ops, rt);
	struct http_server_options o = { .listen = listen, .tls_cert = tls_cert, .tls_key = tls_key, .threads = 2 };
	l->srv = http_server_start(&o, on_request, l, ret_err);
	if (!l->srv || pthread_create(&l->ticker, NULL, ticker_main, l) != 0) {
		if (l->srv) {
			http_server_stop(l->srv);
			*ret_err = xstrdup("cannot start the log ticker thread");
		}
		pthread_mutex_destroy(&l->lock);
		pthread_cond_destroy(&l->cond);
		kl_streams_free(l->streams);
		free(l->auth);
		free(l);
		return NULL;
	}
	return l;
}

size_t kl_logs_streams(struct kl_logs *l)
{
	pthread_mutex_lock(&l->lock);
	size_t n = l->nstreams;
	pthread_mutex_unlock(&l->lock);
	return n;
}

void kl_logs_stop(struct kl_logs *l)
{
	if (!l)
		return;
	pthread_mutex_lock(&l->lock);
	l->stopping = true;
	pthread_cond_signal(&l->cond);
	pthread_mutex_unlock(&l->lock);
	pthread_join(l->ticker, NULL);
	pthread_mutex_lock(&l->lock);
	for (struct follower *f = l->followers; f; f = f->next) {
		atomic_store(&f->ending, true);
		http_stream_wake(f->stream);
	}
	pthread_mutex_unlock(&l->lock);
	/* Let the woken streams end cleanly before the daemon goes. */
	for (int i = 0; i < 100; i++) {
		pthread_mutex_lock(&l->lock);
		bool empty = !l->followers;
		pthread_mutex_unlock(&l->lock);
		if (empty)
			break;
		usleep(10000);
	}
	http_server_stop(l->srv); /* switched connections are shut down: their streams end */
	kl_streams_free(l->streams);
	pthread_mutex_destroy(&l->lock);
	pthread_cond_destroy(&l->cond);
	free(l->auth);
	free(l);
}
