/* CronJob controller (batch/v1): creates a Job `<cronjob>-<minutes since epoch>` for the most
 * recent missed scheduled time (at most one catch-up; an event when more than 100 were
 * missed), within startingDeadlineSeconds, honouring concurrencyPolicy and suspend; keeps the
 * history limits and status (active, lastScheduleTime, lastSuccessfulTime). Synced on changes
 * of the CronJob and its Jobs, at the next scheduled time and every period. The clock is the
 * wall clock plus --cronjob-now-offset (tests). */
#include <stdlib.h>
#include <string.h>
#include "batch.h"
#include "tpc.h"
#include "ursa/cron.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

struct cj_ctx {
	struct tpc *m;
	json_t *cj;
	const char *tenant, *ns, *name, *uid;
	json_t *jobs; /* owned by this cronjob (array, owned) */
};

static const char *finished_type(const json_t *job)
{
	size_t i;
	json_t *c;
	json_array_foreach(json_path(job, "status.conditions"), i, c) {
		const char *t = json_str(c, "type"), *s = json_str(c, "status");
		if (t && s && !strcmp(s, "True") && (!strcmp(t, "Complete") || !strcmp(t, "Failed")))
			return t;
	}
	return NULL;
}

static int64_t ts_s(const char *s)
{
	time_t t;
	return s && rfc3339_parse(s, &t) == 0 ? (int64_t)t : -1;
}

/* A job's scheduled time: its annotation, else its creation. */
static int64_t job_time(const json_t *job)
{
	int64_t t = ts_s(json_str(json_path(job, "metadata.annotations"), CRONJOB_SCHEDULED_ANN));
	return t >= 0 ? t : ts_s(json_path_str(job, "metadata.creationTimestamp"));
}

/* The jobs this cronjob controls, from the jobs informer's controller index (a job it created
 * that the informer has not seen yet is read by name when creating it again answers 409). */
static int load_jobs(struct cj_ctx *c)
{
	int rc;
	c->jobs = tpc_list_controlled(c->m, "jobs", c->tenant, c->ns, NULL, c->uid, false, NULL, &rc);
	if (!c->jobs)
		return rc;
	/* the job of the last scheduled run, which a lagging informer may not hold yet: read it by name */
	int64_t last = ts_s(json_path_str(c->cj, "status.lastScheduleTime"));
	if (last < 0)
		return 0;
	struct buf jn = BUF_INIT, path = BUF_INIT;
	cronjob_job_name(c->name, last, &jn);
	size_t i;
	json_t *j, *got = NULL;
	json_array_foreach(c->jobs, i, j) {
		const char *n = json_path_str(j, "metadata.name");
		if (n && !strcmp(n, jn.ptr))
			goto out;
	}
	tpc_path(&path, "jobs", c->tenant, c->ns, jn.ptr);
	int code = tpc_get(c->m, path.ptr, &got);
	const char *u = json_str(json_controller_ref(got), "uid");
	if (code == 200 && u && !strcmp(u, c->uid))
		json_array_append(c->jobs, got);
out:
	json_decref(got);
	buf_release(&jn);
	buf_release(&path);
	return 0;
}

static int delete_job(struct cj_ctx *c, const json_t *job, const char *why)
{
	const char *jn = json_path_str(job, "metadata.name");
	json_t *body = json_pack("{s:s,s:s,s:s}", "kind", "DeleteOptions", "apiVersion", "v1", "propagationPolicy",
				 "Background");
	struct buf path = BUF_INIT;
	tpc_path(&path, "jobs", c->tenant, c->ns, jn);
	int code = tpc_send(c->m, "DELETE", path.ptr, body, NULL);
	buf_release(&path);
	json_decref(body);
	if (code == 200 || code == 202)
		tpc_event(c->m, c->cj, "Normal", "SuccessfulDelete", "Deleted job %s%s", jn, why);
	return code == 200 || code == 202 || code == 404 ? 0 : E_UNAVAILABLE;
}

