/* A container's environment (src/kubelet/podenv.c): $(VAR) expansion as Kubernetes does it,
 * the downward API fields, resourceFieldRef, configMapKeyRef/secretKeyRef with optional,
 * envFrom with prefix and invalid keys, and the pod IP left for the runtime. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "testjson.h"
#include "podenv.h"
#include "podlogic.h"
#include "ursa/errors.h"
#include "ursa/xalloc.h"

static const char *map_lookup(void *ud, const char *name, size_t len)
{
	const char *const *kv = ud;
	for (size_t i = 0; kv[i]; i += 2)
		if (strlen(kv[i]) == len && memcmp(kv[i], name, len) == 0)
			return kv[i + 1];
	return NULL;
}

static void expect_expand(const char *in, const char *want)
{
	static const char *const vars[] = { "A", "alpha", "B", "$(A)", "EMPTY", "", NULL };
	char *got = podenv_expand(in, map_lookup, (void *)vars);
	if (strcmp(got, want) != 0)
		fail_msg("expand(\"%s\") = \"%s\", want \"%s\"", in, got, want);
	free(got);
}

static void test_expand(void **state)
{
	(void)state;
	expect_expand("", "");
	expect_expand("plain", "plain");
	expect_expand("$(A)", "alpha");
	expect_expand("x$(A)y$(A)", "xalphayalpha");
	expect_expand("$(B)", "$(A)");          /* values are not expanded again */
	expect_expand("$(EMPTY)|", "|");
	expect_expand("$(MISSING)", "$(MISSING)");
	expect_expand("$$(A)", "$(A)");         /* escaped */
	expect_expand("$$$(A)", "$alpha");
	expect_expand("$$", "$");
	expect_expand("$", "$");
	expect_expand("a$", "a$");
	expect_expand("$x$(A", "$x$(A");
	expect_expand("$()", "$()");
	expect_expand("$(A)$(", "alpha$(");
	expect_expand("$((A))", "$((A))");
	char *got = podenv_expand("$(A)", NULL, NULL);
	assert_string_equal(got, "$(A)");
	free(got);
}

static void test_valid_name(void **state)
{
	(void)state;
	static const char *const ok[] = { "A", "a_b", "_x", "-x", ".x", "x.y-z_9", "a1" };
	static const char *const bad[] = { "", "1a", "a b", "a=b", "a/b", "é", "a$" };
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		assert_true(podenv_valid_name(ok[i]));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_false(podenv_valid_name(bad[i]));
	assert_false(podenv_valid_name(NULL));
}

static const char *POD = "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"uid\":\"u-1\",\"tenant\":\"acme\","
			 "\"labels\":{\"app\":\"web\",\"a.b/c\":\"d\"},\"annotations\":{\"note\":\"hi\"}},"
			 "\"spec\":{\"nodeName\":\"n1\",\"serviceAccountName\":\"sa\",\"containers\":[]}}";

static void expect_field(const json_t *pod, const char *path, const struct podenv_ips *ips, int want_rc,
			 const char *want)
{
	char *v = (char *)"untouched";
	int kind = -1;
	int rc = podenv_field(pod, path, ips, &v, &kind);
	if (rc != want_rc)
		fail_msg("field %s: rc %d, want %d", path, rc, want_rc);
	if (want)
		assert_string_equal(v, want);
	else
		assert_null(v);
	free(rc == 0 ? v : NULL);
}

