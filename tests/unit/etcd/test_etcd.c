/* Tests of the etcd client against real etcd processes (/usr/bin/etcd) on loopback ports in a
 * temporary directory: KV, conditional writes, compaction, leases, watches (including restart and
 * compaction), and member fail-over in a 3-member cluster. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ursa/buf.h"
#include "ursa/errors.h"
#include "ursa/etcd.h"
#include "ursa/timeutil.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

/* ---- etcd processes ---- */

struct member {
	char *name;
	char *data_dir;
	char *log;
	char *client_url;
	char *peer_url;
	pid_t pid;
};

struct cluster {
	char *dir;
	char *initial; /* --initial-cluster */
	char *endpoints;
	struct member m[3];
	size_t n;
};

static struct cluster g_single;
static struct etcd *g_e;

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* Free loopback ports: all bound at once (so they differ), then released for etcd. */
static void free_ports(int *ports, size_t n)
{
	int fds[8];
	assert_true(n <= 8);
	for (size_t i = 0; i < n; i++) {
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t len = sizeof(a);
		fds[i] = socket(AF_INET, SOCK_STREAM, 0);
		assert_true(fds[i] >= 0);
		assert_int_equal(bind(fds[i], (struct sockaddr *)&a, sizeof(a)), 0);
		assert_int_equal(getsockname(fds[i], (struct sockaddr *)&a, &len), 0);
		ports[i] = ntohs(a.sin_port);
	}
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
}

static void member_start(struct cluster *c, struct member *m)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(m->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execl("/usr/bin/etcd", "etcd", "--name", m->name, "--data-dir", m->data_dir, "--listen-client-urls",
		      m->client_url, "--advertise-client-urls", m->client_url, "--listen-peer-urls", m->peer_url,
		      "--initial-advertise-peer-urls", m->peer_url, "--initial-cluster", c->initial,
		      "--initial-cluster-token", c->dir, "--initial-cluster-state", "new", "--heartbeat-interval",
		      "50", "--election-timeout", "500", "--logger", "zap", (char *)NULL);
		_exit(127);
	}
	m->pid = pid;
}

static void member_kill(struct member *m)
{
	if (m->pid <= 0)
		return;
	kill(m->pid, SIGKILL);
	waitpid(m->pid, NULL, 0);
	m->pid = 0;
}

/* Waits until every running member reports healthy (which needs a leader). */
static void cluster_wait_healthy(struct cluster *c)
{
	int64_t deadline = mono_ms() + 15000;
	for (size_t i = 0; i < c->n; i++) {
		struct etcd *e;
		if (c->m[i].pid <= 0)
			continue;
		e = etcd_new(c->m[i].client_url, NULL);
		while (!etcd_healthy(e)) {
			if (mono_ms() > deadline)
				fail_msg("etcd %s not healthy; see %s", c->m[i].name, c->m[i].log);
			sleep_ms(50);
		}
		etcd_free(e);
	}
}

static void cluster_start(struct cluster *c, size_t n)
{
	char tmpl[] = "/tmp/ursa-etcd-test-XXXXXX";
	struct buf initial = BUF_INIT, eps = BUF_INIT;
	int ports[6];

	assert_non_null(mkdtemp(tmpl));
	c->dir = xstrdup(tmpl);
	c->n = n;
	free_ports(ports, 2 * n);
	for (size_t i = 0; i < n; i++) {
		struct member *m = &c->m[i];
		m->name = xasprintf("m%zu", i);
		m->data_dir = xasprintf("%s/%s.etcd", c->dir, m->name);
		m->log = xasprintf("%s/%s.log", c->dir, m->name);
		m->client_url = xasprintf("http://127.0.0.1:%d", ports[2 * i]);
		m->peer_url = xasprintf("http://127.0.0.1:%d", ports[2 * i + 1]);
		buf_addf(&initial, "%s%s=%s", i ? "," : "", m->name, m->peer_url);
		buf_addf(&eps, "%s%s", i ? "," : "", m->client_url);
	}
	c->initial = buf_detach(&initial, NULL);
	c->endpoints = buf_detach(&eps, NULL);
	for (size_t i = 0; i < n; i++)
		member_start(c, &c->m[i]);
	cluster_wait_healthy(c);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void cluster_stop(struct cluster *c)
{
	for (size_t i = 0; i < c->n; i++) {
		struct member *m = &c->m[i];
		member_kill(m);
		free(m->name);
		free(m->data_dir);
		free(m->log);
		free(m->client_url);
		free(m->peer_url);
	}
	if (c->dir)
		nftw(c->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(c->dir);
	free(c->initial);
	free(c->endpoints);
	memset(c, 0, sizeof(*c));
}

static int group_setup(void **state)
{
	cluster_start(&g_single, 1);
	g_e = etcd_new(g_single.endpoints, NULL);
	return g_e ? 0 : -1;
}

static int group_teardown(void **state)
{
	etcd_free(g_e);
	cluster_stop(&g_single);
	return 0;
}

/* ---- watch recorder ---- */

struct rec_event {
	enum etcd_event_type type;
	char *key;
	char *value;
	char *prev_value; /* NULL when no prev_kv came */
	int64_t mod_rev;
};

struct recorder {
	pthread_mutex_t lock;
	struct rec_event ev[64];
	size_t n;
	int ups;
	int downs;
	int64_t compacted;
	int batches_out_of_order;
};

static void rec_init(struct recorder *r)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
}

static void rec_release(struct recorder *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->ev[i].key);
		free(r->ev[i].value);
		free(r->ev[i].prev_value);
	}
	pthread_mutex_destroy(&r->lock);
}

