/* The region's OpenAPI documents at the gateway: /openapi/v2 (JSON, or gnostic protobuf by
 * Accept), the /openapi/v3 index and /openapi/v3/<group version>, each the union of what the
 * caller's tenant's partition (its built-in kinds, the tenant's and the system tenant's custom
 * resources) and the resource managers serve, so that kubectl explain and apply see every kind
 * (nodes live on the resource managers only).
 *
 * The partitions' documents are fetched as JSON and merged here (pure functions below, unit
 * tested); the protobuf form is the merged JSON encoded by the API servers' own encoder
 * (openapi_v2_protobuf), so it holds exactly what the JSON holds. The tenant's partition is asked
 * on every request, conditionally with the entity tag it last sent for that tenant and document
 * (a 304 costs it nothing to send), so a new custom resource definition shows at once. A merged
 * document is cached under the partition and that tag (tenants whose documents are the same
 * share it) with the tags of the resource managers' documents it was built from: for
 * OAPI_FRESH_MS those are not asked again (a burst of kubectl starts costs them nothing), then
 * they are asked with If-None-Match, and the document is only rebuilt when one of them changed.
 * One thread refreshes an entry at a time; the others serve the previous version meanwhile, or
 * wait for the first. Entries are bounded (OAPI_MAX_ENTRIES, OAPI_MAX_BYTES), least recently
 * used first out. */
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "apiserver/internal.h"
#include "gw.h"
#include "ursa/apidisc.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/lru.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

/* The '@'-free spelling the API servers reply with (see src/common/apiserver/openapi.c). */
#define PB_MEDIA_TYPE "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
#define MAX_KEY 256
#define MAX_HASH 128
#define MAX_TENANT_RECS 65536 /* tenant x document -> the partition's last tag; reset when full */
#define FALLBACK_LOG_US (10 * 1000000LL)
#define WAIT_MS 35000

/* --- pure parts -------------------------------------------------------------------------------- */

static bool key_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
	       c == '_';
}

bool oapi_key_ok(const char *key)
{
	size_t n = key ? strlen(key) : 0;
	if (n == 0 || n > MAX_KEY || (strncmp(key, "api/", 4) != 0 && strncmp(key, "apis/", 5) != 0))
		return false;
	const char *seg = key;
	for (size_t i = 0; i <= n; i++) {
		if (i == n || key[i] == '/') {
			size_t len = (size_t)(key + i - seg);
			if (len == 0 || (len == 1 && seg[0] == '.') || (len == 2 && seg[0] == '.' && seg[1] == '.'))
				return false;
			seg = key + i + 1;
		} else if (!key_char(key[i])) {
			return false;
		}
	}
	return true;
}

enum oapi_doc oapi_classify(const char *path, const char **ret_key)
{
	*ret_key = NULL;
	if (strcmp(path, "/openapi/v2") == 0 || strcmp(path, "/openapi/v2/") == 0)
		return OAPI_V2;
	if (strcmp(path, "/openapi/v3") == 0 || strcmp(path, "/openapi/v3/") == 0)
		return OAPI_V3_INDEX;
	if (strncmp(path, "/openapi/v3/", 12) == 0 && oapi_key_ok(path + 12)) {
		*ret_key = path + 12;
		return OAPI_V3_GV;
	}
	return OAPI_NONE;
}

static bool has_gvk(const json_t *def, const json_t *gvk)
{
	size_t i;
	const json_t *v;
	json_array_foreach (json_object_get(def, "x-kubernetes-group-version-kind"), i, v)
		if (json_equal((json_t *)v, (json_t *)gvk))
			return true;
	return false;
}

/* Adds to dst (an object of named schemas or paths) the members of src it lacks. For schemas, a
 * definition both have that src declares a kind of (x-kubernetes-group-version-kind) and dst
 * does not (there it is only some kind's field) becomes src's: kubectl finds kinds by that
 * extension. Otherwise dst's entries win. */
