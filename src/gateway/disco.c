/* Discovery per tenant at the gateway: /api, /apis, /apis/<g>[/<v>] as the caller's tenant's
 * partition answers them (its built-in kinds plus the tenant's and the system tenant's custom
 * resources) with what the resource managers serve (nodes) merged in.
 *
 * Every request asks the tenant's partition, conditionally: the gateway remembers, per tenant and
 * document, the entity tag the partition last sent, and a 304 costs the partition no document
 * and the gateway no parsing. The merged document is cached by what it was built from (the
 * partition, its entity tag for the tenant's document, the resource managers' tags), not by
 * tenant: tenants whose documents are the same (all those without custom resources of their own)
 * share one entry. The resource managers' documents are the same for every caller; they are
 * asked at most once per fresh_ms. Entries are bounded (DISCO_MAX_ENTRIES, DISCO_MAX_BYTES) and
 * the least recently used goes first. */
#include <stdlib.h>
#include <string.h>
#include "gw.h"
#include "ursa/apidisc.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/lru.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define MAX_TENANT_RECS 65536 /* tenant x document -> last entity tag; reset when full */
#define MAX_RM_DOCS 4096      /* resource manager x document; reset when full */
#define FALLBACK_LOG_US (10 * 1000000LL)

/* --- the pure part ------------------------------------------------------------------------------ */

/* Adds to dst (array of objects keyed by "name") the entries of src it lacks. */
static void union_by_name(json_t *dst, const json_t *src)
{
	struct strmap have;
	strmap_init(&have);
	size_t i;
	json_t *v;
	json_array_foreach (dst, i, v) {
		const char *name = json_str(v, "name");
		if (name)
			strmap_put(&have, name, NULL);
	}
	json_array_foreach ((json_t *)src, i, v) {
		const char *name = json_str(v, "name");
		bool created = false;
		if (name)
			strmap_put(&have, name, &created);
		if (created)
			json_array_append(dst, v);
	}
	strmap_release(&have, NULL);
}

void disco_merge(json_t *dst, const json_t *src, int form)
{
	enum apidisc_form f = (enum apidisc_form)form;
	if (!json_is_object(dst) || !json_is_object(src))
		return;
	if (f != APIDISC_LEGACY) {
		apidisc_merge(dst, src);
		return;
	}
	const char *kind = json_str(dst, "kind");
	const char *key = !kind ? NULL : strcmp(kind, "APIResourceList") == 0 ? "resources"
				     : strcmp(kind, "APIGroupList") == 0  ? "groups"
									  : NULL;
	if (key && json_is_array(json_object_get(src, key)) && json_is_array(json_object_get(dst, key)))
		union_by_name(json_object_get(dst, key), json_object_get(src, key));
}

/* --- the caches ------------------------------------------------------------------------------------ */

struct tenant_rec_d {
	char *pid, *etag;
};

enum rm_state { RM_DOC, RM_ABSENT, RM_OTHER_FORM };
struct rm_doc {
	enum rm_state st;
	char *etag;
	struct buf body;
	int64_t checked_us;
};