static void on_events(void *ud, const struct etcd_event *ev, size_t n)
{
	struct recorder *r = ud;
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < n && r->n < ARRAY_SIZE(r->ev); i++) {
		struct rec_event *e = &r->ev[r->n];
		if (r->n && r->ev[r->n - 1].mod_rev > ev[i].kv.mod_rev)
			r->batches_out_of_order++;
		e->type = ev[i].type;
		e->key = xstrdup(ev[i].kv.key);
		e->value = xstrndup(ev[i].kv.value, ev[i].kv.value_len > 64 ? 64 : ev[i].kv.value_len);
		e->prev_value = ev[i].prev_kv.key ? xstrndup(ev[i].prev_kv.value, ev[i].prev_kv.value_len > 64 ? 64 : ev[i].prev_kv.value_len) : NULL;
		e->mod_rev = ev[i].kv.mod_rev;
		r->n++;
	}
	pthread_mutex_unlock(&r->lock);
}

static void on_compacted(void *ud, int64_t rev)
{
	struct recorder *r = ud;
	pthread_mutex_lock(&r->lock);
	r->compacted = rev;
	pthread_mutex_unlock(&r->lock);
}

static void on_state(void *ud, bool up)
{
	struct recorder *r = ud;
	pthread_mutex_lock(&r->lock);
	if (up)
		r->ups++;
	else
		r->downs++;
	pthread_mutex_unlock(&r->lock);
}

static const struct etcd_watch_handlers rec_handlers = { on_events, on_compacted, on_state };

enum rec_field { REC_EVENTS, REC_UPS, REC_DOWNS, REC_COMPACTED };

static int64_t rec_get(struct recorder *r, enum rec_field f)
{
	int64_t v = 0;
	pthread_mutex_lock(&r->lock);
	switch (f) {
	case REC_EVENTS: v = (int64_t)r->n; break;
	case REC_UPS: v = r->ups; break;
	case REC_DOWNS: v = r->downs; break;
	case REC_COMPACTED: v = r->compacted; break;
	}
	pthread_mutex_unlock(&r->lock);
	return v;
}

/* Waits until field f reaches at least want; returns the value seen. */
static int64_t rec_wait(struct recorder *r, enum rec_field f, int64_t want, long timeout_ms)
{
	int64_t deadline = mono_ms() + timeout_ms;
	int64_t v;
	while ((v = rec_get(r, f)) < want && mono_ms() < deadline)
		sleep_ms(10);
	return v;
}

static void assert_event(const struct rec_event *e, enum etcd_event_type type, const char *key, const char *value,
			 const char *prev)
{
	assert_int_equal(e->type, type);
	assert_string_equal(e->key, key);
	if (value)
		assert_string_equal(e->value, value);
	if (prev) {
		assert_non_null(e->prev_value);
		assert_string_equal(e->prev_value, prev);
	} else {
		assert_null(e->prev_value);
	}
}

/* ---- KV ---- */

static void put_str(struct etcd *e, const char *key, const char *value, int64_t *ret_rev)
{
	assert_int_equal(etcd_put(e, key, value, strlen(value), 0, ret_rev), 0);
}

static void test_put_get_range(void **state)
{
	const char *keys[] = { "/t/r/a", "/t/r/b", "/t/r/c", "/t/r/d", "/t/r/e" };
	struct etcd_range_result r;
	struct etcd_kv kv;
	int64_t rev = 0, first = 0, cur = 0;
	char *end = etcd_prefix_end("/t/r/");

	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		put_str(g_e, keys[i], keys[i] + 5, &rev);
		if (!first)
			first = rev;
	}
	assert_int_equal(rev, first + 4);
	assert_int_equal(etcd_current_revision(g_e, &cur), 0);
	assert_int_equal(cur, rev);

	assert_int_equal(etcd_get(g_e, "/t/r/c", &kv), 0);
	assert_string_equal(kv.key, "/t/r/c");
	assert_string_equal(kv.value, "c");
	assert_int_equal(kv.value_len, 1);
	assert_int_equal(kv.mod_rev, first + 2);
	assert_int_equal(kv.create_rev, first + 2);
	assert_int_equal(kv.version, 1);
	etcd_kv_release(&kv);
	assert_int_equal(etcd_get(g_e, "/t/r/zz", &kv), E_NOT_FOUND);

	assert_int_equal(etcd_range(g_e, "/t/r/", end, 0, 2, false, &r), 0);
	assert_int_equal(r.n, 2);
	assert_int_equal(r.count, 5);
	assert_true(r.more);
	assert_int_equal(r.revision, rev);
	assert_string_equal(r.kvs[0].key, "/t/r/a");
	assert_string_equal(r.kvs[1].key, "/t/r/b");
	assert_string_equal(r.kvs[1].value, "b");
	etcd_range_result_release(&r);

	assert_int_equal(etcd_range(g_e, "/t/r/", end, 0, 0, true, &r), 0);
	assert_int_equal(r.n, 5);
	assert_false(r.more);
	assert_string_equal(r.kvs[4].key, "/t/r/e");
	assert_int_equal(r.kvs[4].value_len, 0);
	assert_int_equal(r.kvs[4].mod_rev, rev);
	etcd_range_result_release(&r);

	/* a read at an older revision sees the history */
	assert_int_equal(etcd_range(g_e, "/t/r/", end, first + 1, 0, false, &r), 0);
	assert_int_equal(r.n, 2);
	etcd_range_result_release(&r);
	/* a future revision is not served */
	assert_int_equal(etcd_range(g_e, "/t/r/", end, rev + 1000, 0, false, &r), E_TIMEOUT);
	/* "" as range end: everything from the key on */
	assert_int_equal(etcd_range(g_e, "/t/r/d", "", 0, 0, true, &r), 0);
	assert_true(r.n >= 2);
	assert_string_equal(r.kvs[0].key, "/t/r/d");
	etcd_range_result_release(&r);
	free(end);
}

