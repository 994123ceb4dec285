/* OpenAPI documents generated from the type tables (ursa/schema.h) for the kinds a server
 * serves: /openapi/v2 (Swagger 2.0 as JSON, or as gnostic's openapi_v2.Document protobuf, which
 * kubectl 1.27 and 1.28 ask for), the /openapi/v3 index and one OpenAPI 3.0 document per group
 * version. kubectl reads them for explain, for apply's patch metadata and for its check that the
 * server takes fieldValidation on PATCH. Schemas and properties carry the descriptions of
 * src/common/schema/docs.c (schema_doc); a field without one shows its message's.
 *
 * The tables are static, so the documents are built once per set of served kinds (on first
 * use), serialized, hashed and kept for the life of the process; requests only pick bytes.
 *
 * A tenant with custom resources (crd.c's view) sees them too: definitions named as Kubernetes
 * names a CRD's ("com.example.stable.v1.CronTab": the group reversed) from the version's
 * openAPIV3Schema, a v3 document per custom group version, and the v2 document with them
 * spliced in. Those are built per (tenant, generation of its view) and kept in a small cache
 * bounded in entries and bytes. */
#include "internal.h"
#include "ursa/apidisc.h"
#include "ursa/crd.h"
#include "ursa/jsonutil.h"
#include "ursa/lru.h"
#include "ursa/schema.h"
#include "ursa/xalloc.h"
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#define META_PREFIX "io.k8s.apimachinery.pkg.apis.meta.v1"
#define QUANTITY "io.k8s.apimachinery.pkg.api.resource.Quantity"
#define INTSTR "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
#define TIME META_PREFIX ".Time"
#define MICROTIME META_PREFIX ".MicroTime"
#define LIST_META META_PREFIX ".ListMeta"
#define STATUS META_PREFIX ".Status"
#define PATCH META_PREFIX ".Patch"
#define DELETE_OPTIONS META_PREFIX ".DeleteOptions"

/* Clients ask for application/com.github.proto-openapi.spec.v2@v1.0+protobuf (or this form);
 * the reply names the '@'-free form, the one Go's mime.ParseMediaType accepts: client-go
 * parses the Content-Type of every reply and fails with the '@' in it. */
#define PB_MEDIA_TYPE "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"

/* --- names ----------------------------------------------------------------------------------- */

/* Go type names the table's C names do not spell by camel-casing. */
static const struct {
	const char *c, *go;
} go_names[] = {
	{"pm_empty_dir", "EmptyDirVolumeSource"},
	{"pm_host_path", "HostPathVolumeSource"},
	{"pm_secret_volume", "SecretVolumeSource"},
	{"pm_config_map_volume", "ConfigMapVolumeSource"},
	{"pm_pvc_volume", "PersistentVolumeClaimVolumeSource"},
	{"pm_downward_api_volume", "DownwardAPIVolumeSource"},
	{"pm_downward_api_file", "DownwardAPIVolumeFile"},
	{"pm_projected_volume", "ProjectedVolumeSource"},
	{"pm_stateful_set_pvc_retention", "StatefulSetPersistentVolumeClaimRetentionPolicy"},
	{"pm_pod_failure_exit_codes", "PodFailurePolicyOnExitCodesRequirement"},
	{"pm_pod_failure_conditions", "PodFailurePolicyOnPodConditionsPattern"},
	{"pm_pod_failure_rule", "PodFailurePolicyRule"},
	{"pm_self_access_spec", "SelfSubjectAccessReviewSpec"},
	{"pm_access_spec", "SubjectAccessReviewSpec"},
	{"pm_rules_spec", "SelfSubjectRulesReviewSpec"},
	{"pm_bound_object_ref", "BoundObjectReference"},
	{"pm_client_ip_config", "ClientIPConfig"},
	{"pm_pod_dns_config", "PodDNSConfig"},
	{"pm_pod_dns_config_option", "PodDNSConfigOption"},
};

/* Word spellings of Go names (initialisms, abbreviations of the C names). */
static const struct {
	const char *word, *go;
} go_words[] = {
	{"pvc", "PersistentVolumeClaim"},
	{"pdb", "PodDisruptionBudget"},
	{"hpa", "HorizontalPodAutoscaler"},
	{"http", "HTTP"},
	{"tcp", "TCP"},
	{"grpc", "GRPC"},
	{"dns", "DNS"},
	{"os", "OS"},
	{"ip", "IP"},
	{"api", "API"},
	{"uid", "UID"},
	{"se", "SE"},
	{"id", "ID"},
	{"cidr", "CIDR"},
	{"url", "URL"},
};

/* Messages of meta/v1 (apimachinery), whichever kind reaches them first. */
static const char *const meta_msgs[] = {
	"pm_object_meta",	   "pm_owner_reference", "pm_label_selector", "pm_label_selector_requirement",
	"pm_managed_fields_entry", "pm_condition",	 "pm_list_meta",      "pm_status",
	"pm_status_details",	   "pm_status_cause"};

static bool is_meta(const struct pb_msg *m)
{
	for (size_t i = 0; i < sizeof(meta_msgs) / sizeof(meta_msgs[0]); i++)
		if (strcmp(m->name, meta_msgs[i]) == 0)
			return true;
	return false;
}

/* "pm_http_get_action" -> "HTTPGetAction". */
static void go_name(const char *cname, struct buf *out)
{
	for (size_t i = 0; i < sizeof(go_names) / sizeof(go_names[0]); i++)
		if (strcmp(cname, go_names[i].c) == 0) {
			buf_adds(out, go_names[i].go);
			return;
		}
	const char *p = strncmp(cname, "pm_", 3) == 0 ? cname + 3 : cname;
	while (*p) {
		size_t n = strcspn(p, "_");
		bool known = false;
		for (size_t i = 0; i < sizeof(go_words) / sizeof(go_words[0]) && !known; i++)
			if (strlen(go_words[i].word) == n && strncmp(p, go_words[i].word, n) == 0) {
				buf_adds(out, go_words[i].go);
				known = true;
			}
		if (!known && n) {
			buf_addch(out, (char)(p[0] >= 'a' && p[0] <= 'z' ? p[0] - 'a' + 'A' : p[0]));
			buf_add(out, p + 1, n - 1);
		}
		p += n;
		if (*p == '_')
			p++;
	}
}

/* Definition name prefix of a group version: "io.k8s.api.apps.v1", "io.k8s.api.core.v1",
 * "io.k8s.api.rbac.v1" (rbac.authorization.k8s.io); other domains reversed:
 * "com.futurewei.arktos.v1". */
