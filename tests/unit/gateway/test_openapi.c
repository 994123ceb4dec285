/* The gateway's OpenAPI merge: paths and definitions (v2) and components.schemas (v3) are united
 * with the first document winning, kinds declared by either side survive, the v3 index lists
 * every group version once with a hash that follows each partition's, keys that could leave
 * /openapi/v3/ are dropped, and the merged v2 document encodes as protobuf with both sides. The
 * cache (oapi_get with a fake partition fetch): served without asking while fresh, revalidated
 * with the partitions' tags after, rebuilt when one changes, a partition that does not answer left
 * out, 304 for the gateway's own tags. */
#define _GNU_SOURCE /* memmem */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "apiserver/internal.h"
#include "gw.h"
#include "gwtest.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

static json_t *parse(const char *s)
{
	json_error_t e;
	json_t *j = json_loads(s, 0, &e);
	if (!j)
		fail_msg("bad test JSON: %s: %s", e.text, s);
	return j;
}

#define GVK(k) "\"x-kubernetes-group-version-kind\":[{\"group\":\"\",\"kind\":\"" k "\",\"version\":\"v1\"}]"

static const char tp_v2[] =
	"{\"swagger\":\"2.0\",\"info\":{\"title\":\"Kubernetes\"},"
	"\"paths\":{\"/api/v1/namespaces/{namespace}/pods\":{\"get\":{\"operationId\":\"listPods\"}},"
	"\"/api/v1/namespaces\":{\"get\":{\"operationId\":\"tp\"}}},"
	"\"definitions\":{\"io.k8s.api.core.v1.Pod\":{\"type\":\"object\"," GVK("Pod") "},"
	"\"io.k8s.api.core.v1.NodeSelector\":{\"type\":\"object\",\"description\":\"tp\"},"
	"\"io.k8s.api.core.v1.Taint\":{\"type\":\"object\",\"description\":\"only a field here\"},"
	"\"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta\":{\"type\":\"object\",\"description\":\"tp\"}}}";
static const char rm_v2[] =
	"{\"swagger\":\"2.0\",\"info\":{\"title\":\"other\"},"
	"\"paths\":{\"/api/v1/nodes\":{\"get\":{\"operationId\":\"listNodes\"}},"
	"\"/api/v1/namespaces\":{\"get\":{\"operationId\":\"rm\"}}},"
	"\"definitions\":{\"io.k8s.api.core.v1.Node\":{\"type\":\"object\"," GVK("Node") "},"
	"\"io.k8s.api.core.v1.Taint\":{\"type\":\"object\",\"description\":\"a kind here\"," GVK("Taint") "},"
	"\"io.k8s.api.core.v1.Pod\":{\"type\":\"object\",\"description\":\"rm\","
	"\"x-kubernetes-group-version-kind\":[{\"group\":\"\",\"kind\":\"Pod\",\"version\":\"v1\"},"
	"{\"group\":\"x\",\"kind\":\"Pod\",\"version\":\"v9\"}]},"
	"\"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta\":{\"type\":\"object\",\"description\":\"rm\"}}}";