static void test_binary_and_large_values(void **state)
{
	static const char bin[] = { 'a', '\0', 'b', '\xff', '\n', '"' };
	size_t big = (size_t)2 << 20;
	char *v = xmalloc(big);
	struct etcd_kv kv;

	assert_int_equal(etcd_put(g_e, "/t/bin", bin, sizeof(bin), 0, NULL), 0);
	assert_int_equal(etcd_get(g_e, "/t/bin", &kv), 0);
	assert_int_equal(kv.value_len, sizeof(bin));
	assert_memory_equal(kv.value, bin, sizeof(bin));
	etcd_kv_release(&kv);

	memset(v, 'x', big);
	assert_int_equal(etcd_put(g_e, "/t/big", v, (size_t)1400 << 10, 0, NULL), 0);
	assert_int_equal(etcd_get(g_e, "/t/big", &kv), 0);
	assert_int_equal(kv.value_len, (size_t)1400 << 10);
	etcd_kv_release(&kv);
	/* over --max-request-bytes, and over the gRPC message limit */
	assert_int_equal(etcd_put(g_e, "/t/big", v, (size_t)1600 << 10, 0, NULL), E_TOO_LARGE);
	assert_int_equal(etcd_put(g_e, "/t/big", v, big, 0, NULL), E_TOO_LARGE);
	assert_int_equal(etcd_put(g_e, "", "x", 1, 0, NULL), E_BAD_REQUEST);
	free(v);
}

static void test_create_update_delete(void **state)
{
	struct etcd_kv cur = { 0 }, prev = { 0 };
	int64_t r1 = 0, r2 = 0, r3 = 0, rd = 0;

	etcd_delete(g_e, "/t/cud", 0, NULL, NULL);
	assert_int_equal(etcd_create(g_e, "/t/cud", "v1", 2, 0, &r1), 0);
	assert_true(r1 > 0);
	assert_int_equal(etcd_create(g_e, "/t/cud", "v9", 2, 0, NULL), E_ALREADY_EXISTS);

	assert_int_equal(etcd_update(g_e, "/t/cud", "v2", 2, r1, &r2, &cur), 0);
	assert_true(r2 > r1);
	assert_null(cur.key);
	/* stale revision: conflict, with the current object */
	assert_int_equal(etcd_update(g_e, "/t/cud", "v3", 2, r1, &r3, &cur), E_CONFLICT);
	assert_int_equal(r3, 0);
	assert_string_equal(cur.key, "/t/cud");
	assert_string_equal(cur.value, "v2");
	assert_int_equal(cur.mod_rev, r2);
	assert_int_equal(cur.create_rev, r1);
	assert_int_equal(cur.version, 2);
	etcd_kv_release(&cur);
	assert_int_equal(etcd_update(g_e, "/t/cud", "v3", 2, r1, NULL, NULL), E_CONFLICT);
	/* expect_rev 0: any revision, key must exist */
	assert_int_equal(etcd_update(g_e, "/t/cud", "v3", 2, 0, &r3, NULL), 0);
	assert_true(r3 > r2);
	assert_int_equal(etcd_update(g_e, "/t/cud-missing", "v", 1, 0, NULL, NULL), E_NOT_FOUND);
	assert_int_equal(etcd_update(g_e, "/t/cud-missing", "v", 1, r1, NULL, &cur), E_NOT_FOUND);
	assert_null(cur.key);

	/* conditional delete */
	assert_int_equal(etcd_delete(g_e, "/t/cud", r2, &rd, &prev), E_CONFLICT);
	assert_null(prev.key);
	assert_int_equal(etcd_delete(g_e, "/t/cud", r3, &rd, &prev), 0);
	assert_int_equal(rd, r3 + 1);
	assert_string_equal(prev.key, "/t/cud");
	assert_string_equal(prev.value, "v3");
	assert_int_equal(prev.mod_rev, r3);
	etcd_kv_release(&prev);
	assert_int_equal(etcd_delete(g_e, "/t/cud", r3, NULL, NULL), E_NOT_FOUND);
	assert_int_equal(etcd_delete(g_e, "/t/cud", 0, NULL, NULL), E_NOT_FOUND);

	/* unconditional delete */
	assert_int_equal(etcd_create(g_e, "/t/cud", "v4", 2, 0, &r1), 0);
	assert_int_equal(etcd_delete(g_e, "/t/cud", 0, &rd, &prev), 0);
	assert_int_equal(rd, r1 + 1);
	assert_string_equal(prev.value, "v4");
	etcd_kv_release(&prev);
	assert_int_equal(etcd_get(g_e, "/t/cud", &cur), E_NOT_FOUND);
}

/* etcd_write_all: puts and deletes in one txn, in order; a delete of an absent key is fine. */
static void test_write_all(void **state)
{
	(void)state;
	int64_t rev = 0;
	assert_int_equal(etcd_put(g_e, "/t/writeall/a", "1", 1, 0, NULL), 0);
	struct etcd_op ops[] = {
		{ .key = "/t/writeall/a", .del = true },
		{ .key = "/t/writeall/b", .value = "2", .value_len = 1 },
		{ .key = "/t/writeall/absent", .del = true },
	};
	assert_int_equal(etcd_write_all(g_e, ops, 3, &rev), 0);
	assert_true(rev > 0);
	struct etcd_kv kv = { 0 };
	assert_int_equal(etcd_get(g_e, "/t/writeall/a", &kv), E_NOT_FOUND);
	assert_int_equal(etcd_get(g_e, "/t/writeall/b", &kv), 0);
	assert_string_equal(kv.value, "2");
	assert_int_equal(kv.mod_rev, rev);
	etcd_kv_release(&kv);
	/* nothing to change: the current revision */
	int64_t rev2 = 0;
	assert_int_equal(etcd_write_all(g_e, &ops[2], 1, &rev2), 0);
	assert_int_equal(rev2, rev);
	/* a key twice (a put and a delete): refused, nothing written */
	ops[0].key = "/t/writeall/b";
	assert_int_equal(etcd_write_all(g_e, ops, 2, NULL), E_BAD_REQUEST);
	assert_int_equal(etcd_get(g_e, "/t/writeall/b", &kv), 0);
	etcd_kv_release(&kv);
	assert_int_equal(etcd_write_all(g_e, ops, 0, NULL), E_BAD_REQUEST);
}