static int cmp_job_time(const void *a, const void *b)
{
	int64_t x = job_time(*(json_t *const *)a), y = job_time(*(json_t *const *)b);
	return x < y ? -1 : x > y;
}

/* Deletes the oldest finished jobs of type beyond limit. */
static int trim_history(struct cj_ctx *c, const char *type, long long limit)
{
	size_t n = 0, i;
	json_t *j, **v = xcalloc(json_array_size(c->jobs) + 1, sizeof(*v));
	json_array_foreach(c->jobs, i, j) {
		const char *f = finished_type(j);
		if (f && !strcmp(f, type) && !json_path(j, "metadata.deletionTimestamp"))
			v[n++] = j;
	}
	qsort(v, n, sizeof(*v), cmp_job_time);
	int rc = 0;
	for (i = 0; limit >= 0 && (long long)i + limit < (long long)n; i++)
		if (delete_job(c, v[i], "") < 0)
			rc = E_UNAVAILABLE;
	free(v);
	return rc;
}

static json_t *job_ref(const json_t *job)
{
	return json_pack("{s:s,s:s,s:s?,s:s?,s:s?,s:s?}", "apiVersion", "batch/v1", "kind", "Job", "name",
			 json_path_str(job, "metadata.name"), "namespace", json_path_str(job, "metadata.namespace"),
			 "uid", json_path_str(job, "metadata.uid"), "resourceVersion",
			 json_path_str(job, "metadata.resourceVersion"));
}

static json_t *job_from_template(const struct cj_ctx *c, const char *jname, int64_t sched)
{
	const json_t *jt = json_path(c->cj, "spec.jobTemplate");
	json_t *labels = json_deep_copy(json_path(jt, "metadata.labels"));
	json_t *ann = json_deep_copy(json_path(jt, "metadata.annotations"));
	if (!json_is_object(labels))
		json_decref(labels), labels = json_object();
	if (!json_is_object(ann))
		json_decref(ann), ann = json_object();
	struct buf ts = BUF_INIT;
	rfc3339_add(&ts, (time_t)sched);
	json_object_set_new(ann, CRONJOB_SCHEDULED_ANN, json_string(ts.ptr));
	buf_release(&ts);
	json_t *owner = json_pack("{s:s,s:s,s:s,s:s,s:b,s:b}", "apiVersion", "batch/v1", "kind", "CronJob", "name",
				  c->name, "uid", c->uid, "controller", 1, "blockOwnerDeletion", 1);
	json_t *spec = json_deep_copy(json_object_get(jt, "spec"));
	if (!json_is_object(spec))
		json_decref(spec), spec = json_object();
	return json_pack("{s:s,s:s,s:{s:s,s:s,s:o,s:o,s:[o]},s:o}", "apiVersion", "batch/v1", "kind", "Job", "metadata",
			 "name", jname, "namespace", c->ns, "labels", labels, "annotations", ann, "ownerReferences",
			 owner, "spec", spec);
}

static int put_status(struct cj_ctx *c, json_t *st)
{
	if (json_equal(json_object_get(c->cj, "status"), st))
		return 0;
	json_t *body = json_deep_copy(c->cj);
	json_object_set(body, "status", st);
	struct buf path = BUF_INIT;
	tpc_path(&path, "cronjobs", c->tenant, c->ns, c->name);
	buf_adds(&path, "/status");
	int code = tpc_send(c->m, "PUT", path.ptr, body, NULL);
	buf_release(&path);
	json_decref(body);
	return code == 200 || code == 404 ? 0 : code == 409 ? E_CONFLICT : E_UNAVAILABLE;
}

static json_t *find_job(const struct cj_ctx *c, const char *jname)
{
	size_t i;
	json_t *j;
	json_array_foreach(c->jobs, i, j) {
		const char *n = json_path_str(j, "metadata.name");
		if (n && !strcmp(n, jname))
			return j;
	}
	return NULL;
}

/* Runs the schedule: may create one job (appended to c->jobs) and set lastScheduleTime in st.
 * *ret_next_s: the next scheduled time (0 if none). */
