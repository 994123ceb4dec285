/* The region's OpenAPI documents at the gateway: /openapi/v2 (JSON, or gnostic protobuf by
 * Accept), the /openapi/v3 index and /openapi/v3/<group version>, each the union of what a tenant
 * partition and the resource managers serve, so that kubectl explain and apply see every kind
 * (nodes live on the resource managers only).
 *
 * The partitions' documents are fetched as JSON and merged here (pure functions below, unit
 * tested); the protobuf form is the merged JSON encoded by the API servers' own encoder
 * (openapi_v2_protobuf), so it holds exactly what the JSON holds. A merged document is cached
 * with the entity tags of the partition documents it was built from: for OAPI_FRESH_MS it is
 * served without asking anyone (a burst of kubectl starts costs the partitions nothing), then
 * the partitions are asked again with If-None-Match, and the document is only rebuilt when one of
 * them changed. One thread refreshes an entry at a time; the others serve the previous version
 * meanwhile, or wait for the first. */
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
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

/* The '@'-free spelling the API servers reply with (see src/common/apiserver/openapi.c). */
#define PB_MEDIA_TYPE "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
#define MAX_KEY 256
#define MAX_HASH 128
#define MAX_ENTRIES 256
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
	char *path;
	enum oapi_doc doc;
	bool ready;        /* json (and pb for v2) hold a document */
	bool refreshing;   /* a thread is asking the partitions */
	int64_t checked_us;
	struct source *src;
	size_t nsrc;
	struct form json, pb;
	char *combined;    /* v3 group version: the hash its index URL carries */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t refreshed = PTHREAD_COND_INITIALIZER;
static struct entry *entries[MAX_ENTRIES];
static size_t nentries;

static void sources_free(struct source *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(s[i].pid);
		free(s[i].etag);
		buf_release(&s[i].body);
	}
	free(s);
}

static void entry_free(struct entry *e)
{
	if (!e)
		return;
	free(e->path);
	sources_free(e->src, e->nsrc);
	buf_release(&e->json.body);
	buf_release(&e->json.etag);
	buf_release(&e->pb.body);
	buf_release(&e->pb.etag);
	free(e->combined);
	free(e);
}

void oapi_cache_clear(void)
{
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < nentries; i++)
		entry_free(entries[i]);
	nentries = 0;
	pthread_mutex_unlock(&lock);
}

static struct entry *entry_find(const char *path)
{
	for (size_t i = 0; i < nentries; i++)
		if (strcmp(entries[i]->path, path) == 0)
			return entries[i];
	return NULL;
}

static void entry_remove(struct entry *e)
{
	for (size_t i = 0; i < nentries; i++)
		if (entries[i] == e) {
			entries[i] = entries[--nentries];
			break;
		}
	entry_free(e);
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

enum ask { ASK_DOC, ASK_ABSENT, ASK_FAILED };

/* Asks p for e's document, conditionally when e has p's last one; on ASK_DOC fills s. Called
 * without the lock: e's sources only change under the refreshing flag, which this thread holds. */
static enum ask ask(const struct entry *e, const struct oapi_fetcher *f, struct partition *p, struct source *s)
{
	const struct source *old = old_source(e, p->id);
	struct upstream_resp r = { 0 };
	int err = f->fetch(f->ud, p, e->path, old ? old->etag : NULL, &r);
	enum ask ret = ASK_FAILED;
	if (err) {
		log_warn("openapi: partition did not answer", "partition=%s path=%s err=%s", p->id, e->path,
			 err_reason(err));
	} else if (r.status == 304 && old) {
		*s = (struct source){ .pid = xstrdup(p->id), .etag = old->etag ? xstrdup(old->etag) : NULL };
		buf_add(&s->body, old->body.ptr ? old->body.ptr : "", old->body.len);
		ret = ASK_DOC;
	} else if (r.status == 200) {
		*s = (struct source){ .pid = xstrdup(p->id), .etag = r.etag, .body = r.body };
		r.etag = NULL;
		buf_init(&r.body);
		ret = ASK_DOC;
	} else if (r.status == 404) {
		ret = ASK_ABSENT;
	} else {
		log_warn("openapi: partition refused", "partition=%s path=%s code=%d", p->id, e->path, r.status);
	}
	upstream_resp_release(&r);
	return ret;
}

static void form_set(struct form *f, struct buf *body)
{
	buf_release(&f->body);
	buf_release(&f->etag);
	f->body = *body;
	buf_init(body);
	apidisc_etag(f->body.ptr, f->body.len, &f->etag);
}

/* Builds e's documents from srcs (taken); sources whose body is not a JSON object are dropped
 * (logged). 0, or E_UNAVAILABLE when none is left. */
static int rebuild(struct entry *e, struct source *srcs, size_t n)
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
	form_set(&e->json, &out);
	if (e->doc == OAPI_V2) {
		openapi_v2_protobuf(merged, &out);
		form_set(&e->pb, &out);
	}
	if (e->doc == OAPI_V3_GV) {
		char **h = xmalloc(m * sizeof(*h));
		for (size_t i = 0; i < m; i++)
			h[i] = etag_opaque(srcs[i].etag);
		struct buf c = BUF_INIT;
		oapi_hash_combine((const char *const *)h, m, &c);
		free(e->combined);
		e->combined = buf_detach(&c, NULL);
		for (size_t i = 0; i < m; i++)
			free(h[i]);
		free(h);
	}
	json_decref(merged);
	sources_free(e->src, e->nsrc);
	e->src = srcs;
	e->nsrc = m;
	e->ready = true;
out:
	for (size_t i = 0; i < m; i++)
		json_decref(docs[i]);
	free(docs);
	return err;
}

