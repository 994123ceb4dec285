/* The registry's load path against an in-process fake of etcd's range (sorted keys, revisions,
 * limit/count/more as etcd 3.4 answers them): pages at one revision, every key exactly once,
 * restart on a compacted snapshot, errors keep the old map; and the tenant record decoder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "gw.h"
#include "ursa/errors.h"
#include "ursa/etcd.h"
#include "ursa/xalloc.h"

#define PREFIX "/ursa/gateway"

struct fkv {
	char *key, *value;
	int64_t rev;
};

struct fake {
	struct fkv *kvs;
	size_t n, cap;
	int64_t rev;          /* current revision */
	int64_t snap;         /* revision pages after the first must ask for (0: not checked) */
	long calls;
	long gone_at_call;    /* answer E_GONE on this call (0: never) */
	long fail_from_call;  /* answer E_UNAVAILABLE from this call on (0: never) */
	long put_after_call;  /* write a new tenant after this call (0: never) */
	bool bad_revision;    /* a page after the first asked for another revision */
};

static int cmp_fkv(const void *a, const void *b)
{
	return strcmp(((const struct fkv *)a)->key, ((const struct fkv *)b)->key);
}

static void fake_put(struct fake *f, const char *key, const char *value)
{
	f->rev++;
	for (size_t i = 0; i < f->n; i++) {
		if (strcmp(f->kvs[i].key, key) == 0) {
			free(f->kvs[i].value);
			f->kvs[i].value = xstrdup(value);
			f->kvs[i].rev = f->rev;
			return;
		}
	}
	if (f->n == f->cap) {
		f->cap = f->cap ? f->cap * 2 : 64;
		f->kvs = xrealloc(f->kvs, f->cap * sizeof(*f->kvs));
	}
	f->kvs[f->n++] = (struct fkv){ xstrdup(key), xstrdup(value), f->rev };
	qsort(f->kvs, f->n, sizeof(*f->kvs), cmp_fkv);
}

static void fake_free(struct fake *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->kvs[i].key);
		free(f->kvs[i].value);
	}
	free(f->kvs);
}

static void put_tenant(struct fake *f, const char *name, const char *part)
{
	char *key = xasprintf(PREFIX "/tenants/%s", name);
	char *val = xasprintf("{\"partition\":\"%s\",\"state\":\"ready\",\"since\":1}", part);
	fake_put(f, key, val);
	free(key);
	free(val);
}

static void put_partition(struct fake *f, const char *id)
{
	char *key = xasprintf(PREFIX "/partitions/%s", id);
	fake_put(f, key, "{\"kind\":\"tp\",\"endpoints\":[\"https://127.0.0.1:1\"]}");
	free(key);
}

/* etcd 3.4's range: keys in [key, end) visible at rev (keys written later are not; the fake
 * keeps no history, so a later write of an existing key would be wrong, and tests avoid it). */
static int fake_range(void *ud, const char *key, const char *end, int64_t rev, int64_t limit,
		      struct etcd_range_result *ret)
{
	struct fake *f = ud;
	f->calls++;
	memset(ret, 0, sizeof(*ret));
	if (f->fail_from_call && f->calls >= f->fail_from_call)
		return E_UNAVAILABLE;
	if (f->gone_at_call && f->calls == f->gone_at_call) {
		f->snap = 0;
		return E_GONE;
	}
	if (rev == 0)
		f->snap = f->rev;
	else if (rev != f->snap)
		f->bad_revision = true;
	int64_t at = rev ? rev : f->rev;
	ret->kvs = xcalloc(f->n + 1, sizeof(*ret->kvs));
	for (size_t i = 0; i < f->n; i++) {
		const struct fkv *kv = &f->kvs[i];
		if (strcmp(kv->key, key) < 0 || (*end && strcmp(kv->key, end) >= 0) || kv->rev > at)
			continue;
		ret->count++;
		if (limit && (int64_t)ret->n >= limit) {
			ret->more = true;
			continue;
		}
		ret->kvs[ret->n++] = (struct etcd_kv){ .key = xstrdup(kv->key), .value = xstrdup(kv->value),
						       .value_len = strlen(kv->value), .mod_rev = kv->rev };
	}
	ret->revision = f->rev;
	if (f->put_after_call && f->calls == f->put_after_call)
		put_tenant(f, "zz-late", "tp-1");
	return 0;
}

static struct registry *new_reg(struct fake *f, int64_t page)
{
	struct registry *r = registry_new(NULL, PREFIX);
	registry_set_range(r, fake_range, f, page);
	return r;
}

