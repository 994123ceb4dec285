/* CustomResourceDefinition parsing and validation (src/common/crd/def.c): the CronTab CRD of
 * the Kubernetes documentation, grown with every optional part, and one mistake at a time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include "testjson.h"
#include "ursa/crd.h"

static const char crontab[] =
	"{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
	" \"metadata\":{\"name\":\"crontabs.stable.example.com\",\"tenant\":\"t1\",\"uid\":\"u-1\"},"
	" \"spec\":{\"group\":\"stable.example.com\",\"scope\":\"Namespaced\","
	"  \"names\":{\"plural\":\"crontabs\",\"singular\":\"crontab\",\"kind\":\"CronTab\",\"shortNames\":[\"ct\"],"
	"   \"categories\":[\"all\",\"batch-ish\"]},"
	"  \"versions\":["
	"   {\"name\":\"v1\",\"served\":true,\"storage\":true,"
	"    \"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{"
	"     \"spec\":{\"type\":\"object\",\"properties\":{\"cronSpec\":{\"type\":\"string\"},"
	"      \"image\":{\"type\":\"string\"},\"replicas\":{\"type\":\"integer\"},"
	"      \"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},\"paused\":{\"type\":\"boolean\"}}},"
	"     \"status\":{\"type\":\"object\",\"properties\":{\"replicas\":{\"type\":\"integer\"},"
	"      \"selector\":{\"type\":\"string\"}}}}}},"
	"    \"subresources\":{\"status\":{},\"scale\":{\"specReplicasPath\":\".spec.replicas\","
	"     \"statusReplicasPath\":\".status.replicas\",\"labelSelectorPath\":\".status.selector\"}},"
	"    \"additionalPrinterColumns\":["
	"     {\"name\":\"Spec\",\"type\":\"string\",\"description\":\"The cron spec\","
	"      \"jsonPath\":\".spec.cronSpec\"},"
	"     {\"name\":\"Replicas\",\"type\":\"integer\",\"format\":\"int32\",\"jsonPath\":\".spec.replicas\","
	"      \"priority\":1},"
	"     {\"name\":\"Age\",\"type\":\"date\",\"jsonPath\":\".metadata.creationTimestamp\"}],"
	"    \"selectableFields\":[{\"jsonPath\":\".spec.image\"},{\"jsonPath\":\".spec.replicas\"}]},"
	"   {\"name\":\"v1beta1\",\"served\":true,\"storage\":false,\"deprecated\":true,"
	"    \"deprecationWarning\":\"use v1\","
	"    \"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":true}}}]}}";

/* Any JSON value (scalars too), as a new reference. */
static json_t *JA(const char *text)
{
	json_t *j = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	if (!j)
		fail_msg("bad test JSON: %s", text);
	return j;
}

/* Sets (value non-NULL, stolen) or removes the member at a dotted path whose numeric steps index
 * arrays ("spec.versions.0.name"). */
static void set(json_t *obj, const char *path, json_t *value)
{
	char *p = strdup(path), *save = NULL, *next;
	json_t *cur = obj;
	char *tok = strtok_r(p, ".", &save);
	while ((next = strtok_r(NULL, ".", &save)) != NULL) {
		cur = json_is_array(cur) ? json_array_get(cur, strtoul(tok, NULL, 10)) : json_object_get(cur, tok);
		if (!cur)
			fail_msg("no %s in %s", tok, path);
		tok = next;
	}
	if (json_is_array(cur)) {
		if (value)
			json_array_set_new(cur, strtoul(tok, NULL, 10), value);
		else
			json_array_remove(cur, strtoul(tok, NULL, 10));
	} else if (value) {
		json_object_set_new(cur, tok, value);
	} else {
		json_object_del(cur, tok);
	}
	free(p);
}

static const json_t *cause_at(const struct field_errors *e, const char *field)
{
	size_t i;
	json_t *c;
	json_array_foreach(e->causes, i, c)
		if (!strcmp(json_string_value(json_object_get(c, "field")), field))
			return c;
	return NULL;
}

static void dump_causes(const struct field_errors *e)
{
	char *dump = e->causes ? json_dumps(e->causes, 0) : strdup("(none)");
	print_error("causes: %s\n", dump);
	free(dump);
}

