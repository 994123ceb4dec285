/* ursa-region load: the cluster-loader2-style load through the front door with tenants' own
 * credentials (issue 21, phase 4).
 *
 * Writers: the first ceil(--tenants x --active-share) tenants are active; each signs in as user
 * "loader" of its tenant in group ursa:tenant-admins (a token signed in-process with the region's
 * signing key, as `ursactl kubeconfig` makes). Before the load, each such user must read its
 * tenant's `default` namespace three times in a row (at most --ready-wait s; the time it took is
 * load.json "tenants_ready"): a new tenant's RBAC may take a while to reach every API server. A
 * generator visits active tenants round robin (a
 * tenant is never visited while its previous batch runs, so one tenant's calls are ordered); a
 * visit makes one batch of calls, run by one of --workers threads at the batch's due time:
 *   - fewer than 3 live sets: create set k: namespace ld-<run>-(k mod --namespaces) if new (<run>
 *     is --run, by default the start time's low 20 bits in hex, so runs never share a name), ConfigMap
 *     cm-k, Secret sec-k, Service svc-k and Deployment d-k of R pods (R around --replicas);
 *   - else the oldest set's next step, once --step-seconds (of the schedule) have passed since
 *     its last: scale d-k up by R/2 + 1 and update cm-k; then scale d-k down to 1; then delete
 *     d-k (Background), svc-k, cm-k, sec-k;
 *   - else (the oldest is not ripe) a new set, up to 32 live, so that pods stay on schedule
 *     however few tenants are active; a tenant with 32 live sets and none ripe is skipped.
 * Due times are open loop: a batch that adds pods is due when the pace (--rate pods/s for
 * --duration s, then --burst-rate for --burst-seconds) reaches its first pod, whatever earlier
 * calls took. Writes are retried as client-go does (drv_write); every acknowledged write goes to
 * acked.jsonl (region.h) for `verify`; a write whose outcome stayed unknown is logged as op
 * "unknown" (verify does not judge that object). So is a create or update answered 409, or a
 * delete answered 404, on what the driver saw as the first attempt: libcurl sends a request again
 * on a fresh connection when its reused one dies before any answer (a gateway killed while the
 * request was in its hands), so that answer may be to the second copy of a write the first copy
 * made (found in a run: 14 deletes answered 404 within 5 s of a gateway's kill, their objects
 * gone as the deletes wanted, counted as lost by verify). load.json counts them
 * ("writes_ambiguous").
 * Readers: --read-rate gets and lists per second over the active tenants (a ConfigMap, a
 * namespace's pods, the tenant's Deployments), and --watches watches of tenants' ConfigMaps
 * (each 30 s long, then the next tenant's).
 * Observer (region/observe.c): one watch of every tenant's pods labelled ursa-region=load through
 * the gateway as the admin (tenant "all"), recording each pod's first sight and first Running
 * (pods.tsv), and any pod whose node changed (load.json "observer"). After the schedule, the load
 * waits (at most --wait s) until every pod seen runs or is gone and the live Deployments' replicas
 * all run.
 * Progress every 5 s; at the end load.json and "RESULT {json}". */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "region/driver.h"
#include "ursa/auth.h"
#include "ursa/base64.h"
#include "ursa/options.h"
#include "ursa/rbac.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define LIVE_TARGET 3 /* live sets a tenant keeps before it steps the oldest on */
#define MAX_LIVE 32   /* live sets at most: more than LIVE_TARGET while the oldest is not ripe */
#define MAX_WORKERS 256
#define MAX_READERS 8
#define MAX_WATCHES 1000
#define MAX_NS 8
#define MAX_OPS 6
#define LABEL_SEL_FMT "labelSelector=ursa-region%%3Dload" /* the load's objects, in a format */

enum opk {
	OP_NS,
	OP_CM,
	OP_SECRET,
	OP_SVC,
	OP_DEPLOY,
	OP_SCALE,
	OP_CM_UPDATE,
	OP_DEL_DEPLOY,
	OP_DEL_SVC,
	OP_DEL_CM,
	OP_DEL_SECRET
};

struct lset {
	int id, ns, replicas, stage, cm_gen;
	bool live;
	int64_t last_us; /* schedule time of its last step */
};

struct tstate {
	char *name;
	struct rest_client *rc;
	bool busy;
	int next_id;
	unsigned ns_made;
	struct lset sets[MAX_LIVE];
};

struct op {
	enum opk k;
	int id, ns, replicas, cm_gen;
};

struct batch {
	struct tstate *t;
	int nops;
	struct op ops[MAX_OPS];
	int64_t due_us;
	long long pods;
};

struct load {
	struct drv *d;
	struct tstate *t;
	long long nt;
	const char *run; /* the run's part of namespace names */
	int nns, mean_replicas;
	int64_t step_us; /* a set's steps are at least this far apart in schedule time */
	struct pace pace;
	long long total;
	int64_t start_us;
	int64_t cutoff_us; /* no batch is begun later than this after start_us (the schedule is cut) */
	bool cut;          /* under gen_lock: it was */
	atomic_bool stop, writers_done;
	/* generator */
	pthread_mutex_t gen_lock;
	long long cursor, scheduled;
	/* acked.jsonl */
	pthread_mutex_t ack_lock;
	FILE *acked;
	atomic_llong acks, unknown, batches, ops_failed, ambiguous;
	struct hist late; /* under gen_lock */
	/* reads */
	double read_rate;
	atomic_llong reads;
	int nwatches;
	atomic_llong watch_events;
	struct observer *obs;
};

/* ---- objects ---- */

static json_t *meta(const char *name, const char *ns)
{
	json_t *m = json_pack("{s:s, s:{s:s}}", "name", name, "labels", "ursa-region", "load");
	if (ns)
		json_object_set_new(m, "namespace", json_string(ns));
	return m;
}