static void test_fields(void **state)
{
	(void)state;
	json_t *pod = J(POD);
	struct podenv_ips known = { "10.0.0.1", "10.1.0.5", "10.1.0.5,fd00::5" }, unknown = { "10.0.0.1", NULL, NULL };
	expect_field(pod, "metadata.name", &known, 0, "p");
	expect_field(pod, "metadata.namespace", &known, 0, "ns");
	expect_field(pod, "metadata.uid", &known, 0, "u-1");
	expect_field(pod, "metadata.labels['app']", &known, 0, "web");
	expect_field(pod, "metadata.labels['a.b/c']", &known, 0, "d");
	expect_field(pod, "metadata.labels['none']", &known, 0, "");
	expect_field(pod, "metadata.annotations['note']", &known, 0, "hi");
	expect_field(pod, "spec.nodeName", &known, 0, "n1");
	expect_field(pod, "spec.serviceAccountName", &known, 0, "sa");
	expect_field(pod, "status.hostIP", &known, 0, "10.0.0.1");
	expect_field(pod, "status.hostIPs", &known, 0, "10.0.0.1");
	expect_field(pod, "status.podIP", &known, 0, "10.1.0.5");
	expect_field(pod, "status.podIPs", &known, 0, "10.1.0.5,fd00::5");
	expect_field(pod, "status.podIP", &unknown, 1, NULL);
	expect_field(pod, "status.podIPs", &unknown, 1, NULL);
	expect_field(pod, "metadata.labels", &known, -1, NULL);  /* only subscripted for env */
	expect_field(pod, "metadata.labels['x'", &known, -1, NULL);
	expect_field(pod, "spec.containers", &known, -1, NULL);
	expect_field(pod, "status.phase", &known, -1, NULL);
	expect_field(pod, NULL, &known, -1, NULL);
	int kind = 0;
	char *v;
	assert_int_equal(podenv_field(pod, "status.podIPs", &unknown, &v, &kind), 1);
	assert_int_equal(kind, RT_ENV_POD_IPS);
	json_decref(pod);
}

static void expect_resource(const char *container, const char *res, const char *divisor, const char *want)
{
	json_t *c = J(container);
	struct podenv_alloc alloc = { 4000, 8LL << 30, 100LL << 30 };
	struct buf err = BUF_INIT;
	char *v = NULL;
	int rc = podenv_resource(c, res, divisor, &alloc, &v, &err);
	if (want) {
		if (rc != 0)
			fail_msg("%s: %s", res, buf_cstr(&err));
		if (strcmp(v, want) != 0)
			fail_msg("%s / %s = %s, want %s", res, divisor ? divisor : "1", v, want);
	} else {
		assert_int_equal(rc, -1);
		assert_null(v);
		assert_true(err.len > 0);
	}
	free(v);
	json_decref(c);
	buf_release(&err);
}

static void test_resources(void **state)
{
	(void)state;
	const char *c = "{\"name\":\"c\",\"resources\":{\"limits\":{\"cpu\":\"500m\",\"memory\":\"64Mi\"},"
			"\"requests\":{\"cpu\":\"250m\",\"memory\":\"32Mi\",\"ephemeral-storage\":\"1Gi\"}}}";
	expect_resource(c, "limits.cpu", NULL, "1");      /* rounded up */
	expect_resource(c, "limits.cpu", "1m", "500");
	expect_resource(c, "requests.cpu", "1m", "250");
	expect_resource(c, "limits.memory", NULL, "67108864");
	expect_resource(c, "limits.memory", "1Mi", "64");
	expect_resource(c, "limits.memory", "1M", "68");  /* 67.1 rounded up */
	expect_resource(c, "requests.memory", "1Mi", "32");
	expect_resource(c, "requests.ephemeral-storage", "1Mi", "1024");
	/* no limit: the node's allocatable */
	expect_resource(c, "limits.ephemeral-storage", "1Gi", "100");
	expect_resource("{\"name\":\"c\"}", "limits.cpu", "1m", "4000");
	expect_resource("{\"name\":\"c\"}", "limits.memory", "1Gi", "8");
	expect_resource("{\"name\":\"c\"}", "requests.memory", NULL, "0");
	expect_resource("{\"name\":\"c\",\"resources\":{\"limits\":{\"cpu\":2}}}", "limits.cpu", "", "2");
	expect_resource(c, "limits.gpu", NULL, NULL);
	expect_resource(c, "limit.cpu", NULL, NULL);
	expect_resource(c, "cpu", NULL, NULL);
	expect_resource(c, "limits.cpu", "0", NULL);
	expect_resource(c, "limits.cpu", "x", NULL);
	expect_resource("{\"resources\":{\"limits\":{\"cpu\":\"lots\"}}}", "limits.cpu", NULL, NULL);
}

