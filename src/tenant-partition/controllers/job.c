/* Job controller (batch/v1): pods up to parallelism while completions remain (NonIndexed and
 * Indexed), failures retried with back-off up to backoffLimit, podFailurePolicy (FailJob, Ignore,
 * Count; job_pod_failure_match in joblogic.c), activeDeadlineSeconds, suspend,
 * ttlSecondsAfterFinished, and the status kubectl reads (counts, times, Complete/Failed). The
 * decisions are job_plan's (joblogic.c); this file reads pods and writes the result. */
#include <stdlib.h>
#include <string.h>
#include "batch.h"
#include "tpc.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/selector.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define MAX_BURST 500

struct job_ctx {
	struct tpc *m;
	const char *key;
	json_t *job; /* live (borrowed from the sync's struct tpc_live) */
	const char *tenant, *ns, *name, *uid;
	json_t *active;    /* owned active pods (array, owned) */
	long long succeeded, failed;
	int64_t last_fail_ms;
	bool indexed;
	long long completions;
	char *state; /* Indexed: per index 0 / 'a' / 's' */
	const json_t *policy; /* spec.podFailurePolicy (borrowed) or NULL */
	struct buf fail_msg;  /* set when a failed pod matched a FailJob rule */
	long long ignored;    /* failed pods a rule said to Ignore */
	int err;
};

static const json_t *true_condition(const json_t *job, const char *type)
{
	size_t i;
	json_t *c;
	json_array_foreach(json_path(job, "status.conditions"), i, c) {
		const char *t = json_str(c, "type"), *s = json_str(c, "status");
		if (t && s && !strcmp(t, type) && !strcmp(s, "True"))
			return c;
	}
	return NULL;
}

static int64_t ts_ms(const char *s)
{
	time_t t;
	return s && rfc3339_parse(s, &t) == 0 ? (int64_t)t * 1000 : -1;
}

/* When a failed pod failed: its last container's finishedAt, else its newest condition
 * transition, else its creation. */
static int64_t pod_fail_ms(const json_t *pod)
{
	int64_t best = -1;
	size_t i;
	json_t *cs;
	json_array_foreach(json_path(pod, "status.containerStatuses"), i, cs) {
		int64_t t = ts_ms(json_path_str(cs, "state.terminated.finishedAt"));
		if (t > best)
			best = t;
	}
	if (best >= 0)
		return best;
	json_array_foreach(json_path(pod, "status.conditions"), i, cs) {
		int64_t t = ts_ms(json_str(cs, "lastTransitionTime"));
		if (t > best)
			best = t;
	}
	return best >= 0 ? best : ts_ms(json_path_str(pod, "metadata.creationTimestamp"));
}

static long long pod_index(const json_t *pod)
{
	const char *s = json_str(json_path(pod, "metadata.annotations"), JOB_INDEX_ANN);
	long long v;
	if (!s || parse_int64(s, &v) != 0)
		return -1;
	return v;
}

static int load_pods(struct job_ctx *c)
{
	int rc;
	json_t *items = tpc_list_controlled(c->m, "pods", c->tenant, c->ns, json_path(c->job, "spec.selector"), c->uid,
					    false, NULL, &rc);
	if (!items)
		goto out;
	c->active = json_array();
	c->last_fail_ms = -1;
	size_t i;
	json_t *pod;
	json_array_foreach(items, i, pod) {
		const char *ruid = json_str(json_controller_ref(pod), "uid");
		if (!ruid || strcmp(ruid, c->uid) != 0)
			continue;
		const char *phase = json_path_str(pod, "status.phase");
		long long idx = c->indexed ? pod_index(pod) : -1;
		bool in_range = idx >= 0 && idx < c->completions;
		if (phase && !strcmp(phase, "Succeeded")) {
			if (!c->indexed)
				c->succeeded++;
			else if (in_range && c->state[idx] != 's')
				c->state[idx] = 's', c->succeeded++;
		} else if (phase && !strcmp(phase, "Failed")) {
			bool first = c->fail_msg.len == 0;
			enum pfp_action act = c->policy ? job_pod_failure_match(c->policy, pod, first ? &c->fail_msg : NULL)
							: PFP_NO_MATCH;
			if (act == PFP_IGNORE) {
				c->ignored++; /* neither counted toward backoffLimit nor delaying new pods */
				continue;
			}
			c->failed++;
			int64_t t = pod_fail_ms(pod);
			if (t > c->last_fail_ms)
				c->last_fail_ms = t;
		} else if (!json_path(pod, "metadata.deletionTimestamp")) {
			json_array_append(c->active, pod);
			if (in_range && c->state[idx] == 0)
				c->state[idx] = 'a';
		}
	}
out:
	json_decref(items);
	return rc;
}