static json_t *deploy_template(const char *dname)
{
	return json_pack("{s:{s:{s:s, s:s}}, s:{s:[{s:s, s:s, s:s}], s:[{s:s, s:s, s:{s:{s:s, s:s}}}], s:i}}",
			 "metadata", "labels", "app", dname, "ursa-region", "load", "spec", "tolerations", "key",
			 "ursa.io/hollow", "operator", "Exists", "effect", "NoSchedule", "containers", "name", "c",
			 "image", "pause", "resources", "requests", "cpu", "10m", "memory", "10Mi",
			 "terminationGracePeriodSeconds", 1);
}

static json_t *cm_data(const char *tenant, int id, int gen)
{
	char *set = xasprintf("%d", id), *g = xasprintf("%d", gen);
	char *payload = xasprintf("%s/cm-%d generation %d: %040d", tenant, id, gen, id * 7919 + gen);
	json_t *d = json_pack("{s:s, s:s, s:s}", "set", set, "gen", g, "payload", payload);
	free(set);
	free(g);
	free(payload);
	return d;
}

static json_t *secret_data(const char *tenant, int id)
{
	struct buf b = BUF_INIT;
	char *raw = xasprintf("secret of %s set %d", tenant, id);
	base64_encode(&b, raw, strlen(raw), 0);
	json_t *d = json_pack("{s:s}", "token", buf_cstr(&b));
	buf_release(&b);
	free(raw);
	return d;
}

/* ---- acknowledged writes ---- */

static void ack_log(struct load *L, const char *op, const char *kind, const char *tenant, const char *ns,
		    const char *name, const json_t *resp, json_t *content)
{
	json_t *m = json_object_get(resp, "metadata");
	const char *uid = json_string_value(json_object_get(m, "uid"));
	if (!uid)
		uid = json_string_value(json_object_get(json_object_get(resp, "details"), "uid"));
	struct ack a = {
		.op = (char *)op,
		.kind = (char *)kind,
		.tenant = (char *)tenant,
		.ns = (char *)(ns ? ns : ""),
		.name = (char *)name,
		.uid = (char *)uid,
		.rv = (char *)json_string_value(json_object_get(m, "resourceVersion")),
		.content = content,
	};
	struct buf b = BUF_INIT;
	ack_format(&b, &a);
	buf_addch(&b, '\n');
	pthread_mutex_lock(&L->ack_lock);
	if (L->acked)
		fwrite(b.ptr, 1, b.len, L->acked);
	pthread_mutex_unlock(&L->ack_lock);
	buf_release(&b);
	atomic_fetch_add(!strcmp(op, "unknown") ? &L->unknown : &L->acks, 1);
}

/* One write with its ack: create (POST to coll), update/patch (PUT/PATCH obj), delete (DELETE
 * obj). A create retried into 409 gets the object (our earlier attempt made it); a delete retried
 * into 404 counts as done. content is what verify checks (taken over). */
static bool do_write(struct load *L, struct tstate *t, const char *verb, const char *kind, const char *ns,
		     const char *name, const char *coll, const json_t *body, const char *ctype, json_t *content)
{
	char *obj = xasprintf("%s/%s", coll, name);
	const char *method = !strcmp(verb, "create")   ? "POST"
			     : !strcmp(verb, "update") ? "PUT"
			     : !strcmp(verb, "patch")  ? "PATCH"
						       : "DELETE";
	json_t *resp = NULL;
	int retried = 0;
	int st = drv_write(L->d, t->rc, verb, method, !strcmp(verb, "create") ? coll : obj, body, ctype, &resp,
			   &retried, NULL);
	bool ok = st >= 200 && st < 300;
	if (!ok && retried && st == 409 && !strcmp(verb, "create")) {
		json_decref(resp);
		resp = NULL;
		ok = drv_call(L->d, t->rc, "get", "GET", obj, NULL, NULL, &resp) == 200;
	}
	if (!ok && retried && st == 404 && !strcmp(verb, "delete"))
		ok = true;
	bool ambiguous = !ok && ((st == 409 && strcmp(verb, "delete") != 0) || (st == 404 && !strcmp(verb, "delete")));
	if (ok) {
		ack_log(L, !strcmp(verb, "delete") ? "delete" : "put", kind, t->name, ns, name, resp, content);
	} else if (ambiguous) {
		atomic_fetch_add(&L->ambiguous, 1);
		ack_log(L, "unknown", kind, t->name, ns, name, NULL, NULL);
		if (atomic_load(&L->ambiguous) <= 10)
			fprintf(stderr, "ursa-region: %s %s %s/%s/%s: status %d (maybe the answer to a copy libcurl "
				"sent again: outcome unknown)\n", verb, kind, t->name, ns ? ns : "", name, st);
	} else {
		atomic_fetch_add(&L->ops_failed, 1);
		/* a transport error or a 5xx after the retries: the write may or may not have happened */
		if (st < 100 || st >= 500 || st == 429)
			ack_log(L, "unknown", kind, t->name, ns, name, NULL, NULL);
		if (atomic_load(&L->ops_failed) <= 10)
			fprintf(stderr, "ursa-region: %s %s %s/%s/%s: status %d\n", verb, kind, t->name, ns ? ns : "",
				name, st);
	}
	json_decref(content);
	json_decref(resp);
	free(obj);
	return ok;
}

