/* The watch cache against a real etcd (/usr/bin/etcd on free loopback ports in a temporary
 * directory): paged initial list, watch events, and the relist after the watch's revision got
 * compacted. The cache talks to etcd through a small TCP proxy in this process, so the test can
 * cut the cache off, write and compact behind its back, and reconnect it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "../support/testnet.h"
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "cache_testlib.h"
#include "ursa/errors.h"

#define ETCD_BIN "/usr/bin/etcd"

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* Proxy ---------------------------------------------------------------------------------------- */

#define MAX_CONN 64
struct proxy {
	int lfd, port, upstream;
	atomic_bool down, stop;
	pthread_t th;
	pthread_mutex_t mu;
	int fds[MAX_CONN][2];
	atomic_int live;
};

struct pump {
	struct proxy *p;
	int slot;
};

static void pump_close(struct proxy *p, int slot)
{
	pthread_mutex_lock(&p->mu);
	close(p->fds[slot][0]);
	close(p->fds[slot][1]);
	p->fds[slot][0] = p->fds[slot][1] = -1;
	pthread_mutex_unlock(&p->mu);
	atomic_fetch_sub(&p->live, 1);
}

static bool forward(int from, int to)
{
	char buf[16384];
	ssize_t n = read(from, buf, sizeof(buf));
	if (n <= 0)
		return false;
	for (ssize_t off = 0; off < n;) {
		ssize_t w = write(to, buf + off, (size_t)(n - off));
		if (w <= 0)
			return false;
		off += w;
	}
	return true;
}

static void *pump_thread(void *arg)
{
	struct pump *pu = arg;
	struct proxy *p = pu->p;
	int a = p->fds[pu->slot][0], b = p->fds[pu->slot][1];
	for (;;) {
		struct pollfd pf[2] = { { a, POLLIN, 0 }, { b, POLLIN, 0 } };
		if (poll(pf, 2, 200) < 0 && errno != EINTR)
			break;
		if (atomic_load(&p->down))
			break;
		if ((pf[0].revents & (POLLIN | POLLHUP | POLLERR)) && !forward(a, b))
			break;
		if ((pf[1].revents & (POLLIN | POLLHUP | POLLERR)) && !forward(b, a))
			break;
	}
	pump_close(p, pu->slot);
	free(pu);
	return NULL;
}

