/* The kubelet's tenant isolation admission (admit.c: kl_admit_isolation): a pod that reaches the
 * node although the tenant partition refuses it is rejected, except for the system tenant. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include "podlogic.h"

static json_t *pod(const char *tenant, const char *spec_json)
{
	json_error_t e;
	json_t *spec = json_loads(spec_json, 0, &e);
	assert_non_null(spec);
	json_t *p = json_pack("{s:{s:s,s:s},s:o}", "metadata", "name", "p", "namespace", "default", "spec", spec);
	if (tenant)
		json_object_set_new(json_object_get(p, "metadata"), "tenant", json_string(tenant));
	return p;
}

static void test_isolation(void **state)
{
	(void)state;
	static const char priv[] = "{\"containers\":[{\"name\":\"c\",\"securityContext\":{\"privileged\":true}}],"
				   "\"volumes\":[{\"name\":\"h\",\"hostPath\":{\"path\":\"/\"}}]}";
	struct buf msg = BUF_INIT;
	json_t *p = pod("acme", priv);
	assert_string_equal(kl_admit_isolation(p, &msg), "TenantIsolation");
	assert_string_equal(buf_cstr(&msg), "violates tenant isolation: hostPath volumes (volume \"h\"), privileged "
					    "(container \"c\" must not set securityContext.privileged=true)");
	json_decref(p);
	buf_reset(&msg);

	/* no tenant: held to the checks too */
	p = pod(NULL, priv);
	assert_string_equal(kl_admit_isolation(p, &msg), "TenantIsolation");
	json_decref(p);
	buf_reset(&msg);

	/* the system tenant may */
	p = pod("system", priv);
	assert_null(kl_admit_isolation(p, &msg));
	assert_int_equal(msg.len, 0);
	json_decref(p);

	/* an ordinary pod of a tenant runs */
	p = pod("acme", "{\"containers\":[{\"name\":\"c\",\"securityContext\":{\"capabilities\":{\"add\":"
			"[\"NET_BIND_SERVICE\"]}},\"ports\":[{\"containerPort\":80}]}]}");
	assert_null(kl_admit_isolation(p, &msg));
	assert_int_equal(msg.len, 0);
	json_decref(p);

	p = pod("acme", "{\"hostNetwork\":true,\"containers\":[{\"name\":\"c\"}]}");
	assert_string_equal(kl_admit_isolation(p, &msg), "TenantIsolation");
	assert_string_equal(buf_cstr(&msg), "violates tenant isolation: host namespaces (hostNetwork=true)");
	json_decref(p);
	buf_release(&msg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_isolation),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
