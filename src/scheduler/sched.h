/* ursa-scheduler: the pure scheduling algorithm (pods and nodes parsed from JSON, filters,
 * scores, sampling) and the node/pod cache it runs on. Nothing here does I/O, so unit tests
 * and bench/sched-decision.c drive it on in-memory objects. The daemon (daemon.c) feeds the
 * cache from informers and binds the decisions.
 *
 * Units: cpu in milli-cores, memory in milli-bytes (as quantity_parse_milli returns), pods
 * as a plain count. */
#ifndef URSA_SCHED_H
#define URSA_SCHED_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "client/client_internal.h"
#include "ursa/buf.h"
#include "ursa/selector.h"

#define SCHED_ANN_RESERVED "ursa.io/reserved"  /* per-partition reservation totals on a node */
#define SCHED_ZONE_LABEL "topology.kubernetes.io/zone"
#define SCHED_HOST_LABEL "kubernetes.io/hostname"
#define SCHED_MAX_ITEMS 256                      /* cap on tolerations, terms, constraints, ... */

struct sched_res {
	long long cpu_m, mem_m, pods;
};

enum { TAINT_NO_SCHEDULE = 1, TAINT_PREFER_NO_SCHEDULE = 2, TAINT_NO_EXECUTE = 4 };
struct sched_taint {
	char *key, *value;
	int effect;
};
struct sched_tol {
	char *key, *value; /* key NULL: matches every key (with operator Exists) */
	bool exists;
	int effect;        /* 0: every effect */
};

enum sel_op { SEL_IN, SEL_NOT_IN, SEL_EXISTS, SEL_NOT_EXISTS, SEL_GT, SEL_LT };
struct sched_req {
	char *key;
	enum sel_op op;
	char **values;
	size_t nvalues;
};
struct sched_term { /* AND of its requirements */
	struct sched_req *reqs;
	size_t nreqs;
};
struct sched_pref {
	long long weight;
	struct sched_term term;
};
/* A topology spread constraint; by_owner is the default one given to a ReplicaSet's pods
 * (pods with the same controller uid), otherwise sel selects the pods of the namespace. */
struct sched_spread {
	char *key;
	long long max_skew;
	bool hard;
	bool by_owner;
	struct label_selector *sel;
};

/* A pod as the scheduler sees it. Strings and references are owned. */
struct sched_pod {
	char *key, *tenant, *ns, *name, *owner_uid;
	struct sched_res req;
	json_t *labels;        /* object or NULL */
	json_t *node_selector; /* object or NULL */
	struct sched_term *terms; /* required node affinity: OR of terms (none: no constraint) */
	size_t nterms;
	struct sched_pref *prefs;
	size_t nprefs;
	struct sched_tol *tols;
	size_t ntols;
	struct sched_spread *spreads;
	size_t nspreads;
};
/* Parses a Pod object. E_INVALID with a message in err (the pod can never be scheduled as
 * written). Adds the default spreading for pods owned by a ReplicaSet without constraints of
 * their own. */
int sched_pod_parse(const json_t *obj, struct sched_pod *ret, struct buf *err);
void sched_pod_release(struct sched_pod *p);
/* Resource requests of a pod object (containers summed, init containers' max, one pod). */
int sched_pod_requests(const json_t *obj, struct sched_res *ret);

/* A node. used is this partition's pods (bound and assumed) on it; other is the sum of the
 * other partitions' reservations read from its SCHED_ANN_RESERVED annotation; own_reserved is
 * this partition's entry there. */
struct sched_node {
	char *name, *rm, *zone, *rv;
	json_t *labels;
	json_t *reserved;  /* the annotation parsed (object), or NULL */
	struct sched_res alloc, used, other, own_reserved;
	bool present;      /* false: a placeholder kept for pods bound to a node not (yet) seen */
	bool ready, unschedulable;
	bool rm_down;      /* its resource manager has not answered for a while: nobody can
			      vouch for the node (nor taint it), so nothing is placed there */
	/* The daemon's bookkeeping of its own reservation writes (kept across updates): while
	 * writing, one write of write_target is in flight and no other is started for the node;
	 * touched_ms is the last time (monotonic) a pod of ours was placed here. (writing sits
	 * with the other flags, so that the taints' hash fits in the struct's old size.) */
	bool writing;
	struct sched_taint *taints;
	size_t ntaints;
	uint64_t taints_sig; /* sched_taints_sig of the taints; 0: not computed */
	size_t idx;        /* position in the cache's list while present */
	struct sched_res write_target;
	int64_t touched_ms;
};
/* Fills n's object fields from a Node object (keeps name, used, idx). partition: ours, whose
 * annotation entry goes to own_reserved rather than other. */
