/* ursa-region verify: after the load and the faults, checks that nothing was lost and nothing ran
 * twice (issue 21, phase 5). Folds OUT/acked.jsonl into what must hold (the last acknowledged
 * write of every object), then, in rounds every 2 s for at most --wait s until all holds (each
 * round lists every kind's collection in every namespace the load wrote, --concurrency at a time,
 * with the load's label; an object is judged by what the list holds under its name):
 *   - every object whose last acknowledged write is a create or update exists with that uid and
 *     the content it was given (ConfigMap and Secret data equal; a Deployment's replicas equal and
 *     its template contained in the stored one; a Service's spec likewise), else "missing" (404) or
 *     "mismatched";
 *   - every object whose last acknowledged write is a delete is gone (else "not_deleted");
 *   - no Deployment has more Running pods (not being deleted) than its replicas ("over_replicas"),
 *     every Running pod runs the template's image, and fewer Running pods than replicas is
 *     reported as not converged ("short", not a failure). While some Deployments are short the
 *     controllers are still at work (an overloaded region: a scale-down not yet carried out
 *     leaves a Deployment over its replicas for a while), so over_replicas fails the check only
 *     when none is short; otherwise it is reported as not converged too;
 * plus the observer's record from OUT/load.json: no pod's node changed (a uid Running on two
 * nodes). Writes OUT/verify.json and "RESULT {json}"; exit 1 if anything was lost, mismatched,
 * came back, ran twice or could not be checked. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "region/driver.h"
#include "ursa/options.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define MAX_EXAMPLES 20
#define MAX_ACKS_FILE (1ull << 32)

enum vstate { V_PENDING, V_OK, V_MISSING, V_MISMATCH, V_NOT_DELETED, V_ERROR };
static const char *const vstate_name[] = {"pending", "ok", "missing", "mismatched", "not_deleted", "unchecked"};

struct ventry {
	const char *key;
	struct ack *a;
	enum vstate st;
	char *why;
};

struct vdeploy {
	const char *tenant, *ns, *name; /* borrowed from the ack */
	long long replicas, running;
	const char *image;
	long long bad_image;
};

/* A run of entries (or Deployments) that one list answers: the same kind, tenant, namespace. */
struct vgroup {
	size_t from, to;
};

struct verify {
	struct drv *d;
	struct ventry *e;
	size_t n;
	struct vgroup *g, *dg; /* groups of e and of dep */
	size_t ng, ndg;
	atomic_size_t next;
	atomic_int list_failed;
	struct vdeploy *dep;
	size_t ndep;
};

/* The collection that holds a's object, listed with the load's label. */
static char *coll_path(const struct ack *a)
{
	if (!strcmp(a->kind, "namespaces"))
		return xasprintf("/api/v1/tenants/%s/namespaces?labelSelector=ursa-region%%3Dload", a->tenant);
	return xasprintf("%s/tenants/%s/namespaces/%s/%s?labelSelector=ursa-region%%3Dload",
			 !strcmp(a->kind, "deployments") ? "/apis/apps/v1" : "/api/v1", a->tenant, a->ns, a->kind);
}

static int entry_cmp(const void *x, const void *y)
{
	const struct ack *a = ((const struct ventry *)x)->a, *b = ((const struct ventry *)y)->a;
	int r = strcmp(a->kind, b->kind);
	if (!r)
		r = strcmp(a->tenant, b->tenant);
	if (!r)
		r = strcmp(a->ns, b->ns);
	return r ? r : strcmp(a->name, b->name);
}