static int connect_upstream(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void *listen_thread(void *arg)
{
	struct proxy *p = arg;
	while (!atomic_load(&p->stop)) {
		struct pollfd pf = { p->lfd, POLLIN, 0 };
		if (poll(&pf, 1, 100) <= 0)
			continue;
		int cfd = accept(p->lfd, NULL, NULL);
		if (cfd < 0)
			continue;
		int ufd = atomic_load(&p->down) ? -1 : connect_upstream(p->upstream);
		int slot = -1;
		pthread_mutex_lock(&p->mu);
		for (int i = 0; ufd >= 0 && i < MAX_CONN && slot < 0; i++)
			if (p->fds[i][0] < 0)
				slot = i;
		if (slot >= 0) {
			p->fds[slot][0] = cfd;
			p->fds[slot][1] = ufd;
		}
		pthread_mutex_unlock(&p->mu);
		if (slot < 0) { /* down: refuse */
			close(cfd);
			if (ufd >= 0)
				close(ufd);
			continue;
		}
		atomic_fetch_add(&p->live, 1);
		struct pump *pu = xmalloc(sizeof(*pu));
		*pu = (struct pump){ p, slot };
		pthread_t th;
		pthread_create(&th, NULL, pump_thread, pu);
		pthread_detach(th);
	}
	return NULL;
}

static void proxy_start(struct proxy *p, int upstream)
{
	memset(p, 0, sizeof(*p));
	for (int i = 0; i < MAX_CONN; i++)
		p->fds[i][0] = p->fds[i][1] = -1;
	pthread_mutex_init(&p->mu, NULL);
	p->upstream = upstream;
	p->lfd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	assert_int_equal(bind(p->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(p->lfd, 64), 0);
	assert_int_equal(getsockname(p->lfd, (struct sockaddr *)&a, &len), 0);
	p->port = ntohs(a.sin_port);
	pthread_create(&p->th, NULL, listen_thread, p);
}

/* Cuts every connection and refuses new ones until proxy_up. */
static void proxy_down(struct proxy *p)
{
	atomic_store(&p->down, true);
	while (atomic_load(&p->live) > 0)
		sleep_ms(10);
}

static void proxy_up(struct proxy *p)
{
	atomic_store(&p->down, false);
}

static void proxy_stop(struct proxy *p)
{
	proxy_down(p);
	atomic_store(&p->stop, true);
	pthread_join(p->th, NULL);
	close(p->lfd);
	pthread_mutex_destroy(&p->mu);
}

/* etcd ------------------------------------------------------------------------------------------ */

struct etcd_proc {
	pid_t pid;
	char *dir;
	int port;
};

static void etcd_start(struct etcd_proc *e)
{
	e->dir = xstrdup("/tmp/ursa-cache-etcd-XXXXXX");
	assert_non_null(mkdtemp(e->dir));
	e->port = test_free_port();
	int peer = test_free_port();
	char *data = xasprintf("%s/data", e->dir), *log = xasprintf("%s/etcd.log", e->dir);
	char *curl = xasprintf("http://127.0.0.1:%d", e->port), *purl = xasprintf("http://127.0.0.1:%d", peer);
	char *cluster = xasprintf("default=%s", purl);
	e->pid = fork();
	assert_true(e->pid >= 0);
	if (e->pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(fd, 1);
		dup2(fd, 2);
		execl(ETCD_BIN, ETCD_BIN, "--name", "default", "--data-dir", data, "--listen-client-urls", curl,
		      "--advertise-client-urls", curl, "--listen-peer-urls", purl, "--initial-advertise-peer-urls",
		      purl, "--initial-cluster", cluster, (char *)NULL);
		_exit(127);
	}
	free(data);
	free(log);
	free(curl);
	free(purl);
	free(cluster);
}

static void etcd_stop(struct etcd_proc *e)
{
	kill(e->pid, SIGTERM);
	waitpid(e->pid, NULL, 0);
	char *cmd = xasprintf("rm -rf '%s'", e->dir);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	free(e->dir);
}

/* Test ------------------------------------------------------------------------------------------ */

static void put_pod(struct etcd *e, const char *name, const char *app, int64_t *ret_rev)
{
	char *key = pod_key("t1", "ns", name), *js = pod_json("t1", "ns", name, app, "n1", "Running", 20);
	assert_int_equal(etcd_put(e, key, js, strlen(js), 0, ret_rev), 0);
	free(key);
	free(js);
}

static bool wait_until(bool (*cond)(void *), void *ud, long ms)
{
	for (long t = 0; t < ms; t += 20) {
		if (cond(ud))
			return true;
		sleep_ms(20);
	}
	return cond(ud);
}

static bool is_ready(void *ud)
{
	return wcache_ready(ud);
}

static void notify_nop(void *ud)
{
}

/* Next event within ms, as "TYPE:name@rv" ("" on timeout, "END" when ended). */
static char *next_event(struct watcher *w, long ms)
{
	static const char *names[] = { "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR" };
	struct wevent ev;
	for (long t = 0; t <= ms; t += 10) {
		int rc = watcher_next(w, &ev);
		if (rc < 0)
			return xstrdup("END");
		if (rc == 1) {
			char *s = ev.obj ? xasprintf("%s:%s@%lld", names[ev.type], ev.obj->name, (long long)ev.rv)
					 : xasprintf("%s", names[ev.type]);
			wevent_release(&ev);
			return s;
		}
		sleep_ms(10);
	}
	return xstrdup("");
}

#define assert_next(w, want)                              \
	do {                                              \
		char *_got = next_event(w, 5000);         \
		assert_string_equal(_got, want);          \
		free(_got);                               \
	} while (0)

static void test_list_watch_compact(void **state)
{
	if (access(ETCD_BIN, X_OK) != 0)
		skip();
	struct etcd_proc ep;
	etcd_start(&ep);
	char *url = xasprintf("http://127.0.0.1:%d", ep.port);
	struct etcd *direct = etcd_new(url, NULL);
	assert_non_null(direct);
	for (int i = 0; i < 200 && !etcd_healthy(direct); i++)
		sleep_ms(50);
	assert_true(etcd_healthy(direct));

	int64_t rev = 0;
	for (int i = 0; i < 25; i++) {
		char *name = xasprintf("p%02d", i);
		put_pod(direct, name, i % 2 ? "odd" : "even", &rev);
		free(name);
	}
	/* neighbours of the prefix stay out */
	assert_int_equal(etcd_put(direct, "/registry/podsx/a", "{}", 2, 0, NULL), 0);
	assert_int_equal(etcd_put(direct, "/registry/pod", "{}", 2, 0, &rev), 0);

	struct proxy px;
	proxy_start(&px, ep.port);
	char *purl = xasprintf("http://127.0.0.1:%d", px.port);
	struct etcd *viaproxy = etcd_new(purl, NULL);
	atomic_store(&wcache_list_page_size, 7); /* 25 keys: four pages pinned to one revision */
	struct wcache *c = wcache_new(&test_pods, viaproxy, NULL);
	assert_true(wait_until(is_ready, c, 10000));
	assert_int_equal(wcache_size(c), 25);
	assert_true(wcache_revision(c) >= rev); /* the history load's marker may follow at once */
	struct cobj **objs;
	size_t n;
	int64_t lrv;
	assert_int_equal(wcache_list(c, NULL, &objs, &n, &lrv), 0);
	assert_int_equal(n, 25);
	for (size_t i = 0; i < n; i++) {
		char *name = xasprintf("p%02zu", i);
		assert_string_equal(objs[i]->name, name);
		free(name);
		cobj_unref(objs[i]);
	}
	free(objs);

	/* live events through the etcd watch */
	struct label_selector *ls;
	assert_int_equal(label_selector_parse("app=odd", &ls, NULL), 0);
	struct wfilter f = { "t1", "ns", NULL, ls, NULL };
	struct watcher *w;
	assert_int_equal(wcache_watch(c, &f, rev, 100, notify_nop, NULL, &w), 0);
	int64_t r1, r2, r3;
	put_pod(direct, "p03", "even", &r1); /* odd -> even: DELETED for this watcher */
	put_pod(direct, "new", "odd", &r2);
	assert_int_equal(etcd_delete(direct, "/registry/pods/t1/ns/new", 0, &r3, NULL), 0);
	assert_int_equal(wcache_wait_for(c, r3, 5000), 0);
	char *want;
	assert_next(w, (want = xasprintf("DELETED:p03@%lld", (long long)r1)));
	free(want);
	assert_next(w, (want = xasprintf("ADDED:new@%lld", (long long)r2)));
	free(want);
	assert_next(w, (want = xasprintf("DELETED:new@%lld", (long long)r3)));
	free(want);
	assert_int_equal(wcache_size(c), 25);

	/* cut the cache off, change and compact behind its back, reconnect: it must relist */
	proxy_down(&px);
	int64_t r4;
	put_pod(direct, "late", "odd", NULL);
	assert_int_equal(etcd_delete(direct, "/registry/pods/t1/ns/p00", 0, NULL, NULL), 0);
	put_pod(direct, "p01", "odd", &r4);
	assert_int_equal(etcd_compact(direct, r4), 0);
	assert_true(wcache_ready(c)); /* stale but serving */
	assert_int_equal(wcache_size(c), 25);
	proxy_up(&px);
	assert_int_equal(wcache_wait_for(c, r4, 15000), 0);
	assert_next(w, "ERROR");
	assert_next(w, "END");
	watcher_close(w);
	assert_int_equal(wcache_size(c), 25); /* +late -p00 */
	struct cobj *o = wcache_get(c, "/registry/pods/t1/ns/late");
	assert_non_null(o);
	cobj_unref(o);
	assert_null(wcache_get(c, "/registry/pods/t1/ns/p00"));
	o = wcache_get(c, "/registry/pods/t1/ns/p01");
	assert_int_equal(o->rv, r4);
	cobj_unref(o);
	/* history before the relist is gone; after it, watching works again */
	assert_int_equal(wcache_watch(c, &f, rev, 100, notify_nop, NULL, &w), E_GONE);
	assert_int_equal(wcache_watch(c, &f, wcache_revision(c), 100, notify_nop, NULL, &w), 0);
	int64_t r5;
	put_pod(direct, "after", "odd", &r5);
	assert_next(w, (want = xasprintf("ADDED:after@%lld", (long long)r5)));
	free(want);
	watcher_close(w);

	label_selector_free(ls);
	wcache_free(c);
	etcd_free(viaproxy);
	etcd_free(direct);
	proxy_stop(&px);
	etcd_stop(&ep);
	free(url);
	free(purl);
}

static char *names_of(struct wcache *c)
{
	struct cobj **objs;
	size_t n;
	int64_t rv;
	assert_int_equal(wcache_list(c, NULL, &objs, &n, &rv), 0);
	struct buf b = BUF_INIT;
	for (size_t i = 0; i < n; i++) {
		buf_addf(&b, "%s%s", i ? "," : "", objs[i]->name);
		cobj_unref(objs[i]);
	}
	free(objs);
	return buf_detach(&b, NULL);
}

/* A cache started on an etcd with history (a restart): ready with the current state (a deleted
 * object is not back), a watch from before its list resumes with exactly the events since (it
 * waits for the history load), one before history_back_revs or the compaction gets E_GONE; the
 * marker ends the load and never shows; a consistent read of a quiet cache is quick. */
static void test_history_and_markers(void **state)
{
	if (access(ETCD_BIN, X_OK) != 0)
		skip();
	struct etcd_proc ep;
	etcd_start(&ep);
	char *url = xasprintf("http://127.0.0.1:%d", ep.port);
	struct etcd *e = etcd_new(url, NULL);
	for (int i = 0; i < 200 && !etcd_healthy(e); i++)
		sleep_ms(50);
	assert_true(etcd_healthy(e));
	int64_t r0, radd, rdel, rmod, rlast;
	put_pod(e, "a", "x", &r0);
	for (int i = 0; i < 30; i++) /* other kinds */
		assert_int_equal(etcd_put(e, "/registry/configmaps/t1/ns/c", "{}", 2, 0, NULL), 0);
	put_pod(e, "b", "x", &radd);
	assert_int_equal(etcd_delete(e, "/registry/pods/t1/ns/a", 0, &rdel, NULL), 0);
	put_pod(e, "b", "y", &rmod);
	put_pod(e, "c", "x", &rlast);

	struct wcache *c = wcache_new(&test_pods, e, NULL);
	assert_true(wait_until(is_ready, c, 10000));
	char *got = names_of(c);
	assert_string_equal(got, "b,c"); /* current at once: a stays deleted */
	free(got);
	struct watcher *w;
	assert_int_equal(wcache_watch(c, NULL, r0, 100, notify_nop, NULL, &w), 0);
	char *want;
	assert_next(w, (want = xasprintf("ADDED:b@%lld", (long long)radd)));
	free(want);
	assert_next(w, (want = xasprintf("DELETED:a@%lld", (long long)rdel)));
	free(want);
	assert_next(w, (want = xasprintf("MODIFIED:b@%lld", (long long)rmod)));
	free(want);
	assert_next(w, (want = xasprintf("ADDED:c@%lld", (long long)rlast)));
	free(want);
	got = next_event(w, 300);
	assert_string_equal(got, ""); /* the marker is no event */
	free(got);
	watcher_close(w);
	assert_int_equal(wcache_size(c), 2);
	struct etcd_kv kv;
	assert_int_equal(etcd_get(e, "/registry/pods/~progress", &kv), 0);
	assert_true(wcache_revision(c) >= kv.mod_rev);
	etcd_kv_release(&kv);

	/* a quiet cache behind etcd: its marker brings it to etcd's revision at once */
	int64_t cur;
	assert_int_equal(etcd_put(e, "/registry/configmaps/t1/ns/c", "{}", 2, 0, &cur), 0);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(wcache_wait_current(c, cur, 1000), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(wcache_revision(c) > cur);
	assert_true((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 < 500);
	assert_int_equal(wcache_size(c), 2);
	wcache_free(c);

	/* caches fed by a mux share the mux's marker, outside every kind's keys */
	struct wcache_mux *m = wcache_mux_new(e, "/registry/cr/");
	struct wcache *m1 = wcache_new_muxed(m, &test_pods, &(struct wcache_options){ .key_prefix = "/registry/cr/g/pods/" });
	struct wcache *m2 = wcache_new_muxed(m, &test_pods, &(struct wcache_options){
		.key_prefix = "/registry/cr/h/pods/", .watch_prefix = "/registry/cr/h/pods/t1/" });
	assert_true(wait_until(is_ready, m1, 10000));
	assert_true(wait_until(is_ready, m2, 10000));
	char *k = xstrdup("/registry/cr/g/pods/t1/ns/x"), *v = pod_json("t1", "ns", "x", "x", "", "Pending", 1);
	assert_int_equal(etcd_put(e, k, v, strlen(v), 0, NULL), 0);
	free(k);
	free(v);
	assert_int_equal(etcd_put(e, "/registry/configmaps/t1/ns/c", "{}", 2, 0, &cur), 0);
	assert_int_equal(wcache_wait_current(m1, cur, 1000), 0);
	assert_int_equal(wcache_wait_current(m2, cur, 1000), 0); /* the same marker event, or its own */
	assert_int_equal(wcache_size(m1), 1);
	assert_int_equal(wcache_size(m2), 0);
	assert_int_equal(etcd_get(e, "/registry/cr/~progress", &kv), 0);
	etcd_kv_release(&kv);
	assert_int_equal(etcd_get(e, "/registry/cr/g/pods/~progress", &kv), E_NOT_FOUND);
	wcache_free(m1);
	wcache_free(m2);
	wcache_mux_free(m);

	/* a short window: older resourceVersions get E_GONE */
	c = wcache_new(&test_pods, e, &(struct wcache_options){ .history_back_revs = 3 });
	assert_true(wait_until(is_ready, c, 10000));
	assert_int_equal(wcache_watch(c, NULL, r0, 100, notify_nop, NULL, &w), E_GONE);
	wcache_free(c);

	/* compacted: the history starts after the compaction revision */
	assert_int_equal(etcd_compact(e, radd), 0);
	c = wcache_new(&test_pods, e, NULL);
	assert_true(wait_until(is_ready, c, 10000));
	assert_int_equal(wcache_watch(c, NULL, radd - 1, 100, notify_nop, NULL, &w), E_GONE);
	assert_int_equal(wcache_watch(c, NULL, radd, 100, notify_nop, NULL, &w), 0);
	assert_next(w, (want = xasprintf("DELETED:a@%lld", (long long)rdel)));
	free(want);
	assert_next(w, (want = xasprintf("MODIFIED:b@%lld", (long long)rmod)));
	free(want);
	assert_next(w, (want = xasprintf("ADDED:c@%lld", (long long)rlast)));
	free(want);
	watcher_close(w);
	wcache_free(c);
	etcd_free(e);
	etcd_stop(&ep);
	free(url);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_list_watch_compact),
		cmocka_unit_test(test_history_and_markers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
