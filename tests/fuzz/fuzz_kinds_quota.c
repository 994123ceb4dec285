/* Fuzzes the quota parsers on arbitrary JSON: ResourceQuota and LimitRange validation (hard
 * keys, quantities, scopes), a pod's usage, the LimitRange admission of a pod, and the
 * canonical formatting of every quantity found. */
#include <stdint.h>
#include <stdlib.h>
#include "ursa/api.h"
#include "ursa/jsonutil.h"
#include "ursa/quota.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf err = BUF_INIT, out = BUF_INIT;
	json_t *j = json_parse_limited((const char *)data, size, 64, &err);
	if (j && json_is_object(j)) {
		const struct api_strategy *ss[] = { &strategy_resourcequota, &strategy_limitrange, &strategy_tenant };
		for (size_t i = 0; i < 3; i++) {
			json_t *c = json_deep_copy(j);
			struct field_errors e = { NULL };
			if (ss[i]->defaults)
				ss[i]->defaults(c);
			if (ss[i]->prepare_create)
				ss[i]->prepare_create(c);
			ss[i]->validate(c, NULL, &e);
			json_t *cells = json_array();
			ss[i]->cells(c, 0, cells);
			json_decref(cells);
			field_errors_release(&e);
			json_decref(c);
		}
		struct quota_pod u;
		quota_pod_usage(j, &u);
		struct quota_scopes sc;
		quota_scopes_parse(json_path(j, "spec.scopes"), &sc);
		json_t *pod = json_deep_copy(json_object_get(j, "pod"));
		if (json_is_object(pod)) {
			limitrange_admit_pod(json_object_get(j, "spec"), pod, &err);
			quota_pod_usage(pod, &u);
		}
		json_decref(pod);
		const char *k;
		json_t *v;
		json_object_foreach(json_path(j, "spec.hard"), k, v) {
			long long m;
			bool bin;
			enum qres kind;
			const char *p, *g;
			size_t pl, gl;
			quota_resource_parse(k, &kind, &p, &pl, &g, &gl);
			if (quota_value_milli(v, &m, &bin) == 0)
				quantity_format_milli(m, bin, &out);
		}
	}
	json_decref(j);
	buf_release(&err);
	buf_release(&out);
	return 0;
}
