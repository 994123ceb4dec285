/* ursa-cni's pure parts: subnets of the node's range, the network config, the bridge plugin's
 * config and the allocation state (join with growth into more blocks, leave giving blocks back,
 * both text forms). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cni.h"

#define CONF(extra)                                                                                                  \
	"{\"cniVersion\":\"0.4.0\",\"name\":\"ursa-244-1\",\"type\":\"ursa-cni\",\"bridgePrefix\":\"ut-244-1\","     \
	"\"subnet\":\"10.244.16.0/20\",\"dataDir\":\"/run/x/cni\"" extra "}"

static int parse(const char *text, struct cni_conf *c, char **err)
{
	*err = NULL;
	return cni_conf_parse(text, strlen(text), c, err);
}

static void test_block(void **state)
{
	struct cni_block b;
	char s[24];
	assert_int_equal(cni_block_parse("10.244.16.0/20", &b), 0);
	assert_int_equal(b.plen, 20);
	assert_int_equal(cni_block_count(&b, 26), 64);
	assert_int_equal(cni_block_count(&b, 20), 1);
	assert_int_equal(cni_block_count(&b, 19), -1);
	assert_int_equal(cni_block_count(&b, 31), -1);
	cni_block_nth(&b, 26, 0, s, sizeof(s));
	assert_string_equal(s, "10.244.16.0/26");
	cni_block_nth(&b, 26, 1, s, sizeof(s));
	assert_string_equal(s, "10.244.16.64/26");
	cni_block_nth(&b, 26, 63, s, sizeof(s));
	assert_string_equal(s, "10.244.31.192/26");
	cni_block_gateway(&b, 26, 1, s, sizeof(s));
	assert_string_equal(s, "10.244.16.65/26");
	cni_block_gateway(&b, 29, 3, s, sizeof(s));
	assert_string_equal(s, "10.244.16.25/29");
	assert_int_equal(cni_block_hosts(26), 61);
	assert_int_equal(cni_block_hosts(29), 5);
	assert_int_equal(cni_block_hosts(30), 1);
	assert_int_equal(cni_block_parse("0.0.0.0/0", &b), 0);
	const char *bad[] = { "10.244.16.1/20", "10.244.16.0", "10.244.16.0/33", "256.0.0.0/8", "10.0.0.0/8x",
			      " 10.0.0.0/8", "+10.0.0.0/8", "10.0.0.0/-1", "10..0.0/8", "", "10.0.0.0/8/8" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(cni_block_parse(bad[i], &b), -1);
}

static void test_token(void **state)
{
	assert_true(cni_token_valid("acme"));
	assert_true(cni_token_valid("3f2a_b.c-d"));
	assert_false(cni_token_valid(""));
	assert_false(cni_token_valid(NULL));
	assert_false(cni_token_valid("a b"));
	assert_false(cni_token_valid("a/b"));
	char longer[300];
	memset(longer, 'a', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = 0;
	assert_false(cni_token_valid(longer));
}

static void test_conf(void **state)
{
	struct cni_conf c;
	char *err;
	assert_int_equal(parse(CONF(",\"runtimeConfig\":{\"io.kubernetes.cri.pod-annotations\":"
				    "{\"ursa.io/tenant\":\"acme\",\"other\":\"x\"}}"),
			       &c, &err),
			 0);
	assert_string_equal(c.tenant, "acme");
	assert_int_equal(c.tenant_plen, 26);
	assert_true(c.hairpin);
	assert_false(c.ip_masq);
	assert_int_equal(cni_conf_capacity(&c), 64);
	char br[CNI_IFNAMSIZ];
	cni_bridge_name(&c, 63, br);
	assert_string_equal(br, "ut-244-1-63");
	cni_conf_release(&c);

	assert_null(c.front_door);
	assert_int_equal(parse(CONF(",\"tenantPrefixLength\":28,\"ipMasq\":true,\"frontDoor\":\"127.0.0.1:7443\""), &c,
			       &err),
			 0);
	assert_null(c.tenant);
	assert_string_equal(c.front_door, "127.0.0.1:7443");
	assert_int_equal(cni_conf_capacity(&c), 256);
	assert_true(c.ip_masq);
	cni_conf_release(&c);
}

static void test_conf_refused(void **state)
{
	const char *bad[] = {
		"[]",
		"{",
		"{\"cniVersion\":\"0.4.0\"}",
		CONF(",\"tenantPrefixLength\":31"),
		CONF(",\"tenantPrefixLength\":19"),
		CONF(",\"tenantPrefixLength\":\"26\""),
		CONF(",\"ipMasq\":\"no\""),
		"{\"cniVersion\":\"0.4.0\",\"name\":\"n\",\"bridgePrefix\":\"br-1\",\"subnet\":\"10.0.0.0/20\",\"dataDir\":\"/d\"}",
		"{\"cniVersion\":\"0.4.0\",\"name\":\"n\",\"bridgePrefix\":\"ut-X\",\"subnet\":\"10.0.0.0/20\",\"dataDir\":\"/d\"}",
		"{\"cniVersion\":\"0.4.0\",\"name\":\"n\",\"bridgePrefix\":\"ut-1\",\"subnet\":\"10.0.0.1/20\",\"dataDir\":\"/d\"}",
		"{\"cniVersion\":\"0.4.0\",\"name\":\"n\",\"bridgePrefix\":\"ut-1\",\"subnet\":\"10.0.0.0/20\",\"dataDir\":\"d\"}",
		"{\"cniVersion\":\"0.4.0\",\"name\":\"a b\",\"bridgePrefix\":\"ut-1\",\"subnet\":\"10.0.0.0/20\",\"dataDir\":\"/d\"}",
		/* ut-12345678-1023 is 16 characters */
		"{\"cniVersion\":\"0.4.0\",\"name\":\"n\",\"bridgePrefix\":\"ut-12345678\",\"subnet\":\"10.0.0.0/16\","
		"\"tenantPrefixLength\":26,\"dataDir\":\"/d\"}",
		CONF(",\"runtimeConfig\":{\"io.kubernetes.cri.pod-annotations\":{\"ursa.io/tenant\":\"a b\"}}"),
		CONF(",\"runtimeConfig\":{\"io.kubernetes.cri.pod-annotations\":{\"ursa.io/tenant\":7}}"),
		CONF(",\"name\":\"dup\""),
		CONF(",\"frontDoor\":\"127.0.0.1\""),
		CONF(",\"frontDoor\":\"127.0.0.1:\""),
		CONF(",\"frontDoor\":\"127.0.0.1:0\""),
		CONF(",\"frontDoor\":\"127.0.0.1:65536\""),
		CONF(",\"frontDoor\":\"127.0.0.1:-1\""),
		CONF(",\"frontDoor\":\"localhost:6443\""),
		CONF(",\"frontDoor\":\"127.0.0.1/8:6443\""),
		CONF(",\"frontDoor\":\":6443\""),
		CONF(",\"frontDoor\":6443"),
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cni_conf c;
		char *err;
		if (parse(bad[i], &c, &err) != -1)
			fail_msg("accepted: %s", bad[i]);
		assert_non_null(err);
		free(err);
	}
}