/* etcd_put_all: one txn, one revision for every key; bad batches refused before sending. */
static void test_put_all(void **state)
{
	(void)state;
	struct etcd_kv kvs[ETCD_TXN_MAX_OPS + 1];
	char keys[ETCD_TXN_MAX_OPS + 1][32];
	int64_t rev = 0;
	for (size_t i = 0; i <= ETCD_TXN_MAX_OPS; i++) {
		snprintf(keys[i], sizeof(keys[i]), "/t/putall/%03zu", i);
		kvs[i] = (struct etcd_kv){ .key = keys[i], .value = "v", .value_len = 1 };
	}
	assert_int_equal(etcd_put_all(g_e, kvs, ETCD_TXN_MAX_OPS, &rev), 0);
	assert_true(rev > 0);
	struct etcd_range_result r;
	char *end = etcd_prefix_end("/t/putall/");
	assert_int_equal(etcd_range(g_e, "/t/putall/", end, 0, 0, false, &r), 0);
	assert_int_equal(r.n, ETCD_TXN_MAX_OPS);
	for (size_t i = 0; i < r.n; i++)
		assert_int_equal(r.kvs[i].mod_rev, rev);
	etcd_range_result_release(&r);
	/* overwrites what is there */
	kvs[0].value = "w";
	assert_int_equal(etcd_put_all(g_e, kvs, 2, NULL), 0);
	struct etcd_kv kv = { 0 };
	assert_int_equal(etcd_get(g_e, keys[0], &kv), 0);
	assert_string_equal(kv.value, "w");
	etcd_kv_release(&kv);
	/* too many, none, the same key twice: refused, nothing written */
	assert_int_equal(etcd_put_all(g_e, kvs, ETCD_TXN_MAX_OPS + 1, NULL), E_BAD_REQUEST);
	assert_int_equal(etcd_put_all(g_e, kvs, 0, NULL), E_BAD_REQUEST);
	kvs[1].key = keys[0];
	kvs[0].value = "x";
	assert_int_equal(etcd_put_all(g_e, kvs, 2, NULL), E_BAD_REQUEST);
	assert_int_equal(etcd_get(g_e, keys[0], &kv), 0);
	assert_string_equal(kv.value, "w");
	etcd_kv_release(&kv);
	assert_int_equal(etcd_range(g_e, "/t/putall/", end, 0, 0, true, &r), 0);
	assert_int_equal(r.n, ETCD_TXN_MAX_OPS);
	etcd_range_result_release(&r);
	free(end);
}

static void test_compaction(void **state)
{
	struct etcd_range_result r;
	int64_t r1, r2, r3;

	put_str(g_e, "/t/cmp", "1", &r1);
	put_str(g_e, "/t/cmp", "2", &r2);
	put_str(g_e, "/t/cmp", "3", &r3);
	assert_int_equal(etcd_compact(g_e, r2), 0);
	assert_int_equal(etcd_range(g_e, "/t/cmp", NULL, r1, 0, false, &r), E_GONE);
	assert_int_equal(etcd_range(g_e, "/t/cmp", NULL, r2, 0, false, &r), 0);
	assert_int_equal(r.n, 1);
	assert_string_equal(r.kvs[0].value, "2");
	etcd_range_result_release(&r);
	assert_int_equal(etcd_compact(g_e, r1), E_GONE);
}

static void test_lease(void **state)
{
	struct etcd_kv kv;
	int64_t id = 0, ttl = 0;

	assert_int_equal(etcd_lease_grant(g_e, 30, &id), 0);
	assert_true(id != 0);
	assert_int_equal(etcd_put(g_e, "/t/leased", "x", 1, id, NULL), 0);
	assert_int_equal(etcd_get(g_e, "/t/leased", &kv), 0);
	assert_int_equal(kv.lease, id);
	etcd_kv_release(&kv);
	assert_int_equal(etcd_lease_keepalive(g_e, id, &ttl), 0);
	assert_true(ttl > 25 && ttl <= 30);
	assert_int_equal(etcd_lease_revoke(g_e, id), 0);
	/* revoking deletes the attached keys */
	assert_int_equal(etcd_get(g_e, "/t/leased", &kv), E_NOT_FOUND);
	ttl = 77;
	assert_int_equal(etcd_lease_keepalive(g_e, id, &ttl), E_NOT_FOUND);
	assert_int_equal(ttl, 77);
	assert_int_equal(etcd_lease_revoke(g_e, id), E_NOT_FOUND);
	assert_int_equal(etcd_put(g_e, "/t/leased", "x", 1, id, NULL), E_NOT_FOUND);
	assert_int_equal(etcd_lease_grant(g_e, 0, &id), E_BAD_REQUEST);
}

static void test_endpoints(void **state)
{
	int port;
	char *eps;
	struct etcd *e;
	int64_t rev;

	assert_null(etcd_new("", NULL));
	assert_null(etcd_new(" , ", NULL));
	assert_null(etcd_new("127.0.0.1:2379", NULL));
	assert_null(etcd_new("http://", NULL));
	assert_null(etcd_new("http://a b", NULL));
	e = etcd_new(" http://127.0.0.1:1/ ,https://h:2", NULL);
	assert_non_null(e);
	etcd_free(e);

	/* a dead first member: requests go to the next one */
	free_ports(&port, 1);
	eps = xasprintf("http://127.0.0.1:%d,%s", port, g_single.endpoints);
	e = etcd_new(eps, NULL);
	assert_non_null(e);
	assert_true(etcd_healthy(e));
	put_str(e, "/t/ep", "1", &rev);
	assert_int_equal(etcd_current_revision(e, &rev), 0);
	put_str(e, "/t/ep", "2", NULL);
	etcd_free(e);
	free(eps);

	/* nobody answers */
	eps = xasprintf("http://127.0.0.1:%d", port);
	e = etcd_new(eps, NULL);
	assert_false(etcd_healthy(e));
	assert_int_equal(etcd_put(e, "/t/ep", "1", 1, 0, NULL), E_UNAVAILABLE);
	assert_int_equal(etcd_current_revision(e, &rev), E_UNAVAILABLE);
	etcd_free(e);
	free(eps);
}