/* A fake store: configmap "cm" {a: 1, b: 2, "bad key": 3}, secret "s" {pw: "secret"}; anything
 * else is 404, "broken" 500. */
struct store {
	json_t *cm, *s;
	int gets;
	char invalid[256];
};

static const json_t *store_get(void *ud, bool secret, const char *name, int *code)
{
	struct store *st = ud;
	st->gets++;
	if (!secret && !strcmp(name, "cm"))
		return st->cm;
	if (secret && !strcmp(name, "s"))
		return st->s;
	*code = strcmp(name, "broken") == 0 ? 500 : 404;
	return NULL;
}

static void store_invalid(void *ud, const char *kind, const char *name, const char *keys)
{
	struct store *st = ud;
	snprintf(st->invalid, sizeof(st->invalid), "%s %s: %s", kind, name, keys);
}

static const char *env_of(const struct rt_container *rc, const char *name)
{
	for (size_t i = 0; i < rc->nenv; i++)
		if (!strcmp(rc->env[i].name, name))
			return rc->env[i].value;
	return NULL;
}

/* Builds container text's env in POD; returns podenv_build's result. */
static int build(struct store *st, const char *container, const struct podenv_ips *ips, struct rt_container *rc,
		 struct buf *err)
{
	json_t *pod = J(POD), *c = J(container);
	struct podenv_alloc alloc = { 2000, 1LL << 30, 0 };
	struct podenv_src src = { store_get, st, store_invalid };
	memset(rc, 0, sizeof(*rc));
	const json_t *args = json_object_get(c, "args");
	if (args) {
		rc->args = xcalloc(json_array_size(args) + 1, sizeof(char *));
		for (size_t i = 0; i < json_array_size(args); i++)
			rc->args[i] = xstrdup(json_string_value(json_array_get(args, i)));
	}
	int rc_ = podenv_build(pod, c, ips, &alloc, &src, rc, err);
	json_decref(pod);
	json_decref(c);
	return rc_;
}

static void container_free(struct rt_container *rc)
{
	for (size_t i = 0; i < rc->nenv; i++) {
		free(rc->env[i].name);
		free(rc->env[i].value);
	}
	free(rc->env);
	for (size_t i = 0; rc->args && rc->args[i]; i++)
		free(rc->args[i]);
	free(rc->args);
	memset(rc, 0, sizeof(*rc));
}

static struct store store_new(void)
{
	struct store st = { 0 };
	st.cm = J("{\"data\":{\"a\":\"1\",\"b\":\"2\",\"bad key\":\"3\",\"9x\":\"4\"},\"binaryData\":{\"bin\":\"aGk=\"}}");
	st.s = J("{\"data\":{\"pw\":\"c2VjcmV0\"}}");
	return st;
}

static void store_free(struct store *st)
{
	json_decref(st->cm);
	json_decref(st->s);
}

