/* Moving a tenant between tenant partitions: the partitions' side (ursactl tenant move T --to P,
 * issue 23; the design is docs/migration.md). Region operators only (system:masters of the
 * system tenant), on servers that serve tenants, as backup and restore (backup.c); errors are
 * Kubernetes Status objects.
 *
 *   POST /ursa/v1/tenants/{t}/restore  {"from":t,"restore":"<move id>","mode":"move","items":[...]}
 *        (backup.c) The target's exact copy: items are written as the source stored them (uids,
 *        ownerReferences, spec.nodeName, pod status, creationTimestamp, generation, managedFields;
 *        only metadata.resourceVersion and selfLink go; no pod skipped), puts and deletes
 *        ({"resource","path","deleted":true}; an absent key is fine) in the order given, in etcd
 *        transactions of ETCD_TXN_MAX_OPS (a key met twice starts the next one). The tenant object
 *        is written with phase MovingIn and annotation ursa.io/move = <move id>, whatever the
 *        source's says (its ursa.io/moved-* annotations go). The first batch creates the tenant (it
 *        must not exist, nor anything of an earlier tenant of the name); later ones need the
 *        tenant MovingIn under that id (409). No "done": activation is a step below. Reply:
 *        TenantRestoreResult, "revision" the etcd revision after the batch's last write (the
 *        current one when it wrote nothing), "partitionNumber" this server's (revision.h).
 *   GET  /ursa/v1/tenants/{t}/changes?from=REV[&wait=S][&limit=N]   (changes.c)
 *        application/jsonl: t's changes after revision REV, in revision order, one line each:
 *        {"resource","path","object"} for a put (a backup's line), {"resource","path",
 *        "deleted":true} for a delete; then {"kind":"TenantChangesPage","apiVersion":"ursa.io/v1",
 *        "tenant":t,"revision":R,"items":n}: the changes are complete through R (the next call's
 *        from). t's keys are those a backup reads: tenants/t, each backed-up kind's t range, and
 *        custom resources under customresources/<g>/<p>/t/ (any CRD's, the system tenant's too).
 *        A page ends at a revision boundary (a revision's changes are never split) once it holds
 *        limit (default 10000) changes, or once it reaches the revision etcd was at when the call
 *        came; with nothing newer than REV it waits up to wait seconds (default 0, at most 30) for
 *        the first change. 410 (Expired) when REV is compacted.
 *   POST /ursa/v1/tenants/{t}/move  {"move":"<id, a DNS label>","step":S}
 *        fence    (source) t Active (or already MovingOut under this id: the same reply): t's
 *                 writes on this server are refused at once (in memory), those in flight are
 *                 waited for (5 s, else the fence is lifted again and 503), then the tenant object
 *                 is written with phase MovingOut and annotation ursa.io/move = id. Reply
 *                 {"kind":"TenantMoveStep","step":"fence","revision":F}: every change of t here
 *                 is at or below F. (Every step's reply also has "partitionNumber".)
 *        unfence  (source, an abort) MovingOut under id -> Active, annotation removed, the memory
 *                 fence lifted. Already Active without the annotation: 200.
 *        activate (target) MovingIn under id -> Active (the annotation stays until finish).
 *                 With "fromResourceVersion" (the source's resourceVersion of the fence, as its
 *                 clients see it) and "toRevision" (this etcd's revision holding that state),
 *                 both or neither: annotations ursa.io/moved-from-revision and
 *                 ursa.io/moved-to-revision (the latter as this partition shows it), by which
 *                 req_resolve_rv tells a client's value from the source (rv_resolve).
 *                 Reply the revision. Already Active under id: 200.
 *        finish   (target) removes the annotation when it names id (the tenant must be Active);
 *                 with "fromResourceVersion" (a tighter bound of the source's, from lastchange
 *                 below) the ursa.io/moved-from-revision annotation takes it. Without the move
 *                 annotation: 200.
 *   GET  /ursa/v1/tenants/{t}/lastchange?through=REV   (source, before its drop)
 *        {"kind":"TenantLastChange","tenant":t,"revision":L,"partitionNumber":N}: L <= REV is at or
 *        after t's newest change at or before REV of the objects a move carries (not the tenant
 *        object, not events): this server's caches, once at REV, each give the revision of t's
 *        newest event they hold, or the start of their history (wcache_tenant_last_change). A
 *        client that saw L saw all of t as of REV. 503 when a cache is not ready or does not
 *        reach REV in time.
 *        drop     (either side) the tenant object annotated with id (any phase), or absent (then
 *                 only what is left of t goes: a drop cut short is done again). t's writes are
 *                 fenced, this server's caches are brought to etcd's revision read at the start
 *                 (so every event of t at or below the fence was sent to its watchers), then
 *                 every watch of t here ends as a timed-out watch does (plain watches: a
 *                 multiplexed watch, POST /ursa/v1/watches, has no clean end of one of its
 *                 watches and is left to its client), then every key of t goes:
 *                 each served kind's t range (events, leases, everything tenant-keyed), every
 *                 custom resource of t, the tenant object last. Raw etcd deletes: no finalizers,
 *                 no purge, no admission. Reply {"kind":"TenantMoveStep","step":"drop",
 *                 "deleted":N}.
 *        release  (source; every server of it but one, before that one drops) a drop's first part
 *                 alone: t's writes fenced here, the caches brought to etcd's revision, every
 *                 watch of t here ended; nothing deleted (the memory fence stays until this
 *                 server's own drop). The tenant object annotated with id, or absent.
 *
 * The write fence: a create, update, patch, delete or deletecollection (subresources included:
 * status, binding, eviction, scale; not exec, attach, port-forward, logs, a service account's
 * token request, which stores nothing, reads or watches) of
 * tenant t's objects, or of the tenant object itself, from anyone (controllers, the scheduler,
 * kubelets, users, system:masters) while t is fenced in memory or its tenant object's phase is
 * MovingOut or MovingIn gets 429 TooManyRequests with Retry-After: 1 and X-Ursa-Tenant-Moving: t.
 * The phase is the truth (it survives a restart); the memory fence bridges the moment before the
 * tenants cache shows it. Writes the server makes itself (quota status, CRD status, aggregated
 * roles) are not fenced.
 *
 * Cost when no tenant moves: a write stores a word in a slot of its thread and reads one atomic
 * counter (moves.n); only while some tenant of this server moves does a write take moves.mu. */
