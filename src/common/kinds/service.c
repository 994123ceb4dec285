/* Services. Cluster IP allocation is the registry's job (it needs state); here are the
 * defaults, the checks and the printer columns. */
#include <stdlib.h>
#include <string.h>
#include "kinds/kinds_common.h"
#include "ursa/ipnet.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

static void service_defaults(json_t *obj)
{
	json_t *spec = json_object_get(obj, "spec");
	if (!json_is_object(spec))
		return;
	default_str(spec, "type", "ClusterIP");
	default_str(spec, "sessionAffinity", "None");
	const char *type = json_str(spec, "type");
	if (type && strcmp(type, "ExternalName"))
		default_str(spec, "internalTrafficPolicy", "Cluster");
	if (type && (!strcmp(type, "NodePort") || !strcmp(type, "LoadBalancer")))
		default_str(spec, "externalTrafficPolicy", "Cluster");
	size_t i;
	json_t *p;
	json_array_foreach(json_object_get(spec, "ports"), i, p) {
		if (!json_is_object(p))
			continue;
		default_str(p, "protocol", "TCP");
		json_t *port = json_object_get(p, "port");
		json_t *tp = json_object_get(p, "targetPort");
		bool unset = !tp || json_is_null(tp) || (json_is_integer(tp) && json_integer_value(tp) == 0) ||
			     (json_is_string(tp) && json_string_length(tp) == 0);
		if (unset && json_is_integer(port))
			json_object_set_new(p, "targetPort", json_deep_copy(port));
	}
}

static void validate_target_port(const json_t *tp, const char *field, struct field_errors *errs)
{
	if (json_is_string(tp)) {
		const char *why = iana_svc_name_error(json_string_value(tp));
		if (why)
			field_error_invalid(errs, field, json_string_value(tp), "%s", why);
	} else if (json_is_integer(tp)) {
		long long v = (long long)json_integer_value(tp);
		if (v < 1 || v > 65535)
			field_error_invalid_int(errs, field, v, "must be between 1 and 65535, inclusive");
	} else if (tp && !json_is_null(tp)) {
		field_error_type(errs, field, "an integer or a string");
	}
}

static void validate_port_range(const json_t *v, const char *field, bool required, struct field_errors *errs)
{
	if (!v || json_is_null(v)) {
		if (required)
			field_error_required(errs, field);
	} else if (!json_is_integer(v)) {
		field_error_type(errs, field, "an integer");
	} else if (json_integer_value(v) < (required ? 1 : 0) || json_integer_value(v) > 65535) {
		field_error_invalid_int(errs, field, (long long)json_integer_value(v),
					"must be between 1 and 65535, inclusive");
	}
}

static void validate_service_port(const json_t *p, size_t i, size_t n, const char *type, struct field_errors *errs)
{
	static const char *const protocols[] = { "SCTP", "TCP", "UDP", NULL };
	char *base = xasprintf("spec.ports[%zu]", i), *f;
	const char *name = json_str(p, "name"), *proto = json_str(p, "protocol");
	f = xasprintf("%s.name", base);
	if ((!name || !*name) && n > 1)
		field_error_required(errs, f);
	else if (name && *name && dns1123_label_error(name))
		field_error_invalid(errs, f, name, "%s", dns1123_label_error(name));
	free(f);
	f = xasprintf("%s.port", base);
	validate_port_range(json_object_get(p, "port"), f, true, errs);
	free(f);
	f = xasprintf("%s.targetPort", base);
	validate_target_port(json_object_get(p, "targetPort"), f, errs);
	free(f);
	f = xasprintf("%s.nodePort", base);
	const json_t *np = json_object_get(p, "nodePort");
	validate_port_range(np, f, false, errs);
	if (json_is_integer(np) && json_integer_value(np) && !strcmp(type, "ClusterIP"))
		field_error_forbidden(errs, f, "may not be used when `type` is 'ClusterIP'");
	free(f);
	if (proto && strcmp(proto, "TCP") && strcmp(proto, "UDP") && strcmp(proto, "SCTP")) {
		f = xasprintf("%s.protocol", base);
		field_error_not_supported(errs, f, proto, protocols);
		free(f);
	}
	free(base);
}

static void validate_ports(const json_t *spec, const char *type, struct field_errors *errs)
{
	const json_t *ports = json_object_get(spec, "ports");
	const char *cip = json_str(spec, "clusterIP");
	bool headless = cip && !strcmp(cip, "None");
	size_t n = json_array_size(ports), i;
	json_t *p;
	if (ports && !json_is_null(ports) && !json_is_array(ports)) {
		field_error_type(errs, "spec.ports", "an array");
		return;
	}
	if (n == 0 && !headless && strcmp(type, "ExternalName"))
		field_error_required(errs, "spec.ports");
	json_array_foreach(ports, i, p) {
		validate_service_port(p, i, n, type, errs);
		const char *name = json_str(p, "name");
		for (size_t j = 0; name && *name && j < i; j++) {
			const char *other = json_str(json_array_get(ports, j), "name");
			if (other && !strcmp(other, name)) {
				char *f = xasprintf("spec.ports[%zu].name", i);
				field_error_duplicate(errs, f, name);
				free(f);
				break;
			}
		}
	}
}

