/* A tenant's objects read out of its partition and written back (ursactl tenant backup and
 * restore; docs/operations.md "Backing up and restoring a tenant"). Region operators only
 * (system:masters of the system tenant), on tenant partitions (servers that serve tenants):
 *
 *   GET  /ursa/v1/tenants/{t}/backup?limit=N&continue=TOKEN
 *        A page of the tenant's stored objects as etcd holds them, every page at the revision
 *        the first one was read at, as JSON lines (application/jsonl): one line per object,
 *        {"resource":"pods","path":"default/web","object":{...}}, then the page's own line,
 *        {"kind":"TenantBackupPage","tenant","partition","revision","items":N,"continue"}, so a client
 *        writes the objects' lines to a file as they are (the backup file's format). The tenant object
 *        comes first, then its namespaces, its CustomResourceDefinitions, every other kind of
 *        the table a tenant owns (events and ephemeral kinds aside), and its custom resources of
 *        every CRD it had at that revision and of the system tenant's CRDs (which serve every
 *        tenant). 410 when that revision has been compacted meanwhile.
 *   POST /ursa/v1/tenants/{t}/restore   {"from":"<backed-up tenant>","restore":"<id>",
 *        "items":[...],"done":bool}
 *        Writes items (a backup's, in any number of batches) into tenant t. The first batch holds
 *        the tenant object, which must not exist yet, nor anything of an earlier tenant of the
 *        name (a deleted tenant's objects are removed after it: 409 until they are gone). It is
 *        created first (a tenant partition's controller purges what a tenant that does not
 *        exist holds), in phase Restoring and annotated with the restore's id; later batches
 *        must name that id (409 otherwise), and the last ("done") sets the phase Active. Every
 *        item of a batch is checked before anything is written (400 naming the first bad one);
 *        then they are put in the order given (owners first), in etcd transactions of
 *        ETCD_TXN_MAX_OPS. A restore cut short leaves the tenant Restoring: delete it and
 *        restore again. Restored objects are new objects: each gets a new uid derived from the
 *        old one and the restore's id, so owner references still join up while no controller
 *        queue, kubelet or token that knew the old ones mistakes them; pods a controller owns
 *        are left for the controller to make again, and every other pod comes back
 *        unscheduled, Pending. With "mode":"move" a restore is a move's exact copy instead
 *        (the protocol: move.c).
 *
 * Writes go straight to etcd (no admission, no defaulting: these are objects the partition
 * stored before); the watch caches, quota, service IPs, RBAC and CRD serving follow from the
 * watch as for any write. */
#include "internal.h"
#include "ursa/base64.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#define PAGE_DEFAULT 500
#define PAGE_MAX 5000
#define RESTORE_MAX_ITEMS 100000

/* Continue tokens ------------------------------------------------------------------------- */

/* The same shape as a list's continue tokens (read.c): base64url of a small JSON object. */
void backup_token_format(int64_t rev, size_t range, const char *after, struct buf *out)
{
	json_t *t = json_pack("{s:I,s:I,s:s}", "rev", (json_int_t)rev, "range", (json_int_t)range, "after",
			      after ? after : "");
	char *text = json_dumps(t, JSON_COMPACT);
	base64_encode(out, text, strlen(text), BASE64_URL | BASE64_NOPAD);
	free(text);
	json_decref(t);
}

int backup_token_parse(const char *tok, int64_t *ret_rev, size_t *ret_range, char **ret_after)
{
	size_t n = strlen(tok);
	if (n == 0 || n > 4096)
		return -1;
	struct buf raw = BUF_INIT;
	json_t *j = base64_decode(&raw, tok, n, BASE64_URL | BASE64_NOPAD) == 0 ? json_loadb(raw.ptr, raw.len, 0, NULL)
										: NULL;
	buf_release(&raw);
	json_t *rev = json_object_get(j, "rev"), *range = json_object_get(j, "range");
	const char *after = json_str(j, "after");
	int rc = -1;
	if (json_is_integer(rev) && json_integer_value(rev) > 0 && json_is_integer(range) &&
	    json_integer_value(range) >= 0 && json_integer_value(range) <= 1000000 && after) {
		*ret_rev = json_integer_value(rev);
		*ret_range = (size_t)json_integer_value(range);
		*ret_after = xstrdup(after);
		rc = 0;
	}
	json_decref(j);
	return rc;
}

/* Restore items ----------------------------------------------------------------------------- */

/* An object name as a key segment: what any kind's names allow (RBAC's have ':'), and nothing
 * that changes the key's shape. */
static bool valid_segment(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 253 || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= ' ' || s[i] == '/' || s[i] == 0x7f || s[i] == '%')
			return false;
	return true;
}

/* uid's counterpart in a restored copy: SHA-256 of salt, tenant and uid as a UUID (version 8,
 * RFC 9562's custom kind), so the same uid maps the same way throughout one restore. */
