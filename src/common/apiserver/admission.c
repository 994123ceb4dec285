/* The admission chain: steps run on every create and every update of a main resource, after
 * validation and before the write, in table order. A step may change the object (defaults) or
 * refuse it (it replies and returns -1). */
#include "internal.h"
#include <string.h>

static const struct {
	const char *name;
	int (*fn)(struct req *q, json_t *obj, const json_t *old);
} steps[] = {
	{ "rbac-escalation", admit_rbac },
	{ "limitranger", admit_limitrange }, /* defaults before the quota counts them */
	{ "serviceipallocator", admit_service }, /* reserves an address: svcip_release below on a refusal */
	{ "resourcequota", admit_quota },    /* last: it reserves what it admits */
};

int admit(struct req *q, json_t *obj, const json_t *old)
{
	if (!q->http)
		return 0; /* the server's own writes */
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		if (steps[i].fn(q, obj, old) < 0) {
			svcip_release(q, obj);
			return -1;
		}
	return 0;
}