/* Asks the first tenant partition that answers and every resource manager not known to be down
 * for e's document, and rebuilds e when what they sent differs from what it was built from.
 * 0, E_NOT_FOUND (no partition has it) or E_UNAVAILABLE (none answered). */
static int refresh(struct entry *e, const struct oapi_fetcher *f)
{
	struct source *srcs = xcalloc(f->ntp + f->nrm + 1, sizeof(*srcs));
	size_t n = 0;
	bool answered = false, tp_answered = false;
	for (size_t i = 0; i < f->ntp && !tp_answered; i++) {
		if (atomic_load(&f->tps[i]->down))
			continue;
		enum ask a = ask(e, f, f->tps[i], &srcs[n]);
		tp_answered = a != ASK_FAILED;
		n += a == ASK_DOC;
	}
	answered = tp_answered;
	for (size_t i = 0; i < f->nrm; i++) {
		if (atomic_load(&f->rms[i]->down)) {
			/* said once per document, when it loses that partition's part */
			if (old_source(e, f->rms[i]->id))
				log_warn("openapi: partition is down, its document is left out", "partition=%s path=%s",
					 f->rms[i]->id, e->path);
			continue;
		}
		enum ask a = ask(e, f, f->rms[i], &srcs[n]);
		answered |= a != ASK_FAILED;
		n += a == ASK_DOC;
	}
	if (!n) {
		sources_free(srcs, 0);
		return answered ? E_NOT_FOUND : E_UNAVAILABLE;
	}
	if (e->ready && same_sources(srcs, n, e->src, e->nsrc)) {
		sources_free(srcs, n);
		return 0;
	}
	return rebuild(e, srcs, n);
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
	const char *key;
	enum oapi_doc doc = oapi_classify(path, &key);
	if (doc == OAPI_NONE)
		return E_NOT_FOUND;
	char *norm = doc == OAPI_V2 ? xstrdup("/openapi/v2")
		     : doc == OAPI_V3_INDEX ? xstrdup("/openapi/v3")
					    : xasprintf("/openapi/v3/%s", key);
	int err = 0;
	pthread_mutex_lock(&lock);
	struct entry *e = entry_find(norm);
	int64_t deadline = mono_us() + (int64_t)WAIT_MS * 1000;
	for (;;) {
		if (!e) {
			if (nentries == MAX_ENTRIES) {
				/* Only documents some partition has stay, so this is a bound, not a
				 * working set: start over (entries being refreshed stay). */
				size_t k = 0;
				for (size_t i = 0; i < nentries; i++) {
					if (entries[i]->refreshing)
						entries[k++] = entries[i];
					else
						entry_free(entries[i]);
				}
				nentries = k;
				if (nentries == MAX_ENTRIES) {
					err = E_UNAVAILABLE;
					goto out;
				}
			}
			e = xcalloc(1, sizeof(*e));
			e->path = xstrdup(norm);
			e->doc = doc;
			entries[nentries++] = e;
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
			e = entry_find(norm);
			continue;
		}
		e->refreshing = true;
		pthread_mutex_unlock(&lock);
		err = refresh(e, f);
		pthread_mutex_lock(&lock);
		e->refreshing = false;
		if (!err)
			e->checked_us = mono_us();
		pthread_cond_broadcast(&refreshed);
		if (err && !e->ready) {
			entry_remove(e);
			goto out;
		}
		if (err)
			log_warn("openapi: serving the last merged document", "path=%s err=%s", norm, err_reason(err));
		err = 0;
		break;
	}
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
	free(norm);
	return err;
}