static json_t *owner_ref(const json_t *job)
{
	return json_pack("{s:s,s:s,s:s?,s:s?,s:b,s:b}", "apiVersion", "batch/v1", "kind", "Job", "name",
			 json_path_str(job, "metadata.name"), "uid", json_path_str(job, "metadata.uid"), "controller",
			 1, "blockOwnerDeletion", 1);
}

/* A pod of the job's template; index >= 0 for Indexed jobs. */
static json_t *pod_from_template(const json_t *job, long long index)
{
	const json_t *t = json_path(job, "spec.template");
	const char *name = json_path_str(job, "metadata.name");
	char *gen = index >= 0 ? xasprintf("%s-%lld-", name, index) : xasprintf("%s-", name);
	json_t *meta = json_pack("{s:s}", "generateName", gen);
	free(gen);
	json_t *labels = json_deep_copy(json_path(t, "metadata.labels"));
	json_t *ann = json_deep_copy(json_path(t, "metadata.annotations"));
	if (!json_is_object(labels))
		json_decref(labels), labels = json_object();
	if (!json_is_object(ann))
		json_decref(ann), ann = json_object();
	json_t *spec = json_deep_copy(json_path(t, "spec"));
	if (!json_is_object(spec))
		json_decref(spec), spec = json_object();
	if (index >= 0) {
		char num[32];
		snprintf(num, sizeof(num), "%lld", index);
		json_object_set_new(labels, JOB_INDEX_ANN, json_string(num));
		json_object_set_new(ann, JOB_INDEX_ANN, json_string(num));
		size_t i;
		json_t *ctr;
		json_array_foreach(json_object_get(spec, "containers"), i, ctr) {
			json_t *env = json_object_get(ctr, "env");
			if (!json_is_array(env)) {
				env = json_array();
				json_object_set_new(ctr, "env", env);
			}
			json_array_append_new(env,
					      json_pack("{s:s,s:s}", "name", "JOB_COMPLETION_INDEX", "value", num));
		}
	}
	json_object_set_new(meta, "labels", labels);
	json_object_set_new(meta, "annotations", ann);
	json_object_set_new(meta, "ownerReferences", json_pack("[o]", owner_ref(job)));
	return json_pack("{s:s,s:s,s:o,s:o}", "apiVersion", "v1", "kind", "Pod", "metadata", meta, "spec", spec);
}

static long long create_pods(struct job_ctx *c, long long n)
{
	struct buf path = BUF_INIT;
	tpc_path(&path, "pods", c->tenant, c->ns, NULL);
	long long *idx = NULL, made = 0;
	if (c->indexed) {
		idx = xcalloc((size_t)(n > 0 ? n : 1), sizeof(*idx));
		n = job_pick_indexes(c->state, c->completions, n, idx);
	}
	tpc_expect_creations(tpc_exp(c->m, CTL_JOB), c->key, c->uid, n, mono_ms());
	for (long long i = 0; i < n && !c->err; i++) {
		json_t *pod = pod_from_template(c->job, idx ? idx[i] : -1), *resp = NULL;
		int rc = tpc_send(c->m, "POST", path.ptr, pod, &resp);
		if (rc == 201 || rc == 200) {
			made++;
			if (idx)
				c->state[idx[i]] = 'a';
			tpc_event(c->m, c->job, "Normal", "SuccessfulCreate", "Created pod: %s",
				  json_path_str(resp, "metadata.name"));
		} else {
			tpc_event(c->m, c->job, "Warning", "FailedCreate", "Error creating: %s",
				  json_str(resp, "message") ? json_str(resp, "message") : "server unavailable");
			c->err = E_UNAVAILABLE;
		}
		json_decref(resp);
		json_decref(pod);
	}
	tpc_expect_created(tpc_exp(c->m, CTL_JOB), c->key, c->uid, n - made); /* never made */
	free(idx);
	buf_release(&path);
	return made;
}

