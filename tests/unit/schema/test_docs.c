/* The description table (src/common/schema/docs.c): every top-level kind is described, every
 * row names a message reachable from a kind and a field that message declares itself (so a
 * renamed or moved field cannot leave a stale text behind), no key is written twice, the texts
 * are sentences, and the messages users read most are described field by field. */
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

#define MAX_MSGS 1024

static const struct pb_msg *reached[MAX_MSGS];
static size_t nreached;

static void reach(const struct pb_msg *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < nreached; i++)
		if (reached[i] == m)
			return;
	assert_true(nreached < MAX_MSGS);
	reached[nreached++] = m;
	for (size_t i = 0; i < m->nfields; i++)
		reach(m->fields[i].sub);
}

static int setup(void **state)
{
	(void)state;
	for (size_t i = 0; i < pb_nkinds; i++)
		reach(pb_kinds[i].msg);
	return 0;
}

static const struct pb_msg *msg_named(const char *name)
{
	for (size_t i = 0; i < nreached; i++)
		if (strcmp(reached[i]->name, name) == 0)
			return reached[i];
	return NULL;
}

/* A field m declares itself (not one of an inlined message: that one carries the text). */
static const struct pb_field *own_field(const struct pb_msg *m, const char *name)
{
	for (size_t i = 0; i < m->nfields; i++)
		if (m->fields[i].type != PT_INLINE && m->fields[i].name && strcmp(m->fields[i].name, name) == 0)
			return &m->fields[i];
	return NULL;
}

static void test_every_kind_described(void **state)
{
	(void)state;
	for (size_t i = 0; i < pb_nkinds; i++) {
		const char *t = schema_doc(pb_kinds[i].msg, NULL);
		if (!t || !*t)
			fail_msg("kind %s %s (%s) has no description", pb_kinds[i].api_version, pb_kinds[i].kind,
				 pb_kinds[i].msg->name);
	}
}

static void test_rows_name_real_fields(void **state)
{
	(void)state;
	size_t nfields = 0, nmsgs = 0;
	for (size_t i = 0; i < schema_ndocs; i++) {
		const struct schema_doc *d = &schema_docs[i];
		const struct pb_msg *m = msg_named(d->msg);
		if (!m)
			fail_msg("row %zu: no kind reaches a message %s", i, d->msg);
		if (d->field && !own_field(m, d->field))
			fail_msg("row %zu: %s declares no field %s", i, d->msg, d->field);
		if (d->field)
			nfields++;
		else
			nmsgs++;
	}
	print_message("%zu descriptions: %zu of fields, %zu of messages\n", schema_ndocs, nfields, nmsgs);
	assert_true(nfields >= 400);
}

static void test_no_duplicate_keys(void **state)
{
	(void)state;
	for (size_t i = 0; i < schema_ndocs; i++)
		for (size_t j = i + 1; j < schema_ndocs; j++) {
			const struct schema_doc *a = &schema_docs[i], *b = &schema_docs[j];
			bool same_field = a->field ? b->field && strcmp(a->field, b->field) == 0 : !b->field;
			if (strcmp(a->msg, b->msg) == 0 && same_field)
				fail_msg("%s.%s is described twice (rows %zu and %zu)", a->msg,
					 a->field ? a->field : "", i, j);
		}
}

/* One line, starting with a capital letter or a value ("flat", "\"\"", "get, list"), ending
 * with a full stop, no doubled or trailing blanks: what explain prints wraps well. */
static void test_texts_are_sentences(void **state)
{
	(void)state;
	for (size_t i = 0; i < schema_ndocs; i++) {
		const char *t = schema_docs[i].text;
		size_t n = t ? strlen(t) : 0;
		if (n < 4 || t[n - 1] != '.' || strchr(t, '\n') || strstr(t, "  ") || t[0] == ' ')
			fail_msg("row %zu (%s.%s): %s", i, schema_docs[i].msg,
				 schema_docs[i].field ? schema_docs[i].field : "", t ? t : "(null)");
	}
}

