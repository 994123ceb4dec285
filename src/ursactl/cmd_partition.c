/* ursactl register / unregister / partitions: the region's topology.
 *
 * The region file (<region dir>/region.json, or --region-file) lists the tenant partitions and
 * resource managers ursactl knows. Registering a partition records it there and writes it into
 * every partition of the other kind (TenantPartition objects in every RM, ResourceManager
 * objects in every TP), and writes every partition of the other kind into the new one. Running
 * it again repairs partitions that missed an earlier change. With a gateway etcd (--gateway-etcd,
 * remembered), the partition is recorded there too for the gateways (gateway_registry.c). */
#include "ursactl.h"
#include "ursa/auth.h"
#include "ursa/client.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

const struct flag_spec register_flags[] = {
	{ "kind", "tp|rm", "tp: a tenant partition; rm: a resource manager", true },
	{ "name", "NAME", "partition id, e.g. tp-1 or rm-az-1", true },
	{ "endpoints", "URL[,URL]", "its API server URLs", true },
	{ "zone", "ZONE", "availability zone (resource managers)", false },
	REGION_AUTH_FLAGS,
	{ "gateway-etcd", "URL[,URL]", "the gateways' etcd: also record the partition there (remembered in the region file)", false },
	{ "gateway-etcd-prefix", "PREFIX", "key prefix of the gateways' registry (default /ursa/gateway)", false },
	{ NULL, NULL, NULL, false },
};

const struct flag_spec unregister_flags[] = {
	{ "name", "NAME", "partition id to remove", true },
	REGION_AUTH_FLAGS,
	{ "gateway-etcd", "URL[,URL]", "the gateways' etcd: also record the partition there (remembered in the region file)", false },
	{ "gateway-etcd-prefix", "PREFIX", "key prefix of the gateways' registry (default /ursa/gateway)", false },
	{ NULL, NULL, NULL, false },
};

const struct flag_spec partitions_flags[] = {
	{ "region-file", "FILE", "the region file (default <region dir>/region.json)", false },
	{ NULL, NULL, NULL, false },
};

static char *region_path(const struct flags *f)
{
	const char *v = flag_get(f, "region-file");
	if (v)
		return xstrdup(v);
	char *dir = region_dir();
	if (!dir)
		return NULL;
	char *p = xasprintf("%s/region.json", dir);
	free(dir);
	return p;
}

const char *list_key(bool tp) { return tp ? "tenantPartitions" : "resourceManagers"; }

/* Loads the region file (an empty region if there is none). No credentials: region_auth. */
int region_load(const struct flags *f, struct region *r)
{
	memset(r, 0, sizeof(*r));
	r->path = region_path(f);
	if (!r->path)
		return fail("no region directory: pass --region-file, set $URSA_HOME, or run inside the repository");
	r->doc = json_load_file(r->path, 0, NULL);
	if (!json_is_object(r->doc)) {
		json_decref(r->doc);
		r->doc = json_object();
	}
	for (int k = 0; k < 2; k++)
		if (!json_is_array(json_object_get(r->doc, list_key(k == 0))))
			json_object_set_new(r->doc, list_key(k == 0), json_array());
	return EXIT_OK;
}

/* Mints the admin token (and finds the CA) for talking to partitions; needed only when there
 * are partitions to write to, so recording the first partition of a region needs no key. */
int region_auth(const struct flags *f, struct region *r)
{
	char *hint = NULL, *err = NULL;
	char *key = region_file(flag_get(f, "signing-key"), "--signing-key", "URSA_SIGNING_KEY", "signing-key.pem", &hint);
	if (!key) {
		int rc = fail("%s", hint);
		free(hint);
		return rc;
	}
	char *groups[] = { GROUP_MASTERS };
	struct identity id = { .user = "ursactl", .uid = "ursactl", .tenant = TENANT_SYSTEM, .groups = groups, .ngroups = 1 };
	r->token = jwt_sign_file(key, &id, 600, &err);
	free(key);
	if (!r->token) {
		int rc = fail("cannot mint an admin token: %s", err ? err : "?");
		free(err);
		return rc;
	}
	r->ca = region_file(flag_get(f, "certificate-authority"), "--certificate-authority", "URSA_CA_FILE", "ca.crt", &hint);
	free(hint);
	return EXIT_OK;
}

