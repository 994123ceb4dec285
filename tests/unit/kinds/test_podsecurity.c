/* Tenant isolation checks (podsecurity.c): each baseline check, PSA's wording and order, what is
 * allowed, templates of every workload kind. */
#include "kinds_test.h"
#include "ursa/podsecurity.h"

/* The violations of the pod written as single-quoted JSON (new string); *ret_n their number. */
static char *V(const char *pod_json, int *ret_n)
{
	json_t *pod = J(pod_json);
	struct buf b = BUF_INIT;
	int n = pod_security_violations(pod, &b);
	/* the count without a message buffer is the same */
	assert_int_equal(pod_security_violations(pod, NULL), n);
	json_decref(pod);
	*ret_n = n;
	return buf_detach(&b, NULL);
}

static void expect_ok(const char *pod_json)
{
	int n = -1;
	char *m = V(pod_json, &n);
	if (n != 0)
		fail_msg("expected no violation, got %d: %s (pod %s)", n, m, pod_json);
	assert_string_equal(m, "");
	free(m);
}

static void expect_v(const char *pod_json, int want_n, const char *want)
{
	int n = -1;
	char *m = V(pod_json, &n);
	assert_string_equal(m, want);
	assert_int_equal(n, want_n);
	free(m);
}

static void test_allowed(void **state)
{
	(void)state;
	expect_ok("{'spec':{'containers':[{'name':'c','image':'busybox'}]}}");
	expect_ok("{}");
	expect_ok("{'spec':{}}");
	/* explicit false values, allowed capabilities, safe sysctls, confined profiles */
	expect_ok("{'spec':{'hostNetwork':false,'hostPID':false,'hostIPC':false,"
		  "'securityContext':{'sysctls':[{'name':'net.ipv4.ip_local_port_range','value':'1024 65535'},"
		  "{'name':'kernel.shm_rmid_forced','value':'1'}],'seccompProfile':{'type':'RuntimeDefault'},"
		  "'appArmorProfile':{'type':'Localhost','localhostProfile':'p'},"
		  "'seLinuxOptions':{'type':'container_t','level':'s0:c1,c2'}},"
		  "'volumes':[{'name':'v','emptyDir':{}},{'name':'s','secret':{'secretName':'x'}}],"
		  "'containers':[{'name':'c','securityContext':{'privileged':false,'allowPrivilegeEscalation':true,"
		  "'procMount':'Default','capabilities':{'add':['NET_BIND_SERVICE','CHOWN','SYS_CHROOT'],"
		  "'drop':['ALL']},'seccompProfile':{'type':'Localhost','localhostProfile':'x.json'}},"
		  "'ports':[{'containerPort':80,'hostPort':0}]}]}}");
	expect_ok("{'metadata':{'annotations':{'container.apparmor.security.beta.kubernetes.io/c':'runtime/default',"
		  "'container.apparmor.security.beta.kubernetes.io/d':'localhost/prof','other':'unconfined'}},"
		  "'spec':{'containers':[{'name':'c'},{'name':'d'}]}}");
	/* malformed values count as unset (validation reports them) */
	expect_ok("{'spec':{'hostNetwork':'true','volumes':[{'name':'v','hostPath':null}],"
		  "'containers':[{'name':'c','securityContext':{'privileged':'true','capabilities':{'add':[1]}},"
		  "'ports':[{'hostPort':'80'}]}]}}");
}

static void test_privileged(void **state)
{
	(void)state;
	expect_v("{'spec':{'containers':[{'name':'c','securityContext':{'privileged':true}}]}}", 1,
		 "privileged (container \"c\" must not set securityContext.privileged=true)");
	/* init, regular and ephemeral containers, in that order */
	expect_v("{'spec':{'containers':[{'name':'a','securityContext':{'privileged':true}},{'name':'ok'}],"
		 "'initContainers':[{'name':'i','securityContext':{'privileged':true}}],"
		 "'ephemeralContainers':[{'name':'e','securityContext':{'privileged':true}}]}}",
		 1, "privileged (containers \"i\", \"a\", \"e\" must not set securityContext.privileged=true)");
}

