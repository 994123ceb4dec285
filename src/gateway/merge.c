/* Merged watches: the composite resourceVersion ("u1." + base64url of a JSON object mapping
 * partition id -> that partition's own resourceVersion) and the rewriting of one partition's
 * watch event lines into events of the merged stream. Pure functions: no I/O, no locks. */
#include <stdlib.h>
#include <string.h>
#include "gw.h"
#include "ursa/base64.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

#define PARTITION_ANNOTATION "ursa.io/partition"
#define EVENT_MAX_DEPTH 128

/* The encoded object is base64url without padding, decoded strictly (non-zero trailing bits
 * rejected) so that every value has exactly one spelling. */
#define CRV_B64 (BASE64_URL | BASE64_NOPAD | BASE64_CANONICAL)

bool crv_is_composite(const char *s)
{
	return s && strncmp(s, CRV_PREFIX, strlen(CRV_PREFIX)) == 0;
}

bool crv_partition_rv_ok(const char *rv)
{
	size_t n = strlen(rv);
	if (n > 20)
		return false;
	for (size_t i = 0; i < n; i++)
		if (rv[i] < '0' || rv[i] > '9')
			return false;
	return true;
}

static bool pid_ok(const char *id)
{
	size_t n = strlen(id);
	if (n == 0 || n > CRV_MAX_ID)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = id[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
		      c == '_'))
			return false;
	}
	return true;
}

void crv_init(struct crv *c)
{
	memset(c, 0, sizeof(*c));
}

void crv_release(struct crv *c)
{
	for (size_t i = 0; i < c->n; i++) {
		free(c->pid[i]);
		free(c->rv[i]);
	}
	free(c->pid);
	free(c->rv);
	crv_init(c);
}

const char *crv_get(const struct crv *c, const char *pid)
{
	for (size_t i = 0; i < c->n; i++)
		if (strcmp(c->pid[i], pid) == 0)
			return c->rv[i];
	return NULL;
}

void crv_set(struct crv *c, const char *pid, const char *rv)
{
	size_t i = 0;
	while (i < c->n && strcmp(c->pid[i], pid) < 0)
		i++;
	if (i < c->n && strcmp(c->pid[i], pid) == 0) {
		free(c->rv[i]);
		c->rv[i] = xstrdup(rv);
		return;
	}
	c->pid = xrealloc(c->pid, (c->n + 1) * sizeof(*c->pid));
	c->rv = xrealloc(c->rv, (c->n + 1) * sizeof(*c->rv));
	memmove(c->pid + i + 1, c->pid + i, (c->n - i) * sizeof(*c->pid));
	memmove(c->rv + i + 1, c->rv + i, (c->n - i) * sizeof(*c->rv));
	c->pid[i] = xstrdup(pid);
	c->rv[i] = xstrdup(rv);
	c->n++;
}

char *crv_encode(const struct crv *c)
{
	struct buf js = BUF_INIT, out = BUF_INIT;
	buf_addch(&js, '{');
	for (size_t i = 0; i < c->n; i++) {
		if (i)
			buf_addch(&js, ',');
		buf_add_json_str(&js, c->pid[i], strlen(c->pid[i]));
		buf_addch(&js, ':');
		buf_add_json_str(&js, c->rv[i], strlen(c->rv[i]));
	}
	buf_addch(&js, '}');
	buf_adds(&out, CRV_PREFIX);
	base64_encode(&out, js.ptr, js.len, CRV_B64);
	buf_release(&js);
	return buf_detach(&out, NULL);
}

int crv_parse(const char *s, struct crv *ret, const char **ret_msg)
{
	struct buf raw = BUF_INIT;
	struct crv c;
	json_t *j = NULL;
	const char *msg = NULL;
	crv_init(&c);
	size_t n = strlen(s);
	if (!crv_is_composite(s)) {
		msg = "resourceVersion is not a composite resourceVersion issued by the gateway";
		goto out;
	}
	if (n > CRV_MAX_LEN) {
		msg = "composite resourceVersion is too long";
		goto out;
	}
	size_t pl = strlen(CRV_PREFIX);
	if (base64_decode(&raw, s + pl, n - pl, CRV_B64) < 0) {
		msg = "composite resourceVersion is not valid base64url";
		goto out;
	}
	j = json_parse_limited(buf_cstr(&raw), raw.len, 2, NULL);
	if (!json_is_object(j)) {
		msg = "composite resourceVersion does not hold a JSON object";
		goto out;
	}
	if (json_object_size(j) > CRV_MAX_PARTS) {
		msg = "composite resourceVersion names too many partitions";
		goto out;
	}
	const char *k;
	json_t *v;
	json_object_foreach(j, k, v) {
		if (!pid_ok(k) || !json_is_string(v) || !crv_partition_rv_ok(json_string_value(v))) {
			msg = "composite resourceVersion holds an invalid partition id or resourceVersion";
			goto out;
		}
		crv_set(&c, k, json_string_value(v));
	}
out:
	json_decref(j);
	buf_release(&raw);
	if (msg) {
		crv_release(&c);
		if (ret_msg)
			*ret_msg = msg;
		return E_BAD_REQUEST;
	}
	*ret = c;
	return 0;
}

/* --- events -------------------------------------------------------------------------------- */
void merge_state_init(struct merge_state *m, bool annotate)
{
	memset(m, 0, sizeof(*m));
	crv_init(&m->rv);
	m->annotate = annotate;
}