void region_release(struct region *r)
{
	free(r->path);
	json_decref(r->doc);
	free(r->token);
	free(r->ca);
}

static int region_save(struct region *r)
{
	char *tmp = xasprintf("%s.tmp", r->path);
	int rc = json_dump_file(r->doc, tmp, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	if (rc == 0)
		rc = rename(tmp, r->path);
	free(tmp);
	return rc == 0 ? EXIT_OK : fail("cannot write %s", r->path);
}

char *endpoints_csv(const json_t *p)
{
	struct buf b = BUF_INIT;
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(p, "endpoints"), i, e) buf_addf(&b, "%s%s", i ? "," : "", json_string_value(e));
	return buf_detach(&b, NULL);
}

/* The registry object describing partition p (of kind tp or rm). New reference. */
static json_t *registry_object(const json_t *p, bool tp)
{
	json_t *o = json_pack("{s:s,s:s,s:{s:s},s:{s:O}}", "apiVersion", "ursa.io/v1", "kind",
			      tp ? "TenantPartition" : "ResourceManager", "metadata", "name", json_str(p, "name"), "spec",
			      "endpoints", json_object_get(p, "endpoints"));
	if (!tp)
		json_object_set(json_object_get(o, "spec"), "zone", json_object_get(p, "zone"));
	return o;
}

/* Creates or replaces the registry object of p (kind tp) in partition host. */
static int upsert(struct region *r, const json_t *host, const json_t *p, bool tp)
{
	char *servers = endpoints_csv(host);
	struct rest_config cfg = { .servers = servers, .token = r->token, .ca_file = r->ca, .user_agent = "ursactl" };
	struct rest_client *c = rest_new(&cfg);
	const char *coll = tp ? "/apis/ursa.io/v1/tenantpartitions" : "/apis/ursa.io/v1/resourcemanagers";
	json_t *obj = registry_object(p, tp), *cur = NULL;
	int code = c ? rest_do(c, "POST", coll, obj, NULL, NULL) : -1;
	if (code == 409) {
		char *path = xasprintf("%s/%s", coll, json_str(p, "name"));
		if (rest_do(c, "GET", path, NULL, NULL, &cur) == 200) {
			json_object_set(json_object_get(obj, "metadata"), "resourceVersion",
					json_path(cur, "metadata.resourceVersion"));
			code = rest_do(c, "PUT", path, obj, NULL, NULL);
		}
		free(path);
	}
	int rc = code == 200 || code == 201 ? EXIT_OK
					    : fail("%s %s: registering %s \"%s\" failed (HTTP %d)", tp ? "rm" : "tp",
						   json_str(host, "name"), tp ? "tenant partition" : "resource manager",
						   json_str(p, "name"), code);
	if (rc == EXIT_OK)
		printf("%s %s: %s %s registered\n", tp ? "rm" : "tp", json_str(host, "name"),
		       tp ? "tenantpartition" : "resourcemanager", json_str(p, "name"));
	json_decref(obj);
	json_decref(cur);
	rest_free(c);
	free(servers);
	return rc;
}

static int remove_from(struct region *r, const json_t *host, const char *name, bool tp)
{
	char *servers = endpoints_csv(host);
	struct rest_config cfg = { .servers = servers, .token = r->token, .ca_file = r->ca, .user_agent = "ursactl" };
	struct rest_client *c = rest_new(&cfg);
	char *path = xasprintf("%s/%s", tp ? "/apis/ursa.io/v1/tenantpartitions" : "/apis/ursa.io/v1/resourcemanagers", name);
	int code = c ? rest_do(c, "DELETE", path, NULL, NULL, NULL) : -1;
	int rc = code == 200 || code == 404 ? EXIT_OK : fail("%s: removing %s failed (HTTP %d)", json_str(host, "name"), name, code);
	free(path);
	rest_free(c);
	free(servers);
	return rc;
}

json_t *region_find(json_t *list, const char *name, size_t *ret_index)
{
	size_t i;
	json_t *p;
	json_array_foreach(list, i, p) {
		if (json_str(p, "name") && strcmp(json_str(p, "name"), name) == 0) {
			if (ret_index)
				*ret_index = i;
			return p;
		}
	}
	return NULL;
}

