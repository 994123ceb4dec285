/* Unit tests of the CRI client: endpoints, the protobuf-c messages on the wire (field numbers as
 * the CRI's), hostile input, and a call with no runtime behind the socket. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "ursa/cri.h"
#include "ursa/errors.h"

static void test_socket_path(void **state)
{
	char longp[200];

	assert_string_equal(cri_socket_path("unix:///run/containerd/containerd.sock"), "/run/containerd/containerd.sock");
	assert_string_equal(cri_socket_path("/tmp/x.sock"), "/tmp/x.sock");
	assert_null(cri_socket_path("unix://relative.sock"));
	assert_null(cri_socket_path("tcp://127.0.0.1:1234"));
	assert_null(cri_socket_path(""));
	assert_null(cri_socket_path("unix://"));
	assert_null(cri_socket_path(NULL));
	memset(longp, 'a', sizeof(longp) - 1);
	longp[0] = '/';
	longp[sizeof(longp) - 1] = '\0';
	assert_null(cri_socket_path(longp));
	assert_null(cri_open("http://localhost", 1000));
}

/* The bytes a Go client would send for a StopContainerRequest{container_id "c1", timeout 30}. */
static void test_wire_format(void **state)
{
	Runtime__V1__StopContainerRequest req = RUNTIME__V1__STOP_CONTAINER_REQUEST__INIT;
	uint8_t out[64];

	req.container_id = "c1";
	req.timeout = 30;
	assert_int_equal(protobuf_c_message_get_packed_size(&req.base), 6);
	protobuf_c_message_pack(&req.base, out);
	assert_memory_equal(out, "\x0a\x02" "c1" "\x10\x1e", 6);
}

static void test_container_config_roundtrip(void **state)
{
	Runtime__V1__ContainerConfig cc = RUNTIME__V1__CONTAINER_CONFIG__INIT;
	Runtime__V1__ContainerMetadata meta = RUNTIME__V1__CONTAINER_METADATA__INIT;
	Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
	Runtime__V1__LinuxContainerConfig lc = RUNTIME__V1__LINUX_CONTAINER_CONFIG__INIT;
	Runtime__V1__LinuxContainerResources res = RUNTIME__V1__LINUX_CONTAINER_RESOURCES__INIT;
	Runtime__V1__KeyValue kv = RUNTIME__V1__KEY_VALUE__INIT, *envs[] = { &kv };
	char *cmd[] = { "sh", "-c", "echo hi" };
	Runtime__V1__ContainerConfig *back;
	uint8_t *wire;
	size_t n;

	meta.name = "app";
	meta.attempt = 2;
	spec.image = "busybox:1.36";
	cc.metadata = &meta;
	cc.image = &spec;
	cc.command = cmd;
	cc.n_command = 3;
	kv.key = "A";
	kv.value = "b";
	cc.envs = envs;
	cc.n_envs = 1;
	cc.log_path = "app/2.log";
	res.memory_limit_in_bytes = 64 << 20;
	res.cpu_quota = 50000;
	res.cpu_period = 100000;
	lc.resources = &res;
	cc.linux = &lc;
	n = protobuf_c_message_get_packed_size(&cc.base);
	wire = malloc(n);
	protobuf_c_message_pack(&cc.base, wire);
	back = (Runtime__V1__ContainerConfig *)cri_unpack(&runtime__v1__container_config__descriptor, wire, n);
	assert_non_null(back);
	assert_string_equal(back->metadata->name, "app");
	assert_int_equal(back->metadata->attempt, 2);
	assert_string_equal(back->image->image, "busybox:1.36");
	assert_int_equal(back->n_command, 3);
	assert_string_equal(back->command[2], "echo hi");
	assert_string_equal(back->envs[0]->value, "b");
	assert_string_equal(back->log_path, "app/2.log");
	assert_int_equal(back->linux->resources->memory_limit_in_bytes, 64 << 20);
	assert_int_equal(back->linux->resources->cpu_quota, 50000);
	assert_null(back->linux->security_context);
	cri_free(back);
	free(wire);
}

