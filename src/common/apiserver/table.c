/* meta.k8s.io/v1 Table responses, built from each resource's printer columns. */
#include "internal.h"
#include "ursa/crd.h"
#include "ursa/jsonutil.h"
#include <string.h>

bool wants_table(struct req *q)
{
	const char *acc = http_header(q->http, "Accept");
	return acc && strstr(acc, "as=Table") && strstr(acc, "g=meta.k8s.io");
}

static json_t *column_defs(const struct api_strategy *st)
{
	json_t *defs = json_array();
	for (size_t i = 0; i < st->ncolumns; i++) {
		const struct api_column *c = &st->columns[i];
		json_array_append_new(defs, json_pack("{s:s,s:s,s:s,s:s,s:i}", "name", c->name, "type", c->type, "format",
						      c->format ? c->format : "", "description",
						      c->description ? c->description : "", "priority", c->priority));
	}
	return defs;
}

static json_t *partial_meta(const json_t *obj)
{
	json_t *m = json_object_get(obj, "metadata");
	json_t *meta = json_deep_copy(m ? m : json_object_get(obj, "__none__"));
	if (!meta)
		meta = json_object();
	json_object_del(meta, "managedFields");
	return json_pack("{s:s,s:s,s:o}", "kind", "PartialObjectMetadata", "apiVersion", "meta.k8s.io/v1", "metadata",
			 meta);
}

json_t *table_new(const struct api_resource *r, json_t **objs, size_t n, bool with_columns)
{
	const struct api_strategy *st = r->strategy;
	json_t *t = json_pack("{s:s,s:s,s:{}}", "kind", "Table", "apiVersion", "meta.k8s.io/v1", "metadata");
	json_object_set_new(t, "columnDefinitions", with_columns ? column_defs(st) : json_null());
	json_t *rows = json_array();
	time_t now = time(NULL);
	for (size_t i = 0; i < n; i++) {
		json_t *cells = json_array();
		if (r->crd_version)
			crd_table_cells(r, objs[i], now, cells);
		else if (st->cells)
			st->cells(objs[i], now, cells);
		else
			json_array_append_new(cells, json_string(json_path_str(objs[i], "metadata.name")));
		json_array_append_new(rows, json_pack("{s:o,s:o}", "cells", cells, "object", partial_meta(objs[i])));
	}
	json_object_set_new(t, "rows", rows);
	return t;
}

void table_set_list_meta(json_t *table, int64_t rv, const char *cont, long long remaining)
{
	json_t *m = json_object_get(table, "metadata");
	char tmp[32];
	snprintf(tmp, sizeof(tmp), "%lld", (long long)rv);
	json_object_set_new(m, "resourceVersion", json_string(tmp));
	if (cont && *cont)
		json_object_set_new(m, "continue", json_string(cont));
	if (remaining > 0)
		json_object_set_new(m, "remainingItemCount", json_integer(remaining));
}