static void package_prefix(const char *group, const char *version, struct buf *out)
{
	size_t glen = strlen(group);
	const char *dot = strchr(group, '.');
	if (!group[0]) {
		buf_addf(out, "io.k8s.api.core.%s", version);
	} else if (!dot) {
		buf_addf(out, "io.k8s.api.%s.%s", group, version);
	} else if (glen > 7 && strcmp(group + glen - 7, ".k8s.io") == 0) {
		buf_addf(out, "io.k8s.api.%.*s.%s", (int)(dot - group), group, version);
	} else {
		const char *end = group + glen;
		while (end > group) {
			const char *start = end;
			while (start > group && start[-1] != '.')
				start--;
			buf_add(out, start, (size_t)(end - start));
			buf_addch(out, '.');
			end = start > group ? start - 1 : group;
		}
		buf_adds(out, version);
	}
}

/* --- schemas ----------------------------------------------------------------------------------- */

struct gen {
	bool v3;
	json_t *defs; /* definition name -> schema */
	const struct pb_msg **msgs;
	char **names; /* msgs[i]'s definition name */
	size_t n, alloc;
	const char *prefix; /* package of the kind being generated: messages it reaches first go there */
};

static json_t *ref_to(const struct gen *g, const char *name) /* new reference */
{
	char *r = xasprintf("%s%s", g->v3 ? "#/components/schemas/" : "#/definitions/", name);
	json_t *j = json_pack("{s:s}", "$ref", r);
	free(r);
	return g->v3 ? json_pack("{s:[o]}", "allOf", j) : j;
}

static json_t *opaque_schema(void)
{
	return json_pack("{s:s,s:b}", "type", "object", "x-kubernetes-preserve-unknown-fields", 1);
}

static const char *msg_def(struct gen *g, const struct pb_msg *m);

static json_t *elem_schema(struct gen *g, const struct pb_field *f)
{
	switch (f->type) {
	case PT_STRING:
		return json_pack("{s:s}", "type", "string");
	case PT_BYTES:
		return json_pack("{s:s,s:s}", "type", "string", "format", "byte");
	case PT_INT32:
		return json_pack("{s:s,s:s}", "type", "integer", "format", "int32");
	case PT_INT64:
		return json_pack("{s:s,s:s}", "type", "integer", "format", "int64");
	case PT_BOOL:
		return json_pack("{s:s}", "type", "boolean");
	case PT_MSG:
		return f->sub ? ref_to(g, msg_def(g, f->sub)) : opaque_schema();
	case PT_QUANTITY:
		return ref_to(g, QUANTITY);
	case PT_TIME:
		return ref_to(g, TIME);
	case PT_MICROTIME:
		return ref_to(g, MICROTIME);
	case PT_INTSTR:
		return ref_to(g, INTSTR);
	case PT_MAP_STRING:
		return json_pack("{s:s,s:{s:s}}", "type", "object", "additionalProperties", "type", "string");
	case PT_MAP_BYTES:
		return json_pack("{s:s,s:{s:s,s:s}}", "type", "object", "additionalProperties", "type", "string",
				 "format", "byte");
	case PT_MAP_QUANTITY:
		return json_pack("{s:s,s:o}", "type", "object", "additionalProperties", ref_to(g, QUANTITY));
	case PT_OPAQUE:
	default:
		return opaque_schema();
	}
}

static json_t *field_schema(struct gen *g, const struct pb_field *f)
{
	json_t *e = elem_schema(g, f);
	if (!(f->flags & PF_REPEATED))
		return e;
	json_t *a = json_pack("{s:s,s:o}", "type", "array", "items", e);
	if (f->merge_key) {
		json_object_set_new(a, "x-kubernetes-list-map-keys", json_pack("[s]", f->merge_key));
		json_object_set_new(a, "x-kubernetes-list-type", json_string("map"));
		json_object_set_new(a, "x-kubernetes-patch-merge-key", json_string(f->merge_key));
		json_object_set_new(a, "x-kubernetes-patch-strategy", json_string("merge"));
	} else if (f->flags & PF_SET) {
		json_object_set_new(a, "x-kubernetes-list-type", json_string("set"));
		json_object_set_new(a, "x-kubernetes-patch-strategy", json_string("merge"));
	}
	return a;
}

static void add_fields(struct gen *g, json_t *props, const struct pb_msg *m, int depth)
{
	for (size_t i = 0; i < m->nfields; i++) {
		const struct pb_field *f = &m->fields[i];
		if (f->type == PT_INLINE) {
			if (f->sub && depth < 8)
				add_fields(g, props, f->sub, depth + 1);
		} else if (f->name && !json_object_get(props, f->name)) {
			json_t *fs = field_schema(g, f);
			/* A field nobody described (spec, status, metadata): its message's own text. */
			const char *doc = schema_doc(m, f->name);
			if (!doc && f->type == PT_MSG)
				doc = schema_doc(f->sub, NULL);
			if (doc)
				json_object_set_new(fs, "description", json_string(doc));
			json_object_set_new(props, f->name, fs);
		}
	}
}

/* The definition of message m (generated on first use); the name is owned by g. */
static const char *msg_def(struct gen *g, const struct pb_msg *m)
{
	for (size_t i = 0; i < g->n; i++)
		if (g->msgs[i] == m)
			return g->names[i];
	struct buf name = BUF_INIT;
	buf_adds(&name, is_meta(m) ? META_PREFIX : g->prefix);
	buf_addch(&name, '.');
	go_name(m->name, &name);
	/* Two messages with one Go name in one package: the second gets a suffix. */
	size_t base = name.len;
	for (unsigned k = 2; json_object_get(g->defs, buf_cstr(&name)); k++) {
		name.len = base;
		buf_addf(&name, "%u", k);
	}
	if (g->n == g->alloc) {
		g->alloc = g->alloc ? 2 * g->alloc : 64;
		g->msgs = xrealloc(g->msgs, g->alloc * sizeof(*g->msgs));
		g->names = xrealloc(g->names, g->alloc * sizeof(*g->names));
	}
	g->msgs[g->n] = m;
	g->names[g->n] = buf_detach(&name, NULL);
	const char *ret = g->names[g->n++];
	/* In the map before its fields, so that a message reaching itself ends. */
	json_t *props = json_object(), *def = json_pack("{s:s,s:o}", "type", "object", "properties", props);
	const char *doc = schema_doc(m, NULL);
	if (doc)
		json_object_set_new(def, "description", json_string(doc));
	json_object_set_new(g->defs, ret, def);
	add_fields(g, props, m, 0);
	return ret;
}

static void add_gvk(json_t *schema, const char *group, const char *version, const char *kind)
{
	json_t *gvk = json_object_get(schema, "x-kubernetes-group-version-kind");
	if (!gvk) {
		gvk = json_array();
		json_object_set_new(schema, "x-kubernetes-group-version-kind", gvk);
	}
	json_array_append_new(gvk, json_pack("{s:s,s:s,s:s}", "group", group, "kind", kind, "version", version));
}

