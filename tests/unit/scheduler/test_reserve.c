/* Reserving ahead: the target of a reservation write (headroom for more pods, capped by the
 * room nobody holds), when our entry covers our pods (and a shrink in flight), the score for
 * nodes with room reserved, stale node objects, and a simulation of two partitions filling the
 * same nodes through conditional writes that must never overcommit one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "sched.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

#define GI (1024LL * 1024 * 1024 * 1000) /* one GiB in milli-bytes */

static json_t *node_obj(const char *name, const char *cpu, long long rv, const char *reserved)
{
	char *rvs = xasprintf("%lld", rv);
	json_t *n = json_pack("{s:{s:s, s:s, s:{s:s}}, s:{}, s:{s:{s:s, s:s, s:i}, s:[{s:s, s:s}]}}", "metadata",
			      "name", name, "resourceVersion", rvs, "labels", "topology.kubernetes.io/zone", "az-1",
			      "spec", "status", "allocatable", "cpu", cpu, "memory", "8Gi", "pods", 110, "conditions",
			      "type", "Ready", "status", "True");
	assert_non_null(n);
	if (reserved)
		json_object_set_new(json_object_get(n, "metadata"), "annotations",
				    json_pack("{s:s}", SCHED_ANN_RESERVED, reserved));
	free(rvs);
	return n;
}

static json_t *pod_obj(const char *name, const char *cpu)
{
	json_t *p = json_pack("{s:{s:s, s:s, s:s, s:s}, s:{s:[{s:s, s:{s:{s:s, s:s}}}]}}", "metadata", "name", name,
			      "namespace", "default", "tenant", "acme", "uid", name, "spec", "containers", "name", "c",
			      "resources", "requests", "cpu", cpu, "memory", "64Mi");
	assert_non_null(p);
	return p;
}

static void test_target(void **state)
{
	(void)state;
	struct sched_node n = { .alloc = { 8000, 8 * GI, 110 }, .used = { 100, GI / 16, 1 } };
	struct sched_res req = { 100, GI / 16, 1 }, t;
	sched_reserve_target(&n, &req, 1, &t); /* chunk 1: exactly what our pods use */
	assert_int_equal(t.cpu_m, 100);
	assert_int_equal(t.pods, 1);
	sched_reserve_target(&n, &req, 16, &t); /* room for 15 more */
	assert_int_equal(t.cpu_m, 1600);
	assert_int_equal(t.mem_m, 16 * (GI / 16));
	assert_int_equal(t.pods, 16);
	/* another partition holds 7 cpu: half of the 900m nobody holds is the cap */
	n.other = (struct sched_res){ 7000, 0, 1 };
	sched_reserve_target(&n, &req, 16, &t);
	assert_int_equal(t.cpu_m, 100 + 450);
	assert_int_equal(t.pods, 16);
	/* a full node gets exactly its use, never more */
	n.other.cpu_m = 7900;
	sched_reserve_target(&n, &req, 16, &t);
	assert_int_equal(t.cpu_m, 100);
	/* a request of zero in a dimension reserves nothing ahead there */
	req.cpu_m = 0;
	n.other.cpu_m = 0;
	sched_reserve_target(&n, &req, 16, &t);
	assert_int_equal(t.cpu_m, 100);
}

static void test_covers_and_shrink_in_flight(void **state)
{
	(void)state;
	struct sched_node n = { .own_reserved = { 1600, GI, 16 }, .used = { 1500, GI / 2, 15 } };
	assert_true(sched_reservation_covers(&n));
	n.used.pods = 17;
	assert_false(sched_reservation_covers(&n));
	n.used.pods = 15;
	/* a release to 1000m is in flight: the room counted is the lower one until it ends */
	n.writing = true;
	n.write_target = (struct sched_res){ 1000, GI, 10 };
	assert_false(sched_reservation_covers(&n));
	struct sched_res eff;
	sched_reserved_effective(&n, &eff);
	assert_int_equal(eff.cpu_m, 1000);
	/* a grow in flight counts only what is confirmed */
	n.write_target = (struct sched_res){ 3000, 2 * GI, 30 };
	sched_reserved_effective(&n, &eff);
	assert_int_equal(eff.cpu_m, 1600);
	assert_true(sched_reservation_covers(&n));
}

