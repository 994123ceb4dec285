/* ursactl tenant backup / restore: a tenant copied out of its partition into a file, and back into
 * the region under its own name or another, on the same partition or another
 * (docs/operations.md "Backing up and restoring a tenant").
 *
 * The file is JSON lines: a header {"kind":"TenantBackup","apiVersion":"ursa.io/v1","tenant",
 * "partition","revision","time","keyId"}, one line per object as the partition's backup pages
 * give it ({"resource","path","object"}), and a trailer {"end":true,"objects":N}, so a file cut
 * short is refused. Secrets' data and stringData are sealed with AES-256-GCM under the region's
 * backup key (--key, else $URSA_BACKUP_KEY, else backup.key in the region directory: base64 of
 * 32 random bytes) into "sealed" (base64 of nonce, ciphertext and tag; the item's resource and
 * path are the associated data, so a sealed value cannot be moved to another secret); keyId
 * names the key (the first 8 bytes of its SHA-256, hex) so a restore with another key is refused
 * before anything is written.
 *
 * A restore places the tenant in the gateways' registry as pending (so no one creates it
 * meanwhile), posts the objects to the partition in batches, the tenant object last, and marks
 * the placement ready. */
#include "ursactl.h"
#include "ursa/client.h"
#include "ursa/errors.h"
#include "ursa/etcd.h"
#include "ursa/jsonutil.h"
#include "ursa/path.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"
#include <errno.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BACKUP_PAGE 1000
#define BATCH_BYTES (2u << 20) /* under the API server's 3 MB request bodies */
#define BATCH_ITEMS 5000
#define KEY_LEN 32
#define NONCE_LEN 12
#define TAG_LEN 16

const struct flag_spec tenant_flags[] = {
	{ "as", "NAME", "restore: make the tenant under this name (default: the backed-up tenant's)", false },
	{ "to", "PARTITION", "restore: the tenant partition to restore into (default: the backup's, else the first)", false },
	{ "key", "FILE", "the backup key (default $URSA_BACKUP_KEY, else backup.key in the region directory)", false },
	{ "region-file", "FILE", "the region file (default <region dir>/region.json)", false },
	{ "signing-key", "FILE", "key to mint an admin token (default from the region directory)", false },
	{ "certificate-authority", "FILE", "CA of the partitions' certificates (default <region dir>/ca.crt)", false },
	{ NULL, NULL, NULL, false },
};

/* The backup key ----------------------------------------------------------------------------- */

struct bkey {
	unsigned char k[KEY_LEN];
	char id[17];
};

static int key_load(const struct flags *f, struct bkey *ret)
{
	char *hint = NULL;
	char *path = region_file(flag_get(f, "key"), "--key", "URSA_BACKUP_KEY", "backup.key", &hint);
	if (!path) {
		int rc = fail("no backup key: %s (make one with: openssl rand -base64 32 > FILE; chmod 600 FILE)", hint);
		free(hint);
		return rc;
	}
	FILE *fp = fopen(path, "r");
	char line[256] = "";
	bool ok = fp && fgets(line, sizeof(line), fp);
	if (fp)
		fclose(fp);
	line[strcspn(line, "\r\n")] = '\0';
	unsigned char raw[sizeof(line)];
	size_t n = strlen(line);
	int len = ok && n % 4 == 0 ? EVP_DecodeBlock(raw, (const unsigned char *)line, (int)n) : -1;
	if (len >= 0) /* EVP_DecodeBlock counts the padding's zero bytes */
		len -= (n >= 1 && line[n - 1] == '=') + (n >= 2 && line[n - 2] == '=');
	if (len != KEY_LEN) {
		int rc = fail("%s: not a backup key (one line: base64 of %d bytes)", path, KEY_LEN);
		free(path);
		return rc;
	}
	free(path);
	memcpy(ret->k, raw, KEY_LEN);
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen;
	EVP_Digest(ret->k, KEY_LEN, md, &mdlen, EVP_sha256(), NULL);
	for (int i = 0; i < 8; i++)
		snprintf(ret->id + 2 * i, 3, "%02x", md[i]);
	OPENSSL_cleanse(raw, sizeof(raw));
	return EXIT_OK;
}

