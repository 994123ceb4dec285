/* A container's environment from the pod spec (podenv.h). */
#include "podenv.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ursa/base64.h"
#include "ursa/jsonutil.h"
#include "ursa/kinds.h"
#include "ursa/xalloc.h"

char *podenv_expand(const char *s, podenv_lookup_fn lookup, void *ud)
{
	struct buf out = BUF_INIT;
	buf_adds(&out, "");
	size_t n = strlen(s);
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '$' || i + 1 >= n) {
			buf_add(&out, &s[i], 1);
			continue;
		}
		char next = s[i + 1];
		if (next == '$') {
			buf_adds(&out, "$");
			i++;
			continue;
		}
		if (next == '(') {
			const char *close = memchr(s + i + 2, ')', n - i - 2);
			if (close) {
				size_t len = (size_t)(close - (s + i + 2));
				const char *v = lookup ? lookup(ud, s + i + 2, len) : NULL;
				if (v)
					buf_adds(&out, v);
				else
					buf_add(&out, s + i, len + 3);
				i = (size_t)(close - s);
				continue;
			}
		}
		/* $( with no closing ) or $ before anything else: kept, the next character read as usual */
		buf_adds(&out, "$");
	}
	return buf_detach(&out, NULL);
}

bool podenv_valid_name(const char *name)
{
	if (!name || !*name)
		return false;
	for (const char *p = name; *p; p++) {
		bool alpha = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '-' || *p == '.' || *p == '_';
		if (!alpha && !(p != name && *p >= '0' && *p <= '9'))
			return false;
	}
	return true;
}

/* The key of "<prefix>['key']" in path, or NULL. New string. */
static char *subscript(const char *path, const char *prefix)
{
	size_t pl = strlen(prefix), n = strlen(path);
	if (strncmp(path, prefix, pl) != 0 || n < pl + 4 || strncmp(path + pl, "['", 2) != 0 ||
	    strcmp(path + n - 2, "']") != 0)
		return NULL;
	return xstrndup(path + pl + 2, n - pl - 4);
}

int podenv_field(const json_t *pod, const char *path, const struct podenv_ips *ips, char **ret, int *ret_kind)
{
	static const struct {
		const char *path, *json;
	} plain[] = {
		{ "metadata.name", "metadata.name" },
		{ "metadata.namespace", "metadata.namespace" },
		{ "metadata.uid", "metadata.uid" },
		{ "spec.nodeName", "spec.nodeName" },
		{ "spec.serviceAccountName", "spec.serviceAccountName" },
	};
	*ret = NULL;
	if (!path)
		return -1;
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
		if (strcmp(path, plain[i].path) == 0) {
			const char *v = json_path_str(pod, plain[i].json);
			*ret = xstrdup(v ? v : "");
			return 0;
		}
	if (strcmp(path, "status.hostIP") == 0 || strcmp(path, "status.hostIPs") == 0) {
		*ret = xstrdup(ips && ips->host_ip ? ips->host_ip : "");
		return 0;
	}
	if (strcmp(path, "status.podIP") == 0 || strcmp(path, "status.podIPs") == 0) {
		bool many = path[strlen(path) - 1] == 's';
		const char *v = ips ? (many ? ips->pod_ips : ips->pod_ip) : NULL;
		if (!v) {
			if (ret_kind)
				*ret_kind = many ? RT_ENV_POD_IPS : RT_ENV_POD_IP;
			return 1;
		}
		*ret = xstrdup(v);
		return 0;
	}
	static const char *const maps[] = { "metadata.labels", "metadata.annotations" };
	for (size_t i = 0; i < 2; i++) {
		char *key = subscript(path, maps[i]);
		if (key) {
			const char *v = json_string_value(json_object_get(json_path(pod, maps[i]), key));
			*ret = xstrdup(v ? v : "");
			free(key);
			return 0;
		}
	}
	return -1;
}

int podenv_res_milli(const json_t *c, const char *section, const char *name, long long *ret)
{
	const json_t *v = json_object_get(json_object_get(json_object_get(c, "resources"), section), name);
	*ret = 0;
	if (!v || json_is_null(v))
		return 0;
	if (json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) < (1LL << 40)) {
		*ret = json_integer_value(v) * 1000;
		return 0;
	}
	if (!json_is_string(v) || quantity_parse_milli(json_string_value(v), ret) != 0 || *ret < 0)
		return -1;
	return 0;
}

