/* The batch controllers (job.c, cronjob.c) and their pure parts (joblogic.c), apart from tpc.h
 * so unit tests reach the arithmetic without a server. */
#ifndef TPC_BATCH_H
#define TPC_BATCH_H
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include "ursa/buf.h"

#define JOB_INDEX_ANN "batch.kubernetes.io/job-completion-index"
#define JOB_CONTROLLER_UID "batch.kubernetes.io/controller-uid"
#define CRONJOB_SCHEDULED_ANN "batch.kubernetes.io/cronjob-scheduled-timestamp"
#define JOB_MAX_INDEXES 100000 /* Indexed jobs with more completions are refused by the controller */

/* Kubernetes' pod failure back-off: base (10 s) doubling per failure after the first, capped at
 * 36 bases (6 min). 0 for no failures. */
int64_t job_backoff_ms(long long failures, int64_t base_ms);

struct job_in {
	long long completions;   /* -1: unset (a work queue: done when one pod succeeded and none run) */
	long long parallelism;
	long long backoff_limit;
	long long deadline_s;    /* activeDeadlineSeconds, -1: none */
	bool suspend;
	long long active, succeeded, failed; /* succeeded: distinct indexes for Indexed jobs */
	int64_t now_ms, start_ms;            /* start_ms -1: not started */
	int64_t last_fail_ms;                /* -1: no failure seen */
	int64_t backoff_base_ms;
};

enum job_verdict { JOB_RUNNING, JOB_COMPLETE, JOB_FAILED };

struct job_out {
	enum job_verdict verdict;
	const char *reason, *message; /* for a finished job (static strings) */
	long long create;             /* pods to create now */
	long long remove;             /* active pods to delete now */
	int64_t recheck_ms;           /* > 0: sync again after this long (back-off end, deadline) */
};

/* What to do for a job given its pods, in upstream's order: deadline, then backoff limit
 * (failed > backoffLimit), then completion; suspended jobs delete their active pods; new pods
 * wait for the back-off after the last failure. */
void job_plan(const struct job_in *in, struct job_out *out);

/* spec.podFailurePolicy: what a failed pod's first matching rule says. */
enum pfp_action { PFP_NO_MATCH, PFP_FAIL_JOB, PFP_IGNORE, PFP_COUNT, PFP_FAIL_INDEX };
/* Matches a failed pod against a podFailurePolicy (both borrowed; policy NULL: no match) as
 * Kubernetes does: rules in order, the first that matches decides. onExitCodes looks at terminated
 * containers with a non-zero exit code (containerStatuses, then initContainerStatuses), of
 * containerName when given, with operator In (the code is among values) or NotIn (it is not);
 * onPodConditions at the pod's conditions of the pattern's type and status. A rule with an unknown
 * action matches nothing. For FailJob, Kubernetes' condition message is appended to msg (may be
 * NULL): "Container <c> for pod <ns>/<pod> failed with exit code <n> matching FailJob rule at
 * index <i>" or "Pod <ns>/<pod> has condition <type> matching FailJob rule at index <i>". */
enum pfp_action job_pod_failure_match(const json_t *policy, const json_t *pod, struct buf *msg);

/* Indexed jobs: state[i] for i < n is 0 (nothing), 'a' (an active pod) or 's' (succeeded).
 * Writes up to max indexes to create (lowest first, neither active nor succeeded) into ret and
 * returns how many. */
long long job_pick_indexes(const char *state, long long n, long long max, long long *ret);
/* status.completedIndexes: the succeeded indexes as "0,2-4" (appends). */
void job_format_indexes(const char *state, long long n, struct buf *out);

/* CronJobs: a job's name "<cronjob>-<scheduled unix time in minutes>" (appends). */
void cronjob_job_name(const char *cronjob, int64_t scheduled_s, struct buf *out);

/* The most recent scheduled time in (after_s, now_s] of a schedule, and how many there were
 * (counting stops at 101: "too many missed"). Returns 0 with *ret_last (0 if none), or E_* from
 * cron_next. */
struct cron_schedule;
int cronjob_missed(const struct cron_schedule *s, const char *tz, int64_t after_s, int64_t now_s, int64_t *ret_last,
		   int *ret_count);

#endif
