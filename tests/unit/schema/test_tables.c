/* The type tables themselves: every resource the tenant partition and resource manager serve has
 * a schema (read from their resource tables in the source tree), and every message reachable
 * from a kind is well formed: unique field numbers and JSON names (inlined fields included),
 * merge keys that name a field of the element, sub-schemas exactly where the type needs one. */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "ursa/schema.h"

/* ---- the served resources, parsed from the resource tables ---- */

struct res {
	char api_version[128];
	char kind[64];
};

static char *read_source(const char *rel)
{
	const char *file = __FILE__, *cut = strstr(file, "tests/unit/schema/");
	char path[1024];
	snprintf(path, sizeof(path), "%.*s%s", cut ? (int)(cut - file) : 0, file, rel);
	FILE *f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open %s", path);
	char *text = calloc(1, 1 << 20);
	size_t n = fread(text, 1, (1 << 20) - 1, f);
	text[n] = 0;
	fclose(f);
	return text;
}

/* One token of an entry: a string literal or URSA_GROUP. Returns the position after it, NULL
 * if the entry does not start like a resource. */
static const char *token(const char *p, char *out, size_t cap)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\\')
		p++;
	if (!strncmp(p, "URSA_GROUP", 10)) {
		snprintf(out, cap, "ursa.io");
		p += 10;
	} else if (*p == '"') {
		const char *e = strchr(p + 1, '"');
		if (!e)
			return NULL;
		snprintf(out, cap, "%.*s", (int)(e - p - 1), p + 1);
		p = e + 1;
	} else {
		return NULL;
	}
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\\')
		p++;
	return *p == ',' ? p + 1 : NULL;
}

/* Appends the { group, version, plural, singular, Kind, ... } entries of text to rs. */
static size_t parse_resources(const char *text, struct res *rs, size_t n, size_t cap)
{
	for (const char *p = strchr(text, '{'); p && n < cap; p = strchr(p + 1, '{')) {
		char group[64], version[32], plural[64], singular[64], kind[64];
		const char *q = token(p + 1, group, sizeof(group));
		q = q ? token(q, version, sizeof(version)) : NULL;
		q = q ? token(q, plural, sizeof(plural)) : NULL;
		q = q ? token(q, singular, sizeof(singular)) : NULL;
		q = q ? token(q, kind, sizeof(kind)) : NULL;
		if (!q || kind[0] < 'A' || kind[0] > 'Z')
			continue;
		snprintf(rs[n].api_version, sizeof(rs[n].api_version), "%s%s%s", group, *group ? "/" : "", version);
		snprintf(rs[n].kind, sizeof(rs[n].kind), "%s", kind);
		n++;
	}
	return n;
}

static void test_every_served_resource_has_a_schema(void **state)
{
	(void)state;
	static const char *const files[] = { "src/tenant-partition/resources.c", "src/resource-manager/resources.c",
					     "include/ursa/apiserver.h" };
	struct res rs[256];
	size_t n = 0, missing = 0;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char *text = read_source(files[i]);
		size_t before = n;
		n = parse_resources(text, rs, n, 256);
		assert_true(n > before); /* the parser still understands the file */
		free(text);
	}
	assert_true(n >= 40);
	for (size_t i = 0; i < n; i++) {
		if (!pb_kind_schema(rs[i].api_version, rs[i].kind)) {
			print_error("no schema for %s %s\n", rs[i].api_version, rs[i].kind);
			missing++;
		}
	}
	assert_int_equal(missing, 0);
}