static void assert_tenant_on(struct registry *r, const char *name, const char *part)
{
	struct partition *p = registry_tenant_partition(r, name);
	assert_non_null(p);
	assert_string_equal(p->id, part);
	partition_unref(p);
}

static void test_paged_load_reads_every_key_once(void **state)
{
	(void)state;
	struct fake f = { 0 };
	put_partition(&f, "tp-1");
	put_partition(&f, "tp-2");
	/* a draining partition takes no new tenant, however empty */
	fake_put(&f, PREFIX "/moves/t0001", "{\"phase\":\"copying\"}"); /* a move in progress */
	fake_put(&f, PREFIX "/partitions/tp-3", "{\"kind\":\"tp\",\"endpoints\":[\"https://127.0.0.1:1\"],\"draining\":true}");
	for (int i = 0; i < 1000; i++) {
		char name[16];
		snprintf(name, sizeof(name), "t%04d", i);
		put_tenant(&f, name, i % 3 ? "tp-1" : "tp-2");
	}
	struct registry *r = new_reg(&f, 7);
	int64_t rev = 0;
	assert_int_equal(registry_load(r, &rev), 0);
	assert_int_equal(rev, f.rev);
	assert_false(f.bad_revision);
	struct registry_load_stats st;
	registry_load_stats(r, &st);
	assert_int_equal(st.keys, 1004); /* no key applied twice */
	assert_int_equal(st.attempts, 1);
	assert_true(st.pages >= 1000 / 7);
	assert_int_equal(registry_tenant_count(r), 1000);
	assert_tenant_on(r, "t0000", "tp-2");
	assert_tenant_on(r, "t0001", "tp-1");
	assert_tenant_on(r, "t0999", "tp-2");
	assert_null(registry_tenant_partition(r, "t1000"));
	assert_true(registry_tenant_moving(r, "t0001"));
	assert_false(registry_tenant_moving(r, "t0002"));
	/* tp-1 has 666 tenants, tp-2 334: the emptier one is picked. */
	struct partition *p = registry_pick_tp(r);
	assert_string_equal(p->id, "tp-2");
	partition_unref(p);
	struct tenant_rec rec;
	assert_int_equal(registry_tenant(r, "t0001", &rec), 0);
	assert_string_equal(rec.partition, "tp-1");
	assert_false(rec.pending);
	assert_true(rec.mod_rev > 0);
	tenant_rec_release(&rec);
	registry_free(r);
	fake_free(&f);
}

/* Names of every length and shape, so the page bounds cut at every depth. */
static void test_irregular_keys(void **state)
{
	(void)state;
	struct fake f = { 0 };
	put_partition(&f, "tp-1");
	static const char alpha[] = "ab-9z";
	size_t made = 0;
	uint32_t x = 12345;
	struct strmap seen;
	strmap_init(&seen);
	for (int i = 0; i < 600; i++) {
		char name[24];
		x = x * 1103515245 + 12345;
		size_t len = 1 + (x >> 16) % 12;
		for (size_t k = 0; k < len; k++) {
			x = x * 1103515245 + 12345;
			name[k] = alpha[(x >> 16) % 5];
		}
		name[len] = '\0';
		bool created;
		strmap_put(&seen, name, &created);
		if (created) {
			put_tenant(&f, name, "tp-1");
			made++;
		}
	}
	for (int64_t page = 2; page <= 40; page += 19) {
		struct registry *r = new_reg(&f, page);
		int64_t rev;
		assert_int_equal(registry_load(r, &rev), 0);
		struct registry_load_stats st;
		registry_load_stats(r, &st);
		assert_int_equal(st.keys, (long)made + 1);
		assert_int_equal(registry_tenant_count(r), made);
		size_t it;
		for (struct strmap_ent *e = strmap_next(&seen, NULL, &it); e; e = strmap_next(&seen, e, &it))
			assert_tenant_on(r, e->key, "tp-1");
		registry_free(r);
	}
	strmap_release(&seen, NULL);
	fake_free(&f);
}

static void test_snapshot_excludes_later_writes(void **state)
{
	(void)state;
	struct fake f = { 0 };
	put_partition(&f, "tp-1");
	for (int i = 0; i < 50; i++) {
		char name[16];
		snprintf(name, sizeof(name), "t%02d", i);
		put_tenant(&f, name, "tp-1");
	}
	int64_t before = f.rev;
	f.put_after_call = 1; /* a tenant written while the load pages */
	struct registry *r = new_reg(&f, 5);
	int64_t rev;
	assert_int_equal(registry_load(r, &rev), 0);
	assert_int_equal(rev, before); /* the watch starts at before + 1 and sees the late write */
	assert_false(f.bad_revision);
	assert_int_equal(registry_tenant_count(r), 50);
	assert_null(registry_tenant_partition(r, "zz-late"));
	registry_free(r);
	fake_free(&f);
}

