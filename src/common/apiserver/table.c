/* meta.k8s.io/v1 Table responses, built from each resource's printer columns. */
#include "internal.h"
#include "jsontext.h"
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

/* Appends one row of a list's Table: the cells of the object text, and its metadata without
 * managedFields, cut from the text rather than parsed and dumped again. */
static void row_text(const struct api_resource *r, const char *text, size_t len, time_t now, struct buf *out)
{
	const struct api_strategy *st = r->strategy;
	/* Only what the cells read, parsed straight from the text (jansson's own parser is several
	 * times slower); jansson decides when that fails. */
	json_t *obj = json_text_load(text, len, !r->crd_version && st->cells ? st->cell_paths : NULL);
	if (!obj)
		obj = json_loadb(text, len, 0, NULL);
	json_t *cells = json_array();
	if (r->crd_version)
		crd_table_cells(r, obj, now, cells);
	else if (st->cells)
		st->cells(obj, now, cells);
	else
		json_array_append_new(cells, json_string(json_path_str(obj, "metadata.name")));
	json_decref(obj);
	buf_adds(out, "{\"cells\":");
	json_dump_buf(cells, out);
	json_decref(cells);
	buf_adds(out, ",\"object\":{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":");
	size_t off, mlen;
	if (json_text_member(text, len, "metadata", &off, &mlen) < 0)
		buf_adds(out, "{}");
	else if (text[off] != '{' || json_text_drop_member(text + off, mlen, "managedFields", out) < 0)
		buf_add(out, text + off, mlen);
	buf_adds(out, "}}");
}

void table_list_text(const struct api_resource *r, struct cobj *const *objs, size_t n, int64_t rv, const char *cont,
		     long long remaining, struct buf *out)
{
	time_t now = time(NULL);
	size_t total = 512;
	for (size_t i = 0; i < n; i++)
		total += objs[i]->json_len / 2 + 256;
	buf_grow(out, total);
	buf_addf(out, "{\"kind\":\"Table\",\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":{\"resourceVersion\":\"%lld\"",
		 (long long)rv_show(rv));
	if (cont && *cont) {
		buf_adds(out, ",\"continue\":");
		buf_add_json_str(out, cont, strlen(cont));
	}
	if (remaining > 0)
		buf_addf(out, ",\"remainingItemCount\":%lld", remaining);
	buf_adds(out, "},\"columnDefinitions\":");
	json_t *defs = column_defs(r->strategy);
	json_dump_buf(defs, out);
	json_decref(defs);
	buf_adds(out, ",\"rows\":[");
	for (size_t i = 0; i < n; i++) {
		if (i)
			buf_addch(out, ',');
		row_text(r, objs[i]->json, objs[i]->json_len, now, out);
	}
	buf_adds(out, "]}");
}

void table_set_list_meta(json_t *table, int64_t rv, const char *cont, long long remaining)
{
	json_t *m = json_object_get(table, "metadata");
	char tmp[32];
	snprintf(tmp, sizeof(tmp), "%lld", (long long)rv_show(rv));
	json_object_set_new(m, "resourceVersion", json_string(tmp));
	if (cont && *cont)
		json_object_set_new(m, "continue", json_string(cont));
	if (remaining > 0)
		json_object_set_new(m, "remainingItemCount", json_integer(remaining));
}
