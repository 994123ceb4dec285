/* Tenant isolation on a shared node: the checks of Kubernetes' Pod Security Standards "baseline"
 * level over a pod or pod template, worded as Pod Security Admission words them. See
 * ursa/podsecurity.h. */
#include <stdlib.h>
#include <string.h>
#include "ursa/auth.h"
#include "ursa/jsonutil.h"
#include "ursa/podsecurity.h"
#include "ursa/xalloc.h"

/* ---- small lists of borrowed strings, kept unique, in order of first sight ---- */

struct strs {
	const char **v;
	size_t n, cap;
};

static void strs_add(struct strs *l, const char *s)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i], s))
			return;
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 4;
		l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	l->v[l->n++] = s;
}

static void strs_free(struct strs *l)
{
	free(l->v);
	*l = (struct strs){ 0 };
}

/* "a", "b" (quoted) or a, b (plain). */
static void add_joined(struct buf *b, const struct strs *l, bool quoted)
{
	for (size_t i = 0; i < l->n; i++) {
		if (i)
			buf_adds(b, ", ");
		if (quoted)
			buf_addf(b, "\"%s\"", l->v[i]);
		else
			buf_adds(b, l->v[i]);
	}
}

/* container "a" / containers "a", "b" */
static void add_containers(struct buf *b, const struct strs *names)
{
	buf_adds(b, names->n == 1 ? "container " : "containers ");
	add_joined(b, names, true);
}

/* ---- the pod ---- */

struct check_ctx {
	const json_t *meta, *spec;
	struct buf *out; /* may be NULL */
	int count;
};

/* One violated check: "reason (detail)" after the earlier ones. */
static void violation(struct check_ctx *cx, const char *reason, const struct buf *detail)
{
	cx->count++;
	if (!cx->out)
		return;
	if (cx->count > 1)
		buf_adds(cx->out, ", ");
	buf_addf(cx->out, "%s (%s)", reason, buf_cstr(detail));
}

static const char *const container_lists[] = { "initContainers", "containers", "ephemeralContainers" };

/* Runs the statement that follows for every container c of spec that has a name (init, regular,
 * ephemeral containers, in that order). */
#define FOREACH_CONTAINER(spec, c, name)                                                                        \
	for (size_t l_ = 0; l_ < sizeof(container_lists) / sizeof(container_lists[0]); l_++)                  \
		for (size_t i_ = 0; i_ < json_array_size(json_object_get(spec, container_lists[l_])); i_++)       \
			if ((c = json_array_get(json_object_get(spec, container_lists[l_]), i_)) != NULL &&    \
			    json_is_object(c) && (name = json_str(c, "name")) != NULL)

/* A field of the securityContext of a container, or of the pod when given the spec. Borrowed. */
static const json_t *csc(const json_t *c, const char *key)
{
	return json_object_get(json_object_get(c, "securityContext"), key);
}

static const char *str_or(const char *s, const char *dflt)
{
	return s ? s : dflt;
}

/* appArmorProfile: the type Unconfined (fields) or an annotation other than runtime/default and
 * localhost/... (container.apparmor.security.beta.kubernetes.io/<container>). */
static void check_apparmor(struct check_ctx *cx)
{
	static const char annot[] = "container.apparmor.security.beta.kubernetes.io/";
	struct buf d = BUF_INIT;
	int bad = 0;
	const char *t = json_str(csc(cx->spec, "appArmorProfile"), "type");
	if (t && strcmp(t, "RuntimeDefault") && strcmp(t, "Localhost")) {
		buf_addf(&d, "pod must not set securityContext.appArmorProfile.type to \"%s\"", t);
		bad++;
	}
	const json_t *c;
	const char *name;
	FOREACH_CONTAINER(cx->spec, c, name) {
		t = json_str(csc(c, "appArmorProfile"), "type");
		if (t && strcmp(t, "RuntimeDefault") && strcmp(t, "Localhost")) {
			buf_addf(&d, "%scontainer \"%s\" must not set securityContext.appArmorProfile.type to \"%s\"",
				 bad ? ", " : "", name, t);
			bad++;
		}
	}
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)json_object_get(cx->meta, "annotations"), k, v) {
		const char *s = json_string_value(v);
		if (strncmp(k, annot, sizeof(annot) - 1) || !s || !*s || !strcmp(s, "runtime/default") ||
		    !strncmp(s, "localhost/", 10))
			continue;
		buf_addf(&d, "%sannotation %s=\"%s\"", bad ? ", " : "", k, s);
		bad++;
	}
	if (bad)
		violation(cx, bad == 1 ? "forbidden AppArmor profile" : "forbidden AppArmor profiles", &d);
	buf_release(&d);
}