void merge_state_release(struct merge_state *m)
{
	crv_release(&m->rv);
}

static void set_rv(json_t *obj, const char *rv)
{
	json_t *meta = json_object_get(obj, "metadata");
	if (json_is_object(meta))
		json_object_set_new(meta, "resourceVersion", json_string(rv));
}

static const char *meta_rv(const json_t *obj)
{
	return json_str(json_object_get(obj, "metadata"), "resourceVersion");
}

/* The partition's resourceVersion carried by a Table event: the Table's own, else its first
 * row's object's. */
static const char *table_rv(const json_t *t)
{
	const char *rv = meta_rv(t);
	if (rv && *rv)
		return rv;
	json_t *row = json_array_get(json_object_get(t, "rows"), 0);
	return meta_rv(json_object_get(row, "object"));
}

static void rewrite_table(struct merge_state *m, json_t *t, const char *pid, const char *crv)
{
	set_rv(t, crv);
	json_t *cols = json_object_get(t, "columnDefinitions");
	if (json_is_array(cols) && json_array_size(cols)) {
		/* Each partition's first event carries the columns; the client must see them once. */
		if (m->columns_sent)
			json_object_set_new(t, "columnDefinitions", json_null());
		else if (m->annotate)
			json_array_append_new(cols, json_pack("{s:s,s:s,s:s,s:s,s:i}", "name", "Partition", "type", "string",
							      "format", "", "description",
							      "The tenant partition storing the tenant", "priority", 0));
		m->columns_sent = true;
	}
	size_t i;
	json_t *row;
	json_array_foreach(json_object_get(t, "rows"), i, row) {
		set_rv(json_object_get(row, "object"), crv);
		json_t *cells = json_object_get(row, "cells");
		if (m->annotate && json_is_array(cells))
			json_array_append_new(cells, json_string(pid));
	}
}

static bool known_type(const char *t)
{
	static const char *const types[] = { "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR" };
	for (size_t i = 0; t && i < sizeof(types) / sizeof(types[0]); i++)
		if (strcmp(t, types[i]) == 0)
			return true;
	return false;
}

int merge_event(struct merge_state *m, const char *pid, const char *line, size_t len, struct buf *out)
{
	size_t a = 0;
	while (a < len && (line[a] == ' ' || line[a] == '\t' || line[a] == '\r' || line[a] == '\n'))
		a++;
	if (a == len)
		return MERGE_SKIP;
	json_t *ev = json_parse_limited(line + a, len - a, EVENT_MAX_DEPTH, NULL);
	const char *type = json_str(ev, "type");
	json_t *obj = json_object_get(ev, "object");
	int r = E_BAD_REQUEST;
	if (!json_is_object(ev) || !known_type(type) || !json_is_object(obj))
		goto out;
	if (strcmp(type, "ERROR") == 0) {
		json_dump_buf(ev, out);
		buf_addch(out, '\n');
		r = MERGE_FINAL;
		goto out;
	}
	bool table = json_str(obj, "kind") && strcmp(json_str(obj, "kind"), "Table") == 0;
	const char *prv = table ? table_rv(obj) : meta_rv(obj);
	if (prv && *prv) {
		if (!crv_partition_rv_ok(prv))
			goto out;
		crv_set(&m->rv, pid, prv);
	}
	char *crv = crv_encode(&m->rv);
	if (table) {
		rewrite_table(m, obj, pid, crv);
	} else {
		if (m->annotate && strcmp(type, "BOOKMARK") != 0)
			json_object_set_new(json_obj_child(json_obj_child(obj, "metadata"), "annotations"), PARTITION_ANNOTATION,
					    json_string(pid));
		json_object_set_new(json_obj_child(obj, "metadata"), "resourceVersion", json_string(crv));
	}
	free(crv);
	json_dump_buf(ev, out);
	buf_addch(out, '\n');
	r = MERGE_OK;
out:
	json_decref(ev);
	return r;
}

void merge_error_event(int err, const char *msg, struct buf *out)
{
	buf_adds(out, "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
		      "\"status\":\"Failure\",\"message\":");
	buf_add_json_str(out, msg, strlen(msg));
	buf_addf(out, ",\"reason\":\"%s\",\"code\":%d}}\n", err_reason(err), err_http_code(err));
}

int merge_lines(struct merge_state *m, const char *pid, struct buf *pending, const char *data, size_t len,
		struct buf *out)
{
	size_t start = 0;
	for (size_t i = 0; i < len; i++) {
		if (data[i] != '\n')
			continue;
		buf_add(pending, data + start, i - start);
		start = i + 1;
		int r = merge_event(m, pid, buf_cstr(pending), pending->len, out);
		buf_reset(pending);
		if (r == MERGE_FINAL)
			return MERGE_FINAL;
		if (r < 0) {
			merge_error_event(E_INTERNAL, "the gateway received a watch event it cannot parse from a partition",
					  out);
			return MERGE_FINAL;
		}
	}
	if (pending->len + (len - start) > MERGE_LINE_MAX) {
		merge_error_event(E_INTERNAL, "a partition sent a watch event larger than the gateway accepts", out);
		buf_reset(pending);
		return MERGE_FINAL;
	}
	buf_add(pending, data + start, len - start);
	return MERGE_OK;
}