void sched_node_set(struct sched_node *n, const json_t *obj, const char *rm, const char *partition);
void sched_node_clear(struct sched_node *n);
/* Parses SCHED_ANN_RESERVED's value into other (partitions but ours) and own. Bad JSON
 * counts as nothing reserved. */
void sched_reserved_parse(const char *value, const char *partition, struct sched_res *ret_other,
			  struct sched_res *ret_own, json_t **ret_obj);
/* The annotation value with partition's entry set to r (removed when all zero). New string. */
char *sched_reserved_format(const json_t *cur, const char *partition, const struct sched_res *r);

/* Reservation accounting (see docs/scheduler.md, "Reserving ahead").
 * The room this partition may count on at n: its entry as last read, lowered to the target of
 * a write in flight when that write shrinks it (a release may land at any moment). */
void sched_reserved_effective(const struct sched_node *n, struct sched_res *ret);
/* True when our pods on n (used, the new pod already assumed) fit in that room: no write. */
bool sched_reservation_covers(const struct sched_node *n);
/* What to write when the room does not cover used: used plus headroom for (chunk - 1) more
 * pods of req, each dimension capped at half of the room nobody holds (alloc - other - used,
 * never negative). chunk <= 1: exactly used. */
void sched_reserve_target(const struct sched_node *n, const struct sched_res *req, long long chunk,
			  struct sched_res *ret);

/* Filter results: why a node was rejected. */
enum sched_fail {
	FAIL_NONE, FAIL_NOT_READY, FAIL_UNSCHEDULABLE, FAIL_TAINT, FAIL_SELECTOR, FAIL_CPU, FAIL_MEMORY,
	FAIL_PODS, FAIL_SPREAD, FAIL__N
};

/* Counts of matching pods per topology domain for one spread constraint, computed once
 * per decision. */
struct spread_state {
	struct strmap counts; /* domain value -> num */
	long long min;        /* smallest count over the domains of the eligible nodes */
	long long max;
};

/* A cached pod of our partition (every pod the informer knows). */
struct sched_cpod {
	char *key, *owner_uid, *node; /* node: where it is counted (bound or assumed), or NULL */
	json_t *obj;                  /* latest object (shared, immutable) */
	json_t *labels;               /* borrowed from obj */
	struct sched_res req;
	bool assumed;                 /* counted on node by our decision, binding not seen yet */
	struct sched_cpod *ns_prev, *ns_next;
	struct sched_nslist *ns;
	char *last_msg;               /* last FailedScheduling message recorded */
};
struct sched_nslist {
	struct sched_cpod *head;
};

/* The cache: nodes by name plus the list of present ones (for sampling), our pods, and an
 * index owner uid -> node -> count for default spreading. Not locked: the daemon wraps it
 * in its mutex. */
struct sched_cache {
	char *partition;
	struct strmap nodes;   /* name -> struct sched_node */
	struct sched_node **list;
	size_t n, cap;
	size_t next_start;     /* rotating start of the sampling */
	struct strmap pods;    /* key -> struct sched_cpod */
	struct strmap ns;      /* "tenant/ns" -> struct sched_nslist */
	struct strmap owners;  /* owner uid -> struct strmap (node name -> num) */
	struct strmap zones;   /* zone -> number of present nodes in it */
	long long pct;         /* percentage of nodes to score; 0 adaptive */
	long long max_score_nodes; /* cap on feasible nodes to find; 0 none */
	long long reserved_bonus;  /* score added where the pod fits in our reservation (no write) */
};
void sched_cache_init(struct sched_cache *c, const char *partition);
void sched_cache_release(struct sched_cache *c);
/* Adds or updates a node from its object. Returns true when the change may let pending pods
 * fit (new node, more room, became ready/schedulable, labels or taints changed). An object
 * older than the cached one (numeric resourceVersion lower) is ignored: a lagging watch event
 * must not bring back a reservation we have since released. */