/* plain sealed under key with aad: base64 of nonce | ciphertext | tag. New string. */
static char *seal(const struct bkey *key, const char *aad, const char *plain, size_t n)
{
	unsigned char *out = xmalloc(NONCE_LEN + n + TAG_LEN);
	if (RAND_bytes(out, NONCE_LEN) != 1)
		abort();
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	int len = 0, fin = 0;
	if (!c || EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), NULL, key->k, out) != 1 ||
	    EVP_EncryptUpdate(c, NULL, &len, (const unsigned char *)aad, (int)strlen(aad)) != 1 ||
	    EVP_EncryptUpdate(c, out + NONCE_LEN, &len, (const unsigned char *)plain, (int)n) != 1 ||
	    EVP_EncryptFinal_ex(c, out + NONCE_LEN + len, &fin) != 1 ||
	    EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, TAG_LEN, out + NONCE_LEN + n) != 1)
		abort(); /* AES-GCM in memory does not fail */
	EVP_CIPHER_CTX_free(c);
	size_t total = NONCE_LEN + n + TAG_LEN;
	char *b64 = xmalloc(4 * ((total + 2) / 3) + 1);
	EVP_EncodeBlock((unsigned char *)b64, out, (int)total);
	free(out);
	return b64;
}

/* The plaintext of sealed (new string, *ret_n bytes), or NULL when it is not sealed under key
 * with aad. */
static char *unseal(const struct bkey *key, const char *aad, const char *b64, size_t *ret_n)
{
	size_t n = strlen(b64);
	if (n % 4 || n < 4)
		return NULL;
	unsigned char *raw = xmalloc(n / 4 * 3 + 1);
	int len = EVP_DecodeBlock(raw, (const unsigned char *)b64, (int)n);
	if (len >= 0)
		len -= (b64[n - 1] == '=') + (b64[n - 2] == '=');
	if (len < NONCE_LEN + TAG_LEN) {
		free(raw);
		return NULL;
	}
	size_t clen = (size_t)len - NONCE_LEN - TAG_LEN;
	char *plain = xmalloc(clen + 1);
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	int l = 0, fin = 0;
	bool ok = c && EVP_DecryptInit_ex(c, EVP_aes_256_gcm(), NULL, key->k, raw) == 1 &&
		  EVP_DecryptUpdate(c, NULL, &l, (const unsigned char *)aad, (int)strlen(aad)) == 1 &&
		  EVP_DecryptUpdate(c, (unsigned char *)plain, &l, raw + NONCE_LEN, (int)clen) == 1 &&
		  EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, TAG_LEN, raw + NONCE_LEN + clen) == 1 &&
		  EVP_DecryptFinal_ex(c, (unsigned char *)plain + l, &fin) == 1;
	EVP_CIPHER_CTX_free(c);
	free(raw);
	if (!ok) {
		free(plain);
		return NULL;
	}
	plain[clen] = '\0';
	*ret_n = clen;
	return plain;
}

static char *item_aad(const json_t *item)
{
	return xasprintf("%s/%s", json_str(item, "resource"), json_str(item, "path"));
}

/* A secret's data and stringData moved into "sealed". */
static void seal_item(const struct bkey *key, json_t *item)
{
	json_t *obj = json_object_get(item, "object");
	json_t *secret = json_object();
	static const char *const fields[] = { "data", "stringData" };
	for (int i = 0; i < 2; i++)
		if (json_object_get(obj, fields[i])) {
			json_object_set(secret, fields[i], json_object_get(obj, fields[i]));
			json_object_del(obj, fields[i]);
		}
	if (json_object_size(secret)) {
		char *plain = json_dumps(secret, JSON_COMPACT);
		char *aad = item_aad(item);
		char *sealed = seal(key, aad, plain, strlen(plain));
		json_object_set_new(item, "sealed", json_string(sealed));
		free(sealed);
		OPENSSL_cleanse(plain, strlen(plain));
		free(plain);
		free(aad);
	}
	json_decref(secret);
}

