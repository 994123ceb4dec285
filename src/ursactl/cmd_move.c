/* ursactl tenant move: a tenant moved from its tenant partition to another while its users keep
 * working (docs/migration.md), and ursactl partition drain / balance, loops over it.
 *
 * A move is a record in the gateways' etcd, <prefix>/moves/<tenant> =
 *   {"tenant","from","to","move":<id>,"phase","since","updated","by","fromRevision","toRevision",
 *    "fromNumber","toNumber"}
 * (etcd revisions of either side, and the partitions' numbers: revision.h; -1 not known yet)
 * written with compare-and-swap over the record this move wrote last (so an ursactl recovering the
 * move meanwhile makes this one stop), whose phase says what --recover does after a crash:
 *   copying   the target is being given the tenant (MovingIn there)        -> undo
 *   fencing   the source may refuse the tenant's writes (MovingOut there)  -> undo
 *   aborting  an undo began                                                -> undo
 *   switched  the target holds the tenant as of the fence; the gateways'   -> finish
 *             placement may or may not name it yet; the source's copy may still exist
 * Undo: the source's fence lifted, the target's copy dropped, the record deleted. Finish: the
 * gateways' placement names the target (with the revisions a carried-over watch goes on from),
 * the target's tenant activated, the source's copy dropped (its watches of the tenant end first:
 * gateways carry them over to the target), the target's move annotation removed, the record
 * deleted. Every step on a partition is idempotent (src/common/apiserver/move.c), so running
 * either again after a crash anywhere is safe.
 *
 * The copy and the catch-up use the partitions' backup pages and change pages, applied on the
 * target in move mode (objects written exactly as the source stored them: same uids, nodeNames,
 * statuses). URSA_MOVE_CRASH=<point> makes ursactl exit at once at that point (tests). */
#include "ursactl.h"
#include "ursa/api.h"
#include "ursa/client.h"
#include "ursa/errors.h"
#include "ursa/etcd.h"
#include "ursa/jsonutil.h"
#include "ursa/path.h"
#include "ursa/revision.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"
#include <jansson.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAGE_ITEMS 2000
#define BATCH_BYTES (2u << 20)   /* under the API server's 3 MB request bodies */
#define QUIET_CHANGES 200        /* a change page this small: close enough to fence */
#define FOLLOW_MAX_S 120         /* following that never gets quiet gives up */
#define FENCE_BUDGET_DEFAULT_MS 2000

struct move {
	struct region *r;
	const char *tenant;
	char *from, *to;
	char id[17];
	struct rest_client *src, *dst;
	struct rest_client **src_each; /* one per API server of the source (its endpoints) */
	size_t nsrc;
	struct etcd *ge;
	const char *gprefix;
	char *rec_key;
	int64_t rec_rev;       /* the move record's mod revision (0: none written) */
	char *phase;
	int64_t applied;       /* source revision the target has applied through */
	int64_t to_rev;        /* target revision after the last batch applied */
	int64_t fence_rev;     /* the source's last revision with a change of the tenant */
	int from_number, to_number; /* the partitions' --partition-number (-1: not known yet) */
	size_t copied, changes, batches;
	int64_t since_ms;
};

static void crash_point(const char *point)
{
	const char *want = getenv("URSA_MOVE_CRASH");
	if (want && strcmp(want, point) == 0) {
		fprintf(stderr, "ursactl: URSA_MOVE_CRASH=%s: exiting here\n", point);
		_exit(9);
	}
}

/* The move record ------------------------------------------------------------------------------ */

static char *record_value(const struct move *m)
{
	char host[256] = "?", by[300];
	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	snprintf(by, sizeof(by), "%s:%d", host, (int)getpid());
	json_t *v = json_pack("{s:s,s:s,s:s,s:s,s:s,s:I,s:I,s:s,s:I,s:I,s:i,s:i}", "tenant", m->tenant, "from", m->from,
			      "to", m->to, "move", m->id, "phase", m->phase, "since", (json_int_t)m->since_ms, "updated",
			      (json_int_t)now_ms(), "by", by, "fromRevision", (json_int_t)m->fence_rev, "toRevision",
			      (json_int_t)m->to_rev, "fromNumber", m->from_number, "toNumber", m->to_number);
	char *s = json_dumps(v, JSON_COMPACT);
	json_decref(v);
	return s;
}

/* Writes the record in phase (created when there is none yet, else only over the one this move
 * wrote last). EXIT_OK or EXIT_FAIL (printed). */
static int record_phase(struct move *m, const char *phase)
{
	free(m->phase);
	m->phase = xstrdup(phase);
	char *v = record_value(m);
	int64_t rev = 0;
	int err = m->rec_rev ? etcd_update(m->ge, m->rec_key, v, strlen(v), m->rec_rev, &rev, NULL)
			     : etcd_create(m->ge, m->rec_key, v, strlen(v), 0, &rev);
	free(v);
	if (err == E_ALREADY_EXISTS)
		return fail("a move of tenant %s is recorded already (%s): see it there, and run 'ursactl tenant move %s --recover' if its ursactl is gone",
			    m->tenant, m->rec_key, m->tenant);
	if (err == E_CONFLICT || err == E_NOT_FOUND)
		return fail("the move record of tenant %s was changed by someone else (another ursactl recovering it?): stopping",
			    m->tenant);
	if (err)
		return fail("writing the move record of tenant %s failed: %s", m->tenant, err_reason(err));
	m->rec_rev = rev;
	return EXIT_OK;
}

static int record_delete(struct move *m)
{
	int err = etcd_delete(m->ge, m->rec_key, m->rec_rev, NULL, NULL);
	if (err && err != E_NOT_FOUND)
		return fail("deleting the move record of tenant %s failed: %s", m->tenant, err_reason(err));
	m->rec_rev = 0;
	return EXIT_OK;
}

/* Talking to the partitions --------------------------------------------------------------------- */