static void gen_common(struct gen *g)
{
	json_object_set_new(g->defs, QUANTITY,
			    g->v3 ? json_pack("{s:s,s:[{s:s},{s:s}]}", "description",
					      "A fixed-point number: 100m, 1.5Gi, 3", "oneOf", "type", "string", "type",
					      "number")
				  : json_pack("{s:s,s:s}", "description", "A fixed-point number: 100m, 1.5Gi, 3",
					      "type", "string"));
	json_object_set_new(g->defs, INTSTR,
			    g->v3 ? json_pack("{s:s,s:s,s:b,s:[{s:s},{s:s}]}", "description", "An int32 or a string.",
					      "format", "int-or-string", "x-kubernetes-int-or-string", 1, "anyOf",
					      "type", "integer", "type", "string")
				  : json_pack("{s:s,s:s,s:s}", "description", "An int32 or a string.", "format",
					      "int-or-string", "type", "string"));
	json_object_set_new(g->defs, TIME,
			    json_pack("{s:s,s:s,s:s}", "description", "RFC 3339 date and time, seconds precision.",
				      "format", "date-time", "type", "string"));
	json_object_set_new(g->defs, MICROTIME,
			    json_pack("{s:s,s:s,s:s}", "description", "RFC 3339 date and time, microseconds precision.",
				      "format", "date-time", "type", "string"));
	json_object_set_new(g->defs, LIST_META,
			    json_pack("{s:s,s:{s:{s:s},s:{s:s,s:s},s:{s:s},s:{s:s}}}", "type", "object", "properties",
				      "continue", "type", "string", "remainingItemCount", "type", "integer", "format",
				      "int64", "resourceVersion", "type", "string", "selfLink", "type", "string"));
	json_object_set_new(g->defs, STATUS, opaque_schema());
	json_object_set_new(g->defs, DELETE_OPTIONS, opaque_schema());
	json_object_set_new(g->defs, PATCH, json_pack("{s:s}", "type", "object"));
	g->prefix = "io.k8s.api.core.v1";
	msg_def(g, &pm_object_meta);
}

/* --- custom resources ---------------------------------------------------------------------------- */

/* The list's definition name of the kind whose definition is def: "<package>.<Kind>List", or a
 * custom resource's "<package>.<listKind>". New string. */
static char *list_def_of(const struct api_resource *r, const char *def)
{
	size_t dl = strlen(def), kl = strlen(r->kind);
	if (r->crd && r->crd->list_kind && dl >= kl)
		return xasprintf("%.*s%s", (int)(dl - kl), def, r->crd->list_kind);
	return xasprintf("%sList", def);
}

/* Swagger 2.0 has no nullable and no oneOf, anyOf or not (and Kubernetes drops allOf from CRD
 * schemas too): what a structural schema only uses for validation goes from the v2 form. */
static void schema_to_v2(json_t *sch, int depth)
{
	static const char *const drop[] = {"nullable", "oneOf", "anyOf", "allOf", "not"};
	if (!json_is_object(sch) || depth > 2 * CRD_SCHEMA_MAX_DEPTH)
		return;
	for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
		json_object_del(sch, drop[i]);
	const char *k;
	json_t *v;
	json_object_foreach (json_object_get(sch, "properties"), k, v)
		schema_to_v2(v, depth + 1);
	schema_to_v2(json_object_get(sch, "items"), depth + 1);
	schema_to_v2(json_object_get(sch, "additionalProperties"), depth + 1);
}

/* A custom resource's definition (its version's openAPIV3Schema with apiVersion, kind and
 * metadata as every kind has them) and its list's, named as Kubernetes names them. */
static void gen_crd_kind(struct gen *g, const struct api_resource *r, const char *name, const char *api_version)
{
	const json_t *src = r->crd_version && r->crd_version->schema ? crd_schema_json(r->crd_version->schema) : NULL;
	json_t *sch = json_is_object(src) ? json_deep_copy(src) : opaque_schema();
	if (!g->v3)
		schema_to_v2(sch, 0);
	json_object_del(sch, "x-kubernetes-group-version-kind");
	if (!json_object_get(sch, "type") && !json_object_get(sch, "x-kubernetes-preserve-unknown-fields"))
		json_object_set_new(sch, "type", json_string("object"));
	json_t *props = json_object_get(sch, "properties");
	if (!json_is_object(props)) {
		props = json_object();
		json_object_set_new(sch, "properties", props);
	}
	char *av = xasprintf("The group and version of this object's schema: %s.", api_version);
	char *kd = xasprintf("The kind of this object: %s.", r->kind);
	json_object_set_new(props, "apiVersion", json_pack("{s:s,s:s}", "description", av, "type", "string"));
	json_object_set_new(props, "kind", json_pack("{s:s,s:s}", "description", kd, "type", "string"));
	json_t *meta = ref_to(g, msg_def(g, &pm_object_meta));
	if (g->v3) /* beside a $ref, Swagger 2.0 ignores everything */
		json_object_set_new(meta, "description", json_string("Standard object's metadata."));
	json_object_set_new(props, "metadata", meta);
	free(av);
	free(kd);
	add_gvk(sch, r->group, r->version, r->kind);
	json_object_set_new(g->defs, name, sch);

	char *list = list_def_of(r, name);
	const char *list_kind = r->crd->list_kind ? r->crd->list_kind : "";
	json_t *ls = json_pack("{s:s,s:[s],s:{s:{s:s},s:{s:s,s:o},s:{s:s},s:o}}", "type", "object", "required", "items",
			       "properties", "apiVersion", "type", "string", "items", "type", "array", "items",
			       ref_to(g, name), "kind", "type", "string", "metadata", ref_to(g, LIST_META));
	add_gvk(ls, r->group, r->version, list_kind);
	char *ldoc = xasprintf("%s is a list of %s.", list_kind, r->kind);
	json_object_set_new(ls, "description", json_string(ldoc));
	free(ldoc);
	json_object_set_new(g->defs, list, ls);
	free(list);
}