/* ---- watch ---- */

static void test_watch_events(void **state)
{
	struct recorder r;
	struct etcd_watch *w;
	char *end = etcd_prefix_end("/t/w/");
	int64_t rev;

	rec_init(&r);
	w = etcd_watch_start(g_e, "/t/w/", end, 0, true, &rec_handlers, &r);
	assert_non_null(w);
	assert_int_equal(rec_wait(&r, REC_UPS, 1, 5000), 1);
	put_str(g_e, "/t/w/a", "1", NULL);
	put_str(g_e, "/t/w/a", "2", NULL);
	put_str(g_e, "/t/other", "x", NULL);
	assert_int_equal(etcd_delete(g_e, "/t/w/a", 0, &rev, NULL), 0);
	assert_int_equal(rec_wait(&r, REC_EVENTS, 3, 5000), 3);
	sleep_ms(100);
	etcd_watch_stop(w);
	assert_int_equal(r.n, 3);
	assert_event(&r.ev[0], ETCD_EV_PUT, "/t/w/a", "1", NULL);
	assert_event(&r.ev[1], ETCD_EV_PUT, "/t/w/a", "2", "1");
	assert_event(&r.ev[2], ETCD_EV_DELETE, "/t/w/a", "", "2");
	assert_int_equal(r.ev[2].mod_rev, rev);
	assert_true(r.ev[0].mod_rev < r.ev[1].mod_rev);
	assert_int_equal(r.downs, 0);
	assert_int_equal(r.compacted, 0);
	rec_release(&r);
	free(end);
}

/* A replay from an old revision of values big enough that etcd fragments the response. */
static void test_watch_history_fragments(void **state)
{
	size_t len = (size_t)1200 << 10;
	char *v = xmalloc(len);
	struct recorder r;
	struct etcd_watch *w;
	char *end = etcd_prefix_end("/t/h/");
	int64_t first = 0, rev;

	for (int i = 0; i < 4; i++) {
		memset(v, 'a' + i, len);
		assert_int_equal(etcd_put(g_e, i % 2 ? "/t/h/b" : "/t/h/a", v, len, 0, &rev), 0);
		if (!first)
			first = rev;
	}
	rec_init(&r);
	w = etcd_watch_start(g_e, "/t/h/", end, first, false, &rec_handlers, &r);
	assert_int_equal(rec_wait(&r, REC_EVENTS, 4, 10000), 4);
	put_str(g_e, "/t/h/c", "new", NULL);
	assert_int_equal(rec_wait(&r, REC_EVENTS, 5, 5000), 5);
	etcd_watch_stop(w);
	assert_int_equal(r.n, 5);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(r.ev[i].mod_rev, first + i);
		assert_int_equal(r.ev[i].value[0], 'a' + i);
	}
	assert_event(&r.ev[4], ETCD_EV_PUT, "/t/h/c", "new", NULL);
	assert_int_equal(r.batches_out_of_order, 0);
	rec_release(&r);
	free(end);
	free(v);
}

static void test_watch_compacted(void **state)
{
	struct recorder r;
	struct etcd_watch *w;
	int64_t r1, r2;

	put_str(g_e, "/t/wc", "1", &r1);
	put_str(g_e, "/t/wc", "2", NULL);
	put_str(g_e, "/t/wc", "3", &r2);
	assert_int_equal(etcd_compact(g_e, r2), 0);
	rec_init(&r);
	w = etcd_watch_start(g_e, "/t/wc", NULL, r1, false, &rec_handlers, &r);
	assert_int_equal(rec_wait(&r, REC_COMPACTED, 1, 5000), r2);
	/* the watch stopped itself: later writes are not reported */
	put_str(g_e, "/t/wc", "4", NULL);
	sleep_ms(300);
	assert_int_equal(rec_get(&r, REC_EVENTS), 0);
	etcd_watch_stop(w);
	rec_release(&r);
}

static void test_watch_stop_is_prompt(void **state)
{
	struct recorder r;
	struct etcd_watch *w;
	int64_t t;
	int port;
	char *eps;
	struct etcd *dead;

	rec_init(&r);
	w = etcd_watch_start(g_e, "/t/idle", NULL, 0, false, &rec_handlers, &r);
	assert_int_equal(rec_wait(&r, REC_UPS, 1, 5000), 1);
	t = mono_ms();
	etcd_watch_stop(w);
	assert_true(mono_ms() - t < 300);
	etcd_watch_stop(NULL);

	/* while retrying against a member that is down */
	free_ports(&port, 1);
	eps = xasprintf("http://127.0.0.1:%d", port);
	dead = etcd_new(eps, NULL);
	w = etcd_watch_start(dead, "/t/idle", NULL, 0, false, &rec_handlers, &r);
	assert_int_equal(rec_wait(&r, REC_DOWNS, 1, 3000), 1);
	sleep_ms(200);
	t = mono_ms();
	etcd_watch_stop(w);
	assert_true(mono_ms() - t < 300);
	assert_int_equal(r.ups, 1);
	etcd_free(dead);
	free(eps);
	rec_release(&r);
}