#include "internal.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DRAIN_MS 5000       /* a fence waits this long for the tenant's writes in flight */
#define CACHE_WAIT_MS 5000  /* a drop waits this long for each cache to reach etcd's revision */
#define DROP_PAGE 1000      /* keys read at a time by a drop */
#define WSLOTS 4096         /* threads that write; past them a shared counter (overflow) */

/* The tenants moving or fenced on this server. */
struct moves {
	struct apiserver *s;
	atomic_int n;          /* entries in byname: 0 = no tenant moving here (the writes' fast path) */
	atomic_bool synced;    /* the follower delivered the tenants' first state */
	pthread_mutex_t mu;
	struct strmap byname;  /* tenant -> struct mentry (val), under mu */
	struct follower *f;
	struct served *tenants;
};

struct mentry {
	int held;    /* memory fences: a fence step's until unfence or drop, a drop's while it runs */
	bool phase;  /* the tenants cache shows it MovingOut or MovingIn */
	bool sweep;  /* after a relist of the tenants cache: not brought again yet */
};

/* Writes in flight. Each thread that writes has a slot: the write's key (a hash of server and
 * tenant, 0 when idle) and a count of its writes. A fence stores its entry, then looks at the
 * slots; a write stores its key, then looks for an entry (both sequentially consistent): either
 * the write sees the fence, or the fence sees the write and waits for it. */
struct wslot {
	_Atomic uint64_t key;
	_Atomic uint64_t seq;
};
static struct wslot wslots[WSLOTS];
static atomic_int nwslots;
static atomic_int overflow; /* writes in flight on threads without a slot */
static _Thread_local int my_slot = -1;

static uint64_t write_key(const struct apiserver *s, const char *tenant)
{
	uint64_t h = 1469598103934665603ULL ^ (uint64_t)(uintptr_t)s;
	for (const unsigned char *p = (const unsigned char *)tenant; *p; p++)
		h = (h ^ *p) * 1099511628211ULL;
	return h | 1;
}

/* Entries ------------------------------------------------------------------------------------ */

/* The entry of tenant, created when create (under mu). */
static struct mentry *entry(struct moves *m, const char *tenant, bool create)
{
	struct strmap_ent *e = strmap_get(&m->byname, tenant);
	if (!e && create) {
		bool created;
		e = strmap_put(&m->byname, tenant, &created);
		e->val = xcalloc(1, sizeof(struct mentry));
		atomic_fetch_add(&m->n, 1);
	}
	return e ? e->val : NULL;
}

/* Drops tenant's entry when nothing holds it any more (under mu). */
static void entry_settle(struct moves *m, const char *tenant)
{
	struct mentry *me = entry(m, tenant, false);
	if (me && me->held == 0 && !me->phase) {
		strmap_del(&m->byname, tenant, NULL);
		free(me);
		atomic_fetch_sub(&m->n, 1);
	}
}

static void fence_hold(struct moves *m, const char *tenant)
{
	pthread_mutex_lock(&m->mu);
	entry(m, tenant, true)->held++;
	pthread_mutex_unlock(&m->mu);
}

/* all: every hold (unfence, and the end of a drop); else one. */
static void fence_release(struct moves *m, const char *tenant, bool all)
{
	pthread_mutex_lock(&m->mu);
	struct mentry *me = entry(m, tenant, false);
	if (me && me->held > 0)
		me->held = all ? 0 : me->held - 1;
	entry_settle(m, tenant);
	pthread_mutex_unlock(&m->mu);
}