static void union_members(json_t *dst, const json_t *src, bool schemas)
{
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)src, k, v) {
		json_t *have = json_object_get(dst, k);
		if (!have) {
			json_object_set(dst, k, v);
			continue;
		}
		json_t *gvks = json_object_get(v, "x-kubernetes-group-version-kind");
		if (!schemas || !json_is_object(have) || !json_is_array(gvks))
			continue;
		json_t *dgvks = json_object_get(have, "x-kubernetes-group-version-kind");
		if (!json_is_array(dgvks)) {
			json_object_set(dst, k, v);
			continue;
		}
		size_t i;
		json_t *g;
		json_array_foreach (gvks, i, g)
			if (!has_gvk(have, g))
				json_array_append(dgvks, g);
	}
}

/* dst->key as an object (created when missing; NULL when it holds something else). */
static json_t *obj_member(json_t *dst, const char *key)
{
	json_t *o = json_object_get(dst, key);
	if (!o) {
		o = json_object();
		json_object_set_new(dst, key, o);
	}
	return json_is_object(o) ? o : NULL;
}

void oapi_merge(json_t *dst, const json_t *src)
{
	if (!json_is_object(dst) || !json_is_object(src))
		return;
	static const char *const keys[] = { "paths", "definitions" };
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		json_t *s = json_object_get(src, keys[i]);
		json_t *d = json_is_object(s) ? obj_member(dst, keys[i]) : NULL;
		if (d)
			union_members(d, s, i == 1);
	}
	json_t *s = json_object_get(json_object_get(src, "components"), "schemas");
	json_t *comp = json_is_object(s) ? obj_member(dst, "components") : NULL;
	json_t *d = comp ? obj_member(comp, "schemas") : NULL;
	if (d)
		union_members(d, s, true);
}

void oapi_hash_combine(const char *const *hashes, size_t n, struct buf *out)
{
	if (n == 1) {
		buf_adds(out, hashes[0]);
		return;
	}
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;
	EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
	for (size_t i = 0; i < n; i++) {
		EVP_DigestUpdate(ctx, hashes[i], strlen(hashes[i]));
		EVP_DigestUpdate(ctx, "\n", 1);
	}
	EVP_DigestFinal_ex(ctx, md, &mdlen);
	EVP_MD_CTX_free(ctx);
	for (unsigned i = 0; i < mdlen; i++)
		buf_addf(out, "%02X", md[i]);
}

/* The hash= of an index entry's serverRelativeURL into out (up to MAX_HASH letters and digits;
 * "" when there is none). */
static void entry_hash(const json_t *entry, char out[MAX_HASH + 1])
{
	const char *url = json_string_value(json_object_get(entry, "serverRelativeURL"));
	const char *q = url ? strchr(url, '?') : NULL;
	out[0] = '\0';
	while (q && *q) {
		q++;
		if (strncmp(q, "hash=", 5) == 0) {
			size_t n = 0;
			for (q += 5; n < MAX_HASH && key_char(q[n]) && q[n] != '.'; n++)
				out[n] = q[n];
			out[n] = '\0';
			return;
		}
		q = strchr(q, '&');
	}
}

json_t *oapi_index_merge(json_t *const *idx, size_t n)
{
	json_t *paths = json_object();
	/* Keys in the order the partitions list them, first partition first. */
	for (size_t i = 0; i < n; i++) {
		const char *k;
		json_t *v;
		json_object_foreach (json_object_get(idx[i], "paths"), k, v)
			if (json_is_object(v) && oapi_key_ok(k) && !json_object_get(paths, k))
				json_object_set_new(paths, k, json_null());
	}
	const char *k;
	json_t *v;
	char(*hashes)[MAX_HASH + 1] = xmalloc((n ? n : 1) * sizeof(*hashes));
	const char **hp = xmalloc((n ? n : 1) * sizeof(*hp));
	json_object_foreach (paths, k, v) {
		size_t m = 0;
		for (size_t i = 0; i < n; i++) {
			json_t *e = json_object_get(json_object_get(idx[i], "paths"), k);
			if (!json_is_object(e))
				continue;
			entry_hash(e, hashes[m]);
			hp[m] = hashes[m];
			m++;
		}
		struct buf h = BUF_INIT;
		oapi_hash_combine(hp, m, &h);
		char *url = xasprintf("/openapi/v3/%s?hash=%s", k, buf_cstr(&h));
		json_object_set_new(paths, k, json_pack("{s:s}", "serverRelativeURL", url));
		free(url);
		buf_release(&h);
	}
	free(hashes);
	free(hp);
	return json_pack("{s:o}", "paths", paths);
}