void restore_map_uid(const char *salt, const char *tenant, const char *uid, char out[37])
{
	struct buf in = BUF_INIT;
	buf_addf(&in, "%s/%s/%s", salt, tenant, uid);
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	if (EVP_Digest(in.ptr, in.len, md, &mdlen, EVP_sha256(), NULL) != 1)
		abort(); /* as xmalloc does: a uid must not repeat */
	buf_release(&in);
	md[6] = (md[6] & 0x0f) | 0x80;
	md[8] = (md[8] & 0x3f) | 0x80;
	uid_format(md, out);
}

static void map_uid_field(json_t *obj, const char *key, const char *salt, const char *tenant)
{
	const char *uid = json_str(obj, key);
	if (!uid)
		return;
	char out[37];
	restore_map_uid(salt, tenant, uid, out);
	json_object_set_new(obj, key, json_string(out));
}

/* Splits resource into its kind's scope: table kinds by t->scope_of, custom resources
 * ("customresources/<group>/<plural>") either scope. -1 when unknown. */
static int scope_of(const struct restore_target *t, const char *resource, bool *ret_either)
{
	*ret_either = false;
	if (strncmp(resource, CR_KEY_SEGMENT "/", sizeof(CR_KEY_SEGMENT)) == 0) {
		const char *g = resource + sizeof(CR_KEY_SEGMENT), *slash = strchr(g, '/');
		if (!slash || strchr(slash + 1, '/'))
			return -1;
		char *group = xstrndup(g, (size_t)(slash - g));
		bool ok = valid_dns1123_subdomain(group) && strchr(group, '.') && valid_dns1123_label(slash + 1);
		free(group);
		*ret_either = true;
		return ok ? SCOPE_NAMESPACE : -1;
	}
	return t->scope_of(t->ud, resource);
}

/* A move's copy is the object itself: only what etcd's revision makes (resourceVersion) and
 * the deprecated selfLink go; the tenant object is marked as moving in under the move's id. */
static int move_object(const struct restore_target *t, const json_t *src, bool is_tenant, const char *resource,
		       const char *path, char **ret_rel, json_t **ret_obj, char *ns)
{
	json_t *obj = json_deep_copy(src);
	json_t *meta = json_obj_child(obj, "metadata");
	json_object_del(meta, "resourceVersion");
	json_object_del(meta, "selfLink");
	if (is_tenant) {
		json_t *ann = json_obj_child(meta, "annotations");
		json_object_del(ann, RESTORE_ANNOTATION);
		json_object_del(ann, MOVED_FROM_ANNOTATION); /* the source's own last move: activation */
		json_object_del(ann, MOVED_TO_ANNOTATION);   /* here writes this move's */
		json_object_set_new(ann, MOVE_ANNOTATION, json_string(t->restore_id));
		json_object_set_new(json_obj_child(obj, "status"), "phase", json_string(TENANT_MOVING_IN));
		*ret_rel = xasprintf("tenants/%s", t->to);
	} else {
		*ret_rel = xasprintf("%s/%s/%s", resource, t->to, path);
	}
	*ret_obj = obj;
	free(ns);
	return 0;
}