static bool moving_phase(const char *phase)
{
	return phase && (strcmp(phase, TENANT_MOVING_OUT) == 0 || strcmp(phase, TENANT_MOVING_IN) == 0);
}

/* The tenants cache's follower --------------------------------------------------------------- */

static void on_event(void *ud, size_t i, enum wev_type type, struct cobj *o)
{
	(void)i;
	struct moves *m = ud;
	bool moving = type != WEV_DELETED && moving_phase(cached_phase(m->tenants, o));
	pthread_mutex_lock(&m->mu);
	struct mentry *me = entry(m, o->name, moving);
	if (me) {
		me->phase = moving;
		me->sweep = false;
		entry_settle(m, o->name);
	}
	pthread_mutex_unlock(&m->mu);
}

static void on_reset(void *ud, size_t i)
{
	(void)i;
	struct moves *m = ud;
	pthread_mutex_lock(&m->mu);
	size_t it = 0;
	for (struct strmap_ent *e = strmap_next(&m->byname, NULL, &it); e; e = strmap_next(&m->byname, e, &it))
		((struct mentry *)e->val)->sweep = true;
	pthread_mutex_unlock(&m->mu);
}

static void on_listed(void *ud, size_t i)
{
	(void)i;
	struct moves *m = ud;
	pthread_mutex_lock(&m->mu);
	char **gone = NULL;
	size_t ngone = 0, it = 0;
	for (struct strmap_ent *e = strmap_next(&m->byname, NULL, &it); e; e = strmap_next(&m->byname, e, &it)) {
		struct mentry *me = e->val;
		if (me->sweep) {
			me->sweep = false;
			me->phase = false;
			gone = xrealloc(gone, (ngone + 1) * sizeof(*gone));
			gone[ngone++] = xstrdup(e->key);
		}
	}
	for (size_t j = 0; j < ngone; j++) {
		entry_settle(m, gone[j]);
		free(gone[j]);
	}
	free(gone);
	pthread_mutex_unlock(&m->mu);
}

static void on_synced(void *ud)
{
	struct moves *m = ud;
	atomic_store(&m->synced, true);
}

void moves_start(struct apiserver *s)
{
	struct served *tv = served_by_plural(s, "tenants");
	if (!tv || !tv->cache)
		return;
	struct moves *m = xcalloc(1, sizeof(*m));
	m->s = s;
	m->tenants = tv;
	pthread_mutex_init(&m->mu, NULL);
	strmap_init(&m->byname);
	static const struct follower_ops ops = { on_event, on_reset, on_listed, on_synced };
	if (!(m->f = follower_start(&m->tenants, 1, &ops, m)))
		abort();
	s->moves = m;
}

void moves_stop(struct apiserver *s)
{
	struct moves *m = s->moves;
	if (!m)
		return;
	follower_stop(m->f);
	strmap_release(&m->byname, free);
	pthread_mutex_destroy(&m->mu);
	free(m);
	s->moves = NULL;
}

/* The write fence ------------------------------------------------------------------------------ */

/* The tenant a write changes, or NULL when it changes no tenant's objects (or is no write). */
static const char *write_tenant(const struct req *q)
{
	const struct api_resource *r = q->res->r;
	const char *sub = q->path.subresource, *v = q->verb;
	if (r->ephemeral || r->metrics || strcmp(v, "get") == 0 || strcmp(v, "list") == 0 || strcmp(v, "watch") == 0)
		return NULL;
	if (sub && (strcmp(sub, "exec") == 0 || strcmp(sub, "attach") == 0 || strcmp(sub, "portforward") == 0 ||
		    strcmp(sub, "log") == 0 || strcmp(sub, "token") == 0)) /* a TokenRequest stores nothing */
		return NULL;
	if (r->scope == SCOPE_CLUSTER)
		return strcmp(r->plural, "tenants") == 0 ? q->path.name : NULL;
	return q->tenant;
}

/* Whether tenant's writes are refused: a memory fence or a moving phase. */
static bool fenced(struct moves *m, const char *tenant)
{
	if (atomic_load(&m->n) == 0 && atomic_load(&m->synced))
		return false;
	pthread_mutex_lock(&m->mu);
	bool blocked = entry(m, tenant, false) != NULL;
	pthread_mutex_unlock(&m->mu);
	if (blocked || atomic_load(&m->synced))
		return blocked;
	/* before the follower's first state (a server starting): the cache, else etcd */
	char *phase = NULL;
	int rc = lookup_phase(m->s, "tenants", "", tenant, &phase);
	blocked = rc == 0 && moving_phase(phase);
	free(phase);
	return blocked;
}

static void slot_leave(struct req *q)
{
	if (!q->move_slot)
		return;
	q->move_slot = false;
	if (my_slot >= 0)
		atomic_store(&wslots[my_slot].key, 0);
	else
		atomic_fetch_sub(&overflow, 1);
}