static void test_watch_survives_restart(void **state)
{
	struct cluster c = { 0 };
	struct recorder r;
	struct etcd_watch *w;
	struct etcd *e;
	char *end = etcd_prefix_end("/t/rs/");
	int64_t rev;

	cluster_start(&c, 1);
	e = etcd_new(c.endpoints, NULL);
	rec_init(&r);
	w = etcd_watch_start(e, "/t/rs/", end, 0, true, &rec_handlers, &r);
	assert_int_equal(rec_wait(&r, REC_UPS, 1, 5000), 1);
	put_str(e, "/t/rs/a", "1", NULL);
	put_str(e, "/t/rs/b", "1", NULL);
	assert_int_equal(rec_wait(&r, REC_EVENTS, 2, 5000), 2);

	member_kill(&c.m[0]);
	assert_int_equal(rec_wait(&r, REC_DOWNS, 1, 5000), 1);
	member_start(&c, &c.m[0]);
	cluster_wait_healthy(&c);
	assert_int_equal(rec_wait(&r, REC_UPS, 2, 5000), 2);
	put_str(e, "/t/rs/c", "1", NULL);
	assert_int_equal(etcd_delete(e, "/t/rs/a", 0, &rev, NULL), 0);
	assert_int_equal(rec_wait(&r, REC_EVENTS, 4, 5000), 4);
	sleep_ms(200);
	etcd_watch_stop(w);

	assert_int_equal(r.n, 4);
	assert_event(&r.ev[0], ETCD_EV_PUT, "/t/rs/a", "1", NULL);
	assert_event(&r.ev[1], ETCD_EV_PUT, "/t/rs/b", "1", NULL);
	assert_event(&r.ev[2], ETCD_EV_PUT, "/t/rs/c", "1", NULL);
	assert_event(&r.ev[3], ETCD_EV_DELETE, "/t/rs/a", "", "1");
	assert_int_equal(r.ev[3].mod_rev, rev);
	assert_int_equal(r.ups, 2);
	assert_int_equal(r.downs, 1);
	rec_release(&r);
	etcd_free(e);
	cluster_stop(&c);
	free(end);
}

/* gRPC connections: a member restart closes the client's HTTP/2 connection; the next write
 * must reconnect and be applied once (libcurl 7.88 needs the fallback in grpc.c for this). */
static void test_grpc_reconnect(void **state)
{
	struct cluster c = { 0 };
	struct etcd *e;
	struct etcd_kv kv;
	int64_t r1 = 0, r2 = 0;

	cluster_start(&c, 1);
	e = etcd_new(c.endpoints, NULL);
	assert_int_equal(etcd_create(e, "/t/rc/a", "1", 1, 0, &r1), 0);
	assert_int_equal(etcd_get(e, "/t/rc/a", &kv), 0);
	etcd_kv_release(&kv);
	member_kill(&c.m[0]);
	member_start(&c, &c.m[0]);
	cluster_wait_healthy(&c);
	assert_int_equal(etcd_create(e, "/t/rc/b", "2", 1, 0, &r2), 0);
	assert_int_equal(r2, r1 + 1);
	assert_int_equal(etcd_put(e, "/t/rc/a", "3", 1, 0, &r2), 0);
	assert_int_equal(r2, r1 + 2);
	assert_int_equal(etcd_get(e, "/t/rc/b", &kv), 0);
	assert_string_equal(kv.value, "2");
	assert_int_equal(kv.version, 1);
	etcd_kv_release(&kv);
	etcd_free(e);
	cluster_stop(&c);
}

/* Responses of several MiB on one reused HTTP/2 connection. With libcurl 7.88's default buffer
 * each of these ranges stalled for seconds (the connection window ran dry); the bound is loose
 * enough for a busy machine and far below the stalls. */
static void test_large_ranges(void **state)
{
	char *v = xmalloc(1024);
	struct buf key = BUF_INIT;
	char *end = etcd_prefix_end("/t/lr/");
	int64_t start;

	memset(v, 'v', 1024);
	for (int i = 0; i < 3000; i++) {
		buf_reset(&key);
		buf_addf(&key, "/t/lr/%05d", i);
		assert_int_equal(etcd_put(g_e, key.ptr, v, 1024, 0, NULL), 0);
	}
	start = mono_ms();
	for (int i = 0; i < 5; i++) {
		struct etcd_range_result r;
		assert_int_equal(etcd_range(g_e, "/t/lr/", end, 0, 0, false, &r), 0);
		assert_int_equal(r.n, 3000);
		assert_int_equal(r.count, 3000);
		assert_int_equal(r.kvs[2999].value_len, 1024);
		etcd_range_result_release(&r);
	}
	assert_true(mono_ms() - start < 8000);
	buf_release(&key);
	free(end);
	free(v);
}

/* ---- fail-over ---- */

/* The index of a member that is not the leader (asks /v3/maintenance/status directly). */
static size_t pick_follower(struct cluster *c)
{
	for (size_t i = 0; i < c->n; i++) {
		CURL *h = curl_easy_init();
		struct buf url = BUF_INIT;
		FILE *mem;
		char *out = NULL;
		size_t out_len = 0;
		json_t *j;
		const char *leader, *me;
		bool follower;

		buf_addf(&url, "%s/v3/maintenance/status", c->m[i].client_url);
		mem = open_memstream(&out, &out_len);
		curl_easy_setopt(h, CURLOPT_URL, url.ptr);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, "{}");
		curl_easy_setopt(h, CURLOPT_WRITEDATA, mem);
		assert_int_equal(curl_easy_perform(h), CURLE_OK);
		fclose(mem);
		j = json_loads(out, 0, NULL);
		assert_non_null(j);
		leader = json_str(j, "leader");
		me = json_path_str(j, "header.member_id");
		assert_non_null(leader);
		assert_non_null(me);
		follower = strcmp(leader, me) != 0;
		json_decref(j);
		free(out);
		buf_release(&url);
		curl_easy_cleanup(h);
		if (follower)
			return i;
	}
	fail_msg("no follower found");
	return 0;
}

