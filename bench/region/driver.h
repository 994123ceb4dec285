/* ursa-region's shared driver state (region/common.c): region.env, the admin client, every API
 * call timed and recorded (calls.tsv, per verb/resource/scope histograms), client-go-style
 * retries of writes. Thread-safe unless stated. */
#ifndef URSA_BENCH_DRIVER_H
#define URSA_BENCH_DRIVER_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include "region/region.h"
#include "ursa/client.h"

#define DRV_MAX_STATS 96
#define DRV_RESOURCE_MAX 64

struct drv_stat {
	char verb[16], resource[DRV_RESOURCE_MAX];
	enum sli_scope scope;
	uint64_t errors; /* unwanted answers (common.c is_error) */
	struct hist h;
};

struct drv {
	struct region_env env;
	char *admin_token;
	struct rest_client *admin;
	pthread_mutex_t lock; /* guards everything below */
	FILE *calls;	      /* calls.tsv or NULL */
	struct buf calls_buf;
	struct drv_stat *stats; /* DRV_MAX_STATS */
	size_t nstats;
	struct hist mutating, readonly; /* all calls, for progress */
	atomic_llong ncalls, nerrors, nretries, n429;
};

/* Reads env_path and the admin token, makes the admin client; with out_dir, opens
 * out_dir/calls.tsv (truncated, header written). 0, or -1 after printing why. */
int drv_open(struct drv *d, const char *prog, const char *env_path, const char *out_dir);
void drv_close(struct drv *d); /* flushes calls.tsv */
/* A client of the gateway with this token (admin: NULL token means the admin's). */
struct rest_client *drv_client(struct drv *d, const char *token);

/* One request, timed and recorded under verb (create/get/list/update/patch/delete). Returns
 * the HTTP status or a negative error (transport). */
int drv_call(struct drv *d, struct rest_client *c, const char *verb, const char *method, const char *path,
	     const json_t *body, const char *content_type, json_t **ret_body);
/* A write (or a read that must answer: verify's lists) retried as client-go retries writes: after a transport error, a
 * 5xx or a 429 (waiting the Status' details.retryAfterSeconds or the gateway's "retry in N s" (its Retry-After; at most
 * 10 s), else 0.25 s doubling to 4 s), at most 10 attempts within
 * 60 s or until *stop. Returns the last status. *ret_retried: attempts beyond the first. */
int drv_write(struct drv *d, struct rest_client *c, const char *verb, const char *method, const char *path,
	      const json_t *body, const char *content_type, json_t **ret_body, int *ret_retried,
	      const atomic_bool *stop);
/* Records a call timed elsewhere (a watch's start). */
void drv_record(struct drv *d, const char *verb, const char *path, int64_t t_ms, int64_t latency_us, int code);
/* The stats as a JSON array [{verb, resource, scope, count, errors, p50_ms, p90_ms, p99_ms,
 * max_ms}], sorted. New reference. */
json_t *drv_stats_json(struct drv *d);
/* Snapshot of the p99 of mutating and read-only calls so far (ms). */
void drv_p99(struct drv *d, double *ret_mut_ms, double *ret_ro_ms);

/* The token of a tenant's administrator "loader" (group ursa:tenant-admins, 48 h), as `tenants`
 * checks it and `load` acts with it (region/tenants.c). New string, or NULL with *ret_err. */
struct jwt_signer;
char *region_user_token(const struct jwt_signer *s, const char *tenant, char **ret_err);

/* The load's observer (region/observe.c): one watch of every tenant's pods labelled
 * ursa-region=load through the gateway as the admin, from a first list whose pods are left out
 * (an earlier run's); first sight and first Running of each pod, pods whose node changed. */
struct observer;
struct obs_stats {
	long long seen, running, node_changes, relists;
	long long pending, live; /* not deleted: not Running yet / Running */
	struct hist startup;	 /* µs from first sight to Running */
};
/* Lists (for at most 30 s, until it answers), then watches on a thread of its own until *stop. */
struct observer *observer_start(struct drv *d, const atomic_bool *stop);
void observer_join(struct observer *o); /* after *stop is set */
void observer_free(struct observer *o); /* joins; NULL-safe */
void observer_stats(struct observer *o, struct obs_stats *ret);
json_t *observer_examples(struct observer *o); /* pods whose node changed (at most 20), new reference */
/* dir/pods.tsv: tenant namespace name uid created_ms running_ms node. 0 or -1. */
int observer_write_tsv(struct observer *o, const char *dir);

/* Sleeps until mono_us() >= t_us or *stop, in steps of at most 100 ms. */
void drv_sleep_until(int64_t t_us, const atomic_bool *stop);
/* Writes text to dir/name (replacing it). 0 or -1 after printing why. */
int drv_write_file(const char *dir, const char *name, const char *text, size_t len);
/* Raises the open files limit to its hard limit (many tenants' connections). */
void drv_raise_nofile(void);

#endif