static void test_delegate(void **state)
{
	struct cni_conf c;
	char *err;
	assert_int_equal(parse(CONF(",\"prevResult\":{\"cniVersion\":\"0.4.0\",\"ips\":[]}"), &c, &err), 0);
	/* block 5 on network 2's bridge: the leases under the block's name, the gateway ursa-cni's */
	char *s = cni_delegate_conf(&c, 2, 5);
	json_t *o = json_loads(s, 0, NULL);
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "type")), "bridge");
	assert_string_equal(json_string_value(json_object_get(o, "name")), "ursa-244-1-5");
	assert_string_equal(json_string_value(json_object_get(o, "bridge")), "ut-244-1-2");
	assert_true(json_is_false(json_object_get(o, "isGateway")));
	assert_true(json_is_false(json_object_get(o, "ipMasq")));
	json_t *ipam = json_object_get(o, "ipam");
	assert_string_equal(json_string_value(json_object_get(ipam, "type")), "host-local");
	assert_string_equal(json_string_value(json_object_get(ipam, "dataDir")), "/run/x/cni/ipam");
	json_t *r = json_array_get(json_array_get(json_object_get(ipam, "ranges"), 0), 0);
	assert_string_equal(json_string_value(json_object_get(r, "subnet")), "10.244.17.64/26");
	assert_int_equal(json_array_size(json_array_get(json_object_get(ipam, "ranges"), 0)), 1);
	json_t *route = json_array_get(json_object_get(ipam, "routes"), 0);
	assert_string_equal(json_string_value(json_object_get(route, "dst")), "0.0.0.0/0");
	assert_null(json_object_get(route, "gw")); /* the bridge plugin routes via host-local's gateway */
	assert_non_null(json_object_get(json_object_get(o, "prevResult"), "ips"));
	json_decref(o);
	free(s);
	cni_conf_release(&c);

	s = cni_error_json("1.0.0", CNI_ERR_FULL, "full", "details");
	o = json_loads(s, 0, NULL);
	assert_int_equal(json_integer_value(json_object_get(o, "code")), 100);
	assert_string_equal(json_string_value(json_object_get(o, "cniVersion")), "1.0.0");
	assert_string_equal(json_string_value(json_object_get(o, "details")), "details");
	json_decref(o);
	free(s);
}

