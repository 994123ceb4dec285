/* Nodes (cluster scope, system tenant). Printing follows upstream's printNode. */
#include <stdlib.h>
#include <string.h>
#include "kinds/kinds_common.h"
#include "ursa/jsonutil.h"
#include "ursa/kinds.h"
#include "ursa/xalloc.h"

#define ROLE_PREFIX "node-role.kubernetes.io/"

/* SetDefaults_NodeStatus: allocatable defaults to capacity. */
static void node_defaults(json_t *obj)
{
	json_t *status = json_object_get(obj, "status");
	json_t *cap = json_object_get(status, "capacity");
	if (json_is_object(cap) && !json_object_get(status, "allocatable"))
		json_object_set_new(status, "allocatable", json_deep_copy(cap));
}

static void node_validate(const json_t *obj, const json_t *old, struct field_errors *errs)
{
	static const char *const effects[] = { "NoSchedule", "PreferNoSchedule", "NoExecute", NULL };
	const json_t *taints = json_path(obj, "spec.taints");
	size_t i;
	json_t *t;
	json_array_foreach(taints, i, t) {
		const char *key = json_str(t, "key"), *effect = json_str(t, "effect");
		char *f = xasprintf("spec.taints[%zu].key", i);
		if (!key || !*key)
			field_error_required(errs, f);
		else if (label_key_why(key))
			field_error_invalid(errs, f, key, "%s", label_key_why(key));
		free(f);
		f = xasprintf("spec.taints[%zu].effect", i);
		if (!effect || !*effect)
			field_error_required(errs, f);
		else if (strcmp(effect, "NoSchedule") && strcmp(effect, "PreferNoSchedule") && strcmp(effect, "NoExecute"))
			field_error_not_supported(errs, f, effect, effects);
		free(f);
		for (size_t j = 0; key && effect && j < i; j++) {
			const json_t *o = json_array_get(taints, j);
			const char *ok = json_str(o, "key"), *oe = json_str(o, "effect");
			if (ok && oe && !strcmp(ok, key) && !strcmp(oe, effect)) {
				f = xasprintf("spec.taints[%zu]", i);
				field_error_duplicate(errs, f, key);
				free(f);
				break;
			}
		}
	}
	const json_t *u = json_path(obj, "spec.unschedulable");
	if (u && !json_is_null(u) && !json_is_boolean(u))
		field_error_type(errs, "spec.unschedulable", "a boolean");
}

static void status_cell(const json_t *obj, json_t *cells)
{
	struct buf b = BUF_INIT;
	size_t i;
	json_t *c;
	json_array_foreach(json_path(obj, "status.conditions"), i, c) {
		const char *type = json_str(c, "type"), *st = json_str(c, "status");
		if (type && !strcmp(type, "Ready")) {
			buf_adds(&b, st && !strcmp(st, "True") ? "Ready" : "NotReady");
			break;
		}
	}
	if (b.len == 0)
		buf_adds(&b, "Unknown");
	if (json_is_true(json_path(obj, "spec.unschedulable")))
		buf_adds(&b, ",SchedulingDisabled");
	cell_str(cells, buf_cstr(&b));
	buf_release(&b);
}

static int cmp_cstr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Roles from node-role.kubernetes.io/<role> keys and the kubernetes.io/role value, sorted, unique. */
static void roles_cell(const json_t *obj, json_t *cells)
{
	const json_t *labels = json_path(obj, "metadata.labels");
	size_t n = 0, i;
	const char **roles = xcalloc(json_object_size(labels) + 1, sizeof(*roles));
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)labels, k, v) {
		if (!strncmp(k, ROLE_PREFIX, strlen(ROLE_PREFIX)) && k[strlen(ROLE_PREFIX)])
			roles[n++] = k + strlen(ROLE_PREFIX);
		else if (!strcmp(k, "kubernetes.io/role") && json_string_length(v))
			roles[n++] = json_string_value(v);
	}
	qsort(roles, n, sizeof(*roles), cmp_cstr);
	struct buf b = BUF_INIT;
	for (i = 0; i < n; i++)
		if (i == 0 || strcmp(roles[i], roles[i - 1]))
			buf_addf(&b, "%s%s", b.len ? "," : "", roles[i]);
	cell_str_or(cells, buf_cstr(&b), "<none>");
	buf_release(&b);
	free(roles);
}

static void address_cell(const json_t *obj, const char *type, json_t *cells)
{
	size_t i;
	json_t *a;
	json_array_foreach(json_path(obj, "status.addresses"), i, a) {
		const char *t = json_str(a, "type");
		if (t && !strcmp(t, type)) {
			cell_str_or(cells, json_str(a, "address"), "<none>");
			return;
		}
	}
	cell_str(cells, "<none>");
}

static void node_cells(const json_t *obj, time_t now, json_t *cells)
{
	const json_t *info = json_path(obj, "status.nodeInfo");
	cell_name(obj, cells);
	status_cell(obj, cells);
	roles_cell(obj, cells);
	cell_age(obj, now, cells);
	cell_str(cells, json_str(info, "kubeletVersion"));
	address_cell(obj, "InternalIP", cells);
	address_cell(obj, "ExternalIP", cells);
	cell_str_or(cells, json_str(info, "osImage"), "<unknown>");
	cell_str_or(cells, json_str(info, "kernelVersion"), "<unknown>");
	cell_str_or(cells, json_str(info, "containerRuntimeVersion"), "<unknown>");
}

static const struct api_column node_columns[] = {
	COLUMN_NAME,
	{ "Status", "string", "", "The status of the node", 0 },
	{ "Roles", "string", "", "The roles of the node", 0 },
	COLUMN_AGE,
	{ "Version", "string", "", "Kubelet Version reported by the node.", 0 },
	{ "Internal-IP", "string", "", "List of addresses reachable to the node.", 1 },
	{ "External-IP", "string", "", "List of addresses reachable to the node.", 1 },
	{ "OS-Image", "string", "", "OS Image reported by the node from /etc/os-release.", 1 },
	{ "Kernel-Version", "string", "", "Kernel Version reported by the node from 'uname -r'.", 1 },
	{ "Container-Runtime", "string", "", "ContainerRuntime Version reported by the node through runtime "
	  "remote API.", 1 },
};

static const struct api_field node_fields[] = {
	{ "spec.unschedulable", "spec.unschedulable", "false" },
};

const struct api_strategy strategy_node = {
	.defaults = node_defaults,
	.validate = node_validate,
	.columns = node_columns,
	.ncolumns = ARRAY_SIZE(node_columns),
	.cells = node_cells,
	.fields = node_fields,
	.nfields = ARRAY_SIZE(node_fields),
};
