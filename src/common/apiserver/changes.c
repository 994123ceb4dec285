/* A tenant's changes since a revision, for a move's following step: GET
 * /ursa/v1/tenants/{t}/changes?from=REV[&wait=S][&limit=N] (the protocol: move.c).
 *
 * One etcd watch over the server's whole prefix from REV + 1, on the watch's thread: each event
 * whose key is t's (change_key_classify) becomes a backup-style line; the lines of one revision
 * are held until the revision is known whole, then join the page, whose revision moves there
 * (a revision without t's keys moves it too). etcd sends a revision's events in one response
 * (it splits none unless a client asks for fragments; ours does not), so a revision is whole at
 * the end of each batch of events or when a later revision's event comes. The page ends once it
 * holds limit changes or reaches the revision etcd was at when the call came. That revision may
 * be of a write outside the prefix, which the watch never sees: when the watch has brought
 * nothing for a moment, a progress key under the prefix is written, whose event the watch does
 * see. */
#include "internal.h"
#include "ursa/jsonutil.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LIMIT_DEFAULT 10000
#define LIMIT_MAX 100000
#define WAIT_MAX_S 30
#define CAP_MS 30000       /* a call's whole time */
#define STALL_MS 300       /* short of the target this long: write the progress key */
#define PROGRESS_KEY "/~changes-progress" /* below the prefix, outside every kind's keys */

bool change_key_classify(const char *rel, const char *tenant, bool (*covered)(void *ud, const char *plural), void *ud,
			 char **ret_resource, const char **ret_path)
{
	size_t tn = strlen(tenant);
	const char *slash = strchr(rel, '/');
	if (!slash || slash == rel || !tn)
		return false;
	size_t first = (size_t)(slash - rel);
	const char *after = slash + 1;
	if (first == 7 && strncmp(rel, "tenants", 7) == 0) {
		if (strcmp(after, tenant) != 0)
			return false;
		*ret_resource = xstrdup("tenants");
		*ret_path = after;
		return true;
	}
	if (first == sizeof(CR_KEY_SEGMENT) - 1 && strncmp(rel, CR_KEY_SEGMENT, first) == 0) {
		const char *g = after, *p = strchr(g, '/');
		const char *t = p ? strchr(p + 1, '/') : NULL;
		if (!p || p == g || !t || t == p + 1 || strncmp(t + 1, tenant, tn) != 0 || t[1 + tn] != '/' ||
		    !t[2 + tn])
			return false;
		*ret_resource = xstrndup(rel, (size_t)(t - rel));
		*ret_path = t + 2 + tn;
		return true;
	}
	if (strncmp(after, tenant, tn) != 0 || after[tn] != '/' || !after[tn + 1])
		return false;
	char *plural = xstrndup(rel, first);
	bool ok = covered(ud, plural);
	if (!ok) {
		free(plural);
		return false;
	}
	*ret_resource = plural;
	*ret_path = after + tn + 1;
	return true;
}

/* The page being made, shared by the request's thread and the watch's. */
struct chpage {
	struct apiserver *s;
	const char *tenant;
	size_t plen;             /* the prefix's length, '/' included */
	long limit;
	int64_t target;          /* done once the page reaches it (0: at the first batch: wait mode) */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct buf body;         /* whole revisions' lines */
	struct buf pend;         /* the lines of revision pend_rev, not known whole yet */
	int64_t pend_rev;
	long pend_items;
	int64_t rev;             /* the page is complete through rev */
	long items;
	int64_t compacted;       /* > 0: REV was compacted (etcd's compact revision) */
	bool done;
};

static bool covered(void *ud, const char *plural)
{
	struct served *sv = served_by_plural(ud, plural);
	return sv && backup_covers(sv->r);
}

/* pend_rev is whole: into the page (under mu). */
static void commit(struct chpage *c)
{
	if (!c->pend_rev)
		return;
	buf_add(&c->body, c->pend.ptr, c->pend.len);
	buf_reset(&c->pend);
	c->rev = c->pend_rev;
	c->items += c->pend_items;
	c->pend_rev = 0;
	c->pend_items = 0;
	if (c->items >= c->limit || (c->target && c->rev >= c->target))
		c->done = true;
}

static void on_events(void *ud, const struct etcd_event *ev, size_t n)
{
	struct chpage *c = ud;
	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < n && !c->done; i++) {
		const struct etcd_kv *kv = &ev[i].kv;
		if (kv->mod_rev != c->pend_rev)
			commit(c);
		if (c->done)
			break;
		c->pend_rev = kv->mod_rev;
		char *resource;
		const char *path;
		if (strlen(kv->key) <= c->plen ||
		    !change_key_classify(kv->key + c->plen, c->tenant, covered, c->s, &resource, &path))
			continue;
		bool del = ev[i].type == ETCD_EV_DELETE;
		if (backup_line(&c->pend, resource, path, del ? NULL : kv->value, del ? 0 : kv->value_len))
			c->pend_items++;
		free(resource);
	}
	if (!c->done)
		commit(c); /* the end of a batch: its last revision is whole */
	if (!c->target && c->rev)
		c->done = true; /* waiting for the first change: here it is */
	if (c->done)
		pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

