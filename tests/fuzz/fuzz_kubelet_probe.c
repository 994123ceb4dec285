/* Fuzzes the probe parsers: the bytes as a container's JSON (its livenessProbe, readinessProbe and
 * startupProbe through kl_probe_from_json: either E_INVALID with a reason and no probe, or a probe
 * with sane numbers that copies and frees), and as a gRPC health Check response body (a serving
 * status 0..3 or -1). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "probes.h"
#include "ursa/errors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int gs = probe_grpc_status(data, size);
	if (gs < -1 || gs > 3)
		abort();
	json_t *c = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
	if (!c)
		return 0;
	const char *fields[] = { "livenessProbe", "readinessProbe", "startupProbe" };
	for (int k = 0; k < RT_PROBE_KINDS; k++) {
		struct rt_probe *p = NULL;
		struct buf err = BUF_INIT;
		int rc = kl_probe_from_json(json_object_get(c, fields[k]), c, (enum rt_probe_kind)k, &p, &err);
		if (rc != 0 && (rc != E_INVALID || p || err.len == 0))
			abort();
		if (p && (p->period_s < 1 || p->timeout_s < 1 || p->success_threshold < 1 || p->failure_threshold < 1 ||
			  p->initial_delay_s < 0 || (p->handler != RT_PROBE_EXEC && (p->port < 1 || p->port > 65535)) ||
			  (p->handler == RT_PROBE_EXEC && (!p->exec || !p->exec[0]))))
			abort();
		struct rt_probe *d = rt_probe_dup(p);
		rt_probe_free(d);
		rt_probe_free(p);
		buf_release(&err);
	}
	json_decref(c);
	return 0;
}
