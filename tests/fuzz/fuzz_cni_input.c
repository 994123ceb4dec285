/* Fuzzes what ursa-cni parses: the network config on stdin (whatever it accepts yields a
 * bridge name within 15 characters and a delegate config that is JSON) and its state file in
 * either form (whatever it accepts formats to text that parses back to the same text; a join
 * that succeeds puts the container in a block of a network, a leave takes it out again and the
 * state still formats to text that parses), and the bridge plugin's result (the pod's addresses
 * found have a NUL-terminated interface name). */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "cni.h"
#include "ursa/xalloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 16384)
		return 0;
	struct cni_conf c;
	char *err = NULL;
	if (cni_conf_parse((const char *)data, size, &c, &err) == 0) {
		long cap = cni_conf_capacity(&c);
		char *br = xasprintf("%s-%ld", c.bridge_prefix, cap - 1); /* cni_bridge_name, untruncated */
		if (cap < 1 || strlen(br) > 15)
			abort();
		free(br);
		char *d = cni_delegate_conf(&c, cap - 1, cap - 1);
		json_t *o = d ? json_loads(d, 0, NULL) : NULL;
		if (!o)
			abort();
		json_decref(o);
		free(d);
		cni_conf_release(&c);
	} else {
		if (!err)
			abort();
		free(err);
	}
	char *text = xstrndup((const char *)data, size);
	struct cni_pod_addr pa[4];
	size_t npa = cni_result_pod_addrs(text, pa, 4);
	if (npa > 4)
		abort();
	for (size_t i = 0; i < npa; i++)
		if (strnlen(pa[i].ifname, sizeof(pa[i].ifname)) >= sizeof(pa[i].ifname))
			abort();
	struct cni_state s;
	err = NULL;
	if (cni_state_parse(text, &s, &err) == 0) {
		char *f = cni_state_format(&s);
		struct cni_state back;
		char *err2 = NULL;
		if (cni_state_parse(f, &back, &err2) != 0)
			abort();
		char *f2 = cni_state_format(&back);
		if (strcmp(f, f2) != 0)
			abort();
		struct cni_join j;
		struct cni_leave l;
		long blk = -1;
		bool had = cni_state_find(&back, "fuzz-cid", NULL) != NULL; /* then join keeps its network */
		long idx = cni_state_join(&back, "t", "fuzz-cid", 4096, 2, &j);
		if (idx >= 0) {
			const struct cni_net *n = cni_state_find(&back, "fuzz-cid", &blk);
			if (!n || n->idx != idx || blk != j.blk || (!had && strcmp(n->tenant, "t") != 0) ||
			    (had && (j.new_net || j.new_block)))
				abort();
			if (cni_state_leave(&back, "fuzz-cid", &l) != idx || l.blk != blk ||
			    (j.new_block && !l.block_empty) || (j.new_net && !l.net_empty) ||
			    cni_state_find(&back, "fuzz-cid", NULL))
				abort();
		}
		char *f3 = cni_state_format(&back);
		struct cni_state again;
		if (cni_state_parse(f3, &again, &err2) != 0)
			abort();
		cni_state_release(&again);
		free(f3);
		free(f2);
		free(f);
		cni_state_release(&back);
		cni_state_release(&s);
	} else {
		free(err);
	}
	free(text);
	return 0;
}
