/* StatefulSet controller internals: the pure ordering logic (stslogic.c) the controller
 * (statefulset.c) and its unit tests share. */
#ifndef TPC_STS_H
#define TPC_STS_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include "ursa/buf.h"

#define STS_POD_NAME_LABEL "statefulset.kubernetes.io/pod-name"
#define STS_POD_INDEX_LABEL "apps.kubernetes.io/pod-index"
#define STS_REVISION_LABEL "controller-revision-hash"
#define STS_MAX_REPLICAS 10000 /* ordinals beyond this are not managed */

/* The ordinal of a pod named "<set>-<i>" (i decimal, no leading zeros but "0"), else -1. */
long long sts_ordinal(const char *set, const char *pod);

/* What the plan knows of the pod at one ordinal. */
struct sts_pod {
	bool exists;
	bool ready;       /* Running with its Ready condition True */
	bool terminating; /* deletionTimestamp set */
	bool ended;       /* phase Succeeded or Failed: replaced */
	bool updated;     /* at the update revision */
};

struct sts_in {
	long long replicas;
	bool parallel;      /* podManagementPolicy Parallel (else OrderedReady) */
	bool on_delete;     /* updateStrategy OnDelete (else RollingUpdate) */
	long long partition; /* RollingUpdate: ordinals >= partition are updated */
};

struct sts_action {
	long long ordinal;
	bool create; /* else delete */
};

/* One sync's actions over pods[0..npods) (npods >= replicas; a pod at ordinal >= replicas is
 * condemned), at most max written to out; returns the count. OrderedReady: ended pods are
 * deleted and missing ones created in ordinal order, stopping at the first that is created,
 * deleted, terminating or not ready; then condemned pods go from the highest ordinal, one at a
 * time, each only when every lower ordinal is ready. Parallel: every ended pod is deleted,
 * every missing one created and every condemned one deleted at once. Then, RollingUpdate only
 * and only when nothing else was done: from the highest ordinal down to the partition, the
 * first pod not at the update revision is deleted (recreated next sync at the new revision),
 * stopping instead at a pod that is not ready or terminating. */
size_t sts_plan(const struct sts_in *in, const struct sts_pod *pods, size_t npods, struct sts_action *out,
		size_t max);

/* Whether a pod created at ordinal gets the update revision (else the current one): always
 * with OnDelete; with RollingUpdate when ordinal >= partition. */
bool sts_new_pod_updated(const struct sts_in *in, long long ordinal);

/* The name of the claim of volumeClaimTemplate tmpl for a set's ordinal: "<tmpl>-<set>-<i>". */
void sts_claim_name(const char *tmpl, const char *set, long long ordinal, struct buf *out);

/* The data of a ControllerRevision for a set (borrowed): {"spec":{"template":{...,
 * "$patch":"replace"}}}, what kubectl's rollout undo patches the set with. New object. */
json_t *sts_revision_data(const json_t *set);
/* Whether a revision's data (borrowed) holds the same template as set's. */
bool sts_revision_matches(const json_t *data, const json_t *set);

#endif