static void service_validate(const json_t *obj, const json_t *old, struct field_errors *errs)
{
	static const char *const types[] = { "ClusterIP", "ExternalName", "LoadBalancer", "NodePort", NULL };
	static const char *const affinities[] = { "ClientIP", "None", NULL };
	const json_t *spec = json_object_get(obj, "spec");
	if (!json_is_object(spec)) {
		field_error_required(errs, "spec");
		return;
	}
	const char *type = json_str(spec, "type"), *aff = json_str(spec, "sessionAffinity");
	if (!type)
		type = "ClusterIP";
	if (strcmp(type, "ClusterIP") && strcmp(type, "ExternalName") && strcmp(type, "LoadBalancer") &&
	    strcmp(type, "NodePort"))
		field_error_not_supported(errs, "spec.type", type, types);
	if (aff && strcmp(aff, "ClientIP") && strcmp(aff, "None"))
		field_error_not_supported(errs, "spec.sessionAffinity", aff, affinities);
	validate_ports(spec, type, errs);
	validate_labels(json_object_get(spec, "selector"), "spec.selector", errs);
	const char *ext = json_str(spec, "externalName");
	if (!strcmp(type, "ExternalName") && (!ext || !*ext))
		field_error_required(errs, "spec.externalName");
	else if (!strcmp(type, "ExternalName") && dns1123_subdomain_error(ext))
		field_error_invalid(errs, "spec.externalName", ext, "%s", dns1123_subdomain_error(ext));
	const char *cip = json_str(spec, "clusterIP"), *old_cip = json_path_str(old, "spec.clusterIP");
	uint32_t ip;
	if (cip && *cip && strcmp(cip, "None") && ipv4_parse(cip, &ip) < 0)
		field_error_invalid(errs, "spec.clusterIP", cip, "must be empty, 'None', or a valid IPv4 address");
	const char *first = json_string_value(json_array_get(json_object_get(spec, "clusterIPs"), 0));
	if (cip && *cip && first && *first && strcmp(cip, first))
		field_error_invalid(errs, "spec.clusterIPs[0]", first, "must be the same value as spec.clusterIP");
	if (!strcmp(type, "ExternalName") && cip && *cip && strcmp(cip, "None"))
		field_error_forbidden(errs, "spec.clusterIP", "may not be set for ExternalName services");
	if (old && cip && *cip && old_cip && *old_cip && strcmp(cip, old_cip))
		field_error_invalid(errs, "spec.clusterIP", cip, "field is immutable");
}

static void join_strings(const json_t *arr, struct buf *out)
{
	size_t i;
	json_t *v;
	json_array_foreach(arr, i, v)
		if (json_is_string(v))
			buf_addf(out, "%s%s", out->len ? "," : "", json_string_value(v));
}

static void external_ip(const json_t *spec, const json_t *obj, struct buf *out)
{
	const char *type = json_str(spec, "type");
	const json_t *ext = json_object_get(spec, "externalIPs");
	if (!type || !strcmp(type, "ClusterIP") || !strcmp(type, "NodePort")) {
		join_strings(ext, out);
	} else if (!strcmp(type, "LoadBalancer")) {
		size_t i;
		json_t *ing;
		json_array_foreach(json_path(obj, "status.loadBalancer.ingress"), i, ing) {
			const char *a = json_str(ing, "ip");
			if (!a || !*a)
				a = json_str(ing, "hostname");
			if (a && *a)
				buf_addf(out, "%s%s", out->len ? "," : "", a);
		}
		join_strings(ext, out);
		if (out->len == 0)
			buf_adds(out, "<pending>");
	} else if (!strcmp(type, "ExternalName")) {
		buf_adds(out, json_str(spec, "externalName") ? json_str(spec, "externalName") : "");
		return;
	} else {
		buf_adds(out, "<unknown>");
	}
	if (out->len == 0)
		buf_adds(out, "<none>");
}

static void service_cells(const json_t *obj, time_t now, json_t *cells)
{
	const json_t *spec = json_object_get(obj, "spec");
	struct buf b = BUF_INIT;
	cell_name(obj, cells);
	cell_str(cells, json_str(spec, "type"));
	const char *cip = json_string_value(json_array_get(json_object_get(spec, "clusterIPs"), 0));
	cell_str_or(cells, cip && *cip ? cip : json_str(spec, "clusterIP"), "<none>");
	external_ip(spec, obj, &b);
	cell_str(cells, buf_cstr(&b));
	buf_reset(&b);
	size_t i;
	json_t *p;
	json_array_foreach(json_object_get(spec, "ports"), i, p) {
		const char *proto = json_str(p, "protocol");
		long long np = int_at(p, "nodePort", 0);
		buf_addf(&b, "%s%lld", i ? "," : "", int_at(p, "port", 0));
		if (np > 0)
			buf_addf(&b, ":%lld", np);
		buf_addf(&b, "/%s", proto ? proto : "");
	}
	cell_str_or(cells, buf_cstr(&b), "<none>");
	cell_age(obj, now, cells);
	cell_labels(cells, json_object_get(spec, "selector"));
	buf_release(&b);
}

static const struct api_column service_columns[] = {
	COLUMN_NAME,
	{ "Type", "string", "", "type determines how the Service is exposed.", 0 },
	{ "Cluster-IP", "string", "", "clusterIP is the IP address of the service.", 0 },
	{ "External-IP", "string", "", "externalIPs is a list of IP addresses for which nodes in the cluster "
	  "will also accept traffic for this service.", 0 },
	{ "Port(s)", "string", "", "The list of ports that are exposed by this service.", 0 },
	COLUMN_AGE,
	{ "Selector", "string", "", "Route service traffic to pods with label keys and values matching this "
	  "selector.", 1 },
};

const struct api_strategy strategy_service = {
	.defaults = service_defaults,
	.validate = service_validate,
	.columns = service_columns,
	.ncolumns = ARRAY_SIZE(service_columns),
	.cells = service_cells,
};