static void test_merge_v2(void **state)
{
	(void)state;
	json_t *dst = parse(tp_v2), *src = parse(rm_v2);
	oapi_merge(dst, src);
	json_t *paths = json_object_get(dst, "paths"), *defs = json_object_get(dst, "definitions");
	assert_int_equal(json_object_size(paths), 3);
	assert_non_null(json_object_get(paths, "/api/v1/nodes"));
	assert_non_null(json_object_get(paths, "/api/v1/namespaces/{namespace}/pods"));
	assert_string_equal(json_path_str(dst, "paths./api/v1/namespaces.get.operationId"), "tp"); /* first wins */
	assert_string_equal(json_path_str(dst, "info.title"), "Kubernetes");
	assert_int_equal(json_object_size(defs), 5);
	assert_non_null(json_object_get(defs, "io.k8s.api.core.v1.Node"));
	assert_string_equal(json_str(json_object_get(defs, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"),
				     "description"),
			    "tp");
	/* a definition that is a kind only on the second side becomes that side's */
	json_t *taint = json_object_get(defs, "io.k8s.api.core.v1.Taint");
	assert_string_equal(json_str(taint, "description"), "a kind here");
	assert_int_equal(json_array_size(json_object_get(taint, "x-kubernetes-group-version-kind")), 1);
	/* kinds both declare: the first's schema, with the kinds of both once each */
	json_t *pod = json_object_get(defs, "io.k8s.api.core.v1.Pod");
	assert_null(json_object_get(pod, "description"));
	assert_int_equal(json_array_size(json_object_get(pod, "x-kubernetes-group-version-kind")), 2);
	/* src is left as it was */
	assert_int_equal(json_object_size(json_object_get(src, "paths")), 2);
	json_t *src_taint = json_object_get(json_object_get(src, "definitions"), "io.k8s.api.core.v1.Taint");
	assert_int_equal(json_array_size(json_object_get(src_taint, "x-kubernetes-group-version-kind")), 1);
	/* merging again changes nothing */
	json_t *again = json_deep_copy(dst);
	oapi_merge(again, src);
	assert_true(json_equal(again, dst));
	json_decref(again);
	/* the protobuf form of the merged document holds both sides */
	struct buf pb = BUF_INIT;
	openapi_v2_protobuf(dst, &pb);
	assert_non_null(memmem(pb.ptr, pb.len, "io.k8s.api.core.v1.Node", 23));
	assert_non_null(memmem(pb.ptr, pb.len, "/api/v1/namespaces/{namespace}/pods", 35));
	assert_non_null(memmem(pb.ptr, pb.len, "listNodes", 9));
	buf_release(&pb);
	json_decref(dst);
	json_decref(src);
}

static void test_merge_v3(void **state)
{
	(void)state;
	json_t *dst = parse("{\"openapi\":\"3.0.0\",\"paths\":{\"/api/v1/pods\":{}},"
			    "\"components\":{\"schemas\":{\"a\":{\"type\":\"object\"},"
			    "\"meta\":{\"description\":\"tp\"}}}}");
	json_t *src = parse("{\"openapi\":\"3.0.0\",\"paths\":{\"/api/v1/nodes\":{},\"/api/v1/pods\":{\"x\":1}},"
			    "\"components\":{\"schemas\":{\"b\":{\"type\":\"object\"},"
			    "\"meta\":{\"description\":\"rm\"}}}}");
	oapi_merge(dst, src);
	assert_int_equal(json_object_size(json_object_get(dst, "paths")), 2);
	assert_int_equal(json_object_size(json_object_get(json_object_get(dst, "paths"), "/api/v1/pods")), 0);
	json_t *schemas = json_path(dst, "components.schemas");
	assert_int_equal(json_object_size(schemas), 3);
	assert_string_equal(json_str(json_object_get(schemas, "meta"), "description"), "tp");
	/* a document without components gets them; wrong types are left alone */
	json_t *bare = parse("{\"paths\":[]}");
	oapi_merge(bare, src);
	assert_true(json_is_array(json_object_get(bare, "paths")));
	assert_int_equal(json_object_size(json_path(bare, "components.schemas")), 2);
	json_t *odd = parse("{\"components\":{\"schemas\":\"x\"},\"definitions\":7}");
	oapi_merge(odd, src);
	oapi_merge(odd, NULL);
	assert_string_equal(json_path_str(odd, "components.schemas"), "x");
	json_decref(odd);
	json_decref(bare);
	json_decref(dst);
	json_decref(src);
}

static const char *url_of(json_t *idx, const char *key)
{
	return json_string_value(json_object_get(json_object_get(json_object_get(idx, "paths"), key),
						 "serverRelativeURL"));
}

static void test_index(void **state)
{
	(void)state;
	json_t *tp = parse("{\"paths\":{\"api/v1\":{\"serverRelativeURL\":\"/openapi/v3/api/v1?hash=AAA\"},"
			   "\"apis/apps/v1\":{\"serverRelativeURL\":\"/openapi/v3/apis/apps/v1?hash=BBB\"},"
			   "\"apis/../../x\":{\"serverRelativeURL\":\"/openapi/v3/x?hash=CCC\"},"
			   "\"version\":{\"serverRelativeURL\":\"/version\"}}}");
	json_t *rm = parse("{\"paths\":{\"api/v1\":{\"serverRelativeURL\":\"/openapi/v3/api/v1?a=b&hash=DDD\"},"
			   "\"apis/coordination.k8s.io/v1\":{\"serverRelativeURL\":\"/x?hash=E\\\"vil\"},"
			   "\"apis/bad/v1\":\"not an object\"}}");
	json_t *both[] = { tp, NULL, rm };
	json_t *idx = oapi_index_merge(both, 3);
	json_t *paths = json_object_get(idx, "paths");
	assert_int_equal(json_object_size(paths), 3);
	/* served by one side: that side's hash, the gateway's path */
	assert_string_equal(url_of(idx, "apis/apps/v1"), "/openapi/v3/apis/apps/v1?hash=BBB");
	assert_string_equal(url_of(idx, "apis/coordination.k8s.io/v1"),
			    "/openapi/v3/apis/coordination.k8s.io/v1?hash=E");
	/* by both: a combination, which changes when either side's does */
	const char *const h[] = { "AAA", "DDD" };
	struct buf c = BUF_INIT;
	oapi_hash_combine(h, 2, &c);
	assert_int_equal(c.len, 64);
	char *want = xasprintf("/openapi/v3/api/v1?hash=%s", buf_cstr(&c));
	assert_string_equal(url_of(idx, "api/v1"), want);
	free(want);
	json_t *rm2 = parse("{\"paths\":{\"api/v1\":{\"serverRelativeURL\":\"/openapi/v3/api/v1?hash=DDE\"}}}");
	json_t *both2[] = { tp, rm2 };
	json_t *idx2 = oapi_index_merge(both2, 2);
	assert_string_not_equal(url_of(idx, "api/v1"), url_of(idx2, "api/v1"));
	assert_string_equal(url_of(idx2, "apis/apps/v1"), "/openapi/v3/apis/apps/v1?hash=BBB");
	const char *const h2[] = { "DDD", "AAA" };
	struct buf c2 = BUF_INIT;
	oapi_hash_combine(h2, 2, &c2);
	assert_string_not_equal(buf_cstr(&c), buf_cstr(&c2)); /* order counts: the first side wins */
	buf_release(&c);
	buf_release(&c2);
	/* nothing in: an empty index */
	json_t *none = oapi_index_merge(NULL, 0);
	assert_int_equal(json_object_size(json_object_get(none, "paths")), 0);
	json_decref(none);
	json_decref(idx2);
	json_decref(rm2);
	json_decref(idx);
	json_decref(tp);
	json_decref(rm);
}

static void test_classify(void **state)
{
	(void)state;
	const char *key;
	assert_int_equal(oapi_classify("/openapi/v2", &key), OAPI_V2);
	assert_null(key);
	assert_int_equal(oapi_classify("/openapi/v2/", &key), OAPI_V2);
	assert_int_equal(oapi_classify("/openapi/v3", &key), OAPI_V3_INDEX);
	assert_int_equal(oapi_classify("/openapi/v3/", &key), OAPI_V3_INDEX);
	assert_int_equal(oapi_classify("/openapi/v3/api/v1", &key), OAPI_V3_GV);
	assert_string_equal(key, "api/v1");
	assert_int_equal(oapi_classify("/openapi/v3/apis/apps/v1", &key), OAPI_V3_GV);
	assert_string_equal(key, "apis/apps/v1");
	static const char *const bad[] = {
		"/openapi/v1", "/openapi/v3/version", "/openapi/v3/apis/../x", "/openapi/v3/apis//v1",
		"/openapi/v3/api/",
		"/openapi/v3/apis/a b/v1", "/openapi/v3/apis/./v1", "/openapi/v2x", "/openapi",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		assert_int_equal(oapi_classify(bad[i], &key), OAPI_NONE);
	char longkey[300] = "apis/";
	memset(longkey + 5, 'a', 260);
	longkey[265] = '\0';
	assert_false(oapi_key_ok(longkey));
	assert_true(oapi_key_ok("apis/coordination.k8s.io/v1"));
	assert_false(oapi_key_ok(NULL));
}

struct fake {
	const char *doc[2], *etag[2];
	bool fail[2];
	int calls, conditional, not_modified;
};

static int fake_fetch(void *ud, struct partition *p, const char *path, const char *inm, struct upstream_resp *ret)
{
	struct fake *f = ud;
	int i = strcmp(p->id, "tp-1") == 0 ? 0 : 1;
	f->calls++;
	if (f->fail[i])
		return E_TIMEOUT;
	*ret = (struct upstream_resp){ .status = 404 };
	if (strcmp(path, "/openapi/v2") != 0)
		return 0;
	if (inm) {
		f->conditional++;
		if (strcmp(inm, f->etag[i]) == 0) {
			f->not_modified++;
			ret->status = 304;
			return 0;
		}
	}
	ret->status = 200;
	ret->etag = xstrdup(f->etag[i]);
	buf_adds(&ret->body, f->doc[i]);
	return 0;
}

static void test_cache(void **state)
{
	(void)state;
	oapi_cache_clear();
	struct partition *tp = test_partition("tp", "tp-1", "\"http://127.0.0.1:1\"");
	struct partition *rm = test_partition("rm", "rm-1", "\"http://127.0.0.1:2\"");
	struct fake fk = { .doc = { tp_v2, rm_v2 }, .etag = { "\"T1\"", "\"R1\"" } };
	struct oapi_fetcher f = { .tps = &tp, .ntp = 1, .rms = &rm, .nrm = 1, .fresh_ms = 3600000, .fetch = fake_fetch,
				  .ud = &fk, .tenant = "t1" };
	struct oapi_reply r;
	assert_int_equal(oapi_get(&f, "/openapi/v2", NULL, NULL, NULL, &r), 0);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.content_type, "application/json");
	assert_int_equal(fk.calls, 2);
	json_t *doc = json_loadb(r.body.ptr, r.body.len, 0, NULL);
	assert_non_null(json_object_get(json_object_get(doc, "paths"), "/api/v1/nodes"));
	assert_non_null(json_object_get(json_object_get(doc, "paths"), "/api/v1/namespaces/{namespace}/pods"));
	json_decref(doc);
	char *tag = xstrdup(r.etag);
	oapi_reply_release(&r);
	/* fresh: the resource manager is not asked, the tenant partition only conditionally (304);
	 * the gateway's own tag gives a 304 */
	for (int i = 0; i < 5; i++) {
		assert_int_equal(oapi_get(&f, "/openapi/v2/", "application/json", tag, NULL, &r), 0);
		assert_int_equal(r.status, 304);
		assert_int_equal(r.body.len, 0);
		assert_string_equal(r.etag, tag);
		oapi_reply_release(&r);
	}
	assert_int_equal(fk.calls, 7);
	assert_int_equal(fk.not_modified, 5);
	assert_int_equal(oapi_cache_entries(), 1);
	/* the protobuf form: its own tag */
	assert_int_equal(oapi_get(&f, "/openapi/v2", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf", tag,
				  NULL, &r),
			 0);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.content_type, "application/com.github.proto-openapi.spec.v2.v1.0+protobuf");
	assert_string_not_equal(r.etag, tag);
	assert_non_null(memmem(r.body.ptr, r.body.len, "listNodes", 9));
	oapi_reply_release(&r);
	/* stale: asked again with their tags, nothing changed, the same document */
	f.fresh_ms = 0;
	int calls0 = fk.calls, cond0 = fk.conditional, nm0 = fk.not_modified;
	assert_int_equal(oapi_get(&f, "/openapi/v2", NULL, tag, NULL, &r), 0);
	assert_int_equal(r.status, 304);
	assert_int_equal(fk.calls, calls0 + 2);
	assert_int_equal(fk.conditional, cond0 + 2);
	assert_int_equal(fk.not_modified, nm0 + 2);
	oapi_reply_release(&r);
	/* the resource manager's document changes: a new document and tag */
	fk.doc[1] = "{\"paths\":{\"/api/v1/nodes/{name}\":{}},\"definitions\":{}}";
	fk.etag[1] = "\"R2\"";
	assert_int_equal(oapi_get(&f, "/openapi/v2", NULL, tag, NULL, &r), 0);
	assert_int_equal(r.status, 200);
	assert_string_not_equal(r.etag, tag);
	assert_non_null(memmem(r.body.ptr, r.body.len, "/api/v1/nodes/{name}", 20));
	assert_null(memmem(r.body.ptr, r.body.len, "listNodes", 9));
	oapi_reply_release(&r);
	/* it stops answering: the tenant partition's document alone, as it sent it */
	fk.fail[1] = true;
	assert_int_equal(oapi_get(&f, "/openapi/v2", NULL, NULL, NULL, &r), 0);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.body.len, strlen(tp_v2));
	assert_memory_equal(r.body.ptr, tp_v2, r.body.len);
	oapi_reply_release(&r);
	/* nobody answers: the last document */
	fk.fail[0] = true;
	assert_int_equal(oapi_get(&f, "/openapi/v2", NULL, NULL, NULL, &r), 0);
	assert_int_equal(r.body.len, strlen(tp_v2));
	oapi_reply_release(&r);
	/* ... but nothing for a document never had */
	assert_int_equal(oapi_get(&f, "/openapi/v3", NULL, NULL, NULL, &r), E_UNAVAILABLE);
	fk.fail[0] = fk.fail[1] = false;
	assert_int_equal(oapi_get(&f, "/openapi/v3/apis/none/v1", NULL, NULL, NULL, &r), E_NOT_FOUND);
	int calls = fk.calls;
	assert_int_equal(oapi_get(&f, "/openapi/v3/../v2", NULL, NULL, NULL, &r), E_NOT_FOUND);
	assert_int_equal(oapi_get(&f, "/openapi/v9", NULL, NULL, NULL, &r), E_NOT_FOUND);
	assert_int_equal(fk.calls, calls); /* not asked for paths that are no document */
	free(tag);
	oapi_cache_clear();
	partition_unref(tp);
	partition_unref(rm);
}