static int request_failed(const char *what, const char *tenant, const char *pname, int st, const struct buf *resp)
{
	struct buf msg = BUF_INIT;
	rest_error_message(st, resp, &msg);
	int rc = fail("%s of tenant %s on %s failed: %s", what, tenant, pname, buf_cstr(&msg));
	buf_release(&msg);
	return rc;
}

/* POST /ursa/v1/tenants/T/move {"move","step"}: EXIT_OK with *ret_result (new reference, may be
 * NULL to drop it), or EXIT_FAIL (printed). A 409 (the tenant there is not this move's: for an
 * undo's drop, nothing of the move's is there) counts as done when conflict_ok. */
/* A step's call; extra (NULL: none) is more members of its body, ",\"k\":v...". */
static int step_at(struct move *m, struct rest_client *c, const char *pname, const char *step, const char *extra,
		   json_t **ret_result, bool conflict_ok)
{
	char *path = xasprintf("%s%s/move", TENANT_BACKUP_PATH, m->tenant);
	char *body = xasprintf("{\"move\":\"%s\",\"step\":\"%s\"%s}", m->id, step, extra ? extra : "");
	struct buf resp = BUF_INIT;
	int st = rest_do_raw(c, "POST", path, body, strlen(body), NULL, &resp);
	int rc = EXIT_OK;
	if (st == 200) {
		json_t *res = json_loadb(resp.ptr ? resp.ptr : "", resp.len, 0, NULL);
		if (ret_result)
			*ret_result = res;
		else
			json_decref(res);
	} else if (st == 409 && conflict_ok) {
		if (ret_result)
			*ret_result = NULL;
	} else {
		char *what = xasprintf("move step \"%s\"", step);
		rc = request_failed(what, m->tenant, pname, st, &resp);
		free(what);
	}
	buf_release(&resp);
	free(body);
	free(path);
	return rc;
}

/* A step on every API server of the source: the fence (its in-memory part, the drain of writes
 * in flight) and its release are each server's own. *ret_rev (may be NULL) gets the highest
 * revision the servers named. */
static int source_step_all(struct move *m, const char *step, int64_t *ret_rev)
{
	int rc = EXIT_OK;
	for (size_t i = 0; i < m->nsrc && rc == EXIT_OK; i++) {
		json_t *res = NULL;
		rc = step_at(m, m->src_each[i], m->from, step, NULL, &res, false);
		int64_t v = json_integer_value(json_object_get(res, "revision"));
		if (ret_rev && v > *ret_rev)
			*ret_rev = v;
		json_decref(res);
	}
	return rc;
}

/* Posts items (comma-separated JSON objects) to the target in move mode. */
static int post_items(struct move *m, const struct buf *items)
{
	struct buf resp = BUF_INIT;
	int64_t give_up = mono_us() + (int64_t)WAIT_EMPTY_S * 1000000;
	int st;
	bool said = false;
	/* a tenant of the name deleted from the target a moment ago is still being emptied there:
	 * the first batch waits for that, as a restore does */
	while (restore_waits_for_leftovers(st = restore_post(m->dst, m->tenant, m->tenant, m->id, "move", false, items, &resp),
					   &resp) &&
	       m->batches == 0 && mono_us() < give_up) {
		if (!said)
			printf("tenant %s: waiting for %s to finish deleting an earlier tenant of the name\n", m->tenant, m->to);
		said = true;
		fflush(stdout);
		buf_reset(&resp);
		usleep(500000);
	}
	int rc = EXIT_OK;
	if (st == 200) {
		json_t *res = json_loadb(resp.ptr, resp.len, 0, NULL);
		int64_t rev = json_integer_value(json_object_get(res, "revision"));
		if (rev > m->to_rev)
			m->to_rev = rev;
		json_t *num = json_object_get(res, "partitionNumber");
		if (m->to_number < 0)
			m->to_number = json_is_integer(num) ? (int)json_integer_value(num) : 0;
		json_decref(res);
		if (m->batches++ == 0 && m->from_number == m->to_number)
			rc = fail("tenant partitions %s and %s both have partition number %d: the tenant's clients' resourceVersions of one would be taken for the other's; give each tenant partition its own --partition-number (move abandoned)",
				  m->from, m->to, m->to_number);
	} else {
		rc = request_failed("writing the copy", m->tenant, m->to, st, &resp);
	}
	buf_release(&resp);
	return rc;
}

/* GETs one page (backup or changes: JSON lines of items, then the page's own line) from the
 * source into *ret_body. EXIT_OK or EXIT_FAIL (printed). */
static int fetch_page(struct move *m, const char *path, const char *what, struct buf *ret_body)
{
	int st = rest_do_raw(m->src, "GET", path, NULL, 0, NULL, ret_body);
	return st == 200 ? EXIT_OK : request_failed(what, m->tenant, m->from, st, ret_body);
}

/* Applies a fetched page's items on the target in batches; *ret_page gets the page line (new
 * reference), *ret_items the items. EXIT_OK or EXIT_FAIL (printed). */
static int apply_page(struct move *m, const struct buf *body, const char *what, json_t **ret_page, size_t *ret_items)
{
	struct buf batch = BUF_INIT;
	size_t inbatch = 0, items = 0;
	int rc = EXIT_OK;
	*ret_page = NULL;
	const char *p = body->ptr ? body->ptr : "", *end = p + body->len;
	while (p < end && rc == EXIT_OK) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (len && strncmp(p, "{\"resource\":", 12) == 0) {
			if (inbatch && batch.len + len + 1 > BATCH_BYTES) {
				rc = post_items(m, &batch);
				buf_reset(&batch);
				inbatch = 0;
			}
			if (inbatch)
				buf_addch(&batch, ',');
			buf_add(&batch, p, len);
			inbatch++;
			items++;
		} else if (len) {
			json_decref(*ret_page);
			*ret_page = json_loadb(p, len, 0, NULL);
		}
		p += len + 1;
	}
	if (rc == EXIT_OK && inbatch)
		rc = post_items(m, &batch);
	if (rc == EXIT_OK && !json_is_object(*ret_page))
		rc = fail("%s of tenant %s on %s: the page has no closing line", what, m->tenant, m->from);
	if (rc != EXIT_OK) {
		json_decref(*ret_page);
		*ret_page = NULL;
	}
	*ret_items = items;
	buf_release(&batch);
	return rc;
}

