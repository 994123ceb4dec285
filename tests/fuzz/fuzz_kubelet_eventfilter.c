/* Fuzzes the hollow kubelet's raw event filter (kl_event_foreign) against the parser it lets the
 * kubelet skip: whenever it calls a line foreign and the line is JSON, no "nodeName" member of
 * the parsed document may name a node of this process. Inputs with a backslash are only run, not
 * checked: an escaped member name ("node\u004eame") is the filter's documented blind spot, which
 * the API servers' encoder never produces. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "kubelet.h"

static struct kubelet K;

static void init_once(void)
{
	if (K.nodes)
		return;
	K.hollow = true;
	K.opt.hollow_nodes = 4;
	K.opt.hollow_prefix = "n"; /* n-0 .. n-3 */
	kl_nodes_init(&K);
}

/* Aborts if any member called nodeName in j names a node held here. */
static void check_no_own_node(const json_t *j, int depth)
{
	const char *key;
	json_t *v;
	size_t i;

	if (depth > 64)
		return;
	if (json_is_object(j)) {
		json_object_foreach((json_t *)j, key, v) {
			if (!strcmp(key, "nodeName") && json_is_string(v) && kl_node_find(&K, json_string_value(v)) >= 0)
				abort();
			check_no_own_node(v, depth + 1);
		}
	} else if (json_is_array(j)) {
		json_array_foreach(j, i, v)
			check_no_own_node(v, depth + 1);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	init_once();
	const char *line = (const char *)data;
	if (!kl_event_foreign(&K, line, size) || memchr(line, '\\', size))
		return 0;
	json_t *j = json_loadb(line, size, JSON_DECODE_ANY, NULL);
	if (j) {
		check_no_own_node(j, 0);
		json_decref(j);
	}
	return 0;
}