/* Does the stored object hold the acknowledged content? NULL if so, else why (new string). */
static char *content_diff(const struct ack *a, const json_t *obj)
{
	const json_t *c = a->content, *spec = json_object_get(obj, "spec");
	if (!c)
		return NULL;
	if (!strcmp(a->kind, "configmaps") || !strcmp(a->kind, "secrets")) {
		json_t *want = json_object_get(c, "data"), *have = json_object_get(obj, "data");
		bool same = (!want || !json_object_size(want)) ? (!have || !json_object_size(have))
							       : json_equal(want, have);
		if (!same) {
			char *w = json_dumps(want, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
			char *h = have ? json_dumps(have, JSON_COMPACT | JSON_SORT_KEYS) : xstrdup("null");
			char *r = xasprintf("data %s, acknowledged %s", h, w);
			free(w);
			free(h);
			return r;
		}
		return NULL;
	}
	if (!strcmp(a->kind, "deployments")) {
		json_int_t want = json_integer_value(json_object_get(c, "replicas"));
		json_t *have = json_object_get(spec, "replicas");
		if (!json_is_integer(have) || json_integer_value(have) != want)
			return xasprintf("spec.replicas %lld, acknowledged %lld", (long long)json_integer_value(have),
					 (long long)want);
		if (!json_subset(json_object_get(c, "template"), json_object_get(spec, "template")))
			return xstrdup("spec.template differs from the acknowledged one");
		return NULL;
	}
	if (!strcmp(a->kind, "services") && !json_subset(c, spec))
		return xstrdup("spec differs from the acknowledged one");
	return NULL;
}

/* Judges an entry by the object the list holds under its name (NULL: none). */
static void check_entry(struct ventry *e, const json_t *obj)
{
	const char *uid = json_string_value(json_object_get(json_object_get(obj, "metadata"), "uid"));
	bool put = !strcmp(e->a->op, "put");

	free(e->why);
	e->why = NULL;
	if (!obj) {
		e->st = put ? V_MISSING : V_OK;
	} else if (!put && e->a->uid && uid && strcmp(uid, e->a->uid) != 0) {
		e->st = V_OK; /* another object of the name (the load never makes one) */
	} else if (!put) {
		e->st = V_NOT_DELETED;
		e->why = xasprintf(
			"still there (uid %s%s)", uid ? uid : "?",
			json_object_get(json_object_get(obj, "metadata"), "deletionTimestamp") ? ", terminating" : "");
	} else if (e->a->uid && uid && strcmp(uid, e->a->uid) != 0) {
		e->st = V_MISMATCH;
		e->why = xasprintf("uid %s, acknowledged %s", uid, e->a->uid);
	} else if ((e->why = content_diff(e->a, obj)) != NULL) {
		e->st = V_MISMATCH;
	} else {
		e->st = V_OK;
	}
}

static void check_group(struct verify *V, const struct vgroup *g)
{
	bool todo = false;
	for (size_t i = g->from; i < g->to; i++)
		todo |= V->e[i].st != V_OK;
	if (!todo)
		return;
	char *path = coll_path(V->e[g->from].a);
	json_t *list = NULL;
	int st = drv_write(V->d, V->d->admin, "list", "GET", path, NULL, NULL, &list, NULL, NULL);
	free(path);
	if (st != 200) {
		for (size_t i = g->from; i < g->to; i++) {
			if (V->e[i].st == V_OK)
				continue;
			free(V->e[i].why);
			V->e[i].st = V_ERROR;
			V->e[i].why = xasprintf("list status %d", st);
		}
		json_decref(list);
		return;
	}
	struct strmap byname;
	size_t k;
	json_t *it;
	strmap_init(&byname);
	json_array_foreach (json_object_get(list, "items"), k, it) {
		const char *name = json_string_value(json_object_get(json_object_get(it, "metadata"), "name"));
		if (name)
			strmap_put(&byname, name, NULL)->val = it;
	}
	for (size_t i = g->from; i < g->to; i++) {
		if (V->e[i].st == V_OK)
			continue;
		struct strmap_ent *x = strmap_get(&byname, V->e[i].a->name);
		check_entry(&V->e[i], x ? x->val : NULL);
	}
	strmap_release(&byname, NULL);
	json_decref(list);
}

static void count_group(struct verify *V, const struct vgroup *g);

/* Workers over the groups: the objects' lists, then the Deployments' pods. */
static void *check_worker(void *arg)
{
	struct verify *V = arg;
	for (;;) {
		size_t i = atomic_fetch_add(&V->next, 1);
		if (i < V->ng)
			check_group(V, &V->g[i]);
		else if (i < V->ng + V->ndg)
			count_group(V, &V->dg[i - V->ng]);
		else
			return NULL;
	}
}

/* Splits a sorted array into runs of equal keys (cmp 0). */
static struct vgroup *make_groups(const void *arr, size_t n, size_t size, int (*cmp)(const void *, const void *),
				  size_t *ret_n)
{
	struct vgroup *g = xcalloc(n + 1, sizeof(*g));
	size_t ng = 0;
	const char *p = arr;
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		while (j < n && !cmp(p + i * size, p + j * size))
			j++;
		g[ng++] = (struct vgroup){i, j};
		i = j;
	}
	*ret_n = ng;
	return g;
}