int restore_item(const struct restore_target *t, const json_t *item, char **ret_rel, json_t **ret_obj,
		 struct buf *err)
{
	*ret_rel = NULL;
	*ret_obj = NULL;
	const char *resource = json_str(item, "resource"), *path = json_str(item, "path");
	json_t *src = json_object_get(item, "object"), *deleted = json_object_get(item, "deleted");
	bool del = json_is_true(deleted);
	if (!json_is_object(item) || !resource || !path || (del ? src != NULL : !json_is_object(src)) ||
	    (deleted && !json_is_boolean(deleted)) || (del && !t->move)) {
		buf_adds(err, t->move ? "an item needs \"resource\", \"path\" and either \"object\" or \"deleted\": true"
				      : "an item needs \"resource\", \"path\" and \"object\"");
		return -1;
	}
	bool either;
	int scope = scope_of(t, resource, &either);
	if (scope < 0) {
		buf_addf(err, "unknown resource \"%s\"", resource);
		return -1;
	}
	bool is_tenant = scope == SCOPE_CLUSTER;
	if (is_tenant && strcmp(resource, "tenants") != 0) {
		buf_addf(err, "resource \"%s\" is not a tenant's", resource);
		return -1;
	}
	/* path: the tenant's own name, or [namespace/]name */
	const char *slash = strchr(path, '/');
	char *ns = slash ? xstrndup(path, (size_t)(slash - path)) : NULL;
	const char *name = slash ? slash + 1 : path;
	const char *meta_name = json_path_str(src, "metadata.name");
	const char *meta_ns = json_path_str(src, "metadata.namespace");
	if (is_tenant ? (slash || strcmp(path, t->from) != 0)
		      : (slash ? (!either && scope != SCOPE_NAMESPACE) || !valid_dns1123_label(ns)
			       : !either && scope == SCOPE_NAMESPACE)) {
		buf_addf(err, "path \"%s\" does not fit resource \"%s\"", path, resource);
		goto fail;
	}
	if (!valid_segment(name)) {
		buf_addf(err, "path \"%s\" does not name an object", path);
		goto fail;
	}
	if (del) { /* a move's follow: the key goes (the tenant object only with the tenant) */
		if (is_tenant) {
			buf_adds(err, "the tenant object is not deleted by a move's batch (drop the move instead)");
			goto fail;
		}
		*ret_rel = xasprintf("%s/%s/%s", resource, t->to, path);
		free(ns);
		return 2;
	}
	if (!meta_name || strcmp(meta_name, name) != 0 ||
	    (ns ? !meta_ns || strcmp(meta_ns, ns) != 0 : meta_ns && *meta_ns)) {
		buf_addf(err, "path \"%s\" does not match the object's metadata", path);
		goto fail;
	}
	if (t->move) {
		const char *meta_tenant = json_path_str(src, "metadata.tenant");
		if (!is_tenant && meta_tenant && strcmp(meta_tenant, t->to) != 0) {
			buf_addf(err, "the object of \"%s\" is of tenant \"%s\", not \"%s\"", path, meta_tenant, t->to);
			goto fail;
		}
		return move_object(t, src, is_tenant, resource, path, ret_rel, ret_obj, ns);
	}
	json_t *obj = json_deep_copy(src);
	json_t *meta = json_object_get(obj, "metadata");
	bool pod = strcmp(resource, "pods") == 0;
	if (pod && json_controller_ref(obj)) {
		json_decref(obj);
		free(ns);
		return 1;
	}
	static const char *const drop[] = { "resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds",
					    "selfLink", "managedFields" };
	for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
		json_object_del(meta, drop[i]);
	if (is_tenant) {
		json_object_set_new(meta, "name", json_string(t->to));
		json_object_set_new(meta, "tenant", json_string(TENANT_SYSTEM));
		json_t *ann = json_obj_child(meta, "annotations");
		json_object_set_new(ann, RESTORE_ANNOTATION, json_string(t->restore_id));
		json_object_del(ann, MOVED_FROM_ANNOTATION); /* a restored tenant's clients start again */
		json_object_del(ann, MOVED_TO_ANNOTATION);
		json_object_set_new(json_obj_child(obj, "status"), "phase", json_string("Restoring"));
	} else {
		json_object_set_new(meta, "tenant", json_string(t->to));
	}
	/* A restored object is a new one: a uid no kubelet, controller queue or token has seen, the
	 * same for every reference to it throughout the restore (its id is the salt). */
	map_uid_field(meta, "uid", t->restore_id, t->to);
	const char *uid = json_str(meta, "uid");
	if (uid)
		json_object_set_new(meta, "hashKey", json_integer(hash_key_of_uid(uid)));
	size_t i;
	json_t *ref;
	json_array_foreach(json_object_get(meta, "ownerReferences"), i, ref)
		if (json_is_object(ref))
			map_uid_field(ref, "uid", t->restore_id, t->to);
	json_t *ann = json_object_get(meta, "annotations");
	if (json_is_object(ann))
		map_uid_field(ann, "kubernetes.io/service-account.uid", t->restore_id, t->to);
	if (pod) {
		json_t *spec = json_object_get(obj, "spec");
		if (json_is_object(spec))
			json_object_del(spec, "nodeName");
		json_object_set_new(obj, "status", json_pack("{s:s}", "phase", "Pending"));
	}
	if (is_tenant)
		*ret_rel = xasprintf("tenants/%s", t->to);
	else
		*ret_rel = xasprintf("%s/%s/%s", resource, t->to, path);
	*ret_obj = obj;
	free(ns);
	return 0;
fail:
	free(ns);
	return -1;
}

/* The server's side --------------------------------------------------------------------------- */

struct brange {
	char *resource; /* "pods", "customresources/<group>/<plural>", "tenants" */
	char *start;    /* etcd key (the tenant's: exact) */
	bool exact;
};

static void ranges_free(struct brange *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(r[i].resource);
		free(r[i].start);
	}
	free(r);
}

static void range_add(struct brange **v, size_t *n, char *resource, char *start, bool exact)
{
	*v = xrealloc(*v, (*n + 1) * sizeof(**v));
	(*v)[(*n)++] = (struct brange){ resource, start, exact };
}

bool backup_line(struct buf *out, const char *resource, const char *path, const char *value, size_t len)
{
	if (!value) { /* a move's follow: the key was deleted */
		buf_adds(out, "{\"resource\":");
		buf_add_json_str(out, resource, strlen(resource));
		buf_adds(out, ",\"path\":");
		buf_add_json_str(out, path, strlen(path));
		buf_adds(out, ",\"deleted\":true}\n");
		return true;
	}
	if (len < 2 || value[0] != '{' || value[len - 1] != '}')
		return false; /* not an object this server wrote */
	json_t *reenc = NULL; /* an object stored with line breaks: on one line, as items are */
	if (memchr(value, '\n', len) && !(reenc = json_loadb(value, len, 0, NULL)))
		return false;
	buf_adds(out, "{\"resource\":");
	buf_add_json_str(out, resource, strlen(resource));
	buf_adds(out, ",\"path\":");
	buf_add_json_str(out, path, strlen(path));
	buf_adds(out, ",\"object\":");
	if (reenc)
		store_dump(reenc, out);
	else
		buf_add(out, value, len);
	json_decref(reenc);
	buf_adds(out, "}\n");
	return true;
}