/* The definition of a served kind and of its list; returns the kind's definition name (new). */
static char *gen_kind(struct gen *g, const struct api_resource *r)
{
	if (r->crd) {
		struct buf pkg = BUF_INIT;
		package_prefix(r->group, r->version, &pkg);
		char *name = xasprintf("%s.%s", buf_cstr(&pkg), r->kind);
		char *api_version = xasprintf("%s/%s", r->group, r->version);
		if (!json_object_get(g->defs, name))
			gen_crd_kind(g, r, name, api_version);
		free(api_version);
		buf_release(&pkg);
		return name;
	}
	struct buf pkg = BUF_INIT;
	package_prefix(r->group, r->version, &pkg);
	char *name = xasprintf("%s.%s", buf_cstr(&pkg), r->kind);
	g->prefix = buf_cstr(&pkg);
	char *api_version = r->group[0] ? xasprintf("%s/%s", r->group, r->version) : xstrdup(r->version);
	const struct pb_msg *m = pb_kind_schema(api_version, r->kind);
	json_t *sch = json_object_get(g->defs, name);
	if (!sch && m) {
		const char *mname = msg_def(g, m);
		sch = json_object_get(g->defs, name);
		if (!sch) {
			/* One message for several kinds (RoleBinding, ClusterRoleBinding): a copy each. */
			sch = json_deep_copy(json_object_get(g->defs, mname));
			json_object_del(sch, "x-kubernetes-group-version-kind");
			json_object_set_new(g->defs, name, sch);
		}
	} else if (!sch) {
		const char *meta = msg_def(g, &pm_object_meta);
		sch = json_pack("{s:s,s:{s:o},s:b}", "type", "object", "properties", "metadata", ref_to(g, meta),
				"x-kubernetes-preserve-unknown-fields", 1);
		json_object_set_new(g->defs, name, sch);
	}
	/* A kind's message may have been reached first as another's field (a StatefulSet's
	 * PersistentVolumeClaim templates): it becomes the kind's definition all the same. */
	if (!json_object_get(sch, "x-kubernetes-group-version-kind")) {
		json_t *props = json_object_get(sch, "properties");
		char *av = xasprintf("The group and version of this object's schema: %s.", api_version);
		char *kd = xasprintf("The kind of this object: %s.", r->kind);
		json_object_set_new(props, "apiVersion", json_pack("{s:s,s:s}", "description", av, "type", "string"));
		json_object_set_new(props, "kind", json_pack("{s:s,s:s}", "description", kd, "type", "string"));
		free(av);
		free(kd);
		add_gvk(sch, r->group, r->version, r->kind);
	}
	if (!r->ephemeral) {
		char *list = xasprintf("%sList", name), *list_kind = xasprintf("%sList", r->kind);
		if (!json_object_get(g->defs, list)) {
			json_t *ls = json_pack("{s:s,s:[s],s:{s:{s:s},s:{s:s,s:o},s:{s:s},s:o}}", "type", "object",
					       "required", "items", "properties", "apiVersion", "type", "string",
					       "items", "type", "array", "items", ref_to(g, name), "kind", "type",
					       "string", "metadata", ref_to(g, LIST_META));
			add_gvk(ls, r->group, r->version, list_kind);
			char *ldoc = xasprintf("A list of %s objects.", r->kind);
			json_object_set_new(ls, "description", json_string(ldoc));
			free(ldoc);
			json_object_set_new(g->defs, list, ls);
		}
		free(list);
		free(list_kind);
	}
	free(api_version);
	buf_release(&pkg);
	g->prefix = NULL;
	return name;
}

/* --- paths ------------------------------------------------------------------------------------- */

struct param {
	const char *name, *type, *description;
};

static const struct param p_pretty = {"pretty", "string", "If 'true', then the output is pretty printed."};
static const struct param p_dry_run = {"dryRun", "string", "When present, modifications are not persisted: All"};
static const struct param p_field_manager = {"fieldManager", "string", "A name associated with the actor."};
static const struct param p_field_validation = {
	"fieldValidation", "string",
	"How the server treats unknown or duplicate fields in the object: Ignore, Warn or Strict."};
static const struct param p_force = {"force", "boolean", "Force is going to \"force\" Apply requests."};
static const struct param p_grace = {"gracePeriodSeconds", "integer", "The duration in seconds before deletion."};
static const struct param p_propagation = {"propagationPolicy", "string", "Orphan, Background or Foreground."};

static const struct param list_params[] = {
	{"allowWatchBookmarks", "boolean", "Requests watch events with type BOOKMARK."},
	{"continue", "string", "The continue token of a previous list call."},
	{"fieldSelector", "string", "A selector restricting the returned objects by their fields."},
	{"labelSelector", "string", "A selector restricting the returned objects by their labels."},
	{"limit", "integer", "The maximum number of responses for a list call."},
	{"resourceVersion", "string", "Constrains which resource versions the request may be served from."},
	{"resourceVersionMatch", "string", "How resourceVersion applies to list calls."},
	{"timeoutSeconds", "integer", "Timeout for the list/watch call."},
	{"watch", "boolean", "Watch for changes to the described resources."},
};

static json_t *param_json(const struct gen *g, const struct param *p, const char *in, bool required)
{
	json_t *j = json_pack("{s:s,s:s,s:s}", "description", p->description, "in", in, "name", p->name);
	if (required)
		json_object_set_new(j, "required", json_true());
	if (g->v3)
		json_object_set_new(j, "schema", json_pack("{s:s}", "type", p->type));
	else
		json_object_set_new(j, "type", json_string(p->type));
	return j;
}

enum op_kind { OP_GET, OP_LIST, OP_CREATE, OP_REPLACE, OP_PATCH, OP_DELETE, OP_DELETECOLLECTION };

static const struct {
	const char *method, *action, *verb;
} op_table[] = {
	[OP_GET] = {"get", "get", "read"},
	[OP_LIST] = {"get", "list", "list"},
	[OP_CREATE] = {"post", "post", "create"},
	[OP_REPLACE] = {"put", "put", "replace"},
	[OP_PATCH] = {"patch", "patch", "patch"},
	[OP_DELETE] = {"delete", "delete", "delete"},
	[OP_DELETECOLLECTION] = {"delete", "deletecollection", "deletecollection"},
};

static const char *const patch_types[] = {"application/apply-patch+yaml", "application/json-patch+json",
					  "application/merge-patch+json", "application/strategic-merge-patch+json"};

/* Body parameter (v2) or requestBody (v3) with a schema of definition def. */
static void add_body(const struct gen *g, json_t *op, json_t *params, const char *def, bool patch, bool required)
{
	if (!g->v3) {
		json_t *b = json_pack("{s:s,s:s,s:o}", "in", "body", "name", "body", "schema", ref_to(g, def));
		if (required)
			json_object_set_new(b, "required", json_true());
		json_array_append_new(params, b);
		return;
	}
	json_t *content = json_object();
	if (patch) {
		for (size_t i = 0; i < sizeof(patch_types) / sizeof(patch_types[0]); i++)
			json_object_set_new(content, patch_types[i], json_pack("{s:o}", "schema", ref_to(g, def)));
	} else {
		json_object_set_new(content, "*/*", json_pack("{s:o}", "schema", ref_to(g, def)));
	}
	json_object_set_new(op, "requestBody", json_pack("{s:o,s:b}", "content", content, "required", required));
}

static json_t *responses_json(const struct gen *g, const char *code, const char *def)
{
	json_t *resp = json_pack("{s:s}", "description", "OK");
	if (g->v3)
		json_object_set_new(resp, "content",
				    json_pack("{s:{s:o}}", "application/json", "schema", ref_to(g, def)));
	else
		json_object_set_new(resp, "schema", ref_to(g, def));
	json_t *j = json_object();
	json_object_set_new(j, code, resp);
	if (strcmp(code, "200") != 0)
		json_object_set_new(j, "200", json_deep_copy(resp));
	json_object_set_new(j, "401", json_pack("{s:s}", "description", "Unauthorized"));
	return j;
}