int move_write_enter(struct req *q)
{
	struct moves *m = q->s->moves;
	const char *t = m ? write_tenant(q) : NULL;
	if (!t || !*t || strcmp(t, TENANT_SYSTEM) == 0 || strcmp(t, TENANT_ALL) == 0)
		return 0; /* the system tenant never moves */
	if (my_slot == -1) {
		int i = atomic_fetch_add(&nwslots, 1);
		my_slot = i < WSLOTS ? i : -2;
	}
	if (my_slot >= 0) {
		atomic_fetch_add(&wslots[my_slot].seq, 1);
		atomic_store(&wslots[my_slot].key, write_key(q->s, t));
	} else {
		atomic_fetch_add(&overflow, 1);
	}
	q->move_slot = true;
	if (!fenced(m, t))
		return 0;
	slot_leave(q);
	if (q->reply)
		http_reply_header(q->reply, "X-Ursa-Tenant-Moving", t);
	reply_status(q, E_TOO_MANY, "tenant %s is moving between partitions; retry", t);
	return -1;
}

void move_write_leave(struct req *q)
{
	slot_leave(q);
}

/* Waits (DRAIN_MS at most) until no write of tenant that started before the fence is in flight. */
static bool drain(struct moves *m, const char *tenant)
{
	uint64_t k = write_key(m->s, tenant);
	int n = atomic_load(&nwslots);
	if (n > WSLOTS)
		n = WSLOTS;
	uint64_t *snap = xcalloc((size_t)n + 1, sizeof(*snap));
	bool *busy = xcalloc((size_t)n + 1, sizeof(*busy));
	for (int i = 0; i < n; i++) {
		snap[i] = atomic_load(&wslots[i].seq);
		busy[i] = atomic_load(&wslots[i].key) == k;
	}
	int64_t deadline = mono_ms() + DRAIN_MS;
	bool done = false;
	while (!done && mono_ms() < deadline) {
		done = atomic_load(&overflow) == 0;
		for (int i = 0; i < n && done; i++)
			if (busy[i] && atomic_load(&wslots[i].key) == k && atomic_load(&wslots[i].seq) == snap[i])
				done = false;
		if (!done)
			usleep(1000);
	}
	free(snap);
	free(busy);
	return done;
}

/* Calls fn(sv, builtin, ud) for each kind the server serves and each custom resource tenant sees,
 * until fn returns nonzero (returned). */
static int each_kind(struct apiserver *s, const char *tenant, int (*fn)(struct served *sv, bool builtin, void *ud),
		     void *ud)
{
	struct crd_view view = { 0 };
	crd_view_get(s, tenant, &view);
	int rc = 0;
	for (size_t i = 0; i < s->nres + view.n && !rc; i++)
		rc = i < s->nres ? fn(&s->res[i], true, ud) : fn(view.sv[i - s->nres], false, ud);
	crd_view_release(&view);
	return rc;
}

/* resourceVersions of a tenant that moved here -------------------------------------------------- */

enum rv_where req_resolve_rv(struct req *q, int64_t shown, int64_t *ret_rev)
{
	enum rv_where w = rv_resolve(shown, 0, 0, ret_rev);
	const char *t = q->tenant;
	if (w == RV_HERE || !t || !*t || strcmp(t, TENANT_ALL) == 0 || strcmp(t, TENANT_SYSTEM) == 0)
		return w;
	char *tkey = xasprintf("%s/tenants/%s", q->s->o.etcd_prefix, t);
	json_t *tobj = NULL;
	int64_t rev;
	if (tenant_read(q->s, tkey, &tobj, &rev) == 0) {
		json_t *ann = json_path(tobj, "metadata.annotations");
		const char *fs = json_str(ann, MOVED_FROM_ANNOTATION), *ts = json_str(ann, MOVED_TO_ANNOTATION);
		long long from, to;
		if (fs && ts && parse_int64(fs, &from) == 0 && parse_int64(ts, &to) == 0)
			w = rv_resolve(shown, from, to, ret_rev);
	}
	json_decref(tobj);
	free(tkey);
	return w;
}

struct last_change {
	const char *tenant;
	int64_t through, last;
};

/* each_kind: a kind a move carries (not the tenant object, not events), its cache at through */
static int kind_last_change(struct served *sv, bool builtin, void *ud)
{
	struct last_change *lc = ud;
	if (sv->r->scope == SCOPE_CLUSTER || (builtin && !backup_covers(sv->r)))
		return 0;
	if (!sv->cache || !wcache_ready(sv->cache))
		return E_UNAVAILABLE;
	int rc = wcache_wait_current(sv->cache, lc->through, CACHE_WAIT_MS);
	int64_t l = rc ? 0 : wcache_tenant_last_change(sv->cache, lc->tenant);
	if (l > lc->last)
		lc->last = l;
	return rc;
}