/* Deletes n active pods (newest first); returns how many went. */
static long long delete_pods(struct job_ctx *c, long long n)
{
	long long gone = 0;
	for (size_t i = json_array_size(c->active); i > 0 && gone < n; i--) {
		const json_t *pod = json_array_get(c->active, i - 1);
		const char *pname = json_path_str(pod, "metadata.name");
		struct buf path = BUF_INIT;
		char *pk = object_key(pod);
		tpc_expect_deletion(tpc_exp(c->m, CTL_JOB), c->key, c->uid, pk, mono_ms());
		tpc_path(&path, "pods", c->tenant, c->ns, pname);
		int rc = tpc_send(c->m, "DELETE", path.ptr, NULL, NULL);
		buf_release(&path);
		if (rc != 200 && rc != 202)
			tpc_expect_deleted(tpc_exp(c->m, CTL_JOB), c->key, c->uid, pk); /* nothing to observe */
		free(pk);
		if (rc == 200 || rc == 202 || rc == 404) {
			gone++;
			tpc_event(c->m, c->job, "Normal", "SuccessfulDelete", "Deleted pod: %s", pname);
			json_array_remove(c->active, i - 1);
		} else {
			c->err = E_UNAVAILABLE;
		}
	}
	return gone;
}

static void set_condition(json_t *st, const char *type, const char *status, const char *reason, const char *msg,
			  const char *now)
{
	json_t *conds = json_object_get(st, "conditions");
	if (!json_is_array(conds)) {
		conds = json_array();
		json_object_set_new(st, "conditions", conds);
	}
	size_t i;
	json_t *c;
	json_array_foreach(conds, i, c) {
		const char *t = json_str(c, "type");
		if (t && !strcmp(t, type)) {
			const char *s = json_str(c, "status");
			if (s && !strcmp(s, status))
				return;
			json_object_set_new(c, "status", json_string(status));
			json_object_set_new(c, "reason", json_string(reason));
			json_object_set_new(c, "message", json_string(msg));
			json_object_set_new(c, "lastProbeTime", json_string(now));
			json_object_set_new(c, "lastTransitionTime", json_string(now));
			return;
		}
	}
	json_array_append_new(conds, json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "type", type, "status", status, "reason",
					       reason, "message", msg, "lastProbeTime", now, "lastTransitionTime",
					       now));
}

static int put_status(struct job_ctx *c, json_t *st)
{
	if (json_equal(json_object_get(c->job, "status"), st))
		return 0;
	json_t *body = json_deep_copy(c->job);
	json_object_set(body, "status", st);
	struct buf path = BUF_INIT;
	tpc_path(&path, "jobs", c->tenant, c->ns, c->name);
	buf_adds(&path, "/status");
	int code = tpc_send(c->m, "PUT", path.ptr, body, NULL);
	buf_release(&path);
	json_decref(body);
	return code == 200 || code == 404 ? 0 : code == 409 ? E_CONFLICT : E_UNAVAILABLE;
}

/* A finished job: remove leftover active pods; delete the job ttlSecondsAfterFinished after it
 * finished. */
