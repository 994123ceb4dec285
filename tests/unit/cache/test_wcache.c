/* Watch cache behaviour on a detached cache fed with lists and events directly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <time.h>
#include <jansson.h>
#include "cache_testlib.h"
#include "cache/wcache_types.h"
#include "ursa/jsonutil.h"
#include "ursa/timeutil.h"
#include "ursa/errors.h"
#include "ursa/selector.h"

/* The standard data set: key order is t1/a/p1 t1/a/p3 t1/ab/p9 t1/b/p2 t10/a/p0 t2/a/p1. */
static const struct {
	const char *t, *ns, *name, *app, *node, *phase;
} seed[] = {
	{ "t1", "a", "p3", "x", "n1", "Running" },  { "t1", "a", "p1", "y", "n2", "Pending" },
	{ "t1", "b", "p2", "x", "", "Pending" },    { "t2", "a", "p1", "x", "n1", "Running" },
	{ "t10", "a", "p0", "x", "n2", "Running" }, { "t1", "ab", "p9", "z", "", "Failed" },
};

static struct wcache *seeded(const struct wcache_options *opts, int64_t rev)
{
	struct wcache *c = wcache_new_detached(&test_pods, opts);
	struct evbuild eb = { 0 };
	for (size_t i = 0; i < ARRAY_SIZE(seed); i++)
		eb_put(&eb, pod_key(seed[i].t, seed[i].ns, seed[i].name),
		       pod_json(seed[i].t, seed[i].ns, seed[i].name, seed[i].app, seed[i].node, seed[i].phase, 10),
		       (int64_t)(i + 2));
	struct etcd_kv *kvs = xcalloc(eb.n, sizeof(*kvs));
	for (size_t i = 0; i < eb.n; i++)
		kvs[i] = eb.v[i].kv;
	wcache_apply_list(c, kvs, eb.n, rev);
	free(kvs);
	eb_release(&eb);
	return c;
}

/* "t/ns/name,..." of a list with the filter built from the arguments (selectors may be NULL). */
static char *list_str(struct wcache *c, const char *t, const char *ns, const char *name, const char *lsel,
		      const char *fsel)
{
	struct label_selector *ls = NULL;
	struct field_selector *fs = NULL;
	if (lsel)
		assert_int_equal(label_selector_parse(lsel, &ls, NULL), 0);
	if (fsel)
		assert_int_equal(field_selector_parse(fsel, &fs, NULL), 0);
	struct wfilter f = { t, ns, name, ls, fs };
	struct cobj **objs;
	size_t n;
	int64_t rv;
	assert_int_equal(wcache_list(c, &f, &objs, &n, &rv), 0);
	assert_int_equal(rv, wcache_revision(c));
	struct buf b = BUF_INIT;
	for (size_t i = 0; i < n; i++) {
		buf_addf(&b, "%s%s/%s/%s", i ? "," : "", objs[i]->tenant, objs[i]->ns, objs[i]->name);
		cobj_unref(objs[i]);
	}
	free(objs);
	label_selector_free(ls);
	field_selector_free(fs);
	return buf_detach(&b, NULL);
}

#define assert_list(c, t, ns, name, ls, fs, want)                          \
	do {                                                               \
		char *_got = list_str(c, t, ns, name, ls, fs);             \
		assert_string_equal(_got, want);                           \
		free(_got);                                                \
	} while (0)

/* The splice point of resourceVersion: found in compact text, refused otherwise. */
static void test_metadata_close(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		long at; /* offset of metadata's '}', or 0 */
	} cases[] = {
		{ "{\"metadata\":{}}", 13 },
		{ "{\"a\":\"}\\\"{\",\"metadata\":{\"b\":[1,{}]},\"c\":2}", 34 },
		{ "{\"metadata\":{\"x\":1},\"metadata\":{}}", 0 },
		{ "{ \"metadata\":{}}", 0 },
		{ "{\"metadata\":{}}\n", 0 },
		{ "{\"metadata\":[]}", 0 },
		{ "{\"metadatax\":{}}", 0 },
		{ "{}", 0 },
		{ "{\"metadata\":{\"a\":\"", 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t got = cobj_metadata_close(cases[i].text, strlen(cases[i].text));
		if ((long)got != cases[i].at)
			fail_msg("case %zu: %s: got %zu, want %ld", i, cases[i].text, got, cases[i].at);
	}
	char *js = pod_json("t1", "a", "p1", "x", "n7", "Running", 5);
	size_t at = cobj_metadata_close(js, strlen(js));
	assert_true(at > 0);
	assert_int_equal(js[at], '}');
	assert_memory_equal(js + at - 13, "\"tier\":\"web\"}", 13);
	free(js);
}

/* A pod as our API servers store it (hashKey has 19 digits). */
static const char stored_pod[] =
	"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p1\",\"labels\":{\"app\":\"fill\"},"
	"\"tenant\":\"t1\",\"namespace\":\"a\",\"uid\":\"73621912-82af-4313-837a-d07d1295317b\","
	"\"hashKey\":6194273067023727192,\"creationTimestamp\":\"2026-11-27T14:07:00Z\"},\"spec\":{"
	"\"nodeName\":\"h0-1\",\"tolerations\":[{\"key\":\"ursa.io/hollow\",\"operator\":\"Exists\","
	"\"effect\":\"NoSchedule\"},{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\","
	"\"effect\":\"NoExecute\",\"tolerationSeconds\":300}],\"containers\":[{\"name\":\"c\",\"image\":\"x\","
	"\"resources\":{\"requests\":{\"cpu\":\"1m\",\"memory\":\"1Mi\"}},"
	"\"terminationMessagePath\":\"/dev/termination-log\",\"imagePullPolicy\":\"Always\"}],"
	"\"restartPolicy\":\"Always\",\"securityContext\":{},\"enableServiceLinks\":true,\"priority\":0},"
	"\"status\":{\"phase\":\"Pending\",\"qosClass\":\"Burstable\"}}";

static int64_t thread_cpu_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The object cobj_new_tree builds from the parsed text: what the parse path gives. */
static struct cobj *parsed_cobj(const char *key, const char *js, int64_t rv)
{
	json_t *t = json_loads(js, 0, NULL);
	assert_non_null(t);
	struct cobj *o = cobj_new_tree(&test_pods, key, js, strlen(js), rv, t);
	json_decref(t);
	return o;
}

static void assert_same_cobj(const struct cobj *a, const struct cobj *b)
{
	assert_int_equal(a->json_len, b->json_len);
	assert_memory_equal(a->json, b->json, a->json_len);
	assert_string_equal(a->key, b->key);
	assert_string_equal(a->tenant, b->tenant);
	assert_string_equal(a->ns, b->ns);
	assert_string_equal(a->name, b->name);
	assert_int_equal(a->nfields, b->nfields);
	for (size_t i = 0; i < a->nfields; i++)
		assert_string_equal(a->fields[i], b->fields[i]);
	assert_true(!a->labels == !b->labels);
	assert_true(!a->labels || json_equal(a->labels, b->labels));
}