int cmd_register(const struct command *cmd, const struct flags *f)
{
	const char *kind = flag_get(f, "kind"), *name = flag_get(f, "name"), *zone = flag_get(f, "zone");
	bool tp = strcmp(kind, "tp") == 0;
	if (!tp && strcmp(kind, "rm") != 0)
		return fail("--kind must be tp or rm");
	if (!tp && !zone)
		return fail("a resource manager needs --zone");
	struct region r;
	int rc = region_load(f, &r);
	if (rc != EXIT_OK)
		return rc;
	json_t *eps = json_array();
	const char *p = flag_get(f, "endpoints");
	while (*p) {
		size_t n = strcspn(p, ",");
		if (n)
			json_array_append_new(eps, json_stringn(p, n));
		p += n + (p[n] == ',');
	}
	json_t *entry = json_pack("{s:s,s:o}", "name", name, "endpoints", eps);
	if (!tp)
		json_object_set_new(entry, "zone", json_string(zone));
	json_t *mine = json_object_get(r.doc, list_key(tp)), *others = json_object_get(r.doc, list_key(!tp));
	if (json_array_size(others) && region_auth(f, &r) != EXIT_OK) {
		json_decref(entry);
		region_release(&r);
		return EXIT_FAIL;
	}
	size_t idx;
	if (region_find(mine, name, &idx))
		json_array_set(mine, idx, entry);
	else
		json_array_append(mine, entry);
	const char *gw, *gw_prefix;
	gateway_etcd_settings(r.doc, flag_get(f, "gateway-etcd"), flag_get(f, "gateway-etcd-prefix"), &gw, &gw_prefix);
	rc = region_save(&r);
	if (gw && gateway_record(gw, gw_prefix, entry, tp) != EXIT_OK)
		rc = EXIT_FAIL;
	size_t i;
	json_t *o;
	json_array_foreach(others, i, o) {
		if (upsert(&r, o, entry, tp) != EXIT_OK)
			rc = EXIT_FAIL;
		if (upsert(&r, entry, o, !tp) != EXIT_OK)
			rc = EXIT_FAIL;
	}
	json_decref(entry);
	region_release(&r);
	return rc;
}

int cmd_unregister(const struct command *cmd, const struct flags *f)
{
	const char *name = flag_get(f, "name");
	struct region r;
	int rc = region_load(f, &r);
	if (rc != EXIT_OK)
		return rc;
	for (int k = 0; k < 2; k++) {
		bool tp = k == 0;
		json_t *mine = json_object_get(r.doc, list_key(tp));
		size_t idx, i;
		json_t *o;
		if (!region_find(mine, name, &idx))
			continue;
		if (json_array_size(json_object_get(r.doc, list_key(!tp))) && region_auth(f, &r) != EXIT_OK) {
			region_release(&r);
			return EXIT_FAIL;
		}
		json_array_foreach(json_object_get(r.doc, list_key(!tp)), i, o) if (remove_from(&r, o, name, tp) != EXIT_OK) rc = EXIT_FAIL;
		const char *gw, *gw_prefix;
		gateway_etcd_settings(r.doc, flag_get(f, "gateway-etcd"), flag_get(f, "gateway-etcd-prefix"), &gw,
				      &gw_prefix);
		if (gw && gateway_forget(gw, gw_prefix, name) != EXIT_OK)
			rc = EXIT_FAIL;
		json_array_remove(mine, idx);
		if (region_save(&r) != EXIT_OK)
			rc = EXIT_FAIL;
		printf("%s %s unregistered\n", tp ? "tenant partition" : "resource manager", name);
		region_release(&r);
		return rc;
	}
	region_release(&r);
	return fail("no partition named \"%s\" in the region file", name);
}

int cmd_partitions(const struct command *cmd, const struct flags *f)
{
	struct region r;
	int rc = region_load(f, &r);
	if (rc != EXIT_OK)
		return rc;
	printf("%-6s %-16s %-8s %s\n", "KIND", "NAME", "ZONE", "ENDPOINTS");
	for (int k = 0; k < 2; k++) {
		size_t i;
		json_t *p;
		json_array_foreach(json_object_get(r.doc, list_key(k == 0)), i, p) {
			char *eps = endpoints_csv(p);
			printf("%-6s %-16s %-8s %s\n", k == 0 ? "tp" : "rm", json_str(p, "name"),
			       json_str(p, "zone") ? json_str(p, "zone") : "-", eps);
			free(eps);
		}
	}
	region_release(&r);
	return EXIT_OK;
}
