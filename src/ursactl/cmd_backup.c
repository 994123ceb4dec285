/* ursactl tenant backup / restore: a tenant copied out of its partition into a file, and back into
 * the region under its own name or another, on the same partition or another
 * (docs/operations.md "Backing up and restoring a tenant"; the file's format and sealing are
 * ursa/backup.h's, the partitions' side src/common/apiserver/backup.c).
 *
 * A restore places the tenant in the gateways' registry as pending (so no one creates it
 * meanwhile), posts the objects to the partition in batches (the tenant object first; the
 * partition keeps it Restoring until the last batch), and marks the placement ready. */
#include "ursactl.h"
#include "ursa/api.h"
#include "ursa/backup.h"
#include "ursa/client.h"
#include "ursa/errors.h"
#include "ursa/etcd.h"
#include "ursa/jsonutil.h"
#include "ursa/path.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BATCH_BYTES (2u << 20) /* under the API server's 3 MB request bodies */
#define BATCH_ITEMS 5000

const struct flag_spec tenant_flags[] = {
	{ "as", "NAME", "restore: make the tenant under this name (default: the backed-up tenant's)", false },
	{ "to", "PARTITION", "restore: the tenant partition to restore into (default: the backup's, else the first)", false },
	{ "key", "FILE", "the backup key (default $URSA_BACKUP_KEY, else backup.key in the region directory)", false },
	{ "recover", NULL, "move: finish or undo a move of the tenant that stopped (ursactl or a partition died)", false },
	{ "fence-timeout", "SECONDS", "move: how long the tenant's writes may be held before the move is abandoned (default 2)", false },
	REGION_AUTH_FLAGS,
	{ NULL, NULL, NULL, false },
};

/* The backup key: --key, else $URSA_BACKUP_KEY, else backup.key in the region directory. */
static int key_load(const struct flags *f, struct backup_key *ret)
{
	char *hint = NULL;
	char *path = region_file(flag_get(f, "key"), "--key", "URSA_BACKUP_KEY", "backup.key", &hint);
	if (!path) {
		int rc = fail("no backup key: %s (make one with: openssl rand -base64 32 > FILE; chmod 600 FILE)", hint);
		free(hint);
		return rc;
	}
	struct buf err = BUF_INIT;
	int rc = backup_key_load(path, ret, &err) == 0 ? EXIT_OK : fail("%s", buf_cstr(&err));
	buf_release(&err);
	free(path);
	return rc;
}

/* The region ---------------------------------------------------------------------------------- */

json_t *find_tp(const struct region *r, const char *name)
{
	return region_find(json_object_get(r->doc, list_key(true)), name, NULL);
}

struct rest_client *tp_client(const struct region *r, const json_t *tp)
{
	char *eps = endpoints_csv(tp);
	struct rest_client *c = rest_new(&(struct rest_config){
		.servers = eps, .token = r->token, .ca_file = r->ca, .user_agent = "ursactl", .timeout_ms = 120000 });
	free(eps);
	return c;
}

struct etcd *gateway_etcd(const struct region *r, const char **ret_prefix)
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
int placement_get(const struct region *r, const char *tenant, char **ret_partition, int64_t *ret_mod_rev)
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
char *tenant_partition(const struct region *r, const char *tenant)
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

/* backup ---------------------------------------------------------------------------------------- */

static int tenant_backup(const struct flags *f, const char *tenant, const char *out)
{
	if (!valid_dns1123_label(tenant) || strcmp(tenant, "system") == 0)
		return fail("\"%s\" is not a tenant that can be backed up", tenant);
	struct backup_key key;
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
	int64_t t0 = mono_us();
	struct backup_stats st;
	struct buf err = BUF_INIT;
	rc = backup_write(c, tenant, pname, &key, fp, &st, &err) == 0 ? EXIT_OK
		: fail("backup of tenant %s from %s failed: %s", tenant, pname, buf_cstr(&err));
	buf_release(&err);
	rest_free(c);
	if (rc == EXIT_OK && fsync(fileno(fp)) != 0)
		rc = fail("writing %s failed: %s", tmp, strerror(errno));
	fclose(fp);
	if (rc == EXIT_OK && rename(tmp, out) != 0)
		rc = fail("cannot rename %s to %s: %s", tmp, out, strerror(errno));
	if (rc != EXIT_OK)
		unlink(tmp);
	double secs = (double)(mono_us() - t0) / 1e6;
	if (rc == EXIT_OK)
		printf("tenant %s: %zu objects (%zu secrets sealed, key %s) from %s at revision %lld written to %s in %.2f s (%.0f objects/s)\n",
		       tenant, st.objects, st.sealed, key.id, pname, (long long)st.revision, out, secs,
		       secs > 0 ? (double)st.objects / secs : 0.0);
	backup_key_forget(&key);
	free(tmp);
	free(pname);
	region_release(&r);
	return rc;
}

/* restore --------------------------------------------------------------------------------------- */