/* --- the cache --------------------------------------------------------------------------------- */

struct source {
	char *pid;
	char *etag; /* as the partition sent it, or NULL */
	struct buf body;
};

struct form {
	struct buf body;
	struct buf etag; /* quoted */
};

struct entry {
	char *key;         /* path, tenant partition and its tag for the document (see entry_key) */
	char *path;
	enum oapi_doc doc;
	bool ready;        /* json (and pb for v2) hold a document */
	bool refreshing;   /* a thread is asking the partitions */
	int64_t checked_us;
	size_t bytes;
	struct source *src; /* the tenant partition's first, when it has the document */
	size_t nsrc;
	struct form json, pb;
	char *combined;    /* v3 group version: the hash its index URL carries */
};

/* What refresh built, installed in the entry under the lock. */
struct built {
	struct source *src;
	size_t nsrc;
	struct form json, pb;
	char *combined;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t refreshed = PTHREAD_COND_INITIALIZER;
static struct lru entries; /* key -> struct entry; an entry being refreshed is pinned */
static bool entries_inited;
static struct strmap tenant_tags; /* tenant \n path -> "partition\ntag" */
static bool tags_inited;
static int64_t last_fallback_log;

static void sources_free(struct source *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(s[i].pid);
		free(s[i].etag);
		buf_release(&s[i].body);
	}
	free(s);
}

static void form_release(struct form *f)
{
	buf_release(&f->body);
	buf_release(&f->etag);
}

static void entry_free(void *v)
{
	struct entry *e = v;
	if (!e)
		return;
	free(e->key);
	free(e->path);
	sources_free(e->src, e->nsrc);
	form_release(&e->json);
	form_release(&e->pb);
	free(e->combined);
	free(e);
}

void oapi_cache_clear(void)
{
	pthread_mutex_lock(&lock);
	if (entries_inited)
		lru_release(&entries);
	entries_inited = false;
	if (tags_inited)
		strmap_release(&tenant_tags, free);
	tags_inited = false;
	pthread_mutex_unlock(&lock);
}

size_t oapi_cache_entries(void)
{
	pthread_mutex_lock(&lock);
	size_t n = entries_inited ? entries.n : 0;
	pthread_mutex_unlock(&lock);
	return n;
}

static struct entry *entry_find(const char *key)
{
	return entries_inited ? lru_peek(&entries, key) : NULL;
}

/* An ETag's opaque part: "\"ABC\"" or "W/\"ABC\"" -> "ABC" (new string). */
static char *etag_opaque(const char *etag)
{
	if (!etag)
		return xstrdup("");
	if (strncmp(etag, "W/", 2) == 0)
		etag += 2;
	size_t n = strlen(etag);
	if (n >= 2 && etag[0] == '"' && etag[n - 1] == '"')
		return xstrndup(etag + 1, n - 2);
	return xstrdup(etag);
}

static bool same_sources(const struct source *a, size_t na, const struct source *b, size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++)
		if (strcmp(a[i].pid, b[i].pid) != 0 || !a[i].etag || !b[i].etag || strcmp(a[i].etag, b[i].etag) != 0)
			return false;
	return true;
}

static const struct source *old_source(const struct entry *e, const char *pid)
{
	for (size_t i = 0; i < e->nsrc; i++)
		if (strcmp(e->src[i].pid, pid) == 0)
			return &e->src[i];
	return NULL;
}