static void test_build(void **state)
{
	(void)state;
	struct store st = store_new();
	struct podenv_ips ips = { "10.0.0.1", "10.1.0.5", "10.1.0.5" };
	struct rt_container rc;
	struct buf err = BUF_INIT;
	assert_int_equal(build(&st, "{\"name\":\"c\",\"envFrom\":[{\"configMapRef\":{\"name\":\"cm\"},\"prefix\":\"CM_\"},"
				    "{\"secretRef\":{\"name\":\"s\"}}],"
				    "\"env\":[{\"name\":\"X\",\"value\":\"x=$(CM_a)\"},"
				    "{\"name\":\"K\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"cm\",\"key\":\"b\"}}},"
				    "{\"name\":\"P\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"s\",\"key\":\"pw\"}}},"
				    "{\"name\":\"Q\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"s\",\"key\":\"no\",\"optional\":true}}},"
				    "{\"name\":\"R\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"nope\",\"key\":\"k\",\"optional\":true}}},"
				    "{\"name\":\"N\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.name\"}}},"
				    "{\"name\":\"IP\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"status.podIP\"}}},"
				    "{\"name\":\"M\",\"valueFrom\":{\"resourceFieldRef\":{\"resource\":\"limits.memory\",\"divisor\":\"1Mi\"}}},"
				    "{\"name\":\"LIT\",\"value\":\"$(K)-$(LATER)-$$(K)\"},"
				    "{\"name\":\"LATER\",\"value\":\"l\"},"
				    "{\"name\":\"CM_b\",\"value\":\"override\"},"
				    "{\"name\":\"V\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"cm\",\"key\":\"a\"}}}],"
				    "\"args\":[\"$(N) $(P) $(CM_b) $(IP) $$(N) $(NONE)\"]}",
			       &ips, &rc, &err),
			 0);
	assert_false(rc.env_pending);
	assert_string_equal(env_of(&rc, "CM_a"), "1");
	assert_string_equal(env_of(&rc, "CM_bin"), "hi");
	assert_string_equal(env_of(&rc, "pw"), "secret");
	assert_string_equal(env_of(&rc, "X"), "x=1");
	assert_string_equal(env_of(&rc, "K"), "2");
	assert_string_equal(env_of(&rc, "P"), "secret");
	assert_null(env_of(&rc, "Q"));
	assert_null(env_of(&rc, "R"));
	assert_string_equal(env_of(&rc, "N"), "p");
	assert_string_equal(env_of(&rc, "IP"), "10.1.0.5");
	assert_string_equal(env_of(&rc, "M"), "1024");
	assert_string_equal(env_of(&rc, "LIT"), "2-$(LATER)-$(K)"); /* only what is defined before */
	assert_string_equal(env_of(&rc, "CM_b"), "override");       /* the later definition wins */
	assert_null(env_of(&rc, "CM_bad key"));
	assert_string_equal(env_of(&rc, "CM_9x"), "4");
	assert_string_equal(st.invalid, "configMap cm: bad key");   /* "CM_9x" is a valid name */
	assert_string_equal(rc.args[0], "p secret override 10.1.0.5 $(N) $(NONE)");
	size_t names = 0;
	for (size_t i = 0; i < rc.nenv; i++)
		if (!strcmp(rc.env[i].name, "CM_b"))
			names++;
	assert_int_equal(names, 1);
	container_free(&rc);
	store_free(&st);
	buf_release(&err);
}

static void expect_error_rc(const char *container, int want_rc, const char *want)
{
	struct store st = store_new();
	struct podenv_ips ips = { "10.0.0.1", "10.1.0.5", "10.1.0.5" };
	struct rt_container rc;
	struct buf err = BUF_INIT;
	assert_int_equal(build(&st, container, &ips, &rc, &err), want_rc);
	if (strcmp(buf_cstr(&err), want) != 0)
		fail_msg("error \"%s\", want \"%s\"", buf_cstr(&err), want);
	assert_int_equal(rc.nenv, 0);
	container_free(&rc);
	store_free(&st);
	buf_release(&err);
}

static void expect_error(const char *container, const char *want)
{
	expect_error_rc(container, -1, want);
}

/* -2: never resolvable (the pod fails) */
static void expect_invalid(const char *container, const char *want)
{
	expect_error_rc(container, -2, want);
}

