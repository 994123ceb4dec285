/* Pure arithmetic of the Job and CronJob controllers (batch.h). */
#include <string.h>
#include "batch.h"
#include "ursa/cron.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"

int64_t job_backoff_ms(long long failures, int64_t base_ms)
{
	if (failures <= 0 || base_ms <= 0)
		return 0;
	int64_t cap = base_ms * 36, d = base_ms;
	for (long long i = 1; i < failures && d < cap; i++)
		d *= 2;
	return d < cap ? d : cap;
}

static void finish(struct job_out *out, enum job_verdict v, const char *reason, const char *message,
		   long long active)
{
	out->verdict = v;
	out->reason = reason;
	out->message = message;
	out->create = 0;
	out->remove = active;
	out->recheck_ms = 0;
}

void job_plan(const struct job_in *in, struct job_out *out)
{
	memset(out, 0, sizeof(*out));
	out->verdict = JOB_RUNNING;
	if (in->deadline_s >= 0 && in->start_ms >= 0 && !in->suspend) {
		int64_t end = in->start_ms + in->deadline_s * 1000;
		if (in->now_ms >= end) {
			finish(out, JOB_FAILED, "DeadlineExceeded", "Job was active longer than specified deadline",
			       in->active);
			return;
		}
		out->recheck_ms = end - in->now_ms;
	}
	if (in->failed > in->backoff_limit) {
		finish(out, JOB_FAILED, "BackoffLimitExceeded", "Job has reached the specified backoff limit",
		       in->active);
		return;
	}
	if (in->completions >= 0 ? in->succeeded >= in->completions : in->succeeded > 0 && in->active == 0) {
		finish(out, JOB_COMPLETE, "CompletionsReached", "Reached expected number of succeeded pods",
		       in->active);
		return;
	}
	if (in->suspend) {
		out->remove = in->active;
		out->recheck_ms = 0;
		return;
	}
	long long want, left = in->completions - in->succeeded;
	if (in->completions >= 0)
		want = left < in->parallelism ? left : in->parallelism;
	else
		want = in->succeeded > 0 ? 0 : in->parallelism;
	if (want < 0)
		want = 0;
	if (in->active > want) {
		out->remove = in->active - want;
		return;
	}
	if (in->active == want)
		return;
	if (in->failed > 0 && in->last_fail_ms >= 0) {
		int64_t ready = in->last_fail_ms + job_backoff_ms(in->failed, in->backoff_base_ms);
		if (in->now_ms < ready) {
			int64_t wait = ready - in->now_ms;
			if (out->recheck_ms == 0 || wait < out->recheck_ms)
				out->recheck_ms = wait;
			return;
		}
	}
	out->create = want - in->active;
}

static bool exit_code_in(const json_t *req, long long code)
{
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(req, "values"), i, v) {
		if (json_is_integer(v) && json_integer_value(v) == code)
			return true;
	}
	return false;
}

/* The first terminated container of statuses with a non-zero exit code that req matches, or NULL. */
static const json_t *match_exit_codes(const json_t *statuses, const json_t *req)
{
	const char *want = json_str(req, "containerName"), *op = json_str(req, "operator");
	size_t i;
	json_t *cs;
	json_array_foreach(statuses, i, cs) {
		const json_t *term = json_path(cs, "state.terminated");
		const json_t *code = json_object_get(term, "exitCode");
		if (!json_is_object(term) || !json_is_integer(code) || json_integer_value(code) == 0)
			continue;
		const char *name = json_str(cs, "name");
		if (want && (!name || strcmp(want, name)))
			continue;
		bool in = exit_code_in(req, json_integer_value(code));
		if (op && ((!strcmp(op, "In") && in) || (!strcmp(op, "NotIn") && !in)))
			return cs;
	}
	return NULL;
}

/* The first condition of the pod that one of the patterns matches, or NULL. */
static const json_t *match_conditions(const json_t *pod, const json_t *patterns)
{
	size_t i, j;
	json_t *c, *p;
	json_array_foreach(json_path(pod, "status.conditions"), i, c) {
		const char *ct = json_str(c, "type"), *cst = json_str(c, "status");
		json_array_foreach(patterns, j, p) {
			const char *pt = json_str(p, "type"), *pst = json_str(p, "status");
			if (ct && cst && pt && pst && !strcmp(ct, pt) && !strcmp(cst, pst))
				return c;
		}
	}
	return NULL;
}