static void test_host(void **state)
{
	(void)state;
	expect_v("{'spec':{'hostNetwork':true,'hostIPC':true,'containers':[{'name':'c'}]}}", 1,
		 "host namespaces (hostNetwork=true, hostIPC=true)");
	expect_v("{'spec':{'hostPID':true}}", 1, "host namespaces (hostPID=true)");
	expect_v("{'spec':{'volumes':[{'name':'v','hostPath':{'path':'/'}}]}}", 1, "hostPath volumes (volume \"v\")");
	expect_v("{'spec':{'volumes':[{'name':'a','hostPath':{'path':'/'}},{'name':'e','emptyDir':{}},"
		 "{'name':'b','hostPath':{'path':'/etc','type':'Directory'}}]}}",
		 1, "hostPath volumes (volumes \"a\", \"b\")");
	expect_v("{'spec':{'containers':[{'name':'c','ports':[{'containerPort':80,'hostPort':8080}]}]}}", 1,
		 "hostPort (container \"c\" uses hostPort 8080)");
	expect_v("{'spec':{'containers':[{'name':'c','ports':[{'hostPort':80},{'hostPort':443}]},"
		 "{'name':'d','ports':[{'hostPort':53}]}]}}",
		 1, "hostPort (containers \"c\", \"d\" use hostPorts 80, 443, 53)");
}

static void test_capabilities(void **state)
{
	(void)state;
	expect_v("{'spec':{'containers':[{'name':'c','securityContext':{'capabilities':{'add':['SYS_ADMIN']}}}]}}", 1,
		 "non-default capabilities (container \"c\" must not include \"SYS_ADMIN\" in "
		 "securityContext.capabilities.add)");
	expect_v("{'spec':{'containers':[{'name':'a','securityContext':{'capabilities':{'add':['NET_ADMIN','KILL',"
		 "'NET_RAW']}}},{'name':'b','securityContext':{'capabilities':{'add':['NET_RAW','SYS_PTRACE']}}}]}}",
		 1,
		 "non-default capabilities (containers \"a\", \"b\" must not include \"NET_ADMIN\", \"NET_RAW\", "
		 "\"SYS_PTRACE\" in securityContext.capabilities.add)");
	/* every name of the default set is allowed; CAP_ prefixes are not names of it */
	expect_ok("{'spec':{'containers':[{'name':'c','securityContext':{'capabilities':{'add':['AUDIT_WRITE','CHOWN',"
		  "'DAC_OVERRIDE','FOWNER','FSETID','KILL','MKNOD','NET_BIND_SERVICE','SETFCAP','SETGID','SETPCAP',"
		  "'SETUID','SYS_CHROOT']}}}]}}");
	expect_v("{'spec':{'containers':[{'name':'c','securityContext':{'capabilities':{'add':['CAP_SYS_ADMIN']}}}]}}",
		 1,
		 "non-default capabilities (container \"c\" must not include \"CAP_SYS_ADMIN\" in "
		 "securityContext.capabilities.add)");
}

static void test_profiles(void **state)
{
	(void)state;
	expect_v("{'spec':{'containers':[{'name':'c','securityContext':{'procMount':'Unmasked'}}]}}", 1,
		 "procMount (container \"c\" must not set securityContext.procMount to \"Unmasked\")");
	expect_v("{'spec':{'securityContext':{'seccompProfile':{'type':'Unconfined'}},"
		 "'containers':[{'name':'c','securityContext':{'seccompProfile':{'type':'Unconfined'}}},"
		 "{'name':'d','securityContext':{'seccompProfile':{'type':'RuntimeDefault'}}}]}}",
		 1,
		 "seccompProfile (pod must not set securityContext.seccompProfile.type to \"Unconfined\"; "
		 "container \"c\" must not set securityContext.seccompProfile.type to \"Unconfined\")");
	expect_v("{'spec':{'securityContext':{'appArmorProfile':{'type':'Unconfined'}}}}", 1,
		 "forbidden AppArmor profile (pod must not set securityContext.appArmorProfile.type to "
		 "\"Unconfined\")");
	expect_v("{'metadata':{'annotations':{'container.apparmor.security.beta.kubernetes.io/c':'unconfined'}},"
		 "'spec':{'containers':[{'name':'c','securityContext':{'appArmorProfile':{'type':'Unconfined'}}}]}}",
		 1,
		 "forbidden AppArmor profiles (container \"c\" must not set securityContext.appArmorProfile.type to "
		 "\"Unconfined\", annotation container.apparmor.security.beta.kubernetes.io/c=\"unconfined\")");
	expect_v("{'spec':{'securityContext':{'seLinuxOptions':{'type':'spc_t'}},"
		 "'containers':[{'name':'c','securityContext':{'seLinuxOptions':{'user':'system_u','role':'r'}}}]}}",
		 1,
		 "seLinuxOptions (pod set forbidden securityContext.seLinuxOptions: type \"spc_t\"; "
		 "container \"c\" set forbidden securityContext.seLinuxOptions: user \"system_u\", role \"r\")");
	expect_v("{'spec':{'securityContext':{'sysctls':[{'name':'kernel.msgmax','value':'1'},"
		 "{'name':'net.ipv4.tcp_syncookies','value':'1'},{'name':'net.core.somaxconn','value':'1'}]}}}",
		 1, "forbidden sysctls (kernel.msgmax, net.core.somaxconn)");
	expect_v("{'spec':{'securityContext':{'windowsOptions':{'hostProcess':true}},"
		 "'containers':[{'name':'c','securityContext':{'windowsOptions':{'hostProcess':true}}}]}}",
		 1,
		 "hostProcess (pod and container \"c\" must not set "
		 "securityContext.windowsOptions.hostProcess=true)");
	expect_v("{'spec':{'containers':[{'name':'c','securityContext':{'windowsOptions':{'hostProcess':true}}}]}}", 1,
		 "hostProcess (container \"c\" must not set securityContext.windowsOptions.hostProcess=true)");
}