static void test_bonus_prefers_reserved_room(void **state)
{
	(void)state;
	struct sched_cache c;
	sched_cache_init(&c, "tp-1");
	c.reserved_bonus = 50;
	/* n0 is empty; n1 already holds 1 cpu of our pods and 2 cpu reserved */
	json_t *n0 = node_obj("n0", "8", 5, NULL);
	json_t *n1 = node_obj("n1", "8", 5, "{\"tp-1\":{\"cpu\":2000,\"memory\":2147483648,\"pods\":20}}");
	sched_cache_node_set(&c, n0, "rm-1");
	sched_cache_node_set(&c, n1, "rm-1");
	sched_cache_node(&c, "n1")->used = (struct sched_res){ 1000, GI / 2, 10 };
	json_t *po = pod_obj("p", "100m");
	struct sched_pod p;
	struct buf err = BUF_INIT;
	assert_int_equal(sched_pod_parse(po, &p, &err), 0);
	struct sched_result r;
	sched_decide(&c, &p, &r);
	assert_non_null(r.node);
	assert_string_equal(r.node->name, "n1");
	sched_result_release(&r);
	/* without the bonus the emptier node wins */
	c.reserved_bonus = 0;
	sched_decide(&c, &p, &r);
	assert_string_equal(r.node->name, "n0");
	sched_result_release(&r);
	/* and when the reserved room is used up, too */
	c.reserved_bonus = 50;
	sched_cache_node(&c, "n1")->used.cpu_m = 1950;
	sched_decide(&c, &p, &r);
	assert_string_equal(r.node->name, "n0");
	sched_result_release(&r);
	sched_pod_release(&p);
	buf_release(&err);
	json_decref(po);
	json_decref(n0);
	json_decref(n1);
	sched_cache_release(&c);
}

static void test_stale_node_ignored(void **state)
{
	(void)state;
	struct sched_cache c;
	sched_cache_init(&c, "tp-1");
	json_t *fresh = node_obj("n", "8", 20, "{\"tp-1\":{\"cpu\":100,\"memory\":0,\"pods\":1}}");
	json_t *stale = node_obj("n", "8", 19, "{\"tp-1\":{\"cpu\":4000,\"memory\":0,\"pods\":40}}");
	json_t *newer = node_obj("n", "8", 100, "{\"tp-1\":{\"cpu\":200,\"memory\":0,\"pods\":2}}");
	sched_cache_node_set(&c, fresh, "rm-1");
	sched_cache_node_set(&c, stale, "rm-1"); /* a lagging watch event after our release */
	assert_int_equal(sched_cache_node(&c, "n")->own_reserved.cpu_m, 100);
	sched_cache_node_set(&c, newer, "rm-1"); /* "100" > "20" numerically */
	assert_int_equal(sched_cache_node(&c, "n")->own_reserved.cpu_m, 200);
	json_decref(fresh);
	json_decref(stale);
	json_decref(newer);
	sched_cache_release(&c);
}

/* Two partitions, the same 4 nodes of 2 cpu, an RM that applies a write only when its
 * resourceVersion is current; partition B's cache sees A's writes late (and vice versa). Each
 * binds a pod only when its entry covers its pods, as the daemon does. */
struct sim_rm {
	json_t *nodes[4];
	long long rv;
};

struct sim_part {
	const char *id;
	struct sched_cache c;
	int writes, bound;
};

static int sim_write(struct sim_rm *rm, struct sim_part *s, struct sched_node *n, const struct sched_res *target)
{
	int i = n->name[1] - '0';
	const char *cur_rv = json_path_str(rm->nodes[i], "metadata.resourceVersion");
	s->writes++;
	if (strcmp(cur_rv, n->rv) != 0) {
		sched_cache_node_set(&s->c, rm->nodes[i], "rm"); /* 409: re-read */
		return 409;
	}
	char *v = sched_reserved_format(n->reserved, s->id, target);
	json_t *o = node_obj(n->name, "2", ++rm->rv, v);
	free(v);
	json_decref(rm->nodes[i]);
	rm->nodes[i] = o;
	sched_cache_node_set(&s->c, o, "rm");
	return 200;
}