static json_t *operation(const struct gen *g, const struct api_resource *r, enum op_kind k, const char *def)
{
	json_t *params = json_array(), *op = json_object();
	char *list_def = list_def_of(r, def);
	bool ns = r->scope == SCOPE_NAMESPACE;
	static const struct param p_name = {"name", "string", "name of the object"};
	static const struct param p_namespace = {"namespace", "string", "object name and auth scope"};
	if (k == OP_GET || k == OP_REPLACE || k == OP_PATCH || k == OP_DELETE)
		json_array_append_new(params, param_json(g, &p_name, "path", true));
	if (ns)
		json_array_append_new(params, param_json(g, &p_namespace, "path", true));
	json_array_append_new(params, param_json(g, &p_pretty, "query", false));
	const char *code = "200", *resp = def;
	switch (k) {
	case OP_GET:
		break;
	case OP_LIST:
		for (size_t i = 0; i < sizeof(list_params) / sizeof(list_params[0]); i++)
			json_array_append_new(params, param_json(g, &list_params[i], "query", false));
		resp = list_def;
		break;
	case OP_CREATE:
	case OP_REPLACE:
	case OP_PATCH:
		json_array_append_new(params, param_json(g, &p_dry_run, "query", false));
		json_array_append_new(params, param_json(g, &p_field_manager, "query", false));
		json_array_append_new(params, param_json(g, &p_field_validation, "query", false));
		if (k == OP_PATCH)
			json_array_append_new(params, param_json(g, &p_force, "query", false));
		add_body(g, op, params, k == OP_PATCH ? PATCH : def, k == OP_PATCH, true);
		if (k == OP_CREATE)
			code = "201";
		break;
	case OP_DELETE:
	case OP_DELETECOLLECTION:
		json_array_append_new(params, param_json(g, &p_dry_run, "query", false));
		json_array_append_new(params, param_json(g, &p_grace, "query", false));
		json_array_append_new(params, param_json(g, &p_propagation, "query", false));
		if (k == OP_DELETECOLLECTION)
			for (size_t i = 0; i < sizeof(list_params) / sizeof(list_params[0]); i++)
				if (strcmp(list_params[i].name, "watch") &&
				    strcmp(list_params[i].name, "allowWatchBookmarks"))
					json_array_append_new(params, param_json(g, &list_params[i], "query", false));
		add_body(g, op, params, DELETE_OPTIONS, false, false);
		resp = STATUS;
		break;
	}
	char *id = xasprintf("%s%s%s%s", op_table[k].verb, ns && k != OP_DELETECOLLECTION ? "Namespaced" : "", r->kind,
			     k == OP_LIST || k == OP_DELETECOLLECTION ? "List" : "");
	json_object_set_new(op, "operationId", json_string(id));
	json_object_set_new(op, "parameters", params);
	json_object_set_new(op, "responses", responses_json(g, code, resp));
	json_object_set_new(op, "x-kubernetes-action", json_string(op_table[k].action));
	json_object_set_new(op, "x-kubernetes-group-version-kind",
			    json_pack("{s:s,s:s,s:s}", "group", r->group, "kind", r->kind, "version", r->version));
	free(id);
	free(list_def);
	return op;
}

/* "apis/apps/v1" or "api/v1": the group version's key in the v3 index. */
static void gv_key(const struct api_resource *r, struct buf *out)
{
	if (r->group[0])
		buf_addf(out, "apis/%s/%s", r->group, r->version);
	else
		buf_addf(out, "api/%s", r->version);
}

static void gen_paths(const struct gen *g, const struct api_resource *r, const char *def, json_t *paths)
{
	struct buf coll = BUF_INIT;
	buf_addch(&coll, '/');
	gv_key(r, &coll);
	if (r->scope == SCOPE_NAMESPACE)
		buf_adds(&coll, "/namespaces/{namespace}");
	buf_addf(&coll, "/%s", r->plural);
	json_t *c = json_object();
	if (!r->ephemeral) {
		json_object_set_new(c, "get", operation(g, r, OP_LIST, def));
		if (!r->metrics)
			json_object_set_new(c, "delete", operation(g, r, OP_DELETECOLLECTION, def));
	}
	if (!r->metrics)
		json_object_set_new(c, "post", operation(g, r, OP_CREATE, def));
	json_object_set_new(paths, buf_cstr(&coll), c);
	if (r->metrics) { /* read-only: get and list */
		buf_adds(&coll, "/{name}");
		json_object_set_new(paths, buf_cstr(&coll), json_pack("{s:o}", "get", operation(g, r, OP_GET, def)));
	} else if (!r->ephemeral) {
		buf_adds(&coll, "/{name}");
		json_object_set_new(paths, buf_cstr(&coll),
				    json_pack("{s:o,s:o,s:o,s:o}", "get", operation(g, r, OP_GET, def), "put",
					      operation(g, r, OP_REPLACE, def), "patch", operation(g, r, OP_PATCH, def),
					      "delete", operation(g, r, OP_DELETE, def)));
	}
	buf_release(&coll);
}

/* --- documents --------------------------------------------------------------------------------- */

static void gen_release(struct gen *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->names[i]);
	free(g->names);
	free(g->msgs);
	json_decref(g->defs);
}

/* Core kinds first, so that the core/v1 messages every group uses (PodSpec, ...) are named
 * io.k8s.api.core.v1.X whichever kind reaches them. */
static void ordered(const struct api_resource *const *res, size_t n, const struct api_resource **out)
{
	size_t k = 0;
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < n; i++)
			if ((pass == 0) == (res[i]->group[0] == '\0'))
				out[k++] = res[i];
}

json_t *openapi_v2_document(const struct api_resource *const *res, size_t n)
{
	struct gen g = {.v3 = false, .defs = json_object()};
	const struct api_resource **ord = xmalloc((n ? n : 1) * sizeof(*ord));
	ordered(res, n, ord);
	gen_common(&g);
	json_t *paths = json_object();
	for (size_t i = 0; i < n; i++) {
		char *def = gen_kind(&g, ord[i]);
		gen_paths(&g, ord[i], def, paths);
		free(def);
	}
	json_t *doc = json_pack("{s:s,s:{s:s,s:s},s:o,s:O}", "swagger", "2.0", "info", "title", "Kubernetes", "version",
				"v1.32.0", "paths", paths, "definitions", g.defs);
	gen_release(&g);
	free(ord);
	return doc;
}

