/* A tenant backup file written from a partition's backup pages, and read back (ursa/backup.h). */
#include "ursa/backup.h"
#include "internal.h"
#include "ursa/api.h"
#include "ursa/client.h"
#include "ursa/jsonutil.h"
#include "ursa/path.h"
#include "ursa/strmap.h"
#include "ursa/xalloc.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PAGE_LIMIT 1000

/* A page's own line, its last (new reference; NULL when the page has none), and where it starts. */
static json_t *page_line(const struct buf *body, const char **ret_last)
{
	const char *text = buf_cstr(body), *last = text + body->len;
	json_t *page = NULL;
	if (body->len && last[-1] == '\n') {
		last--;
		while (last > text && last[-1] != '\n')
			last--;
		page = json_loadb(last, (size_t)(text + body->len - last), 0, NULL);
	}
	if (!page || strcmp(json_str(page, "kind") ?: "", "TenantBackupPage") != 0 ||
	    json_integer_value(json_object_get(page, "revision")) <= 0) {
		json_decref(page);
		return NULL;
	}
	*ret_last = last;
	return page;
}

/* The object lines text[..last) to fp: secrets parsed and sealed, the rest as they came. The
 * number written, or -1 with err. */
static long write_items(const char *text, const char *last, const struct backup_key *key, FILE *fp,
			struct backup_stats *st, struct buf *err)
{
	long n = 0;
	static const char secret[] = "{\"resource\":\"secrets\",";
	for (const char *l = text, *nl; l < last; l = nl + 1, n++) {
		nl = memchr(l, '\n', (size_t)(last - l));
		if ((size_t)(nl - l) > sizeof(secret) - 1 && memcmp(l, secret, sizeof(secret) - 1) == 0) {
			json_t *item = json_loadb(l, (size_t)(nl - l), 0, NULL);
			if (!item) {
				buf_adds(err, "a secret's line is not JSON");
				return -1;
			}
			st->sealed += backup_seal_item(key, item);
			json_dumpf(item, fp, JSON_COMPACT);
			fputc('\n', fp);
			json_decref(item);
		} else {
			fwrite(l, 1, (size_t)(nl + 1 - l), fp);
		}
	}
	return n;
}

static void write_header(FILE *fp, const char *tenant, const char *partition, const json_t *page,
			 const struct backup_key *key)
{
	char when[32];
	time_t now = time(NULL);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	json_t *h = json_pack("{s:s,s:s,s:s,s:s,s:I,s:s,s:s}", "kind", "TenantBackup", "apiVersion", "ursa.io/v1",
			      "tenant", tenant, "partition", partition ? partition : json_str(page, "partition") ?: "",
			      "revision", json_integer_value(json_object_get(page, "revision")), "time", when, "keyId",
			      key->id);
	json_dumpf(h, fp, JSON_COMPACT);
	fputc('\n', fp);
	json_decref(h);
}

int backup_write(struct rest_client *c, const char *tenant, const char *partition, const struct backup_key *key,
		 FILE *fp, struct backup_stats *st, struct buf *err)
{
	memset(st, 0, sizeof(*st));
	char *cont = NULL;
	int rc = 0;
	do {
		struct buf path = BUF_INIT, body = BUF_INIT;
		buf_addf(&path, "%s%s/backup?limit=%d", TENANT_BACKUP_PATH, tenant, PAGE_LIMIT);
		if (cont) {
			buf_adds(&path, "&continue=");
			buf_add_query_escaped(&path, cont);
		}
		free(cont);
		cont = NULL;
		int status = rest_do_raw(c, "GET", path.ptr, NULL, 0, NULL, &body);
		buf_release(&path);
		const char *last;
		json_t *page = status == 200 ? page_line(&body, &last) : NULL;
		if (!page) {
			if (status == 200)
				buf_adds(err, "not a backup page");
			else
				rest_error_message(status, &body, err);
			buf_release(&body);
			rc = -1;
			break;
		}
		if (!st->revision) { /* the header, once the first page says the revision */
			st->revision = json_integer_value(json_object_get(page, "revision"));
			write_header(fp, tenant, partition, page, key);
		}
		long n = write_items(buf_cstr(&body), last, key, fp, st, err);
		if (n >= 0 && n != json_integer_value(json_object_get(page, "items")))
			buf_addf(err, "a page said %lld objects and held %ld",
				 (long long)json_integer_value(json_object_get(page, "items")), n);
		if (n < 0 || n != json_integer_value(json_object_get(page, "items")))
			rc = -1;
		else
			st->objects += (size_t)n;
		if (rc == 0 && json_str(page, "continue") && *json_str(page, "continue"))
			cont = xstrdup(json_str(page, "continue"));
		json_decref(page);
		buf_release(&body);
	} while (rc == 0 && cont);
	free(cont);
	if (rc == 0)
		fprintf(fp, "{\"end\":true,\"objects\":%zu}\n", st->objects);
	if (rc == 0 && (fflush(fp) != 0 || ferror(fp))) {
		buf_adds(err, "writing the file failed");
		rc = -1;
	}
	return rc;
}

static bool valid_tenant(const char *t)
{
	return t && valid_dns1123_label(t);
}

/* Appends items to out, each after every item of items that owns it (by uid), in file order
 * otherwise: rounds over what is left, each taking the items whose owners in the file are all
 * out (an owner chain of depth d takes d + 1 rounds); what an ownership cycle leaves goes last. */