static void test_errors(void **state)
{
	(void)state;
	expect_error("{\"name\":\"c\",\"env\":[{\"name\":\"A\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"x\",\"key\":\"k\"}}}]}",
		     "configmap \"x\" not found");
	expect_error("{\"name\":\"c\",\"env\":[{\"name\":\"A\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"cm\",\"key\":\"k\"}}}]}",
		     "couldn't find key k in ConfigMap ns/cm");
	expect_error("{\"name\":\"c\",\"env\":[{\"name\":\"A\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"x\",\"key\":\"k\"}}}]}",
		     "secret \"x\" not found");
	expect_error("{\"name\":\"c\",\"env\":[{\"name\":\"A\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"s\",\"key\":\"k\"}}}]}",
		     "couldn't find key k in Secret ns/s");
	expect_error("{\"name\":\"c\",\"envFrom\":[{\"configMapRef\":{\"name\":\"gone\"}}]}", "configmap \"gone\" not found");
	expect_error("{\"name\":\"c\",\"envFrom\":[{\"secretRef\":{\"name\":\"gone\"}}]}", "secret \"gone\" not found");
	expect_error("{\"name\":\"c\",\"envFrom\":[{\"secretRef\":{\"name\":\"broken\",\"optional\":true}}]}",
		     "reading secret \"broken\": error 500");
	expect_invalid("{\"name\":\"c\",\"env\":[{\"name\":\"A\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"spec.volumes\"}}}]}",
		     "unsupported fieldPath: spec.volumes");
	expect_invalid("{\"name\":\"c\",\"env\":[{\"name\":\"A\",\"valueFrom\":{\"resourceFieldRef\":{\"resource\":\"limits.cpu\","
		     "\"containerName\":\"other\"}}}]}",
		     "container other not found");
	expect_invalid("{\"name\":\"c\",\"env\":[{\"name\":\"A\",\"valueFrom\":{\"resourceFieldRef\":{\"resource\":"
		       "\"limits.cpu\",\"divisor\":\"-1\"}}}]}",
		       "invalid divisor \"-1\" for resource \"limits.cpu\"");
	/* optional and missing: nothing, no error */
	struct store st = store_new();
	struct podenv_ips ips = { "10.0.0.1", "10.1.0.5", "10.1.0.5" };
	struct rt_container rc;
	struct buf err = BUF_INIT;
	assert_int_equal(build(&st, "{\"name\":\"c\",\"envFrom\":[{\"configMapRef\":{\"name\":\"gone\",\"optional\":true}}]}",
			       &ips, &rc, &err),
			 0);
	assert_int_equal(rc.nenv, 0);
	container_free(&rc);
	store_free(&st);
	buf_release(&err);
}

/* CRI: the pod's IP is not known when the spec is built; the runtime finishes the env later. */
static void test_deferred_pod_ip(void **state)
{
	(void)state;
	struct store st = store_new();
	struct podenv_ips ips = { "10.0.0.1", NULL, NULL };
	struct rt_container rc;
	struct buf err = BUF_INIT;
	assert_int_equal(build(&st, "{\"name\":\"c\",\"env\":[{\"name\":\"IP\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":"
				    "\"status.podIP\"}}},{\"name\":\"URL\",\"value\":\"http://$(IP):80\"},"
				    "{\"name\":\"IP\",\"value\":\"x\"}],\"args\":[\"$(URL) $(IP)\"]}",
			       &ips, &rc, &err),
			 0);
	assert_true(rc.env_pending);
	assert_string_equal(rc.args[0], "$(URL) $(IP)"); /* untouched until then */
	struct podenv_copy tmp;
	const struct rt_container *fin = podenv_finished(&rc, "10.1.2.3", &tmp);
	assert_ptr_not_equal(fin, &rc);
	assert_false(fin->env_pending);
	assert_string_equal(env_of(fin, "URL"), "http://10.1.2.3:80");
	assert_string_equal(env_of(fin, "IP"), "x");
	assert_int_equal(fin->nenv, 2);
	assert_string_equal(fin->args[0], "http://10.1.2.3:80 x");
	podenv_copy_release(&tmp);
	assert_true(rc.env_pending); /* the original stays as it was, for the next launch */
	/* a second sandbox, another IP */
	fin = podenv_finished(&rc, "10.9.9.9", &tmp);
	assert_string_equal(env_of(fin, "URL"), "http://10.9.9.9:80");
	podenv_copy_release(&tmp);
	container_free(&rc);
	/* nothing pending: the container itself */
	assert_int_equal(build(&st, "{\"name\":\"c\",\"env\":[{\"name\":\"A\",\"value\":\"1\"}]}", &ips, &rc, &err), 0);
	assert_ptr_equal(podenv_finished(&rc, "1.2.3.4", &tmp), &rc);
	podenv_copy_release(&tmp);
	container_free(&rc);
	store_free(&st);
	buf_release(&err);
}