void handle_tenant_last_change(struct req *q, const char *tenant)
{
	struct apiserver *s = q->s;
	const char *ts = http_query(q->http, "through");
	long long through;
	if (!ts || parse_int64(ts, &through) < 0 || through <= 0) {
		reply_status(q, E_BAD_REQUEST, "through must be a positive etcd revision");
		return;
	}
	struct last_change lc = { tenant, through, 0 };
	int rc = each_kind(s, tenant, kind_last_change, &lc);
	int64_t last = lc.last;
	if (rc) {
		reply_status(q, E_UNAVAILABLE, "this server's caches did not reach revision %lld (%s); retry", through,
			     err_reason(rc));
		return;
	}
	if (last > through || last <= 0)
		last = through; /* a change after it (not the move's to judge): no tighter bound */
	json_t *res = json_pack("{s:s,s:s,s:s,s:I,s:I}", "kind", "TenantLastChange", "apiVersion", "ursa.io/v1", "tenant",
				tenant, "revision", (json_int_t)last, "partitionNumber", (json_int_t)rv_number());
	reply_json(q, 200, res);
	json_decref(res);
}

/* The steps -------------------------------------------------------------------------------- */

/* One step's call: the tenant, the move's id, the tenant object's key, the step's name, and the
 * revisions an activate or finish may bring (0: none). */
struct step_call {
	const char *tenant, *id, *tkey, *step;
	int64_t moved_from, moved_to;
};

static const char *move_id_of(const json_t *tobj)
{
	return json_str(json_path(tobj, "metadata.annotations"), MOVE_ANNOTATION);
}

static const char *phase_of(const json_t *tobj)
{
	return json_path_str(tobj, "status.phase") ?: "";
}

/* Writes tobj (changed) over the revision read: 0 with *ret_rev, or an etcd error. */
static int tenant_write(struct apiserver *s, const char *tkey, const json_t *tobj, int64_t rev, int64_t *ret_rev)
{
	struct buf v = BUF_INIT;
	store_dump(tobj, &v);
	int rc = etcd_update(s->etcd, tkey, v.ptr, v.len, rev, ret_rev, NULL);
	buf_release(&v);
	if (rc == 0)
		note_written(served_by_plural(s, "tenants"), *ret_rev);
	return rc;
}

static void set_move(json_t *tobj, const char *phase, const char *id)
{
	json_t *meta = json_obj_child(tobj, "metadata");
	if (id) {
		json_object_set_new(json_obj_child(meta, "annotations"), MOVE_ANNOTATION, json_string(id));
	} else {
		json_object_del(json_object_get(meta, "annotations"), MOVE_ANNOTATION);
		if (!json_object_size(json_object_get(meta, "annotations")))
			json_object_del(meta, "annotations");
	}
	if (phase)
		json_object_set_new(json_obj_child(tobj, "status"), "phase", json_string(phase));
}

/* The move's revisions on the target's tenant object (req_resolve_rv); to 0: from alone. */
static void set_moved_revisions(json_t *tobj, int64_t from, int64_t to)
{
	json_t *ann = json_obj_child(json_obj_child(tobj, "metadata"), "annotations");
	json_object_set_new(ann, MOVED_FROM_ANNOTATION, json_sprintf("%lld", (long long)from));
	if (to > 0)
		json_object_set_new(ann, MOVED_TO_ANNOTATION, json_sprintf("%lld", (long long)to));
}

static void reply_step(struct req *q, const char *tenant, const char *id, const char *step, const char *what,
		       int64_t v)
{
	json_t *res = json_pack("{s:s,s:s,s:s,s:s,s:s,s:I,s:I}", "kind", "TenantMoveStep", "apiVersion", "ursa.io/v1",
				"tenant", tenant, "move", id, "step", step, what, (json_int_t)v, "partitionNumber",
				(json_int_t)rv_number());
	reply_json(q, 200, res);
	json_decref(res);
}

static void reply_wrong_state(struct req *q, const char *tenant, const char *id, const json_t *tobj,
			      const char *want)
{
	const char *other = move_id_of(tobj);
	reply_status_details(q, E_CONFLICT, tenant, NULL, "tenants \"%s\" is %s%s%s%s, not %s under move %s", tenant,
			     *phase_of(tobj) ? phase_of(tobj) : "without a phase", other ? " (move " : "",
			     other ? other : "", other ? ")" : "", want, id);
}

/* A step's read of the tenant object into *ret (its reference from the read before dropped):
 * 0, else the reply is sent (404 when absent unless absent_ok, then E_NOT_FOUND is returned and
 * nothing sent). */
static int read_step(struct req *q, const char *tenant, const char *tkey, bool absent_ok, json_t **ret,
		     int64_t *ret_rev)
{
	json_decref(*ret);
	*ret = NULL;
	int rc = tenant_read(q->s, tkey, ret, ret_rev);
	if (rc == E_NOT_FOUND && !absent_ok)
		reply_status_details(q, rc, tenant, NULL, "tenants \"%s\" not found", tenant);
	else if (rc && rc != E_NOT_FOUND)
		reply_status(q, rc, "reading the tenant failed: %s", err_reason(rc));
	return rc;
}