static int unseal_item(const struct bkey *key, json_t *item)
{
	const char *sealed = json_str(item, "sealed");
	if (!sealed)
		return 0;
	char *aad = item_aad(item);
	size_t n;
	char *plain = unseal(key, aad, sealed, &n);
	free(aad);
	json_t *secret = plain ? json_loadb(plain, n, 0, NULL) : NULL;
	if (plain)
		OPENSSL_cleanse(plain, n);
	free(plain);
	if (!json_is_object(secret)) {
		json_decref(secret);
		return -1;
	}
	json_object_update(json_object_get(item, "object"), secret);
	json_object_del(item, "sealed");
	json_decref(secret);
	return 0;
}

/* The region ---------------------------------------------------------------------------------- */

static json_t *find_tp(const struct region *r, const char *name)
{
	size_t i;
	json_t *p;
	json_array_foreach(json_object_get(r->doc, list_key(true)), i, p) {
		if (strcmp(json_str(p, "name") ?: "", name) == 0)
			return p;
	}
	return NULL;
}

static struct rest_client *tp_client(const struct region *r, const json_t *tp)
{
	char *eps = endpoints_csv(tp);
	struct rest_client *c = rest_new(&(struct rest_config){
		.servers = eps, .token = r->token, .ca_file = r->ca, .user_agent = "ursactl", .timeout_ms = 120000 });
	free(eps);
	return c;
}

static struct etcd *gateway_etcd(const struct region *r, const char **ret_prefix)
{
	const char *servers;
	gateway_etcd_settings(r->doc, NULL, NULL, &servers, ret_prefix);
	return servers ? etcd_new(servers, NULL) : NULL;
}

static bool tp_has(const struct region *r, const json_t *tp, const char *tenant)
{
	struct rest_client *c = tp_client(r, tp);
	char *path = xasprintf("/api/v1/tenants/%s", tenant);
	int st = rest_do(c, "GET", path, NULL, NULL, NULL);
	free(path);
	rest_free(c);
	return st == 200;
}

/* The gateways' record of tenant's placement: 0 with *ret_partition (new string) and
 * *ret_mod_rev, E_NOT_FOUND, or another etcd error; E_NOT_FOUND too without a gateway etcd. */
static int placement_get(const struct region *r, const char *tenant, char **ret_partition, int64_t *ret_mod_rev)
{
	const char *prefix;
	struct etcd *e = gateway_etcd(r, &prefix);
	*ret_partition = NULL;
	*ret_mod_rev = 0;
	if (!e)
		return E_NOT_FOUND;
	char *key = xasprintf("%s/tenants/%s", prefix, tenant);
	struct etcd_kv kv = { 0 };
	int err = etcd_get(e, key, &kv);
	if (!err) {
		json_t *rec = json_loadb(kv.value, kv.value_len, 0, NULL);
		*ret_partition = xstrdup(json_str(rec, "partition") ?: "");
		*ret_mod_rev = kv.mod_rev;
		json_decref(rec);
	}
	etcd_kv_release(&kv);
	free(key);
	etcd_free(e);
	return err;
}

/* The tenant partition that has tenant (new string): the one the gateways place it on when that
 * one has it, else any that has it; NULL when none has. */
static char *tenant_partition(const struct region *r, const char *tenant)
{
	char *placed;
	int64_t mod_rev;
	if (placement_get(r, tenant, &placed, &mod_rev) == 0) {
		json_t *tp = find_tp(r, placed);
		if (tp && tp_has(r, tp, tenant))
			return placed;
	}
	free(placed);
	size_t i;
	json_t *p;
	json_array_foreach(json_object_get(r->doc, list_key(true)), i, p) {
		if (tp_has(r, p, tenant))
			return xstrdup(json_str(p, "name"));
	}
	return NULL;
}