/* The copy reads the source's pages on a thread of its own, at most PREFETCH_PAGES ahead of
 * the target's writes, so that reading one page and writing the one before overlap. */
#define PREFETCH_PAGES 2
struct fetched {
	struct buf body;
	int rc;
	struct fetched *next;
};
struct prefetch {
	struct move *m;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct fetched *head, **tail;
	size_t queued;
	bool done, stop;
};

/* The continue token of a backup page's closing line (its last line), new string ("" at the end). */
static char *page_continue(const struct buf *body)
{
	const char *p = body->ptr ? body->ptr : "";
	size_t n = body->len;
	while (n && p[n - 1] == '\n')
		n--;
	const char *line = p + n;
	while (line > p && line[-1] != '\n')
		line--;
	json_t *page = json_loadb(line, (size_t)(p + n - line), 0, NULL);
	char *cont = xstrdup(json_str(page, "continue") ?: "");
	json_decref(page);
	return cont;
}

static void *prefetch_main(void *arg)
{
	struct prefetch *pf = arg;
	char *cont = NULL;
	bool stop = false;
	while (!stop) {
		char *path = cont ? xasprintf("%s%s/backup?limit=%d&continue=%s", TENANT_BACKUP_PATH, pf->m->tenant,
					      PAGE_ITEMS, cont)
				  : xasprintf("%s%s/backup?limit=%d", TENANT_BACKUP_PATH, pf->m->tenant, PAGE_ITEMS);
		struct fetched *f = xcalloc(1, sizeof(*f));
		f->rc = fetch_page(pf->m, path, "reading the tenant", &f->body);
		free(path);
		free(cont);
		cont = f->rc == EXIT_OK ? page_continue(&f->body) : NULL;
		pthread_mutex_lock(&pf->mu);
		*pf->tail = f;
		pf->tail = &f->next;
		pf->queued++;
		stop = !cont || !*cont;
		pf->done = stop;
		pthread_cond_broadcast(&pf->cv);
		while (!stop && pf->queued >= PREFETCH_PAGES && !pf->stop)
			pthread_cond_wait(&pf->cv, &pf->mu);
		stop = stop || pf->stop;
		pthread_mutex_unlock(&pf->mu);
	}
	free(cont);
	return NULL;
}

/* Copies the tenant at one source revision. */
static int copy(struct move *m)
{
	struct prefetch pf = { .m = m };
	pf.tail = &pf.head;
	pthread_mutex_init(&pf.mu, NULL);
	pthread_cond_init(&pf.cv, NULL);
	pthread_t th;
	if (pthread_create(&th, NULL, prefetch_main, &pf) != 0)
		abort();
	int rc = EXIT_OK;
	bool first = true, last = false;
	while (rc == EXIT_OK && !last) {
		pthread_mutex_lock(&pf.mu);
		while (!pf.head)
			pthread_cond_wait(&pf.cv, &pf.mu);
		struct fetched *f = pf.head;
		pf.head = f->next;
		if (!pf.head)
			pf.tail = &pf.head;
		pf.queued--;
		last = pf.done && !pf.head;
		pthread_cond_broadcast(&pf.cv);
		pthread_mutex_unlock(&pf.mu);
		json_t *page = NULL;
		size_t n = 0;
		rc = f->rc;
		if (rc == EXIT_OK)
			rc = apply_page(m, &f->body, "reading the tenant", &page, &n);
		buf_release(&f->body);
		free(f);
		if (rc != EXIT_OK)
			break;
		if (first)
			m->applied = json_integer_value(json_object_get(page, "revision"));
		m->copied += n;
		json_decref(page);
		if (first)
			crash_point("copying");
		first = false;
	}
	pthread_mutex_lock(&pf.mu);
	pf.stop = true;
	pthread_cond_broadcast(&pf.cv);
	pthread_mutex_unlock(&pf.mu);
	pthread_join(th, NULL);
	while (pf.head) {
		struct fetched *f = pf.head;
		pf.head = f->next;
		buf_release(&f->body);
		free(f);
	}
	pthread_cond_destroy(&pf.cv);
	pthread_mutex_destroy(&pf.mu);
	return rc;
}

/* One page of the source's changes after m->applied applied on the target. */
static int follow_once(struct move *m, int wait_s, size_t *ret_items)
{
	char *path = xasprintf("%s%s/changes?from=%lld&wait=%d", TENANT_BACKUP_PATH, m->tenant, (long long)m->applied,
			       wait_s);
	struct buf body = BUF_INIT;
	json_t *page = NULL;
	*ret_items = 0;
	int rc = fetch_page(m, path, "following the changes", &body);
	if (rc == EXIT_OK)
		rc = apply_page(m, &body, "following the changes", &page, ret_items);
	buf_release(&body);
	free(path);
	if (rc != EXIT_OK)
		return rc;
	int64_t rev = json_integer_value(json_object_get(page, "revision"));
	if (rev > m->applied)
		m->applied = rev;
	m->changes += *ret_items;
	json_decref(page);
	return EXIT_OK;
}

/* Undo and finish ----------------------------------------------------------------------------- */

static int undo(struct move *m)
{
	int rc = record_phase(m, "aborting");
	if (rc == EXIT_OK)
		rc = source_step_all(m, "unfence", NULL);
	if (rc == EXIT_OK) /* a tenant the target had before this move is not this move's to drop */
		rc = step_at(m, m->dst, m->to, "drop", NULL, NULL, true);
	if (rc == EXIT_OK)
		rc = record_delete(m);
	if (rc != EXIT_OK)
		fprintf(stderr, "ursactl: the move of tenant %s is not undone yet: run 'ursactl tenant move %s --recover'\n",
			m->tenant, m->tenant);
	return rc;
}