static int run_schedule(struct cj_ctx *c, json_t *st, int64_t now, int64_t *ret_next_s)
{
	const json_t *spec = json_object_get(c->cj, "spec");
	const char *sched = json_str(spec, "schedule"), *tz = json_str(spec, "timeZone");
	struct cron_schedule cs;
	struct buf err = BUF_INIT, jname = BUF_INIT;
	int rc = 0;
	*ret_next_s = 0;
	if (!sched || cron_parse(sched, &cs, &err) < 0) {
		tpc_event(c->m, c->cj, "Warning", "InvalidSchedule", "invalid schedule: %s : %s", sched ? sched : "",
			  buf_cstr(&err));
		goto out;
	}
	if (tz && *tz && !cron_valid_tz(tz)) {
		tpc_event(c->m, c->cj, "Warning", "UnknownTimeZone", "invalid timeZone: %s", tz);
		goto out;
	}
	int64_t next;
	if (cron_next(&cs, tz, now, &next) == 0)
		*ret_next_s = next;
	if (json_is_true(json_object_get(spec, "suspend")))
		goto out;
	int64_t earliest = ts_s(json_str(st, "lastScheduleTime"));
	if (earliest < 0)
		earliest = ts_s(json_path_str(c->cj, "metadata.creationTimestamp"));
	const json_t *sds = json_object_get(spec, "startingDeadlineSeconds");
	if (json_is_integer(sds) && earliest < now - json_integer_value(sds))
		earliest = now - json_integer_value(sds);
	int64_t last;
	int missed;
	if ((rc = cronjob_missed(&cs, tz, earliest, now, &last, &missed)) < 0) {
		rc = 0;
		goto out;
	}
	if (missed > 100)
		tpc_event(c->m, c->cj, "Warning", "TooManyMissedTimes",
			  "too many missed start times: > 100. Set or decrease .spec.startingDeadlineSeconds or check "
			  "clock skew");
	if (last == 0)
		goto out;
	cronjob_job_name(c->name, last, &jname);
	if (find_job(c, jname.ptr))
		goto out; /* already ran */
	const char *policy = json_str(spec, "concurrencyPolicy");
	size_t nactive = json_array_size(json_object_get(st, "active"));
	if (policy && !strcmp(policy, "Forbid") && nactive > 0) {
		log_debug("cronjob run skipped: a job is active and concurrencyPolicy is Forbid",
			  "tenant=\"%s\" namespace=\"%s\" name=\"%s\"", c->tenant, c->ns, c->name);
		goto out; /* retried when the active job finishes, while within the deadline */
	}
	if (policy && !strcmp(policy, "Replace") && nactive > 0) {
		size_t i;
		json_t *j;
		json_array_foreach(c->jobs, i, j) {
			if (finished_type(j) || json_path(j, "metadata.deletionTimestamp"))
				continue;
			if ((rc = delete_job(c, j, " (concurrencyPolicy Replace)")) < 0)
				goto out;
		}
		json_object_set_new(st, "active", json_array());
	}
	json_t *job = job_from_template(c, jname.ptr, last), *resp = NULL;
	struct buf path = BUF_INIT;
	tpc_path(&path, "jobs", c->tenant, c->ns, NULL);
	int code = tpc_send(c->m, "POST", path.ptr, job, &resp);
	buf_release(&path);
	json_decref(job);
	if (code == 409) {
		/* made before, not yet in the informer: count it as this run's job if it is ours */
		json_decref(resp);
		resp = NULL;
		tpc_path(&path, "jobs", c->tenant, c->ns, jname.ptr);
		int gc = tpc_get(c->m, path.ptr, &resp);
		buf_release(&path);
		const char *u = json_str(json_controller_ref(resp), "uid");
		if (gc == 200 && u && !strcmp(u, c->uid)) {
			json_t *act = json_object_get(st, "active");
			if (!json_is_array(act)) {
				act = json_array();
				json_object_set_new(st, "active", act);
			}
			if (!finished_type(resp) && !json_path(resp, "metadata.deletionTimestamp"))
				json_array_append_new(act, job_ref(resp));
			json_array_append(c->jobs, resp);
		}
	} else if (code == 201 || code == 200) {
		tpc_event(c->m, c->cj, "Normal", "SuccessfulCreate", "Created job %s", jname.ptr);
		json_t *act = json_object_get(st, "active");
		if (!json_is_array(act)) {
			act = json_array();
			json_object_set_new(st, "active", act);
		}
		json_array_append_new(act, job_ref(resp));
		json_array_append(c->jobs, resp);
		log_info("cronjob created job", "tenant=\"%s\" namespace=\"%s\" name=\"%s\" job=\"%s\" missed=%d",
			 c->tenant, c->ns, c->name, jname.ptr, missed);
	} else if (code != 409) {
		tpc_event(c->m, c->cj, "Warning", "FailedCreate", "Error creating job: %s",
			  json_str(resp, "message") ? json_str(resp, "message") : "server unavailable");
		rc = E_UNAVAILABLE;
	}
	json_decref(resp);
	if (rc == 0) {
		struct buf ts = BUF_INIT;
		rfc3339_add(&ts, (time_t)last);
		json_object_set_new(st, "lastScheduleTime", json_string(ts.ptr));
		buf_release(&ts);
	}
out:
	buf_release(&err);
	buf_release(&jname);
	return rc;
}