static bool valid_tenant(const char *t)
{
	size_t n = strlen(t);
	if (n == 0 || n > 63 || t[0] == '-' || t[n - 1] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((t[i] >= 'a' && t[i] <= 'z') || (t[i] >= '0' && t[i] <= '9') || t[i] == '-'))
			return false;
	return true;
}

/* An error reply's message (new string). */
static char *reply_message(int status, const struct buf *body)
{
	json_t *j = json_loadb(body->ptr ? body->ptr : "", body->len, 0, NULL);
	char *m = json_str(j, "message") ? xstrdup(json_str(j, "message"))
		  : status > 0          ? xasprintf("HTTP %d", status)
					: xstrdup(err_reason(status));
	json_decref(j);
	return m;
}

/* backup ---------------------------------------------------------------------------------------- */

static int tenant_backup(const struct flags *f, const char *tenant, const char *out)
{
	if (!valid_tenant(tenant) || strcmp(tenant, "system") == 0)
		return fail("\"%s\" is not a tenant that can be backed up", tenant);
	struct bkey key;
	struct region r;
	int rc = key_load(f, &key);
	if (rc != EXIT_OK || (rc = region_load(f, &r)) != EXIT_OK)
		return rc;
	if ((rc = region_auth(f, &r)) != EXIT_OK) {
		region_release(&r);
		return rc;
	}
	char *pname = tenant_partition(&r, tenant);
	json_t *tp = pname ? find_tp(&r, pname) : NULL;
	if (!tp) {
		rc = pname ? fail("tenant %s is placed on %s, which is not in %s", tenant, pname, r.path)
			   : fail("no tenant partition has tenant %s", tenant);
		free(pname);
		region_release(&r);
		return rc;
	}
	char *tmp = xasprintf("%s.partial", out);
	FILE *fp = fopen(tmp, "w");
	if (!fp) {
		rc = fail("cannot write %s: %s", tmp, strerror(errno));
		free(tmp);
		free(pname);
		region_release(&r);
		return rc;
	}
	struct rest_client *c = tp_client(&r, tp);
	int64_t t0 = mono_us(), rev = 0;
	size_t objects = 0, sealed = 0;
	char *cont = NULL;
	rc = EXIT_OK;
	do {
		struct buf path = BUF_INIT, body = BUF_INIT;
		buf_addf(&path, "%s%s/backup?limit=%d", TENANT_BACKUP_PATH, tenant, BACKUP_PAGE);
		if (cont) {
			buf_adds(&path, "&continue=");
			buf_add_query_escaped(&path, cont);
		}
		int st = rest_do_raw(c, "GET", path.ptr, NULL, 0, NULL, &body);
		buf_release(&path);
		/* the objects' lines, then the page's own line */
		const char *text = buf_cstr(&body), *last = NULL;
		size_t len = body.len;
		if (st == 200 && len && text[len - 1] == '\n') {
			last = text + len - 1;
			while (last > text && last[-1] != '\n')
				last--;
		}
		json_t *page = last ? json_loadb(last, (size_t)(text + len - last), 0, NULL) : NULL;
		if (!page || strcmp(json_str(page, "kind") ?: "", "TenantBackupPage") != 0 ||
		    json_integer_value(json_object_get(page, "revision")) <= 0) {
			char *m = st == 200 ? xstrdup("not a backup page") : reply_message(st, &body);
			rc = fail("backup of tenant %s from %s failed: %s", tenant, pname, m);
			free(m);
			json_decref(page);
			buf_release(&body);
			break;
		}
		if (!rev) {
			rev = json_integer_value(json_object_get(page, "revision"));
			char when[32];
			time_t now = time(NULL);
			strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
			json_t *h = json_pack("{s:s,s:s,s:s,s:s,s:I,s:s,s:s}", "kind", "TenantBackup", "apiVersion",
					      "ursa.io/v1", "tenant", tenant, "partition", pname, "revision", (json_int_t)rev,
					      "time", when, "keyId", key.id);
			json_dumpf(h, fp, JSON_COMPACT);
			fputc('\n', fp);
			json_decref(h);
		}
		size_t n = 0;
		for (const char *l = text, *nl; l < last; l = nl + 1, n++) {
			nl = memchr(l, '\n', (size_t)(last - l));
			/* a secret's line is parsed to seal it; every other one is written as it came */
			static const char secret[] = "{\"resource\":\"secrets\",";
			if ((size_t)(nl - l) > sizeof(secret) - 1 && memcmp(l, secret, sizeof(secret) - 1) == 0) {
				json_t *item = json_loadb(l, (size_t)(nl - l), 0, NULL);
				if (!item) {
					rc = fail("backup of tenant %s from %s failed: a secret's line is not JSON", tenant, pname);
					break;
				}
				seal_item(&key, item);
				json_dumpf(item, fp, JSON_COMPACT);
				fputc('\n', fp);
				json_decref(item);
				sealed++;
			} else {
				fwrite(l, 1, (size_t)(nl + 1 - l), fp);
			}
		}
		objects += n;
		if (rc == EXIT_OK && (json_int_t)n != json_integer_value(json_object_get(page, "items")))
			rc = fail("backup of tenant %s from %s failed: a page said %lld objects and held %zu", tenant, pname,
				  (long long)json_integer_value(json_object_get(page, "items")), n);
		buf_release(&body);
		free(cont);
		cont = rc == EXIT_OK && json_str(page, "continue") && *json_str(page, "continue")
			       ? xstrdup(json_str(page, "continue"))
			       : NULL;
		json_decref(page);
	} while (cont);
	free(cont);
	rest_free(c);
	if (rc == EXIT_OK) {
		fprintf(fp, "{\"end\":true,\"objects\":%zu}\n", objects);
		if (fflush(fp) != 0 || fsync(fileno(fp)) != 0)
			rc = fail("writing %s failed: %s", tmp, strerror(errno));
	}
	fclose(fp);
	if (rc == EXIT_OK && rename(tmp, out) != 0)
		rc = fail("cannot rename %s to %s: %s", tmp, out, strerror(errno));
	if (rc != EXIT_OK)
		unlink(tmp);
	double secs = (double)(mono_us() - t0) / 1e6;
	if (rc == EXIT_OK)
		printf("tenant %s: %zu objects (%zu secrets sealed, key %s) from %s at revision %lld written to %s in %.2f s (%.0f objects/s)\n",
		       tenant, objects, sealed, key.id, pname, (long long)rev, out, secs, secs > 0 ? (double)objects / secs : 0.0);
	OPENSSL_cleanse(&key, sizeof(key));
	free(tmp);
	free(pname);
	region_release(&r);
	return rc;
}