/* Docker's default set, which baseline lets a container add (names without CAP_). */
static bool capability_allowed(const char *cap)
{
	static const char *const baseline[] = { "AUDIT_WRITE", "CHOWN",	 "DAC_OVERRIDE",     "FOWNER",	 "FSETID",
						"KILL",	       "MKNOD",	 "NET_BIND_SERVICE", "SETFCAP",	 "SETGID",
						"SETPCAP",     "SETUID", "SYS_CHROOT" };
	for (size_t i = 0; i < sizeof(baseline) / sizeof(baseline[0]); i++)
		if (!strcmp(cap, baseline[i]))
			return true;
	return false;
}

static void check_capabilities(struct check_ctx *cx)
{
	struct strs names = { 0 }, caps = { 0 };
	const json_t *c;
	const char *name;
	FOREACH_CONTAINER(cx->spec, c, name) {
		size_t i;
		json_t *cap;
		bool bad = false;
		json_array_foreach(json_object_get(csc(c, "capabilities"), "add"), i, cap) {
			const char *s = json_string_value(cap);
			if (s && !capability_allowed(s)) {
				strs_add(&caps, s);
				bad = true;
			}
		}
		if (bad)
			strs_add(&names, name);
	}
	if (names.n) {
		struct buf d = BUF_INIT;
		add_containers(&d, &names);
		buf_adds(&d, " must not include ");
		add_joined(&d, &caps, true);
		buf_adds(&d, " in securityContext.capabilities.add");
		violation(cx, "non-default capabilities", &d);
		buf_release(&d);
	}
	strs_free(&names);
	strs_free(&caps);
}

static void check_host_namespaces(struct check_ctx *cx)
{
	static const char *const fields[] = { "hostNetwork", "hostPID", "hostIPC" };
	struct buf d = BUF_INIT;
	int bad = 0;
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (json_is_true(json_object_get(cx->spec, fields[i])))
			buf_addf(&d, "%s%s=true", bad++ ? ", " : "", fields[i]);
	if (bad)
		violation(cx, "host namespaces", &d);
	buf_release(&d);
}

static void check_host_path(struct check_ctx *cx)
{
	struct strs names = { 0 };
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(cx->spec, "volumes"), i, v) {
		const json_t *hp = json_object_get(v, "hostPath");
		if (hp && !json_is_null(hp))
			strs_add(&names, str_or(json_str(v, "name"), ""));
	}
	if (names.n) {
		struct buf d = BUF_INIT;
		buf_adds(&d, names.n == 1 ? "volume " : "volumes ");
		add_joined(&d, &names, true);
		violation(cx, "hostPath volumes", &d);
		buf_release(&d);
	}
	strs_free(&names);
}

static void check_host_ports(struct check_ctx *cx)
{
	struct strs names = { 0 };
	struct buf ports = BUF_INIT;
	size_t nports = 0;
	const json_t *c;
	const char *name;
	FOREACH_CONTAINER(cx->spec, c, name) {
		size_t i;
		json_t *p;
		json_array_foreach(json_object_get(c, "ports"), i, p) {
			const json_t *hp = json_object_get(p, "hostPort");
			if (!json_is_integer(hp) || json_integer_value(hp) == 0)
				continue;
			strs_add(&names, name);
			buf_addf(&ports, "%s%lld", nports++ ? ", " : "", (long long)json_integer_value(hp));
		}
	}
	if (names.n) {
		struct buf d = BUF_INIT;
		add_containers(&d, &names);
		buf_addf(&d, " %s %s %s", names.n == 1 ? "uses" : "use", nports == 1 ? "hostPort" : "hostPorts",
			 buf_cstr(&ports));
		violation(cx, "hostPort", &d);
		buf_release(&d);
	}
	buf_release(&ports);
	strs_free(&names);
}