static void order_by_owners(json_t *items, json_t *out)
{
	size_t n = json_array_size(items), left = n;
	struct strmap pending; /* uid -> the item waiting to go out (num: 1) */
	strmap_init(&pending);
	size_t i;
	json_t *it;
	json_array_foreach(items, i, it) {
		const char *uid = json_path_str(json_object_get(it, "object"), "metadata.uid");
		if (uid)
			strmap_put(&pending, uid, NULL)->num = 1;
	}
	bool *done = xcalloc(n ? n : 1, sizeof(*done));
	for (bool progress = true; left && progress;) {
		progress = false;
		json_array_foreach(items, i, it) {
			if (done[i])
				continue;
			bool ready = true;
			size_t k;
			json_t *ref;
			json_array_foreach(json_path(json_object_get(it, "object"), "metadata.ownerReferences"), k, ref) {
				struct strmap_ent *e = json_str(ref, "uid") ? strmap_get(&pending, json_str(ref, "uid")) : NULL;
				if (e && e->num)
					ready = false;
			}
			if (!ready)
				continue;
			json_array_append(out, it);
			done[i] = true;
			left--;
			progress = true;
			const char *uid = json_path_str(json_object_get(it, "object"), "metadata.uid");
			struct strmap_ent *e = uid ? strmap_get(&pending, uid) : NULL;
			if (e)
				e->num = 0;
		}
	}
	json_array_foreach(items, i, it) /* ownership cycles: as they came */
		if (!done[i])
			json_array_append(out, it);
	free(done);
	strmap_release(&pending, NULL);
}

int backup_parse(const char *text, size_t len, json_t **ret_header, json_t **ret_items, struct buf *err)
{
	json_t *header = NULL, *items = json_array(), *tenant_item = NULL;
	bool ended = false;
	size_t lineno = 0;
	int rc = 0;
	*ret_header = *ret_items = NULL;
	for (const char *l = text, *end = text + len, *nl; rc == 0 && l < end; l = nl + 1) {
		nl = memchr(l, '\n', (size_t)(end - l));
		if (!nl)
			nl = end;
		lineno++;
		json_error_t je;
		json_t *j = json_loadb(l, (size_t)(nl - l), 0, &je);
		if (!json_is_object(j)) {
			buf_addf(err, "line %zu: not a JSON object%s%s", lineno, j ? "" : ": ", j ? "" : je.text);
			rc = -1;
		} else if (ended) {
			buf_addf(err, "line %zu: lines after the end of the backup", lineno);
			rc = -1;
		} else if (!header) {
			if (strcmp(json_str(j, "kind") ?: "", "TenantBackup") != 0 ||
			    strcmp(json_str(j, "apiVersion") ?: "", "ursa.io/v1") != 0 || !valid_tenant(json_str(j, "tenant"))) {
				buf_adds(err, "not a tenant backup (its first line is no TenantBackup header)");
				rc = -1;
			} else {
				header = json_incref(j);
			}
		} else if (json_is_true(json_object_get(j, "end"))) {
			size_t have = json_array_size(items) + (tenant_item != NULL);
			json_t *want = json_object_get(j, "objects");
			if (!json_is_integer(want) || (size_t)json_integer_value(want) != have) {
				buf_addf(err, "the trailer counts %lld objects, the file has %zu",
					 (long long)json_integer_value(want), have);
				rc = -1;
			}
			ended = true;
		} else if (!json_str(j, "resource") || !json_str(j, "path") || !json_is_object(json_object_get(j, "object"))) {
			buf_addf(err, "line %zu: not a backup item", lineno);
			rc = -1;
		} else if (strcmp(json_str(j, "resource"), "tenants") == 0) {
			if (tenant_item) {
				buf_addf(err, "line %zu: a second tenant object", lineno);
				rc = -1;
			} else {
				tenant_item = json_incref(j);
			}
		} else {
			json_array_append(items, j);
		}
		json_decref(j);
	}
	if (rc == 0 && (!header || !ended)) {
		buf_addf(err, "the backup is incomplete (no %s)", header ? "trailer: cut short?" : "header");
		rc = -1;
	}
	if (rc == 0 && !tenant_item) {
		buf_adds(err, "the backup has no tenant object");
		rc = -1;
	}
	if (rc < 0) {
		json_decref(header);
		json_decref(items);
		json_decref(tenant_item);
		return -1;
	}
	json_t *ordered = json_array();
	json_array_append_new(ordered, tenant_item);
	order_by_owners(items, ordered);
	json_decref(items);
	*ret_header = header;
	*ret_items = ordered;
	return 0;
}

int backup_unseal(const struct backup_key *key, const json_t *header, json_t *items, struct buf *err)
{
	const char *id = json_str(header, "keyId");
	if (id && strcmp(id, key->id) != 0) {
		buf_addf(err, "the backup was sealed with backup key %s; this key is %s", id, key->id);
		return -1;
	}
	size_t i;
	json_t *item;
	json_array_foreach(items, i, item) {
		if (backup_unseal_item(key, item) < 0) {
			buf_addf(err, "the sealed data of %s/%s does not open with this key", json_str(item, "resource"),
				 json_str(item, "path"));
			return -1;
		}
	}
	return 0;
}
