/* ursa-authz: what one RBAC decision costs the API server's authorizer, with a tenant holding
 * 10 or 10,000 RoleBindings (and the default roles every tenant has), in one run.
 *
 *   build/bench/ursa-authz [--rounds 7] [--decisions 2000000] [--threads 1]
 *
 * Each binding binds one user (user<i>) in one of 100 namespaces to the aggregated ClusterRole
 * "edit" or to a Role of its namespace; a decision asks, for a random bound user, one request in
 * that user's namespace that is allowed and one in another namespace that is denied (the denied
 * one visits every binding of the user's subjects, the worst case). The other tenants of the
 * partition hold the same number of bindings, so the index is as large as a partition's. Rounds
 * interleave the two sizes; the medians of the rounds are printed, with their ratio. Costs are
 * the deciding threads' CPU time per decision (CLOCK_THREAD_CPUTIME_ID). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ursa/rbac.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define NAMESPACES 100
#define TENANTS 3

static void boot(void *ud, const char *plural, const json_t *obj)
{
	struct rbac *a = ((void **)ud)[0];
	const char *tenant = ((void **)ud)[1];
	const char *name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
	rbac_apply(a, strcmp(plural, "clusterroles") == 0 ? RBAC_CLUSTER_ROLE : RBAC_CLUSTER_ROLE_BINDING, tenant, "", name,
		   obj);
}

static struct rbac *build(int bindings)
{
	struct rbac *a = rbac_new();
	char tenant[32], ns[32], name[32], user[32];
	for (int t = 0; t < TENANTS; t++) {
		snprintf(tenant, sizeof(tenant), "tenant%d", t);
		void *ud[2] = { a, tenant };
		rbac_bootstrap_objects(boot, ud);
		for (int n = 0; n < NAMESPACES; n++) {
			snprintf(ns, sizeof(ns), "ns%d", n);
			json_t *role = json_loads("{\"rules\":[{\"apiGroups\":[\"\"],\"resources\":[\"pods\",\"configmaps\"],"
						  "\"verbs\":[\"get\",\"list\",\"watch\"]}]}", 0, NULL);
			rbac_apply(a, RBAC_ROLE, tenant, ns, "reader", role);
			json_decref(role);
		}
		for (int i = 0; i < bindings; i++) {
			snprintf(ns, sizeof(ns), "ns%d", i % NAMESPACES);
			snprintf(name, sizeof(name), "b%d", i);
			snprintf(user, sizeof(user), "user%d", i);
			bool cluster = i % 2 == 0;
			json_t *b = json_pack("{s:{s:s,s:s,s:s},s:[{s:s,s:s},{s:s,s:s}]}", "roleRef", "apiGroup", RBAC_GROUP,
					      "kind", cluster ? "ClusterRole" : "Role", "name", cluster ? "edit" : "reader",
					      "subjects", "kind", "User", "name", user, "kind", "Group", "name", "devs");
			rbac_apply(a, RBAC_ROLE_BINDING, tenant, ns, name, b);
			json_decref(b);
		}
	}
	return a;
}

struct job {
	struct rbac *a;
	int bindings;
	long decisions;
	unsigned seed;
	long allowed;
	int64_t cpu_ns; /* the thread's CPU time: other load on the machine does not count */
};

static int64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *run(void *arg)
{
	struct job *j = arg;
	char user[32], ns[32], other[32];
	char *groups[] = { "ursa:users" };
	int64_t c0 = thread_cpu_ns();
	for (long d = 0; d < j->decisions; d += 2) {
		int i = (int)(rand_r(&j->seed) % (unsigned)j->bindings);
		snprintf(user, sizeof(user), "user%d", i);
		snprintf(ns, sizeof(ns), "ns%d", i % NAMESPACES);
		snprintf(other, sizeof(other), "ns%d", (i + 1) % NAMESPACES);
		struct identity id = { .user = user, .tenant = "tenant1", .groups = groups, .ngroups = 1 };
		struct rbac_attrs at = { .verb = "get", .group = "", .resource = "pods", .name = "p", .ns = ns };
		j->allowed += rbac_authorize(j->a, &id, "tenant1", &at, NULL);
		at.ns = other;
		at.verb = "delete";
		j->allowed += rbac_authorize(j->a, &id, "tenant1", &at, NULL);
	}
	j->cpu_ns = thread_cpu_ns() - c0;
	return NULL;
}

/* CPU ns per decision over `decisions`, spread over threads. */
static double measure(struct rbac *a, int bindings, long decisions, int threads, unsigned seed)
{
	pthread_t th[16];
	struct job jobs[16];
	for (int t = 0; t < threads; t++) {
		jobs[t] = (struct job){ a, bindings, decisions / threads, seed + (unsigned)t, 0, 0 };
		pthread_create(&th[t], NULL, run, &jobs[t]);
	}
	long allowed = 0;
	int64_t cpu = 0;
	for (int t = 0; t < threads; t++) {
		pthread_join(th[t], NULL);
		allowed += jobs[t].allowed;
		cpu += jobs[t].cpu_ns;
	}
	if (allowed != decisions / 2 / threads * threads) {
		fprintf(stderr, "ursa-authz: %ld of %ld decisions allowed, want half\n", allowed, decisions);
		exit(1);
	}
	return (double)cpu / (double)(decisions / threads * threads);
}

static int cmp(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}

int main(int argc, char **argv)
{
	int rounds = 7, threads = 1;
	long decisions = 2000000;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--rounds"))
			rounds = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--decisions"))
			decisions = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--threads"))
			threads = atoi(argv[i + 1]);
	}
	if (rounds < 1 || rounds > 99 || decisions < 2 || threads < 1 || threads > 16) {
		fprintf(stderr, "usage: ursa-authz [--rounds 1..99] [--decisions N] [--threads 1..16]\n");
		return 2;
	}
	int sizes[2] = { 10, 10000 };
	struct rbac *a[2];
	for (int s = 0; s < 2; s++) {
		int64_t t0 = mono_us();
		a[s] = build(sizes[s]);
		printf("index: %d RoleBindings in each of %d tenants (%zu in all), built in %.1f ms\n", sizes[s], TENANTS,
		       rbac_bindings(a[s]), (mono_us() - t0) / 1000.0);
	}
	double ns[2][99];
	for (int r = 0; r < rounds; r++)
		for (int s = 0; s < 2; s++) {
			ns[s][r] = measure(a[s], sizes[s], decisions, threads, (unsigned)(r * 7919 + 1));
			printf("round %d: %5d bindings: %.0f ns per decision\n", r + 1, sizes[s], ns[s][r]);
		}
	for (int s = 0; s < 2; s++)
		qsort(ns[s], (size_t)rounds, sizeof(double), cmp);
	double m10 = ns[0][rounds / 2], m10k = ns[1][rounds / 2];
	printf("median: 10 bindings %.0f ns, 10,000 bindings %.0f ns per decision (ratio %.2f), %d thread(s)\n", m10,
	       m10k, m10k / m10, threads);
	for (int s = 0; s < 2; s++)
		rbac_free(a[s]);
	return 0;
}