static void test_cobj_fast(void **state)
{
	(void)state;
	const char *key = "/registry/pods/t1/a/p1";
	/* what our servers store takes the fast path, and it builds what the parse builds */
	struct cobj *f = cobj_new_fast(&test_pods, key, stored_pod, strlen(stored_pod), 77);
	assert_non_null(f);
	struct cobj *p = parsed_cobj(key, stored_pod, 77);
	assert_same_cobj(f, p);
	assert_string_equal(f->fields[0], "h0-1");
	assert_string_equal(f->fields[1], "Pending");
	assert_string_equal(json_string_value(json_object_get(f->labels, "app")), "fill");
	assert_non_null(strstr(f->json, "\"creationTimestamp\":\"2026-11-27T14:07:00Z\",\"resourceVersion\":\"77\"}"));
	cobj_unref(p);
	cobj_unref(f);

	/* texts it leaves to the parse: an escape in a field value, an exponent, a \u escape, an
	 * integer over long long, whitespace, a resourceVersion already there, a short key */
	static const char *const others[] = {
		"{\"metadata\":{\"name\":\"p1\"},\"spec\":{\"nodeName\":\"h\\\"1\"},"
		"\"status\":{\"phase\":\"Running\"}}",
		"{\"metadata\":{\"name\":\"p1\"},\"spec\":{\"nodeName\":\"h1\",\"x\":1e3}}",
		"{\"metadata\":{\"name\":\"p1\",\"labels\":{\"a\":\"\\u00e9\"}},\"spec\":{\"nodeName\":\"h1\"}}",
		"{\"metadata\":{\"name\":\"p1\",\"hashKey\":9223372036854775808}}",
		"{\"metadata\": {\"name\":\"p1\"}}",
		"{\"metadata\":{\"name\":\"p1\",\"resourceVersion\":\"3\"}}",
	};
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		const char *js = others[i];
		assert_null(cobj_new_fast(&test_pods, key, js, strlen(js), 5));
		json_t *t = json_loads(js, JSON_REJECT_DUPLICATES, NULL);
		struct cobj *o = cobj_new(&test_pods, key, js, strlen(js), 5);
		assert_true(!o == !t); /* the parse decides */
		if (o) {
			struct cobj *q = parsed_cobj(key, js, 5);
			assert_same_cobj(o, q);
			cobj_unref(q);
		}
		cobj_unref(o);
		json_decref(t);
	}
	assert_null(cobj_new_fast(&test_pods, "/registry/pods/p1", stored_pod, strlen(stored_pod), 5));
	const char *esc = "{\"metadata\":{\"name\":\"p1\"},\"spec\":{\"nodeName\":\"h\\\"1\"}}";
	struct cobj *o = cobj_new(&test_pods, "/registry/pods/t1/a/p1", esc, strlen(esc), 5);
	assert_non_null(o);
	assert_string_equal(o->fields[0], "h\"1");
	cobj_unref(o);
	/* invalid: neither path takes it (duplicate key, bad number, trailing bytes) */
	static const char *const bad[] = {
		"{\"metadata\":{\"name\":\"p1\",\"name\":\"p2\"}}",
		"{\"metadata\":{\"name\":\"p1\"},\"n\":01}",
		"{\"metadata\":{\"name\":\"p1\"}}x",
		"{\"metadata\":{\"name\":\"p1\"},\"n\":tru}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_null(cobj_new_fast(&test_pods, key, bad[i], strlen(bad[i]), 5));
		assert_null(cobj_new(&test_pods, key, bad[i], strlen(bad[i]), 5));
	}

	/* members' text without a parse (the quota tracker's pods) */
	struct cobj *sp = cobj_new(&test_pods, key, stored_pod, strlen(stored_pod), 9);
	static const char *const paths[] = { "spec.containers", "status.phase", "spec.initContainers",
					     "metadata.hashKey", "spec.nodeName.x" };
	struct sv spans[5];
	assert_int_equal(cobj_text_paths(sp, paths, 5, spans), 0);
	assert_non_null(spans[0].ptr);
	assert_true(spans[0].ptr[0] == '[' && spans[0].ptr[spans[0].len - 1] == ']');
	json_t *cs = json_loadb(spans[0].ptr, spans[0].len, 0, NULL);
	json_t *whole = json_loads(sp->json, 0, NULL);
	assert_true(json_equal(cs, json_object_get(json_object_get(whole, "spec"), "containers")));
	json_decref(cs);
	json_decref(whole);
	assert_int_equal(spans[1].len, 9);
	assert_memory_equal(spans[1].ptr, "\"Pending\"", 9);
	assert_null(spans[2].ptr);
	assert_int_equal(spans[3].len, 19);
	assert_null(spans[4].ptr);
	cobj_unref(sp);
	sp = cobj_new(&test_pods, key, "{\"metadata\":{\"name\":\"p\\u0031\"}}", 31, 9);
	assert_non_null(sp);
	assert_int_equal(cobj_text_paths(sp, paths, 5, spans), -1); /* not the plain form: parse it */
	cobj_unref(sp);

	/* the CPU cost per stored pod of each path */
	enum { N = 20000 };
	size_t len = strlen(stored_pod);
	int64_t t0 = thread_cpu_us();
	for (int i = 0; i < N; i++)
		cobj_unref(cobj_new_fast(&test_pods, key, stored_pod, len, i + 1));
	int64_t t1 = thread_cpu_us();
	for (int i = 0; i < N; i++) {
		json_t *t = json_parse_limited(stored_pod, len, 64, NULL);
		cobj_unref(cobj_new_tree(&test_pods, key, stored_pod, len, i + 1, t));
		json_decref(t);
	}
	int64_t t2 = thread_cpu_us();
	print_message("cobj from a stored pod (%zu bytes): fast path %.2f us, parse path %.2f us\n", len,
		      (double)(t1 - t0) / N, (double)(t2 - t1) / N);
}

static void test_cobj_new(void **state)
{
	char *js = pod_json("t1", "a", "p1", "x", "n7", "Running", 5);
	struct cobj *o = cobj_new(&test_pods, "/registry/pods/t1/a/p1", js, strlen(js), 42);
	assert_non_null(o);
	assert_int_equal(o->rv, 42);
	assert_string_equal(o->tenant, "t1");
	assert_string_equal(o->ns, "a");
	assert_string_equal(o->name, "p1");
	assert_string_equal(o->key, "/registry/pods/t1/a/p1");
	assert_int_equal(o->nfields, 2);
	assert_string_equal(o->fields[0], "n7");
	assert_string_equal(o->fields[1], "Running");
	assert_string_equal(json_string_value(json_object_get(o->labels, "app")), "x");
	assert_int_equal(o->json_len, strlen(o->json));
	json_t *j = json_loads(o->json, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "metadata"), "resourceVersion")), "42");
	assert_non_null(strstr(o->json, "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"p1\""));
	assert_null(strchr(o->json, ' '));
	json_decref(j);
	assert_true(cobj_ref(o) == o);
	cobj_unref(o);
	cobj_unref(o);
	cobj_unref(NULL);
	free(js);

	assert_null(cobj_new(&test_pods, "/registry/pods/t1/a/p1", "{\"kind\":", 8, 3));
	assert_null(cobj_new(&test_pods, "/registry/pods/t1/a/p1", "[1,2]", 5, 3));
	/* cluster scope, no strategy fields, no labels */
	o = cobj_new(&test_nodes, "/registry/nodes/n1", "{\"metadata\":{\"name\":\"n1\"}}", 26, 9);
	assert_non_null(o);
	assert_string_equal(o->tenant, "");
	assert_string_equal(o->ns, "");
	assert_string_equal(o->name, "n1");
	assert_null(o->labels);
	assert_null(o->fields);
	assert_string_equal(o->json, "{\"metadata\":{\"name\":\"n1\",\"resourceVersion\":\"9\"}}");
	cobj_unref(o);
}

/* Write hints: an event carrying exactly the hinted bytes is built from the hinted tree; other
 * bytes, a delete or a relist drop the hint; a writer cancels only its own; at most
 * WCACHE_MAX_HINTS are held. */
static void test_write_hints(void **state)
{
	struct wcache *c = seeded(NULL, 100);
	char *key = pod_key("t1", "a", "p1");
	char *val = pod_json("t1", "a", "p1", "y", "n7", "Running", 10);
	/* equal to val but for a label, so that the test can tell which one built the object */
	json_t *tree = json_loads(val, 0, NULL);
	json_object_set_new(json_object_get(json_object_get(tree, "metadata"), "labels"), "app", json_string("tree"));

	unsigned long long used0, missed0, used, missed;
	wcache_hint_stats(&used0, &missed0);
	wcache_expect(c, key, val, strlen(val), tree);
	assert_int_equal(atomic_load(&c->nhints), 1);
	apply1(c, xstrdup(key), xstrdup(val), 101);
	assert_int_equal(atomic_load(&c->nhints), 0);
	wcache_hint_stats(&used, &missed);
	assert_int_equal(used, used0 + 1);
	assert_int_equal(missed, missed0);
	struct cobj *o = wcache_get(c, key);
	assert_string_equal(json_string_value(json_object_get(o->labels, "app")), "tree");
	assert_string_equal(o->fields[0], "n7");
	assert_string_equal(o->fields[1], "Running");
	json_t *got = json_loadb(o->json, o->json_len, 0, NULL), *want = json_loads(val, 0, NULL);
	json_object_set_new(json_object_get(want, "metadata"), "resourceVersion", json_string("101"));
	assert_true(json_equal(got, want)); /* the text is the event's, with the revision */
	json_decref(got);
	json_decref(want);
	cobj_unref(o);

	/* other bytes for the key: parsed as usual, the hint dropped */
	wcache_expect(c, key, val, strlen(val), tree);
	apply1(c, xstrdup(key), pod_json("t1", "a", "p1", "z", "n7", "Running", 10), 102);
	assert_int_equal(atomic_load(&c->nhints), 0);
	wcache_hint_stats(&used, &missed);
	assert_int_equal(missed, missed0 + 1);
	o = wcache_get(c, key);
	assert_string_equal(json_string_value(json_object_get(o->labels, "app")), "z");
	cobj_unref(o);

	/* cancel removes the writer's own hint, not a later one */
	json_t *other = json_deep_copy(tree);
	wcache_expect(c, key, val, strlen(val), tree);
	wcache_expect_cancel(c, key, other);
	assert_int_equal(atomic_load(&c->nhints), 1);
	wcache_expect_cancel(c, key, tree);
	assert_int_equal(atomic_load(&c->nhints), 0);

	/* a delete takes it away; so does a relist, for every key */
	wcache_expect(c, key, val, strlen(val), tree);
	struct etcd_event del = { .type = ETCD_EV_DELETE, .kv = { .key = key, .mod_rev = 103 } };
	wcache_apply_events(c, &del, 1);
	assert_int_equal(atomic_load(&c->nhints), 0);
	wcache_expect(c, key, val, strlen(val), tree);
	wcache_expect(c, "/registry/pods/t1/a/other", val, strlen(val), other);
	assert_int_equal(atomic_load(&c->nhints), 2);
	wcache_apply_list(c, NULL, 0, 200);
	assert_int_equal(atomic_load(&c->nhints), 0);

	/* the cap: new keys get no hint, a held key's hint is still replaced */
	for (int i = 0; i < WCACHE_MAX_HINTS + 10; i++) {
		char *k = xasprintf("/registry/pods/t1/a/k%d", i);
		wcache_expect(c, k, val, strlen(val), tree);
		free(k);
	}
	assert_int_equal(atomic_load(&c->nhints), WCACHE_MAX_HINTS);
	wcache_expect(c, "/registry/pods/t1/a/k0", val, strlen(val), other);
	wcache_expect_cancel(c, "/registry/pods/t1/a/k0", other);
	assert_int_equal(atomic_load(&c->nhints), WCACHE_MAX_HINTS - 1);
	wcache_free(c); /* frees the hints still held (ASan would see a leak) */
	json_decref(tree);
	json_decref(other);
	free(key);
	free(val);
}

/* A write of pod t1/a/<name> at rev whose event finds its hint; returns the hinted tree (only
 * to compare pointers with: the cache may have let it go). */