/* restore --------------------------------------------------------------------------------------- */

/* Reads a backup file: *ret_header and *ret_items (new references) in the order a restore writes
 * them: the tenant, then what no other object owns (namespaces and CRDs come first in the file),
 * then what has owners, so the garbage collector never finds an owner missing.
 * EXIT_OK or EXIT_FAIL (printed). */
static int backup_read(const char *path, json_t **ret_header, json_t **ret_items)
{
	FILE *fp = fopen(path, "r");
	if (!fp)
		return fail("cannot read %s: %s", path, strerror(errno));
	json_t *header = NULL, *items = json_array(), *tenant_item = NULL;
	bool ended = false;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	size_t lineno = 0;
	int rc = EXIT_OK;
	while (rc == EXIT_OK && (n = getline(&line, &cap, fp)) > 0) {
		lineno++;
		json_error_t je;
		json_t *j = json_loadb(line, (size_t)n, 0, &je);
		if (!json_is_object(j)) {
			rc = fail("%s:%zu: not a JSON object: %s", path, lineno, j ? "" : je.text);
		} else if (ended) {
			rc = fail("%s:%zu: lines after the end of the backup", path, lineno);
		} else if (!header) {
			if (strcmp(json_str(j, "kind") ?: "", "TenantBackup") != 0 ||
			    strcmp(json_str(j, "apiVersion") ?: "", "ursa.io/v1") != 0 || !json_str(j, "tenant") ||
			    !valid_tenant(json_str(j, "tenant")))
				rc = fail("%s: not a tenant backup (its first line is no TenantBackup header)", path);
			else
				header = json_incref(j);
		} else if (json_is_true(json_object_get(j, "end"))) {
			if ((size_t)json_integer_value(json_object_get(j, "objects")) !=
			    json_array_size(items) + (tenant_item != NULL))
				rc = fail("%s: the trailer counts %lld objects, the file has %zu", path,
					  (long long)json_integer_value(json_object_get(j, "objects")),
					  json_array_size(items) + (tenant_item != NULL));
			ended = true;
		} else if (!json_str(j, "resource") || !json_str(j, "path") || !json_is_object(json_object_get(j, "object"))) {
			rc = fail("%s:%zu: not a backup item", path, lineno);
		} else if (strcmp(json_str(j, "resource"), "tenants") == 0) {
			if (tenant_item)
				rc = fail("%s:%zu: a second tenant object", path, lineno);
			else
				tenant_item = json_incref(j);
		} else {
			json_array_append(items, j);
		}
		json_decref(j);
	}
	free(line);
	fclose(fp);
	if (rc == EXIT_OK && (!header || !ended))
		rc = fail("%s: the backup is incomplete (no %s)", path, header ? "trailer: cut short?" : "header");
	if (rc == EXIT_OK && !tenant_item)
		rc = fail("%s: the backup has no tenant object", path);
	if (rc != EXIT_OK) {
		json_decref(header);
		json_decref(items);
		json_decref(tenant_item);
		return rc;
	}
	json_t *ordered = json_array();
	json_array_append_new(ordered, tenant_item);
	for (int owned = 0; owned < 2; owned++) {
		size_t i;
		json_t *it;
		json_array_foreach(items, i, it) {
			json_t *refs = json_path(json_object_get(it, "object"), "metadata.ownerReferences");
			if ((json_array_size(refs) > 0) == owned)
				json_array_append(ordered, it);
		}
	}
	json_decref(items);
	*ret_header = header;
	*ret_items = ordered;
	return EXIT_OK;
}

