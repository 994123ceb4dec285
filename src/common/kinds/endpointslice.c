/* discovery.k8s.io/v1 EndpointSlice: a part of a Service's endpoints with their conditions
 * (ready, serving, terminating), kept by the endpointslice controller. */
#include <stdlib.h>
#include <string.h>
#include "kinds/kinds_common.h"
#include "ursa/ipnet.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

#define SLICE_MAX_ENDPOINTS 1000

static void slice_defaults(json_t *obj)
{
	size_t i;
	json_t *p;
	json_array_foreach(json_object_get(obj, "ports"), i, p)
		if (json_is_object(p))
			default_str(p, "protocol", "TCP");
}

static void slice_validate(const json_t *obj, const json_t *old, struct field_errors *errs)
{
	static const char *const types[] = { "FQDN", "IPv4", "IPv6", NULL };
	const char *at = json_str(obj, "addressType"), *old_at = json_str(old, "addressType");
	if (!at || !*at)
		field_error_required(errs, "addressType");
	else if (strcmp(at, "IPv4") && strcmp(at, "IPv6") && strcmp(at, "FQDN"))
		field_error_not_supported(errs, "addressType", at, types);
	if (old && at && old_at && strcmp(at, old_at))
		field_error_invalid(errs, "addressType", at, "field is immutable");
	const json_t *eps = json_object_get(obj, "endpoints");
	if (eps && !json_is_null(eps) && !json_is_array(eps)) {
		field_error_type(errs, "endpoints", "an array");
		return;
	}
	if (json_array_size(eps) > SLICE_MAX_ENDPOINTS)
		field_error_too_long(errs, "endpoints", SLICE_MAX_ENDPOINTS);
	size_t i, j;
	json_t *e, *a, *p;
	json_array_foreach(eps, i, e) {
		const json_t *addrs = json_object_get(e, "addresses");
		char *f = xasprintf("endpoints[%zu].addresses", i);
		if (json_array_size(addrs) < 1 || json_array_size(addrs) > 100)
			field_error_invalid_int(errs, f, (long long)json_array_size(addrs),
						"must have between 1 and 100 addresses");
		free(f);
		json_array_foreach(addrs, j, a) {
			uint32_t v;
			const char *s = json_string_value(a);
			f = xasprintf("endpoints[%zu].addresses[%zu]", i, j);
			if (!s || (at && !strcmp(at, "IPv4") && ipv4_parse(s, &v) < 0))
				field_error_invalid(errs, f, s ? s : "", "must be a valid IPv4 address");
			free(f);
		}
	}
	json_array_foreach(json_object_get(obj, "ports"), i, p) {
		const json_t *port = json_object_get(p, "port");
		if (json_is_integer(port) && (json_integer_value(port) < 0 || json_integer_value(port) > 65535)) {
			char *f = xasprintf("ports[%zu].port", i);
			field_error_invalid_int(errs, f, (long long)json_integer_value(port),
						"must be between 0 and 65535, inclusive");
			free(f);
		}
	}
}

/* The first three of items, then " + N more...", or "<unset>" when there are none. */
static void more_list(struct buf *out, size_t shown, size_t total)
{
	if (total > shown)
		buf_addf(out, " + %zu more...", total - shown);
	else if (total == 0)
		buf_adds(out, "<unset>");
}

static void slice_cells(const json_t *obj, time_t now, json_t *cells)
{
	struct buf b = BUF_INIT;
	size_t i, j, shown = 0, total = 0;
	json_t *p, *e, *a;
	cell_name(obj, cells);
	cell_str(cells, json_str(obj, "addressType"));
	json_array_foreach(json_object_get(obj, "ports"), i, p) {
		total++;
		if (shown == 3)
			continue;
		const json_t *port = json_object_get(p, "port");
		if (json_is_integer(port))
			buf_addf(&b, "%s%lld", shown ? "," : "", (long long)json_integer_value(port));
		else
			buf_addf(&b, "%s%s", shown ? "," : "", json_str(p, "name") ? json_str(p, "name") : "*");
		shown++;
	}
	more_list(&b, shown, total);
	cell_str(cells, buf_cstr(&b));
	buf_reset(&b);
	shown = total = 0;
	json_array_foreach(json_object_get(obj, "endpoints"), i, e)
		json_array_foreach(json_object_get(e, "addresses"), j, a) {
			total++;
			if (shown == 3)
				continue;
			buf_addf(&b, "%s%s", shown ? "," : "", json_string_value(a) ? json_string_value(a) : "");
			shown++;
		}
	more_list(&b, shown, total);
	cell_str(cells, buf_cstr(&b));
	cell_age(obj, now, cells);
	buf_release(&b);
}

static const struct api_column slice_columns[] = {
	COLUMN_NAME,
	{ "AddressType", "string", "", "addressType specifies the type of address carried by this EndpointSlice.", 0 },
	{ "Ports", "string", "", "ports specifies the list of network ports exposed by each endpoint in this "
	  "slice.", 0 },
	{ "Endpoints", "string", "", "endpoints is a list of unique endpoints in this slice.", 0 },
	COLUMN_AGE,
};

const struct api_strategy strategy_endpointslice = {
	.defaults = slice_defaults,
	.validate = slice_validate,
	.columns = slice_columns,
	.ncolumns = ARRAY_SIZE(slice_columns),
	.cells = slice_cells,
};