/* false if the op's write was not acknowledged */
static bool run_op(struct load *L, struct tstate *t, const struct op *o)
{
	bool ok = false;
	char ns[32], name[48], coll[256];
	snprintf(ns, sizeof(ns), "ld-%s-%d", L->run, o->ns);
	const char *tn = t->name;

	switch (o->k) {
	case OP_NS: {
		snprintf(coll, sizeof(coll), "/api/v1/tenants/%s/namespaces", tn);
		json_t *b = json_pack("{s:s, s:s, s:o}", "apiVersion", "v1", "kind", "Namespace", "metadata",
				      meta(ns, NULL));
		ok = do_write(L, t, "create", "namespaces", "", ns, coll, b, NULL, json_object());
		json_decref(b);
		break;
	}
	case OP_CM:
	case OP_CM_UPDATE: {
		snprintf(name, sizeof(name), "cm-%d", o->id);
		snprintf(coll, sizeof(coll), "/api/v1/tenants/%s/namespaces/%s/configmaps", tn, ns);
		json_t *data = cm_data(tn, o->id, o->cm_gen);
		json_t *b = json_pack("{s:s, s:s, s:o, s:O}", "apiVersion", "v1", "kind", "ConfigMap", "metadata",
				      meta(name, ns), "data", data);
		ok = do_write(L, t, o->k == OP_CM ? "create" : "update", "configmaps", ns, name, coll, b, NULL,
			      json_pack("{s:o}", "data", data));
		json_decref(b);
		break;
	}
	case OP_SECRET: {
		snprintf(name, sizeof(name), "sec-%d", o->id);
		snprintf(coll, sizeof(coll), "/api/v1/tenants/%s/namespaces/%s/secrets", tn, ns);
		json_t *data = secret_data(tn, o->id);
		json_t *b = json_pack("{s:s, s:s, s:o, s:s, s:O}", "apiVersion", "v1", "kind", "Secret", "metadata",
				      meta(name, ns), "type", "Opaque", "data", data);
		ok = do_write(L, t, "create", "secrets", ns, name, coll, b, NULL, json_pack("{s:o}", "data", data));
		json_decref(b);
		break;
	}
	case OP_SVC: {
		char app[48];
		snprintf(name, sizeof(name), "svc-%d", o->id);
		snprintf(app, sizeof(app), "d-%d", o->id);
		snprintf(coll, sizeof(coll), "/api/v1/tenants/%s/namespaces/%s/services", tn, ns);
		json_t *spec = json_pack("{s:{s:s}, s:[{s:i, s:i, s:s}]}", "selector", "app", app, "ports", "port", 80,
					 "targetPort", 8080, "protocol", "TCP");
		json_t *b = json_pack("{s:s, s:s, s:o, s:O}", "apiVersion", "v1", "kind", "Service", "metadata",
				      meta(name, ns), "spec", spec);
		ok = do_write(L, t, "create", "services", ns, name, coll, b, NULL, spec);
		json_decref(b);
		break;
	}
	case OP_DEPLOY:
	case OP_SCALE: {
		snprintf(name, sizeof(name), "d-%d", o->id);
		snprintf(coll, sizeof(coll), "/apis/apps/v1/tenants/%s/namespaces/%s/deployments", tn, ns);
		json_t *tpl = deploy_template(name);
		json_t *content = json_pack("{s:i, s:O}", "replicas", o->replicas, "template", tpl);
		json_t *b;
		if (o->k == OP_DEPLOY)
			b = json_pack("{s:s, s:s, s:o, s:{s:i, s:{s:{s:s}}, s:O}}", "apiVersion", "apps/v1", "kind",
				      "Deployment", "metadata", meta(name, ns), "spec", "replicas", o->replicas,
				      "selector", "matchLabels", "app", name, "template", tpl);
		else
			b = json_pack("{s:{s:i}}", "spec", "replicas", o->replicas);
		ok = do_write(L, t, o->k == OP_DEPLOY ? "create" : "patch", "deployments", ns, name, coll, b,
			      o->k == OP_DEPLOY ? NULL : "application/merge-patch+json", content);
		json_decref(b);
		json_decref(tpl);
		break;
	}
	case OP_DEL_DEPLOY:
	case OP_DEL_SVC:
	case OP_DEL_CM:
	case OP_DEL_SECRET: {
		const char *kind = o->k == OP_DEL_DEPLOY ? "deployments"
				   : o->k == OP_DEL_SVC	 ? "services"
				   : o->k == OP_DEL_CM	 ? "configmaps"
							 : "secrets";
		const char *pfx = o->k == OP_DEL_DEPLOY ? "d"
				  : o->k == OP_DEL_SVC	? "svc"
				  : o->k == OP_DEL_CM	? "cm"
							: "sec";
		snprintf(name, sizeof(name), "%s-%d", pfx, o->id);
		snprintf(coll, sizeof(coll), "%s/tenants/%s/namespaces/%s/%s",
			 o->k == OP_DEL_DEPLOY ? "/apis/apps/v1" : "/api/v1", tn, ns, kind);
		json_t *b = json_pack("{s:s, s:s, s:s}", "apiVersion", "v1", "kind", "DeleteOptions",
				      "propagationPolicy", "Background");
		ok = do_write(L, t, "delete", kind, ns, name, coll, b, NULL, NULL);
		json_decref(b);
		break;
	}
	}
	return ok;
}

/* ---- generator ---- */

static void add_op(struct batch *b, enum opk k, const struct lset *s)
{
	b->ops[b->nops++] = (struct op){.k = k, .id = s->id, .ns = s->ns, .replicas = s->replicas, .cm_gen = s->cm_gen};
}

/* The next step of tenant t at schedule time now_us into b (under gen_lock): a new set while it
 * has fewer than LIVE_TARGET, else the oldest set's next step once it is ripe (--step-seconds
 * after its last), else a new set (pods stay on schedule) up to MAX_LIVE. false when the tenant
 * has nothing to do now. */