static enum pfp_action action_of(const char *a)
{
	if (!a)
		return PFP_NO_MATCH;
	if (!strcmp(a, "FailJob"))
		return PFP_FAIL_JOB;
	if (!strcmp(a, "Ignore"))
		return PFP_IGNORE;
	if (!strcmp(a, "Count"))
		return PFP_COUNT;
	if (!strcmp(a, "FailIndex"))
		return PFP_FAIL_INDEX;
	return PFP_NO_MATCH;
}

enum pfp_action job_pod_failure_match(const json_t *policy, const json_t *pod, struct buf *msg)
{
	const char *ns = json_path_str(pod, "metadata.namespace"), *pname = json_path_str(pod, "metadata.name");
	ns = ns ? ns : "";
	pname = pname ? pname : "";
	size_t i;
	json_t *rule;
	json_array_foreach(json_object_get(policy, "rules"), i, rule) {
		enum pfp_action act = action_of(json_str(rule, "action"));
		if (act == PFP_NO_MATCH)
			continue;
		const json_t *req = json_object_get(rule, "onExitCodes");
		const json_t *pats = json_object_get(rule, "onPodConditions");
		if (json_is_object(req)) {
			const json_t *cs = match_exit_codes(json_path(pod, "status.containerStatuses"), req);
			if (!cs)
				cs = match_exit_codes(json_path(pod, "status.initContainerStatuses"), req);
			if (!cs)
				continue;
			if (act == PFP_FAIL_JOB && msg) {
				const char *cname = json_str(cs, "name");
				buf_addf(msg,
					 "Container %s for pod %s/%s failed with exit code %lld matching FailJob rule at "
					 "index %zu",
					 cname ? cname : "", ns, pname,
					 (long long)json_integer_value(json_path(cs, "state.terminated.exitCode")), i);
			}
			return act;
		}
		if (json_is_array(pats)) {
			const json_t *c = match_conditions(pod, pats);
			if (!c)
				continue;
			if (act == PFP_FAIL_JOB && msg) {
				const char *ct = json_str(c, "type");
				buf_addf(msg, "Pod %s/%s has condition %s matching FailJob rule at index %zu", ns, pname,
					 ct ? ct : "", i);
			}
			return act;
		}
	}
	return PFP_NO_MATCH;
}

long long job_pick_indexes(const char *state, long long n, long long max, long long *ret)
{
	long long k = 0;
	for (long long i = 0; i < n && k < max; i++)
		if (state[i] != 'a' && state[i] != 's')
			ret[k++] = i;
	return k;
}

void job_format_indexes(const char *state, long long n, struct buf *out)
{
	bool first = true;
	for (long long i = 0; i < n; i++) {
		if (state[i] != 's')
			continue;
		long long j = i;
		while (j + 1 < n && state[j + 1] == 's')
			j++;
		buf_addf(out, first ? "%lld" : ",%lld", i);
		if (j > i)
			buf_addf(out, "-%lld", j);
		first = false;
		i = j;
	}
}

void cronjob_job_name(const char *cronjob, int64_t scheduled_s, struct buf *out)
{
	buf_addf(out, "%s-%lld", cronjob, (long long)(scheduled_s / 60));
}

/* The last firing in (after_s, now_s] when there are many: the first window (now - w, now]
 * (w doubling) holding one, walked forward. */
static int last_firing(const struct cron_schedule *s, const char *tz, int64_t after_s, int64_t now_s, int64_t *ret)
{
	for (int64_t w = 60; w < now_s - after_s + 60; w *= 2) {
		int64_t from = now_s - w > after_s ? now_s - w : after_s, n;
		int rc = cron_next(s, tz, from, &n);
		if (rc < 0)
			return rc;
		if (n > now_s)
			continue;
		for (;;) {
			*ret = n;
			if ((rc = cron_next(s, tz, n, &n)) < 0 || n > now_s)
				return rc == E_NOT_FOUND ? 0 : rc < 0 ? rc : 0;
		}
	}
	return E_NOT_FOUND;
}

int cronjob_missed(const struct cron_schedule *s, const char *tz, int64_t after_s, int64_t now_s, int64_t *ret_last,
		   int *ret_count)
{
	int64_t t = after_s, last = 0;
	int count = 0;
	*ret_last = 0;
	*ret_count = 0;
	while (count <= 100) {
		int64_t n;
		int rc = cron_next(s, tz, t, &n);
		if (rc == E_NOT_FOUND)
			break;
		if (rc < 0)
			return rc;
		if (n > now_s)
			break;
		last = n;
		count++;
		t = n;
	}
	if (count > 100) {
		int rc = last_firing(s, tz, t, now_s, &last);
		if (rc < 0 && rc != E_NOT_FOUND)
			return rc;
	}
	*ret_last = last;
	*ret_count = count;
	return 0;
}