/* The pod conversion: valueFrom no longer refused; a missing reference is E_NOT_FOUND with the
 * container's name, a malformed valueFrom E_INVALID. */
static void test_rt_pod(void **state)
{
	(void)state;
	json_t *pod = J("{\"metadata\":{\"uid\":\"u\",\"name\":\"p\",\"namespace\":\"ns\"},\"spec\":{\"containers\":["
			"{\"name\":\"a\",\"command\":[\"echo\",\"$(N)\"],\"env\":[{\"name\":\"N\",\"valueFrom\":{\"fieldRef\":"
			"{\"fieldPath\":\"metadata.namespace\"}}}]},"
			"{\"name\":\"b\",\"env\":[{\"name\":\"C\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"cm\",\"key\":\"a\"}}}]}]}}");
	struct store st = store_new();
	struct podenv_ips ips = { "10.0.0.1", "10.0.0.1", "10.0.0.1" };
	struct podenv_src src = { store_get, &st, NULL };
	struct kl_env_ctx ctx = { &ips, NULL, &src };
	struct rt_pod p;
	struct buf err = BUF_INIT;
	char *cname = NULL;
	assert_int_equal(kl_rt_pod_from_json_env(pod, false, &ctx, &p, &err, &cname), 0);
	assert_string_equal(p.containers[0].command[1], "ns");
	assert_string_equal(env_of(&p.containers[1], "C"), "1");
	rt_pod_release(&p);
	/* without sources (kl_rt_pod_from_json): the configmap cannot be read */
	assert_int_equal(kl_rt_pod_from_json(pod, &p, &err), E_NOT_FOUND);
	assert_string_equal(buf_cstr(&err), "configmap \"cm\" not found");
	buf_reset(&err);
	json_decref(pod);
	pod = J("{\"metadata\":{\"uid\":\"u\",\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"a\"},{\"name\":\"b\","
		"\"env\":[{\"name\":\"C\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"nope\",\"key\":\"a\"}}}]}]}}");
	assert_int_equal(kl_rt_pod_from_json_env(pod, false, &ctx, &p, &err, &cname), E_NOT_FOUND);
	assert_string_equal(cname, "b");
	assert_string_equal(buf_cstr(&err), "secret \"nope\" not found");
	free(cname);
	json_decref(pod);
	/* an unsupported field: E_INVALID (the pod fails) */
	buf_reset(&err);
	pod = J("{\"metadata\":{\"uid\":\"u\",\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"a\","
		"\"env\":[{\"name\":\"X\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"x\"}}}]}]}}");
	assert_int_equal(kl_rt_pod_from_json_env(pod, false, &ctx, &p, &err, NULL), E_INVALID);
	assert_string_equal(buf_cstr(&err), "container \"a\": unsupported fieldPath: x");
	json_decref(pod);
	store_free(&st);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_expand),
		cmocka_unit_test(test_valid_name),
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_resources),
		cmocka_unit_test(test_build),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_deferred_pod_ip),
		cmocka_unit_test(test_rt_pod),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
