/* Fuzzes k8s_protobuf_to_json. The input is decoded as a whole body; and, to reach the
 * schemas without finding the envelope first, its bytes after the first are also wrapped as the
 * raw object of the kind the first byte picks. Checks the result contract both times. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "ursa/buf.h"
#include "ursa/errors.h"
#include "ursa/proto.h"

static const char *const kinds[][2] = {
	{ "apps/v1", "Deployment" }, { "apps/v1", "ReplicaSet" }, { "apps/v1", "DaemonSet" },
	{ "apps/v1", "StatefulSet" }, { "v1", "Pod" }, { "v1", "Namespace" },
	{ "v1", "ConfigMap" }, { "v1", "Secret" }, { "v1", "ServiceAccount" },
	{ "v1", "Service" }, { "v1", "Event" }, { "v1", "Node" }, { "v1", "Binding" },
	{ "v1", "ResourceQuota" }, { "batch/v1", "Job" }, { "batch/v1", "CronJob" },
	{ "coordination.k8s.io/v1", "Lease" }, { "scheduling.k8s.io/v1", "PriorityClass" },
	{ "rbac.authorization.k8s.io/v1", "ClusterRoleBinding" },
	{ "policy/v1", "PodDisruptionBudget" },
};

static void check(const void *data, size_t size)
{
	json_t *out = NULL;
	struct buf err = BUF_INIT;
	int rc = k8s_protobuf_to_json(data, size, &out, &err);

	if (rc == 0) {
		char *s = json_dumps(out, JSON_COMPACT);
		if (!out || !json_is_object(out) || !json_is_string(json_object_get(out, "kind")) ||
		    !json_is_string(json_object_get(out, "apiVersion")) || !s || err.len)
			abort();
		free(s);
	} else if ((rc != E_BAD_REQUEST && rc != E_MEDIA_TYPE) || out || !err.len) {
		abort();
	}
	json_decref(out);
	buf_release(&err);
}

static void add_varint(struct buf *b, uint64_t v)
{
	while (v >= 0x80) {
		buf_addch(b, (char)(v | 0x80));
		v >>= 7;
	}
	buf_addch(b, (char)v);
}

static void add_field(struct buf *b, unsigned num, const void *p, size_t n)
{
	add_varint(b, (uint64_t)num << 3 | 2);
	add_varint(b, n);
	buf_add(b, p, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf body = BUF_INIT, tm = BUF_INIT;

	check(data, size);
	if (size < 1)
		return 0;
	const char *const *k = kinds[data[0] % (sizeof(kinds) / sizeof(kinds[0]))];
	buf_add(&body, "k8s", 4);
	add_field(&tm, 1, k[0], strlen(k[0]));
	add_field(&tm, 2, k[1], strlen(k[1]));
	add_field(&body, 1, tm.ptr, tm.len);
	add_field(&body, 2, data + 1, size - 1);
	check(body.ptr, body.len);
	buf_release(&tm);
	buf_release(&body);
	return 0;
}
