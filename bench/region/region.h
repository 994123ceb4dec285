/* ursa-region (bench/ursa-region.c): the region simulation's tenants, load and verify phases
 * (issue 21). This header holds its pure parts (region/pure.c: region.env, pacing, histograms,
 * Kubernetes' SLI scope of a call, TSV lines, the acknowledged-writes log, JSON subsets), unit
 * tested in tests/unit/bench/ and fuzzed (tests/fuzz/fuzz_bench_*.c), and the subcommands
 * (region/tenants.c, region/load.c, region/verify.c). No part is thread-safe unless stated. */
#ifndef URSA_BENCH_REGION_H
#define URSA_BENCH_REGION_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ursa/buf.h"
#include "ursa/strmap.h"

/* ---- region.env: what bench/run-region.sh writes (sourceable shell assignments) ---- */
struct region_env {
	char *gateway_url, *ca_file, *signing_key, *admin_token_file; /* NULL when absent */
	char *tp_urls, *rm_urls;
	long long nodes, tenants; /* -1 when absent */
};
/* Parses lines of `KEY=VALUE` assignments (several per line, separated by blanks; an optional
 * leading `export`; VALUE bare, '…' or "…" with backslash escapes; `#` starts a comment outside
 * quotes; unknown keys ignored). 0 and *ret filled (release it), or -1 with a new message in
 * *ret_err (unterminated quote, a word that is no assignment, a bad number, at most 1 MiB). */
int region_env_parse(const char *text, size_t len, struct region_env *ret, char **ret_err);
void region_env_release(struct region_env *e);

/* The i-th tenant (from 1) of a run: "<prefix>-00001" (at least 5 digits). New string. */
char *region_tenant_name(const char *prefix, long long i);

/* ---- open-loop pacing: pods due at `rate` per second for `duration_s`, then `burst_rate`
 * for `burst_s` ---- */
struct pace {
	double rate, burst_rate;
	double duration_s, burst_s;
};
/* Pods in the whole schedule. */
long long pace_total(const struct pace *p);
/* Microseconds after the start at which pod number `pods` (from 0) is due; pods past the
 * total are due at the schedule's end. */
int64_t pace_due_us(const struct pace *p, long long pods);

/* ---- latency histogram: log buckets of about 2 % from 1 µs to ~1000 s ---- */
#define HIST_BUCKETS 1400
struct hist {
	uint64_t n;
	int64_t max;
	double sum;
	uint32_t b[HIST_BUCKETS];
};
void hist_add(struct hist *h, int64_t v);
void hist_merge(struct hist *dst, const struct hist *src);
/* The value below which a fraction q (0..1) of the samples lie (the bucket's upper bound, never
 * above max); 0 when empty. */
int64_t hist_quantile(const struct hist *h, double q);
int hist_bucket(int64_t v); /* exposed for the test */
int64_t hist_bucket_upper(int b);

/* ---- Kubernetes' API call latency SLI: scope of a call ---- */
enum sli_scope { SLI_RESOURCE, SLI_NAMESPACE, SLI_CLUSTER };
const char *sli_scope_name(enum sli_scope s);
/* The resource (plural, subresource appended as "pods/status") and scope of a request path
 * (query ignored) as the API server's request metrics name them: a named object or a create is
 * "resource", else a namespace's collection "namespace", else "cluster" (a tenant's collections
 * count as cluster scope). verb is create/get/list/update/patch/delete/watch-start. Writes
 * at most rsz - 1 bytes of the resource ("" if the path has none). */
enum sli_scope sli_classify(const char *verb, const char *path, char *resource, size_t rsz);
/* True for the mutating verbs (create, update, patch, delete). */
bool sli_mutating(const char *verb);

/* ---- TSV lines (fields with tabs or newlines get spaces) ---- */
void tsv_field(struct buf *out, const char *s);
/* calls.tsv: t_ms verb resource scope latency_us code */
void tsv_call_line(struct buf *out, int64_t t_ms, const char *verb, const char *resource, enum sli_scope scope,
		   int64_t latency_us, int code);
/* pods.tsv: tenant namespace name uid created_ms running_ms node (running_ms empty when < 0) */
void tsv_pod_line(struct buf *out, const char *tenant, const char *ns, const char *name, const char *uid,
		  int64_t created_ms, int64_t running_ms, const char *node);

/* ---- acknowledged writes (acked.jsonl): one JSON object a line ----
 * {"op":"put"|"delete"|"unknown","kind":"configmaps"|...,"tenant":..,"ns":..,"name":..,"uid":..,"rv":..,
 *  "content":{..}} — "put" is a create or update the server acknowledged with the content given
 * (for deployments {"replicas":N,"template":{..}}, configmaps and secrets {"data":{..}}, services
 * {"selector":..,"ports":..}); "delete" an acknowledged delete; "unknown" a write whose outcome
 * the client never learnt (its retries ended in transport errors or 5xx: not judged). ns "" for
 * cluster-scoped kinds. */
struct ack {
	char *op, *kind, *tenant, *ns, *name, *uid, *rv; /* rv may be NULL */
	json_t *content;				 /* may be NULL */
};
/* 0 and *ret filled (release it), or -1 (not a JSON object, a field missing or of the wrong type,
 * an unknown op). */
int ack_parse(const char *line, size_t len, struct ack *ret);
void ack_release(struct ack *a);
/* The line for an ack (without newline). */
void ack_format(struct buf *out, const struct ack *a);
/* Folds acks into what must hold at the end: map key "kind/tenant/ns/name" -> struct ack (the
 * last acknowledged write of the object, owned by the map: free with ack_fold_release). Takes a
 * over (its fields move into the map). */
void ack_fold(struct strmap *m, struct ack *a);
void ack_fold_release(struct strmap *m);

/* ---- JSON subset: every member of given is in have with an equal value (recursively for
 * objects; arrays element by element, same length; numbers compare as numbers) ---- */
bool json_subset(const json_t *given, const json_t *have);

/* ---- subcommands (region/tenants.c, load.c, verify.c): each returns the exit code ---- */
int region_tenants_main(int argc, char **argv);
int region_load_main(int argc, char **argv);
int region_verify_main(int argc, char **argv);

#endif