bool backup_covers(const struct api_resource *r)
{
	return !r->ephemeral && !r->metrics && r->scope != SCOPE_CLUSTER && strcmp(r->plural, "events") != 0;
}

/* The ranges a backup of tenant reads, in order; the custom resources' from the tenant's and
 * the system tenant's CRDs at rev. 0 or an etcd error. */
static int backup_ranges(struct apiserver *s, const char *tenant, int64_t rev, struct brange **ret, size_t *ret_n)
{
	struct brange *v = NULL;
	size_t n = 0;
	const char *pre = s->o.etcd_prefix;
	range_add(&v, &n, xstrdup("tenants"), xasprintf("%s/tenants/%s", pre, tenant), true);
	static const char *const first[] = { "namespaces", "customresourcedefinitions" };
	for (size_t i = 0; i < 2; i++)
		if (served_by_plural(s, first[i]))
			range_add(&v, &n, xstrdup(first[i]), xasprintf("%s/%s/%s/", pre, first[i], tenant), false);
	for (size_t i = 0; i < s->nres; i++) {
		const struct api_resource *r = s->res[i].r;
		if (!backup_covers(r) || strcmp(r->plural, first[0]) == 0 || strcmp(r->plural, first[1]) == 0)
			continue;
		bool seen = false; /* a kind served under two groups shares its key */
		for (size_t j = 0; j < n && !seen; j++)
			seen = strcmp(v[j].resource, r->plural) == 0;
		if (!seen)
			range_add(&v, &n, xstrdup(r->plural), xasprintf("%s/%s/%s/", pre, r->plural, tenant), false);
	}
	/* custom resources of the tenant's CRDs, then of the system tenant's (which serve every
	 * tenant without a CRD of the name: their objects in the tenant are the tenant's too) */
	const char *owners[] = { tenant, TENANT_SYSTEM };
	for (size_t o = 0; o < 2 && served_by_plural(s, "customresourcedefinitions"); o++) {
		if (o == 1 && strcmp(tenant, TENANT_SYSTEM) == 0)
			break;
		char *key = xasprintf("%s/customresourcedefinitions/%s/", pre, owners[o]);
		char *end = etcd_prefix_end(key);
		struct etcd_range_result rr = { 0 };
		int err = etcd_range(s->etcd, key, end, rev, 0, false, &rr);
		free(key);
		free(end);
		if (err) {
			ranges_free(v, n);
			return err;
		}
		for (size_t i = 0; i < rr.n; i++) {
			json_t *crd = json_loadb(rr.kvs[i].value, rr.kvs[i].value_len, 0, NULL);
			const char *g = json_path_str(crd, "spec.group"), *p = json_path_str(crd, "spec.names.plural");
			if (g && p && valid_dns1123_subdomain(g) && valid_dns1123_label(p)) {
				char *res = xasprintf(CR_KEY_SEGMENT "/%s/%s", g, p);
				bool seen = false; /* the tenant's own CRD of the name came first */
				for (size_t j = 0; j < n && !seen; j++)
					seen = strcmp(v[j].resource, res) == 0;
				if (seen)
					free(res);
				else
					range_add(&v, &n, res,
						  xasprintf("%s/" CR_KEY_SEGMENT "/%s/%s/%s/", pre, g, p, tenant), false);
			}
			json_decref(crd);
		}
		etcd_range_result_release(&rr);
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

static void reply_read_error(struct req *q, int err)
{
	if (err == E_GONE)
		reply_status(q, err, "the backup's revision has been compacted: start the backup again");
	else
		reply_status(q, err, "reading the tenant's objects failed: %s", err_reason(err));
}

static bool valid_tenant_name(const char *t)
{
	return valid_dns1123_label(t) && strcmp(t, TENANT_SYSTEM) != 0;
}

static void handle_backup(struct req *q, const char *tenant)
{
	struct apiserver *s = q->s;
	long limit = PAGE_DEFAULT;
	const char *lim = http_query(q->http, "limit"), *cont = http_query(q->http, "continue");
	if (lim) {
		char *end;
		limit = strtol(lim, &end, 10);
		if (*end || end == lim || limit <= 0) {
			reply_status(q, E_BAD_REQUEST, "limit must be a positive integer");
			return;
		}
		if (limit > PAGE_MAX)
			limit = PAGE_MAX;
	}
	int64_t rev = 0;
	size_t idx = 0;
	char *after = NULL;
	if (cont && *cont && backup_token_parse(cont, &rev, &idx, &after) < 0) {
		reply_status(q, E_BAD_REQUEST, "the continue token is not valid");
		return;
	}
	int err = rev ? 0 : etcd_current_revision(s->etcd, &rev);
	struct brange *rg = NULL;
	size_t nrg = 0;
	if (!err)
		err = backup_ranges(s, tenant, rev, &rg, &nrg);
	if (err) {
		reply_read_error(q, err);
		free(after);
		return;
	}
	if (after && *after && (idx >= nrg || strncmp(after, rg[idx].start, strlen(rg[idx].start)) != 0)) {
		reply_status(q, E_BAD_REQUEST, "the continue token is not valid");
		goto out;
	}
	struct buf body = BUF_INIT;
	long count = 0;
	while (idx < nrg && count < limit) {
		const struct brange *r = &rg[idx];
		char *end = r->exact ? NULL : etcd_prefix_end(r->start);
		const char *from = after && *after ? after : r->start;
		struct etcd_range_result rr = { 0 };
		/* one more than wanted: the range restarts at the last key sent, which is skipped */
		err = etcd_range(s->etcd, from, end, rev, r->exact ? 0 : limit - count + 1, false, &rr);
		free(end);
		if (err) {
			buf_release(&body);
			reply_read_error(q, err);
			goto out;
		}
		if (idx == 0 && rr.n == 0) {
			etcd_range_result_release(&rr);
			buf_release(&body);
			reply_status_details(q, E_NOT_FOUND, tenant, NULL, "tenants \"%s\" not found", tenant);
			goto out;
		}
		bool full = false;
		for (size_t i = 0; i < rr.n && !full; i++) {
			const struct etcd_kv *kv = &rr.kvs[i];
			if (after && *after && strcmp(kv->key, after) == 0)
				continue;
			if (count == limit) {
				full = true; /* a key past the page: the range goes on next time */
				break;
			}
			free(after);
			after = xstrdup(kv->key);
			const char *path = r->exact ? tenant : kv->key + strlen(r->start);
			if (backup_line(&body, r->resource, path, kv->value, kv->value_len))
				count++;
		}
		if (!full && !rr.more) { /* the range is done */
			idx++;
			free(after);
			after = NULL;
		}
		etcd_range_result_release(&rr);
	}
	buf_adds(&body, "{\"kind\":\"TenantBackupPage\",\"apiVersion\":\"ursa.io/v1\",\"tenant\":");
	buf_add_json_str(&body, tenant, strlen(tenant));
	if (s->o.partition_id) {
		buf_adds(&body, ",\"partition\":");
		buf_add_json_str(&body, s->o.partition_id, strlen(s->o.partition_id));
	}
	buf_addf(&body, ",\"revision\":%lld,\"items\":%ld,\"continue\":\"", (long long)rev, count);
	if (idx < nrg)
		backup_token_format(rev, idx, after, &body);
	buf_adds(&body, "\"}\n");
	q->replied_code = 200;
	http_reply_set(q->reply, 200, "application/jsonl", &body);
out:
	free(after);
	ranges_free(rg, nrg);
}

static int table_scope(void *ud, const char *resource)
{
	struct apiserver *s = ud;
	struct served *sv = served_by_plural(s, resource);
	if (!sv || !(backup_covers(sv->r) || strcmp(resource, "tenants") == 0))
		return -1;
	return (int)sv->r->scope;
}

/* A write of a restore's batch: a put of val, or (a move's) a delete. */
struct wop {
	char *rel;
	struct buf val;
	bool del;
};

static void wops_free(struct wop *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].rel);
		buf_release(&v[i].val);
	}
	free(v);
}

