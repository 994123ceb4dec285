/* Strategies of the region registry kinds: TenantPartition and ResourceManager. */
#include "ursa/region.h"
#include "ursa/buf.h"
#include "ursa/jsonutil.h"
#include "ursa/timeutil.h"
#include <string.h>

static void validate_endpoints(const json_t *obj, struct field_errors *errs)
{
	json_t *eps = json_path(obj, "spec.endpoints");
	if (!json_is_array(eps) || json_array_size(eps) == 0) {
		field_error_required(errs, "spec.endpoints");
		return;
	}
	size_t i;
	json_t *e;
	json_array_foreach(eps, i, e) {
		const char *u = json_string_value(e);
		if (!u || (strncmp(u, "http://", 7) != 0 && strncmp(u, "https://", 8) != 0) || strlen(u) > 2048)
			field_error_add(errs, "FieldValueInvalid", "spec.endpoints",
					"Invalid value: \"%s\": must be an http:// or https:// URL", u ? u : "");
	}
}

static void tp_validate(const json_t *obj, const json_t *old, struct field_errors *errs)
{
	validate_endpoints(obj, errs);
}

static void rm_validate(const json_t *obj, const json_t *old, struct field_errors *errs)
{
	validate_endpoints(obj, errs);
	const char *zone = json_path_str(obj, "spec.zone");
	if (!zone || !*zone)
		field_error_required(errs, "spec.zone");
	else if (!valid_label_value(zone))
		field_error_add(errs, "FieldValueInvalid", "spec.zone", "Invalid value: \"%s\": must be a valid label value",
				zone);
}

static void endpoints_cell(const json_t *obj, json_t *cells)
{
	struct buf b = BUF_INIT;
	size_t i;
	json_t *e;
	json_array_foreach(json_path(obj, "spec.endpoints"), i, e) {
		if (i)
			buf_addch(&b, ',');
		buf_adds(&b, json_string_value(e) ? json_string_value(e) : "");
	}
	json_array_append_new(cells, json_string(b.len ? b.ptr : "<none>"));
	buf_release(&b);
}

static void age_cell(const json_t *obj, time_t now, json_t *cells)
{
	time_t t;
	struct buf b = BUF_INIT;
	const char *ts = json_path_str(obj, "metadata.creationTimestamp");
	if (ts && rfc3339_parse(ts, &t) == 0)
		age_add(&b, t, now);
	else
		buf_adds(&b, "<unknown>");
	json_array_append_new(cells, json_string(b.ptr));
	buf_release(&b);
}

static void tp_cells(const json_t *obj, time_t now, json_t *cells)
{
	json_array_append_new(cells, json_string(json_path_str(obj, "metadata.name")));
	endpoints_cell(obj, cells);
	age_cell(obj, now, cells);
}

static void rm_cells(const json_t *obj, time_t now, json_t *cells)
{
	json_array_append_new(cells, json_string(json_path_str(obj, "metadata.name")));
	endpoints_cell(obj, cells);
	const char *zone = json_path_str(obj, "spec.zone");
	json_array_append_new(cells, json_string(zone ? zone : "<none>"));
	age_cell(obj, now, cells);
}

static const struct api_column tp_columns[] = {
	{ "Name", "string", "name", "Name of the tenant partition", 0 },
	{ "Endpoints", "string", "", "API server URLs of the partition", 0 },
	{ "Age", "string", "", "Time since registration", 0 },
};

static const struct api_column rm_columns[] = {
	{ "Name", "string", "name", "Name of the resource manager", 0 },
	{ "Endpoints", "string", "", "API server URLs of the resource manager", 0 },
	{ "Zone", "string", "", "Availability zone of its hosts", 0 },
	{ "Age", "string", "", "Time since registration", 0 },
};

static const struct api_field rm_fields[] = { { "spec.zone", "spec.zone" } };

const struct api_strategy strategy_tenantpartition = {
	.validate = tp_validate, .columns = tp_columns, .ncolumns = 3, .cells = tp_cells,
};

const struct api_strategy strategy_resourcemanager = {
	.validate = rm_validate, .columns = rm_columns, .ncolumns = 4, .cells = rm_cells,
	.fields = rm_fields, .nfields = 1,
};