/* Adds to out every schema of all that node refers to, transitively. */
static void collect_refs(const json_t *node, const json_t *all, json_t *out, int depth)
{
	static const char pfx[] = "#/components/schemas/";
	if (depth > 64)
		return;
	if (json_is_array(node)) {
		size_t i;
		const json_t *v;
		json_array_foreach (node, i, v)
			collect_refs(v, all, out, depth + 1);
		return;
	}
	if (!json_is_object(node))
		return;
	const char *k;
	const json_t *v;
	json_object_foreach ((json_t *)node, k, v) {
		const char *ref = strcmp(k, "$ref") == 0 ? json_string_value(v) : NULL;
		if (ref && strncmp(ref, pfx, sizeof(pfx) - 1) == 0) {
			const char *name = ref + sizeof(pfx) - 1;
			json_t *def = json_object_get(all, name);
			if (def && !json_object_get(out, name)) {
				json_object_set(out, name, def);
				collect_refs(def, all, out, depth + 1);
			}
		} else {
			collect_refs(v, all, out, depth + 1);
		}
	}
}

json_t *openapi_v3_documents(const struct api_resource *const *res, size_t n)
{
	struct gen g = {.v3 = true, .defs = json_object()};
	const struct api_resource **ord = xmalloc((n ? n : 1) * sizeof(*ord));
	ordered(res, n, ord);
	gen_common(&g);
	json_t *by_gv = json_object(); /* key -> paths */
	for (size_t i = 0; i < n; i++) {
		struct buf key = BUF_INIT;
		gv_key(ord[i], &key);
		json_t *paths = json_object_get(by_gv, buf_cstr(&key));
		if (!paths) {
			paths = json_object();
			json_object_set_new(by_gv, buf_cstr(&key), paths);
		}
		char *def = gen_kind(&g, ord[i]);
		gen_paths(&g, ord[i], def, paths);
		free(def);
		buf_release(&key);
	}
	json_t *docs = json_object();
	const char *key;
	json_t *paths;
	json_object_foreach (by_gv, key, paths) {
		json_t *schemas = json_object();
		collect_refs(paths, g.defs, schemas, 0);
		/* Every kind of the group version and its list, also ones no path names. */
		const char *dn;
		json_t *d;
		json_object_foreach (g.defs, dn, d) {
			if (json_object_get(schemas, dn) || !json_object_get(d, "x-kubernetes-group-version-kind"))
				continue;
			json_t *gvk = json_array_get(json_object_get(d, "x-kubernetes-group-version-kind"), 0);
			const char *gr = json_string_value(json_object_get(gvk, "group"));
			const char *ve = json_string_value(json_object_get(gvk, "version"));
			char *k = gr && gr[0] ? xasprintf("apis/%s/%s", gr, ve ? ve : "")
					      : xasprintf("api/%s", ve ? ve : "");
			if (strcmp(k, key) == 0) {
				json_object_set(schemas, dn, d);
				collect_refs(d, g.defs, schemas, 0);
			}
			free(k);
		}
		json_object_set_new(docs, key,
				    json_pack("{s:s,s:{s:s,s:s},s:O,s:{s:o}}", "openapi", "3.0.0", "info", "title",
					      "Kubernetes", "version", "v1.32.0", "paths", paths, "components",
					      "schemas", schemas));
	}
	json_decref(by_gv);
	gen_release(&g);
	free(ord);
	return docs;
}

/* --- cache and serving ------------------------------------------------------------------------- */

struct blob {
	struct buf body;
	struct buf etag; /* apidisc_etag of the body: "\"<hex SHA-256>\"" */
	char *hash;      /* the hex inside the quotes: the v3 URLs' ?hash= */
};

/* The documents of one set of served kinds (the table's). */
struct openapi {
	struct openapi *next;
	const struct api_resource **res; /* the key: the served kinds, in order */
	size_t nres;
	struct blob v2json, v2pb, v3index;
	size_t v2_paths_end, v2_defs_end; /* offsets of the '}' closing v2json's paths and definitions */
	json_t *v3paths;                  /* the v3 index's paths, for the tenants' indexes */
	char **v3keys; /* "apis/apps/v1" */
	struct blob *v3;
	size_t nv3;
};

static void blob_seal(struct blob *b)
{
	apidisc_etag(b->body.ptr, b->body.len, &b->etag);
	b->hash = xasprintf("%.*s", (int)b->etag.len - 2, b->etag.ptr + 1);
}

static void blob_json(struct blob *b, const json_t *j)
{
	json_dump_buf(j, &b->body);
	blob_seal(b);
}

static void blob_release(struct blob *b)
{
	buf_release(&b->body);
	buf_release(&b->etag);
	free(b->hash);
	b->hash = NULL;
}

static size_t blob_bytes(const struct blob *b)
{
	return b->body.len + b->etag.len + (b->hash ? strlen(b->hash) : 0);
}

/* The v2 document's text exactly as json_dump_buf writes it, with the offsets of the braces that
 * close paths and definitions, where a tenant's documents add theirs. */
static void v2_text(const json_t *doc, struct blob *b, size_t *ret_paths_end, size_t *ret_defs_end)
{
	/* swagger is "2.0": json_dump_buf writes objects and arrays only */
	buf_addf(&b->body, "{\"swagger\":\"%s\",\"info\":", json_str(doc, "swagger"));
	json_dump_buf(json_object_get(doc, "info"), &b->body);
	buf_adds(&b->body, ",\"paths\":");
	json_dump_buf(json_object_get(doc, "paths"), &b->body);
	*ret_paths_end = b->body.len - 1;
	buf_adds(&b->body, ",\"definitions\":");
	json_dump_buf(json_object_get(doc, "definitions"), &b->body);
	*ret_defs_end = b->body.len - 1;
	buf_addch(&b->body, '}');
	blob_seal(b);
}

static struct openapi *openapi_new(const struct api_resource **res, size_t n)
{
	struct openapi *o = xcalloc(1, sizeof(*o));
	o->res = xmalloc((n ? n : 1) * sizeof(*o->res));
	memcpy(o->res, res, n * sizeof(*res));
	o->nres = n;
	json_t *v2 = openapi_v2_document(res, n);
	v2_text(v2, &o->v2json, &o->v2_paths_end, &o->v2_defs_end);
	openapi_v2_protobuf(v2, &o->v2pb.body);
	blob_seal(&o->v2pb);
	json_decref(v2);
	json_t *docs = openapi_v3_documents(res, n), *index = json_object();
	o->v3 = xcalloc(json_object_size(docs) + 1, sizeof(*o->v3));
	o->v3keys = xcalloc(json_object_size(docs) + 1, sizeof(*o->v3keys));
	const char *key;
	json_t *doc;
	json_object_foreach (docs, key, doc) {
		struct blob *b = &o->v3[o->nv3];
		o->v3keys[o->nv3++] = xstrdup(key);
		blob_json(b, doc);
		char *url = xasprintf("/openapi/v3/%s?hash=%s", key, b->hash);
		json_object_set_new(index, key, json_pack("{s:s}", "serverRelativeURL", url));
		free(url);
	}
	o->v3paths = index;
	json_t *idx = json_pack("{s:O}", "paths", index);
	blob_json(&o->v3index, idx);
	json_decref(idx);
	json_decref(docs);
	return o;
}