/* A copy of the served pairs, in case the parser above ever skips some. */
static void test_known_kinds(void **state)
{
	(void)state;
	static const char *const pairs[][2] = {
		{ "v1", "Tenant" }, { "v1", "Namespace" }, { "v1", "Pod" }, { "v1", "ConfigMap" }, { "v1", "Secret" },
		{ "v1", "ServiceAccount" }, { "v1", "Event" }, { "v1", "ResourceQuota" }, { "v1", "LimitRange" },
		{ "v1", "Service" }, { "v1", "Endpoints" }, { "discovery.k8s.io/v1", "EndpointSlice" },
		{ "arktos.futurewei.com/v1", "Network" }, { "apps/v1", "Deployment" }, { "apps/v1", "ReplicaSet" },
		{ "apps/v1", "StatefulSet" }, { "apps/v1", "DaemonSet" }, { "apps/v1", "ControllerRevision" },
		{ "v1", "PersistentVolumeClaim" }, { "v1", "PersistentVolume" }, { "batch/v1", "Job" },
		{ "batch/v1", "CronJob" }, { "autoscaling/v2", "HorizontalPodAutoscaler" },
		{ "policy/v1", "PodDisruptionBudget" }, { "coordination.k8s.io/v1", "Lease" },
		{ "rbac.authorization.k8s.io/v1", "Role" }, { "rbac.authorization.k8s.io/v1", "RoleBinding" },
		{ "rbac.authorization.k8s.io/v1", "ClusterRole" },
		{ "rbac.authorization.k8s.io/v1", "ClusterRoleBinding" },
		{ "authorization.k8s.io/v1", "SelfSubjectAccessReview" },
		{ "authorization.k8s.io/v1", "SelfSubjectRulesReview" },
		{ "authorization.k8s.io/v1", "SubjectAccessReview" },
		{ "authorization.k8s.io/v1", "LocalSubjectAccessReview" }, { "ursa.io/v1", "ResourceManager" },
		{ "ursa.io/v1", "TenantPartition" }, { "v1", "Node" }, { "authentication.k8s.io/v1", "TokenReview" },
		{ "authentication.k8s.io/v1", "SelfSubjectReview" },
		{ "authentication.k8s.io/v1beta1", "SelfSubjectReview" }, { "scheduling.k8s.io/v1", "PriorityClass" },
	};
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		if (!pb_kind_schema(pairs[i][0], pairs[i][1]))
			fail_msg("no schema for %s %s", pairs[i][0], pairs[i][1]);
		assert_ptr_equal(pb_kind_schema_any(pairs[i][1]), pb_kind_schema(pairs[i][0], pairs[i][1]));
	}
	assert_null(pb_kind_schema("v2", "Pod"));
	assert_null(pb_kind_schema("v1", "Widget"));
	assert_null(pb_kind_schema(NULL, "Pod"));
	assert_null(pb_kind_schema_any("Widget"));
	assert_null(pb_kind_schema_any(NULL));
}

/* ---- well-formed messages ---- */

#define MAXMSG 1024
static const struct pb_msg *seen[MAXMSG];
static size_t nseen;
static int problems;

static void problem(const struct pb_msg *m, const struct pb_field *f, const char *what)
{
	print_error("%s.%s: %s\n", m->name, f && f->name ? f->name : "(inline)", what);
	problems++;
}

/* Adds the JSON names of m (through inlined messages) to names; reports duplicates. */
static void collect_names(const struct pb_msg *top, const struct pb_msg *m, const char **names, size_t *n, int depth)
{
	for (size_t i = 0; i < m->nfields && depth < 8; i++) {
		const struct pb_field *f = &m->fields[i];
		if (f->type == PT_INLINE) {
			if (f->sub)
				collect_names(top, f->sub, names, n, depth + 1);
			continue;
		}
		for (size_t k = 0; k < *n; k++)
			if (f->name && !strcmp(names[k], f->name))
				problem(top, f, "duplicate JSON name");
		if (f->name && *n < 256)
			names[(*n)++] = f->name;
	}
}

static void check_msg(const struct pb_msg *m)
{
	for (size_t i = 0; i < nseen; i++)
		if (seen[i] == m)
			return;
	assert_true(nseen < MAXMSG);
	seen[nseen++] = m;
	assert_non_null(m->name);
	assert_true(m->nfields > 0);

	const char *names[256];
	size_t nnames = 0;
	collect_names(m, m, names, &nnames, 0);
	for (size_t i = 0; i < m->nfields; i++) {
		const struct pb_field *f = &m->fields[i];
		if (f->num == 0 || f->num >= 19000)
			problem(m, f, "bad field number");
		for (size_t k = 0; k < i; k++)
			if (m->fields[k].num == f->num)
				problem(m, f, "duplicate field number");
		bool needs_sub = f->type == PT_MSG || f->type == PT_INLINE;
		if (needs_sub != (f->sub != NULL))
			problem(m, f, needs_sub ? "message without sub-schema" : "sub-schema on a scalar");
		if (f->type != PT_INLINE && !f->name)
			problem(m, f, "no JSON name");
		if (f->type == PT_INLINE && (f->name || (f->flags & PF_REPEATED)))
			problem(m, f, "inline field with a name or repeated");
		if (f->merge_key) {
			if (f->type != PT_MSG || !(f->flags & PF_REPEATED))
				problem(m, f, "merge key on something else than a list of messages");
			else if (!pb_field_by_name(f->sub, f->merge_key, strlen(f->merge_key)))
				problem(m, f, "merge key is no field of the element");
		}
		if ((f->flags & PF_SET) && (!(f->flags & PF_REPEATED) || f->type == PT_MSG || f->merge_key))
			problem(m, f, "set flag on something else than a list of scalars");
		if ((f->flags & PF_NODECODE) && f->type != PT_MSG)
			problem(m, f, "nodecode on something else than a message");
		if (f->sub)
			check_msg(f->sub);
	}
}