static char *fmt(const struct cni_state *s)
{
	return cni_state_format(s);
}

#define ASSERT_STATE(s, text)                                                                                        \
	do {                                                                                                         \
		char *t_ = fmt(s);                                                                                   \
		assert_string_equal(t_, text);                                                                       \
		free(t_);                                                                                            \
	} while (0)

static void test_state_join_leave(void **state)
{
	struct cni_state s;
	char *err = NULL;
	struct cni_join j;
	struct cni_leave l;
	assert_int_equal(cni_state_parse("", &s, &err), 0);
	assert_int_equal(cni_state_join(&s, "acme", "c1", 2, 61, &j), 0);
	assert_true(j.new_net && j.new_block);
	assert_int_equal(j.blk, 0);
	assert_int_equal(cni_state_join(&s, "acme", "c2", 2, 61, &j), 0);
	assert_false(j.new_net || j.new_block);
	assert_int_equal(cni_state_join(&s, "acme", "c2", 2, 61, &j), 0); /* again: same network and block */
	assert_false(j.new_net || j.new_block);
	assert_int_equal(j.blk, 0);
	assert_int_equal(cni_state_join(&s, "beta", "c3", 2, 61, &j), 1);
	assert_true(j.new_net);
	assert_int_equal(j.blk, 1);
	assert_int_equal(cni_state_join(&s, "gamma", "c4", 2, 61, &j), -1); /* node full */
	ASSERT_STATE(&s, "v2\n0 acme 0:c1,c2\n1 beta 1:c3\n");
	long blk = -1;
	assert_string_equal(cni_state_find(&s, "c3", &blk)->tenant, "beta");
	assert_int_equal(blk, 1);
	assert_null(cni_state_find(&s, "c4", NULL));

	assert_int_equal(cni_state_leave(&s, "c1", &l), 0);
	assert_false(l.block_empty || l.net_empty);
	assert_int_equal(cni_state_leave(&s, "c2", &l), 0);
	assert_true(l.block_empty && l.net_empty);
	assert_int_equal(l.blk, 0);
	assert_int_equal(cni_state_leave(&s, "c2", &l), -1);
	assert_false(l.block_empty || l.net_empty);
	/* the freed index and block are reused, lowest first */
	assert_int_equal(cni_state_join(&s, "gamma", "c4", 2, 61, &j), 0);
	assert_true(j.new_net);
	assert_int_equal(j.blk, 0);
	char *t = fmt(&s);
	assert_string_equal(t, "v2\n0 gamma 0:c4\n1 beta 1:c3\n");
	struct cni_state back;
	assert_int_equal(cni_state_parse(t, &back, &err), 0);
	char *t2 = fmt(&back);
	assert_string_equal(t, t2);
	free(t2);
	free(t);
	cni_state_release(&back);
	cni_state_release(&s);
}