static void check_privileged(struct check_ctx *cx)
{
	struct strs names = { 0 };
	const json_t *c;
	const char *name;
	FOREACH_CONTAINER(cx->spec, c, name)
		if (json_is_true(csc(c, "privileged")))
			strs_add(&names, name);
	if (names.n) {
		struct buf d = BUF_INIT;
		add_containers(&d, &names);
		buf_adds(&d, " must not set securityContext.privileged=true");
		violation(cx, "privileged", &d);
		buf_release(&d);
	}
	strs_free(&names);
}

static void check_proc_mount(struct check_ctx *cx)
{
	struct strs names = { 0 }, values = { 0 };
	const json_t *c;
	const char *name;
	FOREACH_CONTAINER(cx->spec, c, name) {
		const char *pm = json_string_value(csc(c, "procMount"));
		if (pm && *pm && strcmp(pm, "Default")) {
			strs_add(&names, name);
			strs_add(&values, pm);
		}
	}
	if (names.n) {
		struct buf d = BUF_INIT;
		add_containers(&d, &names);
		buf_adds(&d, " must not set securityContext.procMount to ");
		add_joined(&d, &values, true);
		violation(cx, "procMount", &d);
		buf_release(&d);
	}
	strs_free(&names);
	strs_free(&values);
}

/* What of seLinuxOptions o is forbidden ("type \"spc_t\", user \"u\""), or false. */
static bool selinux_forbidden(const json_t *o, struct buf *what)
{
	static const char *const types[] = { "container_t", "container_init_t", "container_kvm_t",
					     "container_engine_t" };
	bool bad = false;
	const char *t = json_str(o, "type");
	if (t && *t) {
		bool ok = false;
		for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
			ok |= !strcmp(t, types[i]);
		if (!ok) {
			buf_addf(what, "type \"%s\"", t);
			bad = true;
		}
	}
	static const char *const fields[] = { "user", "role" };
	for (size_t i = 0; i < 2; i++) {
		const char *s = json_str(o, fields[i]);
		if (s && *s) {
			buf_addf(what, "%s%s \"%s\"", bad ? ", " : "", fields[i], s);
			bad = true;
		}
	}
	return bad;
}

static void check_selinux(struct check_ctx *cx)
{
	struct buf d = BUF_INIT, w = BUF_INIT;
	int bad = 0;
	if (selinux_forbidden(csc(cx->spec, "seLinuxOptions"), &w)) {
		buf_addf(&d, "pod set forbidden securityContext.seLinuxOptions: %s", buf_cstr(&w));
		bad++;
	}
	const json_t *c;
	const char *name;
	FOREACH_CONTAINER(cx->spec, c, name) {
		buf_reset(&w);
		if (selinux_forbidden(csc(c, "seLinuxOptions"), &w))
			buf_addf(&d, "%scontainer \"%s\" set forbidden securityContext.seLinuxOptions: %s",
				 bad++ ? "; " : "", name, buf_cstr(&w));
	}
	if (bad)
		violation(cx, "seLinuxOptions", &d);
	buf_release(&d);
	buf_release(&w);
}

static void check_seccomp(struct check_ctx *cx)
{
	struct buf d = BUF_INIT;
	int bad = 0;
	const char *t = json_str(csc(cx->spec, "seccompProfile"), "type");
	if (t && !strcmp(t, "Unconfined")) {
		buf_adds(&d, "pod must not set securityContext.seccompProfile.type to \"Unconfined\"");
		bad++;
	}
	struct strs names = { 0 };
	const json_t *c;
	const char *name;
	FOREACH_CONTAINER(cx->spec, c, name) {
		t = json_str(csc(c, "seccompProfile"), "type");
		if (t && !strcmp(t, "Unconfined"))
			strs_add(&names, name);
	}
	if (names.n) {
		if (bad++)
			buf_adds(&d, "; ");
		add_containers(&d, &names);
		buf_adds(&d, " must not set securityContext.seccompProfile.type to \"Unconfined\"");
	}
	if (bad)
		violation(cx, "seccompProfile", &d);
	buf_release(&d);
	strs_free(&names);
}