static json_t *write_hinted(struct wcache *c, const char *name, int64_t rev)
{
	char *key = pod_key("t1", "a", name), *val = pod_json("t1", "a", name, "x", "n1", "Running", 100);
	json_t *tree = json_loads(val, 0, NULL);
	wcache_expect(c, key, val, strlen(val), tree);
	apply1(c, key, val, rev);
	json_decref(tree); /* the cache's reference keeps it, if it keeps it */
	return tree;
}

static json_t *tree_of(struct wcache *c, const char *name, int64_t *ret_rv)
{
	char *key = pod_key("t1", "a", name);
	json_t *t = wcache_get_tree(c, key, ret_rv);
	free(key);
	json_decref(t); /* the pointer is compared only while the cache still holds it */
	return t;
}

/* Trees of recent writes: the hinted tree itself is kept and handed out; a change without a
 * hint, a delete and a relist drop it; the budget drops the oldest first; 0 keeps none. */
static void test_trees(void **state)
{
	struct wcache *c = seeded(NULL, 100);
	int64_t rv = 0;
	write_hinted(c, "q0", 101);
	assert_null(tree_of(c, "q0", &rv)); /* no budget: nothing kept */
	assert_int_equal(c->tree_bytes, 0);
	wcache_free(c);

	char *val = pod_json("t1", "a", "q0", "x", "n1", "Running", 100);
	size_t cost = (strlen(val) + strlen(",\"resourceVersion\":\"101\"")) * WCACHE_TREE_COST;
	free(val);
	struct wcache_options o = { .tree_budget = 2 * cost + cost / 2 }; /* two fit, not three */
	c = seeded(&o, 100);
	unsigned long long used0, missed0, used, missed;
	wcache_tree_stats(&used0, &missed0);
	json_t *t0 = write_hinted(c, "q0", 101);
	assert_ptr_equal(tree_of(c, "q0", &rv), t0);
	assert_int_equal(rv, 101);
	assert_int_equal(c->tree_bytes, cost);
	assert_ptr_equal(wcache_get_tree(c, "/registry/pods/t1/a/p1", &rv), NULL); /* listed: no tree */
	assert_ptr_equal(wcache_get_tree(c, "/registry/pods/t1/a/none", &rv), NULL);
	wcache_tree_stats(&used, &missed);
	assert_int_equal(used, used0 + 1);
	assert_int_equal(missed, missed0 + 1); /* p1; an absent object counts as neither */

	/* the third tree drops the oldest */
	json_t *t1 = write_hinted(c, "q1", 102), *t2 = write_hinted(c, "q2", 103);
	assert_null(tree_of(c, "q0", &rv));
	assert_ptr_equal(tree_of(c, "q1", &rv), t1);
	assert_ptr_equal(tree_of(c, "q2", &rv), t2);
	assert_int_equal(rv, 103);
	assert_int_equal(c->tree_bytes, 2 * cost);

	/* a change that brings no hint drops the tree at once, and so does a delete */
	apply1(c, pod_key("t1", "a", "q1"), pod_json("t1", "a", "q1", "y", "n1", "Running", 100), 104);
	assert_null(tree_of(c, "q1", &rv));
	assert_int_equal(c->tree_bytes, cost);
	apply1(c, pod_key("t1", "a", "q2"), NULL, 105);
	assert_null(tree_of(c, "q2", &rv));
	assert_int_equal(c->tree_bytes, 0);
	assert_null(c->trees_head);

	/* a rewrite of a kept object replaces its tree; a relist drops them all */
	write_hinted(c, "q3", 106);
	json_t *t3 = write_hinted(c, "q3", 107);
	assert_ptr_equal(tree_of(c, "q3", &rv), t3);
	assert_int_equal(rv, 107);
	assert_int_equal(c->tree_bytes, cost);
	write_hinted(c, "q4", 108);
	wcache_apply_list(c, NULL, 0, 200);
	assert_int_equal(c->tree_bytes, 0);
	assert_null(c->trees_head);
	assert_null(c->trees_tail);
	write_hinted(c, "q5", 201);
	wcache_free(c); /* drops the kept tree (ASan would see a leak) */
}

static void test_not_ready(void **state)
{
	struct wcache *c = wcache_new_detached(&test_pods, NULL);
	struct cobj **objs;
	size_t n;
	int64_t rv;
	struct watcher *w;
	assert_false(wcache_ready(c));
	assert_int_equal(wcache_list(c, NULL, &objs, &n, &rv), E_UNAVAILABLE);
	assert_int_equal(wcache_watch(c, NULL, 0, 10, NULL, NULL, &w), E_UNAVAILABLE);
	wcache_apply_list(c, NULL, 0, 5);
	assert_true(wcache_ready(c));
	assert_int_equal(wcache_revision(c), 5);
	assert_int_equal(wcache_size(c), 0);
	wcache_free(c);
}

static void test_list_filters(void **state)
{
	struct wcache *c = seeded(NULL, 100);
	assert_int_equal(wcache_size(c), 6);
	assert_int_equal(wcache_revision(c), 100);
	assert_list(c, NULL, NULL, NULL, NULL, NULL, "t1/a/p1,t1/a/p3,t1/ab/p9,t1/b/p2,t10/a/p0,t2/a/p1");
	assert_list(c, "", "", NULL, NULL, NULL, "t1/a/p1,t1/a/p3,t1/ab/p9,t1/b/p2,t10/a/p0,t2/a/p1");
	assert_list(c, "t1", NULL, NULL, NULL, NULL, "t1/a/p1,t1/a/p3,t1/ab/p9,t1/b/p2");
	assert_list(c, "t1", "a", NULL, NULL, NULL, "t1/a/p1,t1/a/p3");
	assert_list(c, "t1", "zz", NULL, NULL, NULL, "");
	assert_list(c, "t3", NULL, NULL, NULL, NULL, "");
	assert_list(c, NULL, "a", NULL, NULL, NULL, "t1/a/p1,t1/a/p3,t10/a/p0,t2/a/p1");
	assert_list(c, NULL, NULL, "p1", NULL, NULL, "t1/a/p1,t2/a/p1");
	assert_list(c, "t1", "a", "p3", NULL, NULL, "t1/a/p3");
	assert_list(c, "t1", "a", "p2", NULL, NULL, "");
	assert_list(c, NULL, NULL, NULL, "app=x", NULL, "t1/a/p3,t1/b/p2,t10/a/p0,t2/a/p1");
	assert_list(c, "t1", NULL, NULL, "app in (y,z)", NULL, "t1/a/p1,t1/ab/p9");
	assert_list(c, NULL, NULL, NULL, "app!=x,tier=web", NULL, "t1/a/p1,t1/ab/p9");
	assert_list(c, NULL, NULL, NULL, "missing", NULL, "");
	assert_list(c, NULL, NULL, NULL, NULL, "status.phase=Running", "t1/a/p3,t10/a/p0,t2/a/p1");
	assert_list(c, NULL, NULL, NULL, NULL, "status.phase!=Running,metadata.namespace=a", "t1/a/p1");
	assert_list(c, NULL, NULL, NULL, NULL, "metadata.name=p1", "t1/a/p1,t2/a/p1");
	assert_list(c, NULL, NULL, NULL, "app=x", "status.phase=Running,metadata.name!=p0", "t1/a/p3,t2/a/p1");

	struct cobj *o = wcache_get(c, "/registry/pods/t1/b/p2");
	assert_non_null(o);
	assert_string_equal(o->name, "p2");
	assert_int_equal(o->rv, 4);
	cobj_unref(o);
	assert_null(wcache_get(c, "/registry/pods/t1/b/nope"));
	wcache_free(c);
}

static void test_node_index(void **state)
{
	struct wcache *c = seeded(NULL, 100);
	assert_list(c, NULL, NULL, NULL, NULL, "spec.nodeName=n1", "t1/a/p3,t2/a/p1");
	assert_list(c, NULL, NULL, NULL, NULL, "spec.nodeName=n2", "t1/a/p1,t10/a/p0");
	assert_list(c, NULL, NULL, NULL, NULL, "spec.nodeName=", "t1/ab/p9,t1/b/p2");
	assert_list(c, NULL, NULL, NULL, NULL, "spec.nodeName=n9", "");
	assert_list(c, "t1", NULL, NULL, NULL, "spec.nodeName=n1", "t1/a/p3");
	assert_list(c, NULL, NULL, NULL, "app=x", "spec.nodeName=n2", "t10/a/p0");
	assert_list(c, NULL, NULL, NULL, NULL, "spec.nodeName!=n1,spec.nodeName!=", "t1/a/p1,t10/a/p0");

	/* bind t1/b/p2 to n1, move t1/a/p3 from n1 to n2, delete t2/a/p1 */
	apply1(c, pod_key("t1", "b", "p2"), pod_json("t1", "b", "p2", "x", "n1", "Pending", 10), 101);
	apply1(c, pod_key("t1", "a", "p3"), pod_json("t1", "a", "p3", "x", "n2", "Running", 10), 102);
	apply1(c, pod_key("t2", "a", "p1"), NULL, 103);
	assert_list(c, NULL, NULL, NULL, NULL, "spec.nodeName=n1", "t1/b/p2");
	assert_list(c, NULL, NULL, NULL, NULL, "spec.nodeName=n2", "t1/a/p1,t1/a/p3,t10/a/p0");
	assert_list(c, NULL, NULL, NULL, NULL, "spec.nodeName=", "t1/ab/p9");
	/* same node, new content: the index points at the new object */
	apply1(c, pod_key("t1", "b", "p2"), pod_json("t1", "b", "p2", "x", "n1", "Running", 10), 104);
	assert_list(c, NULL, NULL, NULL, NULL, "spec.nodeName=n1,status.phase=Running", "t1/b/p2");
	apply1(c, pod_key("t1", "b", "p2"), NULL, 105);
	assert_list(c, NULL, NULL, NULL, NULL, "spec.nodeName=n1", "");
	assert_int_equal(wcache_size(c), 4);
	assert_int_equal(wcache_revision(c), 105);
	wcache_free(c);
}