int tenant_read(struct apiserver *s, const char *key, json_t **ret, int64_t *ret_rev)
{
	struct etcd_kv kv = { 0 };
	int rc = etcd_get(s->etcd, key, &kv);
	*ret = rc ? NULL : json_loadb(kv.value, kv.value_len, 0, NULL);
	*ret_rev = kv.mod_rev;
	etcd_kv_release(&kv);
	return rc || *ret ? rc : E_INTERNAL;
}

/* Whether tenant obj is the one restore id is making; else a reply: 404 when absent (rc), 409
 * when another's, the read's error otherwise. */
static bool restoring_tenant(struct req *q, int rc, const json_t *obj, const char *tenant, const char *id)
{
	if (rc == E_NOT_FOUND)
		reply_status_details(q, rc, tenant, NULL,
				     "tenants \"%s\" not found: a restore's first batch holds the tenant object", tenant);
	else if (rc)
		reply_status(q, rc, "reading the tenant failed: %s", err_reason(rc));
	else if (strcmp(json_str(json_path(obj, "metadata.annotations"), RESTORE_ANNOTATION) ?: "", id) != 0)
		reply_status_details(q, E_CONFLICT, tenant, NULL,
				     "tenants \"%s\" exists and is not being restored by restore %s (a restore left unfinished? delete the tenant and restore again)",
				     tenant, id);
	else
		return true;
	return false;
}