/* Kubernetes' safe set: namespaced in the pod and isolated from other pods on the node. */
static bool sysctl_safe(const char *s)
{
	static const char *const safe[] = {
		"kernel.shm_rmid_forced",	"net.ipv4.ip_local_port_range",	 "net.ipv4.ip_unprivileged_port_start",
		"net.ipv4.tcp_syncookies",	"net.ipv4.ping_group_range",	 "net.ipv4.ip_local_reserved_ports",
		"net.ipv4.tcp_keepalive_time",	"net.ipv4.tcp_fin_timeout",	 "net.ipv4.tcp_keepalive_intvl",
		"net.ipv4.tcp_keepalive_probes", "net.ipv4.tcp_rmem",		 "net.ipv4.tcp_wmem",
	};
	for (size_t i = 0; i < sizeof(safe) / sizeof(safe[0]); i++)
		if (!strcmp(s, safe[i]))
			return true;
	return false;
}

static void check_sysctls(struct check_ctx *cx)
{
	struct strs names = { 0 };
	size_t i;
	json_t *s;
	json_array_foreach(csc(cx->spec, "sysctls"), i, s) {
		const char *n = json_str(s, "name");
		if (n && !sysctl_safe(n))
			strs_add(&names, n);
	}
	if (names.n) {
		struct buf d = BUF_INIT;
		add_joined(&d, &names, false);
		violation(cx, "forbidden sysctls", &d);
		buf_release(&d);
	}
	strs_free(&names);
}

static void check_host_process(struct check_ctx *cx)
{
	bool pod = json_is_true(json_object_get(csc(cx->spec, "windowsOptions"), "hostProcess"));
	struct strs names = { 0 };
	const json_t *c;
	const char *name;
	FOREACH_CONTAINER(cx->spec, c, name)
		if (json_is_true(json_object_get(csc(c, "windowsOptions"), "hostProcess")))
			strs_add(&names, name);
	if (pod || names.n) {
		struct buf d = BUF_INIT;
		if (pod)
			buf_adds(&d, names.n ? "pod and " : "pod");
		if (names.n)
			add_containers(&d, &names);
		buf_adds(&d, " must not set securityContext.windowsOptions.hostProcess=true");
		violation(cx, "hostProcess", &d);
		buf_release(&d);
	}
	strs_free(&names);
}

int pod_security_violations(const json_t *pod, struct buf *ret_msg)
{
	struct check_ctx cx = { .meta = json_object_get(pod, "metadata"), .spec = json_object_get(pod, "spec"),
				.out = ret_msg };
	if (!json_is_object(cx.spec))
		return 0;
	/* PSA's order: by check id */
	check_apparmor(&cx);	    /* appArmorProfile */
	check_capabilities(&cx);    /* capabilities_baseline */
	check_host_namespaces(&cx); /* hostNamespaces */
	check_host_path(&cx);	    /* hostPathVolumes */
	check_host_ports(&cx);	    /* hostPorts */
	check_privileged(&cx);	    /* privileged */
	check_proc_mount(&cx);	    /* procMount */
	check_selinux(&cx);	    /* seLinuxOptions */
	check_seccomp(&cx);	    /* seccompProfile_baseline */
	check_sysctls(&cx);	    /* sysctls */
	check_host_process(&cx);    /* windowsHostProcess */
	return cx.count;
}

bool pod_security_applies(const char *tenant)
{
	return !tenant || strcmp(tenant, TENANT_SYSTEM) != 0;
}

const json_t *pod_security_subject(const char *group, const char *plural, const json_t *obj, bool *ret_is_template)
{
	static const struct {
		const char *group, *plural, *path;
	} kinds[] = {
		{ "", "pods", NULL },
		{ "", "replicationcontrollers", "spec.template" },
		{ "", "podtemplates", "template" },
		{ "apps", "deployments", "spec.template" },
		{ "apps", "replicasets", "spec.template" },
		{ "apps", "statefulsets", "spec.template" },
		{ "apps", "daemonsets", "spec.template" },
		{ "batch", "jobs", "spec.template" },
		{ "batch", "cronjobs", "spec.jobTemplate.spec.template" },
	};
	*ret_is_template = false;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (strcmp(group ? group : "", kinds[i].group) || strcmp(plural, kinds[i].plural))
			continue;
		if (!kinds[i].path)
			return obj;
		const json_t *t = json_path(obj, kinds[i].path);
		*ret_is_template = true;
		return json_is_object(t) ? t : NULL;
	}
	return NULL;
}
