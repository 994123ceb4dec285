/* Real request bodies captured from kubectl 1.32 (`kubectl create ...` against a logging stub
 * server) decode to exactly what `kubectl create ... --dry-run=client -o json` prints. */
#include "proto_test.h"

static const char *const vectors[] = {
	"deployment", "deployment_multi", "namespace", "configmap", "secret", "serviceaccount",
	"service_clusterip", "service_nodeport", "service_externalname", "job", "cronjob",
	"priorityclass", "quota", "role", "crb", "pdb",
};

static char *vector_path(const char *name, const char *ext)
{
	const char *file = __FILE__;
	const char *slash = strrchr(file, '/');
	int dir = slash ? (int)(slash - file) : 1;
	struct buf b = BUF_INIT;
	buf_addf(&b, "%.*s/vectors/%s.%s", dir, slash ? file : ".", name, ext);
	return buf_detach(&b, NULL);
}

static char *slurp(const char *path, size_t *ret_len)
{
	FILE *f = fopen(path, "rb");
	struct buf b = BUF_INIT;
	char chunk[4096];
	size_t n;

	if (!f)
		fail_msg("cannot open %s", path);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		buf_add(&b, chunk, n);
	fclose(f);
	return buf_detach(&b, ret_len);
}

static void test_captured_vectors(void **state)
{
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		char *pb_path = vector_path(vectors[i], "pb");
		char *json_path = vector_path(vectors[i], "json");
		size_t pb_len, json_len;
		char *pb = slurp(pb_path, &pb_len);
		char *js = slurp(json_path, &json_len);
		json_error_t jerr;
		json_t *want = json_loadb(js, json_len, 0, &jerr), *got = NULL;
		struct buf err = BUF_INIT;

		if (!want)
			fail_msg("%s: %s", json_path, jerr.text);
		int rc = k8s_protobuf_to_json(pb, pb_len, &got, &err);
		if (rc)
			fail_msg("%s: rc=%d %s", vectors[i], rc, buf_cstr(&err));
		assert_json_eq(got, want, vectors[i]);
		json_decref(got);
		json_decref(want);
		buf_release(&err);
		free(pb);
		free(js);
		free(pb_path);
		free(json_path);
	}
}

/* Every strict prefix of a real body is rejected, never decoded into something else. */
static void test_truncated_vectors(void **state)
{
	char *path = vector_path("deployment_multi", "pb");
	size_t len;
	char *pb = slurp(path, &len);

	for (size_t n = 0; n < len; n++) {
		json_t *got = NULL;
		int rc = k8s_protobuf_to_json(pb, n, &got, NULL);
		if (rc == 0) {
			/* a cut exactly between two top-level fields is still valid protobuf */
			json_decref(got);
			continue;
		}
		if (rc != E_BAD_REQUEST && rc != E_MEDIA_TYPE)
			fail_msg("prefix %zu: rc=%d", n, rc);
		assert_null(got);
	}
	free(pb);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_captured_vectors),
		cmocka_unit_test(test_truncated_vectors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