static void source_copy(struct source *dst, const struct source *src)
{
	*dst = (struct source){ .pid = xstrdup(src->pid), .etag = src->etag ? xstrdup(src->etag) : NULL };
	buf_add(&dst->body, src->body.ptr ? src->body.ptr : "", src->body.len);
}

enum ask { ASK_DOC, ASK_ABSENT, ASK_FAILED, ASK_SAME };

/* Asks p for path, conditionally with inm (may be NULL). ASK_DOC fills s (its tag is the
 * partition's, or the gateway's own hash of the body when it sent none); ASK_SAME is a 304. */
static enum ask ask(const struct oapi_fetcher *f, struct partition *p, const char *path, const char *inm,
		    struct source *s)
{
	struct upstream_resp r = { 0 };
	int err = f->fetch(f->ud, p, path, inm, &r);
	enum ask ret = ASK_FAILED;
	if (err) {
		log_warn("openapi: partition did not answer", "partition=%s path=%s err=%s", p->id, path,
			 err_reason(err));
	} else if (r.status == 304 && inm) {
		ret = ASK_SAME;
	} else if (r.status == 200) {
		*s = (struct source){ .pid = xstrdup(p->id), .etag = r.etag, .body = r.body };
		if (!s->etag) {
			struct buf t = BUF_INIT;
			apidisc_etag(s->body.ptr ? s->body.ptr : "", s->body.len, &t);
			s->etag = buf_detach(&t, NULL);
		}
		r.etag = NULL;
		buf_init(&r.body);
		ret = ASK_DOC;
	} else if (r.status == 404) {
		ret = ASK_ABSENT;
	} else {
		log_warn("openapi: partition refused", "partition=%s path=%s code=%d", p->id, path, r.status);
	}
	upstream_resp_release(&r);
	return ret;
}

/* The caller's tenant's partition's version of a document. */
struct tpv {
	char *pid;          /* the partition that answered (or, when none did, the one remembered); NULL: none */
	char *etag;         /* its tag for the document; "-" when it has none */
	bool answered;      /* pid answered now */
	bool have_doc;      /* doc holds the document (a 200) */
	struct source doc;
};

static void tpv_release(struct tpv *t)
{
	free(t->pid);
	free(t->etag);
	if (t->have_doc) {
		free(t->doc.pid);
		free(t->doc.etag);
		buf_release(&t->doc.body);
	}
}

static char *entry_key(const char *path, const char *pid, const char *etag)
{
	return xasprintf("%s\n%s\n%s", path, pid ? pid : "", etag ? etag : "");
}

/* Asks f->tps in turn (those not down) for path, the first conditionally with the tag it last
 * sent for tkey when that document is still cached. */
static void tp_version(const struct oapi_fetcher *f, const char *path, const char *tkey, struct tpv *ret)
{
	*ret = (struct tpv){ 0 };
	char *rpid = NULL, *retag = NULL;
	bool cached = false;
	pthread_mutex_lock(&lock);
	struct strmap_ent *t = tags_inited ? strmap_get(&tenant_tags, tkey) : NULL;
	if (t) {
		const char *v = t->val, *nl = strchr(v, '\n');
		rpid = xstrndup(v, (size_t)(nl - v));
		retag = xstrdup(nl + 1);
		char *key = entry_key(path, rpid, retag);
		struct entry *e = entry_find(key);
		cached = e && e->ready && strcmp(retag, "-") != 0;
		free(key);
	}
	pthread_mutex_unlock(&lock);
	size_t i;
	for (i = 0; i < f->ntp && !ret->answered; i++) {
		struct partition *p = f->tps[i];
		if (atomic_load(&p->down))
			continue;
		const char *inm = cached && strcmp(rpid, p->id) == 0 ? retag : NULL;
		enum ask a = ask(f, p, path, inm, &ret->doc);
		if (a == ASK_FAILED)
			continue;
		ret->answered = true;
		ret->pid = xstrdup(p->id);
		ret->have_doc = a == ASK_DOC;
		ret->etag = xstrdup(a == ASK_DOC ? ret->doc.etag : a == ASK_SAME ? inm : "-");
	}
	if (ret->answered && strcmp(ret->pid, f->tps[0]->id) != 0) {
		int64_t now = mono_us();
		pthread_mutex_lock(&lock);
		bool say = last_fallback_log == 0 || now - last_fallback_log >= FALLBACK_LOG_US;
		if (say)
			last_fallback_log = now;
		pthread_mutex_unlock(&lock);
		if (say)
			log_warn("openapi: the tenant's partition is unavailable, another one answers (built-in kinds only)",
				 "tenant=\"%s\" partition=%s fallback=%s path=%s", f->tenant ? f->tenant : "",
				 f->tps[0]->id, ret->pid, path);
	}
	if (!ret->answered && rpid) {
		/* nobody answers: what the tenant was last served */
		ret->pid = rpid;
		ret->etag = retag;
		rpid = retag = NULL;
	}
	free(rpid);
	free(retag);
}