/* Watch helpers ------------------------------------------------------------------------------ */

struct wctx {
	atomic_int notified;
	atomic_bool closed;
	atomic_int after_close;
};

static void on_notify(void *ud)
{
	struct wctx *x = ud;
	if (atomic_load(&x->closed))
		atomic_fetch_add(&x->after_close, 1);
	atomic_fetch_add(&x->notified, 1);
}

static struct watcher *watch(struct wcache *c, const char *t, const char *ns, const char *lsel, const char *fsel,
			     int64_t from, size_t maxq, struct wctx *x)
{
	struct label_selector *ls = NULL;
	struct field_selector *fs = NULL;
	if (lsel)
		assert_int_equal(label_selector_parse(lsel, &ls, NULL), 0);
	if (fsel)
		assert_int_equal(field_selector_parse(fsel, &fs, NULL), 0);
	struct wfilter f = { t, ns, NULL, ls, fs };
	struct watcher *w = NULL;
	assert_int_equal(wcache_watch(c, &f, from, maxq, on_notify, x, &w), 0);
	/* the filter is borrowed only for the call */
	label_selector_free(ls);
	field_selector_free(fs);
	return w;
}

/* Drains w into "TYPE:t/ns/name@rv,..." */
static char *drain(struct watcher *w)
{
	static const char *names[] = { "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR" };
	struct buf b = BUF_INIT;
	struct wevent ev;
	int rc;
	while ((rc = watcher_next(w, &ev)) == 1) {
		if (b.len)
			buf_addch(&b, ',');
		if (ev.obj)
			buf_addf(&b, "%s:%s/%s/%s@%lld", names[ev.type], ev.obj->tenant, ev.obj->ns, ev.obj->name,
				 (long long)ev.rv);
		else
			buf_addf(&b, "%s@%lld", names[ev.type], (long long)ev.rv);
		if (ev.obj)
			assert_int_equal(ev.obj->rv, ev.type == WEV_ADDED && ev.obj->rv < ev.rv ? ev.obj->rv : ev.rv);
		wevent_release(&ev);
	}
	if (rc < 0)
		buf_adds(&b, b.len ? ",END" : "END");
	return buf_detach(&b, NULL);
}

#define assert_drain(w, want)                              \
	do {                                               \
		char *_got = drain(w);                     \
		assert_string_equal(_got, want);           \
		free(_got);                                \
	} while (0)

static void test_watch_initial_and_live(void **state)
{
	struct wcache *c = seeded(NULL, 100);
	struct wctx x = { 0 }, y = { 0 };
	struct watcher *w = watch(c, "t1", NULL, "app=x", NULL, 0, 10, &x);
	struct watcher *all = watch(c, NULL, NULL, NULL, NULL, -1, 10, &y);
	assert_int_equal(wcache_watchers_total(), 2);
	assert_true(atomic_load(&x.notified) >= 1);
	assert_drain(w, "ADDED:t1/a/p3@2,ADDED:t1/b/p2@4");
	assert_drain(all, "ADDED:t1/a/p1@3,ADDED:t1/a/p3@2,ADDED:t1/ab/p9@7,ADDED:t1/b/p2@4,ADDED:t10/a/p0@6,"
			  "ADDED:t2/a/p1@5");
	assert_int_equal(watcher_revision(w), 100);
	int before = atomic_load(&x.notified);
	apply1(c, pod_key("t1", "c", "new"), pod_json("t1", "c", "new", "x", "", "Pending", 10), 101);
	apply1(c, pod_key("t2", "a", "other"), pod_json("t2", "a", "other", "x", "", "Pending", 10), 102);
	assert_int_equal(atomic_load(&x.notified), before + 1);
	assert_int_equal(watcher_revision(w), 100); /* 101 queued, not handed out yet */
	assert_drain(w, "ADDED:t1/c/new@101");
	assert_int_equal(watcher_revision(w), 102); /* nothing matched 102 */
	assert_drain(all, "ADDED:t1/c/new@101,ADDED:t2/a/other@102");
	watcher_close(w);
	watcher_close(all);
	assert_int_equal(wcache_watchers_total(), 0);
	wcache_free(c);
}

static void test_watch_replay(void **state)
{
	struct wcache *c = seeded(NULL, 100);
	struct wctx x = { 0 };
	for (int i = 1; i <= 10; i++)
		apply1(c, pod_key("t1", "a", "p1"), pod_json("t1", "a", "p1", "y", "n2", "Pending", i), 100 + i);
	/* from the list revision: everything since */
	struct watcher *w = watch(c, "t1", "a", NULL, NULL, 100, 100, &x);
	assert_drain(w, "MODIFIED:t1/a/p1@101,MODIFIED:t1/a/p1@102,MODIFIED:t1/a/p1@103,MODIFIED:t1/a/p1@104,"
			"MODIFIED:t1/a/p1@105,MODIFIED:t1/a/p1@106,MODIFIED:t1/a/p1@107,MODIFIED:t1/a/p1@108,"
			"MODIFIED:t1/a/p1@109,MODIFIED:t1/a/p1@110");
	watcher_close(w);
	w = watch(c, NULL, NULL, NULL, NULL, 107, 100, &x);
	assert_drain(w, "MODIFIED:t1/a/p1@108,MODIFIED:t1/a/p1@109,MODIFIED:t1/a/p1@110");
	assert_int_equal(watcher_revision(w), 110);
	watcher_close(w);
	/* from the current revision: nothing, then live */
	w = watch(c, NULL, NULL, NULL, NULL, 110, 100, &x);
	assert_drain(w, "");
	apply1(c, pod_key("t1", "a", "p1"), NULL, 111);
	assert_drain(w, "DELETED:t1/a/p1@111");
	watcher_close(w);
	/* from the future: waits for newer events only */
	w = watch(c, NULL, NULL, NULL, NULL, 113, 100, &x);
	assert_int_equal(watcher_revision(w), 113);
	apply1(c, pod_key("t1", "a", "q"), pod_json("t1", "a", "q", "y", "", "Pending", 1), 112);
	apply1(c, pod_key("t1", "a", "q"), pod_json("t1", "a", "q", "y", "", "Running", 1), 113);
	apply1(c, pod_key("t1", "a", "q"), pod_json("t1", "a", "q", "y", "", "Failed", 1), 114);
	assert_drain(w, "MODIFIED:t1/a/q@114");
	watcher_close(w);
	wcache_free(c);
}

static int64_t fake_now;
static int64_t fake_clock(void)
{
	return fake_now;
}

static void test_watch_gone(void **state)
{
	struct wcache_options o = { .history_min = 4, .history_max = 8, .history_window_ms = 1000 };
	struct wcache *c = seeded(&o, 100);
	struct watcher *w;
	struct wctx x = { 0 };
	wcache_set_clock(c, fake_clock);
	fake_now = 0;
	assert_int_equal(wcache_watch(c, NULL, 99, 10, on_notify, &x, &w), E_GONE);
	/* within the window the ring grows to history_max */
	for (int i = 1; i <= 10; i++)
		apply1(c, pod_key("t1", "a", "p1"), pod_json("t1", "a", "p1", "y", "", "Pending", i), 100 + i);
	assert_int_equal(wcache_history_len(c), 8);
	assert_int_equal(wcache_history_start(c), 102);
	assert_int_equal(wcache_watch(c, NULL, 101, 10, on_notify, &x, &w), E_GONE);
	assert_int_equal(wcache_watch(c, NULL, 102, 10, on_notify, &x, &w), 0);
	assert_drain(w, "MODIFIED:t1/a/p1@103,MODIFIED:t1/a/p1@104,MODIFIED:t1/a/p1@105,MODIFIED:t1/a/p1@106,"
			"MODIFIED:t1/a/p1@107,MODIFIED:t1/a/p1@108,MODIFIED:t1/a/p1@109,MODIFIED:t1/a/p1@110");
	watcher_close(w);
	/* past the window only history_min events stay */
	fake_now = 5000;
	apply1(c, pod_key("t1", "a", "p1"), pod_json("t1", "a", "p1", "y", "", "Pending", 1), 111);
	assert_int_equal(wcache_history_len(c), 4);
	assert_int_equal(wcache_history_start(c), 107);
	assert_int_equal(wcache_watch(c, NULL, 106, 10, on_notify, &x, &w), E_GONE);
	/* revisions of other prefixes between events: any rv after the last evicted event works */
	assert_int_equal(wcache_watch(c, NULL, 107, 10, on_notify, &x, &w), 0);
	assert_drain(w, "MODIFIED:t1/a/p1@108,MODIFIED:t1/a/p1@109,MODIFIED:t1/a/p1@110,MODIFIED:t1/a/p1@111");
	watcher_close(w);
	wcache_free(c);
}

