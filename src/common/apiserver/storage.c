/* Keys and encoding of objects in etcd. Objects are stored as compact JSON without
 * metadata.resourceVersion, which is the key's mod_revision. */
#include "internal.h"
#include "ursa/jsonutil.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"
#include <stdlib.h>
#include <string.h>

char *store_key(const struct served *sv, const char *tenant, const char *ns, const char *name)
{
	struct buf b = BUF_INIT;
	buf_adds(&b, sv->prefix);
	if (sv->r->scope != SCOPE_CLUSTER)
		buf_addf(&b, "%s/", tenant);
	if (sv->r->scope == SCOPE_NAMESPACE)
		buf_addf(&b, "%s/", ns);
	buf_adds(&b, name);
	return buf_detach(&b, NULL);
}

char *store_collection_prefix(const struct served *sv, const char *tenant, const char *ns)
{
	struct buf b = BUF_INIT;
	buf_adds(&b, sv->prefix);
	if (sv->r->scope != SCOPE_CLUSTER && tenant && strcmp(tenant, TENANT_ALL) != 0) {
		buf_addf(&b, "%s/", tenant);
		if (sv->r->scope == SCOPE_NAMESPACE && ns)
			buf_addf(&b, "%s/", ns);
	}
	return buf_detach(&b, NULL);
}

void set_resource_version(json_t *obj, int64_t rev)
{
	char tmp[32];
	snprintf(tmp, sizeof(tmp), "%lld", (long long)rv_show(rev));
	json_object_set_new(json_obj_child(obj, "metadata"), "resourceVersion", json_string(tmp));
}

int store_get(struct apiserver *s, const char *key, json_t **ret, int64_t *ret_rev)
{
	struct etcd_kv kv = { 0 };
	int64_t t0 = mono_us();
	int rc = etcd_get(s->etcd, key, &kv);
	metrics_etcd(s->metrics, "get", mono_us() - t0);
	if (rc < 0)
		return rc;
	json_t *obj = json_loadb(kv.value, kv.value_len, 0, NULL);
	if (!json_is_object(obj)) {
		json_decref(obj);
		etcd_kv_release(&kv);
		return E_INTERNAL;
	}
	set_resource_version(obj, kv.mod_rev);
	if (ret_rev)
		*ret_rev = kv.mod_rev;
	*ret = obj;
	etcd_kv_release(&kv);
	return 0;
}

void store_encode(json_t *obj, struct buf *out)
{
	json_t *meta = json_object_get(obj, "metadata");
	json_t *rv = json_incref(json_object_get(meta, "resourceVersion"));
	json_object_del(meta, "resourceVersion");
	store_dump(obj, out);
	if (rv)
		json_object_set_new(meta, "resourceVersion", rv);
}

void store_encode_expect(struct served *sv, const char *key, json_t *obj, struct buf *out)
{
	json_object_del(json_object_get(obj, "metadata"), "resourceVersion");
	store_dump(obj, out);
	wcache_expect(sv->cache, key, out->ptr, out->len, obj);
}
