/* Fuzzes tenant restore's item check and rewrite (restore_item, a plain restore's and a move's)
 * , backup continue tokens (backup_token_parse) and the keys a move's follow reports
 * (change_key_classify) on arbitrary bytes. The first byte picks: even, the rest is a restore
 * item's JSON, for a move when bit 1 is set ('2', '6'); 1 mod 4 ('1'), a continue token; 3 mod 4
 * ('3'), a key below the prefix. Invariants: an item is refused with a message and nothing
 * returned, skipped with nothing returned, deleted (a move's) at a key under its resource and
 * the tenant, or placed at a key under its resource and the target tenant with an object whose
 * metadata names that key's name and the target tenant (a move's: the object as given, but for
 * resourceVersion and selfLink, and the tenant object's phase and annotation); a token parsed
 * formats back to itself; a key classified is the resource, the tenant and the path joined. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "apiserver/internal.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

static int scope(void *ud, const char *resource)
{
	(void)ud;
	if (strcmp(resource, "tenants") == 0)
		return SCOPE_CLUSTER;
	if (strcmp(resource, "namespaces") == 0 || strcmp(resource, "clusterroles") == 0)
		return SCOPE_TENANT;
	if (strcmp(resource, "pods") == 0 || strcmp(resource, "secrets") == 0)
		return SCOPE_NAMESPACE;
	return -1;
}

/* A move's copy keeps the object as given, but for resourceVersion and selfLink (and the
 * tenant object's phase and move annotation). */
static void check_moved(const json_t *it, const json_t *obj, bool tenant)
{
	json_t *want = json_deep_copy(json_object_get(it, "object")), *meta = json_object_get(want, "metadata");
	json_object_del(meta, "resourceVersion");
	json_object_del(meta, "selfLink");
	if (tenant) {
		if (strcmp(json_path_str(obj, "status.phase") ?: "", "MovingIn") != 0 ||
		    strcmp(json_str(json_path(obj, "metadata.annotations"), "ursa.io/move") ?: "", "r") != 0)
			abort();
		json_t *got = json_deep_copy(obj);
		json_object_del(json_object_get(got, "status"), "phase");
		json_object_del(json_object_get(want, "status"), "phase");
		json_object_del(json_path(got, "metadata.annotations"), "ursa.io/move");
		json_object_del(json_path(got, "metadata.annotations"), "ursa.io/restore");
		json_object_del(json_path(want, "metadata.annotations"), "ursa.io/move");
		json_object_del(json_path(want, "metadata.annotations"), "ursa.io/restore");
		/* emptied children the rewrite may have added */
		if (!json_object_size(json_object_get(got, "status")) && !json_object_size(json_object_get(want, "status")))
			json_object_del(got, "status"), json_object_del(want, "status");
		if (!json_object_size(json_path(got, "metadata.annotations")) &&
		    !json_object_size(json_path(want, "metadata.annotations")))
			json_object_del(json_object_get(got, "metadata"), "annotations"),
				json_object_del(json_object_get(want, "metadata"), "annotations");
		bool same = json_equal(got, want);
		json_decref(got);
		if (!same)
			abort();
	} else if (!json_equal(obj, want)) {
		abort();
	}
	json_decref(want);
}

static void fuzz_item(const char *data, size_t size, bool move)
{
	json_t *it = json_loadb(data, size, JSON_DECODE_ANY, NULL);
	if (!it)
		return;
	struct restore_target t = { .from = "acme", .to = move ? "acme" : "acme2", .restore_id = "r", .move = move,
				    .scope_of = scope };
	const char *to = t.to;
	char *rel;
	json_t *obj;
	struct buf err = BUF_INIT;
	int rc = restore_item(&t, it, &rel, &obj, &err);
	if (rc < 0 && (rel || obj || !err.len))
		abort();
	if (rc == 1 && (rel || obj || move))
		abort();
	if (rc == 2) {
		const char *res = json_str(it, "resource");
		if (!move || obj || !rel || !res || strncmp(rel, res, strlen(res)) != 0 || strcmp(res, "tenants") == 0 ||
		    !strstr(rel, "/acme/") || strstr(rel, "/../") || !json_is_true(json_object_get(it, "deleted")))
			abort();
		free(rel);
	}
	if (rc == 0 && move)
		check_moved(it, obj, strcmp(json_str(it, "resource"), "tenants") == 0);
	if (rc == 0) {
		const char *res = json_str(it, "resource"), *name = json_path_str(obj, "metadata.name");
		if (!rel || !obj || !res || !name || strncmp(rel, res, strlen(res)) != 0)
			abort();
		if (strcmp(res, "tenants") == 0) {
			if (strncmp(rel, "tenants/", 8) != 0 || strcmp(rel + 8, to) != 0 || strcmp(name, to) != 0)
				abort();
		} else {
			size_t rl = strlen(rel), nl = strlen(name);
			const char *tenant = json_path_str(obj, "metadata.tenant");
			char *mid = xasprintf("/%s/", to);
			bool bad = !strstr(rel, mid) || rl < nl || strcmp(rel + rl - nl, name) != 0 ||
				   (!move && (!tenant || strcmp(tenant, to) != 0)) || (tenant && strcmp(tenant, to) != 0) ||
				   strstr(rel, "/../") || json_path(obj, "metadata.resourceVersion");
			free(mid);
			if (bad)
				abort();
		}
		free(rel);
		json_decref(obj);
	}
	buf_release(&err);
	json_decref(it);
}

static void fuzz_token(const char *data, size_t size)
{
	char *tok = strndup(data, size);
	int64_t rev;
	size_t range;
	char *after;
	if (backup_token_parse(tok, &rev, &range, &after) == 0) {
		struct buf b = BUF_INIT;
		backup_token_format(rev, range, after, &b);
		int64_t rev2;
		size_t range2;
		char *after2;
		if (rev <= 0 || backup_token_parse(buf_cstr(&b), &rev2, &range2, &after2) < 0 || rev2 != rev ||
		    range2 != range || strcmp(after2, after) != 0)
			abort();
		free(after2);
		free(after);
		buf_release(&b);
	}
	free(tok);
}

static bool covered(void *ud, const char *plural)
{
	return scope(ud, plural) >= 0 && strcmp(plural, "tenants") != 0;
}

static void fuzz_key(const char *data, size_t size)
{
	char *rel = strndup(data, size);
	char *resource = NULL;
	const char *path = NULL;
	if (change_key_classify(rel, "acme", covered, NULL, &resource, &path)) {
		char *joined = strcmp(resource, "tenants") == 0 ? xasprintf("tenants/%s", path)
								: xasprintf("%s/acme/%s", resource, path);
		if (!*path || strcmp(joined, rel) != 0 || path < rel || path > rel + size)
			abort();
		free(joined);
		free(resource);
	} else if (resource || path) {
		abort();
	}
	free(rel);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	if (data[0] % 2 == 0)
		fuzz_item((const char *)data + 1, size - 1, data[0] & 2);
	else if (data[0] % 4 == 1)
		fuzz_token((const char *)data + 1, size - 1);
	else
		fuzz_key((const char *)data + 1, size - 1);
	return 0;
}