static void on_compacted(void *ud, int64_t compact_rev)
{
	struct chpage *c = ud;
	pthread_mutex_lock(&c->mu);
	c->compacted = compact_rev > 0 ? compact_rev : 1;
	c->done = true;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

/* A query parameter as an integer in [lo, hi] (clamped above), else def when absent: 0 or -1. */
static int query_int(struct req *q, const char *name, long long def, long long lo, long long hi, long long *ret)
{
	const char *v = http_query(q->http, name);
	long long x = def;
	if (v && (parse_int64(v, &x) < 0 || x < lo)) {
		reply_status(q, E_BAD_REQUEST, "%s must be an integer of at least %lld", name, lo);
		return -1;
	}
	*ret = x > hi ? hi : x;
	return 0;
}

static void wait_until(struct chpage *c, int64_t until_ms)
{
	while (!c->done) {
		int64_t left = until_ms - mono_ms();
		if (left <= 0)
			break;
		struct timespec ts;
		wall_deadline(&ts, left);
		pthread_cond_timedwait(&c->cv, &c->mu, &ts);
	}
}

void handle_tenant_changes(struct req *q, const char *tenant)
{
	struct apiserver *s = q->s;
	long long from, wait_s, limit;
	if (!http_query(q->http, "from")) {
		reply_status(q, E_BAD_REQUEST, "from (the revision the changes come after) is required");
		return;
	}
	if (query_int(q, "from", 0, 0, INT64_MAX, &from) < 0 || query_int(q, "wait", 0, 0, WAIT_MAX_S, &wait_s) < 0 ||
	    query_int(q, "limit", LIMIT_DEFAULT, 1, LIMIT_MAX, &limit) < 0)
		return;
	int64_t cur;
	int rc = etcd_current_revision(s->etcd, &cur);
	if (rc) {
		reply_status(q, rc, "reading etcd's revision failed: %s", err_reason(rc));
		return;
	}
	if (from > cur) {
		reply_status(q, E_BAD_REQUEST, "from %lld is past this partition's revision %lld", from, (long long)cur);
		return;
	}
	struct chpage c = {
		.s = s, .tenant = tenant, .plen = strlen(s->o.etcd_prefix) + 1, .limit = (long)limit,
		.target = cur > from ? cur : 0, .rev = from,
	};
	pthread_mutex_init(&c.mu, NULL);
	pthread_cond_init(&c.cv, NULL);
	struct etcd_watch *w = NULL;
	if (c.target || wait_s > 0) {
		char *start = xasprintf("%s/", s->o.etcd_prefix), *end = etcd_prefix_end(start);
		static const struct etcd_watch_handlers h = { .on_events = on_events, .on_compacted = on_compacted };
		w = etcd_watch_start(s->etcd, start, end, from + 1, false, &h, &c);
		free(start);
		free(end);
		if (!w) {
			reply_status(q, E_UNAVAILABLE, "watching etcd failed; retry");
			goto out;
		}
	}
	int64_t t0 = mono_ms();
	pthread_mutex_lock(&c.mu);
	if (c.target) {
		wait_until(&c, t0 + STALL_MS);
		if (!c.done) { /* perhaps a write outside the prefix: make one the watch sees */
			pthread_mutex_unlock(&c.mu);
			char *pk = xasprintf("%s" PROGRESS_KEY, s->o.etcd_prefix);
			int64_t prev;
			int prc = etcd_put(s->etcd, pk, "{}", 2, 0, &prev);
			free(pk);
			pthread_mutex_lock(&c.mu);
			if (prc == 0 && prev > c.target)
				c.target = prev;
			if (c.target && c.rev >= c.target)
				c.done = true;
		}
		wait_until(&c, t0 + CAP_MS);
	} else if (w) {
		wait_until(&c, t0 + wait_s * 1000);
	}
	c.done = true; /* the watch's thread adds nothing more */
	pthread_mutex_unlock(&c.mu);
	etcd_watch_stop(w);
	if (c.compacted) {
		reply_status(q, E_GONE, "the changes after revision %lld have been compacted (at %lld): copy the tenant again",
			     from, (long long)c.compacted);
	} else {
		buf_addf(&c.body, "{\"kind\":\"TenantChangesPage\",\"apiVersion\":\"ursa.io/v1\",\"tenant\":");
		buf_add_json_str(&c.body, tenant, strlen(tenant));
		buf_addf(&c.body, ",\"revision\":%lld,\"items\":%ld}\n", (long long)c.rev, c.items);
		q->replied_code = 200;
		http_reply_set(q->reply, 200, "application/jsonl", &c.body);
	}
out:
	buf_release(&c.body);
	buf_release(&c.pend);
	pthread_cond_destroy(&c.cv);
	pthread_mutex_destroy(&c.mu);
}