/* A tenant's objects outlive it for a moment: a deleted tenant's controller empties it after the
 * tenant object is gone. A restore must not start before it is done (the controller would take
 * the restored objects for more of the same): 0 when tenant holds nothing, else a reply (409
 * naming a kind it still holds, which ursactl waits out) and an error. */
static int leftovers(struct req *q, const char *tenant)
{
	struct apiserver *s = q->s;
	int64_t rev;
	struct brange *rg = NULL;
	size_t n = 0;
	int err = etcd_current_revision(s->etcd, &rev);
	if (!err)
		err = backup_ranges(s, tenant, rev, &rg, &n);
	for (size_t i = 1; i < n && !err; i++) { /* 0: the tenant object, checked by its create */
		char *end = etcd_prefix_end(rg[i].start);
		struct etcd_range_result rr = { 0 };
		err = etcd_range(s->etcd, rg[i].start, end, rev, 1, true, &rr);
		free(end);
		if (!err && rr.n) {
			json_t *causes = json_pack("[{s:s,s:s}]", "reason", RESTORE_LEFTOVERS_REASON, "field",
						   rg[i].resource);
			reply_status_details(q, E_CONFLICT, tenant, causes,
					     "tenant \"%s\" still holds %s of before (its deletion is in progress): restore it once they are gone",
					     tenant, rg[i].resource);
			err = E_CONFLICT;
			etcd_range_result_release(&rr);
			ranges_free(rg, n);
			return err;
		}
		etcd_range_result_release(&rr);
	}
	ranges_free(rg, n);
	if (err)
		reply_read_error(q, err);
	return err;
}

/* Whether tenant obj is the one move id is copying in (phase MovingIn, annotated with id); else
 * a reply as restoring_tenant's. */
static bool moving_in_tenant(struct req *q, int rc, const json_t *obj, const char *tenant, const char *id)
{
	if (rc == E_NOT_FOUND)
		reply_status_details(q, rc, tenant, NULL,
				     "tenants \"%s\" not found: a move's first batch holds the tenant object", tenant);
	else if (rc)
		reply_status(q, rc, "reading the tenant failed: %s", err_reason(rc));
	else if (strcmp(json_str(json_path(obj, "metadata.annotations"), MOVE_ANNOTATION) ?: "", id) != 0 ||
		 strcmp(json_path_str(obj, "status.phase") ?: "", TENANT_MOVING_IN) != 0)
		reply_status_details(q, E_CONFLICT, tenant, NULL,
				     "tenants \"%s\" exists and is not being moved in by move %s", tenant, id);
	else
		return true;
	return false;
}

/* Applies ops[0..n) but skip in order, ETCD_TXN_MAX_OPS to a transaction (a key met twice
 * starts the next one: etcd takes a key once per transaction). 0 with *ret_rev the last
 * transaction's revision (untouched when none ran), or an etcd error. */
static int apply_ops(struct apiserver *s, const struct wop *ops, size_t n, ssize_t skip, int64_t *ret_rev)
{
	struct etcd_op batch[ETCD_TXN_MAX_OPS];
	size_t nb = 0;
	int rc = 0;
	for (size_t i = 0; i <= n && !rc; i++) {
		char *key = i < n && (ssize_t)i != skip ? xasprintf("%s/%s", s->o.etcd_prefix, ops[i].rel) : NULL;
		bool again = false;
		for (size_t j = 0; key && j < nb && !again; j++)
			again = strcmp(batch[j].key, key) == 0;
		if (nb && (nb == ETCD_TXN_MAX_OPS || i == n || again)) {
			rc = etcd_write_all(s->etcd, batch, nb, ret_rev);
			for (size_t j = 0; j < nb; j++)
				free((char *)batch[j].key);
			nb = 0;
		}
		if (key && !rc)
			batch[nb++] = (struct etcd_op){ .key = key, .value = buf_cstr(&ops[i].val),
							.value_len = ops[i].val.len, .del = ops[i].del };
		else
			free(key);
	}
	for (size_t j = 0; j < nb; j++)
		free((char *)batch[j].key);
	return rc;
}