static void test_failover(void **state)
{
	struct cluster c = { 0 };
	struct recorder r;
	struct etcd_watch *w;
	struct etcd *e;
	struct etcd_kv kv;
	struct buf eps = BUF_INIT;
	size_t f;
	int64_t rev;

	cluster_start(&c, 3);
	f = pick_follower(&c);
	/* the follower first, so that the client prefers it */
	buf_adds(&eps, c.m[f].client_url);
	for (size_t i = 0; i < c.n; i++)
		if (i != f)
			buf_addf(&eps, ",%s", c.m[i].client_url);
	e = etcd_new(eps.ptr, NULL);
	rec_init(&r);
	w = etcd_watch_start(e, "/t/fo/", "/t/fo0", 0, false, &rec_handlers, &r);
	assert_int_equal(rec_wait(&r, REC_UPS, 1, 5000), 1);
	put_str(e, "/t/fo/a", "1", NULL);
	assert_int_equal(rec_wait(&r, REC_EVENTS, 1, 5000), 1);

	member_kill(&c.m[f]);
	put_str(e, "/t/fo/b", "2", &rev);
	assert_int_equal(etcd_get(e, "/t/fo/a", &kv), 0);
	assert_string_equal(kv.value, "1");
	etcd_kv_release(&kv);
	assert_int_equal(etcd_create(e, "/t/fo/c", "3", 1, 0, NULL), 0);
	assert_true(etcd_healthy(e));

	/* the watch moves to another member and resumes after the last event it saw */
	assert_int_equal(rec_wait(&r, REC_EVENTS, 3, 8000), 3);
	etcd_watch_stop(w);
	assert_event(&r.ev[0], ETCD_EV_PUT, "/t/fo/a", "1", NULL);
	assert_event(&r.ev[1], ETCD_EV_PUT, "/t/fo/b", "2", NULL);
	assert_int_equal(r.ev[1].mod_rev, rev);
	assert_event(&r.ev[2], ETCD_EV_PUT, "/t/fo/c", "3", NULL);
	assert_int_equal(r.n, 3);
	assert_true(r.downs >= 1);
	assert_true(r.ups >= 2);
	rec_release(&r);
	etcd_free(e);
	buf_release(&eps);
	cluster_stop(&c);
}


/* Group commit: concurrent creates and compare-and-swap updates from many threads share txns
 * and still get exactly the per-key outcomes of one-at-a-time writes. */
#define GC_THREADS 16
#define GC_KEYS 100
#define GC_INCS 30

static atomic_int gc_dup_wins, gc_dup_exists;

static void *gc_worker(void *arg)
{
	long id = (long)arg;
	char key[64];
	for (int i = 0; i < GC_KEYS; i++) {
		snprintf(key, sizeof(key), "/gc/t%ld/k%d", id, i);
		int64_t rev = 0;
		if (etcd_create(g_e, key, "v", 1, 0, &rev) != 0 || rev <= 0)
			return (void *)1;
	}
	int rc = etcd_create(g_e, "/gc/shared", "x", 1, 0, NULL);
	if (rc == 0)
		atomic_fetch_add(&gc_dup_wins, 1);
	else if (rc == E_ALREADY_EXISTS)
		atomic_fetch_add(&gc_dup_exists, 1);
	for (int i = 0; i < GC_INCS; i++) {
		for (;;) {
			struct etcd_kv kv = { 0 };
			if (etcd_get(g_e, "/gc/counter", &kv) != 0)
				return (void *)2;
			long long v = 0;
			parse_int64(kv.value, &v);
			char val[32];
			int n = snprintf(val, sizeof(val), "%lld", v + 1);
			int64_t mod = kv.mod_rev;
			etcd_kv_release(&kv);
			rc = etcd_update(g_e, "/gc/counter", val, (size_t)n, mod, NULL, NULL);
			if (rc == 0)
				break;
			if (rc != E_CONFLICT)
				return (void *)3;
		}
	}
	return NULL;
}

static void test_group_commit(void **state)
{
	pthread_t t[GC_THREADS];
	put_str(g_e, "/gc/counter", "0", NULL);
	for (long i = 0; i < GC_THREADS; i++)
		pthread_create(&t[i], NULL, gc_worker, (void *)i);
	for (int i = 0; i < GC_THREADS; i++) {
		void *ret;
		pthread_join(t[i], &ret);
		assert_null(ret);
	}
	assert_int_equal(atomic_load(&gc_dup_wins), 1);
	assert_int_equal(atomic_load(&gc_dup_exists), GC_THREADS - 1);
	struct etcd_range_result r = { 0 };
	char *end = etcd_prefix_end("/gc/t");
	assert_int_equal(etcd_range(g_e, "/gc/t", end, 0, 0, true, &r), 0);
	assert_int_equal(r.count, GC_THREADS * GC_KEYS);
	etcd_range_result_release(&r);
	free(end);
	struct etcd_kv kv = { 0 };
	assert_int_equal(etcd_get(g_e, "/gc/counter", &kv), 0);
	char want[32];
	snprintf(want, sizeof(want), "%d", GC_THREADS * GC_INCS);
	assert_string_equal(kv.value, want);
	etcd_kv_release(&kv);
	/* a stale update and a create of an existing key still fail alone */
	assert_int_equal(etcd_update(g_e, "/gc/counter", "z", 1, 1, NULL, NULL), E_CONFLICT);
	assert_int_equal(etcd_update(g_e, "/gc/none", "z", 1, 5, NULL, NULL), E_NOT_FOUND);
	assert_int_equal(etcd_create(g_e, "/gc/shared", "y", 1, 0, NULL), E_ALREADY_EXISTS);
}