static void test_selector_transitions(void **state)
{
	struct wcache *c = seeded(NULL, 100);
	struct wctx x = { 0 }, y = { 0 };
	struct watcher *w = watch(c, NULL, NULL, "app=x", NULL, 100, 10, &x);
	struct watcher *k = watch(c, NULL, NULL, NULL, "spec.nodeName=n1", 100, 10, &y);
	/* p1 (app=y, n2) gains app=x, then moves to n1, then loses app=x, then is deleted */
	apply1(c, pod_key("t1", "a", "p1"), pod_json("t1", "a", "p1", "x", "n2", "Pending", 10), 101);
	apply1(c, pod_key("t1", "a", "p1"), pod_json("t1", "a", "p1", "x", "n1", "Pending", 10), 102);
	apply1(c, pod_key("t1", "a", "p1"), pod_json("t1", "a", "p1", "y", "n1", "Running", 10), 103);
	apply1(c, pod_key("t1", "a", "p1"), NULL, 104);
	assert_drain(w, "ADDED:t1/a/p1@101,MODIFIED:t1/a/p1@102,DELETED:t1/a/p1@103");
	assert_drain(k, "ADDED:t1/a/p1@102,MODIFIED:t1/a/p1@103,DELETED:t1/a/p1@104");
	watcher_close(w);
	watcher_close(k);

	/* the DELETED for a selector that stops matching carries the old content at the new rv */
	w = watch(c, NULL, NULL, "app=x", NULL, 102, 10, &x);
	struct wevent ev;
	assert_int_equal(watcher_next(w, &ev), 1);
	assert_int_equal(ev.type, WEV_DELETED);
	assert_int_equal(ev.rv, 103);
	assert_int_equal(ev.obj->rv, 103);
	assert_non_null(strstr(ev.obj->json, "\"app\":\"x\""));
	assert_non_null(strstr(ev.obj->json, "\"resourceVersion\":\"103\""));
	assert_non_null(strstr(ev.obj->json, "\"phase\":\"Pending\""));
	wevent_release(&ev);
	assert_int_equal(watcher_next(w, &ev), 0);
	watcher_close(w);

	/* a real DELETED carries the last state, at the deletion revision */
	w = watch(c, NULL, NULL, NULL, "status.phase=Running", 103, 10, &x);
	assert_int_equal(watcher_next(w, &ev), 1);
	assert_int_equal(ev.type, WEV_DELETED);
	assert_int_equal(ev.rv, 104);
	assert_int_equal(ev.obj->rv, 104);
	assert_non_null(strstr(ev.obj->json, "\"phase\":\"Running\""));
	assert_non_null(strstr(ev.obj->json, "\"app\":\"y\""));
	assert_non_null(strstr(ev.obj->json, "\"resourceVersion\":\"104\""));
	wevent_release(&ev);
	watcher_close(w);
	wcache_free(c);
}

/* Kubelets' watches (spec.nodeName=<node>) get only their node's events, through the node index:
 * a pod created unbound, bound to n7, updated there, deleted; 2,000 node watchers, an
 * unfiltered one and one of unbound pods (spec.nodeName=). */
static void test_node_delivery(void **state)
{
	struct wcache *c = seeded(NULL, 100);
	enum { NN = 2000 };
	struct watcher **ws = xcalloc(NN, sizeof(*ws));
	struct wctx *xs = xcalloc(NN, sizeof(*xs)), all_x = { 0 }, unbound_x = { 0 };
	char sel[64];
	for (int i = 0; i < NN; i++) {
		snprintf(sel, sizeof(sel), "spec.nodeName=n%d", i);
		ws[i] = watch(c, NULL, NULL, NULL, sel, 100, 10, &xs[i]);
	}
	struct watcher *all = watch(c, NULL, NULL, NULL, NULL, 100, 10, &all_x);
	struct watcher *unbound = watch(c, NULL, NULL, NULL, "spec.nodeName=", 100, 10, &unbound_x);
	assert_int_equal(c->by_node.n, NN + 1);
	apply1(c, pod_key("t1", "a", "k"), pod_json("t1", "a", "k", "x", "", "Pending", 10), 101);
	apply1(c, pod_key("t1", "a", "k"), pod_json("t1", "a", "k", "x", "n7", "Pending", 10), 102);
	apply1(c, pod_key("t1", "a", "k"), pod_json("t1", "a", "k", "x", "n7", "Running", 10), 103);
	apply1(c, pod_key("t1", "a", "k"), NULL, 104);
	assert_drain(all, "ADDED:t1/a/k@101,MODIFIED:t1/a/k@102,MODIFIED:t1/a/k@103,DELETED:t1/a/k@104");
	assert_drain(unbound, "ADDED:t1/a/k@101,DELETED:t1/a/k@102");
	assert_drain(ws[7], "ADDED:t1/a/k@102,MODIFIED:t1/a/k@103,DELETED:t1/a/k@104");
	assert_int_equal(atomic_load(&xs[7].notified), 3);
	for (int i = 0; i < NN; i++) {
		if (i == 7)
			continue;
		assert_int_equal(atomic_load(&xs[i].notified), 0);
		assert_drain(ws[i], "");
	}
	/* two watchers of one node share its entry; closing in any order empties the index */
	struct wctx y = { 0 };
	struct watcher *again = watch(c, NULL, NULL, "app=x", "spec.nodeName=n7", 104, 10, &y);
	assert_int_equal(c->by_node.n, NN + 1);
	for (int i = 0; i < NN; i += 2)
		watcher_close(ws[i]);
	apply1(c, pod_key("t1", "a", "m"), pod_json("t1", "a", "m", "x", "n7", "Running", 10), 105);
	assert_drain(again, "ADDED:t1/a/m@105");
	assert_drain(ws[7], "ADDED:t1/a/m@105");
	for (int i = 1; i < NN; i += 2)
		watcher_close(ws[i]);
	watcher_close(again);
	watcher_close(unbound);
	assert_int_equal(c->by_node.n, 0);
	apply1(c, pod_key("t1", "a", "m"), NULL, 106);
	assert_drain(all, "ADDED:t1/a/m@105,DELETED:t1/a/m@106");
	watcher_close(all);
	free(ws);
	free(xs);
	wcache_free(c);
}

static void test_overflow(void **state)
{
	struct wcache *c = seeded(NULL, 100);
	struct wctx x = { 0 };
	/* initial events do not count against the cap */
	struct watcher *w = watch(c, NULL, NULL, NULL, NULL, 0, 3, &x);
	for (int i = 1; i <= 3; i++)
		apply1(c, pod_key("t1", "a", "p1"), pod_json("t1", "a", "p1", "y", "", "Pending", i), 100 + i);
	struct wevent ev;
	assert_int_equal(watcher_next(w, &ev), 1);
	assert_int_equal(ev.type, WEV_ADDED);
	wevent_release(&ev);
	int n = atomic_load(&x.notified);
	apply1(c, pod_key("t1", "a", "p1"), pod_json("t1", "a", "p1", "y", "", "Pending", 9), 104);
	assert_int_equal(atomic_load(&x.notified), n + 1);
	assert_drain(w, "ERROR@104,END");
	/* ended: no more events, still -1 */
	apply1(c, pod_key("t1", "a", "p1"), pod_json("t1", "a", "p1", "y", "", "Pending", 8), 105);
	assert_int_equal(watcher_next(w, &ev), -1);
	watcher_close(w);
	wcache_free(c);
}

static void test_relist_closes_watchers(void **state)
{
	struct wcache *c = seeded(NULL, 100);
	struct wctx x = { 0 };
	struct watcher *w = watch(c, NULL, NULL, NULL, NULL, 100, 10, &x);
	apply1(c, pod_key("t1", "a", "p1"), NULL, 101);
	wcache_apply_list(c, NULL, 0, 200);
	assert_drain(w, "DELETED:t1/a/p1@101,ERROR@101,END");
	assert_int_equal(wcache_size(c), 0);
	assert_int_equal(wcache_revision(c), 200);
	assert_int_equal(wcache_history_len(c), 0);
	struct watcher *w2;
	assert_int_equal(wcache_watch(c, NULL, 150, 10, on_notify, &x, &w2), E_GONE);
	/* events from before the list revision are ignored */
	apply1(c, pod_key("t1", "a", "p1"), pod_json("t1", "a", "p1", "y", "", "Pending", 1), 150);
	assert_int_equal(wcache_size(c), 0);
	watcher_close(w);
	wcache_free(c);
}

static void test_free_ends_watchers(void **state)
{
	struct wcache *c = seeded(NULL, 100);
	struct wctx x = { 0 };
	struct watcher *w = watch(c, NULL, NULL, NULL, NULL, 100, 10, &x);
	wcache_free(c);
	assert_drain(w, "END");
	watcher_close(w);
	assert_int_equal(wcache_watchers_total(), 0);
}

struct waiter {
	struct wcache *c;
	int rc;
};

static void *wait_thread(void *arg)
{
	struct waiter *wt = arg;
	wt->rc = wcache_wait_for(wt->c, 101, 5000);
	return NULL;
}

static void test_wait_for(void **state)
{
	struct wcache *c = seeded(NULL, 100);
	assert_int_equal(wcache_wait_for(c, 100, 0), 0);
	assert_int_equal(wcache_wait_for(c, 101, 20), E_TIMEOUT);
	struct waiter wt = { c, 1 };
	pthread_t th;
	pthread_create(&th, NULL, wait_thread, &wt);
	apply1(c, pod_key("t1", "a", "p1"), NULL, 101);
	pthread_join(th, NULL);
	assert_int_equal(wt.rc, 0);
	wcache_free(c);
}

/* Closing watchers while another thread applies events: no notify after close returns. */
struct churn {
	struct wcache *c;
	atomic_bool stop;
	atomic_int applied;
};

static void *apply_thread(void *arg)
{
	struct churn *ch = arg;
	int64_t rev = 100;
	while (!atomic_load(&ch->stop)) {
		rev++;
		apply1(ch->c, pod_key("t1", "a", "p1"), pod_json("t1", "a", "p1", "x", "n1", "Running", 3), rev);
		atomic_fetch_add(&ch->applied, 1);
	}
	return NULL;
}

