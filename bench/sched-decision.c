/* The cost of one scheduling decision at 500, 5,000 and 50,000 synthetic nodes, in process.
 * Links the scheduler's algorithm by including its sources (bench/ targets link only
 * ursacommon). Prints, per region size, the mean and p99 microseconds of a decision, nodes
 * filtered and nodes scored, for plain pods, for ReplicaSet pods (default spreading), and for
 * plain pods on tainted nodes they tolerate (as hollow nodes: ursa.io/hollow, NoSchedule; the
 * pods with the two NoExecute tolerations the API server adds).
 * Usage: sched-decision [decisions-per-size] [percentage-of-nodes-to-score] [max-nodes-to-score] */
#include <stdio.h>
#include <stdlib.h>
#include "sched.h"
#include "ursa/xalloc.h"
#include "ursa/timeutil.h"

enum kind { PLAIN, REPLICASET, TOLERATING };
static const char *const kind_names[] = { "plain", "replicaset", "tolerating" };

static json_t *node_obj(size_t i, enum kind k)
{
	char name[32];
	snprintf(name, sizeof(name), "node-%zu", i);
	json_t *n = json_pack("{s:{s:s, s:s, s:{s:s, s:s}}, s:{}, s:{s:{s:s, s:s, s:s}, s:[{s:s, s:s}]}}",
			      "metadata", "name", name, "resourceVersion", "1", "labels", SCHED_ZONE_LABEL,
			      i % 2 ? "az-2" : "az-1", SCHED_HOST_LABEL, name, "spec", "status", "allocatable", "cpu",
			      "32", "memory", "128Gi", "pods", "110", "conditions", "type", "Ready", "status", "True");
	if (k == TOLERATING)
		json_object_set_new(json_object_get(n, "spec"), "taints",
				    json_pack("[{s:s, s:s, s:s}]", "key", "ursa.io/hollow", "value", "true", "effect",
					      "NoSchedule"));
	return n;
}

static json_t *pod_obj(size_t i, enum kind k)
{
	char name[32];
	snprintf(name, sizeof(name), "pod-%zu", i);
	json_t *p = json_pack("{s:{s:s, s:s, s:s, s:s}, s:{s:[{s:s, s:{s:{s:s, s:s}}}]}}", "metadata", "name", name,
			      "namespace", "default", "tenant", i % 3 ? "t1" : "t2", "uid", name, "spec", "containers",
			      "name", "c", "resources", "requests", "cpu", "100m", "memory", "128Mi");
	if (k == REPLICASET)
		json_object_set_new(json_object_get(p, "metadata"), "ownerReferences",
				    json_pack("[{s:s, s:s, s:s, s:b}]", "kind", "ReplicaSet", "name", "rs", "uid",
					      "rs-1", "controller", 1));
	if (k == TOLERATING)
		json_object_set_new(json_object_get(p, "spec"), "tolerations",
				    json_pack("[{s:s, s:s, s:s}, {s:s, s:s, s:s, s:i}, {s:s, s:s, s:s, s:i}]", "key",
					      "ursa.io/hollow", "operator", "Exists", "effect", "NoSchedule", "key",
					      "node.kubernetes.io/not-ready", "operator", "Exists", "effect", "NoExecute",
					      "tolerationSeconds", 300, "key", "node.kubernetes.io/unreachable", "operator",
					      "Exists", "effect", "NoExecute", "tolerationSeconds", 300));
	return p;
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return x < y ? -1 : x > y;
}

static void run(size_t nodes, size_t decisions, long long pct, long long maxn, enum kind k)
{
	struct sched_cache c;
	sched_cache_init(&c, "tp-1");
	c.pct = pct;
	c.max_score_nodes = maxn;
	for (size_t i = 0; i < nodes; i++) {
		json_t *o = node_obj(i, k);
		sched_cache_node_set(&c, o, "rm-1");
		json_decref(o);
	}
	long long *us = xcalloc(decisions, sizeof(*us));
	size_t evaluated = 0, feasible = 0;
	for (size_t i = 0; i < decisions; i++) {
		json_t *o = pod_obj(i, k);
		struct sched_cpod *cp = sched_cache_pod_set(&c, o, NULL);
		struct sched_pod p;
		struct sched_result r;
		int64_t t0 = mono_us();
		if (sched_pod_parse(o, &p, NULL) != 0)
			abort();
		sched_decide(&c, &p, &r);
		if (r.node)
			sched_cache_assume(&c, cp, r.node->name);
		us[i] = mono_us() - t0;
		evaluated += r.evaluated;
		feasible += r.feasible;
		sched_result_release(&r);
		sched_pod_release(&p);
		json_decref(o);
	}
	qsort(us, decisions, sizeof(*us), cmp_ll);
	long long sum = 0;
	for (size_t i = 0; i < decisions; i++)
		sum += us[i];
	printf("%-7zu %-10s %10.1f %10lld %12zu %10zu\n", nodes, kind_names[k],
	       (double)sum / (double)decisions, us[decisions * 99 / 100], evaluated / decisions, feasible / decisions);
	free(us);
	sched_cache_release(&c);
}

int main(int argc, char **argv)
{
	long long decisions = 2000, pct = 0, maxn = 500;
	if ((argc > 1 && parse_int64(argv[1], &decisions)) || (argc > 2 && parse_int64(argv[2], &pct)) ||
	    (argc > 3 && parse_int64(argv[3], &maxn)) || decisions < 1) {
		fprintf(stderr, "usage: sched-decision [decisions] [percentage-of-nodes-to-score] [max-nodes-to-score]\n");
		return 2;
	}
	printf("decisions per size: %lld, percentage-of-nodes-to-score: %lld, max-nodes-to-score: %lld\n",
	       decisions, pct, maxn);
	printf("%-7s %-10s %10s %10s %12s %10s\n", "nodes", "pods", "mean_us", "p99_us", "filtered", "scored");
	const size_t sizes[] = { 500, 5000, 50000 };
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		for (enum kind k = PLAIN; k <= TOLERATING; k++)
			run(sizes[i], (size_t)decisions, pct, maxn, k);
	}
	return 0;
}