int tpc_sync_cronjob(struct tpc *m, const char *key)
{
	struct tpc_live live;
	struct cj_ctx c = { .m = m };
	json_t *st = NULL;
	int rc = tpc_get_live(m, "cronjobs", key, 0, &live);
	if (rc <= 0)
		return rc;
	rc = 0;
	c.cj = live.obj, c.tenant = live.tenant, c.ns = live.ns, c.name = live.name, c.uid = live.uid;
	if ((rc = load_jobs(&c)) < 0)
		goto out;
	st = json_deep_copy(json_object_get(c.cj, "status"));
	if (!json_is_object(st))
		json_decref(st), st = json_object();
	/* active jobs and the last success, from the jobs themselves */
	json_t *active = json_array();
	int64_t last_ok = ts_s(json_str(st, "lastSuccessfulTime"));
	size_t i;
	json_t *j;
	json_array_foreach(c.jobs, i, j) {
		const char *f = finished_type(j);
		if (!f) {
			if (!json_path(j, "metadata.deletionTimestamp"))
				json_array_append_new(active, job_ref(j));
			continue;
		}
		int64_t ct = ts_s(json_path_str(j, "status.completionTime"));
		if (!strcmp(f, "Complete") && ct > last_ok)
			last_ok = ct;
	}
	if (json_array_size(active))
		json_object_set_new(st, "active", active);
	else
		json_decref(active), json_object_del(st, "active");
	if (last_ok > 0) {
		struct buf ts = BUF_INIT;
		rfc3339_add(&ts, (time_t)last_ok);
		json_object_set_new(st, "lastSuccessfulTime", json_string(ts.ptr));
		buf_release(&ts);
	}
	int64_t now = (int64_t)time(NULL) + m->cronjob_now_offset_s, next = 0;
	rc = run_schedule(&c, st, now, &next);
	if (json_array_size(json_object_get(st, "active")) == 0)
		json_object_del(st, "active");
	const json_t *spec = json_object_get(c.cj, "spec");
	const json_t *sl = json_object_get(spec, "successfulJobsHistoryLimit");
	const json_t *fl = json_object_get(spec, "failedJobsHistoryLimit");
	int hrc = trim_history(&c, "Complete", json_is_integer(sl) ? json_integer_value(sl) : 3);
	int frc = trim_history(&c, "Failed", json_is_integer(fl) ? json_integer_value(fl) : 1);
	int src = put_status(&c, st);
	if (!rc)
		rc = src ? src : hrc ? hrc : frc;
	if (next > now)
		wq_add_after(m->wq[CTL_CRONJOB], key, (next - now) * 1000 + 200);
out:
	json_decref(c.jobs);
	json_decref(st);
	tpc_live_release(&live);
	return rc;
}
