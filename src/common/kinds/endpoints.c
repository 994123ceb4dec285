/* v1 Endpoints: the addresses behind a Service, kept by the endpoints controller for services
 * with a selector (and written by hand for those without). */
#include <stdlib.h>
#include <string.h>
#include "kinds/kinds_common.h"
#include "ursa/ipnet.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

static void endpoints_defaults(json_t *obj)
{
	size_t i, j;
	json_t *ss, *p;
	json_array_foreach(json_object_get(obj, "subsets"), i, ss)
		json_array_foreach(json_object_get(ss, "ports"), j, p)
			if (json_is_object(p))
				default_str(p, "protocol", "TCP");
}

static void validate_addresses(const json_t *addrs, const char *base, struct field_errors *errs)
{
	size_t i;
	json_t *a;
	if (addrs && !json_is_null(addrs) && !json_is_array(addrs)) {
		field_error_type(errs, base, "an array");
		return;
	}
	json_array_foreach(addrs, i, a) {
		char *f = xasprintf("%s[%zu].ip", base, i);
		const char *ip = json_str(a, "ip");
		uint32_t v;
		if (!ip || !*ip)
			field_error_required(errs, f);
		else if (ipv4_parse(ip, &v) < 0 && !strchr(ip, ':'))
			field_error_invalid(errs, f, ip,
					    "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)");
		free(f);
	}
}

static void endpoints_validate(const json_t *obj, const json_t *old, struct field_errors *errs)
{
	(void)old;
	const json_t *subsets = json_object_get(obj, "subsets");
	size_t i, j;
	json_t *ss, *p;
	if (subsets && !json_is_null(subsets) && !json_is_array(subsets)) {
		field_error_type(errs, "subsets", "an array");
		return;
	}
	json_array_foreach(subsets, i, ss) {
		char *b = xasprintf("subsets[%zu].addresses", i);
		validate_addresses(json_object_get(ss, "addresses"), b, errs);
		free(b);
		b = xasprintf("subsets[%zu].notReadyAddresses", i);
		validate_addresses(json_object_get(ss, "notReadyAddresses"), b, errs);
		free(b);
		json_array_foreach(json_object_get(ss, "ports"), j, p) {
			char *f = xasprintf("subsets[%zu].ports[%zu].port", i, j);
			const json_t *port = json_object_get(p, "port");
			if (!json_is_integer(port))
				field_error_required(errs, f);
			else if (json_integer_value(port) < 1 || json_integer_value(port) > 65535)
				field_error_invalid_int(errs, f, (long long)json_integer_value(port),
							"must be between 1 and 65535, inclusive");
			free(f);
		}
	}
}

/* kubectl's ENDPOINTS cell: "ip:port" per port and ready address, the first three, then
 * " + N more..."; bare addresses for subsets without ports; "<none>" without subsets. */
static void endpoints_summary(const json_t *obj, struct buf *out)
{
	const json_t *subsets = json_object_get(obj, "subsets");
	if (json_array_size(subsets) == 0) {
		buf_adds(out, "<none>");
		return;
	}
	size_t shown = 0, total = 0, i, j, k;
	json_t *ss, *p, *a;
	json_array_foreach(subsets, i, ss) {
		const json_t *ports = json_object_get(ss, "ports"), *addrs = json_object_get(ss, "addresses");
		size_t np = json_array_size(ports);
		for (j = 0; j < (np ? np : 1); j++) {
			p = json_array_get(ports, j);
			json_array_foreach(addrs, k, a) {
				total++;
				if (shown == 3)
					continue;
				const char *ip = json_str(a, "ip");
				bool v6 = ip && strchr(ip, ':');
				buf_addf(out, "%s%s%s%s", shown ? "," : "", v6 ? "[" : "", ip ? ip : "", v6 ? "]" : "");
				if (np)
					buf_addf(out, ":%lld", int_at(p, "port", 0));
				shown++;
			}
		}
	}
	if (total > shown)
		buf_addf(out, " + %zu more...", total - shown);
}

static void endpoints_cells(const json_t *obj, time_t now, json_t *cells)
{
	struct buf b = BUF_INIT;
	cell_name(obj, cells);
	endpoints_summary(obj, &b);
	cell_str(cells, buf_cstr(&b));
	cell_age(obj, now, cells);
	buf_release(&b);
}

static const struct api_column endpoints_columns[] = {
	COLUMN_NAME,
	{ "Endpoints", "string", "", "Endpoints is the list of ready addresses and ports of the service's pods.", 0 },
	COLUMN_AGE,
};

const struct api_strategy strategy_endpoints = {
	.defaults = endpoints_defaults,
	.validate = endpoints_validate,
	.columns = endpoints_columns,
	.ncolumns = ARRAY_SIZE(endpoints_columns),
	.cells = endpoints_cells,
};