static int group_cmp(const void *x, const void *y)
{
	const struct ack *a = ((const struct ventry *)x)->a, *b = ((const struct ventry *)y)->a;
	int r = strcmp(a->kind, b->kind);
	if (!r)
		r = strcmp(a->tenant, b->tenant);
	return r ? r : strcmp(a->ns, b->ns);
}

static int dep_cmp(const void *a, const void *b)
{
	const struct vdeploy *x = a, *y = b;
	int r = strcmp(x->tenant, y->tenant);
	return r ? r : strcmp(x->ns, y->ns);
}

/* Counts the Running pods of a namespace's expected Deployments (one list). */
static void count_group(struct verify *V, const struct vgroup *g)
{
	for (size_t x = g->from; x < g->to; x++) {
		V->dep[x].running = 0;
		V->dep[x].bad_image = 0;
	}
	char *path = xasprintf("/api/v1/tenants/%s/namespaces/%s/pods?labelSelector=ursa-region%%3Dload",
			       V->dep[g->from].tenant, V->dep[g->from].ns);
	json_t *list = NULL;
	int st = drv_write(V->d, V->d->admin, "list", "GET", path, NULL, NULL, &list, NULL, NULL);
	free(path);
	if (st != 200)
		atomic_fetch_add(&V->list_failed, 1);
	size_t k;
	json_t *pod;
	json_array_foreach (json_object_get(list, "items"), k, pod) {
		json_t *m = json_object_get(pod, "metadata");
		const char *app = json_string_value(json_object_get(json_object_get(m, "labels"), "app"));
		const char *phase = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
		if (!app || !phase || strcmp(phase, "Running") != 0 || json_object_get(m, "deletionTimestamp"))
			continue;
		for (size_t x = g->from; x < g->to; x++) {
			if (strcmp(V->dep[x].name, app) != 0)
				continue;
			V->dep[x].running++;
			json_t *c0 = json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), 0);
			const char *img = json_string_value(json_object_get(c0, "image"));
			if (V->dep[x].image && (!img || strcmp(img, V->dep[x].image) != 0))
				V->dep[x].bad_image++;
		}
	}
	json_decref(list);
}