static void test_tables_well_formed(void **state)
{
	(void)state;
	assert_true(pb_nkinds >= 40);
	for (size_t i = 0; i < pb_nkinds; i++) {
		assert_non_null(pb_kinds[i].msg);
		for (size_t k = 0; k < i; k++)
			if (!strcmp(pb_kinds[i].api_version, pb_kinds[k].api_version) &&
			    !strcmp(pb_kinds[i].kind, pb_kinds[k].kind))
				fail_msg("kind listed twice: %s %s", pb_kinds[i].api_version, pb_kinds[i].kind);
		check_msg(pb_kinds[i].msg);
	}
	assert_int_equal(problems, 0);
	assert_true(nseen > 200);
}

/* ---- the checker itself finds what it should ---- */

static const struct pb_field bad_elem[] = { F_STR(1, "name") };
static PB_MSG(pm_bad_elem, bad_elem);
static const struct pb_field bad[] = {
	F_STR(1, "a"),
	F_STR(1, "b"),                                 /* duplicate number */
	F_STR(3, "a"),                                 /* duplicate name */
	F_MSGRK(4, "items", &pm_bad_elem, "key"),      /* key not in element */
	{ 5, "x", PT_STRING, PF_SET, NULL },           /* set, not repeated */
};
static PB_MSG(pm_bad, bad);

static void test_checker_catches_errors(void **state)
{
	(void)state;
	problems = 0;
	check_msg(&pm_bad);
	assert_int_equal(problems, 4);
	problems = 0;
}

/* ---- spot checks of facts the other modules rely on ---- */

static const struct pb_field *path(const struct pb_msg *m, const char *dotted)
{
	const struct pb_field *f = NULL;
	const char *p = dotted;
	while (m && *p) {
		const char *dot = strchr(p, '.');
		size_t len = dot ? (size_t)(dot - p) : strlen(p);
		f = pb_field_by_name(m, p, len);
		if (!f)
			return NULL;
		m = f->sub;
		p += len + (dot ? 1 : 0);
		if (!dot)
			break;
	}
	return *p && m == NULL ? NULL : f;
}

static void test_facts(void **state)
{
	(void)state;
	const struct pb_msg *pod = pb_kind_schema("v1", "Pod"), *node = pb_kind_schema("v1", "Node");
	const struct pb_field *f;

	assert_non_null(f = path(pod, "metadata.managedFields"));
	assert_int_equal(f->num, 17);
	assert_non_null(f = path(pod, "metadata.managedFields.fieldsV1"));
	assert_int_equal(f->type, PT_OPAQUE);
	assert_non_null(f = path(pod, "metadata.finalizers"));
	assert_true(f->flags & PF_SET);
	assert_non_null(f = path(pod, "spec.ephemeralContainers"));
	assert_int_equal(f->num, 34);
	assert_string_equal(f->merge_key, "name");
	assert_non_null(path(pod, "spec.ephemeralContainers.targetContainerName"));
	assert_non_null(path(pod, "spec.ephemeralContainers.image"));
	assert_non_null(f = path(pod, "spec.containers.env"));
	assert_string_equal(f->merge_key, "name");
	assert_non_null(path(pod, "spec.volumes.csi.volumeAttributes"));
	assert_non_null(path(pod, "spec.volumes.configMap.name"));
	assert_non_null(path(pod, "spec.securityContext.appArmorProfile.type"));
	assert_non_null(f = path(pod, "status"));
	assert_true(f->flags & PF_NODECODE);
	assert_non_null(f = path(pod, "status.podIPs"));
	assert_string_equal(f->merge_key, "ip");
	assert_non_null(path(pod, "status.containerStatuses.state.terminated.exitCode"));
	assert_non_null(f = path(node, "status.addresses"));
	assert_string_equal(f->merge_key, "type");
	assert_non_null(path(node, "status.nodeInfo.kubeletVersion"));
	assert_non_null(path(node, "status.allocatable"));
	assert_non_null(f = path(node, "spec.podCIDRs"));
	assert_true(f->flags & PF_SET);
	assert_non_null(f = path(pb_kind_schema("apps/v1", "ControllerRevision"), "data"));
	assert_int_equal(f->type, PT_OPAQUE);
	assert_non_null(path(pb_kind_schema("arktos.futurewei.com/v1", "Network"), "spec.serviceCIDR"));
	assert_non_null(path(pb_kind_schema("arktos.futurewei.com/v1", "Network"), "status.dnsServiceIP"));
	assert_non_null(path(pb_kind_schema("v1", "Tenant"), "spec.quota.hard"));
	assert_non_null(path(pb_kind_schema("ursa.io/v1", "ResourceManager"), "spec.zone"));
	assert_non_null(path(pb_kind_schema("autoscaling/v2", "HorizontalPodAutoscaler"),
			     "spec.metrics.resource.target.averageUtilization"));
	assert_null(path(pod, "spec.bogus"));
	assert_null(path(pod, "spec.containers.name.deeper"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_served_resource_has_a_schema),
		cmocka_unit_test(test_known_kinds),
		cmocka_unit_test(test_tables_well_formed),
		cmocka_unit_test(test_checker_catches_errors),
		cmocka_unit_test(test_facts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