/* One pod of partition s: decide, assume, reserve (writes until covered or no room), bind. */
static void sim_pod(struct sim_rm *rm, struct sim_part *s, int k)
{
	char *name = xasprintf("%s-%d", s->id, k);
	json_t *po = pod_obj(name, "250m");
	struct sched_cpod *cp = sched_cache_pod_set(&s->c, po, NULL);
	struct sched_pod p;
	struct buf err = BUF_INIT;
	assert_int_equal(sched_pod_parse(po, &p, &err), 0);
	for (int attempt = 0; attempt < 8; attempt++) {
		struct sched_result r;
		sched_decide(&s->c, &p, &r);
		struct sched_node *n = r.node;
		sched_result_release(&r);
		if (!n)
			break;
		sched_cache_assume(&s->c, cp, n->name);
		int code = 200;
		while (!sched_reservation_covers(n) && code == 200) {
			struct sched_res t;
			sched_reserve_target(n, &cp->req, 4, &t);
			code = sim_write(rm, s, n, &t);
		}
		struct sched_res u = n->used;
		sched_res_add(&u, &n->other);
		if (code == 200 && u.cpu_m <= n->alloc.cpu_m) {
			json_object_set_new(json_object_get(po, "spec"), "nodeName", json_string(n->name));
			sched_cache_pod_set(&s->c, po, NULL);
			s->bound++;
			break;
		}
		sched_cache_forget(&s->c, cp); /* collision: decide again */
	}
	sched_pod_release(&p);
	buf_release(&err);
	json_decref(po);
	free(name);
}

static void test_two_partitions_never_overcommit(void **state)
{
	(void)state;
	struct sim_rm rm = { .rv = 1 };
	struct sim_part parts[2] = { { .id = "tp-a" }, { .id = "tp-b" } };
	for (int i = 0; i < 4; i++) {
		char name[4] = { 'n', (char)('0' + i), 0, 0 };
		rm.nodes[i] = node_obj(name, "2", rm.rv, NULL);
	}
	for (int j = 0; j < 2; j++) {
		sched_cache_init(&parts[j].c, parts[j].id);
		parts[j].c.reserved_bonus = 50;
		for (int i = 0; i < 4; i++)
			sched_cache_node_set(&parts[j].c, rm.nodes[i], "rm");
	}
	/* 40 pods of 250m for 32 slots: interleaved, the other partition's view refreshed only
	 * every third pod */
	for (int k = 0; k < 20; k++) {
		for (int j = 0; j < 2; j++) {
			sim_pod(&rm, &parts[j], k);
			if (k % 3 == 2)
				for (int i = 0; i < 4; i++)
					sched_cache_node_set(&parts[1 - j].c, rm.nodes[i], "rm");
		}
	}
	long long total = 0;
	for (int i = 0; i < 4; i++) {
		struct sched_res other, own;
		sched_reserved_parse(json_str(json_path(rm.nodes[i], "metadata.annotations"), SCHED_ANN_RESERVED),
				     "tp-a", &other, &own, NULL);
		assert_true(own.cpu_m + other.cpu_m <= 2000); /* reservations never exceed the node */
		char name[3] = { 'n', (char)('0' + i), 0 };
		for (int j = 0; j < 2; j++) {
			/* every partition's bound pods fit in its own entry */
			struct sched_node *n = sched_cache_node(&parts[j].c, name);
			assert_true(n->used.cpu_m <= (j == 0 ? own.cpu_m : other.cpu_m));
			total += n->used.cpu_m;
		}
	}
	assert_true(total <= 4 * 2000);
	assert_int_equal(parts[0].bound + parts[1].bound, 32); /* the region filled up all the same */
	/* far fewer writes than pods: each write reserved room for up to 4 */
	assert_true(parts[0].writes + parts[1].writes < 32);
	for (int j = 0; j < 2; j++)
		sched_cache_release(&parts[j].c);
	for (int i = 0; i < 4; i++)
		json_decref(rm.nodes[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_target),
		cmocka_unit_test(test_covers_and_shrink_in_flight),
		cmocka_unit_test(test_bonus_prefers_reserved_room),
		cmocka_unit_test(test_stale_node_ignored),
		cmocka_unit_test(test_two_partitions_never_overcommit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