/* The gateways' placement of the tenant names the target, with where it came from and the
 * revisions a carried-over watch goes on from (gw.h "tenant_moved"). Idempotent. */
static int place_on_target(struct move *m)
{
	/* resourceVersions as each side's clients see them: a carried-over watch goes on from toRevision */
	json_t *pv = json_pack("{s:s,s:s,s:I,s:{s:s,s:I,s:I,s:s}}", "partition", m->to, "state", "ready", "since",
			       (json_int_t)now_ms(), "moved", "from", m->from, "fromRevision",
			       (json_int_t)rv_show_at((unsigned)m->from_number, m->fence_rev), "toRevision",
			       (json_int_t)rv_show_at((unsigned)m->to_number, m->to_rev), "move", m->id);
	char *place = json_dumps(pv, JSON_COMPACT);
	json_decref(pv);
	char *pkey = xasprintf("%s/tenants/%s", m->gprefix, m->tenant);
	int err = etcd_put(m->ge, pkey, place, strlen(place), 0, NULL);
	free(pkey);
	free(place);
	if (err)
		return fail("placing tenant %s on %s in the gateways' registry failed: %s", m->tenant, m->to,
			    err_reason(err));
	return EXIT_OK;
}

/* The source's newest change of the tenant up to the fence (GET .../lastchange), or 0 when it
 * cannot say (the source is down or dropped already): then the fence's revision stays the bound
 * by which the target takes a client's value of the source's as current. */
static int64_t last_change(struct move *m)
{
	char *path = xasprintf("%s%s/lastchange?through=%lld", TENANT_BACKUP_PATH, m->tenant, (long long)m->fence_rev);
	json_t *res = NULL;
	int st = rest_do(m->src, "GET", path, NULL, NULL, &res);
	int64_t last = st == 200 ? json_integer_value(json_object_get(res, "revision")) : 0;
	json_decref(res);
	free(path);
	return last;
}

/* From the switch on: the gateways' placement names the target, the target's tenant activated
 * (*ret_active_us, which may be NULL, gets when), the source's copy dropped (its watches of the tenant end first), the target's move
 * annotation removed, the record deleted. */
static int finish(struct move *m, int64_t *ret_active_us)
{
	int rc = place_on_target(m);
	crash_point("placed");
	if (rc == EXIT_OK) { /* the revisions by which the target tells its clients' caught-up values */
		char *extra = xasprintf(",\"fromResourceVersion\":%lld,\"toRevision\":%lld",
					(long long)rv_show_at((unsigned)m->from_number, m->fence_rev), (long long)m->to_rev);
		rc = step_at(m, m->dst, m->to, "activate", extra, NULL, false);
		free(extra);
	}
	if (ret_active_us)
		*ret_active_us = mono_us();
	crash_point("activated");
	int64_t last = rc == EXIT_OK ? last_change(m) : 0;
	/* the source's servers after the first end their watches of the tenant before the first's
	 * deletes reach them (their watchers would see every object deleted), then all drop */
	for (size_t i = 1; i < m->nsrc && rc == EXIT_OK; i++)
		rc = step_at(m, m->src_each[i], m->from, "release", NULL, NULL, false);
	if (rc == EXIT_OK)
		rc = source_step_all(m, "drop", NULL);
	crash_point("dropped");
	if (rc == EXIT_OK) { /* with the tighter bound of the source's values the target takes as current */
		char *extra = last > 0 && last < m->fence_rev
				      ? xasprintf(",\"fromResourceVersion\":%lld",
						  (long long)rv_show_at((unsigned)m->from_number, last))
				      : NULL;
		rc = step_at(m, m->dst, m->to, "finish", extra, NULL, false);
		free(extra);
	}
	if (rc == EXIT_OK)
		rc = record_delete(m);
	if (rc != EXIT_OK)
		fprintf(stderr, "ursactl: tenant %s is on %s; finishing its move is not done yet: run 'ursactl tenant move %s --recover'\n",
			m->tenant, m->to, m->tenant);
	return rc;
}

/* Setup --------------------------------------------------------------------------------------- */

static int move_open(struct move *m, struct region *r, const char *tenant, const char *from, const char *to)
{
	json_t *tf = find_tp(r, from), *tt = find_tp(r, to);
	if (!tf || !tt)
		return fail("no tenant partition named %s in %s", tf ? to : from, r->path);
	m->r = r;
	m->tenant = tenant;
	m->from = xstrdup(from);
	m->to = xstrdup(to);
	m->src = tp_client(r, tf);
	size_t i;
	json_t *ep;
	json_array_foreach(json_object_get(tf, "endpoints"), i, ep) {
		json_t *one = json_pack("{s:[O]}", "endpoints", ep);
		m->src_each = xrealloc(m->src_each, (m->nsrc + 1) * sizeof(*m->src_each));
		m->src_each[m->nsrc++] = tp_client(r, one);
		json_decref(one);
	}
	m->dst = tp_client(r, tt);
	return EXIT_OK;
}

static void move_release(struct move *m)
{
	rest_free(m->src);
	for (size_t i = 0; i < m->nsrc; i++)
		rest_free(m->src_each[i]);
	free(m->src_each);
	rest_free(m->dst);
	etcd_free(m->ge);
	free(m->from);
	free(m->to);
	free(m->rec_key);
	free(m->phase);
}

/* Reads an existing record into m (its from, to, id, phase, revisions). EXIT_OK, EXIT_FAIL
 * (printed), or -1 when there is none. */