bool sched_cache_node_set(struct sched_cache *c, const json_t *obj, const char *rm);
void sched_cache_node_del(struct sched_cache *c, const char *name);
/* Removes every node of rm. */
void sched_cache_rm_del(struct sched_cache *c, const char *rm);
/* Marks every node of rm down (unusable) or up again. */
void sched_cache_rm_down(struct sched_cache *c, const char *rm, bool down);
struct sched_node *sched_cache_node(struct sched_cache *c, const char *name);
/* Adds or updates a pod of our partition from its object; returns the cached pod (borrowed).
 * ret_freed (may be NULL) is set when the update released resources (pod finished). */
struct sched_cpod *sched_cache_pod_set(struct sched_cache *c, const json_t *obj, bool *ret_freed);
void sched_cache_pod_del(struct sched_cache *c, const char *key);
struct sched_cpod *sched_cache_pod(struct sched_cache *c, const char *key);
/* Counts pod p on node (our decision, before the binding is seen). */
void sched_cache_assume(struct sched_cache *c, struct sched_cpod *p, const char *node);
/* Undoes sched_cache_assume when the binding failed. */
void sched_cache_forget(struct sched_cache *c, struct sched_cpod *p);

/* Number of feasible nodes to find among n before stopping (percentageOfNodesToScore). */
size_t sched_nodes_to_find(size_t n, long long pct, long long max_nodes);

/* One decision. */
struct sched_result {
	struct sched_node *node;       /* chosen node or NULL */
	long long score;
	size_t evaluated, feasible;    /* nodes filtered, nodes that passed */
	size_t fails[FAIL__N];         /* per reason, over the evaluated nodes */
	char *taint_key;               /* first untolerated taint seen (new string) */
};
/* Filters a rotating sample of the present nodes until enough feasible ones are found, scores
 * them and picks the best. Always returns 0; result->node NULL means none fits. */
void sched_decide(struct sched_cache *c, const struct sched_pod *p, struct sched_result *ret);
void sched_result_release(struct sched_result *r);
/* "0/5 nodes are available: 3 Insufficient cpu, 2 node(s) had untolerated taint {k}." */
void sched_result_message(const struct sched_result *r, size_t total, struct buf *out);

/* One decision's verdicts on the nodes' taint sets, by taints_sig: the nodes of a region share
 * a few sets, so each is judged once per decision instead of once per node (a test that reads
 * every node's taints from memory). Two sets share a verdict only if their hashes collide:
 * SipHash-2-4 under a key drawn at start, 64 bits, so whoever writes a node's taints cannot
 * aim at another node's set (a collision by chance: ~2^-64 per pair of sets). */
#define SCHED_TAINT_MEMO 8
struct taint_memo {
	size_t n;
	struct taint_verdict {
		uint64_t sig;
		const char *untolerated; /* first NoSchedule/NoExecute taint not tolerated, or NULL */
		bool prefer_untolerated; /* some PreferNoSchedule taint not tolerated */
	} v[SCHED_TAINT_MEMO];
};
/* The keyed hash taints_sig holds: key, value and effect of each taint, in order (never 0). */
uint64_t sched_taints_sig(const struct sched_taint *t, size_t n);

/* Filters and scores on their own (unit tests); memo may be NULL (no memo). */
enum sched_fail sched_filter_node(const struct sched_node *n, const struct sched_pod *p,
				  const struct spread_state *spreads, struct taint_memo *memo, const char **ret_taint);
bool sched_fits(const struct sched_node *n, const struct sched_res *req, enum sched_fail *ret_why);
long long sched_score_node(const struct sched_node *n, const struct sched_pod *p,
			   const struct spread_state *spreads, struct taint_memo *memo);
bool sched_term_matches(const struct sched_term *t, const json_t *labels);
bool sched_tolerates(const struct sched_pod *p, const struct sched_taint *t);
/* Fills one spread_state per constraint of p (array of p->nspreads); release with
 * sched_spread_release. */
struct spread_state *sched_spread_compute(struct sched_cache *c, const struct sched_pod *p);
void sched_spread_release(struct spread_state *s, size_t n);

/* Resource sums. */
void sched_res_add(struct sched_res *a, const struct sched_res *b);
void sched_res_sub(struct sched_res *a, const struct sched_res *b);

#endif