/* Several checks: PSA's order (by check id), whatever the order of the fields. */
static void test_order(void **state)
{
	(void)state;
	expect_v("{'spec':{'securityContext':{'sysctls':[{'name':'kernel.sem','value':'1'}]},"
		 "'containers':[{'name':'c','securityContext':{'privileged':true,'capabilities':{'add':['SYS_ADMIN']}},"
		 "'ports':[{'hostPort':80}]}],'volumes':[{'name':'v','hostPath':{'path':'/'}}],'hostNetwork':true}}",
		 6,
		 "non-default capabilities (container \"c\" must not include \"SYS_ADMIN\" in "
		 "securityContext.capabilities.add), host namespaces (hostNetwork=true), "
		 "hostPath volumes (volume \"v\"), hostPort (container \"c\" uses hostPort 80), "
		 "privileged (container \"c\" must not set securityContext.privileged=true), "
		 "forbidden sysctls (kernel.sem)");
}

static void test_subject(void **state)
{
	(void)state;
	bool tmpl = true;
	json_t *pod = J("{'spec':{'containers':[]}}");
	assert_ptr_equal(pod_security_subject("", "pods", pod, &tmpl), pod);
	assert_false(tmpl);
	assert_null(pod_security_subject("", "configmaps", pod, &tmpl));
	assert_null(pod_security_subject("apps", "pods", pod, &tmpl));
	assert_null(pod_security_subject("apps", "deployments", pod, &tmpl)); /* no template */
	static const char *const kinds[][2] = { { "apps", "deployments" }, { "apps", "replicasets" },
						{ "apps", "statefulsets" }, { "apps", "daemonsets" },
						{ "batch", "jobs" },	     { "", "replicationcontrollers" } };
	json_t *w = J("{'spec':{'template':{'spec':{'hostNetwork':true}}}}");
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		tmpl = false;
		const json_t *t = pod_security_subject(kinds[i][0], kinds[i][1], w, &tmpl);
		assert_ptr_equal(t, json_path(w, "spec.template"));
		assert_true(tmpl);
		assert_int_equal(pod_security_violations(t, NULL), 1);
	}
	json_t *cj = J("{'spec':{'jobTemplate':{'spec':{'template':{'spec':"
		       "{'volumes':[{'name':'h','hostPath':{}}]}}}}}}");
	const json_t *t = pod_security_subject("batch", "cronjobs", cj, &tmpl);
	assert_true(tmpl);
	assert_ptr_equal(t, json_path(cj, "spec.jobTemplate.spec.template"));
	assert_int_equal(pod_security_violations(t, NULL), 1);
	json_t *pt = J("{'template':{'spec':{'hostPID':true}}}");
	assert_ptr_equal(pod_security_subject("", "podtemplates", pt, &tmpl), json_object_get(pt, "template"));
	json_decref(pod), json_decref(w), json_decref(cj), json_decref(pt);
}

static void test_applies(void **state)
{
	(void)state;
	assert_false(pod_security_applies("system"));
	assert_true(pod_security_applies("acme"));
	assert_true(pod_security_applies("systems"));
	assert_true(pod_security_applies(""));
	assert_true(pod_security_applies(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_allowed),	     cmocka_unit_test(test_privileged), cmocka_unit_test(test_host),
		cmocka_unit_test(test_capabilities), cmocka_unit_test(test_profiles),	cmocka_unit_test(test_order),
		cmocka_unit_test(test_subject),	     cmocka_unit_test(test_applies),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