/* Built documents, one per set of served kinds, for the life of the process (a process
 * normally serves one set; tests may start several servers). */
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct openapi *cache;

static const struct openapi *openapi_of(struct apiserver *s)
{
	const struct api_resource **key = xmalloc((s->nres ? s->nres : 1) * sizeof(*key));
	for (size_t i = 0; i < s->nres; i++)
		key[i] = s->res[i].r;
	pthread_mutex_lock(&cache_lock);
	struct openapi *o = cache;
	while (o && (o->nres != s->nres || memcmp(o->res, key, s->nres * sizeof(*key)) != 0))
		o = o->next;
	if (!o) {
		o = openapi_new(key, s->nres);
		o->next = cache;
		cache = o;
	}
	pthread_mutex_unlock(&cache_lock);
	free(key);
	return o;
}

/* --- a tenant's documents: the table's plus its custom resources' ------------------------------ */

/* Built for one (server, tenant, generation of its custom resources): the v3 index and the
 * documents of the custom resources' group versions, and (on first demand) the whole v2
 * document in both forms. At most TDOCS_MAX of them, TDOCS_MAX_BYTES in all, the least lately
 * used going first: with many tenants, a tenant's next request after its turn rebuilds them. */
#define TDOCS_MAX 256
#define TDOCS_MAX_BYTES ((size_t)64 << 20)

struct tdocs {
	const struct apiserver *s;
	char *tenant;
	uint64_t gen;
	struct blob v3index;
	char **v3keys; /* the custom resources' group versions ("apis/stable.example.com/v1") */
	struct blob *v3;
	size_t nv3;
	bool has_v2;
	struct blob v2json, v2pb;
	size_t bytes;
};

static struct lru tcache; /* tdocs_key -> struct tdocs, under cache_lock */
static bool tcache_init;

static void tdocs_free(void *v)
{
	struct tdocs *t = v;
	if (!t)
		return;
	blob_release(&t->v3index);
	for (size_t i = 0; i < t->nv3; i++) {
		free(t->v3keys[i]);
		blob_release(&t->v3[i]);
	}
	free(t->v3keys);
	free(t->v3);
	blob_release(&t->v2json);
	blob_release(&t->v2pb);
	free(t->tenant);
	free(t);
}

static void tdocs_count(struct tdocs *t)
{
	t->bytes = sizeof(*t) + blob_bytes(&t->v3index) + blob_bytes(&t->v2json) + blob_bytes(&t->v2pb);
	for (size_t i = 0; i < t->nv3; i++)
		t->bytes += blob_bytes(&t->v3[i]) + strlen(t->v3keys[i]);
}

/* The cache's key for (server, tenant, generation of its custom resources): new string. */
static char *tdocs_key(const struct apiserver *s, const char *tenant, uint64_t gen)
{
	return xasprintf("%p\n%llu\n%s", (const void *)s, (unsigned long long)gen, tenant);
}

static bool base_has_v3(const struct openapi *o, const char *key)
{
	for (size_t i = 0; i < o->nv3; i++)
		if (strcmp(o->v3keys[i], key) == 0)
			return true;
	return false;
}

/* Appends the members of obj (a JSON object) as text without its braces, each preceded by a
 * comma. */
static void members_text(const json_t *obj, struct buf *out)
{
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)obj, k, v) {
		json_t *one = json_object();
		json_object_set(one, k, v);
		struct buf t = BUF_INIT;
		json_dump_buf(one, &t);
		json_decref(one);
		buf_addch(out, ',');
		buf_add(out, t.ptr + 1, t.len - 2);
		buf_release(&t);
	}
}

/* Inserts more (",<member>,<member>...", or empty) before the '}' at end in text[0..len), which
 * closes an object that may be empty ("{}"). */
static void splice(struct buf *out, const char *text, size_t from, size_t end, const struct buf *more)
{
	buf_add(out, text + from, end - from);
	if (more->len) {
		bool empty = end > 0 && text[end - 1] == '{';
		buf_add(out, more->ptr + (empty ? 1 : 0), more->len - (empty ? 1 : 0));
	}
}

/* The whole v2 document of the table's kinds and res (the custom resources): the table's text
 * with the custom resources' paths and definitions spliced in, and its protobuf form the
 * table's message followed by one holding only those paths and definitions (protobuf merges
 * repeated fields of a message given twice, so readers see one document). */
static void tdocs_build_v2(struct tdocs *t, const struct openapi *o, const struct api_resource *const *res, size_t n)
{
	json_t *doc = openapi_v2_document(res, n);
	json_t *paths = json_object_get(doc, "paths"), *defs = json_object_get(doc, "definitions");
	json_t *mine = json_object(); /* the custom resources' definitions: kinds and lists */
	for (size_t i = 0; i < n; i++) {
		struct buf pkg = BUF_INIT;
		package_prefix(res[i]->group, res[i]->version, &pkg);
		char *name = xasprintf("%s.%s", buf_cstr(&pkg), res[i]->kind), *list = list_def_of(res[i], name);
		if (json_object_get(defs, name))
			json_object_set(mine, name, json_object_get(defs, name));
		if (json_object_get(defs, list))
			json_object_set(mine, list, json_object_get(defs, list));
		free(name);
		free(list);
		buf_release(&pkg);
	}
	struct buf mp = BUF_INIT, md = BUF_INIT;
	members_text(paths, &mp);
	members_text(mine, &md);
	const char *base = o->v2json.body.ptr;
	splice(&t->v2json.body, base, 0, o->v2_paths_end, &mp);
	splice(&t->v2json.body, base, o->v2_paths_end, o->v2_defs_end, &md);
	buf_add(&t->v2json.body, base + o->v2_defs_end, o->v2json.body.len - o->v2_defs_end);
	blob_seal(&t->v2json);
	buf_release(&mp);
	buf_release(&md);

	buf_add(&t->v2pb.body, o->v2pb.body.ptr ? o->v2pb.body.ptr : "", o->v2pb.body.len);
	json_t *part = json_pack("{s:O,s:O}", "paths", paths, "definitions", mine);
	openapi_v2_protobuf(part, &t->v2pb.body);
	blob_seal(&t->v2pb);
	json_decref(part);
	json_decref(mine);
	json_decref(doc);
	t->has_v2 = true;
}

