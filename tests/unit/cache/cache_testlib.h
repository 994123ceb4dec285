/* Shared helpers for the watch-cache unit tests: a pod-like test resource and builders for
 * list entries and etcd watch events fed straight into a detached cache. */
#ifndef URSA_TEST_CACHE_TESTLIB_H
#define URSA_TEST_CACHE_TESTLIB_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cache/wcache_internal.h"
#include "ursa/buf.h"
#include "ursa/xalloc.h"

static const struct api_field test_pod_fields[] = {
	{ "spec.nodeName", "spec.nodeName" },
	{ "status.phase", "status.phase" },
};
static const struct api_strategy test_pod_strategy = {
	.fields = test_pod_fields,
	.nfields = 2,
};
static const struct api_resource test_pods = {
	.group = "", .version = "v1", .plural = "pods", .singular = "pod", .kind = "Pod",
	.scope = SCOPE_NAMESPACE, .strategy = &test_pod_strategy,
};
static const struct api_strategy test_plain_strategy = { 0 };
static const struct api_resource test_nodes = {
	.group = "", .version = "v1", .plural = "nodes", .singular = "node", .kind = "Node",
	.scope = SCOPE_CLUSTER, .strategy = &test_plain_strategy,
};

static inline char *pod_key(const char *t, const char *ns, const char *name)
{
	return xasprintf("/registry/pods/%s/%s/%s", t, ns, name);
}

/* A pod of ~pad extra bytes; labels "app=<app>" plus "tier=web"; node and phase may be "". */
static inline char *pod_json(const char *t, const char *ns, const char *name, const char *app, const char *node,
			     const char *phase, size_t pad)
{
	struct buf b = BUF_INIT;
	buf_addf(&b, "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\","
		     "\"tenant\":\"%s\",\"uid\":\"6f1c1b1e-7c9d-4c55-9d1a-%012zx\",\"labels\":{\"app\":\"%s\","
		     "\"tier\":\"web\"}},\"spec\":{",
		 name, ns, t, strlen(name), app);
	if (*node)
		buf_addf(&b, "\"nodeName\":\"%s\",", node);
	buf_adds(&b, "\"containers\":[{\"name\":\"c\",\"image\":\"nginx\",\"args\":\"");
	for (size_t i = 0; i < pad; i++)
		buf_addch(&b, (char)('a' + i % 26));
	buf_addf(&b, "\"}]},\"status\":{\"phase\":\"%s\"}}", phase);
	return buf_detach(&b, NULL);
}

struct evbuild {
	struct etcd_event *v;
	size_t n, alloc;
};

static inline void eb_put(struct evbuild *eb, char *key, char *json, int64_t rev)
{
	if (eb->n == eb->alloc) {
		eb->alloc = eb->alloc ? eb->alloc * 2 : 16;
		eb->v = xrealloc(eb->v, eb->alloc * sizeof(*eb->v));
	}
	struct etcd_event *e = &eb->v[eb->n++];
	memset(e, 0, sizeof(*e));
	e->type = json ? ETCD_EV_PUT : ETCD_EV_DELETE;
	e->kv.key = key;
	e->kv.value = json ? json : xstrdup("");
	e->kv.value_len = strlen(e->kv.value);
	e->kv.mod_rev = rev;
}

static inline void eb_release(struct evbuild *eb)
{
	for (size_t i = 0; i < eb->n; i++) {
		free(eb->v[i].kv.key);
		free(eb->v[i].kv.value);
	}
	free(eb->v);
	memset(eb, 0, sizeof(*eb));
}

/* Applies one put (json != NULL) or delete at rev. Takes key and json. */
static inline void apply1(struct wcache *c, char *key, char *json, int64_t rev)
{
	struct evbuild eb = { 0 };
	eb_put(&eb, key, json, rev);
	wcache_apply_events(c, eb.v, eb.n);
	eb_release(&eb);
}

#endif
