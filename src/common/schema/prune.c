/* Field validation against the type tables: unknown members pruned, duplicate keys found.
 * Paths follow Kubernetes' strict decoding errors: members joined by '.', array elements as
 * "[i]" ("spec.template.spec.containers[0].bar"). */
#include "ursa/schema.h"
#include "ursa/buf.h"
#include <jansson.h>
#include <string.h>

static void buf_truncate(struct buf *b, size_t len)
{
	if (b->ptr && len < b->len) {
		b->len = len;
		b->ptr[len] = '\0';
	}
}

static const struct pb_field *find_field(const struct pb_msg *msg, const char *name, int depth)
{
	if (!msg || depth > 8) /* inline chains are short; the bound only guards a cyclic table */
		return NULL;
	for (size_t i = 0; i < msg->nfields; i++) {
		const struct pb_field *f = &msg->fields[i];
		if (f->type == PT_INLINE) {
			const struct pb_field *g = find_field(f->sub, name, depth + 1);
			if (g)
				return g;
		} else if (f->name && strcmp(f->name, name) == 0) {
			return f;
		}
	}
	return NULL;
}

/* Messages that carry Go's TypeMeta (apiVersion, kind) besides the roots: claims embedded in a
 * StatefulSet's volumeClaimTemplates. PodTemplateSpec and JobTemplateSpec do not. */
static bool has_type_meta(const struct pb_msg *msg, int depth)
{
	return depth == 0 || msg == &pm_persistent_volume_claim;
}

static void add_path(json_t *ret_paths, const struct buf *path, size_t *count)
{
	if (ret_paths && json_array_size(ret_paths) < SCHEMA_PRUNE_MAX_PATHS)
		json_array_append_new(ret_paths, json_string(buf_cstr(path)));
	(*count)++;
}

static void prune_obj(json_t *obj, const struct pb_msg *msg, int depth, struct buf *path, json_t *ret_paths,
		      size_t *count);

static void prune_value(json_t *v, const struct pb_field *f, int depth, struct buf *path, json_t *ret_paths,
			size_t *count)
{
	if (f->type != PT_MSG || !f->sub)
		return;
	if (!(f->flags & PF_REPEATED)) {
		if (json_is_object(v))
			prune_obj(v, f->sub, depth + 1, path, ret_paths, count);
		return;
	}
	if (!json_is_array(v))
		return;
	size_t base = path->len, i;
	json_t *e;
	json_array_foreach(v, i, e) {
		if (!json_is_object(e))
			continue;
		buf_addf(path, "[%zu]", i);
		prune_obj(e, f->sub, depth + 1, path, ret_paths, count);
		buf_truncate(path, base);
	}
}

static void prune_obj(json_t *obj, const struct pb_msg *msg, int depth, struct buf *path, json_t *ret_paths,
		      size_t *count)
{
	if (depth >= SCHEMA_PRUNE_MAX_DEPTH)
		return;
	size_t base = path->len;
	const char *key;
	json_t *v;
	void *it_tmp;
	json_object_foreach_safe(obj, it_tmp, key, v) {
		if (base)
			buf_addch(path, '.');
		buf_adds(path, key);
		const struct pb_field *f = find_field(msg, key, 0);
		if (f) {
			prune_value(v, f, depth, path, ret_paths, count);
		} else if (!(has_type_meta(msg, depth) && (strcmp(key, "apiVersion") == 0 || strcmp(key, "kind") == 0))) {
			add_path(ret_paths, path, count);
			json_object_del(obj, key);
		}
		buf_truncate(path, base);
	}
}

size_t schema_prune(json_t *obj, const struct pb_msg *msg, json_t *ret_paths)
{
	size_t count = 0;
	if (!json_is_object(obj) || !msg)
		return 0;
	struct buf path = BUF_INIT;
	prune_obj(obj, msg, 0, &path, ret_paths, &count);
	buf_release(&path);
	return count;
}

/* Duplicate keys ---------------------------------------------------------------------------------
 * A small recursive-descent reader over the text: it only tracks where it is (the path) and which
 * keys each object has had; jansson does the real parsing. */
struct scan {
	const char *p, *end;
	struct buf path;
	json_t *ret_paths;
	size_t count;
	bool failed;
};