static int record_load(struct move *m, struct region *r, const char *tenant)
{
	struct etcd_kv kv = { 0 };
	int err = etcd_get(m->ge, m->rec_key, &kv);
	if (err == E_NOT_FOUND)
		return -1;
	if (err)
		return fail("reading the move record of tenant %s failed: %s", tenant, err_reason(err));
	json_t *v = json_loadb(kv.value, kv.value_len, 0, NULL);
	const char *from = json_str(v, "from"), *to = json_str(v, "to"), *id = json_str(v, "move"),
		   *phase = json_str(v, "phase");
	int rc = from && to && id && phase && strlen(id) < sizeof(m->id)
			 ? move_open(m, r, tenant, from, to)
			 : fail("the move record of tenant %s (%s) is not one ursactl wrote", tenant, m->rec_key);
	if (rc == EXIT_OK) {
		snprintf(m->id, sizeof(m->id), "%s", id);
		m->phase = xstrdup(phase);
		m->rec_rev = kv.mod_rev;
		m->since_ms = json_integer_value(json_object_get(v, "since"));
		m->fence_rev = json_integer_value(json_object_get(v, "fromRevision"));
		m->to_rev = json_integer_value(json_object_get(v, "toRevision"));
		json_t *fn = json_object_get(v, "fromNumber"), *tn = json_object_get(v, "toNumber");
		/* -1 (not known yet when the record was written) or absent: bare revisions */
		m->from_number = json_integer_value(fn) > 0 ? (int)json_integer_value(fn) : 0;
		m->to_number = json_integer_value(tn) > 0 ? (int)json_integer_value(tn) : 0;
	}
	json_decref(v);
	etcd_kv_release(&kv);
	return rc;
}

static int recover(struct move *m)
{
	bool forward = strcmp(m->phase, "switched") == 0;
	printf("tenant %s: the move %s from %s to %s stopped in phase %s: %s\n", m->tenant, m->id, m->from, m->to,
	       m->phase, forward ? "finishing it" : "undoing it");
	fflush(stdout);
	int rc = forward ? finish(m, NULL) : undo(m);
	if (rc == EXIT_OK)
		printf("tenant %s is on %s\n", m->tenant, forward ? m->to : m->from);
	return rc;
}

/* The move ------------------------------------------------------------------------------------- */

static int run_move(struct move *m, int64_t budget_ms)
{
	int64_t t0 = mono_us();
	unsigned char raw[8];
	if (RAND_bytes(raw, sizeof(raw)) != 1)
		abort();
	for (size_t k = 0; k < sizeof(raw); k++)
		snprintf(m->id + 2 * k, 3, "%02x", raw[k]);
	m->since_ms = now_ms();
	int rc = record_phase(m, "copying");
	if (rc != EXIT_OK)
		return rc;
	/* 1. the copy, at one source revision */
	rc = copy(m);
	int64_t t_copy = mono_us();
	/* 2. following, until a page of changes is small */
	size_t n = 0;
	int64_t give_up = mono_us() + (int64_t)FOLLOW_MAX_S * 1000000;
	do
		rc = rc == EXIT_OK ? follow_once(m, 0, &n) : rc;
	while (rc == EXIT_OK && n > QUIET_CHANGES && mono_us() < give_up);
	crash_point("following");
	/* 3. the fence: the source refuses the tenant's writes (gateways hold them) until the target
	 * has every change up to the fence's revision, or the budget is spent */
	int64_t t_fence = 0, t_caught = 0;
	if (rc == EXIT_OK)
		rc = record_phase(m, "fencing");
	if (rc == EXIT_OK) {
		t_fence = mono_us();
		rc = source_step_all(m, "fence", &m->fence_rev);
		if (rc == EXIT_OK && m->fence_rev <= 0)
			rc = fail("the fence of tenant %s on %s named no revision", m->tenant, m->from);
	}
	crash_point("fenced");
	/* With several servers, a later one's fence names the tenant object's revision, not the
	 * writes it took before fencing: with every server fenced, the changes up to now are all. */
	if (rc == EXIT_OK && m->nsrc > 1) {
		size_t n0;
		rc = follow_once(m, 0, &n0);
		if (m->applied > m->fence_rev)
			m->fence_rev = m->applied;
	}
	while (rc == EXIT_OK && m->applied < m->fence_rev) {
		if ((mono_us() - t_fence) / 1000 > budget_ms) {
			rc = fail("tenant %s: the target did not catch up within the fence's %lld ms (applied %lld of %lld): move abandoned, tenant stays on %s",
				  m->tenant, (long long)budget_ms, (long long)m->applied, (long long)m->fence_rev, m->from);
			break;
		}
		rc = follow_once(m, 1, &n);
	}
	if (rc != EXIT_OK) {
		if (m->rec_rev)
			undo(m);
		return rc;
	}
	t_caught = mono_us();
	/* 4. the switch: the record says so (over the record this move wrote last: an ursactl
	 * recovering the move meanwhile makes this one stop here), then everything after it is
	 * finish's, which --recover repeats */
	rc = record_phase(m, "switched");
	if (rc != EXIT_OK) {
		fprintf(stderr, "ursactl: the move of tenant %s stopped before its switch: 'ursactl tenant move %s --recover' undoes it\n",
			m->tenant, m->tenant);
		return rc;
	}
	crash_point("switched");
	int64_t t_switch = mono_us(), t_active = 0;
	if ((rc = finish(m, &t_active)) != EXIT_OK)
		return rc;
	int64_t t_end = mono_us();
	printf("tenant %s moved from %s to %s: %zu objects copied in %.2f s, %zu changes followed; writes held %.0f ms (catch-up %.0f ms, switch %.0f ms, placement and activation %.0f ms); %.2f s in all\n",
		       m->tenant, m->from, m->to, m->copied, (double)(t_copy - t0) / 1e6, m->changes,
		       (double)(t_active - t_fence) / 1e3, (double)(t_caught - t_fence) / 1e3,
		       (double)(t_switch - t_caught) / 1e3, (double)(t_active - t_switch) / 1e3,
		       (double)(t_end - t0) / 1e6);
	return EXIT_OK;
}

