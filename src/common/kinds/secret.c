/* Secrets: type Opaque by default; stringData is folded into data (base64) as upstream's
 * conversion does, so stored secrets only carry data. */
#include <stdlib.h>
#include <string.h>
#include "kinds/kinds_common.h"
#include "ursa/base64.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

static void secret_defaults(json_t *obj)
{
	default_str(obj, "type", "Opaque");
	json_t *sd = json_object_get(obj, "stringData");
	if (!json_is_object(sd))
		return;
	json_t *data = default_obj(obj, "data");
	if (!json_is_object(data))
		return; /* validation reports the bad data */
	const char *k;
	json_t *v;
	json_object_foreach(sd, k, v) {
		if (!json_is_string(v))
			continue;
		struct buf b = BUF_INIT;
		base64_encode(&b, json_string_value(v), json_string_length(v), 0);
		json_object_set_new(data, k, json_string(buf_cstr(&b)));
		buf_release(&b);
	}
	json_object_del(obj, "stringData");
}

/* Keys each well-known secret type requires in data (any one of them when any_of). */
static const struct {
	const char *type;
	const char *keys[2];
	bool any_of;
} type_keys[] = {
	{ "kubernetes.io/dockercfg", { ".dockercfg", NULL }, false },
	{ "kubernetes.io/dockerconfigjson", { ".dockerconfigjson", NULL }, false },
	{ "kubernetes.io/basic-auth", { "username", "password" }, true },
	{ "kubernetes.io/ssh-auth", { "ssh-privatekey", NULL }, false },
	{ "kubernetes.io/tls", { "tls.crt", "tls.key" }, false },
};

static void validate_type_keys(const json_t *obj, const char *type, struct field_errors *errs)
{
	const json_t *data = json_object_get(obj, "data");
	/* json_path cannot address a key with dots, so look the annotation up directly. */
	if (!strcmp(type, "kubernetes.io/service-account-token") &&
	    !json_str(json_path(obj, "metadata.annotations"), "kubernetes.io/service-account.name"))
		field_error_required(errs, "metadata.annotations[kubernetes.io/service-account.name]");
	for (size_t i = 0; i < ARRAY_SIZE(type_keys); i++) {
		if (strcmp(type, type_keys[i].type))
			continue;
		int have = 0, want = 0;
		for (size_t k = 0; k < 2 && type_keys[i].keys[k]; k++, want++)
			have += json_object_get(data, type_keys[i].keys[k]) != NULL;
		if (type_keys[i].any_of ? have > 0 : have == want)
			return;
		for (size_t k = 0; k < 2 && type_keys[i].keys[k]; k++) {
			if (json_object_get(data, type_keys[i].keys[k]))
				continue;
			char *f = xasprintf("data[%s]", type_keys[i].keys[k]);
			field_error_required(errs, f);
			free(f);
		}
	}
}

static void secret_validate(const json_t *obj, const json_t *old, struct field_errors *errs)
{
	size_t size = 0;
	const json_t *type = json_object_get(obj, "type");
	validate_config_data(json_object_get(obj, "data"), "data", true, NULL, &size, errs);
	if (size > CONFIG_DATA_MAX)
		field_error_too_long(errs, "data", CONFIG_DATA_MAX);
	if (type && !json_is_string(type))
		field_error_type(errs, "type", "a string");
	else if (type)
		validate_type_keys(obj, json_string_value(type), errs);
	if (old)
		validate_immutable(type, json_object_get(old, "type"), "type", errs);
	validate_immutable_data(obj, old, errs);
}

static void secret_cells(const json_t *obj, time_t now, json_t *cells)
{
	cell_name(obj, cells);
	cell_str(cells, json_str(obj, "type"));
	cell_int(cells, (long long)json_object_size(json_object_get(obj, "data")));
	cell_age(obj, now, cells);
}

static const struct api_column secret_columns[] = {
	COLUMN_NAME,
	{ "Type", "string", "", "Used to facilitate programmatic handling of secret data.", 0 },
	{ "Data", "string", "", "Data contains the secret data.", 0 },
	COLUMN_AGE,
};

static const struct api_field secret_fields[] = {
	{ "type", "type" },
};

const struct api_strategy strategy_secret = {
	.defaults = secret_defaults,
	.validate = secret_validate,
	.columns = secret_columns,
	.ncolumns = ARRAY_SIZE(secret_columns),
	.cells = secret_cells,
	.fields = secret_fields,
	.nfields = ARRAY_SIZE(secret_fields),
};