static bool plan(struct load *L, struct tstate *t, long long tidx, int64_t now_us, struct batch *b)
{
	struct lset *free_slot = NULL, *oldest = NULL;
	int live = 0;

	b->t = t;
	b->nops = 0;
	b->pods = 0;
	for (int i = 0; i < MAX_LIVE; i++) {
		struct lset *s = &t->sets[i];
		if (!s->live) {
			if (!free_slot)
				free_slot = s;
			continue;
		}
		live++;
		if (!oldest || s->id < oldest->id)
			oldest = s;
	}
	bool ripe = oldest && now_us - oldest->last_us >= L->step_us;
	if (free_slot && (live < LIVE_TARGET || !ripe)) {
		struct lset *s = free_slot;
		s->id = t->next_id++;
		s->ns = s->id % L->nns;
		s->replicas = 1 + (int)((s->id * 7 + tidx) % (2 * L->mean_replicas - 1));
		s->stage = 0;
		s->cm_gen = 0;
		s->live = true;
		s->last_us = now_us;
		if (!(t->ns_made & (1u << s->ns))) {
			t->ns_made |= 1u << s->ns;
			add_op(b, OP_NS, s);
		}
		add_op(b, OP_CM, s);
		add_op(b, OP_SECRET, s);
		add_op(b, OP_SVC, s);
		add_op(b, OP_DEPLOY, s);
		b->pods = s->replicas;
		return true;
	}
	if (!ripe)
		return false;
	struct lset *s = oldest;
	s->last_us = now_us;
	switch (s->stage++) {
	case 0: {
		int up = s->replicas / 2 + 1;
		s->replicas += up;
		s->cm_gen++;
		add_op(b, OP_SCALE, s);
		add_op(b, OP_CM_UPDATE, s);
		b->pods = up;
		break;
	}
	case 1:
		s->replicas = 1;
		add_op(b, OP_SCALE, s);
		break;
	default:
		add_op(b, OP_DEL_DEPLOY, s);
		add_op(b, OP_DEL_SVC, s);
		add_op(b, OP_DEL_CM, s);
		add_op(b, OP_DEL_SECRET, s);
		s->live = false;
		break;
	}
	return true;
}

/* 1 and a batch, 0 when every tenant is busy, -1 when the schedule is done. */
static int gen_next(struct load *L, struct batch *b)
{
	int r = 0;
	pthread_mutex_lock(&L->gen_lock);
	if (L->scheduled >= L->total) {
		r = -1;
		goto out;
	}
	if (mono_us() - L->start_us > L->cutoff_us) {
		L->cut = true; /* a region that cannot take the rate: what is left is not issued */
		r = -1;
		goto out;
	}
	for (long long tries = 0; tries < L->nt; tries++) {
		long long idx = L->cursor++ % L->nt;
		struct tstate *t = &L->t[idx];
		int64_t due = pace_due_us(&L->pace, L->scheduled);
		if (t->busy || !plan(L, t, idx, due, b))
			continue;
		t->busy = true;
		b->due_us = due;
		L->scheduled += b->pods;
		r = 1;
		break;
	}
out:
	pthread_mutex_unlock(&L->gen_lock);
	return r;
}

static void *writer(void *arg)
{
	struct load *L = arg;
	struct batch b;

	while (!atomic_load(&L->stop)) {
		int r = gen_next(L, &b);
		if (r < 0)
			break;
		if (r == 0) {
			drv_sleep_until(mono_us() + 5000, &L->stop);
			continue;
		}
		drv_sleep_until(L->start_us + b.due_us, &L->stop);
		int64_t late = mono_us() - (L->start_us + b.due_us);
		unsigned ns_failed = 0;
		for (int i = 0; i < b.nops && !atomic_load(&L->stop); i++)
			if (!run_op(L, b.t, &b.ops[i]) && b.ops[i].k == OP_NS)
				ns_failed |= 1u << b.ops[i].ns;
		pthread_mutex_lock(&L->gen_lock);
		b.t->ns_made &= ~ns_failed; /* the next set there tries again */
		hist_add(&L->late, late);
		b.t->busy = false;
		pthread_mutex_unlock(&L->gen_lock);
		atomic_fetch_add(&L->batches, 1);
	}
	return NULL;
}

/* ---- reads ---- */

struct reader_arg {
	struct load *L;
	int k, n;
};

static void *reader(void *arg)
{
	struct reader_arg *ra = arg;
	struct load *L = ra->L;
	char path[320];

	if (L->read_rate <= 0)
		return NULL;
	for (long long j = ra->k; !atomic_load(&L->stop); j += ra->n) {
		drv_sleep_until(L->start_us + (int64_t)((double)j * 1e6 / L->read_rate), &L->stop);
		if (atomic_load(&L->stop))
			break;
		struct tstate *t = &L->t[j % L->nt];
		long long kind = (j / L->nt) % 3;
		if (kind == 0) {
			int id = -1, ns = 0;
			pthread_mutex_lock(&L->gen_lock);
			for (int i = 0; i < MAX_LIVE; i++)
				if (t->sets[i].live && t->sets[i].stage > 0) {
					id = t->sets[i].id;
					ns = t->sets[i].ns;
				}
			pthread_mutex_unlock(&L->gen_lock);
			if (id >= 0)
				snprintf(path, sizeof(path), "/api/v1/tenants/%s/namespaces/ld-%s-%d/configmaps/cm-%d",
					 t->name, L->run, ns, id);
			else
				snprintf(path, sizeof(path), "/api/v1/tenants/%s/namespaces/default", t->name);
			drv_call(L->d, t->rc, "get", "GET", path, NULL, NULL, NULL);
		} else if (kind == 1) {
			snprintf(path, sizeof(path), "/api/v1/tenants/%s/namespaces/ld-%s-%lld/pods?" LABEL_SEL_FMT,
				 t->name, L->run, (j / 3) % L->nns);
			drv_call(L->d, t->rc, "list", "GET", path, NULL, NULL, NULL);
		} else {
			snprintf(path, sizeof(path), "/apis/apps/v1/tenants/%s/deployments?limit=500", t->name);
			drv_call(L->d, t->rc, "list", "GET", path, NULL, NULL, NULL);
		}
		atomic_fetch_add(&L->reads, 1);
	}
	return NULL;
}