/* The custom resources of a view (group versions the table serves too are left to the table). */
static size_t view_resources(const struct openapi *o, const struct crd_view *v, const struct api_resource ***ret)
{
	size_t n = 0;
	*ret = xmalloc((v->n + 1) * sizeof(**ret));
	for (size_t i = 0; i < v->n; i++) {
		const struct api_resource *r = v->sv[i] ? v->sv[i]->r : NULL;
		if (!r || !r->crd || !r->group[0])
			continue;
		char *key = xasprintf("apis/%s/%s", r->group, r->version);
		if (!base_has_v3(o, key))
			(*ret)[n++] = r;
		free(key);
	}
	return n;
}

static struct tdocs *tdocs_build(const struct apiserver *s, const struct openapi *o, const char *tenant,
				 const struct crd_view *v, bool with_v2)
{
	struct tdocs *t = xcalloc(1, sizeof(*t));
	t->s = s;
	t->tenant = xstrdup(tenant);
	t->gen = v->gen;
	const struct api_resource **res;
	size_t n = view_resources(o, v, &res);
	json_t *docs = openapi_v3_documents(res, n), *index = json_copy(o->v3paths);
	t->v3 = xcalloc(json_object_size(docs) + 1, sizeof(*t->v3));
	t->v3keys = xcalloc(json_object_size(docs) + 1, sizeof(*t->v3keys));
	const char *key;
	json_t *doc;
	json_object_foreach (docs, key, doc) {
		struct blob *b = &t->v3[t->nv3];
		t->v3keys[t->nv3++] = xstrdup(key);
		blob_json(b, doc);
		char *url = xasprintf("/openapi/v3/%s?hash=%s", key, b->hash);
		json_object_set_new(index, key, json_pack("{s:s}", "serverRelativeURL", url));
		free(url);
	}
	json_t *idx = json_pack("{s:o}", "paths", index);
	blob_json(&t->v3index, idx);
	json_decref(idx);
	json_decref(docs);
	if (with_v2)
		tdocs_build_v2(t, o, res, n);
	free(res);
	tdocs_count(t);
	return t;
}

/* True when the client's Accept prefers gnostic's protobuf document over JSON. */
bool openapi_wants_protobuf(const char *accept)
{
	if (!accept)
		return false;
	const char *pb = strstr(accept, "com.github.proto-openapi.spec.v2");
	if (!pb)
		return false;
	const char *json = strstr(accept, "application/json");
	return !json || pb < json;
}

static void reply_blob(struct http_request *hr, struct http_reply *rp, const struct blob *b, const char *ctype,
		       const char *cache_control)
{
	http_reply_header(rp, "ETag", buf_cstr(&b->etag));
	http_reply_header(rp, "Vary", "Accept");
	http_reply_header(rp, "Cache-Control", cache_control);
	if (apidisc_etag_matches(http_header(hr, "If-None-Match"), buf_cstr(&b->etag))) {
		http_reply_set(rp, 304, NULL, NULL);
		return;
	}
	struct buf body = BUF_INIT;
	buf_add(&body, b->body.ptr ? b->body.ptr : "", b->body.len);
	http_reply_set(rp, 200, ctype, &body);
}

/* A document at its hashed URL never changes; a tenant's own (its custom resources') is kept
 * out of shared caches all the same. */
static void reply_v3(struct http_request *hr, struct http_reply *rp, const struct blob *b, bool tenants)
{
	const char *hash = http_query(hr, "hash");
	bool pinned = hash && strcmp(hash, b->hash) == 0;
	reply_blob(hr, rp, b, "application/json",
		   !pinned    ? "no-cache, private"
		   : tenants ? "private, immutable, max-age=31536000"
			     : "public, immutable, max-age=31536000");
}

static bool is_v2(const char *path)
{
	return strcmp(path, "/openapi/v2") == 0 || strcmp(path, "/openapi/v2/") == 0;
}

static bool is_v3_index(const char *path)
{
	return strcmp(path, "/openapi/v3") == 0 || strcmp(path, "/openapi/v3/") == 0;
}

/* Replies from t (a tenant's) or o (the table's); false when neither has path. */
static bool reply_doc(struct http_request *hr, struct http_reply *rp, const struct openapi *o, const struct tdocs *t)
{
	const char *path = http_path(hr);
	if (is_v2(path)) {
		bool pb = openapi_wants_protobuf(http_header(hr, "Accept"));
		const struct blob *b = pb ? (t ? &t->v2pb : &o->v2pb) : (t ? &t->v2json : &o->v2json);
		reply_blob(hr, rp, b, pb ? PB_MEDIA_TYPE : "application/json", "no-cache, private");
		return true;
	}
	if (is_v3_index(path)) {
		reply_blob(hr, rp, t ? &t->v3index : &o->v3index, "application/json", "no-cache, private");
		return true;
	}
	if (strncmp(path, "/openapi/v3/", 12) != 0)
		return false;
	for (size_t i = 0; i < o->nv3; i++)
		if (strcmp(path + 12, o->v3keys[i]) == 0) {
			reply_v3(hr, rp, &o->v3[i], false);
			return true;
		}
	for (size_t i = 0; t && i < t->nv3; i++)
		if (strcmp(path + 12, t->v3keys[i]) == 0) {
			reply_v3(hr, rp, &t->v3[i], true);
			return true;
		}
	return false;
}

void serve_openapi(struct apiserver *s, const char *tenant, struct http_request *hr, struct http_reply *rp)
{
	const struct openapi *o = openapi_of(s);
	struct crd_view v = {0};
	if (s->crds && tenant)
		crd_view_get(s, tenant, &v);
	if (v.n == 0) {
		crd_view_release(&v);
		if (!reply_doc(hr, rp, o, NULL))
			reply_status_raw(rp, E_NOT_FOUND, "the server could not find the requested resource");
		return;
	}
	bool want_v2 = is_v2(http_path(hr));
	char *key = tdocs_key(s, tenant, v.gen);
	pthread_mutex_lock(&cache_lock);
	if (!tcache_init) {
		lru_init(&tcache, TDOCS_MAX, TDOCS_MAX_BYTES, tdocs_free);
		tcache_init = true;
	}
	struct tdocs *t = lru_get(&tcache, key);
	if (!t || (want_v2 && !t->has_v2)) {
		/* Built without the lock: others' requests meanwhile are served, or build too. */
		pthread_mutex_unlock(&cache_lock);
		struct tdocs *fresh = tdocs_build(s, o, tenant, &v, want_v2);
		/* building took trees many times the documents' size: give their pages back */
		malloc_trim(0);
		pthread_mutex_lock(&cache_lock);
		t = lru_get(&tcache, key);
		if (!t || (want_v2 && !t->has_v2)) {
			t = fresh;
			lru_put(&tcache, key, t, t->bytes); /* never pinned: replaces what lacked v2 */
		} else {
			tdocs_free(fresh);
		}
	}
	bool done = reply_doc(hr, rp, o, t);
	pthread_mutex_unlock(&cache_lock);
	free(key);
	crd_view_release(&v);
	if (!done)
		reply_status_raw(rp, E_NOT_FOUND, "the server could not find the requested resource");
}
