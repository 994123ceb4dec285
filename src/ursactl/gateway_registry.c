/* The gateways' view of the region: ursactl register / unregister also record each partition
 * in the gateways' etcd (<prefix>/partitions/<id>, the record docs/gateway.md describes), which
 * every gateway instance follows by watch. The etcd URLs come from --gateway-etcd, remembered
 * in the region file ("gatewayEtcd", "gatewayEtcdPrefix") so later commands need not repeat
 * them. */
#include "ursactl.h"
#include "ursa/errors.h"
#include "ursa/etcd.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_PREFIX "/ursa/gateway"

/* Settles the gateway etcd settings from the flags (recorded into doc) or doc. *ret_servers and
 * *ret_prefix are borrowed from doc; *ret_servers is NULL when the region has no gateway etcd. */
void gateway_etcd_settings(json_t *doc, const char *flag_servers, const char *flag_prefix,
			   const char **ret_servers, const char **ret_prefix)
{
	if (flag_servers)
		json_object_set_new(doc, "gatewayEtcd", json_string(flag_servers));
	if (flag_prefix)
		json_object_set_new(doc, "gatewayEtcdPrefix", json_string(flag_prefix));
	*ret_servers = json_str(doc, "gatewayEtcd");
	*ret_prefix = json_str(doc, "gatewayEtcdPrefix") ? json_str(doc, "gatewayEtcdPrefix") : DEFAULT_PREFIX;
}

/* The gateway record of a region-file entry: {"kind","endpoints","zone"}. New string. */
static char *record_of(const json_t *entry, bool tp)
{
	json_t *rec = json_pack("{s:s,s:O}", "kind", tp ? "tp" : "rm", "endpoints", json_object_get(entry, "endpoints"));
	if (json_str(entry, "zone"))
		json_object_set(rec, "zone", json_object_get(entry, "zone"));
	char *s = json_dumps(rec, JSON_COMPACT);
	json_decref(rec);
	return s;
}

int gateway_record(const char *servers, const char *prefix, const json_t *entry, bool tp)
{
	struct etcd *e = etcd_new(servers, NULL);
	if (!e)
		return fail("invalid --gateway-etcd \"%s\"", servers);
	char *key = xasprintf("%s/partitions/%s", prefix, json_str(entry, "name"));
	char *val = record_of(entry, tp);
	int err = etcd_put(e, key, val, strlen(val), 0, NULL);
	int rc = err ? fail("gateway etcd %s: recording %s failed: %s", servers, json_str(entry, "name"), err_reason(err))
		     : EXIT_OK;
	if (!err)
		printf("gateway registry: %s %s recorded\n", tp ? "tenant partition" : "resource manager",
		       json_str(entry, "name"));
	free(key);
	free(val);
	etcd_free(e);
	return rc;
}

int gateway_forget(const char *servers, const char *prefix, const char *name)
{
	struct etcd *e = etcd_new(servers, NULL);
	if (!e)
		return fail("invalid --gateway-etcd \"%s\"", servers);
	char *key = xasprintf("%s/partitions/%s", prefix, name);
	int err = etcd_delete(e, key, 0, NULL, NULL);
	int rc = err && err != E_NOT_FOUND
			 ? fail("gateway etcd %s: removing %s failed: %s", servers, name, err_reason(err))
			 : EXIT_OK;
	free(key);
	etcd_free(e);
	return rc;
}

int gateway_set_draining(const char *servers, const char *prefix, const char *name, bool draining)
{
	struct etcd *e = etcd_new(servers, NULL);
	if (!e)
		return fail("invalid --gateway-etcd \"%s\"", servers);
	char *key = xasprintf("%s/partitions/%s", prefix, name);
	struct etcd_kv kv = { 0 };
	int err = etcd_get(e, key, &kv);
	json_t *rec = err ? NULL : json_loadb(kv.value, kv.value_len, 0, NULL);
	int rc = EXIT_OK;
	if (err == E_NOT_FOUND || (!err && !json_is_object(rec))) {
		rc = fail("the gateways' registry has no record of partition %s (ursactl register it)", name);
	} else if (err) {
		rc = fail("gateway etcd %s: reading %s failed: %s", servers, name, err_reason(err));
	} else {
		if (draining)
			json_object_set_new(rec, "draining", json_true());
		else
			json_object_del(rec, "draining");
		char *val = json_dumps(rec, JSON_COMPACT);
		err = etcd_update(e, key, val, strlen(val), kv.mod_rev, NULL, NULL);
		free(val);
		if (err)
			rc = fail("gateway etcd %s: marking %s failed: %s", servers, name, err_reason(err));
	}
	json_decref(rec);
	etcd_kv_release(&kv);
	free(key);
	etcd_free(e);
	return rc;
}