static int parse_budget(const char *v, int64_t *ret_ms)
{
	if (!v) {
		*ret_ms = FENCE_BUDGET_DEFAULT_MS;
		return EXIT_OK;
	}
	char *end;
	double d = strtod(v, &end);
	if (end == v || d <= 0 || d > 60)
		return fail("--fence-timeout wants seconds, above 0 and at most 60 (e.g. 2 or 0.5)");
	if (*end == 's' && end[1] == '\0')
		end++;
	if (*end)
		return fail("--fence-timeout wants seconds, above 0 and at most 60 (e.g. 2 or 0.5)");
	*ret_ms = (int64_t)(d * 1000);
	return EXIT_OK;
}

/* The source's partition number (GET .../size; the target's comes with the copy's first batch). */
static int source_number(struct move *m)
{
	char *path = xasprintf("%s%s/size", TENANT_BACKUP_PATH, m->tenant);
	struct buf resp = BUF_INIT;
	int st = rest_do_raw(m->src, "GET", path, NULL, 0, NULL, &resp);
	int rc = EXIT_OK;
	if (st == 200) {
		json_t *res = json_loadb(resp.ptr, resp.len, 0, NULL);
		json_t *num = json_object_get(res, "partitionNumber");
		m->from_number = json_is_integer(num) ? (int)json_integer_value(num) : 0;
		json_decref(res);
	} else {
		rc = request_failed("reading the tenant's size", m->tenant, m->from, st, &resp);
	}
	buf_release(&resp);
	free(path);
	return rc;
}

/* One move (or recovery) of tenant with region r: to NULL means --recover. */
static int move_one(struct region *r, const char *tenant, const char *to, int64_t budget_ms)
{
	struct move m = { .from_number = -1, .to_number = -1 };
	m.ge = gateway_etcd(r, &m.gprefix);
	if (!m.ge)
		return fail("the region has no gateway etcd (ursactl register --gateway-etcd): a move needs one");
	m.rec_key = xasprintf("%s/moves/%s", m.gprefix, tenant);
	int rc = record_load(&m, r, tenant);
	if (rc == EXIT_OK && to) {
		rc = fail("a move of tenant %s is recorded (%s -> %s, phase %s, since %lld s ago): if its ursactl is gone, run 'ursactl tenant move %s --recover' to finish or undo it",
			  tenant, m.from, m.to, m.phase, (long long)((now_ms() - m.since_ms) / 1000), tenant);
		move_release(&m);
		return rc;
	}
	if (rc == EXIT_OK) {
		rc = recover(&m);
		move_release(&m);
		return rc;
	}
	if (rc != -1 || !to) {
		if (rc == -1)
			printf("tenant %s: no move to recover\n", tenant);
		move_release(&m);
		return rc == -1 ? EXIT_OK : rc;
	}
	char *from = NULL;
	int64_t prev;
	int err = placement_get(r, tenant, &from, &prev);
	if (err)
		rc = fail("tenant %s has no placement in the gateways' registry (%s)", tenant, err_reason(err));
	else if (strcmp(from, to) == 0)
		rc = fail("tenant %s is on %s already", tenant, to);
	else
		rc = move_open(&m, r, tenant, from, to);
	free(from);
	if (rc == EXIT_OK)
		rc = source_number(&m);
	if (rc == EXIT_OK)
		rc = run_move(&m, budget_ms);
	move_release(&m);
	return rc;
}

int tenant_move(const struct flags *f, const char *tenant)
{
	const char *to = flag_get(f, "to");
	bool rec = flag_bool(f, "recover");
	if (!valid_dns1123_label(tenant) || strcmp(tenant, "system") == 0)
		return fail("\"%s\" is not a tenant that can be moved", tenant);
	if (!to == !rec)
		return fail("say where to: --to PARTITION (or --recover, to finish or undo a move that stopped)");
	int64_t budget;
	int rc = parse_budget(flag_get(f, "fence-timeout"), &budget);
	struct region r;
	if (rc != EXIT_OK || (rc = region_load(f, &r)) != EXIT_OK)
		return rc;
	if ((rc = region_auth(f, &r)) == EXIT_OK)
		rc = move_one(&r, tenant, rec ? NULL : to, budget);
	region_release(&r);
	return rc;
}

/* ursactl partition drain / balance ------------------------------------------------------------- */

const struct flag_spec partition_flags[] = {
	{ "parallel", "N", "drain: tenants moved at once (default 2)", false },
	{ "margin", "FRACTION", "balance: how far above the mean a partition may stay (default 0.2)", false },
	{ "dry-run", NULL, "balance: print the moves, make none", false },
	{ "fence-timeout", "SECONDS", "each move's write-fence budget (default 2)", false },
	REGION_AUTH_FLAGS,
	{ NULL, NULL, NULL, false },
};

/* Stored objects of each tenant partition (its watch caches' objects, from /metrics), and of
 * each tenant of it (GET /ursa/v1/tenants/T/size). */
static int64_t partition_objects(const struct region *r, const json_t *tp)
{
	struct rest_client *c = tp_client(r, tp);
	struct buf resp = BUF_INIT;
	int st = rest_do_raw(c, "GET", "/metrics", NULL, 0, NULL, &resp);
	int64_t total = -1;
	if (st == 200) {
		total = 0;
		const char *p = buf_cstr(&resp);
		static const char name[] = "ursa_apiserver_cache_objects{";
		while ((p = strstr(p, name))) {
			const char *sp = strchr(p, ' ');
			if (!sp)
				break;
			total += strtoll(sp + 1, NULL, 10);
			p = sp;
		}
	}
	buf_release(&resp);
	rest_free(c);
	return total;
}

static int64_t tenant_objects(const struct region *r, const json_t *tp, const char *tenant)
{
	struct rest_client *c = tp_client(r, tp);
	char *path = xasprintf("%s%s/size", TENANT_BACKUP_PATH, tenant);
	json_t *res = NULL;
	int st = rest_do(c, "GET", path, NULL, NULL, &res);
	int64_t n = st == 200 ? json_integer_value(json_object_get(res, "objects")) : -1;
	json_decref(res);
	free(path);
	rest_free(c);
	return n;
}