struct merged {
	struct buf body;
	char *etag;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct strmap tenants, rmdocs;
static struct lru entries; /* merged documents */
static bool inited;
static int64_t last_fallback_log;
static struct disco_stats stats;

static void merged_free(void *v);

static void init_locked(void)
{
	if (inited)
		return;
	strmap_init(&tenants);
	strmap_init(&rmdocs);
	lru_init(&entries, DISCO_MAX_ENTRIES, DISCO_MAX_BYTES, merged_free);
	inited = true;
}

static void tenant_rec_d_free(void *v)
{
	struct tenant_rec_d *t = v;
	if (!t)
		return;
	free(t->pid);
	free(t->etag);
	free(t);
}

static void rm_doc_free(void *v)
{
	struct rm_doc *d = v;
	if (!d)
		return;
	free(d->etag);
	buf_release(&d->body);
	free(d);
}

static void merged_free(void *v)
{
	struct merged *m = v;
	if (!m)
		return;
	buf_release(&m->body);
	free(m->etag);
	free(m);
}

void disco_cache_clear(void)
{
	pthread_mutex_lock(&lock);
	if (inited) {
		strmap_release(&tenants, tenant_rec_d_free);
		strmap_release(&rmdocs, rm_doc_free);
		lru_release(&entries);
		inited = false;
	}
	memset(&stats, 0, sizeof(stats));
	pthread_mutex_unlock(&lock);
}

void disco_stats_get(struct disco_stats *ret)
{
	pthread_mutex_lock(&lock);
	*ret = stats;
	ret->entries = inited ? entries.n : 0;
	ret->bytes = inited ? entries.bytes : 0;
	ret->evictions = inited ? (long)entries.evictions : 0;
	pthread_mutex_unlock(&lock);
}

static size_t merged_size(const struct merged *m)
{
	return m->body.len + strlen(m->etag) + 64;
}

static char *own_etag(const struct buf *body)
{
	struct buf t = BUF_INIT;
	apidisc_etag(body->ptr ? body->ptr : "", body->len, &t);
	return buf_detach(&t, NULL);
}

/* A resource manager's document (copies into *ret under the lock), asked for when older than
 * fresh_ms. False when it did not answer and nothing is known of it. */
static bool rm_get(const struct disco_fetcher *f, struct partition *rm, const char *path, int form,
		   struct rm_doc *ret)
{
	char *key = xasprintf("%s\n%d\n%s", rm->id, form, path);
	int64_t now = mono_us();
	char *inm = NULL;
	pthread_mutex_lock(&lock);
	init_locked();
	struct strmap_ent *e = strmap_get(&rmdocs, key);
	struct rm_doc *d = e ? e->val : NULL;
	bool fresh = d && now - d->checked_us < (int64_t)f->fresh_ms * 1000;
	if (d && !fresh && d->st == RM_DOC)
		inm = xstrdup(d->etag);
	pthread_mutex_unlock(&lock);
	bool ok = true;
	if (!fresh) {
		struct upstream_resp r = { 0 };
		int err = f->fetch(f->ud, rm, path, form, inm, &r);
		pthread_mutex_lock(&lock);
		init_locked();
		stats.rm_fetches++;
		e = strmap_get(&rmdocs, key);
		d = e ? e->val : NULL;
		if (err) {
			ok = d != NULL;
		} else if (r.status == 304 && d && d->st == RM_DOC && inm && strcmp(d->etag, inm) == 0) {
			d->checked_us = now;
		} else {
			if (!d) {
				if (rmdocs.n >= MAX_RM_DOCS) {
					strmap_release(&rmdocs, rm_doc_free);
					strmap_init(&rmdocs);
				}
				d = xcalloc(1, sizeof(*d));
				strmap_put(&rmdocs, key, NULL)->val = d;
			}
			free(d->etag);
			d->etag = NULL;
			buf_release(&d->body);
			d->checked_us = now;
			if (r.status != 200)
				d->st = RM_ABSENT;
			else if ((int)apidisc_form_of(r.content_type) != form)
				d->st = RM_OTHER_FORM;
			else {
				d->st = RM_DOC;
				d->body = r.body;
				buf_init(&r.body);
				d->etag = r.etag ? r.etag : own_etag(&d->body);
				r.etag = NULL;
			}
		}
		pthread_mutex_unlock(&lock);
		upstream_resp_release(&r);
	}
	if (ok) {
		pthread_mutex_lock(&lock);
		e = strmap_get(&rmdocs, key);
		d = e ? e->val : NULL;
		if (d) {
			*ret = (struct rm_doc){ .st = d->st, .etag = d->etag ? xstrdup(d->etag) : NULL };
			buf_add(&ret->body, d->body.ptr ? d->body.ptr : "", d->body.len);
		}
		ok = d != NULL;
		pthread_mutex_unlock(&lock);
	}
	free(inm);
	free(key);
	return ok;
}

void disco_reply_release(struct disco_reply *r)
{
	free(r->etag);
	r->etag = NULL;
	buf_release(&r->body);
	free(r->partition);
	r->partition = NULL;
}

/* The tenant's partition's document: asks f->tps in order (those not down), conditionally with
 * the tag it last sent for this tenant. 0 with *ret_pid, *ret_etag and (on a 200) body filled;
 * E_NOT_FOUND when the partition answered without a document in form (*ret_status: its code;
 * *ret_other_form for a document in another form); E_UNAVAILABLE when none answered. */
static int tp_get(const struct disco_fetcher *f, const char *tkey, const char *path, int form,
		  bool unconditional, char **ret_pid, char **ret_etag, struct buf *body, int *ret_status,
		  bool *ret_other_form)
{
	char *rpid = NULL, *retag = NULL;
	pthread_mutex_lock(&lock);
	init_locked();
	struct strmap_ent *e = strmap_get(&tenants, tkey);
	if (e && !unconditional) {
		rpid = xstrdup(((struct tenant_rec_d *)e->val)->pid);
		retag = xstrdup(((struct tenant_rec_d *)e->val)->etag);
	}
	pthread_mutex_unlock(&lock);
	int ret = E_UNAVAILABLE;
	size_t i;
	for (i = 0; i < f->ntp && ret == E_UNAVAILABLE; i++) {
		struct partition *p = f->tps[i];
		if (atomic_load(&p->down))
			continue;
		const char *inm = rpid && strcmp(rpid, p->id) == 0 ? retag : NULL;
		struct upstream_resp r = { 0 };
		int err = f->fetch(f->ud, p, path, form, inm, &r);
		pthread_mutex_lock(&lock);
		stats.tp_fetches++;
		stats.tp_not_modified += !err && r.status == 304 && inm;
		pthread_mutex_unlock(&lock);
		if (err) {
			log_warn("discovery: partition did not answer", "partition=%s path=%s err=%s", p->id, path,
				 err_reason(err));
		} else if (r.status >= 500) {
			log_warn("discovery: partition failed", "partition=%s path=%s code=%d", p->id, path, r.status);
		} else if (r.status == 304 && inm) {
			*ret_pid = xstrdup(p->id);
			*ret_etag = xstrdup(inm);
			ret = 0;
		} else if (r.status == 200 && (int)apidisc_form_of(r.content_type) == form) {
			*ret_pid = xstrdup(p->id);
			*body = r.body;
			buf_init(&r.body);
			*ret_etag = r.etag ? r.etag : own_etag(body);
			r.etag = NULL;
			ret = 0;
		} else {
			*ret_status = r.status;
			*ret_other_form = r.status == 200;
			*ret_pid = xstrdup(p->id);
			ret = E_NOT_FOUND;
		}
		upstream_resp_release(&r);
	}
	if (ret != E_UNAVAILABLE && (i > 1 || (f->ntp && strcmp(f->tps[0]->id, *ret_pid) != 0))) {
		int64_t now = mono_us();
		pthread_mutex_lock(&lock);
		stats.fallbacks++;
		bool say = now - last_fallback_log >= FALLBACK_LOG_US || last_fallback_log == 0;
		if (say)
			last_fallback_log = now;
		pthread_mutex_unlock(&lock);
		if (say)
			log_warn("discovery: the tenant's partition is unavailable, another one answers (built-in kinds only)",
				 "tenant=\"%s\" partition=%s fallback=%s path=%s", f->tenant ? f->tenant : "",
				 f->ntp ? f->tps[0]->id : "", *ret_pid, path);
	}
	free(rpid);
	free(retag);
	return ret;
}

static void remember_locked(const char *tkey, const char *pid, const char *etag)
{
	struct strmap_ent *e = strmap_get(&tenants, tkey);
	if (!e && tenants.n >= MAX_TENANT_RECS) {
		strmap_release(&tenants, tenant_rec_d_free);
		strmap_init(&tenants);
	}
	if (!e)
		e = strmap_put(&tenants, tkey, NULL);
	struct tenant_rec_d *t = e->val;
	if (!t) {
		t = xcalloc(1, sizeof(*t));
		e->val = t;
	}
	if (!t->pid || strcmp(t->pid, pid) != 0) {
		free(t->pid);
		t->pid = xstrdup(pid);
	}
	if (!t->etag || strcmp(t->etag, etag) != 0) {
		free(t->etag);
		t->etag = xstrdup(etag);
	}
}

/* Copies entry key into ret when cached (and marks it used). */
static bool lookup_locked(const char *key, const char *inm, struct disco_reply *ret)
{
	struct merged *m = lru_get(&entries, key);
	if (!m)
		return false;
	ret->etag = xstrdup(m->etag);
	if (apidisc_etag_matches(inm, m->etag))
		ret->status = 304;
	else
		buf_add(&ret->body, m->body.ptr ? m->body.ptr : "", m->body.len);
	return true;
}

int disco_get(const struct disco_fetcher *f, const char *path, int form, const char *if_none_match,
	      struct disco_reply *ret)
{
	*ret = (struct disco_reply){ .status = 200 };
	char *tkey = xasprintf("%s\n%d\n%s", f->tenant ? f->tenant : "", form, path);
	char *pid = NULL, *etag = NULL;
	struct buf body = BUF_INIT, key = BUF_INIT;
	struct rm_doc *rms = xcalloc(f->nrm + 1, sizeof(*rms));
	bool *have = xcalloc(f->nrm + 1, sizeof(*have));
	json_t *doc = NULL;
	int status = 0;
	bool other = false;
	int err = tp_get(f, tkey, path, form, false, &pid, &etag, &body, &status, &other);
	if (err) {
		ret->partition = pid;
		ret->status = status;
		ret->other_form = other;
		pid = NULL;
		goto out;
	}
	buf_addf(&key, "%d\n%s\n%s\n%s", form, path, pid, etag);
	for (size_t i = 0; i < f->nrm; i++) {
		if (atomic_load(&f->rms[i]->down))
			continue;
		have[i] = rm_get(f, f->rms[i], path, form, &rms[i]);
		/* aggregated discovery from a resource manager that has none (an older binary) or did not
		 * answer: the legacy form, which every client understands, is merged instead */
		if (form != APIDISC_LEGACY && (!have[i] || rms[i].st != RM_DOC))
			ret->other_form = true;
		if (have[i] && rms[i].st == RM_DOC)
			buf_addf(&key, "\n%s=%s", f->rms[i]->id, rms[i].etag);
	}
	if (ret->other_form) {
		err = E_NOT_FOUND;
		ret->status = 200;
		goto out;
	}
	pthread_mutex_lock(&lock);
	bool hit = lookup_locked(key.ptr, if_none_match, ret);
	if (hit) {
		stats.hits++;
		remember_locked(tkey, pid, etag);
	}
	pthread_mutex_unlock(&lock);
	if (hit)
		goto out;
	if (!body.ptr && !body.len) {
		/* 304 for a document no longer cached: fetch it whole from the partition that said so */
		struct disco_fetcher one = *f;
		struct partition *only = NULL;
		for (size_t i = 0; i < f->ntp && !only; i++)
			if (strcmp(f->tps[i]->id, pid) == 0)
				only = f->tps[i];
		one.tps = &only;
		one.ntp = only ? 1 : 0;
		char *pid2 = NULL, *etag2 = NULL;
		err = tp_get(&one, tkey, path, form, true, &pid2, &etag2, &body, &status, &other);
		if (!err && strcmp(etag2, etag) != 0) {
			/* it changed meanwhile: key the new one */
			free(etag);
			etag = etag2;
			etag2 = NULL;
			buf_reset(&key);
			buf_addf(&key, "%d\n%s\n%s\n%s", form, path, pid, etag);
			for (size_t i = 0; i < f->nrm; i++)
				if (have[i] && rms[i].st == RM_DOC)
					buf_addf(&key, "\n%s=%s", f->rms[i]->id, rms[i].etag);
		}
		free(pid2);
		free(etag2);
		if (err) {
			ret->partition = xstrdup(pid);
			ret->status = status;
			ret->other_form = other;
			goto out;
		}
	}
	doc = json_loadb(body.ptr ? body.ptr : "", body.len, 0, NULL);
	if (!json_is_object(doc)) {
		log_warn("discovery: partition sent no JSON object", "partition=%s path=%s", pid, path);
		ret->partition = pid;
		ret->status = 502;
		pid = NULL;
		err = E_NOT_FOUND;
		goto out;
	}
	struct merged *m = xcalloc(1, sizeof(*m));
	bool merged_any = false;
	for (size_t i = 0; i < f->nrm; i++) {
		if (!have[i] || rms[i].st != RM_DOC)
			continue;
		json_t *rj = json_loadb(rms[i].body.ptr ? rms[i].body.ptr : "", rms[i].body.len, 0, NULL);
		disco_merge(doc, rj, form);
		merged_any = true;
		json_decref(rj);
	}
	if (merged_any)
		json_dump_buf(doc, &m->body);
	else
		buf_add(&m->body, body.ptr, body.len);
	m->etag = own_etag(&m->body);
	pthread_mutex_lock(&lock);
	init_locked();
	stats.builds++;
	remember_locked(tkey, pid, etag);
	if (!lookup_locked(key.ptr, if_none_match, ret)) {
		size_t sz = merged_size(m);
		if (sz <= DISCO_MAX_BYTES) {
			lru_put(&entries, key.ptr, m, sz); /* never pinned here */
			lookup_locked(key.ptr, if_none_match, ret);
			m = NULL;
		} else {
			ret->etag = xstrdup(m->etag);
			if (apidisc_etag_matches(if_none_match, m->etag))
				ret->status = 304;
			else
				buf_add(&ret->body, m->body.ptr, m->body.len);
		}
	}
	pthread_mutex_unlock(&lock);
	merged_free(m);
out:
	if (!err && pid)
		ret->partition = xstrdup(pid);
	json_decref(doc);
	for (size_t i = 0; i < f->nrm; i++) {
		free(rms[i].etag);
		buf_release(&rms[i].body);
	}
	free(rms);
	free(have);
	free(pid);
	free(etag);
	free(tkey);
	buf_release(&body);
	buf_release(&key);
	return err;
}