static void remember_locked(const char *tkey, const struct tpv *tv)
{
	if (!tv->answered)
		return;
	if (!tags_inited) {
		strmap_init(&tenant_tags);
		tags_inited = true;
	}
	struct strmap_ent *t = strmap_get(&tenant_tags, tkey);
	if (!t && tenant_tags.n >= MAX_TENANT_RECS) {
		strmap_release(&tenant_tags, free);
		strmap_init(&tenant_tags);
	}
	if (!t)
		t = strmap_put(&tenant_tags, tkey, NULL);
	char *v = xasprintf("%s\n%s", tv->pid, tv->etag);
	if (t->val && strcmp(t->val, v) == 0) {
		free(v);
		return;
	}
	free(t->val);
	t->val = v;
}

static void form_set(struct form *f, struct buf *body)
{
	form_release(f);
	f->body = *body;
	buf_init(body);
	apidisc_etag(f->body.ptr, f->body.len, &f->etag);
}

/* Builds the documents of e's kind from srcs (taken) into b; sources whose body is not a JSON
 * object are dropped (logged). 0, or E_UNAVAILABLE when none is left. */
static int rebuild(const struct entry *e, struct source *srcs, size_t n, struct built *b)
{
	json_t **docs = xcalloc(n ? n : 1, sizeof(*docs));
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		json_t *j = json_loadb(srcs[i].body.ptr ? srcs[i].body.ptr : "", srcs[i].body.len, 0, NULL);
		if (!json_is_object(j)) {
			log_warn("openapi: partition sent no JSON object", "partition=%s path=%s", srcs[i].pid,
				 e->path);
			json_decref(j);
			free(srcs[i].pid);
			free(srcs[i].etag);
			buf_release(&srcs[i].body);
			continue;
		}
		docs[m] = j;
		srcs[m++] = srcs[i];
	}
	int err = m ? 0 : E_UNAVAILABLE;
	struct buf out = BUF_INIT;
	if (!m) {
		sources_free(srcs, 0);
		goto out;
	}
	json_t *merged = NULL;
	if (e->doc == OAPI_V3_INDEX) {
		merged = oapi_index_merge(docs, m);
	} else {
		merged = json_incref(docs[0]);
		for (size_t i = 1; i < m; i++)
			oapi_merge(merged, docs[i]);
	}
	if (m == 1 && e->doc != OAPI_V3_INDEX)
		buf_add(&out, srcs[0].body.ptr, srcs[0].body.len); /* that side's document as it is */
	else
		json_dump_buf(merged, &out);
	form_set(&b->json, &out);
	if (e->doc == OAPI_V2) {
		openapi_v2_protobuf(merged, &out);
		form_set(&b->pb, &out);
	}
	if (e->doc == OAPI_V3_GV) {
		char **h = xmalloc(m * sizeof(*h));
		for (size_t i = 0; i < m; i++)
			h[i] = etag_opaque(srcs[i].etag);
		struct buf c = BUF_INIT;
		oapi_hash_combine((const char *const *)h, m, &c);
		b->combined = buf_detach(&c, NULL);
		for (size_t i = 0; i < m; i++)
			free(h[i]);
		free(h);
	}
	json_decref(merged);
	b->src = srcs;
	b->nsrc = m;
