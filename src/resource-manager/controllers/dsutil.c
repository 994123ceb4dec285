/* Pure parts of the daemonset controller: which nodes a DaemonSet wants, its pods' names and
 * objects. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "rmcm.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

#define NAME_MAX_LEN 63
#define HASH_LEN 8

/* Taints the DaemonSet controller tolerates for every daemon pod (as Kubernetes adds them). */
static const struct {
	const char *key, *effect;
} ds_tolerations[] = {
	{ TAINT_NOT_READY, "NoExecute" },
	{ TAINT_UNREACHABLE, "NoExecute" },
	{ "node.kubernetes.io/disk-pressure", "NoSchedule" },
	{ "node.kubernetes.io/memory-pressure", "NoSchedule" },
	{ "node.kubernetes.io/pid-pressure", "NoSchedule" },
	{ "node.kubernetes.io/unschedulable", "NoSchedule" },
};
#define NTOL (sizeof(ds_tolerations) / sizeof(ds_tolerations[0]))

static bool selector_matches(const json_t *selector, const json_t *labels)
{
	const char *k;
	const json_t *v;
	json_object_foreach((json_t *)selector, k, v) {
		const char *have = json_str(labels, k);
		if (!json_is_string(v) || !have || strcmp(have, json_string_value(v)) != 0)
			return false;
	}
	return true;
}

static bool tolerated(const json_t *tols, const json_t *taint)
{
	const char *key = json_str(taint, "key");
	for (size_t i = 0; key && i < NTOL; i++)
		if (strcmp(key, ds_tolerations[i].key) == 0)
			return true;
	size_t i;
	const json_t *t;
	json_array_foreach(tols, i, t)
		if (toleration_matches(t, taint))
			return true;
	return false;
}

bool ds_wants_node(const json_t *ds, const json_t *node)
{
	const json_t *pspec = json_path(ds, "spec.template.spec");
	if (json_path(node, "metadata.deletionTimestamp"))
		return false;
	if (!selector_matches(json_object_get(pspec, "nodeSelector"), json_path(node, "metadata.labels")))
		return false;
	const json_t *tols = json_object_get(pspec, "tolerations");
	size_t i;
	const json_t *taint;
	json_array_foreach(json_path(node, "spec.taints"), i, taint) {
		const char *effect = json_str(taint, "effect");
		if (!effect || strcmp(effect, "PreferNoSchedule") == 0)
			continue;
		if (!tolerated(tols, taint))
			return false;
	}
	return true;
}

char *ds_pod_name(const char *ds, const char *node)
{
	static const char digits[] = "0123456789bcdfghjklmnpqrstvwxz"; /* no vowels: no words */
	uint64_t h = 1469598103934665603ULL;
	for (const unsigned char *p = (const unsigned char *)node; *p; p++) {
		h ^= *p;
		h *= 1099511628211ULL;
	}
	char suffix[HASH_LEN + 1];
	for (int i = 0; i < HASH_LEN; i++) {
		suffix[i] = digits[h % (sizeof(digits) - 1)];
		h /= sizeof(digits) - 1;
	}
	suffix[HASH_LEN] = '\0';
	size_t keep = strlen(ds);
	if (keep > NAME_MAX_LEN - HASH_LEN - 1)
		keep = NAME_MAX_LEN - HASH_LEN - 1;
	while (keep > 0 && (ds[keep - 1] == '-' || ds[keep - 1] == '.'))
		keep--;
	return xasprintf("%.*s-%s", (int)keep, ds, suffix);
}

static void add_tolerations(json_t *spec)
{
	json_t *tols = json_object_get(spec, "tolerations");
	if (!json_is_array(tols)) {
		tols = json_array();
		json_object_set_new(spec, "tolerations", tols);
	}
	for (size_t i = 0; i < NTOL; i++)
		json_array_append_new(tols, json_pack("{s:s, s:s, s:s}", "key", ds_tolerations[i].key, "operator",
						      "Exists", "effect", ds_tolerations[i].effect));
}

json_t *ds_pod_new(const json_t *ds, const char *node)
{
	const char *dsname = json_path_str(ds, "metadata.name");
	const json_t *tmeta = json_path(ds, "spec.template.metadata");
	const json_t *tspec = json_path(ds, "spec.template.spec");
	char *name = ds_pod_name(dsname ? dsname : "ds", node);
	json_t *meta = json_pack("{s:s}", "name", name);
	free(name);
	const char *ns = json_path_str(ds, "metadata.namespace");
	if (ns)
		json_object_set_new(meta, "namespace", json_string(ns));
	json_t *labels = json_is_object(json_object_get(tmeta, "labels")) ? json_deep_copy(json_object_get(tmeta, "labels"))
									  : json_object();
	json_object_set_new(meta, "labels", labels);
	if (json_is_object(json_object_get(tmeta, "annotations")))
		json_object_set_new(meta, "annotations", json_deep_copy(json_object_get(tmeta, "annotations")));
	json_t *owner = json_pack("{s:s, s:s, s:s, s:b, s:b}", "apiVersion", "apps/v1", "kind", "DaemonSet", "name",
				  dsname ? dsname : "", "controller", 1, "blockOwnerDeletion", 1);
	const char *uid = json_path_str(ds, "metadata.uid");
	if (uid)
		json_object_set_new(owner, "uid", json_string(uid));
	json_object_set_new(meta, "ownerReferences", json_pack("[o]", owner));
	json_t *spec = json_is_object(tspec) ? json_deep_copy(tspec) : json_object();
	json_object_set_new(spec, "nodeName", json_string(node));
	add_tolerations(spec);
	return json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", "v1", "kind", "Pod", "metadata", meta, "spec", spec);
}