static int read_acks(const char *out, struct strmap *m, long long *ret_lines, long long *ret_bad)
{
	char *p = xasprintf("%s/acked.jsonl", out);
	FILE *f = fopen(p, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	if (!f) {
		fprintf(stderr, "ursa-region verify: cannot read %s: %s\n", p, strerror(errno));
		free(p);
		return -1;
	}
	free(p);
	while ((n = getline(&line, &cap, f)) > 0) {
		struct ack a;
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			n--;
		if (n == 0)
			continue;
		if (ack_parse(line, (size_t)n, &a) < 0) {
			(*ret_bad)++;
			continue;
		}
		(*ret_lines)++;
		ack_fold(m, &a);
	}
	free(line);
	fclose(f);
	return 0;
}

int region_verify_main(int argc, char **argv)
{
	const char *env = NULL, *out = NULL;
	long long wait_s = 180, concurrency = 16;
	const struct opt opts[] = {
		{"env", OPT_STRING, &env, "region.env of the region (required)"},
		{"out", OPT_STRING, &out, "the load's directory (acked.jsonl, load.json); verify.json goes there"},
		{"wait", OPT_INT, &wait_s, "seconds to wait for everything to hold"},
		{"concurrency", OPT_INT, &concurrency, "checks in flight"},
	};
	if (opts_parse("ursa-region verify", "Checks that nothing was lost and nothing ran twice.", opts,
		       (int)(sizeof(opts) / sizeof(opts[0])), argc, argv) < 0)
		return 2;
	if (!out || wait_s < 0 || wait_s > 7200 || concurrency < 1 || concurrency > 256) {
		fprintf(stderr, "ursa-region verify: need --out; --wait 0..7200, --concurrency 1..256\n");
		return 2;
	}
	static struct drv d;
	if (drv_open(&d, "ursa-region verify", env, NULL) < 0)
		return 2;
	struct strmap m;
	long long lines = 0, bad_lines = 0;
	strmap_init(&m);
	int rc = 2;
	if (read_acks(out, &m, &lines, &bad_lines) < 0)
		goto out;
	/* the observer's record of the load */
	char *lp = xasprintf("%s/load.json", out);
	json_error_t jerr;
	json_t *load = json_load_file(lp, 0, &jerr);
	if (!load)
		fprintf(stderr, "ursa-region verify: %s: %s (no observer record)\n", lp, jerr.text);
	free(lp);
	json_t *obs = json_object_get(load, "observer");
	long long node_changes = json_integer_value(json_object_get(obs, "node_changes"));

	static struct verify V;
	V.d = &d;
	V.e = xcalloc(m.n + 1, sizeof(*V.e));
	V.dep = xcalloc(m.n + 1, sizeof(*V.dep));
	long long unknown = 0;
	size_t it = 0;
	for (struct strmap_ent *e = strmap_next(&m, NULL, &it); e; e = strmap_next(&m, e, &it)) {
		struct ack *a = e->val;
		if (!strcmp(a->op, "unknown")) {
			unknown++;
			continue;
		}
		V.e[V.n++] = (struct ventry){.key = e->key, .a = a, .st = V_PENDING};
		if (!strcmp(a->op, "put") && !strcmp(a->kind, "deployments")) {
			json_t *c0 = json_array_get(
				json_object_get(json_object_get(json_object_get(a->content, "template"), "spec"),
						"containers"),
				0);
			V.dep[V.ndep++] = (struct vdeploy){
				.tenant = a->tenant,
				.ns = a->ns,
				.name = a->name,
				.replicas = json_integer_value(json_object_get(a->content, "replicas")),
				.image = json_string_value(json_object_get(c0, "image"))};
		}
	}
	qsort(V.dep, V.ndep, sizeof(*V.dep), dep_cmp);
	qsort(V.e, V.n, sizeof(*V.e), entry_cmp);
	V.g = make_groups(V.e, V.n, sizeof(*V.e), group_cmp, &V.ng);
	V.dg = make_groups(V.dep, V.ndep, sizeof(*V.dep), dep_cmp, &V.ndg);
	printf("verify: %lld acknowledged writes (%lld unreadable lines) fold into %zu objects to check, %zu "
	       "Deployments; %lld objects with a write of unknown outcome are not judged\n",
	       lines, bad_lines, V.n, V.ndep, unknown);
	fflush(stdout);

	int64_t t0 = mono_ms(), deadline = t0 + wait_s * 1000;
	size_t counts[V_ERROR + 1];
	long long over = 0, short_ = 0, bad_image = 0, running = 0;
	int list_failed = 0; /* namespaces whose pods could not be listed */
	bool converged = false;
	pthread_t *th = xcalloc((size_t)concurrency, sizeof(*th));
	for (int round = 1;; round++) {
		atomic_store(&V.next, 0);
		atomic_store(&V.list_failed, 0);
		for (long long k = 0; k < concurrency; k++)
			pthread_create(&th[k], NULL, check_worker, &V);
		for (long long k = 0; k < concurrency; k++)
			pthread_join(th[k], NULL);
		list_failed = atomic_load(&V.list_failed);
		memset(counts, 0, sizeof(counts));
		for (size_t i = 0; i < V.n; i++)
			counts[V.e[i].st]++;
		over = short_ = bad_image = running = 0;
		for (size_t i = 0; i < V.ndep; i++) {
			over += V.dep[i].running > V.dep[i].replicas;
			short_ += V.dep[i].running < V.dep[i].replicas;
			bad_image += V.dep[i].bad_image;
			running += V.dep[i].running;
		}
		converged = counts[V_OK] == V.n && over == 0 && short_ == 0 && bad_image == 0 && list_failed == 0;
		printf("verify: round %d, %.0f s: %zu/%zu objects hold (missing %zu, mismatched %zu, not deleted %zu, "
		       "unchecked %zu); Deployments over replicas %lld, short %lld; %lld pods Running\n",
		       round, (double)(mono_ms() - t0) / 1000.0, counts[V_OK], V.n, counts[V_MISSING],
		       counts[V_MISMATCH], counts[V_NOT_DELETED], counts[V_ERROR], over, short_, running);
		fflush(stdout);
		if (converged || mono_ms() >= deadline)
			break;
		drv_sleep_until(mono_us() + 2000000, NULL);
	}
	free(th);

	json_t *examples = json_array();
	for (size_t i = 0; i < V.n && json_array_size(examples) < MAX_EXAMPLES; i++)
		if (V.e[i].st != V_OK)
			json_array_append_new(examples,
					      json_pack("{s:s, s:s, s:s, s:s?}", "object", V.e[i].key, "problem",
							vstate_name[V.e[i].st], "uid",
							V.e[i].a->uid ? V.e[i].a->uid : "", "detail", V.e[i].why));
	for (size_t i = 0; i < V.ndep && json_array_size(examples) < MAX_EXAMPLES; i++)
		if (V.dep[i].running != V.dep[i].replicas || V.dep[i].bad_image)
			json_array_append_new(examples,
					      json_pack("{s:s++++, s:s, s:I, s:I, s:I}", "object", V.dep[i].tenant, "/",
							V.dep[i].ns, "/", V.dep[i].name, "problem",
							V.dep[i].running > V.dep[i].replicas ? "over_replicas"
							: V.dep[i].bad_image		     ? "wrong_image"
											     : "short",
							"replicas", (json_int_t)V.dep[i].replicas, "running",
							(json_int_t)V.dep[i].running, "wrong_image",
							(json_int_t)V.dep[i].bad_image));
	long long lost = (long long)(counts[V_MISSING]);
	long long failures = lost + (long long)(counts[V_MISMATCH] + counts[V_NOT_DELETED] + counts[V_ERROR]) +
			     (short_ == 0 ? over : 0) + bad_image + node_changes + bad_lines + list_failed;
	json_t *res = json_pack(
		"{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:O}, s:b, "
		"s:b, "
		"s:f, s:o}",
		"writes_acknowledged", (json_int_t)lines, "unreadable_lines", (json_int_t)bad_lines, "unknown_outcome",
		(json_int_t)unknown, "objects_checked", (json_int_t)V.n, "ok", (json_int_t)counts[V_OK], "missing",
		(json_int_t)counts[V_MISSING], "mismatched", (json_int_t)counts[V_MISMATCH], "not_deleted",
		(json_int_t)counts[V_NOT_DELETED], "unchecked", (json_int_t)counts[V_ERROR], "lost", (json_int_t)lost,
		"pods", "deployments_checked", (json_int_t)V.ndep, "running", (json_int_t)running, "over_replicas",
		(json_int_t)over, "short", (json_int_t)short_, "wrong_image", (json_int_t)bad_image, "node_changes",
		(json_int_t)node_changes, "namespaces_unlisted", (json_int_t)list_failed, "node_change_examples",
		json_object_get(obs, "examples") ? json_object_get(obs, "examples") : json_null(), "converged",
		converged, "pass", failures == 0, "seconds", (double)(mono_ms() - t0) / 1000.0, "examples", examples);
	char *text = json_dumps(res, JSON_INDENT(1) | JSON_SORT_KEYS);
	drv_write_file(out, "verify.json", text, strlen(text));
	free(text);
	printf("RESULT {\"phase\":\"verify\",\"pass\":%s,\"writes_acknowledged\":%lld,\"objects_checked\":%zu,"
	       "\"missing\":%zu,\"mismatched\":%zu,\"not_deleted\":%zu,\"unchecked\":%zu,\"over_replicas\":%lld,"
	       "\"node_changes\":%lld,\"short\":%lld,\"converged\":%s}\n",
	       failures ? "false" : "true", lines, V.n, counts[V_MISSING], counts[V_MISMATCH], counts[V_NOT_DELETED],
	       counts[V_ERROR], over, node_changes, short_, converged ? "true" : "false");
	fflush(stdout);
	json_decref(res);
	json_decref(load);
	for (size_t i = 0; i < V.n; i++)
		free(V.e[i].why);
	free(V.e);
	free(V.dep);
	free(V.g);
	free(V.dg);
	rc = failures ? 1 : 0;
out:
	ack_fold_release(&m);
	drv_close(&d);
	return rc;
}