out:
	for (size_t i = 0; i < m; i++)
		json_decref(docs[i]);
	free(docs);
	return err;
}

static struct partition *find_tp(const struct oapi_fetcher *f, const char *pid)
{
	for (size_t i = 0; i < f->ntp; i++)
		if (strcmp(f->tps[i]->id, pid) == 0)
			return f->tps[i];
	return NULL;
}

/* The sources of e: the tenant partition's document (tv's, or e's own when it was not modified,
 * or asked for whole when e never had it) and the resource managers' not known to be down,
 * asked again with their tags. Fills b when what they sent differs from what e was built from
 * (b->src stays NULL otherwise). 0, E_NOT_FOUND (no partition has it) or E_UNAVAILABLE (none
 * answered). Called without the lock, with e->refreshing set by this thread. */
static int refresh(const struct entry *e, const struct oapi_fetcher *f, struct tpv *tv, struct built *b)
{
	struct source *srcs = xcalloc(f->nrm + 2, sizeof(*srcs));
	size_t n = 0;
	bool answered = tv->answered;
	if (tv->have_doc) {
		srcs[n++] = tv->doc;
		tv->have_doc = false;
		tv->doc = (struct source){ 0 };
	} else if (tv->pid && strcmp(tv->etag, "-") != 0) {
		const struct source *old = old_source(e, tv->pid);
		struct partition *p = old ? NULL : find_tp(f, tv->pid);
		if (old)
			source_copy(&srcs[n++], old);
		else if (p && !atomic_load(&p->down) && ask(f, p, e->path, NULL, &srcs[n]) == ASK_DOC)
			n++; /* not modified, but no longer cached here */
	}
	for (size_t i = 0; i < f->nrm; i++) {
		struct partition *rm = f->rms[i];
		const struct source *old = old_source(e, rm->id);
		if (atomic_load(&rm->down)) {
			/* said once per document, when it loses that partition's part */
			if (old)
				log_warn("openapi: partition is down, its document is left out", "partition=%s path=%s",
					 rm->id, e->path);
			continue;
		}
		enum ask a = ask(f, rm, e->path, old ? old->etag : NULL, &srcs[n]);
		if (a == ASK_SAME && old)
			source_copy(&srcs[n], old);
		answered |= a != ASK_FAILED;
		n += a == ASK_DOC || (a == ASK_SAME && old);
	}
	if (!n) {
		sources_free(srcs, 0);
		return answered ? E_NOT_FOUND : E_UNAVAILABLE;
	}
	if (e->ready && same_sources(srcs, n, e->src, e->nsrc)) {
		sources_free(srcs, n);
		return 0;
	}
	return rebuild(e, srcs, n, b);
}

static size_t entry_bytes(const struct entry *e)
{
	size_t n = 256 + e->json.body.len + e->pb.body.len;
	for (size_t i = 0; i < e->nsrc; i++)
		n += e->src[i].body.len;
	return n;
}

/* Puts what refresh built into e (under the lock). */
static void install_locked(struct entry *e, struct built *b)
{
	if (!b->src)
		return;
	sources_free(e->src, e->nsrc);
	form_release(&e->json);
	form_release(&e->pb);
	free(e->combined);
	e->src = b->src;
	e->nsrc = b->nsrc;
	e->json = b->json;
	e->pb = b->pb;
	e->combined = b->combined;
	e->ready = true;
	e->bytes = entry_bytes(e);
	lru_resize(&entries, e->key, e->bytes);
	*b = (struct built){ 0 };
}