/* Per tenant: the tenant partition answers by the caller's tenant (here: by a fake keyed on
 * f->tenant); tenants see their own documents, tenants whose partition sends the same document
 * share one cache entry, the tenant's own partition is asked first and another one answers when
 * it is down, and a changed document (a new CRD) is served at once, fresh or not. */
struct tfake {
	const char *tenant;
	int calls, not_modified;
	int gen_a; /* tenant a's document generation */
};

static int tenant_fetch(void *ud, struct partition *p, const char *path, const char *inm, struct upstream_resp *ret)
{
	struct tfake *f = ud;
	f->calls++;
	*ret = (struct upstream_resp){ .status = 404 };
	if (strcmp(path, "/openapi/v3/apis/stable.example.com/v1") != 0 && strcmp(path, "/openapi/v2") != 0)
		return 0;
	bool own = strcmp(p->id, "tp-1") == 0 && strcmp(f->tenant, "a") == 0;
	bool v2 = strcmp(path, "/openapi/v2") == 0;
	if (!v2 && !own)
		return 0;
	char *etag = own ? xasprintf("\"%s-A%d\"", p->id, f->gen_a) : xasprintf("\"%s-builtin\"", p->id);
	if (inm && strcmp(inm, etag) == 0) {
		f->not_modified++;
		ret->status = 304;
		free(etag);
		return 0;
	}
	ret->status = 200;
	ret->etag = etag;
	if (own)
		buf_addf(&ret->body, "{\"paths\":{\"/apis/stable.example.com/v1/crontabs\":{}},\"gen\":%d}", f->gen_a);
	else
		buf_addf(&ret->body, "{\"paths\":{\"/api/v1/pods\":{}},\"from\":\"%s\"}", p->id);
	return 0;
}