/* Every ready placement in the gateways' registry: {tenant: partition} (new object). */
static json_t *placements(const struct region *r, int *ret_err)
{
	const char *prefix;
	struct etcd *e = gateway_etcd(r, &prefix);
	json_t *out = json_object();
	*ret_err = e ? 0 : E_NOT_FOUND;
	if (!e)
		return out;
	char *key = xasprintf("%s/tenants/", prefix);
	char *end = etcd_prefix_end(key);
	struct etcd_range_result rr = { 0 };
	*ret_err = etcd_range(e, key, end, 0, 0, false, &rr);
	for (size_t i = 0; i < rr.n && !*ret_err; i++) {
		json_t *v = json_loadb(rr.kvs[i].value, rr.kvs[i].value_len, 0, NULL);
		if (json_str(v, "partition") && strcmp(json_str(v, "state") ?: "", "ready") == 0)
			json_object_set_new(out, rr.kvs[i].key + strlen(key), json_string(json_str(v, "partition")));
		json_decref(v);
	}
	etcd_range_result_release(&rr);
	free(key);
	free(end);
	etcd_free(e);
	return out;
}

/* The tenants placement (placements') puts on partition (new array of strings). */
static json_t *placed_on(json_t *placement, const char *partition)
{
	json_t *out = json_array(), *p;
	const char *t;
	json_object_foreach(placement, t, p) if (strcmp(json_string_value(p), partition) == 0)
		json_array_append_new(out, json_string(t));
	return out;
}

/* Runs the moves of tenants[i] to dests[i], at most parallel at once (one child process each).
 * EXIT_OK when every one succeeded. */
static int run_moves(struct region *r, char **tenants, char **dests, size_t n, int parallel, int64_t budget_ms)
{
	size_t started = 0, running = 0, failed = 0;
	while (started < n || running) {
		if (started < n && running < (size_t)parallel) {
			fflush(stdout);
			fflush(stderr);
			pid_t pid = fork();
			if (pid == 0) {
				int rc = move_one(r, tenants[started], dests[started], budget_ms);
				fflush(stdout); /* _exit flushes nothing */
				fflush(stderr);
				_exit(rc);
			}
			if (pid < 0) {
				failed++;
				started++;
				continue;
			}
			started++;
			running++;
			continue;
		}
		int status;
		if (wait(&status) > 0) {
			running--;
			if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
				failed++;
		} else {
			break;
		}
	}
	if (failed)
		return fail("%zu of %zu moves failed (see above)", failed, n);
	return EXIT_OK;
}

/* The partition with the fewest objects among tps other than except (borrowed). */
static size_t least_loaded(const int64_t *load, size_t n, ssize_t except)
{
	size_t best = SIZE_MAX;
	for (size_t i = 0; i < n; i++)
		if ((ssize_t)i != except && load[i] >= 0 && (best == SIZE_MAX || load[i] < load[best]))
			best = i;
	return best;
}

static int drain(struct region *r, const char *name, int parallel, int64_t budget_ms)
{
	json_t *tps = json_object_get(r->doc, list_key(true));
	size_t ntp = json_array_size(tps), self = SIZE_MAX;
	int64_t *load = xcalloc(ntp ? ntp : 1, sizeof(*load));
	for (size_t i = 0; i < ntp; i++) {
		json_t *tp = json_array_get(tps, i);
		if (strcmp(json_str(tp, "name") ?: "", name) == 0)
			self = i;
		load[i] = partition_objects(r, tp);
	}
	int err, rc = EXIT_OK;
	const char *servers, *prefix;
	gateway_etcd_settings(r->doc, NULL, NULL, &servers, &prefix);
	if (self == SIZE_MAX)
		rc = fail("no tenant partition named %s in %s", name, r->path);
	else if (!servers)
		rc = fail("the region has no gateway etcd (ursactl register --gateway-etcd): a drain needs one");
	else if ((rc = gateway_set_draining(servers, prefix, name, true)) == EXIT_OK)
		printf("%s: draining (the gateways place no new tenant there; 'ursactl partition undrain %s' ends it)\n",
		       name, name);
	json_t *placement = placements(r, &err);
	json_t *tenants = placed_on(placement, name);
	json_decref(placement);
	if (rc != EXIT_OK)
		json_array_clear(tenants);
	if (rc == EXIT_OK && err)
		rc = fail("reading the gateways' registry failed: %s", err_reason(err));
	else if (rc == EXIT_OK && least_loaded(load, ntp, (ssize_t)self) == SIZE_MAX && json_array_size(tenants))
		rc = fail("no other tenant partition answers: nowhere to move %s's tenants", name);
	size_t n = json_array_size(tenants);
	char **tv = xcalloc(n ? n : 1, sizeof(*tv)), **dv = xcalloc(n ? n : 1, sizeof(*dv));
	for (size_t i = 0; i < n && rc == EXIT_OK; i++) {
		tv[i] = (char *)json_string_value(json_array_get(tenants, i));
		size_t d = least_loaded(load, ntp, (ssize_t)self);
		dv[i] = (char *)json_str(json_array_get(tps, d), "name");
		int64_t size = tenant_objects(r, json_array_get(tps, self), tv[i]);
		load[d] += size > 0 ? size : 1;
		printf("%s: %s (%lld objects) -> %s\n", name, tv[i], (long long)size, dv[i]);
	}
	if (rc == EXIT_OK && n == 0)
		printf("%s holds no tenant\n", name);
	if (rc == EXIT_OK && n)
		rc = run_moves(r, tv, dv, n, parallel, budget_ms);
	if (rc == EXIT_OK)
		printf("%s is drained: %zu tenants moved\n", name, n);
	free(tv);
	free(dv);
	free(load);
	json_decref(tenants);
	return rc;
}