/* Fills ret from form f (a copy), or a 304 when if_none_match holds its tag. */
static void reply_form(const struct form *f, const char *ctype, const char *cache_control, const char *inm,
		       struct oapi_reply *ret)
{
	const char *etag = buf_cstr((struct buf *)&f->etag);
	*ret = (struct oapi_reply){ .status = 200, .content_type = ctype, .cache_control = cache_control,
				    .etag = xstrdup(etag) };
	if (apidisc_etag_matches(inm, etag))
		ret->status = 304;
	else
		buf_add(&ret->body, f->body.ptr ? f->body.ptr : "", f->body.len);
}

void oapi_reply_release(struct oapi_reply *r)
{
	free(r->etag);
	r->etag = NULL;
	buf_release(&r->body);
}

int oapi_get(const struct oapi_fetcher *f, const char *path, const char *accept, const char *if_none_match,
	     const char *hash, struct oapi_reply *ret)
{
	const char *dockey;
	enum oapi_doc doc = oapi_classify(path, &dockey);
	if (doc == OAPI_NONE)
		return E_NOT_FOUND;
	char *norm = doc == OAPI_V2 ? xstrdup("/openapi/v2")
		     : doc == OAPI_V3_INDEX ? xstrdup("/openapi/v3")
					    : xasprintf("/openapi/v3/%s", dockey);
	char *tkey = xasprintf("%s\n%s", f->tenant ? f->tenant : "", norm);
	struct tpv tv;
	tp_version(f, norm, tkey, &tv);
	char *key = entry_key(norm, tv.pid, tv.etag);
	int err = 0;
	pthread_mutex_lock(&lock);
	struct entry *e = entry_find(key);
	int64_t deadline = mono_us() + (int64_t)WAIT_MS * 1000;
	for (;;) {
		if (!e) {
			if (!entries_inited) {
				lru_init(&entries, OAPI_MAX_ENTRIES, OAPI_MAX_BYTES, entry_free);
				entries_inited = true;
			}
			if (!lru_make_room(&entries, 0)) {
				err = E_UNAVAILABLE; /* every entry is being refreshed */
				goto out;
			}
			e = xcalloc(1, sizeof(*e));
			e->key = xstrdup(key);
			e->path = xstrdup(norm);
			e->doc = doc;
			lru_put(&entries, key, e, 0);
		}
		int64_t now = mono_us();
		if (e->ready && (e->refreshing || now - e->checked_us < (int64_t)f->fresh_ms * 1000))
			break;
		if (e->refreshing) {
			if (now >= deadline) {
				err = E_TIMEOUT;
				goto out;
			}
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 1;
			pthread_cond_timedwait(&refreshed, &lock, &ts);
			e = entry_find(key);
			continue;
		}
		e->refreshing = true;
		lru_pin(&entries, key);
		pthread_mutex_unlock(&lock);
		struct built b = { 0 };
		err = refresh(e, f, &tv, &b);
		pthread_mutex_lock(&lock);
		install_locked(e, &b);
		e->refreshing = false;
		lru_unpin(&entries, key);
		if (!err)
			e->checked_us = mono_us();
		pthread_cond_broadcast(&refreshed);
		if (err && !e->ready) {
			lru_del(&entries, key);
			goto out;
		}
		if (err)
			log_warn("openapi: serving the last merged document", "path=%s err=%s", norm, err_reason(err));
		err = 0;
		break;
	}
	lru_get(&entries, key); /* the most recently used now */
	remember_locked(tkey, &tv);
	if (doc == OAPI_V2 && openapi_wants_protobuf(accept))
		reply_form(&e->pb, PB_MEDIA_TYPE, "no-cache, private", if_none_match, ret);
	else
		reply_form(&e->json, "application/json",
			   doc == OAPI_V3_GV && hash && e->combined && strcmp(hash, e->combined) == 0
				   ? "public, immutable, max-age=31536000"
				   : "no-cache, private",
			   if_none_match, ret);
out:
	pthread_mutex_unlock(&lock);
	tpv_release(&tv);
	free(key);
	free(tkey);
	free(norm);
	return err;
}