/* Writes that come one at a time: with a linger they share transactions. Eight writers start
 * 2 ms apart; each waits for its write, so without a linger most go alone. */
#define LINGER_WRITERS 8
static struct etcd *linger_e;
static long linger_run;

static void *linger_writer(void *arg)
{
	long i = (long)arg;
	usleep((useconds_t)(i * 2000));
	char key[48];
	snprintf(key, sizeof(key), "/linger/%ld/%ld", linger_run, i);
	return (void *)(intptr_t)etcd_create(linger_e, key, "v", 1, 0, NULL);
}

static unsigned long long linger_txns(long linger_ms)
{
	linger_e = etcd_new(g_single.endpoints, &(struct etcd_options){ .write_linger_ms = linger_ms });
	assert_non_null(linger_e);
	linger_run = linger_ms;
	pthread_t t[LINGER_WRITERS];
	int64_t t0 = mono_ms();
	for (long i = 0; i < LINGER_WRITERS; i++)
		pthread_create(&t[i], NULL, linger_writer, (void *)i);
	for (int i = 0; i < LINGER_WRITERS; i++) {
		void *ret;
		pthread_join(t[i], &ret);
		assert_int_equal((intptr_t)ret, 0);
	}
	unsigned long long txns, ops;
	etcd_write_stats(linger_e, &txns, &ops);
	assert_int_equal(ops, LINGER_WRITERS);
	if (linger_ms)
		assert_true(mono_ms() - t0 >= linger_ms); /* the first write waited */
	etcd_free(linger_e);
	return txns;
}

static void test_group_commit_linger(void **state)
{
	/* 8 writes within 14 ms, a 100 ms linger: one txn, two at most (linger_txns also checks
	 * that the first write waited) */
	assert_true(linger_txns(100) <= 2);
}

/* Heartbeats (keys under a lazy prefix): they wait for each other, up to lazy_batch or the
 * lazy linger; any other write sends them at once. */
struct hb_write {
	const char *key;
	useconds_t delay_us;
	int64_t took_ms;
	int rc;
};

static void *hb_writer(void *arg)
{
	struct hb_write *w = arg;
	usleep(w->delay_us);
	int64_t t0 = mono_ms();
	w->rc = etcd_create(linger_e, w->key, "v", 1, 0, NULL);
	w->took_ms = mono_ms() - t0;
	return NULL;
}

/* Runs the writes (at most 8) at once on a fresh client; returns the txns they took. */
static unsigned long long hb_run(struct hb_write *w, size_t n, long lazy_ms, size_t lazy_batch)
{
	linger_e = etcd_new(g_single.endpoints,
			    &(struct etcd_options){ .lazy_linger_ms = lazy_ms, .lazy_batch = lazy_batch });
	assert_non_null(linger_e);
	etcd_lazy_prefix_add(linger_e, "/hb/lease/");
	pthread_t t[8];
	assert_true(n <= 8);
	for (size_t i = 0; i < n; i++)
		pthread_create(&t[i], NULL, hb_writer, &w[i]);
	for (size_t i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(w[i].rc, 0);
	}
	unsigned long long txns, ops;
	etcd_write_stats(linger_e, &txns, &ops);
	assert_int_equal(ops, n);
	etcd_free(linger_e);
	return txns;
}

static void test_group_commit_heartbeats(void **state)
{
	(void)state;
	/* a lone heartbeat waits the whole linger */
	struct hb_write lone[] = { { "/hb/lease/lone", 0, 0, -1 } };
	assert_int_equal(hb_run(lone, 1, 150, 4), 1);
	assert_true(lone[0].took_ms >= 150);
	/* four of them, 2 ms apart, with a batch of four: one txn, sent when the fourth came */
	struct hb_write four[] = { { "/hb/lease/a", 0, 0, -1 },
				   { "/hb/lease/b", 2000, 0, -1 },
				   { "/hb/lease/c", 4000, 0, -1 },
				   { "/hb/lease/d", 6000, 0, -1 } };
	assert_int_equal(hb_run(four, 4, 5000, 4), 1);
	assert_true(four[0].took_ms < 2500);
	/* a heartbeat, then a write of another key: that one sends both at once */
	struct hb_write mixed[] = { { "/hb/lease/m", 0, 0, -1 }, { "/hb/pod/m", 20000, 0, -1 } };
	assert_int_equal(hb_run(mixed, 2, 5000, 8), 1);
	assert_true(mixed[0].took_ms < 2500 && mixed[1].took_ms < 2500);
	/* with no lazy linger a key under the prefix is an ordinary write: no wait */
	struct hb_write off[] = { { "/hb/lease/off", 0, 0, -1 } };
	assert_int_equal(hb_run(off, 1, 0, 4), 1);
	assert_true(off[0].took_ms < 2500);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_get_range),
		cmocka_unit_test(test_binary_and_large_values),
		cmocka_unit_test(test_create_update_delete),
		cmocka_unit_test(test_put_all),
		cmocka_unit_test(test_write_all),
		cmocka_unit_test(test_compaction),
		cmocka_unit_test(test_lease),
		cmocka_unit_test(test_endpoints),
		cmocka_unit_test(test_watch_events),
		cmocka_unit_test(test_watch_history_fragments),
		cmocka_unit_test(test_watch_compacted),
		cmocka_unit_test(test_watch_stop_is_prompt),
		cmocka_unit_test(test_watch_survives_restart),
		cmocka_unit_test(test_grpc_reconnect),
		cmocka_unit_test(test_large_ranges),
		cmocka_unit_test(test_failover),
		cmocka_unit_test(test_group_commit),
		cmocka_unit_test(test_group_commit_linger),
		cmocka_unit_test(test_group_commit_heartbeats),
	};
	if (access("/usr/bin/etcd", X_OK) != 0) {
		fprintf(stderr, "/usr/bin/etcd not installed\n");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