static void test_close_while_delivering(void **state)
{
	struct churn ch = { seeded(NULL, 100), false, 0 };
	pthread_t th;
	pthread_create(&th, NULL, apply_thread, &ch);
	int violations = 0, got = 0;
	time_t deadline = time(NULL) + 20;
	/* the lock is not fair: go on until both sides made progress */
	for (int i = 0; i < 2000 || (atomic_load(&ch.applied) < 500 && time(NULL) < deadline); i++) {
		struct wctx *x = xcalloc(1, sizeof(*x));
		struct watcher *w = watch(ch.c, "t1", NULL, NULL, NULL, -1, 4, x);
		struct wevent ev;
		for (int k = 0; k < 3; k++) {
			int rc = watcher_next(w, &ev);
			if (rc == 1) {
				got++;
				wevent_release(&ev);
			}
		}
		watcher_close(w);
		atomic_store(&x->closed, true);
		/* give the apply thread a chance to (wrongly) notify */
		for (int k = 0; k < 100; k++)
			__asm__ volatile("" ::: "memory");
		violations += atomic_load(&x->after_close);
		free(x);
	}
	atomic_store(&ch.stop, true);
	pthread_join(th, NULL);
	assert_int_equal(violations, 0);
	assert_true(got > 0);
	assert_true(atomic_load(&ch.applied) >= 500);
	assert_int_equal(wcache_watchers_total(), 0);
	wcache_free(ch.c);
}

static void nop_notify(void *ud)
{
	(*(long *)ud)++;
}

/* 1,000 watchers x 1,000 events: delivery must stay pointer pushes. */
static void test_fanout(void **state)
{
	struct wcache *c = seeded(NULL, 100);
	enum { NW = 1000, NE = 1000 };
	struct watcher **ws = xcalloc(NW, sizeof(*ws));
	long notifies = 0;
	struct label_selector *ls;
	assert_int_equal(label_selector_parse("app=x", &ls, NULL), 0);
	for (int i = 0; i < NW; i++) {
		struct wfilter f = { i % 2 ? "t1" : NULL, NULL, NULL, i % 3 ? NULL : ls, NULL };
		assert_int_equal(wcache_watch(c, &f, 100, NE + 10, nop_notify, &notifies, &ws[i]), 0);
	}
	char *js = pod_json("t1", "a", "hot", "x", "n1", "Running", 1000);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	struct evbuild eb = { 0 };
	for (int i = 0; i < NE; i++)
		eb_put(&eb, pod_key("t1", "a", "hot"), xstrdup(js), 101 + i);
	for (int i = 0; i < NE; i += 10) /* batches of 10 as a watch stream would deliver them */
		wcache_apply_events(c, eb.v + i, 10);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	print_message("fanout: %d watchers x %d events delivered in %.1f ms\n", NW, NE, ms);
	long total = 0;
	for (int i = 0; i < NW; i++) {
		struct wevent ev;
		int n = 0;
		while (watcher_next(ws[i], &ev) == 1) {
			assert_int_equal(ev.rv, 101 + n);
			n++;
			wevent_release(&ev);
		}
		assert_int_equal(n, NE);
		total += n;
		watcher_close(ws[i]);
	}
	assert_int_equal(total, (long)NW * NE);
	assert_int_equal(notifies, (long)NW * (NE / 10));
	assert_true(ms < 5000);
	eb_release(&eb);
	free(js);
	free(ws);
	label_selector_free(ls);
	wcache_free(c);
}

/* "t/ns/name@rv,..." of a page (wcache_list_page), or "GONE"/"UNAVAILABLE". */
static char *page_str(struct wcache *c, const char *lsel, const char *fsel, const char *after, int64_t at,
		      size_t limit)
{
	struct label_selector *ls = NULL;
	struct field_selector *fs = NULL;
	if (lsel)
		assert_int_equal(label_selector_parse(lsel, &ls, NULL), 0);
	if (fsel)
		assert_int_equal(field_selector_parse(fsel, &fs, NULL), 0);
	struct wfilter f = { NULL, NULL, NULL, ls, fs };
	struct cobj **objs;
	size_t n;
	int64_t rv;
	char *akey = after ? xasprintf("/registry/pods/%s", after) : NULL;
	int rc = wcache_list_page(c, &f, akey, at, limit, &objs, &n, &rv);
	free(akey);
	label_selector_free(ls);
	field_selector_free(fs);
	if (rc)
		return xstrdup(rc == E_GONE ? "GONE" : "UNAVAILABLE");
	assert_int_equal(rv, at ? at : wcache_revision(c));
	struct buf b = BUF_INIT;
	for (size_t i = 0; i < n; i++) {
		buf_addf(&b, "%s%s/%s/%s@%lld", i ? "," : "", objs[i]->tenant, objs[i]->ns, objs[i]->name,
			 (long long)objs[i]->rv);
		cobj_unref(objs[i]);
	}
	free(objs);
	return buf_detach(&b, NULL);
}

#define assert_page(c, ls, fs, after, at, limit, want)                     \
	do {                                                               \
		char *_got = page_str(c, ls, fs, after, at, limit);        \
		assert_string_equal(_got, want);                           \
		free(_got);                                                \
	} while (0)

/* Pages at the current revision and at a past one rebuilt from the ring: deleted objects come
 * back, added ones vanish, changed ones show their old state (also under selectors and the node
 * index); revisions outside the ring, or before the list, are GONE. */
static void test_list_page(void **state)
{
	(void)state;
	struct wcache *c = wcache_new_detached(&test_pods, NULL);
	struct cobj **objs;
	size_t n;
	int64_t rv;
	assert_int_equal(wcache_list_page(c, &(struct wfilter){ 0 }, NULL, 0, 0, &objs, &n, &rv), E_UNAVAILABLE);
	wcache_free(c);
	c = seeded(NULL, 100);
	assert_page(c, NULL, NULL, NULL, 0, 2, "t1/a/p1@3,t1/a/p3@2,t1/ab/p9@7");
	assert_page(c, NULL, NULL, "t1/a/p3", 0, 2, "t1/ab/p9@7,t1/b/p2@4,t10/a/p0@6");
	assert_page(c, NULL, NULL, "t10/a/p0", 100, 0, "t2/a/p1@5");
	apply1(c, pod_key("t1", "a", "p3"), NULL, 101);
	apply1(c, pod_key("t1", "a", "p2"), pod_json("t1", "a", "p2", "x", "n1", "Pending", 1), 102);
	apply1(c, pod_key("t1", "b", "p2"), pod_json("t1", "b", "p2", "y", "n1", "Pending", 1), 103);
	apply1(c, pod_key("t1", "b", "p2"), pod_json("t1", "b", "p2", "x", "n2", "Pending", 2), 104);
	assert_page(c, NULL, NULL, NULL, 0, 0, "t1/a/p1@3,t1/a/p2@102,t1/ab/p9@7,t1/b/p2@104,t10/a/p0@6,t2/a/p1@5");
	assert_page(c, NULL, NULL, NULL, 100, 0, "t1/a/p1@3,t1/a/p3@2,t1/ab/p9@7,t1/b/p2@4,t10/a/p0@6,t2/a/p1@5");
	assert_page(c, NULL, NULL, "t1/a/p1", 100, 2, "t1/a/p3@2,t1/ab/p9@7,t1/b/p2@4");
	assert_page(c, NULL, NULL, NULL, 102, 0, "t1/a/p1@3,t1/a/p2@102,t1/ab/p9@7,t1/b/p2@4,t10/a/p0@6,t2/a/p1@5");
	assert_page(c, NULL, NULL, NULL, 103, 0,
		    "t1/a/p1@3,t1/a/p2@102,t1/ab/p9@7,t1/b/p2@103,t10/a/p0@6,t2/a/p1@5");
	assert_page(c, "app=x", NULL, NULL, 100, 0, "t1/a/p3@2,t1/b/p2@4,t10/a/p0@6,t2/a/p1@5");
	assert_page(c, "app=x", NULL, NULL, 103, 0, "t1/a/p2@102,t10/a/p0@6,t2/a/p1@5");
	assert_page(c, NULL, "spec.nodeName=n1", NULL, 100, 0, "t1/a/p3@2,t2/a/p1@5");
	assert_page(c, NULL, "spec.nodeName=n1", NULL, 103, 0, "t1/a/p2@102,t1/b/p2@103,t2/a/p1@5");
	assert_page(c, NULL, "spec.nodeName=n1", NULL, 0, 0, "t1/a/p2@102,t2/a/p1@5");
	assert_page(c, NULL, "spec.nodeName=n2", "t1/a/p1", 100, 1, "t10/a/p0@6");
	assert_page(c, NULL, "spec.nodeName=n2", NULL, 100, 1, "t1/a/p1@3,t10/a/p0@6");
	assert_page(c, NULL, NULL, NULL, 99, 0, "GONE");
	assert_page(c, NULL, NULL, NULL, 105, 0, "GONE");
	wcache_free(c);
}

/* Which keys are markers; a marker's events move the revision but are never objects, ring
 * events or watch events; a listed marker is skipped and its creation noted. */