int podenv_resource(const json_t *c, const char *resource, const char *divisor, const struct podenv_alloc *alloc,
		    char **ret, struct buf *err)
{
	*ret = NULL;
	static const char *const names[] = { "cpu", "memory", "ephemeral-storage" };
	const char *dot = resource ? strchr(resource, '.') : NULL;
	if (!dot) {
		buf_addf(err, "unsupported container resource : \"%s\"", resource ? resource : "");
		return -1;
	}
	size_t sl = (size_t)(dot - resource);
	bool limits = sl == 6 && strncmp(resource, "limits", 6) == 0;
	bool requests = sl == 8 && strncmp(resource, "requests", 8) == 0;
	int which = -1;
	for (int i = 0; i < 3; i++)
		if (strcmp(dot + 1, names[i]) == 0)
			which = i;
	if ((!limits && !requests) || which < 0) {
		buf_addf(err, "unsupported container resource : \"%s\"", resource);
		return -1;
	}
	long long div_m = 1000;
	if (divisor && *divisor && (quantity_parse_milli(divisor, &div_m) != 0 || div_m <= 0)) {
		buf_addf(err, "invalid divisor \"%s\" for resource \"%s\"", divisor, resource);
		return -1;
	}
	long long v_m;
	if (podenv_res_milli(c, limits ? "limits" : "requests", names[which], &v_m) != 0) {
		buf_addf(err, "resource \"%s\" does not parse", resource);
		return -1;
	}
	if (limits && v_m == 0 && alloc) {
		if (which == 0)
			v_m = alloc->cpu_m;
		else
			v_m = (which == 1 ? alloc->mem_bytes : alloc->storage_bytes) * 1000;
	}
	long long out;
	if (which == 0) {
		out = (long long)ceil((double)v_m / (double)div_m); /* millicores over the divisor's */
	} else {
		long long bytes = (v_m + 999) / 1000, div = (div_m + 999) / 1000;
		out = (long long)ceil((double)bytes / (double)(div ? div : 1));
	}
	*ret = xasprintf("%lld", out);
	return 0;
}

/* ------------------------------------------------------------------------------------------ */

struct envlist {
	struct rt_env *v;
	size_t n, cap;
};

static void env_add(struct envlist *l, const char *name, char *value, unsigned char from)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 16;
		l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	l->v[l->n++] = (struct rt_env){ xstrdup(name), value, from };
}

static void env_free(struct rt_env *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].name);
		free(v[i].value);
	}
	free(v);
}