static void skip_ws(struct scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

/* At a '"': moves past the closing quote; *ret_start and *ret_len delimit the raw content and
 * *ret_escaped says whether it has backslashes. */
static bool scan_string(struct scan *s, const char **ret_start, size_t *ret_len, bool *ret_escaped)
{
	const char *start = ++s->p;
	bool esc = false;
	while (s->p < s->end && *s->p != '"') {
		if (*s->p == '\\') {
			esc = true;
			s->p++;
		}
		s->p++;
	}
	if (s->p >= s->end)
		return false;
	*ret_start = start;
	*ret_len = (size_t)(s->p - start);
	*ret_escaped = esc;
	s->p++;
	return true;
}

static void scan_value(struct scan *s, int depth);

static void scan_object(struct scan *s, int depth)
{
	json_t *seen = json_object();
	size_t base = s->path.len;
	s->p++;
	skip_ws(s);
	if (s->p < s->end && *s->p == '}') {
		s->p++;
		goto out;
	}
	for (;;) {
		skip_ws(s);
		const char *k;
		size_t klen;
		bool esc;
		if (s->p >= s->end || *s->p != '"' || !scan_string(s, &k, &klen, &esc)) {
			s->failed = true;
			goto out;
		}
		json_t *decoded = NULL;
		if (esc) {
			/* the quoted key, unescaped by jansson */
			decoded = json_loadb(k - 1, klen + 2, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
			if (!json_is_string(decoded)) {
				json_decref(decoded);
				s->failed = true;
				goto out;
			}
			k = json_string_value(decoded);
			klen = json_string_length(decoded);
		}
		if (base)
			buf_addch(&s->path, '.');
		buf_add(&s->path, k, klen);
		if (json_object_getn(seen, k, klen)) {
			if (s->ret_paths && json_array_size(s->ret_paths) < SCHEMA_PRUNE_MAX_PATHS)
				json_array_append_new(s->ret_paths, json_stringn(s->path.ptr, s->path.len));
			s->count++;
		} else {
			json_object_setn_new(seen, k, klen, json_true());
		}
		json_decref(decoded);
		skip_ws(s);
		if (s->p >= s->end || *s->p != ':') {
			s->failed = true;
			goto out;
		}
		s->p++;
		scan_value(s, depth + 1);
		buf_truncate(&s->path, base);
		if (s->failed)
			goto out;
		skip_ws(s);
		if (s->p < s->end && *s->p == ',') {
			s->p++;
			continue;
		}
		if (s->p < s->end && *s->p == '}') {
			s->p++;
			goto out;
		}
		s->failed = true;
		goto out;
	}
out:
	buf_truncate(&s->path, base);
	json_decref(seen);
}

static void scan_array(struct scan *s, int depth)
{
	size_t base = s->path.len;
	s->p++;
	skip_ws(s);
	if (s->p < s->end && *s->p == ']') {
		s->p++;
		return;
	}
	for (size_t i = 0;; i++) {
		buf_addf(&s->path, "[%zu]", i);
		scan_value(s, depth + 1);
		buf_truncate(&s->path, base);
		if (s->failed)
			return;
		skip_ws(s);
		if (s->p < s->end && *s->p == ',') {
			s->p++;
			continue;
		}
		if (s->p < s->end && *s->p == ']') {
			s->p++;
			return;
		}
		s->failed = true;
		return;
	}
}

static void scan_value(struct scan *s, int depth)
{
	skip_ws(s);
	if (s->p >= s->end || depth > SCHEMA_PRUNE_MAX_DEPTH) {
		s->failed = true;
		return;
	}
	const char *k;
	size_t klen;
	bool esc;
	switch (*s->p) {
	case '{':
		scan_object(s, depth);
		break;
	case '[':
		scan_array(s, depth);
		break;
	case '"':
		if (!scan_string(s, &k, &klen, &esc))
			s->failed = true;
		break;
	default: {
		/* number, true, false, null: up to the next delimiter */
		const char *start = s->p;
		while (s->p < s->end && !strchr(",]}: \t\r\n\"{[", *s->p))
			s->p++;
		if (s->p == start)
			s->failed = true;
		break;
	}
	}
}

size_t schema_json_duplicates(const char *text, size_t len, json_t *ret_paths)
{
	struct scan s = { .p = text, .end = text + len, .path = BUF_INIT, .ret_paths = ret_paths };
	if (text && len)
		scan_value(&s, 0);
	buf_release(&s.path);
	return s.count;
}