#define CAS_TRIES 5

static void step_fence(struct req *q, const struct step_call *c)
{
	const char *tenant = c->tenant, *id = c->id, *tkey = c->tkey;
	struct moves *m = q->s->moves;
	json_t *tobj = NULL;
	int64_t rev, frev = 0;
	bool held = false;
	int rc = E_CONFLICT;
	for (int i = 0; i < CAS_TRIES && rc == E_CONFLICT; i++) {
		if ((rc = read_step(q, tenant, tkey, false, &tobj, &rev)) != 0)
			goto out;
		const char *other = move_id_of(tobj);
		if (strcmp(phase_of(tobj), TENANT_MOVING_OUT) == 0 && other && strcmp(other, id) == 0) {
			/* fenced before (a retried call, or another server of the partition): the phase
			 * fences; keep memory in step, and let this server's writes in flight land before
			 * answering (bounded, as a first fence's drain) */
			if (!held) {
				fence_hold(m, tenant);
				held = true;
				drain(m, tenant);
			}
			reply_step(q, tenant, id, "fence", "revision", rev);
			held = false; /* kept until unfence or drop */
			goto out;
		}
		if (strcmp(phase_of(tobj), "Active") != 0 || other) {
			reply_wrong_state(q, tenant, id, tobj, "Active");
			rc = E_CONFLICT;
			goto out;
		}
		if (!held) {
			fence_hold(m, tenant);
			held = true;
			if (!drain(m, tenant)) {
				reply_status(q, E_UNAVAILABLE, "tenant %s still has writes in flight after %d ms; the fence is lifted",
					     tenant, DRAIN_MS);
				rc = E_UNAVAILABLE;
				goto out;
			}
			rc = E_CONFLICT; /* read again: a write may have landed while it drained */
			continue;
		}
		json_t *nobj = json_deep_copy(tobj);
		set_move(nobj, TENANT_MOVING_OUT, id);
		rc = tenant_write(q->s, tkey, nobj, rev, &frev);
		json_decref(nobj);
	}
	if (rc) {
		reply_status(q, rc, "writing the tenant failed: %s", err_reason(rc));
		goto out;
	}
	log_info("tenant fenced for a move", "tenant=%s move=%s revision=%lld", tenant, id, (long long)frev);
	reply_step(q, tenant, id, "fence", "revision", frev);
	held = false; /* the memory fence stays until unfence or drop */
out:
	if (held)
		fence_release(m, tenant, false);
	json_decref(tobj);
}

/* unfence, activate, finish: one change of the tenant object from a state to another. An
 * activation given the move's revisions (from: the source's resourceVersion of the fence; to:
 * this partition's etcd revision holding that state) records them for req_resolve_rv. */
static void step_change(struct req *q, const struct step_call *c)
{
	const char *tenant = c->tenant, *id = c->id, *tkey = c->tkey, *step = c->step;
	int64_t moved_from = c->moved_from, moved_to = c->moved_to;
	bool unfence = strcmp(step, "unfence") == 0, activate = strcmp(step, "activate") == 0;
	json_t *tobj = NULL;
	int64_t rev, nrev = 0;
	int rc = E_CONFLICT;
	for (int i = 0; i < CAS_TRIES && rc == E_CONFLICT; i++) {
		if ((rc = read_step(q, tenant, tkey, false, &tobj, &rev)) != 0)
			goto out;
		const char *ph = phase_of(tobj), *other = move_id_of(tobj);
		bool ours = other && strcmp(other, id) == 0;
		const char *from = unfence ? TENANT_MOVING_OUT : activate ? TENANT_MOVING_IN : "Active";
		bool done = unfence ? strcmp(ph, "Active") == 0 && !other
			    : activate ? strcmp(ph, "Active") == 0 && ours
				       : strcmp(ph, "Active") == 0 && !other;
		if (done) {
			nrev = rev;
			rc = 0;
			break;
		}
		if (strcmp(ph, from) != 0 || !ours) {
			reply_wrong_state(q, tenant, id, tobj, from);
			rc = E_CONFLICT;
			goto out;
		}
		json_t *nobj = json_deep_copy(tobj);
		set_move(nobj, activate || unfence ? "Active" : NULL, activate ? id : NULL);
		if (moved_from > 0) /* activate: both; finish: a tighter from (handle_tenant_move checks) */
			set_moved_revisions(nobj, moved_from, moved_to > 0 ? rv_show(moved_to) : 0);
		rc = tenant_write(q->s, tkey, nobj, rev, &nrev);
		json_decref(nobj);
	}
	if (rc) {
		reply_status(q, rc, "writing the tenant failed: %s", err_reason(rc));
		goto out;
	}
	if (unfence)
		fence_release(q->s->moves, tenant, true);
	log_info("tenant move step", "tenant=%s move=%s step=%s revision=%lld", tenant, id, step, (long long)nrev);
	reply_step(q, tenant, id, step, "revision", nrev);
out:
	json_decref(tobj);
}