static int finished(struct job_ctx *c, const char *key, const json_t *cond)
{
	if (load_pods(c) == 0 && json_array_size(c->active) > 0)
		delete_pods(c, (long long)json_array_size(c->active));
	const json_t *ttl = json_path(c->job, "spec.ttlSecondsAfterFinished");
	if (!json_is_integer(ttl))
		return c->err;
	int64_t end = ts_ms(json_path_str(c->job, "status.completionTime"));
	if (end < 0)
		end = ts_ms(json_str(cond, "lastTransitionTime"));
	if (end < 0)
		end = now_ms();
	int64_t due = end + json_integer_value(ttl) * 1000, now = now_ms();
	if (now < due) {
		wq_add_after(c->m->wq[CTL_JOB], key, due - now + 100);
		return c->err;
	}
	json_t *body = json_pack("{s:s,s:s,s:s,s:{s:s?}}", "kind", "DeleteOptions", "apiVersion", "v1",
				 "propagationPolicy", "Background", "preconditions", "uid", c->uid);
	struct buf path = BUF_INIT;
	tpc_path(&path, "jobs", c->tenant, c->ns, c->name);
	int code = tpc_send(c->m, "DELETE", path.ptr, body, NULL);
	buf_release(&path);
	json_decref(body);
	if (code == 200 || code == 202)
		log_info("job deleted after ttlSecondsAfterFinished", "tenant=\"%s\" namespace=\"%s\" name=\"%s\"",
			 c->tenant, c->ns, c->name);
	return code == 200 || code == 202 || code == 404 || code == 409 ? c->err : E_UNAVAILABLE;
}