struct watch_ctx {
	struct load *L;
	const char *path;
	int64_t t_ms, t0_us;
	bool started;
};

static int watch_data(void *ud, const char *data, size_t len)
{
	struct watch_ctx *w = ud;
	if (!w->started) {
		w->started = true;
		drv_record(w->L->d, "watch-start", w->path, w->t_ms, mono_us() - w->t0_us, 200);
	}
	for (size_t i = 0; i < len; i++)
		if (data[i] == '\n')
			atomic_fetch_add(&w->L->watch_events, 1);
	return atomic_load(&w->L->stop) ? 1 : 0;
}

static void *watcher(void *arg)
{
	struct reader_arg *ra = arg;
	struct load *L = ra->L;

	for (long long round = 0; !atomic_load(&L->stop); round++) {
		struct tstate *t = &L->t[(ra->k + round * ra->n) % L->nt];
		char *path = xasprintf("/api/v1/tenants/%s/configmaps?watch=1&timeoutSeconds=30", t->name);
		struct watch_ctx w = {.L = L, .path = path, .t_ms = now_ms(), .t0_us = mono_us()};
		int st = rest_stream(t->rc, path, watch_data, &w, &L->stop);
		if (!w.started && !atomic_load(&L->stop))
			drv_record(L->d, "watch-start", path, w.t_ms, mono_us() - w.t0_us, st);
		free(path);
		if (st != 200 && !atomic_load(&L->stop))
			drv_sleep_until(mono_us() + 1000000, &L->stop);
	}
	return NULL;
}

/* The replicas of every live set: the pods that should run once the controllers caught up. */
static long long pods_wanted(struct load *L)
{
	long long n = 0;
	pthread_mutex_lock(&L->gen_lock);
	for (long long i = 0; i < L->nt; i++)
		for (int k = 0; k < MAX_LIVE; k++)
			if (L->t[i].sets[k].live)
				n += L->t[i].sets[k].replicas;
	pthread_mutex_unlock(&L->gen_lock);
	return n;
}

/* ---- progress ---- */

static void progress_line(struct load *L)
{
	double mut, ro, s = (double)(mono_us() - L->start_us) / 1e6;
	struct obs_stats os;
	drv_p99(L->d, &mut, &ro);
	observer_stats(L->obs, &os);
	int64_t p50 = hist_quantile(&os.startup, 0.5), p99 = hist_quantile(&os.startup, 0.99);
	pthread_mutex_lock(&L->gen_lock);
	long long sched = L->scheduled;
	int64_t late99 = hist_quantile(&L->late, 0.99);
	pthread_mutex_unlock(&L->gen_lock);
	printf("load: %.0f s: pods scheduled %lld/%lld, created %lld, running %lld; startup p50 %.0f ms p99 %.0f ms; "
	       "API p99 mutating %.0f ms, read %.0f ms; calls %lld, errors %lld, 429s %lld, retries %lld; "
	       "writes acked %lld; late p99 %.0f ms\n",
	       s, sched, L->total, os.seen, os.running, (double)p50 / 1000, (double)p99 / 1000, mut, ro,
	       atomic_load(&L->d->ncalls), atomic_load(&L->d->nerrors), atomic_load(&L->d->n429),
	       atomic_load(&L->d->nretries), atomic_load(&L->acks), (double)late99 / 1000);
	fflush(stdout);
}

static void *progress(void *arg)
{
	struct load *L = arg;
	int64_t next = mono_us() + 5000000;
	while (!atomic_load(&L->stop)) {
		drv_sleep_until(next, &L->stop);
		if (atomic_load(&L->stop))
			break;
		next += 5000000;
		progress_line(L);
	}
	return NULL;
}

/* ---- before the load: each active tenant's user may act ---- */

/* A tenant's user is ready once three GETs in a row of its `default` namespace with its own token
 * answer 200 (a new tenant's RBAC can take a while to reach every API server: those 403s would
 * otherwise count against the load). */
struct ready_job {
	struct load *L;
	int64_t t0_us, deadline_ms;
	atomic_llong next, ready, refused; /* refused: answers other than 200 (not in calls.tsv) */
	pthread_mutex_t lock;
	struct hist h; /* µs from the start of the wait to ready */
};

static void *ready_worker(void *arg)
{
	struct ready_job *j = arg;
	struct load *L = j->L;
	for (;;) {
		long long i = atomic_fetch_add(&j->next, 1);
		if (i >= L->nt)
			return NULL;
		char *path = xasprintf("/api/v1/tenants/%s/namespaces/default", L->t[i].name);
		for (int ok = 0; ok < 3 && !atomic_load(&L->stop);) {
			int st = rest_do(L->t[i].rc, "GET", path, NULL, NULL, NULL);
			ok = st == 200 ? ok + 1 : 0;
			if (st != 200)
				atomic_fetch_add(&j->refused, 1);
			if (ok == 3) {
				atomic_fetch_add(&j->ready, 1);
				pthread_mutex_lock(&j->lock);
				hist_add(&j->h, mono_us() - j->t0_us);
				pthread_mutex_unlock(&j->lock);
			} else if (mono_ms() >= j->deadline_ms) {
				fprintf(stderr, "ursa-region: tenant %s: its user cannot read its default namespace\n",
					L->t[i].name);
				break;
			} else if (ok == 0) {
				drv_sleep_until(mono_us() + 250000, &L->stop);
			}
		}
		free(path);
	}
}