/* Parses obj (stolen), expecting failure with a cause at field with reason (and, when msg is
 * given, a message containing it). */
static void expect_bad(json_t *obj, const char *field, const char *reason, const char *msg)
{
	struct field_errors e = { NULL };
	struct crd_def *d = (struct crd_def *)1;
	assert_int_equal(crd_def_parse(obj, &d, &e), -1);
	assert_null(d);
	const json_t *c = cause_at(&e, field);
	if (!c) {
		dump_causes(&e);
		fail_msg("no cause at %s", field);
	}
	const char *got = json_string_value(json_object_get(c, "reason"));
	if (strcmp(got, reason)) {
		dump_causes(&e);
		fail_msg("%s: reason %s, want %s", field, got, reason);
	}
	const char *m = json_string_value(json_object_get(c, "message"));
	if (msg && !strstr(m, msg))
		fail_msg("%s: message \"%s\" lacks \"%s\"", field, m, msg);
	field_errors_release(&e);
	json_decref(obj);
}

/* The CronTab with path set to value (a JSON text; NULL removes it). */
static json_t *with(const char *path, const char *value)
{
	json_t *obj = J(crontab);
	set(obj, path, value ? JA(value) : NULL);
	return obj;
}

static struct crd_def *parse_ok(json_t *obj)
{
	struct field_errors e = { NULL };
	struct crd_def *d = NULL;
	int rc = crd_def_parse(obj, &d, &e);
	if (rc != 0)
		dump_causes(&e);
	assert_int_equal(rc, 0);
	assert_null(e.causes);
	assert_non_null(d);
	json_decref(obj);
	return d;
}

static void test_crontab(void **state)
{
	(void)state;
	struct crd_def *d = parse_ok(J(crontab));
	assert_string_equal(d->name, "crontabs.stable.example.com");
	assert_string_equal(d->tenant, "t1");
	assert_string_equal(d->uid, "u-1");
	assert_string_equal(d->group, "stable.example.com");
	assert_string_equal(d->plural, "crontabs");
	assert_string_equal(d->singular, "crontab");
	assert_string_equal(d->kind, "CronTab");
	assert_string_equal(d->list_kind, "CronTabList");
	assert_int_equal(d->scope, SCOPE_NAMESPACE);
	assert_int_equal(d->nshort, 1);
	assert_string_equal(d->short_names[0], "ct");
	assert_int_equal(d->ncategories, 2);
	assert_string_equal(d->categories[1], "batch-ish");
	assert_false(d->terminating);
	assert_int_equal(d->nversions, 2);

	const struct crd_version *v1 = crd_def_storage(d);
	assert_ptr_equal(v1, crd_def_version(d, "v1"));
	assert_string_equal(v1->name, "v1");
	assert_true(v1->served && v1->storage && !v1->deprecated);
	assert_null(v1->deprecation_warning);
	assert_non_null(v1->schema);
	assert_string_equal(json_string_value(json_object_get(crd_schema_json(v1->schema), "type")), "object");
	assert_true(v1->status && v1->scale);
	assert_string_equal(v1->spec_replicas_path, ".spec.replicas");
	assert_string_equal(v1->status_replicas_path, ".status.replicas");
	assert_string_equal(v1->label_selector_path, ".status.selector");
	assert_int_equal(v1->ncolumns, 3);
	assert_string_equal(v1->columns[0].name, "Spec");
	assert_string_equal(v1->columns[0].type, "string");
	assert_string_equal(v1->columns[0].format, "");
	assert_string_equal(v1->columns[0].description, "The cron spec");
	assert_string_equal(v1->columns[0].json_path, ".spec.cronSpec");
	assert_int_equal(v1->columns[0].priority, 0);
	assert_string_equal(v1->columns[1].format, "int32");
	assert_int_equal(v1->columns[1].priority, 1);
	assert_int_equal(v1->nselectable, 2);
	assert_string_equal(v1->selectable[0], "spec.image");
	assert_string_equal(v1->selectable[1], "spec.replicas");

	const struct crd_version *b1 = crd_def_version(d, "v1beta1");
	assert_non_null(b1);
	assert_true(b1->served && !b1->storage && b1->deprecated);
	assert_string_equal(b1->deprecation_warning, "use v1");
	assert_false(b1->status || b1->scale);
	assert_null(b1->spec_replicas_path);
	assert_int_equal(b1->ncolumns, 0);
	assert_int_equal(b1->nselectable, 0);
	assert_null(crd_def_version(d, "v2"));
	assert_null(crd_def_version(d, NULL));
	crd_def_free(d);
	crd_def_free(NULL);
}