/* The messages users explain most have a text for every field. */
static void test_common_messages_complete(void **state)
{
	(void)state;
	static const char *const complete[] = {
		"pm_object_meta",	    "pm_label_selector",	  "pm_label_selector_requirement",
		"pm_deployment_spec",	    "pm_deployment_strategy",	  "pm_rolling_update_deployment",
		"pm_deployment_status",	    "pm_replica_set_spec",	  "pm_stateful_set_spec",
		"pm_daemon_set_spec",	    "pm_job_spec",		  "pm_cron_job_spec",
		"pm_container_port",	    "pm_resource_requirements",	  "pm_volume_mount",
		"pm_probe",		    "pm_toleration",		  "pm_service_port",
		"pm_config_map",	    "pm_secret",		  "pm_pdb_spec",
		"pm_tenant_spec",	    "pm_tenant_quota",		  "pm_network_spec",
		"pm_network_status",	    "pm_resource_quota_spec",	  "pm_limit_range_item",
		"pm_policy_rule",	    "pm_subject",		  "pm_role_ref",
		"pm_owner_reference",	    "pm_env_var",		  "pm_pod_template_spec",
	};
	for (size_t i = 0; i < sizeof(complete) / sizeof(complete[0]); i++) {
		const struct pb_msg *m = msg_named(complete[i]);
		if (!m)
			fail_msg("no kind reaches %s", complete[i]);
		for (size_t j = 0; j < m->nfields; j++) {
			const struct pb_field *f = &m->fields[j];
			if (f->type == PT_INLINE || !f->name || !strcmp(f->name, "metadata"))
				continue;
			if (!schema_doc(m, f->name))
				fail_msg("%s.%s has no description", m->name, f->name);
		}
	}
	/* The common fields of the larger PodSpec and Container. */
	static const struct {
		const struct pb_msg *m;
		const char *field;
	} common[] = {
		{&pm_pod_spec, "containers"},	     {&pm_pod_spec, "initContainers"},
		{&pm_pod_spec, "restartPolicy"},     {&pm_pod_spec, "nodeSelector"},
		{&pm_pod_spec, "affinity"},	     {&pm_pod_spec, "tolerations"},
		{&pm_pod_spec, "volumes"},	     {&pm_pod_spec, "serviceAccountName"},
		{&pm_pod_spec, "securityContext"},   {&pm_container, "name"},
		{&pm_container, "image"},	     {&pm_container, "command"},
		{&pm_container, "args"},	     {&pm_container, "env"},
		{&pm_container, "ports"},	     {&pm_container, "resources"},
		{&pm_container, "volumeMounts"},     {&pm_container, "livenessProbe"},
		{&pm_container, "readinessProbe"},   {&pm_container, "imagePullPolicy"},
		{&pm_container, "securityContext"},  {&pm_volume_source, "emptyDir"},
		{&pm_volume_source, "configMap"},    {&pm_volume_source, "secret"},
		{&pm_volume_source, "persistentVolumeClaim"},
	};
	for (size_t i = 0; i < sizeof(common) / sizeof(common[0]); i++)
		if (!schema_doc(common[i].m, common[i].field))
			fail_msg("%s.%s has no description", common[i].m->name, common[i].field);
}

static void test_lookup(void **state)
{
	(void)state;
	const char *t = schema_doc(&pm_object_meta, "tenant");
	assert_non_null(t);
	assert_non_null(strstr(t, "tenant"));
	assert_non_null(schema_doc(&pm_object_meta, NULL));
	assert_string_not_equal(schema_doc(&pm_object_meta, NULL), t);
	assert_null(schema_doc(&pm_object_meta, "nosuchfield"));
	assert_null(schema_doc(NULL, "name"));
	assert_null(schema_doc(NULL, NULL));
	/* One text for a shared message, whichever kind reaches it. */
	assert_ptr_equal(schema_doc(&pm_pod_spec, "containers"), schema_doc(&pm_pod_spec, "containers"));
	assert_non_null(schema_doc(&pm_pod_spec, "containers"));
	/* A kind shared by two (RoleBinding, ClusterRoleBinding) has its text through either. */
	assert_ptr_equal(schema_doc(pb_kind_schema("rbac.authorization.k8s.io/v1", "RoleBinding"), NULL),
			 schema_doc(pb_kind_schema("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"), NULL));
	/* A message of the same name is found by name, not by address. */
	struct pb_msg copy = pm_object_meta;
	assert_ptr_equal(schema_doc(&copy, "tenant"), t);
	struct pb_msg unnamed = {NULL, NULL, 0};
	assert_null(schema_doc(&unnamed, NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_kind_described), cmocka_unit_test(test_rows_name_real_fields),
		cmocka_unit_test(test_no_duplicate_keys),    cmocka_unit_test(test_texts_are_sentences),
		cmocka_unit_test(test_common_messages_complete), cmocka_unit_test(test_lookup),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