static void test_markers(void **state)
{
	(void)state;
	assert_true(wcache_marker_key("/registry/pods/", "/registry/pods/~progress"));
	assert_false(wcache_marker_key("/registry/pods/", "/registry/pods/t1/~progress")); /* a role's name */
	assert_false(wcache_marker_key("/registry/pods/", "/registry/pods/~progressx"));
	assert_false(wcache_marker_key("/registry/pods/", "/registry/pod/~progress"));
	assert_false(wcache_marker_key("/registry/pods/", "/registry/nodes/~progress"));

	struct wcache *c = seeded(NULL, 100);
	assert_string_equal(wcache_marker(c), "/registry/pods/~progress");
	struct wctx x = { 0 };
	struct watcher *w = watch(c, NULL, NULL, NULL, NULL, 100, 100, &x);
	assert_int_equal(wcache_marker_created(c), 0);
	struct evbuild eb = { 0 };
	eb_put(&eb, xstrdup("/registry/pods/~progress"), xstrdup("{\"metadata\":{\"name\":\"~progress\"}}"), 105);
	eb.v[0].kv.create_rev = 105;
	wcache_apply_events(c, eb.v, eb.n);
	eb_release(&eb);
	assert_int_equal(wcache_revision(c), 105);
	assert_int_equal(wcache_marker_created(c), 105);
	assert_int_equal(wcache_size(c), 6);
	assert_int_equal(wcache_history_len(c), 0);
	assert_null(wcache_get(c, "/registry/pods/~progress"));
	assert_drain(w, "");
	assert_int_equal(watcher_revision(w), 105);
	apply1(c, pod_key("t1", "a", "p1"), NULL, 106);
	apply1(c, xstrdup("/registry/pods/~progress"), NULL, 107); /* someone deleted it */
	assert_int_equal(wcache_revision(c), 107);
	assert_int_equal(wcache_marker_created(c), 0);
	assert_drain(w, "DELETED:t1/a/p1@106");
	assert_list(c, NULL, NULL, NULL, NULL, NULL, "t1/a/p3,t1/ab/p9,t1/b/p2,t10/a/p0,t2/a/p1");
	watcher_close(w);
	wcache_free(c);

	/* in a list */
	c = wcache_new_detached(&test_pods, NULL);
	struct etcd_kv kvs[2] = {
		{ .key = "/registry/pods/t1/a/p1", .value = "{\"metadata\":{\"name\":\"p1\",\"namespace\":\"a\","
							  "\"tenant\":\"t1\"}}",
		  .mod_rev = 3 },
		{ .key = "/registry/pods/~progress", .value = "{\"metadata\":{\"name\":\"~progress\"}}",
		  .create_rev = 4, .mod_rev = 9 },
	};
	kvs[0].value_len = strlen(kvs[0].value);
	kvs[1].value_len = strlen(kvs[1].value);
	wcache_apply_list(c, kvs, 2, 10);
	assert_list(c, NULL, NULL, NULL, NULL, NULL, "t1/a/p1");
	assert_int_equal(wcache_marker_created(c), 4);
	wcache_free(c);
}

/* A fake etcd for progress: each marker "put" gets the next revision of a shared counter, and
 * its event reaches the cache (unless dropped) from another thread a moment later. */
struct fake_etcd {
	struct wcache *c;
	atomic_int puts;
	_Atomic int64_t next_rev;
	bool fail, drop;
};

static void *marker_event_thread(void *arg)
{
	struct fake_etcd *fe = arg;
	struct timespec ts = { 0, 2000000 };
	nanosleep(&ts, NULL);
	int64_t rev = atomic_load(&fe->next_rev);
	struct evbuild eb = { 0 };
	eb_put(&eb, xstrdup(wcache_marker(fe->c)), xstrdup("marker"), rev);
	wcache_apply_events(fe->c, eb.v, eb.n);
	eb_release(&eb);
	return NULL;
}

static int fake_put(void *ud, const char *key, int64_t *ret_rev)
{
	struct fake_etcd *fe = ud;
	assert_string_equal(key, "/registry/pods/~progress");
	atomic_fetch_add(&fe->puts, 1);
	struct timespec ts = { 0, 3000000 }; /* a write takes a while: waiters pile up */
	nanosleep(&ts, NULL);
	if (fe->fail)
		return E_UNAVAILABLE;
	*ret_rev = atomic_fetch_add(&fe->next_rev, 1) + 1;
	if (!fe->drop) {
		pthread_t th;
		assert_int_equal(pthread_create(&th, NULL, marker_event_thread, fe), 0);
		pthread_detach(th);
	}
	return 0;
}

struct cur_arg {
	struct wcache *c;
	int64_t rv;
	int rc;
};

static void *wait_current_thread(void *arg)
{
	struct cur_arg *a = arg;
	a->rc = wcache_wait_current(a->c, a->rv, 2000);
	return NULL;
}

/* wcache_wait_current: a current cache writes nothing; a quiet one behind etcd writes its
 * marker and is current once its event comes; concurrent readers share marker writes; a
 * failed write or a lost event ends the wait with an error (the caller reads etcd). */
static void test_wait_current(void **state)
{
	(void)state;
	struct wcache *c = seeded(NULL, 100);
	struct fake_etcd fe = { .c = c };
	atomic_init(&fe.puts, 0);
	atomic_init(&fe.next_rev, 200); /* other kinds were written: etcd is at 200 */
	wcache_set_progress(c, fake_put, &fe, NULL);
	assert_int_equal(wcache_wait_current(c, 100, 1000), 0);
	assert_int_equal(atomic_load(&fe.puts), 0);
	assert_int_equal(wcache_wait_current(c, 200, 1000), 0);
	assert_int_equal(atomic_load(&fe.puts), 1);
	assert_int_equal(wcache_revision(c), 201);
	assert_int_equal(wcache_size(c), 6);
	assert_int_equal(wcache_history_len(c), 0);

	/* 16 readers at once, all at etcd's revision 230: one or two marker writes serve them all */
	atomic_store(&fe.next_rev, 230);
	struct cur_arg args[16];
	pthread_t th[16];
	for (int i = 0; i < 16; i++) {
		args[i] = (struct cur_arg){ c, 230, -1 };
		assert_int_equal(pthread_create(&th[i], NULL, wait_current_thread, &args[i]), 0);
	}
	for (int i = 0; i < 16; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(args[i].rc, 0);
	}
	assert_in_range(atomic_load(&fe.puts), 2, 3);
	assert_true(wcache_revision(c) >= 230);

	fe.fail = true;
	int64_t r = wcache_revision(c);
	assert_int_equal(wcache_wait_current(c, r + 5, 1000), E_UNAVAILABLE);
	fe.fail = false;
	fe.drop = true; /* the event never comes: bounded */
	atomic_store(&fe.next_rev, r + 10);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(wcache_wait_current(c, r + 10, 100), E_TIMEOUT);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 < 1000);
	/* a cache without a marker writer only waits */
	struct wcache *d = seeded(NULL, 100);
	assert_int_equal(wcache_wait_current(d, 101, 20), E_TIMEOUT);
	wcache_free(d);
	struct timespec ts = { 0, 20000000 };
	nanosleep(&ts, NULL); /* the detached event threads are done */
	wcache_free(c);
}

/* wcache_nudge: a cache at or past the revision writes nothing; one behind writes its marker
 * once without waiting (a second nudge while that marker's revision covers rv writes nothing),
 * and the marker's event brings the cache past rv; a failed write says so. */
static void test_nudge(void **state)
{
	(void)state;
	struct wcache *c = seeded(NULL, 100);
	struct fake_etcd fe = { .c = c };
	atomic_init(&fe.puts, 0);
	atomic_init(&fe.next_rev, 700); /* other kinds were written */
	assert_false(wcache_nudge(c, 700)); /* no marker writer yet */
	wcache_set_progress(c, fake_put, &fe, NULL);
	assert_false(wcache_nudge(c, 100));
	assert_int_equal(atomic_load(&fe.puts), 0);
	assert_true(wcache_nudge(c, 700));
	assert_int_equal(atomic_load(&fe.puts), 1);
	assert_false(wcache_nudge(c, 700)); /* the marker written at 701 covers 700 */
	assert_int_equal(atomic_load(&fe.puts), 1);
	assert_int_equal(wcache_wait_for(c, 701, 1000), 0);
	assert_int_equal(wcache_revision(c), 701);
	fe.fail = true;
	assert_false(wcache_nudge(c, 900));
	assert_int_equal(atomic_load(&fe.puts), 2);
	fe.fail = false;
	assert_int_equal(wcache_revision(c), 701);
	struct timespec ts = { 0, 20000000 };
	nanosleep(&ts, NULL); /* the detached event threads are done */
	wcache_free(c);
}

/* A tenant's last change: its newest event in the ring (a delete too), else the ring's start;
 * and its objects' count. */
static void test_tenant_last_change(void **state)
{
	(void)state;
	struct wcache *c = seeded(NULL, 100);
	assert_int_equal(wcache_tenant_last_change(c, "t1"), 100); /* nothing since the list */
	/* and a tenant's objects counted (what a tenant's LIST is weighed by, fairshare.c) */
	assert_int_equal(wcache_tenant_size(c, "t1"), 4);
	assert_int_equal(wcache_tenant_size(c, "t10"), 1);
	assert_int_equal(wcache_tenant_size(c, "t"), 0);
	apply1(c, pod_key("t1", "a", "q1"), pod_json("t1", "a", "q1", "y", "n1", "Running", 100), 104);
	apply1(c, pod_key("t2", "a", "p1"), pod_json("t2", "a", "p1", "y", "n1", "Running", 100), 105);
	assert_int_equal(wcache_tenant_last_change(c, "t1"), 104);
	assert_int_equal(wcache_tenant_last_change(c, "t2"), 105);
	assert_int_equal(wcache_tenant_last_change(c, "t10"), 100);
	assert_int_equal(wcache_tenant_size(c, "t1"), 5);
	assert_int_equal(wcache_tenant_size(c, "t2"), 1); /* p1 changed, not added */
	apply1(c, pod_key("t1", "a", "q1"), NULL, 107);
	assert_int_equal(wcache_tenant_size(c, "t1"), 4);
	apply1(c, pod_key("t2", "a", "p1"), pod_json("t2", "a", "p1", "w", "n1", "Running", 100), 108);
	assert_int_equal(wcache_tenant_last_change(c, "t1"), 107); /* the delete */
	assert_int_equal(wcache_tenant_last_change(c, "t"), 100);  /* names are whole */
	struct timespec ts = { 0, 20000000 };
	nanosleep(&ts, NULL);
	wcache_free(c);
}