static void test_compacted_snapshot_starts_over(void **state)
{
	(void)state;
	struct fake f = { 0 };
	put_partition(&f, "tp-1");
	for (int i = 0; i < 40; i++) {
		char name[16];
		snprintf(name, sizeof(name), "t%02d", i);
		put_tenant(&f, name, "tp-1");
	}
	f.gone_at_call = 3;
	struct registry *r = new_reg(&f, 4);
	int64_t rev;
	assert_int_equal(registry_load(r, &rev), 0);
	struct registry_load_stats st;
	registry_load_stats(r, &st);
	assert_int_equal(st.attempts, 2);
	assert_int_equal(registry_tenant_count(r), 40);
	assert_false(f.bad_revision);
	registry_free(r);
	fake_free(&f);
}

static void test_failed_reload_keeps_map(void **state)
{
	(void)state;
	struct fake f = { 0 };
	put_partition(&f, "tp-1");
	for (int i = 0; i < 30; i++) {
		char name[16];
		snprintf(name, sizeof(name), "t%02d", i);
		put_tenant(&f, name, "tp-1");
	}
	struct registry *r = new_reg(&f, 4);
	int64_t rev;
	assert_int_equal(registry_load(r, &rev), 0);
	f.fail_from_call = f.calls + 3; /* the second load fails part way */
	assert_int_equal(registry_load(r, &rev), E_UNAVAILABLE);
	assert_int_equal(registry_tenant_count(r), 30);
	assert_tenant_on(r, "t29", "tp-1");
	/* and the first page failing too */
	f.fail_from_call = f.calls + 1;
	assert_int_equal(registry_load(r, &rev), E_UNAVAILABLE);
	assert_int_equal(registry_tenant_count(r), 30);
	registry_free(r);
	fake_free(&f);
}

static void test_partition_resolved_after_tenants(void **state)
{
	(void)state;
	/* Tenants naming a partition that is not registered resolve to nothing, then to it once a
	 * load sees the partition. */
	struct fake f = { 0 };
	put_tenant(&f, "a", "tp-9");
	struct registry *r = new_reg(&f, 10);
	int64_t rev;
	assert_int_equal(registry_load(r, &rev), 0);
	assert_int_equal(registry_tenant_count(r), 1);
	assert_null(registry_tenant_partition(r, "a"));
	put_partition(&f, "tp-9");
	assert_int_equal(registry_load(r, &rev), 0);
	assert_tenant_on(r, "a", "tp-9");
	/* "system" falls back to the first tenant partition */
	assert_tenant_on(r, "system", "tp-9");
	registry_free(r);
	fake_free(&f);
}