/* A tenant outgrowing its block gets the node's lowest free one on the same network; blocks that
 * empty are given back while the network stays; the last container takes the network. */
static void test_state_growth(void **state)
{
	struct cni_state s;
	char *err = NULL;
	struct cni_join j;
	struct cni_leave l;
	char cid[16];
	assert_int_equal(cni_state_parse("", &s, &err), 0);
	/* blocks of 2 hosts, 5 blocks: acme a0..a4 over blocks 0, 2, 3; beta in block 1 */
	assert_int_equal(cni_state_join(&s, "acme", "a0", 5, 2, &j), 0);
	assert_int_equal(cni_state_join(&s, "beta", "b0", 5, 2, &j), 1);
	assert_int_equal(j.blk, 1);
	assert_int_equal(cni_state_join(&s, "acme", "a1", 5, 2, &j), 0);
	assert_false(j.new_block);
	assert_int_equal(j.blk, 0);
	assert_int_equal(cni_state_join(&s, "acme", "a2", 5, 2, &j), 0);
	assert_true(j.new_block && !j.new_net);
	assert_int_equal(j.blk, 2);
	assert_int_equal(cni_state_join(&s, "acme", "a3", 5, 2, &j), 0);
	assert_int_equal(j.blk, 2);
	assert_false(j.new_block);
	assert_int_equal(cni_state_join(&s, "acme", "a4", 5, 2, &j), 0);
	assert_int_equal(j.blk, 3);
	ASSERT_STATE(&s, "v2\n0 acme 0:a0,a1 2:a2,a3 3:a4\n1 beta 1:b0\n");

	/* a block that empties is given back, the network keeps the others */
	assert_int_equal(cni_state_leave(&s, "a0", &l), 0);
	assert_false(l.block_empty);
	assert_int_equal(cni_state_leave(&s, "a1", &l), 0);
	assert_true(l.block_empty && !l.net_empty);
	assert_int_equal(l.blk, 0);
	ASSERT_STATE(&s, "v2\n0 acme 2:a2,a3 3:a4\n1 beta 1:b0\n");
	/* a room in block 3 comes before a new block; then the freed block 0, then block 4 */
	assert_int_equal(cni_state_join(&s, "acme", "a5", 5, 2, &j), 0);
	assert_int_equal(j.blk, 3);
	assert_int_equal(cni_state_join(&s, "beta", "b1", 5, 2, &j), 1);
	assert_int_equal(j.blk, 1);
	assert_int_equal(cni_state_join(&s, "beta", "b2", 5, 2, &j), 1);
	assert_int_equal(j.blk, 0);
	assert_true(j.new_block);
	assert_int_equal(cni_state_join(&s, "acme", "a6", 5, 2, &j), 0);
	assert_int_equal(j.blk, 4);
	/* every block in use: a new tenant and a full one are refused, a tenant with room is not */
	assert_int_equal(cni_state_join(&s, "gamma", "g0", 5, 2, &j), -1);
	assert_int_equal(cni_state_join(&s, "acme", "a7", 5, 2, &j), 0);
	assert_int_equal(j.blk, 4);
	assert_int_equal(cni_state_join(&s, "acme", "a8", 5, 2, &j), -1);
	assert_null(cni_state_find(&s, "a8", NULL));
	assert_null(cni_state_find(&s, "g0", NULL));
	assert_int_equal(cni_state_join(&s, "beta", "b3", 5, 2, &j), 1);
	assert_int_equal(j.blk, 0);
	char *t = fmt(&s);
	assert_string_equal(t, "v2\n0 acme 2:a2,a3 3:a4,a5 4:a6,a7\n1 beta 0:b2,b3 1:b0,b1\n");
	struct cni_state back;
	assert_int_equal(cni_state_parse(t, &back, &err), 0);
	char *t2 = fmt(&back);
	assert_string_equal(t, t2);
	free(t2);
	free(t);
	cni_state_release(&back);

	/* the tenant's last container takes the network and its last block */
	const char *acme[] = { "a2", "a3", "a4", "a5", "a7" };
	for (size_t i = 0; i < 5; i++) {
		assert_int_equal(cni_state_leave(&s, acme[i], &l), 0);
		assert_false(l.net_empty);
		assert_int_equal(l.block_empty, i % 2 == 1);
	}
	assert_int_equal(cni_state_leave(&s, "a6", &l), 0);
	assert_true(l.block_empty && l.net_empty);
	assert_int_equal(l.blk, 4);
	ASSERT_STATE(&s, "v2\n1 beta 0:b2,b3 1:b0,b1\n");
	/* a new tenant: the lowest free index (0) and block (2) */
	assert_int_equal(cni_state_join(&s, "gamma", "g0", 5, 2, &j), 0);
	assert_true(j.new_net);
	assert_int_equal(j.blk, 2);
	cni_state_release(&s);

	/* many containers: 100 pods of a tenant in /26 blocks of a /20 take two blocks */
	assert_int_equal(cni_state_parse("", &s, &err), 0);
	for (int i = 0; i < 100; i++) {
		snprintf(cid, sizeof(cid), "c%d", i);
		assert_int_equal(cni_state_join(&s, "acme", cid, 64, 61, &j), 0);
		assert_int_equal(j.blk, i < 61 ? 0 : 1);
	}
	assert_int_equal(s.nets[0].nblocks, 2);
	for (int i = 0; i < 100; i++) {
		snprintf(cid, sizeof(cid), "c%d", i);
		assert_int_equal(cni_state_leave(&s, cid, &l), 0);
		assert_int_equal(l.net_empty, i == 99);
	}
	assert_int_equal(s.n, 0);
	cni_state_release(&s);
}