/* Deletes the keys in [start, end) (all of them when match is NULL, else those match accepts),
 * a transaction of deletes at a time; *count grows by the keys deleted. 0 or an etcd error. */
static int delete_range(struct apiserver *s, const char *start, const char *end,
			bool (*match)(const char *key, const char *tenant), const char *tenant, size_t *count)
{
	char *from = xstrdup(start);
	int rc = 0;
	for (;;) {
		struct etcd_range_result rr = { 0 };
		if ((rc = etcd_range(s->etcd, from, end, 0, DROP_PAGE, true, &rr)) != 0)
			break;
		struct etcd_op ops[ETCD_TXN_MAX_OPS];
		size_t nops = 0;
		for (size_t i = 0; i <= rr.n && !rc; i++) {
			if (i < rr.n && (!match || match(rr.kvs[i].key, tenant)))
				ops[nops++] = (struct etcd_op){ .key = rr.kvs[i].key, .del = true };
			if (nops && (nops == ETCD_TXN_MAX_OPS || i == rr.n)) {
				rc = etcd_write_all(s->etcd, ops, nops, NULL);
				if (!rc)
					*count += nops;
				nops = 0;
			}
		}
		bool more = rr.more && rr.n;
		if (more) { /* after the last key read */
			free(from); /* keys hold no NUL: nothing lies between key and key + "\x01" */
			from = xasprintf("%s\x01", rr.kvs[rr.n - 1].key);
		}
		etcd_range_result_release(&rr);
		if (rc || !more)
			break;
	}
	free(from);
	return rc;
}

/* A custom resource's key <prefix>/customresources/<g>/<p>/<tenant>/...: whether of tenant. */
static bool cr_key_of(const char *key, const char *tenant)
{
	const char *p = strstr(key, "/" CR_KEY_SEGMENT "/");
	if (!p)
		return false;
	p += sizeof(CR_KEY_SEGMENT) + 1;
	for (int seg = 0; seg < 2; seg++) { /* group, plural */
		p = strchr(p, '/');
		if (!p)
			return false;
		p++;
	}
	size_t n = strlen(tenant);
	return strncmp(p, tenant, n) == 0 && p[n] == '/';
}

/* release and drop: the tenant object annotated with id (or absent), the tenant's writes fenced
 * here (a hold the caller keeps, or drops with fence_release), this server's caches brought to
 * etcd's current revision (so every event of the tenant up to now reached its watchers), then
 * every plain watch of the tenant here ended. 0 with *ret_rev the tenant object's revision (0:
 * absent), or the reply is sent and nothing is held. */
/* each_kind: a kind holding the tenant's objects (or the tenant object), its cache at *rev */
static int kind_at(struct served *sv, bool builtin, void *ud)
{
	(void)builtin;
	const int64_t *rev = ud;
	if (!sv->cache || (sv->r->scope == SCOPE_CLUSTER && strcmp(sv->r->plural, "tenants") != 0) ||
	    !wcache_ready(sv->cache))
		return 0;
	return wcache_wait_current(sv->cache, *rev, CACHE_WAIT_MS);
}

static int release(struct req *q, const char *tenant, const char *id, const char *tkey, int64_t *ret_rev)
{
	struct apiserver *s = q->s;
	struct moves *m = s->moves;
	json_t *tobj = NULL;
	*ret_rev = 0;
	int rc = read_step(q, tenant, tkey, true, &tobj, ret_rev);
	if (rc == E_NOT_FOUND)
		rc = 0;
	else if (rc == 0 && strcmp(move_id_of(tobj) ?: "", id) != 0) {
		reply_wrong_state(q, tenant, id, tobj, "annotated");
		rc = E_CONFLICT;
	}
	json_decref(tobj);
	if (rc)
		return rc;
	fence_hold(m, tenant);
	int64_t cur = 0;
	if (!drain(m, tenant)) {
		reply_status(q, E_UNAVAILABLE, "tenant %s still has writes in flight after %d ms", tenant, DRAIN_MS);
		rc = E_UNAVAILABLE;
	} else if ((rc = etcd_current_revision(s->etcd, &cur)) != 0) {
		reply_status(q, rc, "reading etcd's revision failed: %s", err_reason(rc));
	} else if ((rc = each_kind(s, tenant, kind_at, &cur)) != 0) {
		reply_status(q, E_UNAVAILABLE, "this server's caches did not reach etcd's revision %lld (%s); retry",
			     (long long)cur, err_reason(rc));
	}
	if (rc) {
		fence_release(m, tenant, false);
		return rc;
	}
	watch_end_tenant(s, tenant, cur);
	return 0;
}