static void handle_restore(struct req *q, const char *tenant)
{
	struct apiserver *s = q->s;
	size_t len;
	const char *text = http_body(q->http, &len);
	struct buf err = BUF_INIT;
	json_t *doc = json_parse_limited(text, len, MAX_JSON_DEPTH + 3, &err);
	if (!doc) {
		reply_status(q, E_BAD_REQUEST, "the restore request is not valid JSON: %s", buf_cstr(&err));
		buf_release(&err);
		return;
	}
	const char *from = json_str(doc, "from"), *id = json_str(doc, "restore"), *mode = json_str(doc, "mode");
	json_t *items = json_object_get(doc, "items"), *done = json_object_get(doc, "done");
	bool move = mode && strcmp(mode, "move") == 0;
	if (!from || !valid_tenant_name(from) || !id || !valid_dns1123_label(id) || !json_is_array(items) ||
	    json_array_size(items) > RESTORE_MAX_ITEMS || (done && !json_is_boolean(done)) ||
	    (json_object_get(doc, "mode") && !move && strcmp(mode ?: "", "restore") != 0)) {
		reply_status(q, E_BAD_REQUEST,
			     "a restore request is {\"from\": <the backed-up tenant>, \"restore\": <an id, a DNS label>, \"items\": [at most %d items], \"done\": <bool>, \"mode\": \"restore\" or \"move\"}",
			     RESTORE_MAX_ITEMS);
		json_decref(doc);
		return;
	}
	if (move && (strcmp(from, tenant) != 0 || json_is_true(done))) {
		reply_status(q, E_BAD_REQUEST, strcmp(from, tenant) != 0
						       ? "a move keeps the tenant's name: \"from\" must be \"%s\""
						       : "a move's copy is not done by its batches: activate it (POST .../%s/move, step activate)",
			     tenant);
		json_decref(doc);
		return;
	}
	struct restore_target t = {
		.from = from, .to = tenant, .restore_id = id, .move = move, .scope_of = table_scope, .ud = s
	};
	size_t n = json_array_size(items), nop = 0, skipped = 0;
	struct wop *ops = xcalloc(n ? n : 1, sizeof(*ops));
	ssize_t tenant_at = -1;
	char *tkey = xasprintf("%s/tenants/%s", s->o.etcd_prefix, tenant);
	json_t *cur = NULL;
	struct strmap seen;
	strmap_init(&seen);
	for (size_t i = 0; i < n; i++) {
		char *rel;
		json_t *obj;
		int rc = restore_item(&t, json_array_get(items, i), &rel, &obj, &err);
		if (rc < 0) {
			reply_status(q, E_BAD_REQUEST, "items[%zu]: %s; nothing was %s", i, buf_cstr(&err),
				     move ? "written" : "restored");
			goto out;
		}
		if (rc == 1) {
			skipped++;
			continue;
		}
		bool created;
		strmap_put(&seen, rel, &created);
		if (!created && !move) { /* a move's follow may change a key more than once */
			reply_status(q, E_BAD_REQUEST, "items[%zu]: %s is in the request twice; nothing was restored", i,
				     rel);
			free(rel);
			json_decref(obj);
			goto out;
		}
		if (tenant_at < 0 && rc == 0 && strncmp(rel, "tenants/", 8) == 0)
			tenant_at = (ssize_t)nop;
		ops[nop].rel = rel;
		ops[nop].del = rc == 2;
		if (obj)
			store_dump(obj, &ops[nop].val);
		json_decref(obj);
		nop++;
	}
	/* The tenant first (its controller purges what a tenant that does not exist holds), marked
	 * as being restored (moved in) by this restore (move); the batches after it must name the
	 * same one (the first one sent again is fine). */
	int64_t rev = 0, trev;
	bool created = false;
	int rc = tenant_read(s, tkey, &cur, &trev);
	if (rc == E_NOT_FOUND && tenant_at >= 0) {
		if ((rc = leftovers(q, tenant)) != 0)
			goto out;
		if ((rc = etcd_create(s->etcd, tkey, ops[tenant_at].val.ptr, ops[tenant_at].val.len, 0, &rev))) {
			if (rc == E_ALREADY_EXISTS)
				reply_status_details(q, rc, tenant, NULL, "tenants \"%s\" already exists", tenant);
			else
				reply_status(q, rc, "writing the tenant failed: %s", err_reason(rc));
			goto out;
		}
		created = true;
	} else if (!(move ? moving_in_tenant(q, rc, cur, tenant, id) : restoring_tenant(q, rc, cur, tenant, id))) {
		goto out;
	}
	/* everything else in the order given (owners before what they own; a move's changes in the
	 * order they were made). A restore's tenant object is written once, by its create; a move's
	 * again when a batch brings it again (a change followed from the source). */
	rc = apply_ops(s, ops, nop, created || !move ? tenant_at : -1, &rev);
	/* what this server wrote, for those that wait to see its own writes (the authorizer: a user
	 * of the tenant restored is not refused while its bindings are on their way to the cache) */
	for (size_t i = 0; i < nop && !rc; i++) {
		char *slash = strchr(ops[i].rel, '/');
		*slash = '\0';
		struct served *sv = served_by_plural(s, ops[i].rel);
		*slash = '/';
		if (sv && rev)
			note_written(sv, rev);
	}
	if (!rc && !rev && move)
		rc = etcd_current_revision(s->etcd, &rev); /* nothing written: where etcd stands */
	if (!rc && json_is_true(done)) { /* the last batch: the tenant is whole */
		json_decref(cur);
		rc = tenant_read(s, tkey, &cur, &trev);
		if (!restoring_tenant(q, rc, cur, tenant, id))
			goto out;
		json_object_del(json_path(cur, "metadata.annotations"), RESTORE_ANNOTATION);
		if (!json_object_size(json_path(cur, "metadata.annotations")))
			json_object_del(json_object_get(cur, "metadata"), "annotations");
		json_object_set_new(json_obj_child(cur, "status"), "phase", json_string("Active"));
		struct buf v = BUF_INIT;
		store_dump(cur, &v);
		rc = etcd_update(s->etcd, tkey, v.ptr, v.len, trev, &rev, NULL);
		buf_release(&v);
	}
	if (rc) {
		reply_status(q, rc, "writing the %s objects failed (%s)", move ? "moved" : "restored", err_reason(rc));
		goto out;
	}
	json_t *res = json_pack("{s:s,s:s,s:s,s:I,s:I,s:b,s:I}", "kind", "TenantRestoreResult", "apiVersion", "ursa.io/v1",
				"tenant", tenant, "restored", (json_int_t)nop, "skipped", (json_int_t)skipped, "done",
				json_is_true(done), "revision", (json_int_t)rev);
	if (move) {
		json_object_set_new(res, "mode", json_string("move"));
		json_object_set_new(res, "partitionNumber", json_integer(rv_number()));
	}
	reply_json(q, 200, res);
	json_decref(res);
out:
	json_decref(cur);
	free(tkey);
	strmap_release(&seen, NULL);
	wops_free(ops, nop);
	buf_release(&err);
	json_decref(doc);
}