static void test_tenants(void **state)
{
	(void)state;
	oapi_cache_clear();
	struct partition *tp1 = test_partition("tp", "tp-1", "\"http://127.0.0.1:1\"");
	struct partition *tp2 = test_partition("tp", "tp-2", "\"http://127.0.0.1:2\"");
	struct partition *order1[] = { tp1, tp2 }, *order2[] = { tp2, tp1 };
	struct tfake fk = { 0 };
	struct oapi_fetcher f = { .tps = order1, .ntp = 2, .fresh_ms = 3600000, .fetch = tenant_fetch, .ud = &fk };
	struct oapi_reply r;
	const char *gv = "/openapi/v3/apis/stable.example.com/v1";
	/* a (tp-1) has the group */
	f.tenant = fk.tenant = "a";
	assert_int_equal(oapi_get(&f, gv, NULL, NULL, NULL, &r), 0);
	assert_non_null(memmem(r.body.ptr, r.body.len, "crontabs", 8));
	oapi_reply_release(&r);
	/* b (tp-2) and c (tp-1) do not */
	f.tenant = fk.tenant = "b";
	f.tps = order2;
	assert_int_equal(oapi_get(&f, gv, NULL, NULL, NULL, &r), E_NOT_FOUND);
	f.tenant = fk.tenant = "c";
	f.tps = order1;
	assert_int_equal(oapi_get(&f, gv, NULL, NULL, NULL, &r), E_NOT_FOUND);
	/* v2: a has its own, c and d (tp-1, no CRDs) share one entry, b's comes from tp-2 */
	assert_int_equal(oapi_get(&f, "/openapi/v2", NULL, NULL, NULL, &r), 0);
	assert_non_null(memmem(r.body.ptr, r.body.len, "\"tp-1\"", 6));
	oapi_reply_release(&r);
	size_t n = oapi_cache_entries();
	f.tenant = fk.tenant = "d";
	assert_int_equal(oapi_get(&f, "/openapi/v2", NULL, NULL, NULL, &r), 0);
	oapi_reply_release(&r);
	assert_int_equal(oapi_cache_entries(), n);
	f.tenant = fk.tenant = "b";
	f.tps = order2;
	assert_int_equal(oapi_get(&f, "/openapi/v2", NULL, NULL, NULL, &r), 0);
	assert_non_null(memmem(r.body.ptr, r.body.len, "\"tp-2\"", 6));
	oapi_reply_release(&r);
	assert_int_equal(oapi_cache_entries(), n + 1);
	f.tenant = fk.tenant = "a";
	f.tps = order1;
	assert_int_equal(oapi_get(&f, "/openapi/v2", NULL, NULL, NULL, &r), 0);
	assert_non_null(memmem(r.body.ptr, r.body.len, "crontabs", 8));
	oapi_reply_release(&r);
	/* a again: a conditional request, not modified, the same tag */
	assert_int_equal(oapi_get(&f, gv, NULL, NULL, NULL, &r), 0);
	char *tag = xstrdup(r.etag);
	const char *hashed = strstr(r.body.ptr, "crontabs") ? "ok" : NULL;
	assert_non_null(hashed);
	oapi_reply_release(&r);
	int nm = fk.not_modified;
	assert_int_equal(oapi_get(&f, gv, NULL, tag, NULL, &r), 0);
	assert_int_equal(r.status, 304);
	assert_int_equal(fk.not_modified, nm + 1);
	oapi_reply_release(&r);
	/* a's CRD changes: served at once although the entry is fresh */
	fk.gen_a = 1;
	assert_int_equal(oapi_get(&f, gv, NULL, tag, NULL, &r), 0);
	assert_int_equal(r.status, 200);
	assert_non_null(memmem(r.body.ptr, r.body.len, "\"gen\":1", 7));
	oapi_reply_release(&r);
	/* tp-1 down: tp-2 answers for a (no custom resources there) */
	atomic_store(&tp1->down, true);
	assert_int_equal(oapi_get(&f, "/openapi/v2", NULL, NULL, NULL, &r), 0);
	assert_non_null(memmem(r.body.ptr, r.body.len, "\"tp-2\"", 6));
	assert_null(memmem(r.body.ptr, r.body.len, "crontabs", 8));
	oapi_reply_release(&r);
	atomic_store(&tp1->down, false);
	free(tag);
	oapi_cache_clear();
	partition_unref(tp1);
	partition_unref(tp2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_merge_v2),
		cmocka_unit_test(test_merge_v3),
		cmocka_unit_test(test_index),
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_cache),
		cmocka_unit_test(test_tenants),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