int tpc_sync_job(struct tpc *m, const char *key)
{
	struct tpc_live live;
	struct buf now_s = BUF_INIT, idxs = BUF_INIT;
	struct job_ctx c = { .m = m, .key = key };
	json_t *st = NULL;
	int rc = tpc_get_live(m, "jobs", key, 0, &live);
	if (rc == 0)
		tpc_expect_forget(tpc_exp(m, CTL_JOB), key);
	if (rc <= 0)
		return rc;
	rc = 0;
	int64_t wait_ms;
	if (!tpc_expect_satisfied(tpc_exp(m, CTL_JOB), key, live.uid, mono_ms(), &wait_ms)) {
		/* the pod informer has not seen all this controller wrote: its events re-queue the key */
		wq_add_after(m->wq[CTL_JOB], key, wait_ms + 100);
		goto out;
	}
	const char *t = live.tenant, *ns = live.ns, *name = live.name;
	c.job = live.obj, c.tenant = t, c.ns = ns, c.name = name, c.uid = live.uid;
	c.policy = json_path(c.job, "spec.podFailurePolicy");
	const char *mode = json_path_str(c.job, "spec.completionMode");
	const json_t *comp = json_path(c.job, "spec.completions");
	c.completions = json_is_integer(comp) ? json_integer_value(comp) : -1;
	c.indexed = mode && !strcmp(mode, "Indexed");
	if (c.indexed && (c.completions < 0 || c.completions > JOB_MAX_INDEXES))
		goto out; /* refused: validation requires completions; huge index sets are not kept */
	if (c.indexed)
		c.state = xcalloc((size_t)c.completions + 1, 1);
	const json_t *done = true_condition(c.job, "Complete");
	if (!done)
		done = true_condition(c.job, "Failed");
	if (done) {
		rc = finished(&c, key, done);
		goto out;
	}
	if ((rc = load_pods(&c)) < 0) {
		rc = rc == E_INVALID ? 0 : rc;
		goto out;
	}
	int64_t now = now_ms();
	rfc3339_add(&now_s, (time_t)(now / 1000));
	bool suspend = json_is_true(json_path(c.job, "spec.suspend"));
	st = json_deep_copy(json_object_get(c.job, "status"));
	if (!json_is_object(st))
		json_decref(st), st = json_object();
	if (!suspend && !json_object_get(st, "startTime"))
		json_object_set_new(st, "startTime", json_string(now_s.ptr));
	const json_t *ads = json_path(c.job, "spec.activeDeadlineSeconds");
	struct job_in in = {
		.completions = c.completions,
		.parallelism = json_integer_value(json_path(c.job, "spec.parallelism")),
		.backoff_limit = json_is_integer(json_path(c.job, "spec.backoffLimit"))
					 ? json_integer_value(json_path(c.job, "spec.backoffLimit")) : 6,
		.deadline_s = json_is_integer(ads) ? json_integer_value(ads) : -1,
		.suspend = suspend,
		.active = (long long)json_array_size(c.active),
		.succeeded = c.succeeded,
		.failed = c.failed,
		.now_ms = now,
		.start_ms = ts_ms(json_str(st, "startTime")),
		.last_fail_ms = c.last_fail_ms,
		.backoff_base_ms = m->job_backoff_base_ms > 0 ? m->job_backoff_base_ms : 10000,
	};
	if (!json_is_integer(json_path(c.job, "spec.parallelism")))
		in.parallelism = 1;
	struct job_out plan;
	job_plan(&in, &plan);
	if (c.fail_msg.len) { /* a FailJob rule matched: it wins over deadline, backoff and completion */
		plan.verdict = JOB_FAILED;
		plan.reason = "PodFailurePolicy";
		plan.message = c.fail_msg.ptr;
		plan.create = 0;
		plan.remove = in.active;
		plan.recheck_ms = 0;
	}
	if (plan.remove > 0)
		delete_pods(&c, plan.remove > MAX_BURST ? MAX_BURST : plan.remove);
	long long made = 0;
	if (plan.create > 0)
		made = create_pods(&c, plan.create > MAX_BURST ? MAX_BURST : plan.create);
	json_object_set_new(st, "active", json_integer((json_int_t)json_array_size(c.active) + made));
	json_object_set_new(st, "succeeded", json_integer(c.succeeded));
	json_object_set_new(st, "failed", json_integer(c.failed));
	long long ready = 0;
	size_t pi;
	json_t *pp;
	json_array_foreach(c.active, pi, pp) ready += tpc_pod_ready(pp);
	json_object_set_new(st, "ready", json_integer(ready));
	if (c.indexed) {
		job_format_indexes(c.state, c.completions, &idxs);
		if (idxs.len)
			json_object_set_new(st, "completedIndexes", json_string(idxs.ptr));
	}
	if (suspend)
		set_condition(st, "Suspended", "True", "JobSuspended", "Job suspended", now_s.ptr);
	else if (json_object_get(st, "conditions"))
		set_condition(st, "Suspended", "False", "JobResumed", "Job resumed", now_s.ptr);
	if (plan.verdict == JOB_COMPLETE) {
		set_condition(st, "SuccessCriteriaMet", "True", plan.reason, plan.message, now_s.ptr);
		set_condition(st, "Complete", "True", plan.reason, plan.message, now_s.ptr);
		json_object_set_new(st, "completionTime", json_string(now_s.ptr));
		json_object_set_new(st, "active", json_integer(0));
		tpc_event(m, c.job, "Normal", "Completed", "Job completed");
	} else if (plan.verdict == JOB_FAILED) {
		set_condition(st, "FailureTarget", "True", plan.reason, plan.message, now_s.ptr);
		set_condition(st, "Failed", "True", plan.reason, plan.message, now_s.ptr);
		json_object_set_new(st, "active", json_integer(0));
		tpc_event(m, c.job, "Warning", plan.reason, "%s", plan.message);
	}
	rc = put_status(&c, st);
	if (!rc)
		rc = c.err;
	if (plan.recheck_ms > 0)
		wq_add_after(m->wq[CTL_JOB], key, plan.recheck_ms + 50);
	if (made || plan.remove || plan.verdict != JOB_RUNNING)
		log_info("job synced",
			 "tenant=\"%s\" namespace=\"%s\" name=\"%s\" created=%lld removed=%lld verdict=%d", t, ns,
			 name, made, plan.remove, (int)plan.verdict);
out:
	json_decref(c.active);
	json_decref(st);
	free(c.state);
	buf_release(&c.fail_msg);
	buf_release(&now_s);
	buf_release(&idxs);
	tpc_live_release(&live);
	return rc;
}