static void test_tenant_val_parse(void **state)
{
	(void)state;
	static const struct {
		const char *json;
		int rc;
		const char *part;
		bool pending;
		int64_t since;
	} cases[] = {
		{ "{\"partition\":\"tp-1\",\"state\":\"ready\",\"since\":1700000000000}", 0, "tp-1", false, 1700000000000 },
		{ " { \"partition\" : \"tp-2\" , \"state\" : \"pending\" , \"since\" : 5 } ", 0, "tp-2", true, 5 },
		{ "{\"since\":-3,\"partition\":\"x\"}", 0, "x", false, -3 },
		{ "{\"partition\":\"tp\\u002d1\",\"state\":\"pending\"}", 0, "tp-1", true, 0 },  /* escapes: jansson */
		{ "{\"partition\":\"tp-1\",\"extra\":{\"a\":[1,2]},\"since\":7}", 0, "tp-1", false, 7 }, /* nesting */
		{ "{\"partition\":\"tp-1\",\"since\":1.5}", 0, "tp-1", false, 0 },
		{ "{\"partition\":\"tp-1\",\"state\":null,\"since\":\"9\"}", 0, "tp-1", false, 0 },
		{ "{\"partition\":\"a\",\"partition\":\"b\"}", -1, NULL, false, 0 }, /* repeated key: refused */
		{ "{\"partition\":\"\"}", -1, NULL, false, 0 },
		{ "{\"partition\":5}", -1, NULL, false, 0 },
		{ "{\"state\":\"ready\"}", -1, NULL, false, 0 },
		{ "{}", -1, NULL, false, 0 },
		{ "", -1, NULL, false, 0 },
		{ "[\"partition\",\"tp-1\"]", -1, NULL, false, 0 },
		{ "{\"partition\":\"tp-1\"", -1, NULL, false, 0 },
		{ "{\"partition\":\"tp-1\"} x", -1, NULL, false, 0 },
		{ "{\"partition\":\"tp-1\",}", -1, NULL, false, 0 },
		{ "{\"partition\":\"tp-1\",\"since\":12abc}", -1, NULL, false, 0 },
		{ "{\"partition\":\"a\\u0000b\"}", -1, NULL, false, 0 }, /* an id with a NUL */
		{ "{\"partition\":\"tp-1\",\"since\":012}", -1, NULL, false, 0 },  /* not JSON */
		{ "{\"partition\":\"tp-1\",\"since\":0}", 0, "tp-1", false, 0 },
		{ "{\"partition\":\"t\xc3\xa9\"}", 0, "t\xc3\xa9", false, 0 },       /* UTF-8: jansson */
		{ "{\"partition\":\"t\xff\"}", -1, NULL, false, 0 },               /* not UTF-8 */
	};
	struct buf scratch = BUF_INIT;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tenant_val v;
		int rc = tenant_val_parse(cases[i].json, strlen(cases[i].json), &v, &scratch);
		if (rc != cases[i].rc)
			fail_msg("case %zu (%s): rc %d, want %d", i, cases[i].json, rc, cases[i].rc);
		if (rc)
			continue;
		char *part = xstrndup(v.partition.ptr, v.partition.len);
		if (strcmp(part, cases[i].part) != 0 || v.pending != cases[i].pending || v.since_ms != cases[i].since)
			fail_msg("case %zu (%s): got %s %d %lld", i, cases[i].json, part, v.pending, (long long)v.since_ms);
		free(part);
	}
	/* an id over 253 bytes */
	struct buf b = BUF_INIT;
	buf_adds(&b, "{\"partition\":\"");
	for (int i = 0; i < 300; i++)
		buf_addch(&b, 'a');
	buf_adds(&b, "\"}");
	struct tenant_val v;
	assert_int_equal(tenant_val_parse(b.ptr, b.len, &v, &scratch), -1);
	buf_release(&b);
	buf_release(&scratch);
}

static void test_tenant_val_moved(void **state)
{
	(void)state;
	static const struct {
		const char *json;
		int rc;
		const char *part;
		bool has_moved;
		const char *from, *move;
		int64_t from_rev, to_rev;
	} cases[] = {
		/* what ursactl writes at the switch: the fast path */
		{ "{\"partition\":\"tp-2\",\"state\":\"ready\",\"since\":5,\"moved\":{\"from\":\"tp-1\",\"fromRevision\":812,"
		  "\"toRevision\":97,\"move\":\"m-1\"}}", 0, "tp-2", true, "tp-1", "m-1", 812, 97 },
		{ " {\"moved\" : { \"toRevision\" : 3 , \"from\" : \"tp-1\" } , \"partition\":\"tp-2\"} ", 0, "tp-2", true,
		  "tp-1", NULL, 0, 3 },
		/* escapes: jansson, same result */
		{ "{\"partition\":\"tp\\u002d2\",\"moved\":{\"from\":\"tp\\u002d1\",\"fromRevision\":8,\"toRevision\":9,"
		  "\"move\":\"m\\u002d1\"}}", 0, "tp-2", true, "tp-1", "m-1", 8, 9 },
		/* a "moved" the gateway cannot use is ignored; the placement stands */
		{ "{\"partition\":\"tp-2\",\"moved\":{\"from\":\"tp-1\"}}", 0, "tp-2", false, NULL, NULL, 0, 0 },
		{ "{\"partition\":\"tp-2\",\"moved\":{\"from\":\"\",\"toRevision\":4}}", 0, "tp-2", false, NULL, NULL, 0, 0 },
		{ "{\"partition\":\"tp-2\",\"moved\":{\"from\":5,\"toRevision\":4}}", 0, "tp-2", false, NULL, NULL, 0, 0 },
		{ "{\"partition\":\"tp-2\",\"moved\":{\"from\":\"tp-1\",\"toRevision\":-4}}", 0, "tp-2", false, NULL, NULL, 0, 0 },
		{ "{\"partition\":\"tp-2\",\"moved\":null}", 0, "tp-2", false, NULL, NULL, 0, 0 },
		{ "{\"partition\":\"tp-2\",\"moved\":[1]}", 0, "tp-2", false, NULL, NULL, 0, 0 },
		{ "{\"partition\":\"tp-2\",\"moved\":{\"from\":\"tp-1\",\"toRevision\":4,\"x\":{\"y\":1}}}", 0, "tp-2", true,
		  "tp-1", NULL, 0, 4 }, /* deeper nesting: jansson */
		{ "{\"partition\":\"tp-2\",\"moved\":{\"from\":\"a\\u0000b\",\"toRevision\":4}}", 0, "tp-2", false, NULL, NULL, 0,
		  0 },
		{ "{\"partition\":\"tp-2\",\"moved\":{\"from\":\"tp-1\",\"toRevision\":4}", -1, NULL, false, NULL, NULL, 0, 0 },
		{ "{\"moved\":{\"from\":\"tp-1\",\"toRevision\":4}}", -1, NULL, false, NULL, NULL, 0, 0 },
		/* no "moved": as before */
		{ "{\"partition\":\"tp-1\",\"state\":\"ready\",\"since\":1}", 0, "tp-1", false, NULL, NULL, 0, 0 },
	};
	struct buf scratch = BUF_INIT;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tenant_val v;
		int rc = tenant_val_parse(cases[i].json, strlen(cases[i].json), &v, &scratch);
		if (rc != cases[i].rc)
			fail_msg("case %zu (%s): rc %d, want %d", i, cases[i].json, rc, cases[i].rc);
		if (rc)
			continue;
		char *part = sv_dup(v.partition), *from = sv_dup(v.moved_from), *move = sv_dup(v.move_id);
		bool ok = strcmp(part, cases[i].part) == 0 && v.has_moved == cases[i].has_moved &&
			  strcmp(from, cases[i].from ? cases[i].from : "") == 0 &&
			  strcmp(move, cases[i].move ? cases[i].move : "") == 0 && v.moved_from_rev == cases[i].from_rev &&
			  v.moved_to_rev == cases[i].to_rev;
		if (!ok)
			fail_msg("case %zu (%s): got %s moved=%d from=%s move=%s %lld -> %lld", i, cases[i].json, part,
				 v.has_moved, from, move, (long long)v.moved_from_rev, (long long)v.moved_to_rev);
		free(part);
		free(from);
		free(move);
	}
	buf_release(&scratch);
}