/* A watch event with prev_kv, as the history watch brings them (key and values taken). */
static void eb_hist(struct evbuild *eb, char *key, char *json, char *prev, int64_t prev_rev, int64_t rev)
{
	eb_put(eb, key, json, rev);
	struct etcd_event *e = &eb->v[eb->n - 1];
	if (prev) {
		e->prev_kv.key = xstrdup(key);
		e->prev_kv.value = prev;
		e->prev_kv.value_len = strlen(prev);
		e->prev_kv.mod_rev = prev_rev;
	}
}

static void eb_hist_release(struct evbuild *eb)
{
	for (size_t i = 0; i < eb->n; i++) {
		free(eb->v[i].prev_kv.key);
		free(eb->v[i].prev_kv.value);
	}
	eb_release(eb);
}

struct watch_arg {
	struct wcache *c;
	int64_t from;
	int rc;
	struct watcher *w;
	struct wctx x;
};

static void *watch_thread(void *arg)
{
	struct watch_arg *a = arg;
	a->rc = wcache_watch(a->c, &(struct wfilter){ 0 }, a->from, 100, on_notify, &a->x, &a->w);
	return NULL;
}

/* The history before the first list: the cache is ready and current at the list at once (the
 * history never shows in lists or objects); a watch from inside the history waits for it and
 * then gets exactly the events after its revision; one from before it gets GONE; a history that
 * fails to load leaves 410s. */
static void test_history(void **state)
{
	(void)state;
	struct wcache *c = wcache_new_detached(&test_pods, NULL);
	wcache_history_begin(c, 90);
	struct etcd_kv kv = { .key = "/registry/pods/t1/a/p1", .mod_rev = 98 };
	kv.value = pod_json("t1", "a", "p1", "x", "n1", "Running", 3);
	kv.value_len = strlen(kv.value);
	wcache_apply_list(c, &kv, 1, 100);
	free(kv.value);
	assert_true(wcache_ready(c));
	assert_int_equal(wcache_revision(c), 100);
	assert_true(wcache_history_loading(c));
	/* the current state only: p2 (deleted at 97) is not back */
	assert_list(c, NULL, NULL, NULL, NULL, NULL, "t1/a/p1");
	apply1(c, pod_key("t1", "a", "p3"), pod_json("t1", "a", "p3", "x", "n1", "Running", 1), 101);
	assert_int_equal(wcache_history_start(c), 100);

	struct watch_arg wa = { .c = c, .from = 95 };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, watch_thread, &wa), 0);
	/* a watch from before the history's start does not wait */
	struct watcher *w = NULL;
	assert_int_equal(wcache_watch(c, &(struct wfilter){ 0 }, 89, 100, nop_notify, NULL, &w), E_GONE);

	struct evbuild eb = { 0 };
	eb_hist(&eb, pod_key("t1", "a", "p2"), pod_json("t1", "a", "p2", "x", "", "Pending", 1), NULL, 0, 91);
	eb_hist(&eb, pod_key("t1", "a", "p1"), pod_json("t1", "a", "p1", "x", "", "Pending", 1), NULL, 0, 94);
	eb_hist(&eb, pod_key("t1", "a", "p2"), pod_json("t1", "a", "p2", "x", "n1", "Pending", 2),
		pod_json("t1", "a", "p2", "x", "", "Pending", 1), 91, 96);
	eb_hist(&eb, xstrdup("/registry/pods/~progress"), xstrdup("m"), NULL, 0, 96);
	eb_hist(&eb, pod_key("t1", "a", "p2"), NULL, pod_json("t1", "a", "p2", "x", "n1", "Pending", 2), 96, 97);
	eb_hist(&eb, pod_key("t1", "a", "p1"), pod_json("t1", "a", "p1", "x", "n1", "Running", 3),
		pod_json("t1", "a", "p1", "x", "", "Pending", 1), 94, 98);
	wcache_history_add(c, eb.v, 2);
	struct timespec ts = { 0, 30000000 };
	nanosleep(&ts, NULL);
	assert_null(wa.w); /* still waiting */
	wcache_history_add(c, eb.v + 2, eb.n - 2);
	assert_list(c, NULL, NULL, NULL, NULL, NULL, "t1/a/p1,t1/a/p3");
	wcache_history_end(c, true);
	pthread_join(th, NULL);
	assert_int_equal(wa.rc, 0);
	assert_drain(wa.w, "MODIFIED:t1/a/p2@96,DELETED:t1/a/p2@97,MODIFIED:t1/a/p1@98,ADDED:t1/a/p3@101");
	watcher_close(wa.w);
	assert_false(wcache_history_loading(c));
	assert_int_equal(wcache_history_start(c), 90);
	assert_int_equal(wcache_history_len(c), 6);
	w = watch(c, NULL, NULL, NULL, "spec.nodeName=n1", 90, 100, &wa.x);
	assert_drain(w, "ADDED:t1/a/p2@96,DELETED:t1/a/p2@97,ADDED:t1/a/p1@98,ADDED:t1/a/p3@101");
	watcher_close(w);
	assert_int_equal(wcache_watch(c, &(struct wfilter){ 0 }, 89, 100, nop_notify, NULL, &w), E_GONE);
	/* pages are not served from before the list: the history may lack previous states */
	assert_page(c, NULL, NULL, NULL, 99, 0, "GONE");
	assert_page(c, NULL, NULL, NULL, 100, 0, "t1/a/p1@98");
	assert_list(c, NULL, NULL, NULL, NULL, NULL, "t1/a/p1,t1/a/p3");
	wcache_free(c);
	eb_hist_release(&eb);

	/* a failed load: watches from before the list get 410 at once */
	c = wcache_new_detached(&test_pods, &(struct wcache_options){ .history_max = 3, .history_min = 3 });
	wcache_history_begin(c, 50);
	wcache_apply_list(c, NULL, 0, 100);
	wcache_history_end(c, false);
	assert_int_equal(wcache_watch(c, &(struct wfilter){ 0 }, 60, 100, nop_notify, NULL, &w), E_GONE);
	/* a history longer than the ring keeps its newest events, and the start moves with them */
	wcache_history_begin(c, 50);
	wcache_apply_list(c, NULL, 0, 100);
	for (int i = 0; i < 5; i++)
		eb_hist(&eb, pod_key("t1", "a", "q"), pod_json("t1", "a", "q", "x", "", "Pending", (size_t)i),
			i ? pod_json("t1", "a", "q", "x", "", "Pending", (size_t)i - 1) : NULL, 60 + i - 1, 60 + i);
	wcache_history_add(c, eb.v, eb.n);
	apply1(c, pod_key("t1", "a", "r"), pod_json("t1", "a", "r", "x", "", "Pending", 1), 101);
	wcache_history_end(c, true);
	assert_int_equal(wcache_history_len(c), 3);
	assert_int_equal(wcache_history_start(c), 62);
	assert_int_equal(wcache_watch(c, &(struct wfilter){ 0 }, 61, 100, nop_notify, NULL, &w), E_GONE);
	w = watch(c, NULL, NULL, NULL, NULL, 62, 100, &wa.x);
	assert_drain(w, "MODIFIED:t1/a/q@63,MODIFIED:t1/a/q@64,ADDED:t1/a/r@101");
	watcher_close(w);
	wcache_free(c);
	eb_hist_release(&eb);
}

/* Every wait on one history load shares its budget: once WCACHE_HISTORY_WAIT_MS have passed since
 * the load began, a watch from inside it gets GONE at once (a multiplexed watch opens thousands
 * of watches one after the other: each must not wait the whole budget again). */
static void test_history_wait_budget(void **state)
{
	(void)state;
	struct wcache *c = wcache_new_detached(&test_pods, NULL);
	wcache_history_begin(c, 90);
	wcache_apply_list(c, NULL, 0, 100);
	struct watcher *w = NULL;
	int64_t t0 = mono_ms();
	assert_int_equal(wcache_watch(c, &(struct wfilter){ 0 }, 95, 100, nop_notify, NULL, &w), E_GONE);
	int64_t t1 = mono_ms();
	assert_in_range(t1 - t0, WCACHE_HISTORY_WAIT_MS - 100, WCACHE_HISTORY_WAIT_MS + 2000);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(wcache_watch(c, &(struct wfilter){ 0 }, 95, 100, nop_notify, NULL, &w), E_GONE);
	assert_true(mono_ms() - t1 < 1000);
	wcache_history_end(c, false);
	wcache_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_history_wait_budget),
		cmocka_unit_test(test_metadata_close), cmocka_unit_test(test_cobj_new),
		cmocka_unit_test(test_cobj_fast),
		cmocka_unit_test(test_not_ready),
		cmocka_unit_test(test_write_hints),    cmocka_unit_test(test_trees),
		cmocka_unit_test(test_node_delivery),
		cmocka_unit_test(test_list_filters),
		cmocka_unit_test(test_list_page),       cmocka_unit_test(test_markers),
		cmocka_unit_test(test_wait_current),
		cmocka_unit_test(test_nudge),
		cmocka_unit_test(test_tenant_last_change),
		cmocka_unit_test(test_history),
		cmocka_unit_test(test_node_index),
		cmocka_unit_test(test_watch_initial_and_live),
		cmocka_unit_test(test_watch_replay),
		cmocka_unit_test(test_watch_gone),
		cmocka_unit_test(test_selector_transitions),
		cmocka_unit_test(test_overflow),
		cmocka_unit_test(test_relist_closes_watchers),
		cmocka_unit_test(test_free_ends_watchers),
		cmocka_unit_test(test_wait_for),
		cmocka_unit_test(test_close_while_delivering),
		cmocka_unit_test(test_fanout),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