/* Records tenant's placement on partition: pending replaces only the record read at mod_rev (0:
 * there was none, so it creates), ready overwrites; partition NULL removes it. No gateway etcd:
 * nothing to do. 0 or an etcd error (E_CONFLICT, E_ALREADY_EXISTS: someone placed it meanwhile). */
static int placement(const struct region *r, const char *tenant, const char *partition, bool pending, int64_t mod_rev)
{
	const char *prefix;
	struct etcd *e = gateway_etcd(r, &prefix);
	if (!e)
		return 0;
	char *key = xasprintf("%s/tenants/%s", prefix, tenant);
	int err;
	if (!partition) {
		err = etcd_delete(e, key, 0, NULL, NULL);
	} else {
		char *val = xasprintf("{\"partition\":\"%s\",\"state\":\"%s\",\"since\":%lld}", partition,
				      pending ? "pending" : "ready", (long long)now_ms());
		if (!pending)
			err = etcd_put(e, key, val, strlen(val), 0, NULL);
		else if (mod_rev)
			err = etcd_update(e, key, val, strlen(val), mod_rev, NULL, NULL);
		else
			err = etcd_create(e, key, val, strlen(val), 0, NULL);
		free(val);
	}
	free(key);
	etcd_free(e);
	return err;
}

/* Posts one batch: EXIT_OK with *ret_result (new reference), EXIT_FAIL (printed), or, when
 * retry_leftovers, EXIT_RETRY (not printed) for the 409 of a tenant still being emptied. */