/* A ContainerStatusResponse as a newer runtime sends it: fields this subset leaves out (user 18,
 * stop_signal 19, info map) are skipped, the known ones read. */
static void test_status_with_unknown_fields(void **state)
{
	static const uint8_t wire[] = {
		0x0a, 0x1c,                         /* status, 28 bytes */
		0x0a, 0x02, 'c', '1',               /* id "c1" */
		0x18, 0x02,                         /* state EXITED */
		0x38, 0x89, 0x01,                   /* exit_code 137 */
		0x52, 0x09, 'O', 'O', 'M', 'K', 'i', 'l', 'l', 'e', 'd', /* reason */
		0x92, 0x01, 0x02, 0x0a, 0x00,       /* user (18): unknown, skipped */
		0x98, 0x01, 0x0d,                   /* stop_signal (19) SIGKILL: unknown, skipped */
		0x12, 0x06, 0x0a, 0x01, 'k', 0x12, 0x01, 'v', /* info {"k": "v"} */
	};
	Runtime__V1__ContainerStatusResponse *r = (Runtime__V1__ContainerStatusResponse *)cri_unpack(
		&runtime__v1__container_status_response__descriptor, wire, sizeof(wire));

	assert_non_null(r);
	assert_non_null(r->status);
	assert_string_equal(r->status->id, "c1");
	assert_int_equal(r->status->state, RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED);
	assert_int_equal(r->status->exit_code, 137);
	assert_string_equal(r->status->reason, "OOMKilled");
	assert_int_equal(r->n_info, 1);
	assert_string_equal(r->info[0]->key, "k");
	assert_string_equal(r->info[0]->value, "v");
	cri_free(r);
}

static void test_hostile_input(void **state)
{
	static const struct {
		const char *b;
		size_t n;
	} bad[] = {
		{ "\x0a\x05\x0a\x02" "c", 5 },         /* status cut short */
		{ "\x0a\x7f", 2 },                      /* length past the end */
		{ "\x0a\xff\xff\xff\xff\x0f", 6 },       /* 4 GiB length */
		{ "\x08\x01", 2 },                      /* status as a varint: wrong wire type */
		{ "\x0a\x02\x18\xff", 4 },              /* unterminated varint inside */
		{ "\x0f", 1 },                          /* wire type 7 */
		{ "\x00\x00", 2 },                      /* field 0 */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_null(cri_unpack(&runtime__v1__container_status_response__descriptor, (const uint8_t *)bad[i].b,
				       bad[i].n));
	/* empty is the all-defaults message */
	ProtobufCMessage *m = cri_unpack(&runtime__v1__container_status_response__descriptor, (const uint8_t *)"", 0);
	assert_non_null(m);
	assert_null(((Runtime__V1__ContainerStatusResponse *)m)->status);
	cri_free(m);
	cri_free(NULL);
}

static void test_no_runtime(void **state)
{
	struct cri *c = cri_open("unix:///nonexistent/dir/containerd.sock", 2000);
	Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
	Runtime__V1__VersionResponse *r = (void *)1;
	struct cri_err err;

	assert_non_null(c);
	assert_int_equal(cri_version(c, &req, &r, &err), E_UNAVAILABLE);
	assert_null(r);
	assert_int_equal(err.grpc_code, -1);
	assert_non_null(strstr(err.message, "/runtime.v1.RuntimeService/Version"));
	/* again, on the pooled handle; err may be NULL */
	assert_int_equal(cri_version(c, &req, NULL, NULL), E_UNAVAILABLE);
	cri_close(c);
	cri_close(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_socket_path),       cmocka_unit_test(test_wire_format),
		cmocka_unit_test(test_container_config_roundtrip), cmocka_unit_test(test_status_with_unknown_fields),
		cmocka_unit_test(test_hostile_input),     cmocka_unit_test(test_no_runtime),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