/* Balance: while the busiest partition holds more than (1 + margin) x the mean of stored objects,
 * move its tenant whose size best fits the gap (the largest at most half the difference to the
 * least loaded partition) there. Plans every move first, from the counts, then runs them. */
static int balance(struct region *r, double margin, bool dry, int64_t budget_ms)
{
	json_t *tps = json_object_get(r->doc, list_key(true));
	size_t ntp = json_array_size(tps);
	int64_t *load = xcalloc(ntp ? ntp : 1, sizeof(*load)), total = 0;
	size_t live = 0;
	for (size_t i = 0; i < ntp; i++) {
		load[i] = partition_objects(r, json_array_get(tps, i));
		if (load[i] >= 0) {
			total += load[i];
			live++;
		}
		printf("%s: %lld objects\n", json_str(json_array_get(tps, i), "name"), (long long)load[i]);
	}
	char **tv = NULL, **dv = NULL;
	size_t nm = 0;
	int rc = EXIT_OK;
	double mean = live ? (double)total / (double)live : 0;
	json_t *moved = json_object(), *sizes = json_object();
	int err;
	json_t *placement = placements(r, &err);
	if (err)
		rc = fail("reading the gateways' registry failed: %s", err_reason(err));
	for (int round = 0; round < 64 && live > 1 && rc == EXIT_OK; round++) {
		size_t hi = SIZE_MAX;
		for (size_t i = 0; i < ntp; i++)
			if (load[i] >= 0 && (hi == SIZE_MAX || load[i] > load[hi]))
				hi = i;
		size_t lo = least_loaded(load, ntp, (ssize_t)hi);
		if (hi == SIZE_MAX || lo == SIZE_MAX || (double)load[hi] <= mean * (1 + margin))
			break;
		const char *hname = json_str(json_array_get(tps, hi), "name");
		json_t *tenants = placed_on(placement, hname);
		int64_t want = (load[hi] - load[lo]) / 2, best_n = 0;
		const char *best = NULL;
		size_t i;
		json_t *t;
		json_array_foreach(tenants, i, t) {
			const char *tn = json_string_value(t);
			if (json_object_get(moved, tn))
				continue;
			if (!json_object_get(sizes, tn)) /* asked once, whatever the rounds */
				json_object_set_new(sizes, tn, json_integer(tenant_objects(r, json_array_get(tps, hi), tn)));
			int64_t sz = json_integer_value(json_object_get(sizes, tn));
			if (sz > 0 && sz <= want && sz > best_n) {
				best = tn;
				best_n = sz;
			}
		}
		if (!best) {
			json_decref(tenants);
			break;
		}
		tv = xrealloc(tv, (nm + 1) * sizeof(*tv));
		dv = xrealloc(dv, (nm + 1) * sizeof(*dv));
		tv[nm] = xstrdup(best);
		dv[nm] = xstrdup(json_str(json_array_get(tps, lo), "name"));
		json_object_set_new(moved, best, json_true());
		printf("move %s (%lld objects): %s -> %s\n", best, (long long)best_n, hname, dv[nm]);
		nm++;
		load[hi] -= best_n;
		load[lo] += best_n;
		json_decref(tenants);
	}
	if (rc == EXIT_OK && nm == 0)
		printf("balanced: no partition holds more than %.0f%% above the mean (%.0f objects)\n", margin * 100, mean);
	else if (rc == EXIT_OK && !dry)
		rc = run_moves(r, tv, dv, nm, 1, budget_ms);
	for (size_t i = 0; i < nm; i++) {
		free(tv[i]);
		free(dv[i]);
	}
	free(tv);
	free(dv);
	free(load);
	json_decref(moved);
	json_decref(sizes);
	json_decref(placement);
	return rc;
}

int cmd_partition(const struct command *cmd, const struct flags *f)
{
	(void)cmd;
	const char *op = f->nargs ? f->args[0] : "";
	bool is_drain = strcmp(op, "drain") == 0 && f->nargs == 2, is_balance = strcmp(op, "balance") == 0 && f->nargs == 1;
	bool is_undrain = strcmp(op, "undrain") == 0 && f->nargs == 2;
	if (!is_drain && !is_balance && !is_undrain) {
		fprintf(stderr, "usage: ursactl partition drain PARTITION [--parallel N]\n"
				"       ursactl partition undrain PARTITION\n"
				"       ursactl partition balance [--margin FRACTION] [--dry-run]\n");
		return EXIT_USAGE;
	}
	if (is_undrain) {
		struct region r;
		const char *servers, *prefix;
		int rc = region_load(f, &r);
		if (rc != EXIT_OK)
			return rc;
		gateway_etcd_settings(r.doc, NULL, NULL, &servers, &prefix);
		rc = !servers ? fail("the region has no gateway etcd") : gateway_set_draining(servers, prefix, f->args[1], false);
		if (rc == EXIT_OK)
			printf("%s: takes new tenants again\n", f->args[1]);
		region_release(&r);
		return rc;
	}
	int64_t budget;
	int rc = parse_budget(flag_get(f, "fence-timeout"), &budget);
	if (rc != EXIT_OK)
		return rc;
	int parallel = 2;
	double margin = 0.2;
	if (flag_get(f, "parallel")) {
		char *end;
		long v = strtol(flag_get(f, "parallel"), &end, 10);
		if (*end || v < 1 || v > 16)
			return fail("--parallel wants 1 to 16");
		parallel = (int)v;
	}
	if (flag_get(f, "margin")) {
		char *end;
		margin = strtod(flag_get(f, "margin"), &end);
		if (*end || margin < 0 || margin > 10)
			return fail("--margin wants a fraction, 0 to 10 (0.2: 20%% above the mean)");
	}
	struct region r;
	if ((rc = region_load(f, &r)) != EXIT_OK)
		return rc;
	if ((rc = region_auth(f, &r)) == EXIT_OK)
		rc = is_drain ? drain(&r, f->args[1], parallel, budget) : balance(&r, margin, flag_bool(f, "dry-run"), budget);
	region_release(&r);
	return rc;
}