/* Reads and parses a backup file (ursa/backup.h: backup_parse). EXIT_OK or EXIT_FAIL (printed). */
static int backup_read(const char *path, json_t **ret_header, json_t **ret_items)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail("cannot read %s: %s", path, strerror(errno));
	struct buf text = BUF_INIT, err = BUF_INIT;
	int rc = buf_read_fd(&text, fd, SIZE_MAX) < 0 ? fail("cannot read %s: %s", path, strerror(errno)) : EXIT_OK;
	close(fd);
	if (rc == EXIT_OK && backup_parse(text.ptr ? text.ptr : "", text.len, ret_header, ret_items, &err) < 0)
		rc = fail("%s: %s", path, buf_cstr(&err));
	buf_release(&text);
	buf_release(&err);
	return rc;
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

int restore_post(struct rest_client *c, const char *tenant, const char *from, const char *id, const char *mode,
		 bool done, const struct buf *items, struct buf *ret_resp)
{
	struct buf body = BUF_INIT;
	buf_adds(&body, "{\"from\":");
	buf_add_json_str(&body, from, strlen(from));
	buf_addf(&body, ",\"restore\":\"%s\",\"done\":%s,", id, done ? "true" : "false");
	if (mode)
		buf_addf(&body, "\"mode\":\"%s\",", mode);
	buf_adds(&body, "\"items\":[");
	buf_add(&body, items->ptr, items->len);
	buf_adds(&body, "]}");
	char *path = xasprintf("%s%s/restore", TENANT_BACKUP_PATH, tenant);
	int st = rest_do_raw(c, "POST", path, body.ptr, body.len, NULL, ret_resp);
	free(path);
	buf_release(&body);
	return st;
}

bool restore_waits_for_leftovers(int status, const struct buf *resp)
{
	if (status != 409)
		return false;
	json_t *st = json_loadb(resp->ptr ? resp->ptr : "", resp->len, 0, NULL);
	const char *cause = json_str(json_array_get(json_path(st, "details.causes"), 0), "reason");
	bool yes = cause && strcmp(cause, RESTORE_LEFTOVERS_REASON) == 0;
	json_decref(st);
	return yes;
}

/* Posts one batch: EXIT_OK with *ret_result (new reference), EXIT_FAIL (printed), or, when
 * retry_leftovers, EXIT_RETRY (not printed) for the 409 of a tenant still being emptied. */
#define EXIT_RETRY 3
static int post_batch(struct rest_client *c, const char *tenant, const char *from, const char *id, bool done,
		      const struct buf *items, json_t **ret_result, bool retry_leftovers)
{
	struct buf resp = BUF_INIT;
	int st = restore_post(c, tenant, from, id, NULL, done, items, &resp);
	int rc = EXIT_OK;
	*ret_result = st == 200 ? json_loadb(resp.ptr, resp.len, 0, NULL) : NULL;
	if (!*ret_result) {
		if (retry_leftovers && restore_waits_for_leftovers(st, &resp)) {
			rc = EXIT_RETRY;
		} else {
			struct buf m = BUF_INIT;
			rest_error_message(st, &resp, &m);
			rc = fail("restore of tenant %s failed: %s", tenant, buf_cstr(&m));
			buf_release(&m);
		}
	}
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
	struct backup_key key;
	struct region r = { 0 };
	json_t *tp = NULL;
	struct rest_client *c = NULL;
	bool placed = false;
	if (!valid_dns1123_label(to) || strcmp(to, "system") == 0) {
		rc = fail("\"%s\" is not a tenant name a restore can make", to);
		goto out_header;
	}
	if ((rc = key_load(f, &key)) != EXIT_OK)
		goto out_header;
	struct buf uerr = BUF_INIT;
	if (backup_unseal(&key, header, items, &uerr) < 0) {
		rc = fail("%s: %s", file, buf_cstr(&uerr));
		buf_release(&uerr);
		goto out_key;
	}
	buf_release(&uerr);
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
	for (size_t i = 0; i <= nitems && rc == EXIT_OK; i++) {
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
	backup_key_forget(&key);
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
		if (flag_get(f, "as") || flag_get(f, "to") || flag_bool(f, "recover") || flag_get(f, "fence-timeout"))
			return fail("--as and --to are restore's, --recover and --fence-timeout move's");
		return tenant_backup(f, f->args[1], f->args[2]);
	}
	if (strcmp(op, "restore") == 0 && f->nargs == 2)
		return tenant_restore(f, f->args[1]);
	if (strcmp(op, "move") == 0 && f->nargs == 2) {
		if (flag_get(f, "as") || flag_get(f, "key"))
			return fail("--as and --key are restore's");
		return tenant_move(f, f->args[1]);
	}
	fprintf(stderr, "usage: ursactl tenant backup TENANT FILE\n"
			"       ursactl tenant restore FILE [--as NAME] [--to PARTITION]\n"
			"       ursactl tenant move TENANT --to PARTITION [--fence-timeout SECONDS]\n"
			"       ursactl tenant move TENANT --recover\n");
	return EXIT_USAGE;
}