/* GET /ursa/v1/tenants/{t}/size: how many objects a backup (or a move) of the tenant would
 * carry, from etcd's counts (no value read): {"kind":"TenantSize","tenant","objects","revision",
 * "partitionNumber"} (this server's --partition-number, revision.h).
 * What ursactl partition balance weighs tenants by. */
static void handle_size(struct req *q, const char *tenant)
{
	struct apiserver *s = q->s;
	int64_t rev, total = 0;
	struct brange *rg = NULL;
	size_t n = 0;
	int err = etcd_current_revision(s->etcd, &rev);
	if (!err)
		err = backup_ranges(s, tenant, rev, &rg, &n);
	for (size_t i = 0; i < n && !err; i++) {
		char *end = rg[i].exact ? NULL : etcd_prefix_end(rg[i].start);
		struct etcd_range_result rr = { 0 };
		err = etcd_range(s->etcd, rg[i].start, end, rev, 1, true, &rr);
		if (!err && i == 0 && rr.count == 0)
			err = E_NOT_FOUND;
		total += rr.count;
		etcd_range_result_release(&rr);
		free(end);
	}
	ranges_free(rg, n);
	if (err == E_NOT_FOUND) {
		reply_status_details(q, E_NOT_FOUND, tenant, NULL, "tenants \"%s\" not found", tenant);
		return;
	}
	if (err) {
		reply_read_error(q, err);
		return;
	}
	json_t *res = json_pack("{s:s,s:s,s:s,s:I,s:I,s:I}", "kind", "TenantSize", "apiVersion", "ursa.io/v1", "tenant",
				tenant, "objects", (json_int_t)total, "revision", (json_int_t)rev, "partitionNumber",
				(json_int_t)rv_number());
	reply_json(q, 200, res);
	json_decref(res);
}

bool serve_tenant_backup(struct req *q)
{
	const char *path = http_path(q->http);
	if (strncmp(path, TENANT_BACKUP_PATH, strlen(TENANT_BACKUP_PATH)) != 0)
		return false;
	const char *t = path + strlen(TENANT_BACKUP_PATH), *slash = strchr(t, '/');
	const char *op = slash ? slash + 1 : "";
	static const struct {
		const char *op, *method;
		void (*fn)(struct req *q, const char *tenant);
	} ops[] = {
		{ "backup", "GET", handle_backup },
		{ "restore", "POST", handle_restore },
		{ "changes", "GET", handle_tenant_changes }, /* move.c */
		{ "move", "POST", handle_tenant_move },
		{ "size", "GET", handle_size },
		{ "lastchange", "GET", handle_tenant_last_change }, /* move.c */
	};
	size_t i = 0;
	while (i < sizeof(ops) / sizeof(ops[0]) && strcmp(op, ops[i].op) != 0)
		i++;
	char *tenant = slash ? xstrndup(t, (size_t)(slash - t)) : NULL;
	if (i == sizeof(ops) / sizeof(ops[0]) || !served_by_plural(q->s, "tenants"))
		reply_status(q, E_NOT_FOUND, "the server could not find the requested resource");
	else if (strcmp(http_method(q->http), ops[i].method) != 0)
		reply_status(q, E_METHOD, "the server does not allow this method on the requested resource");
	else if (!identity_is_system_admin(&q->id))
		reply_status(q, E_FORBIDDEN, "tenant %s is for the region's operators (system:masters of the system tenant)",
			     ops[i].op);
	else if (!valid_tenant_name(tenant))
		reply_status(q, E_BAD_REQUEST, "\"%s\" is not a tenant that can be backed up, restored or moved", tenant);
	else
		ops[i].fn(q, tenant);
	free(tenant);
	return true;
}