static int changes;
static void on_change(void *ud, const char *tenant)
{
	(void)ud;
	(void)tenant;
	changes++;
}

static void test_registry_keeps_moved(void **state)
{
	(void)state;
	struct fake f = { 0 };
	put_partition(&f, "tp-1");
	put_partition(&f, "tp-2");
	put_tenant(&f, "plain", "tp-1");
	fake_put(&f, PREFIX "/tenants/acme",
		 "{\"partition\":\"tp-2\",\"state\":\"ready\",\"since\":5,\"moved\":{\"from\":\"tp-1\",\"fromRevision\":812,"
		 "\"toRevision\":97,\"move\":\"m-1\"}}");
	struct registry *r = new_reg(&f, 10);
	registry_on_tenant_change(r, on_change, NULL);
	int64_t rev;
	changes = 0;
	assert_int_equal(registry_load(r, &rev), 0);
	assert_int_equal(changes, 1); /* a reload: every tenant may have changed */
	struct tenant_rec t;
	assert_int_equal(registry_tenant(r, "acme", &t), 0);
	assert_string_equal(t.partition, "tp-2");
	assert_non_null(t.moved.from);
	assert_string_equal(t.moved.from, "tp-1");
	assert_string_equal(t.moved.move, "m-1");
	assert_int_equal(t.moved.from_rev, 812);
	assert_int_equal(t.moved.to_rev, 97);
	tenant_rec_release(&t);
	assert_null(t.moved.from);
	assert_int_equal(registry_tenant(r, "plain", &t), 0);
	assert_null(t.moved.from);
	tenant_rec_release(&t);
	assert_tenant_on(r, "acme", "tp-2");
	/* rewritten without "moved" (a later placement): the old one goes */
	fake_put(&f, PREFIX "/tenants/acme", "{\"partition\":\"tp-2\",\"state\":\"ready\",\"since\":6}");
	assert_int_equal(registry_load(r, &rev), 0);
	assert_int_equal(registry_tenant(r, "acme", &t), 0);
	assert_null(t.moved.from);
	tenant_rec_release(&t);
	registry_free(r);
	fake_free(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paged_load_reads_every_key_once),
		cmocka_unit_test(test_irregular_keys),
		cmocka_unit_test(test_snapshot_excludes_later_writes),
		cmocka_unit_test(test_compacted_snapshot_starts_over),
		cmocka_unit_test(test_failed_reload_keeps_map),
		cmocka_unit_test(test_partition_resolved_after_tenants),
		cmocka_unit_test(test_tenant_val_parse),
		cmocka_unit_test(test_tenant_val_moved),
		cmocka_unit_test(test_registry_keeps_moved),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
