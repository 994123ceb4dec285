/* Fuzzes the gateway's OpenAPI merge with any JSON a partition could send, as a document and as
 * a v3 index, on either side of the merge: merging must never crash, a second merge of the same
 * source must change nothing, and every index entry the gateway lists must be a key it serves
 * with a URL under /openapi/v3/ naming that key. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "gw.h"
#include "ursa/jsonutil.h"

static const char fixed[] =
	"{\"paths\":{\"/api/v1/pods\":{\"get\":{}},\"api/v1\":{\"serverRelativeURL\":\"/openapi/v3/api/v1?hash=AB\"}},"
	"\"definitions\":{\"io.k8s.api.core.v1.Pod\":{\"type\":\"object\",\"x-kubernetes-group-version-kind\":"
	"[{\"group\":\"\",\"kind\":\"Pod\",\"version\":\"v1\"}]}},"
	"\"components\":{\"schemas\":{\"io.k8s.api.core.v1.Pod\":{\"type\":\"object\"}}}}";

static void merge_twice(json_t *dst, const json_t *src)
{
	oapi_merge(dst, src);
	json_t *once = json_deep_copy(dst);
	oapi_merge(dst, src);
	if (once && !json_equal(once, dst))
		abort();
	json_decref(once);
}

static void check_index(json_t *idx)
{
	const char *k;
	json_t *v;
	json_object_foreach (json_object_get(idx, "paths"), k, v) {
		const char *url = json_string_value(json_object_get(v, "serverRelativeURL"));
		size_t n = strlen(k);
		if (!oapi_key_ok(k) || !url || strncmp(url, "/openapi/v3/", 12) != 0 || strncmp(url + 12, k, n) != 0 ||
		    strncmp(url + 12 + n, "?hash=", 6) != 0 || strpbrk(url + 12 + n + 6, "\"&?/ "))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *in = json_parse_limited((const char *)data, size, 64, NULL);
	if (!in)
		return 0;
	json_t *a = json_loads(fixed, 0, NULL), *b = json_deep_copy(in);
	merge_twice(a, in);
	merge_twice(b, a);
	json_t *both[] = { in, a };
	json_t *idx = oapi_index_merge(both, 2);
	check_index(idx);
	json_decref(idx);
	json_t *rev[] = { in, NULL, in };
	idx = oapi_index_merge(rev, 3);
	check_index(idx);
	json_decref(idx);
	json_decref(a);
	json_decref(b);
	json_decref(in);
	return 0;
}
