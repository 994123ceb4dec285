/* Fuzzes the lifecycle hook parser: the bytes as a container's JSON through kl_hooks_from_json:
 * either E_INVALID with a reason and no hooks, or hooks with a sane handler (an exec command, an
 * httpGet port 1..65535 and a path starting with '/', a sleep within 0..HOOK_MAX_SLEEP_S) that
 * copy and free. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "hooks.h"
#include "ursa/errors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *c = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
	if (!c)
		return 0;
	struct rt_hook *hooks[RT_HOOK_KINDS];
	struct buf err = BUF_INIT;
	int rc = kl_hooks_from_json(c, hooks, &err);
	if (rc != 0 && (rc != E_INVALID || err.len == 0))
		abort();
	for (int k = 0; k < RT_HOOK_KINDS; k++) {
		const struct rt_hook *h = hooks[k];
		if (rc != 0 && h)
			abort();
		if (!h)
			continue;
		const struct rt_probe *a = h->action;
		if (!a && (h->sleep_s < 0 || h->sleep_s > HOOK_MAX_SLEEP_S))
			abort();
		if (a && a->handler == RT_PROBE_EXEC && (!a->exec || !a->exec[0]))
			abort();
		if (a && a->handler == RT_PROBE_HTTP && (a->port < 1 || a->port > 65535 || !a->path || a->path[0] != '/'))
			abort();
		struct rt_hook *d = rt_hook_dup(h);
		rt_hook_free(d);
		rt_hook_free(hooks[k]);
	}
	buf_release(&err);
	json_decref(c);
	return 0;
}