#define EXIT_RETRY 3
#define WAIT_EMPTY_S 120
static int post_batch(struct rest_client *c, const char *tenant, const char *from, const char *id, bool done,
		      const struct buf *items, json_t **ret_result, bool retry_leftovers)
{
	struct buf body = BUF_INIT, path = BUF_INIT, resp = BUF_INIT;
	buf_adds(&body, "{\"from\":");
	buf_add_json_str(&body, from, strlen(from));
	buf_addf(&body, ",\"restore\":\"%s\",\"done\":%s,\"items\":[", id, done ? "true" : "false");
	buf_add(&body, items->ptr, items->len);
	buf_adds(&body, "]}");
	buf_addf(&path, "%s%s/restore", TENANT_BACKUP_PATH, tenant);
	int st = rest_do_raw(c, "POST", path.ptr, body.ptr, body.len, NULL, &resp);
	int rc = EXIT_OK;
	*ret_result = st == 200 ? json_loadb(resp.ptr, resp.len, 0, NULL) : NULL;
	if (!*ret_result) {
		char *m = reply_message(st, &resp);
		if (retry_leftovers && st == 409 && strstr(m, "its deletion is in progress"))
			rc = EXIT_RETRY;
		else
			rc = fail("restore of tenant %s failed: %s", tenant, m);
		free(m);
	}
	buf_release(&body);
	buf_release(&path);
	buf_release(&resp);
	return rc;
}