/* The string value of data[key] (configmap: data or binaryData; secret: data, base64), new. */
static char *object_value(const json_t *obj, bool secret, const char *key, bool *found)
{
	*found = false;
	const char *s = json_string_value(json_object_get(json_object_get(obj, "data"), key));
	if (s && secret) {
		struct buf b = BUF_INIT;
		if (base64_decode(&b, s, strlen(s), 0) != 0) {
			buf_release(&b);
			return NULL;
		}
		*found = true;
		return buf_detach(&b, NULL);
	}
	if (!s && !secret) {
		s = json_string_value(json_object_get(json_object_get(obj, "binaryData"), key));
		if (s) {
			struct buf b = BUF_INIT;
			if (base64_decode(&b, s, strlen(s), 0) != 0) {
				buf_release(&b);
				return NULL;
			}
			*found = true;
			return buf_detach(&b, NULL);
		}
	}
	if (!s)
		return NULL;
	*found = true;
	return xstrdup(s);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* GETs the object; NULL and false when it is missing and optional, NULL and true with a message
 * on error. */
static const json_t *fetch(const struct podenv_src *src, bool secret, const char *name, bool optional, bool *fail,
			   struct buf *err)
{
	int code = 404;
	*fail = false;
	const json_t *obj = src && src->get && name && *name ? src->get(src->ud, secret, name, &code) : NULL;
	if (obj)
		return obj;
	if (code == 404 && optional)
		return NULL;
	*fail = true;
	if (code == 404)
		buf_addf(err, "%s \"%s\" not found", secret ? "secret" : "configmap", name ? name : "");
	else
		buf_addf(err, "reading %s \"%s\": error %d", secret ? "secret" : "configmap", name ? name : "", code);
	return NULL;
}

static int env_from(const json_t *pod, const json_t *c, const struct podenv_src *src, struct envlist *l,
		    struct buf *err)
{
	size_t i;
	const json_t *e;
	json_array_foreach(json_object_get(c, "envFrom"), i, e) {
		const json_t *ref = json_object_get(e, "configMapRef");
		bool secret = false;
		if (!ref) {
			ref = json_object_get(e, "secretRef");
			secret = true;
		}
		if (!json_is_object(ref))
			continue;
		const char *name = json_str(ref, "name"), *prefix = json_str(e, "prefix");
		bool fail;
		const json_t *obj = fetch(src, secret, name, json_is_true(json_object_get(ref, "optional")), &fail, err);
		if (fail)
			return -1;
		const json_t *data = json_object_get(obj, "data");
		size_t nkeys = json_object_size(data) + (secret ? 0 : json_object_size(json_object_get(obj, "binaryData")));
		char **bad = xcalloc(nkeys + 1, sizeof(*bad)), **keys = xcalloc(nkeys + 1, sizeof(*keys));
		size_t nbad = 0, nk = 0;
		const char *key;
		const json_t *v;
		json_object_foreach((json_t *)data, key, v)
			keys[nk++] = (char *)key;
		if (!secret)
			json_object_foreach(json_object_get(obj, "binaryData"), key, v)
				if (!json_object_get(data, key))
					keys[nk++] = (char *)key;
		qsort(keys, nk, sizeof(*keys), cmp_str); /* a stable order for the same object */
		for (size_t k = 0; k < nk; k++) {
			char *full = xasprintf("%s%s", prefix ? prefix : "", keys[k]);
			bool found;
			char *val = podenv_valid_name(full) ? object_value(obj, secret, keys[k], &found) : NULL;
			if (val)
				env_add(l, full, val, RT_ENV_RESOLVED);
			else
				bad[nbad++] = keys[k];
			free(full);
		}
		if (nbad && src && src->invalid_keys) {
			struct buf b = BUF_INIT;
			for (size_t k = 0; k < nbad; k++)
				buf_addf(&b, "%s%s", k ? ", " : "", bad[k]);
			src->invalid_keys(src->ud, secret ? "secret" : "configMap", name, buf_cstr(&b));
			buf_release(&b);
		}
		free(bad);
		free(keys);
	}
	(void)pod;
	return 0;
}

static int env_entry(const json_t *pod, const json_t *c, const json_t *e, const struct podenv_ips *ips,
		     const struct podenv_alloc *alloc, const struct podenv_src *src, struct envlist *l, struct buf *err)
{
	const char *name = json_str(e, "name");
	const json_t *from = json_object_get(e, "valueFrom");
	if (!from || json_is_null(from)) {
		const char *value = json_str(e, "value");
		env_add(l, name, xstrdup(value ? value : ""), RT_ENV_LITERAL);
		return 0;
	}
	const json_t *ref;
	const char *ns = json_path_str(pod, "metadata.namespace");
	if ((ref = json_object_get(from, "configMapKeyRef")) || (ref = json_object_get(from, "secretKeyRef"))) {
		bool secret = ref == json_object_get(from, "secretKeyRef");
		bool optional = json_is_true(json_object_get(ref, "optional")), fail;
		const char *obj_name = json_str(ref, "name"), *key = json_str(ref, "key");
		const json_t *obj = fetch(src, secret, obj_name, optional, &fail, err);
		if (fail)
			return -1;
		if (!obj)
			return 0;
		bool found;
		char *val = object_value(obj, secret, key ? key : "", &found);
		if (!found) {
			free(val);
			if (optional)
				return 0;
			buf_addf(err, "couldn't find key %s in %s %s/%s", key ? key : "", secret ? "Secret" : "ConfigMap",
				 ns ? ns : "", obj_name);
			return -1;
		}
		env_add(l, name, val, RT_ENV_RESOLVED);
		return 0;
	}
	if ((ref = json_object_get(from, "fieldRef"))) {
		char *val;
		int kind = 0;
		int rc = podenv_field(pod, json_str(ref, "fieldPath"), ips, &val, &kind);
		if (rc < 0) {
			buf_addf(err, "unsupported fieldPath: %s", json_str(ref, "fieldPath") ? json_str(ref, "fieldPath") : "");
			return -2;
		}
		env_add(l, name, val, rc == 1 ? (unsigned char)kind : RT_ENV_RESOLVED);
		return 0;
	}
	if ((ref = json_object_get(from, "resourceFieldRef"))) {
		const char *cname = json_str(ref, "containerName");
		const json_t *target = c;
		if (cname && *cname && strcmp(cname, json_str(c, "name") ? json_str(c, "name") : "") != 0) {
			size_t i;
			const json_t *o;
			target = NULL;
			json_array_foreach(json_path(pod, "spec.containers"), i, o)
				if (json_str(o, "name") && strcmp(json_str(o, "name"), cname) == 0)
					target = o;
			if (!target) {
				buf_addf(err, "container %s not found", cname);
				return -2;
			}
		}
		const json_t *d = json_object_get(ref, "divisor");
		char dbuf[32] = "";
		if (json_is_integer(d))
			snprintf(dbuf, sizeof(dbuf), "%lld", (long long)json_integer_value(d));
		char *val;
		if (podenv_resource(target, json_str(ref, "resource"), json_is_string(d) ? json_string_value(d) : dbuf, alloc,
				    &val, err) != 0)
			return -2;
		env_add(l, name, val, RT_ENV_RESOLVED);
		return 0;
	}
	buf_addf(err, "env \"%s\": valueFrom names no source", name);
	return -2;
}

int podenv_build(const json_t *pod, const json_t *c, const struct podenv_ips *ips, const struct podenv_alloc *alloc,
		 const struct podenv_src *src, struct rt_container *rc, struct buf *err)
{
	struct envlist l = { 0 };
	int res = env_from(pod, c, src, &l, err);
	if (res != 0)
		goto fail;
	size_t i;
	const json_t *e;
	json_array_foreach(json_object_get(c, "env"), i, e) {
		const char *name = json_str(e, "name");
		if (!name || !*name)
			continue;
		if ((res = env_entry(pod, c, e, ips, alloc, src, &l, err)) != 0)
			goto fail;
	}
	env_free(rc->env, rc->nenv);
	rc->env = l.v ? l.v : xcalloc(1, sizeof(*rc->env));
	rc->nenv = l.n;
	rc->env_pending = true;
	bool deferred = false;
	for (size_t k = 0; k < l.n; k++)
		if (l.v[k].from == RT_ENV_POD_IP || l.v[k].from == RT_ENV_POD_IPS)
			deferred = true;
	if (!deferred)
		podenv_finish(rc, NULL, NULL);
	return 0;
fail:
	env_free(l.v, l.n);
	return res;
}

struct scope {
	const struct rt_env *v;
	size_t n; /* the variables visible: v[0..n), the last of a name wins */
};

static const char *scope_lookup(void *ud, const char *name, size_t len)
{
	const struct scope *s = ud;
	for (size_t i = s->n; i-- > 0;)
		if (s->v[i].name && strlen(s->v[i].name) == len && memcmp(s->v[i].name, name, len) == 0)
			return s->v[i].value ? s->v[i].value : "";
	return NULL;
}

static void expand_strv(char **v, struct scope *s)
{
	for (size_t i = 0; v && v[i]; i++) {
		char *x = podenv_expand(v[i], scope_lookup, s);
		free(v[i]);
		v[i] = x;
	}
}

void podenv_finish(struct rt_container *rc, const char *pod_ip, const char *pod_ips)
{
	if (!rc->env_pending)
		return;
	for (size_t i = 0; i < rc->nenv; i++) {
		struct rt_env *e = &rc->env[i];
		if (e->from == RT_ENV_POD_IP || e->from == RT_ENV_POD_IPS) {
			free(e->value);
			e->value = xstrdup(e->from == RT_ENV_POD_IP ? (pod_ip ? pod_ip : "") :
								      (pod_ips ? pod_ips : pod_ip ? pod_ip : ""));
			e->from = RT_ENV_RESOLVED;
		} else if (e->from == RT_ENV_LITERAL) {
			struct scope s = { rc->env, i };
			char *x = podenv_expand(e->value ? e->value : "", scope_lookup, &s);
			free(e->value);
			e->value = x;
			e->from = RT_ENV_RESOLVED;
		}
	}
	/* the last definition of a name wins, at the place of its first */
	size_t n = 0;
	for (size_t i = 0; i < rc->nenv; i++) {
		size_t j;
		for (j = 0; j < n; j++)
			if (strcmp(rc->env[j].name, rc->env[i].name) == 0)
				break;
		if (j < n) {
			free(rc->env[j].value);
			rc->env[j].value = rc->env[i].value;
			free(rc->env[i].name);
		} else {
			rc->env[n++] = rc->env[i];
		}
	}
	rc->nenv = n;
	struct scope all = { rc->env, n };
	expand_strv(rc->command, &all);
	expand_strv(rc->args, &all);
	rc->env_pending = false;
}

static char **strv_copy(char *const *v)
{
	if (!v)
		return NULL;
	size_t n = 0;
	while (v[n])
		n++;
	char **d = xcalloc(n + 1, sizeof(*d));
	for (size_t i = 0; i < n; i++)
		d[i] = xstrdup(v[i]);
	return d;
}

static void strv_release(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

const struct rt_container *podenv_finished(const struct rt_container *rc, const char *pod_ip, struct podenv_copy *tmp)
{
	memset(tmp, 0, sizeof(*tmp));
	if (!rc->env_pending)
		return rc;
	tmp->c = *rc;
	tmp->c.env = xcalloc(rc->nenv ? rc->nenv : 1, sizeof(*tmp->c.env));
	for (size_t i = 0; i < rc->nenv; i++)
		tmp->c.env[i] = (struct rt_env){ xstrdup(rc->env[i].name), rc->env[i].value ? xstrdup(rc->env[i].value) : NULL,
						 rc->env[i].from };
	tmp->c.command = strv_copy(rc->command);
	tmp->c.args = strv_copy(rc->args);
	podenv_finish(&tmp->c, pod_ip, pod_ip);
	return &tmp->c;
}

void podenv_copy_release(struct podenv_copy *tmp)
{
	env_free(tmp->c.env, tmp->c.nenv);
	strv_release(tmp->c.command);
	strv_release(tmp->c.args);
	memset(tmp, 0, sizeof(*tmp));
}