/* release: a drop's first part alone, for every server of the source but the one that drops: its
 * watchers of the tenant are done before the drop's deletes reach its caches. Its memory fence
 * stays until its own drop. */
static void step_release(struct req *q, const struct step_call *c)
{
	int64_t rev;
	if (release(q, c->tenant, c->id, c->tkey, &rev) == 0) {
		log_info("tenant's watches ended for a move", "tenant=%s move=%s", c->tenant, c->id);
		reply_step(q, c->tenant, c->id, "release", "revision", rev);
	}
}

static void step_drop(struct req *q, const struct step_call *c)
{
	const char *tenant = c->tenant, *id = c->id, *tkey = c->tkey;
	struct apiserver *s = q->s;
	struct moves *m = s->moves;
	int64_t rev;
	size_t count = 0;
	struct strmap seen;
	strmap_init(&seen);
	int rc = release(q, tenant, id, tkey, &rev);
	if (rc)
		goto out;
	/* the tenant's keys: every tenant-keyed kind's range, custom resources, the tenant last */
	for (size_t i = 0; i < s->nres && !rc; i++) {
		if (s->res[i].r->scope == SCOPE_CLUSTER)
			continue;
		char *start = xasprintf("%s%s/", s->res[i].prefix, tenant);
		bool created;
		strmap_put(&seen, start, &created); /* a kind served under two groups shares its keys */
		if (created) {
			char *end = etcd_prefix_end(start);
			rc = delete_range(s, start, end, NULL, NULL, &count);
			free(end);
		}
		free(start);
	}
	if (!rc) {
		char *start = xasprintf("%s/" CR_KEY_SEGMENT "/", s->o.etcd_prefix);
		char *end = etcd_prefix_end(start);
		rc = delete_range(s, start, end, cr_key_of, tenant, &count);
		free(start);
		free(end);
	}
	if (!rc) {
		rc = etcd_delete(s->etcd, tkey, 0, NULL, NULL);
		if (rc == 0)
			count++;
		else if (rc == E_NOT_FOUND)
			rc = 0;
	}
	fence_release(m, tenant, true);
	if (rc) {
		reply_status(q, rc, "deleting the tenant's keys failed after %zu (%s); drop again", count, err_reason(rc));
		goto out;
	}
	log_info("tenant dropped for a move", "tenant=%s move=%s deleted=%zu", tenant, id, count);
	reply_step(q, tenant, id, "drop", "deleted", (int64_t)count);
out:
	strmap_release(&seen, NULL);
}

void handle_tenant_move(struct req *q, const char *tenant)
{
	static const struct {
		const char *name;
		void (*fn)(struct req *q, const struct step_call *c);
		bool from, both; /* takes fromResourceVersion; with toRevision, both or neither */
	} steps[] = {
		{ "fence", step_fence, false, false },	{ "unfence", step_change, false, false },
		{ "activate", step_change, true, true }, { "finish", step_change, true, false },
		{ "drop", step_drop, false, false },	{ "release", step_release, false, false },
	};
	size_t len;
	const char *text = http_body(q->http, &len);
	struct buf err = BUF_INIT;
	json_t *doc = json_parse_limited(text, len, 4, &err);
	const char *id = json_str(doc, "move"), *step = json_str(doc, "step");
	json_t *from = json_object_get(doc, "fromResourceVersion"), *to = json_object_get(doc, "toRevision");
	size_t i = 0, n = sizeof(steps) / sizeof(steps[0]);
	while (step && i < n && strcmp(step, steps[i].name) != 0)
		i++;
	if (!q->s->moves) {
		reply_status(q, E_NOT_FOUND, "the server could not find the requested resource");
	} else if (!json_is_object(doc) || !id || !valid_dns1123_label(id) || !step || i == n) {
		reply_status(q, E_BAD_REQUEST,
			     "a move step is {\"move\": <the move's id, a DNS label>, \"step\": fence, unfence, activate, finish, release or drop}%s%s",
			     err.len ? ": " : "", buf_cstr(&err));
	} else if ((from && (!steps[i].from || !json_is_integer(from) || json_integer_value(from) <= 0)) ||
		   (to && (!steps[i].both || !json_is_integer(to) || json_integer_value(to) <= 0)) ||
		   (steps[i].both && !from != !to)) {
		reply_status(q, E_BAD_REQUEST,
			     "fromResourceVersion (the source's, of the fence) and toRevision (this etcd's) are positive "
			     "integers: both or neither of an activate step, fromResourceVersion alone of a finish");
	} else {
		char *tkey = xasprintf("%s/tenants/%s", q->s->o.etcd_prefix, tenant);
		const struct step_call c = { tenant, id, tkey, step, json_integer_value(from), json_integer_value(to) };
		steps[i].fn(q, &c);
		free(tkey);
	}
	buf_release(&err);
	json_decref(doc);
}