static void test_defaults_and_scope(void **state)
{
	(void)state;
	json_t *obj = J(crontab);
	set(obj, "spec.names.singular", NULL);
	set(obj, "spec.names.shortNames", NULL);
	set(obj, "spec.names.categories", NULL);
	set(obj, "spec.scope", JA("\"Cluster\""));
	set(obj, "metadata",
	    JA("{\"name\":\"crontabs.stable.example.com\",\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"}"));
	set(obj, "spec.conversion", JA("{\"strategy\":\"None\"}"));
	set(obj, "spec.versions.0.selectableFields", NULL);
	set(obj, "spec.versions.0.subresources.scale.labelSelectorPath", NULL);
	struct crd_def *d = parse_ok(obj);
	assert_string_equal(d->singular, "crontab");
	assert_string_equal(d->list_kind, "CronTabList");
	assert_int_equal(d->scope, SCOPE_TENANT);
	assert_int_equal(d->nshort, 0);
	assert_int_equal(d->ncategories, 0);
	assert_true(d->terminating);
	assert_string_equal(d->tenant, "");
	assert_null(crd_def_storage(d)->label_selector_path);
	assert_int_equal(crd_def_storage(d)->nselectable, 0);
	crd_def_free(d);

	/* the storage version need not be first, nor served */
	obj = J(crontab);
	set(obj, "spec.versions.0.storage", JA("false"));
	set(obj, "spec.versions.1.storage", JA("true"));
	set(obj, "spec.versions.1.served", JA("false"));
	d = parse_ok(obj);
	assert_string_equal(crd_def_storage(d)->name, "v1beta1");
	assert_false(crd_def_storage(d)->served);
	crd_def_free(d);

	/* explicit listKind and a kind with a digit */
	obj = J(crontab);
	set(obj, "spec.names.kind", JA("\"CronTab2\""));
	set(obj, "spec.names.listKind", JA("\"CronTabs\""));
	d = parse_ok(obj);
	assert_string_equal(d->list_kind, "CronTabs");
	assert_string_equal(d->singular, "crontab");
	crd_def_free(d);
}

static void test_names(void **state)
{
	(void)state;
	expect_bad(with("metadata.name", "\"crontab.stable.example.com\""), "metadata.name", "FieldValueInvalid",
		   "must be spec.names.plural+\".\"+spec.group");
	expect_bad(with("metadata.name", NULL), "metadata.name", "FieldValueInvalid", NULL);
	expect_bad(with("spec.names.plural", NULL), "spec.names.plural", "FieldValueRequired", NULL);
	expect_bad(with("spec.names.plural", "\"\""), "spec.names.plural", "FieldValueRequired", NULL);
	expect_bad(with("spec.names.plural", "\"CronTabs\""), "spec.names.plural", "FieldValueInvalid", "DNS-1035");
	expect_bad(with("spec.names.plural", "\"1crontabs\""), "spec.names.plural", "FieldValueInvalid", NULL);
	expect_bad(with("spec.names.plural", "5"), "spec.names.plural", "FieldValueTypeInvalid", NULL);
	expect_bad(with("spec.names.plural", "\"cron\\u0000tabs\""), "spec.names.plural", "FieldValueInvalid", NULL);
	expect_bad(with("spec.names.singular", "\"cron_tab\""), "spec.names.singular", "FieldValueInvalid", NULL);
	expect_bad(with("spec.names.kind", NULL), "spec.names.kind", "FieldValueRequired", NULL);
	expect_bad(with("spec.names.kind", "\"1CronTab\""), "spec.names.kind", "FieldValueInvalid",
		   "may have mixed case, but should otherwise match");
	expect_bad(with("spec.names.kind", "\"Cron.Tab\""), "spec.names.kind", "FieldValueInvalid", NULL);
	expect_bad(with("spec.names.listKind", "\"CronTab\""), "spec.names.listKind", "FieldValueInvalid",
		   "kind and listKind may not be the same");
	expect_bad(with("spec.names.listKind", "\"Cron Tabs\""), "spec.names.listKind", "FieldValueInvalid", NULL);
	expect_bad(with("spec.names.shortNames", "[\"ct\",\"ct\"]"), "spec.names.shortNames[1]", "FieldValueDuplicate",
		   NULL);
	expect_bad(with("spec.names.shortNames", "[\"crontabs\"]"), "spec.names.shortNames[0]", "FieldValueInvalid",
		   "may not be the same as the plural or singular name");
	expect_bad(with("spec.names.shortNames", "[\"ct\",\"crontab\"]"), "spec.names.shortNames[1]",
		   "FieldValueInvalid", NULL);
	expect_bad(with("spec.names.shortNames", "[\"C-T\"]"), "spec.names.shortNames[0]", "FieldValueInvalid", NULL);
	expect_bad(with("spec.names.shortNames", "[3]"), "spec.names.shortNames[0]", "FieldValueTypeInvalid", NULL);
	expect_bad(with("spec.names.shortNames", "\"ct\""), "spec.names.shortNames", "FieldValueTypeInvalid", NULL);
	expect_bad(with("spec.names.categories", "[\"all\",\"Bad\"]"), "spec.names.categories[1]", "FieldValueInvalid",
		   NULL);
	expect_bad(with("spec.names", NULL), "spec.names.plural", "FieldValueRequired", NULL);
	expect_bad(with("spec.names", "[]"), "spec.names", "FieldValueTypeInvalid", NULL);
}

static void test_group_scope_conversion(void **state)
{
	(void)state;
	expect_bad(with("spec.group", NULL), "spec.group", "FieldValueRequired", NULL);
	expect_bad(with("spec.group", "\"stable\""), "spec.group", "FieldValueInvalid",
		   "should be a domain with at least one dot");
	expect_bad(with("spec.group", "\"Stable.Example.com\""), "spec.group", "FieldValueInvalid", "RFC 1123");
	expect_bad(with("spec.group", "\"stable..com\""), "spec.group", "FieldValueInvalid", NULL);
	expect_bad(with("spec.group", "\"stable.k8s.io\""), "spec.group", "FieldValueForbidden", ".k8s.io");
	expect_bad(with("spec.group", "\"x.kubernetes.io\""), "spec.group", "FieldValueForbidden", NULL);
	expect_bad(with("spec.group", "\"ursa.io\""), "spec.group", "FieldValueForbidden", "built-in");
	expect_bad(with("spec.group", "\"arktos.futurewei.com\""), "spec.group", "FieldValueForbidden", NULL);
	expect_bad(with("spec.scope", NULL), "spec.scope", "FieldValueRequired", NULL);
	expect_bad(with("spec.scope", "\"Global\""), "spec.scope", "FieldValueNotSupported",
		   "supported values: \"Cluster\", \"Namespaced\"");
	expect_bad(with("spec.scope", "\"namespaced\""), "spec.scope", "FieldValueNotSupported", NULL);
	expect_bad(with("spec.conversion", "{\"strategy\":\"Webhook\",\"webhook\":{}}"), "spec.conversion.strategy",
		   "FieldValueNotSupported", "supported values: \"None\"");
	expect_bad(with("spec.conversion", "{\"strategy\":\"None\",\"webhook\":{}}"), "spec.conversion.webhook",
		   "FieldValueForbidden", NULL);
	expect_bad(with("spec.conversion", "\"None\""), "spec.conversion", "FieldValueTypeInvalid", NULL);
	expect_bad(with("spec", NULL), "spec", "FieldValueRequired", NULL);
	expect_bad(with("spec", "7"), "spec", "FieldValueTypeInvalid", NULL);
	expect_bad(J("[]"), "", "FieldValueTypeInvalid", NULL);
	expect_bad(json_null(), "", "FieldValueTypeInvalid", NULL);
}

static void test_versions(void **state)
{
	(void)state;
	expect_bad(with("spec.versions", NULL), "spec.versions", "FieldValueRequired",
		   "must have exactly one version marked as storage version");
	expect_bad(with("spec.versions", "[]"), "spec.versions", "FieldValueRequired", NULL);
	expect_bad(with("spec.versions", "{}"), "spec.versions", "FieldValueTypeInvalid", NULL);
	expect_bad(with("spec.versions.1.storage", "true"), "spec.versions", "FieldValueInvalid",
		   "must have exactly one version marked as storage version");
	expect_bad(with("spec.versions.0.storage", "false"), "spec.versions", "FieldValueInvalid",
		   "must have exactly one version marked as storage version");
	expect_bad(with("spec.versions.0.storage", "\"true\""), "spec.versions[0].storage", "FieldValueTypeInvalid",
		   NULL);
	expect_bad(with("spec.versions.1.name", "\"v1\""), "spec.versions[1].name", "FieldValueDuplicate", NULL);
	expect_bad(with("spec.versions.1.name", "\"V1beta1\""), "spec.versions[1].name", "FieldValueInvalid", NULL);
	expect_bad(with("spec.versions.1.name", "\"1beta1\""), "spec.versions[1].name", "FieldValueInvalid", NULL);
	expect_bad(with("spec.versions.0.name", NULL), "spec.versions[0].name", "FieldValueRequired", NULL);
	expect_bad(with("spec.versions.1", "\"v2\""), "spec.versions[1]", "FieldValueTypeInvalid", NULL);
	expect_bad(with("spec.versions.0.schema", NULL), "spec.versions[0].schema.openAPIV3Schema",
		   "FieldValueRequired", "schemas are required");
	expect_bad(with("spec.versions.1.schema", "{}"), "spec.versions[1].schema.openAPIV3Schema",
		   "FieldValueRequired", NULL);
	expect_bad(with("spec.versions.1.schema", "{\"openAPIV3Schema\":[]}"),
		   "spec.versions[1].schema.openAPIV3Schema", "FieldValueTypeInvalid", NULL);
	expect_bad(with("spec.versions.1.deprecated", "false"), "spec.versions[1].deprecationWarning",
		   "FieldValueInvalid", "can only be set for deprecated versions");

	/* a schema the compiler refuses: its causes carry the version's schema path */
	struct field_errors e = { NULL };
	struct crd_def *d = NULL;
	json_t *obj = with("spec.versions.1.schema.openAPIV3Schema", "{\"type\":\"string\"}");
	assert_int_equal(crd_def_parse(obj, &d, &e), -1);
	assert_null(d);
	bool found = false;
	size_t i;
	json_t *c;
	const char *base = "spec.versions[1].schema.openAPIV3Schema";
	json_array_foreach(e.causes, i, c)
		found |= !strncmp(json_string_value(json_object_get(c, "field")), base, strlen(base));
	if (!found)
		dump_causes(&e);
	assert_true(found);
	field_errors_release(&e);
	json_decref(obj);

	/* too many versions */
	obj = J(crontab);
	json_t *vs = json_array();
	for (int k = 0; k < 101; k++)
		json_array_append_new(vs, json_pack("{s:s}", "name", "v1"));
	set(obj, "spec.versions", vs);
	expect_bad(obj, "spec.versions", "FieldValueTooMany", "must have at most 100 items");
}

static void test_columns(void **state)
{
	(void)state;
	expect_bad(with("spec.versions.0.additionalPrinterColumns.0.type", "\"float\""),
		   "spec.versions[0].additionalPrinterColumns[0].type", "FieldValueNotSupported",
		   "supported values: \"integer\", \"number\", \"string\", \"boolean\", \"date\"");
	expect_bad(with("spec.versions.0.additionalPrinterColumns.0.type", NULL),
		   "spec.versions[0].additionalPrinterColumns[0].type", "FieldValueRequired", NULL);
	expect_bad(with("spec.versions.0.additionalPrinterColumns.0.name", NULL),
		   "spec.versions[0].additionalPrinterColumns[0].name", "FieldValueRequired", NULL);
	expect_bad(with("spec.versions.0.additionalPrinterColumns.1.format", "\"uuid\""),
		   "spec.versions[0].additionalPrinterColumns[1].format", "FieldValueNotSupported", NULL);
	expect_bad(with("spec.versions.0.additionalPrinterColumns.0.jsonPath", "\"spec.cronSpec\""),
		   "spec.versions[0].additionalPrinterColumns[0].jsonPath", "FieldValueInvalid",
		   "must be a simple json path starting with .");
	expect_bad(with("spec.versions.0.additionalPrinterColumns.0.jsonPath", "\".spec.items[*].name\""),
		   "spec.versions[0].additionalPrinterColumns[0].jsonPath", "FieldValueInvalid", NULL);
	expect_bad(with("spec.versions.0.additionalPrinterColumns.0.jsonPath", NULL),
		   "spec.versions[0].additionalPrinterColumns[0].jsonPath", "FieldValueRequired", NULL);
	expect_bad(with("spec.versions.0.additionalPrinterColumns.1.priority", "-1"),
		   "spec.versions[0].additionalPrinterColumns[1].priority", "FieldValueInvalid",
		   "must be greater than or equal to 0");
	expect_bad(with("spec.versions.0.additionalPrinterColumns.1.priority", "4294967296"),
		   "spec.versions[0].additionalPrinterColumns[1].priority", "FieldValueInvalid", NULL);
	expect_bad(with("spec.versions.0.additionalPrinterColumns.1", "[]"),
		   "spec.versions[0].additionalPrinterColumns[1]", "FieldValueTypeInvalid", NULL);
	/* an index and a quoted member are fine */
	json_t *obj = with("spec.versions.0.additionalPrinterColumns.0.jsonPath", "\".status.conditions[0]['type']\"");
	struct crd_def *d = parse_ok(obj);
	assert_string_equal(crd_def_storage(d)->columns[0].json_path, ".status.conditions[0]['type']");
	crd_def_free(d);
}

static void test_selectable_and_scale(void **state)
{
	(void)state;
	expect_bad(with("spec.versions.0.selectableFields.1.jsonPath", "\".spec.image\""),
		   "spec.versions[0].selectableFields[1].jsonPath", "FieldValueDuplicate", NULL);
	expect_bad(with("spec.versions.0.selectableFields.1.jsonPath", "\".spec.nope\""),
		   "spec.versions[0].selectableFields[1].jsonPath", "FieldValueInvalid", "is an invalid path");
	expect_bad(with("spec.versions.0.selectableFields.1.jsonPath", "\".spec.tags\""),
		   "spec.versions[0].selectableFields[1].jsonPath", "FieldValueInvalid",
		   "must point to a field of type string, boolean or integer");
	expect_bad(with("spec.versions.0.selectableFields.1.jsonPath", "\".spec.tags[0]\""),
		   "spec.versions[0].selectableFields[1].jsonPath", "FieldValueInvalid",
		   "must be a simple json path starting with .");
	expect_bad(with("spec.versions.0.selectableFields.1.jsonPath", "\"spec.image\""),
		   "spec.versions[0].selectableFields[1].jsonPath", "FieldValueInvalid", NULL);
	expect_bad(with("spec.versions.0.selectableFields.1", "{}"), "spec.versions[0].selectableFields[1].jsonPath",
		   "FieldValueRequired", NULL);
	expect_bad(with("spec.versions.0.selectableFields",
			"[{\"jsonPath\":\".spec.a\"},{\"jsonPath\":\".spec.b\"},{\"jsonPath\":\".spec.c\"},"
			"{\"jsonPath\":\".spec.d\"},{\"jsonPath\":\".spec.e\"},{\"jsonPath\":\".spec.f\"},"
			"{\"jsonPath\":\".spec.g\"},{\"jsonPath\":\".spec.h\"},{\"jsonPath\":\".spec.i\"}]"),
		   "spec.versions[0].selectableFields", "FieldValueTooMany", "must have at most 8 items");
	/* a boolean is selectable */
	struct crd_def *d = parse_ok(with("spec.versions.0.selectableFields.1.jsonPath", "\".spec.paused\""));
	assert_string_equal(crd_def_storage(d)->selectable[1], "spec.paused");
	crd_def_free(d);

	expect_bad(with("spec.versions.0.subresources.scale.specReplicasPath", NULL),
		   "spec.versions[0].subresources.scale.specReplicasPath", "FieldValueRequired", NULL);
	expect_bad(with("spec.versions.0.subresources.scale.specReplicasPath", "\".status.replicas\""),
		   "spec.versions[0].subresources.scale.specReplicasPath", "FieldValueInvalid",
		   "should be a json path under .spec");
	expect_bad(with("spec.versions.0.subresources.scale.statusReplicasPath", NULL),
		   "spec.versions[0].subresources.scale.statusReplicasPath", "FieldValueRequired", NULL);
	expect_bad(with("spec.versions.0.subresources.scale.statusReplicasPath", "\".status\""),
		   "spec.versions[0].subresources.scale.statusReplicasPath", "FieldValueInvalid",
		   "should be a json path under .status");
	expect_bad(with("spec.versions.0.subresources.scale.labelSelectorPath", "\".metadata.labels\""),
		   "spec.versions[0].subresources.scale.labelSelectorPath", "FieldValueInvalid",
		   "should be a json path under either .spec or .status");
	expect_bad(with("spec.versions.0.subresources.status", "true"), "spec.versions[0].subresources.status",
		   "FieldValueTypeInvalid", NULL);
	/* scale without status, a label selector under .spec */
	json_t *obj = with("spec.versions.0.subresources.status", NULL);
	set(obj, "spec.versions.0.subresources.scale.labelSelectorPath", JA("\".spec.selector\""));
	d = parse_ok(obj);
	assert_false(crd_def_storage(d)->status);
	assert_true(crd_def_storage(d)->scale);
	assert_string_equal(crd_def_storage(d)->label_selector_path, ".spec.selector");
	crd_def_free(d);
}

static void test_causes_appended(void **state)
{
	(void)state;
	struct field_errors e = { NULL };
	field_error_required(&e, "metadata.other");
	struct crd_def *d = NULL;
	json_t *obj = with("spec.scope", "\"x\"");
	set(obj, "spec.names.plural", JA("\"X\""));
	assert_int_equal(crd_def_parse(obj, &d, &e), -1);
	assert_non_null(cause_at(&e, "metadata.other"));
	assert_non_null(cause_at(&e, "spec.scope"));
	assert_non_null(cause_at(&e, "spec.names.plural"));
	field_errors_release(&e);
	json_decref(obj);
	/* a valid CRD leaves earlier causes alone and adds none */
	field_error_required(&e, "metadata.other");
	obj = J(crontab);
	assert_int_equal(crd_def_parse(obj, &d, &e), 0);
	assert_int_equal(json_array_size(e.causes), 1);
	crd_def_free(d);
	field_errors_release(&e);
	json_decref(obj);
}

static void test_group_reserved(void **state)
{
	(void)state;
	static const char *const reserved[] = {
		"", "apps", "batch", "autoscaling", "policy", "discovery.k8s.io", "coordination.k8s.io",
		"rbac.authorization.k8s.io", "authorization.k8s.io", "authentication.k8s.io", "apiextensions.k8s.io",
		"metrics.k8s.io", "arktos.futurewei.com", "ursa.io", "k8s.io", "foo.k8s.io", "x.y.kubernetes.io",
		"kubernetes.io",
	};
	for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
		if (!crd_group_reserved(reserved[i]))
			fail_msg("should be reserved: \"%s\"", reserved[i]);
	static const char *const open[] = {
		"stable.example.com", "k8s.io.example.com", "mk8s.io", "xkubernetes.io", "ursa.io.example",
		"apps.example",
	};
	for (size_t i = 0; i < sizeof(open) / sizeof(open[0]); i++)
		if (crd_group_reserved(open[i]))
			fail_msg("should not be reserved: \"%s\"", open[i]);
	assert_true(crd_group_reserved(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crontab),
		cmocka_unit_test(test_defaults_and_scope),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_group_scope_conversion),
		cmocka_unit_test(test_versions),
		cmocka_unit_test(test_columns),
		cmocka_unit_test(test_selectable_and_scale),
		cmocka_unit_test(test_causes_appended),
		cmocka_unit_test(test_group_reserved),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