/* ---- SIGINT / SIGTERM: stop early, still writing what was measured ---- */

static atomic_bool *g_stop;

static void on_signal(int sig)
{
	(void)sig;
	if (g_stop)
		atomic_store(g_stop, true);
}

/* ---- results ---- */

static json_t *hist_json(const struct hist *h, double scale)
{
	return json_pack("{s:I, s:f, s:f, s:f, s:f}", "count", (json_int_t)h->n, "p50_ms",
			 (double)hist_quantile(h, 0.5) / scale, "p90_ms", (double)hist_quantile(h, 0.9) / scale,
			 "p99_ms", (double)hist_quantile(h, 0.99) / scale, "max_ms", (double)h->max / scale);
}

int region_load_main(int argc, char **argv)
{
	const char *env = NULL, *out = NULL, *prefix = "t";
	long long duration = 600, rate = 100, burst_rate = 1000, burst_s = 10, tenants = -1, workers = 32, replicas = 5,
		  nns = 2, step_s = 10, ready_wait = 120, read_rate = -1, readers = 4, watches = -1, wait_s = 120,
		  overrun = 120;
	const char *share_s = "0.1", *run = NULL;
	const struct opt opts[] = {
		{"env", OPT_STRING, &env, "region.env of the region (required)"},
		{"out", OPT_STRING, &out, "directory for calls.tsv, pods.tsv, acked.jsonl, load.json (required)"},
		{"prefix", OPT_STRING, &prefix, "tenants are <prefix>-00001, ... (as `tenants` made them)"},
		{"run", OPT_STRING, &run, "the run's name in namespace names ld-<run>-<k> (a DNS label part)"},
		{"tenants", OPT_INT, &tenants, "tenants of the region (default: TENANTS of region.env)"},
		{"active-share", OPT_STRING, &share_s, "share of the tenants that write (0..1)"},
		{"duration", OPT_INT, &duration, "seconds at --rate"},
		{"rate", OPT_INT, &rate, "pods per second (open loop)"},
		{"burst-rate", OPT_INT, &burst_rate, "pods per second of the burst after --duration"},
		{"burst-seconds", OPT_INT, &burst_s, "seconds of the burst (0: none)"},
		{"replicas", OPT_INT, &replicas, "mean replicas of a Deployment"},
		{"namespaces", OPT_INT, &nns, "namespaces each active tenant creates"},
		{"step-seconds", OPT_INT, &step_s, "seconds (of the schedule) between a set's steps"},
		{"workers", OPT_INT, &workers, "writer threads (batches in flight)"},
		{"read-rate", OPT_INT, &read_rate, "gets and lists per second (default 2 per active tenant, <= 200)"},
		{"readers", OPT_INT, &readers, "reader threads"},
		{"watches", OPT_INT, &watches, "concurrent ConfigMap watches (default: active tenants, <= 50)"},
		{"wait", OPT_INT, &wait_s, "seconds to wait for pods to run after the schedule"},
		{"overrun", OPT_INT, &overrun,
		 "seconds the schedule may run late: no batch begins after duration + burst + this (the rest is "
		 "reported as not issued)"},
		{"ready-wait", OPT_INT, &ready_wait,
		 "seconds to wait, before the load, for tenants' users to be let in"},
	};
	if (opts_parse("ursa-region load", "The region's load through the front door.", opts,
		       (int)(sizeof(opts) / sizeof(opts[0])), argc, argv) < 0)
		return 2;
	char *end;
	double share = strtod(share_s, &end);
	if (*end || end == share_s || !(share > 0 && share <= 1)) {
		fprintf(stderr, "ursa-region load: --active-share must be in (0, 1]\n");
		return 2;
	}
	if (!out) {
		fprintf(stderr, "ursa-region load: --out is required\n");
		return 2;
	}
	if (run && (!*run || strlen(run) > 20 || strspn(run, "abcdefghijklmnopqrstuvwxyz0123456789") != strlen(run))) {
		fprintf(stderr, "ursa-region load: --run must be 1 to 20 of a-z and 0-9\n");
		return 2;
	}
	mkdir(out, 0755);
	static struct drv d;
	if (drv_open(&d, "ursa-region load", env, out) < 0)
		return 2;
	if (tenants < 0)
		tenants = d.env.tenants;
	long long nt = (long long)ceil((double)tenants * share);
	if (tenants < 1 || nt < 1 || nt > 200000 || duration < 0 || duration > 86400 || rate < 1 || rate > 100000 ||
	    burst_rate < 0 || burst_rate > 100000 || burst_s < 0 || burst_s > 3600 || replicas < 1 || replicas > 1000 ||
	    nns < 1 || nns > MAX_NS || step_s < 0 || step_s > 3600 || workers < 1 || workers > MAX_WORKERS ||
	    readers < 1 || readers > MAX_READERS || read_rate > 100000 || watches > MAX_WATCHES || wait_s < 0 ||
	    wait_s > 3600 || ready_wait < 0 || ready_wait > 3600 || overrun < 0 || overrun > 86400 || !d.env.signing_key) {
		fprintf(stderr,
			"ursa-region load: need --tenants >= 1 (or TENANTS in region.env) and SIGNING_KEY in "
			"region.env; --rate 1..100000, --duration 0..86400, --burst-rate 0..100000, --burst-seconds "
			"0..3600, --replicas 1..1000, --namespaces 1..%d, --step-seconds 0..3600, --workers 1..%d, "
			"--readers 1..%d, "
			"--watches <= %d, --wait 0..3600, --overrun 0..86400\n",
			MAX_NS, MAX_WORKERS, MAX_READERS, MAX_WATCHES);
		drv_close(&d);
		return 2;
	}
	if (read_rate < 0)
		read_rate = nt * 2 < 200 ? nt * 2 : 200;
	if (watches < 0)
		watches = nt < 50 ? nt : 50;
	drv_raise_nofile();

	static struct load L;
	L.d = &d;
	L.nt = nt;
	char runbuf[16];
	snprintf(runbuf, sizeof(runbuf), "%lx", (unsigned long)(time(NULL) & 0xfffff));
	L.run = run ? run : runbuf;
	L.nns = (int)nns;
	L.mean_replicas = (int)replicas;
	L.step_us = step_s * 1000000;
	L.pace = (struct pace){.rate = (double)rate,
			       .duration_s = (double)duration,
			       .burst_rate = (double)burst_rate,
			       .burst_s = (double)burst_s};
	L.total = pace_total(&L.pace);
	L.cutoff_us = (duration + burst_s + overrun) * 1000000;
	L.read_rate = (double)read_rate;
	L.nwatches = (int)watches;
	pthread_mutex_init(&L.gen_lock, NULL);
	pthread_mutex_init(&L.ack_lock, NULL);
	char *acked_path = xasprintf("%s/acked.jsonl", out);
	L.acked = fopen(acked_path, "w");
	free(acked_path);
	int rc = 1;
	struct jwt_signer *signer = NULL;
	char *err = NULL;
	if (!L.acked) {
		fprintf(stderr, "ursa-region load: cannot write %s/acked.jsonl: %s\n", out, strerror(errno));
		goto out;
	}
	if (jwt_signer_load(d.env.signing_key, &signer, &err) < 0) {
		fprintf(stderr, "ursa-region load: signing key: %s\n", err);
		free(err);
		goto out;
	}
	/* the active tenants' users: admins of their tenant, as `ursactl kubeconfig` makes them */
	L.t = xcalloc((size_t)nt, sizeof(*L.t));
	for (long long i = 0; i < nt; i++) {
		L.t[i].name = region_tenant_name(prefix, i + 1);
		char *tok = region_user_token(signer, L.t[i].name, &err);
		if (!tok) {
			fprintf(stderr, "ursa-region load: signing a token: %s\n", err);
			free(err);
			goto out;
		}
		L.t[i].rc = drv_client(&d, tok);
		free(tok);
	}
	printf("load: %lld active tenants of %lld, %lld pods scheduled (%lld/s for %lld s, then %lld/s for %lld s), "
	       "%lld workers, %lld reads/s, %lld watches\n",
	       nt, tenants, L.total, rate, duration, burst_rate, burst_s, workers, read_rate, watches);
	fflush(stdout);

	g_stop = &L.stop;
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* every active tenant's user let in first */
	static struct ready_job rj;
	rj.L = &L;
	rj.t0_us = mono_us();
	rj.deadline_ms = mono_ms() + ready_wait * 1000;
	pthread_mutex_init(&rj.lock, NULL);
	{
		pthread_t rt[MAX_WORKERS];
		for (long long k = 0; k < workers; k++)
			pthread_create(&rt[k], NULL, ready_worker, &rj);
		for (long long k = 0; k < workers; k++)
			pthread_join(rt[k], NULL);
	}
	double ready_s = (double)(mono_us() - rj.t0_us) / 1e6;
	printf("load: %lld of %lld tenants' users let in after %.1f s (p50 %.1f s, max %.1f s; %lld refusals)\n",
	       atomic_load(&rj.ready), nt, ready_s, (double)hist_quantile(&rj.h, 0.5) / 1e6, (double)rj.h.max / 1e6,
	       atomic_load(&rj.refused));
	fflush(stdout);
	/* the observer first, so it sees every pod from its creation */
	pthread_t prog, wr[MAX_WORKERS], rd[MAX_READERS], *wt = xcalloc((size_t)watches + 1, sizeof(pthread_t));
	struct reader_arg rargs[MAX_READERS], *wargs = xcalloc((size_t)watches + 1, sizeof(*wargs));
	L.obs = observer_start(&d, &L.stop);
	usleep(300 * 1000); /* its watch open */
	L.start_us = mono_us();
	int64_t wall0 = now_ms();
	pthread_create(&prog, NULL, progress, &L);
	for (long long k = 0; k < readers; k++) {
		rargs[k] = (struct reader_arg){.L = &L, .k = (int)k, .n = (int)readers};
		pthread_create(&rd[k], NULL, reader, &rargs[k]);
	}
	for (long long k = 0; k < watches; k++) {
		wargs[k] = (struct reader_arg){.L = &L, .k = (int)k, .n = (int)watches};
		pthread_create(&wt[k], NULL, watcher, &wargs[k]);
	}
	for (long long k = 0; k < workers; k++)
		pthread_create(&wr[k], NULL, writer, &L);
	for (long long k = 0; k < workers; k++)
		pthread_join(wr[k], NULL);
	double write_s = (double)(mono_us() - L.start_us) / 1e6;
	long long wanted = pods_wanted(&L);
	if (L.cut)
		printf("load: schedule cut after %.1f s: %lld of %lld pods not issued (the region did not take the rate)\n",
		       write_s, L.total - L.scheduled, L.total);
	printf("load: schedule done in %.1f s; waiting up to %lld s for the %lld pods of the live Deployments to run\n",
	       write_s, wait_s, wanted);
	fflush(stdout);
	int64_t deadline = mono_ms() + wait_s * 1000;
	struct obs_stats os;
	observer_stats(L.obs, &os);
	while ((os.pending > 0 || os.live < wanted) && mono_ms() < deadline && !atomic_load(&L.stop)) {
		drv_sleep_until(mono_us() + 1000000, NULL);
		observer_stats(L.obs, &os);
	}
	long long pending = os.pending, live = os.live;
	bool interrupted = atomic_load(&L.stop);
	atomic_store(&L.stop, true);
	pthread_join(prog, NULL);
	for (long long k = 0; k < readers; k++)
		pthread_join(rd[k], NULL);
	for (long long k = 0; k < watches; k++)
		pthread_join(wt[k], NULL);
	observer_join(L.obs);
	free(wt);
	free(wargs);
	progress_line(&L);

	double total_s = (double)(mono_us() - L.start_us) / 1e6;
	pthread_mutex_lock(&L.ack_lock);
	fclose(L.acked);
	L.acked = NULL;
	pthread_mutex_unlock(&L.ack_lock);
	observer_write_tsv(L.obs, out);
	observer_stats(L.obs, &os);
	json_t *settings = json_pack(
		"{s:s, s:s, s:I, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "prefix", prefix,
		"run", L.run, "tenants", (json_int_t)tenants, "active_share", share, "active_tenants", (json_int_t)nt,
		"duration_s", (json_int_t)duration, "rate", (json_int_t)rate, "burst_rate", (json_int_t)burst_rate,
		"burst_seconds", (json_int_t)burst_s, "replicas", (json_int_t)replicas, "namespaces", (json_int_t)nns,
		"step_seconds", (json_int_t)step_s, "workers", (json_int_t)workers, "read_rate", (json_int_t)read_rate,
		"watches", (json_int_t)watches, "wait_s", (json_int_t)wait_s);
	long long seen = os.seen, running = os.running;
	double achieved = write_s > 0 ? (double)L.scheduled / write_s : 0;
	json_t *res = json_pack(
		"{s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:I, "
		"s:o, s:o, s:o, "
		"s:o, s:{s:I, s:I, s:o, s:I}}",
		"settings", settings, "start_ms", (json_int_t)wall0, "end_ms", (json_int_t)now_ms(), "pods_scheduled",
		(json_int_t)L.scheduled, "pods_seen", (json_int_t)seen, "pods_running", (json_int_t)running,
		"pods_pending_at_end", (json_int_t)pending, "pods_wanted_at_end", (json_int_t)wanted,
		"pods_live_at_end", (json_int_t)live, "batches", (json_int_t)atomic_load(&L.batches), "writes_acked",
		(json_int_t)atomic_load(&L.acks), "writes_unknown", (json_int_t)atomic_load(&L.unknown),
		"writes_failed", (json_int_t)atomic_load(&L.ops_failed), "calls", (json_int_t)atomic_load(&d.ncalls),
		"errors", (json_int_t)atomic_load(&d.nerrors), "status_429", (json_int_t)atomic_load(&d.n429),
		"write_seconds", write_s, "pod_rate_achieved", achieved, "total_seconds", total_s, "retries",
		(json_int_t)atomic_load(&d.nretries), "pod_startup", hist_json(&os.startup, 1000.0), "schedule_late",
		hist_json(&L.late, 1000.0), "api", drv_stats_json(&d), "reads",
		json_pack("{s:I, s:I}", "calls", (json_int_t)atomic_load(&L.reads), "watch_events",
			  (json_int_t)atomic_load(&L.watch_events)),
		"observer", "node_changes", (json_int_t)os.node_changes, "relists", (json_int_t)os.relists, "examples",
		observer_examples(L.obs), "pods", (json_int_t)seen);
	json_object_set_new(res, "interrupted", json_boolean(interrupted));
	json_object_set_new(res, "schedule_cut", json_boolean(L.cut));
	json_object_set_new(res, "writes_ambiguous", json_integer(atomic_load(&L.ambiguous)));
	json_object_set_new(res, "pods_not_issued", json_integer(L.total - L.scheduled));
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	json_object_set_new(res, "driver",
			    json_pack("{s:f, s:I}", "cpu_s",
				      (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
					      (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6,
				      "max_rss_kib", (json_int_t)ru.ru_maxrss));
	json_object_set_new(res, "tenants_ready",
			    json_pack("{s:I, s:I, s:I, s:f, s:o}", "ready", (json_int_t)atomic_load(&rj.ready),
				      "not_ready", (json_int_t)(nt - atomic_load(&rj.ready)), "refusals",
				      (json_int_t)atomic_load(&rj.refused), "seconds", ready_s, "after",
				      hist_json(&rj.h, 1000.0)));
	char *text = json_dumps(res, JSON_INDENT(1) | JSON_SORT_KEYS);
	drv_write_file(out, "load.json", text, strlen(text));
	free(text);
	json_t *line = json_pack("{s:s, s:I, s:I, s:I, s:f, s:f, s:f, s:I, s:I, s:I}", "phase", "load",
				 "pods_scheduled", (json_int_t)L.scheduled, "pods_seen", (json_int_t)seen,
				 "pods_running", (json_int_t)running, "pod_rate_achieved", achieved, "startup_p50_ms",
				 (double)hist_quantile(&os.startup, 0.5) / 1000.0, "startup_p99_ms",
				 (double)hist_quantile(&os.startup, 0.99) / 1000.0, "writes_acked",
				 (json_int_t)atomic_load(&L.acks), "errors", (json_int_t)atomic_load(&d.nerrors),
				 "node_changes", (json_int_t)os.node_changes);
	text = json_dumps(line, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(line);
	printf("RESULT %s\n", text);
	fflush(stdout);
	free(text);
	json_decref(res);
	rc = 0;
out:
	if (L.acked)
		fclose(L.acked);
	for (long long i = 0; L.t && i < nt; i++) {
		free(L.t[i].name);
		rest_free(L.t[i].rc);
	}
	free(L.t);
	jwt_signer_free(signer);
	observer_free(L.obs);
	drv_close(&d);
	return rc;
}