static int tenant_restore(const struct flags *f, const char *file)
{
	json_t *header = NULL, *items = NULL;
	int rc = backup_read(file, &header, &items);
	if (rc != EXIT_OK)
		return rc;
	const char *from = json_str(header, "tenant");
	const char *to = flag_get(f, "as") ? flag_get(f, "as") : from;
	struct bkey key;
	struct region r = { 0 };
	json_t *tp = NULL;
	struct rest_client *c = NULL;
	bool placed = false;
	if (!valid_tenant(to) || strcmp(to, "system") == 0) {
		rc = fail("\"%s\" is not a tenant name a restore can make", to);
		goto out_header;
	}
	if ((rc = key_load(f, &key)) != EXIT_OK)
		goto out_header;
	if (json_str(header, "keyId") && strcmp(json_str(header, "keyId"), key.id) != 0) {
		rc = fail("%s was sealed with backup key %s; this key is %s", file, json_str(header, "keyId"), key.id);
		goto out_key;
	}
	size_t i;
	json_t *item;
	json_array_foreach(items, i, item) {
		if (unseal_item(&key, item) < 0) {
			rc = fail("%s: the sealed data of %s/%s does not open with this key", file,
				  json_str(item, "resource"), json_str(item, "path"));
			goto out_key;
		}
	}
	if ((rc = region_load(f, &r)) != EXIT_OK || (rc = region_auth(f, &r)) != EXIT_OK)
		goto out_key;
	const char *want = flag_get(f, "to");
	if (want) {
		if (!(tp = find_tp(&r, want))) {
			rc = fail("no tenant partition named %s in %s", want, r.path);
			goto out_key;
		}
	} else if (!json_str(header, "partition") || !(tp = find_tp(&r, json_str(header, "partition")))) {
		tp = json_array_get(json_object_get(r.doc, list_key(true)), 0);
	}
	if (!tp) {
		rc = fail("the region has no tenant partition (%s)", r.path);
		goto out_key;
	}
	const char *pname = json_str(tp, "name");
	char *where = tenant_partition(&r, to);
	if (where) {
		rc = fail("tenant %s exists (on %s): delete it first, or restore under another name with --as", to, where);
		free(where);
		goto out_key;
	}
	/* a record left by a tenant deleted since (the gateways sweep them now and then) is replaced */
	char *stale;
	int64_t stale_rev;
	int err = placement_get(&r, to, &stale, &stale_rev);
	free(stale);
	err = err && err != E_NOT_FOUND ? err : placement(&r, to, pname, true, stale_rev);
	if (err) {
		rc = fail("cannot place tenant %s in the gateways' registry: %s", to, err_reason(err));
		goto out_key;
	}
	placed = true;
	c = tp_client(&r, tp);
	unsigned char idb[8];
	char id[17];
	if (RAND_bytes(idb, sizeof(idb)) != 1)
		abort();
	for (int k = 0; k < 8; k++)
		snprintf(id + 2 * k, 3, "%02x", idb[k]);
	int64_t t0 = mono_us();
	size_t restored = 0, skipped = 0, batches = 0, nitems = json_array_size(items);
	struct buf batch = BUF_INIT;
	size_t inbatch = 0;
	for (i = 0; i <= nitems && rc == EXIT_OK; i++) {
		char *text = i < nitems ? json_dumps(json_array_get(items, i), JSON_COMPACT) : NULL;
		size_t tl = text ? strlen(text) : 0;
		if (inbatch && (!text || batch.len + tl + 1 > BATCH_BYTES || inbatch == BATCH_ITEMS)) {
			json_t *res;
			/* a tenant deleted a moment ago is still being emptied: wait for that */
			bool said = false;
			int64_t give_up = mono_us() + (int64_t)WAIT_EMPTY_S * 1000000;
			while ((rc = post_batch(c, to, from, id, !text, &batch, &res, batches == 0)) == EXIT_RETRY &&
			       mono_us() < give_up) {
				if (!said)
					printf("waiting for the deletion of an earlier tenant %s to finish\n", to);
				said = true;
				fflush(stdout);
				usleep(500000);
			}
			if (rc == EXIT_RETRY)
				rc = fail("tenant %s still holds objects of an earlier tenant of that name after %d s", to,
					  WAIT_EMPTY_S);
			if (rc != EXIT_OK && batches > 0)
				fprintf(stderr, "ursactl: tenant %s is left half restored (phase Restoring) on %s: delete it (kubectl delete tenant %s) and restore again\n",
					to, pname, to);
			if (rc == EXIT_OK) {
				placed = false; /* the tenant exists: its placement stays */
				restored += (size_t)json_integer_value(json_object_get(res, "restored"));
				skipped += (size_t)json_integer_value(json_object_get(res, "skipped"));
				json_decref(res);
			}
			batches++;
			buf_reset(&batch);
			inbatch = 0;
		}
		if (text) {
			if (inbatch)
				buf_addch(&batch, ',');
			buf_add(&batch, text, tl);
			inbatch++;
			OPENSSL_cleanse(text, tl);
			free(text);
		}
	}
	buf_release(&batch);
	if (rc == EXIT_OK) {
		err = placement(&r, to, pname, false, 0);
		if (err)
			fprintf(stderr, "ursactl: tenant %s is restored; marking its placement ready failed (%s): the gateways confirm it within their resync period\n",
				to, err_reason(err));
		placed = false;
		double secs = (double)(mono_us() - t0) / 1e6;
		char *what = strcmp(to, from) ? xasprintf("%s (a copy of %s, with new uids)", to, from) : xstrdup(to);
		printf("tenant %s: %zu objects restored on %s in %zu batches, %zu pods left to their controllers, in %.2f s (%.0f objects/s)\n",
		       what, restored, pname, batches, skipped, secs, secs > 0 ? (double)(restored + skipped) / secs : 0.0);
		free(what);
	}
out_key:
	OPENSSL_cleanse(&key, sizeof(key));
	if (placed && placement(&r, to, NULL, false, 0) != 0)
		fprintf(stderr, "ursactl: the pending placement of %s is left; the gateways remove it after their grace period\n", to);
	rest_free(c);
	if (r.path)
		region_release(&r);
out_header:
	json_decref(header);
	json_decref(items);
	return rc;
}

int cmd_tenant(const struct command *cmd, const struct flags *f)
{
	(void)cmd;
	const char *op = f->nargs ? f->args[0] : "";
	if (strcmp(op, "backup") == 0 && f->nargs == 3) {
		if (flag_get(f, "as") || flag_get(f, "to"))
			return fail("--as and --to are restore's");
		return tenant_backup(f, f->args[1], f->args[2]);
	}
	if (strcmp(op, "restore") == 0 && f->nargs == 2)
		return tenant_restore(f, f->args[1]);
	fprintf(stderr, "usage: ursactl tenant backup TENANT FILE\n"
			"       ursactl tenant restore FILE [--as NAME] [--to PARTITION]\n");
	return EXIT_USAGE;
}
