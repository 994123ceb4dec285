/* Fuzzes tenant restore's item check and rewrite (restore_item) and backup continue tokens
 * (backup_token_parse) on arbitrary bytes. The first byte picks: even, the rest is a restore
 * item's JSON; odd, a continue token. Invariants: an item is refused with a message and nothing
 * returned, skipped with nothing returned, or placed at a key under its resource and the target
 * tenant with an object whose metadata names that key's name and the target tenant; a token
 * parsed formats back to itself. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "apiserver/internal.h"
#include "ursa/jsonutil.h"

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

static void fuzz_item(const char *data, size_t size)
{
	json_t *it = json_loadb(data, size, JSON_DECODE_ANY, NULL);
	if (!it)
		return;
	struct restore_target t = { .from = "acme", .to = "acme2", .restore_id = "r", .scope_of = scope };
	char *rel;
	json_t *obj;
	struct buf err = BUF_INIT;
	int rc = restore_item(&t, it, &rel, &obj, &err);
	if (rc < 0 && (rel || obj || !err.len))
		abort();
	if (rc > 0 && (rel || obj))
		abort();
	if (rc == 0) {
		const char *res = json_str(it, "resource"), *name = json_path_str(obj, "metadata.name");
		if (!rel || !obj || !res || !name || strncmp(rel, res, strlen(res)) != 0)
			abort();
		if (strcmp(res, "tenants") == 0) {
			if (strcmp(rel, "tenants/acme2") != 0 || strcmp(name, "acme2") != 0)
				abort();
		} else {
			size_t rl = strlen(rel), nl = strlen(name);
			const char *tenant = json_path_str(obj, "metadata.tenant");
			if (!strstr(rel, "/acme2/") || rl < nl || strcmp(rel + rl - nl, name) != 0 || !tenant ||
			    strcmp(tenant, "acme2") != 0 || strstr(rel, "/../") || json_path(obj, "metadata.resourceVersion"))
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	if (data[0] % 2 == 0)
		fuzz_item((const char *)data + 1, size - 1);
	else
		fuzz_token((const char *)data + 1, size - 1);
	return 0;
}