/* A state file of the first version (one block per network, its index) still reads. */
static void test_state_v1(void **state)
{
	struct cni_state s;
	char *err = NULL;
	struct cni_join j;
	assert_int_equal(cni_state_parse("0 acme c1 c2\n3 beta c3\n", &s, &err), 0);
	ASSERT_STATE(&s, "v2\n0 acme 0:c1,c2\n3 beta 3:c3\n");
	long blk = -1;
	assert_int_equal(cni_state_find(&s, "c3", &blk)->idx, 3);
	assert_int_equal(blk, 3);
	/* growth after an upgrade: acme's next block is the lowest free, 1 */
	assert_int_equal(cni_state_join(&s, "acme", "c4", 64, 2, &j), 0);
	assert_int_equal(j.blk, 1);
	assert_int_equal(cni_state_join(&s, "gamma", "c5", 64, 2, &j), 1);
	assert_int_equal(j.blk, 2);
	ASSERT_STATE(&s, "v2\n0 acme 0:c1,c2 1:c4\n1 gamma 2:c5\n3 beta 3:c3\n");
	cni_state_release(&s);
}

static void test_state_refused(void **state)
{
	const char *bad[] = {
		"x acme c1\n", "0\n", "0 a/b\n", "0 acme c1\n0 beta c2\n", "0 acme\n1 acme\n", "0 acme c1\n1 beta c1\n",
		"-1 acme\n", "\f-2 acme\n", "0 acme c/1\n", "99999999999 acme\n",
		/* the second form */
		"v2\n0 acme c1\n", "v2\n0 acme\n", "v2\n0 acme 0\n", "v2\n0 acme :c1\n", "v2\n0 acme x:c1\n",
		"v2\n0 acme 0:c1 0:c2\n", "v2\n0 acme 0:c1\n1 beta 0:c2\n", "v2\n0 acme 0:c1,c1\n",
		"v2\n0 acme 0:c1 1:c1\n", "v2\n0 acme 0:c1\n1 beta 1:c1\n", "v2\n0 acme 0:c1,\n", "v2\n0 acme 0:,c1\n",
		"v2\n0 acme 0:c1,,c2\n", "v2\n0 acme 0:c/1\n", "v2\n0 acme 1:c1:c2\n", "v2\n0 acme 99999999999:c1\n",
		"v2\n0 acme -1:c1\n", "v2\nv2\n", "0 acme\nv2\n", "v2\n0 acme 0:c1\n0 beta 1:c2\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cni_state s;
		char *err = NULL;
		if (cni_state_parse(bad[i], &s, &err) != -1)
			fail_msg("accepted: %s", bad[i]);
		assert_non_null(strstr(err, "state line"));
		free(err);
	}
	struct cni_state s;
	char *err = NULL;
	assert_int_equal(cni_state_parse("\n3 acme c1\n\n0 beta\n", &s, &err), 0);
	ASSERT_STATE(&s, "v2\n0 beta 0:\n3 acme 3:c1\n");
	cni_state_release(&s);
	assert_int_equal(cni_state_parse("v2\n\n3 acme 5:c1 4:c2,c3\n0 beta 0:\n", &s, &err), 0);
	ASSERT_STATE(&s, "v2\n0 beta 0:\n3 acme 4:c2,c3 5:c1\n");
	cni_state_release(&s);
	assert_int_equal(cni_state_parse("v2\n", &s, &err), 0);
	assert_int_equal(s.n, 0);
	cni_state_release(&s);
}

/* The pod's side of a bridge result: its address with its interface's name and MAC; the
 * host's veth (no sandbox), IPv6 and malformed entries are skipped. */
static void test_result_pod_addrs(void **state)
{
	(void)state;
	const char *r = "{\"cniVersion\":\"1.0.0\",\"interfaces\":["
			"{\"name\":\"ut-1\",\"mac\":\"02:00:00:00:00:01\"},"
			"{\"name\":\"veth1\",\"mac\":\"02:00:00:00:00:02\"},"
			"{\"name\":\"eth0\",\"mac\":\"ce:ff:51:48:38:81\",\"sandbox\":\"/var/run/netns/x\"}],"
			"\"ips\":[{\"interface\":2,\"address\":\"10.20.1.4/29\",\"gateway\":\"10.20.1.1\"},"
			"{\"interface\":2,\"address\":\"fd00::4/64\"},{\"interface\":0,\"address\":\"10.20.1.1/29\"},"
			"{\"interface\":9,\"address\":\"10.20.1.5/29\"},{\"address\":\"10.20.1.6/29\"}]}";
	struct cni_pod_addr a[4];
	assert_int_equal(cni_result_pod_addrs(r, a, 4), 1);
	assert_string_equal(a[0].ifname, "eth0");
	assert_int_equal(a[0].ip, (10u << 24) | (20u << 16) | (1u << 8) | 4u);
	const uint8_t mac[6] = { 0xce, 0xff, 0x51, 0x48, 0x38, 0x81 };
	assert_memory_equal(a[0].mac, mac, 6);
	assert_int_equal(cni_result_pod_addrs(r, a, 0), 0);
	assert_int_equal(cni_result_pod_addrs("not json", a, 4), 0);
	assert_int_equal(cni_result_pod_addrs(NULL, a, 4), 0);
	assert_int_equal(cni_result_pod_addrs("{\"interfaces\":[{\"name\":\"eth0\",\"mac\":\"zz\",\"sandbox\":\"/n\"}],"
					      "\"ips\":[{\"interface\":0,\"address\":\"10.0.0.2/24\"}]}", a, 4), 0);

	uint8_t p[CNI_ARP_LEN];
	cni_garp_payload(&a[0], p);
	const uint8_t want[CNI_ARP_LEN] = { 0, 1, 8, 0, 6, 4, 0, 1, 0xce, 0xff, 0x51, 0x48, 0x38, 0x81, 10, 20, 1, 4,
					    0, 0, 0, 0, 0, 0, 10, 20, 1, 4 };
	assert_memory_equal(p, want, CNI_ARP_LEN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_block),
		cmocka_unit_test(test_token),
		cmocka_unit_test(test_conf),
		cmocka_unit_test(test_conf_refused),
		cmocka_unit_test(test_delegate),
		cmocka_unit_test(test_state_join_leave),
		cmocka_unit_test(test_state_growth),
		cmocka_unit_test(test_state_v1),
		cmocka_unit_test(test_state_refused),
		cmocka_unit_test(test_result_pod_addrs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
