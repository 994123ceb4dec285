/* Pod volumes on the node: see volumes.h. */
#include "volumes.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include "atomicdir.h"
#include "runtime_common.h"
#include "ursa/base64.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/kinds.h"
#include "ursa/xalloc.h"

#define MAX_FILES 1024
#define DEFAULT_MODE 0644
#define TOKEN_DEFAULT_S 3600
#define TOKEN_MIN_S 600
#define SA_TOKEN_S 3607 /* the default volume's, as Kubernetes' admission sets it */

struct files {
	struct atomic_file v[MAX_FILES];
	size_t n;
};

static void files_release(struct files *f)
{
	atomic_files_release(f->v, f->n);
	f->n = 0;
}

static int add_file(struct files *f, const char *path, const char *data, size_t len, mode_t mode, struct buf *err)
{
	if (f->n == MAX_FILES) {
		buf_addf(err, "more than %d files in one volume", MAX_FILES);
		return E_INVALID;
	}
	if (!atomicdir_path_ok(path)) {
		buf_addf(err, "invalid path \"%s\"", path ? path : "");
		return E_INVALID;
	}
	struct atomic_file *a = &f->v[f->n++];
	a->path = xstrdup(path);
	a->data = xmalloc(len + 1);
	memcpy(a->data, data, len);
	a->data[len] = '\0';
	a->len = len;
	a->mode = mode;
	return 0;
}

/* A mode field (defaultMode, mode): def when absent; -1 when out of 0..0777. */
static long mode_of(const json_t *v, long def)
{
	if (!v || json_is_null(v))
		return def;
	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 0777)
		return -1;
	return (long)json_integer_value(v);
}

void kl_volumes_map_text(const json_t *map, struct buf *out)
{
	const char *keys[512];
	size_t n = 0;
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)map, k, v)
		if (n < 512 && json_is_string(v))
			keys[n++] = k;
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; j--) {
			const char *t = keys[j];
			keys[j] = keys[j - 1];
			keys[j - 1] = t;
		}
	for (size_t i = 0; i < n; i++) {
		buf_addf(out, "%s=\"", keys[i]);
		for (const char *s = json_string_value(json_object_get(map, keys[i])); *s; s++) {
			if (*s == '"' || *s == '\\')
				buf_addf(out, "\\%c", *s);
			else if (*s == '\n')
				buf_adds(out, "\\n");
			else if (*s == '\t')
				buf_adds(out, "\\t");
			else
				buf_addch(out, *s);
		}
		buf_adds(out, "\"\n");
	}
}

/* The value of key in a configmap (data, then binaryData) or a secret (data, base64): 0 with the
 * bytes appended to out, 1 when there is no such key, -1 when it does not decode. */
static int object_value(const json_t *obj, bool secret, const char *key, struct buf *out)
{
	const json_t *v = json_object_get(json_object_get(obj, "data"), key);
	bool b64 = secret;
	if (!json_is_string(v) && !secret) {
		v = json_object_get(json_object_get(obj, "binaryData"), key);
		b64 = true;
	}
	if (!json_is_string(v))
		return 1;
	if (!b64) {
		buf_add(out, json_string_value(v), json_string_length(v));
		return 0;
	}
	return base64_decode(out, json_string_value(v), json_string_length(v), 0) < 0 ? -1 : 0;
}

/* Sorted keys of a configmap's data and binaryData or a secret's data, into keys (borrowed). */
static size_t object_keys(const json_t *obj, bool secret, const char **keys, size_t max)
{
	size_t n = 0;
	const char *k;
	json_t *v;
	json_object_foreach(json_object_get(obj, "data"), k, v)
		if (n < max)
			keys[n++] = k;
	if (!secret)
		json_object_foreach(json_object_get(obj, "binaryData"), k, v)
			if (n < max)
				keys[n++] = k;
	return n;
}

/* A configMap or secret (volume or projection): src holds name (or secretName), items, optional. */
static int add_object(struct files *f, const struct kl_vol_src *s, bool secret, const json_t *src, long def_mode,
		      struct buf *err)
{
	const char *name = json_str(src, secret ? "secretName" : "name");
	if (!name && secret)
		name = json_str(src, "name");
	bool optional = json_is_true(json_object_get(src, "optional"));
	const char *kind = secret ? "secret" : "configmap";
	if (!name || !*name) {
		buf_addf(err, "a %s volume source names no %s", kind, kind);
		return E_INVALID;
	}
	int code = 0;
	const json_t *obj = s->get ? s->get(s->ud, secret, name, &code) : NULL;
	if (!obj) {
		if (code == 404 && optional)
			return 0;
		if (code == 404)
			buf_addf(err, "%s \"%s\" not found", kind, name);
		else
			buf_addf(err, "cannot read %s \"%s\": HTTP %d", kind, name, code);
		return E_NOT_FOUND;
	}
	const json_t *items = json_object_get(src, "items");
	struct buf val = BUF_INIT;
	int rc = 0;
	if (json_array_size(items) > 0) {
		size_t i;
		const json_t *it;
		json_array_foreach(items, i, it) {
			const char *key = json_str(it, "key"), *path = json_str(it, "path");
			long mode = mode_of(json_object_get(it, "mode"), def_mode);
			if (!key || !path || mode < 0) {
				buf_addf(err, "%s \"%s\": items[%zu] needs a key, a path and a mode from 0 to 0777", kind,
					 name, i);
				rc = E_INVALID;
				break;
			}
			buf_reset(&val);
			int vr = object_value(obj, secret, key, &val);
			if (vr == 1 && optional)
				continue;
			if (vr != 0) {
				buf_addf(err, vr == 1 ? "configmap references non-existent config key: %s"
						      : "key %s of %s does not decode", key, name);
				if (secret && vr == 1) {
					buf_reset(err);
					buf_addf(err, "references non-existent secret key: %s", key);
				}
				rc = E_NOT_FOUND;
				break;
			}
			if ((rc = add_file(f, path, val.ptr ? val.ptr : "", val.len, (mode_t)mode, err)) != 0)
				break;
		}
	} else {
		const char *keys[MAX_FILES];
		size_t n = object_keys(obj, secret, keys, MAX_FILES);
		for (size_t i = 0; i < n && !rc; i++) {
			buf_reset(&val);
			if (object_value(obj, secret, keys[i], &val) != 0)
				continue;
			rc = add_file(f, keys[i], val.ptr ? val.ptr : "", val.len, (mode_t)def_mode, err);
		}
	}
	buf_release(&val);
	return rc;
}

/* The container named name in pod (NULL if none). */
static const json_t *container_named(const json_t *pod, const char *name)
{
	size_t i;
	const json_t *c;
	json_array_foreach(json_path(pod, "spec.containers"), i, c)
		if (name && json_str(c, "name") && !strcmp(json_str(c, "name"), name))
			return c;
	return NULL;
}

/* downwardAPI items (volume or projection). */
static int add_downward(struct files *f, const json_t *pod, const struct kl_vol_src *s, const json_t *items,
			long def_mode, struct buf *err)
{
	size_t i;
	const json_t *it;
	json_array_foreach(items, i, it) {
		const char *path = json_str(it, "path");
		long mode = mode_of(json_object_get(it, "mode"), def_mode);
		const json_t *fr = json_object_get(it, "fieldRef"), *rr = json_object_get(it, "resourceFieldRef");
		if (!path || mode < 0 || (!fr == !rr)) {
			buf_addf(err, "downwardAPI items[%zu] needs a path, a mode from 0 to 0777 and one of fieldRef, "
				      "resourceFieldRef", i);
			return E_INVALID;
		}
		char *val = NULL;
		if (fr) {
			const char *fp = json_str(fr, "fieldPath");
			struct buf m = BUF_INIT;
			if (fp && (!strcmp(fp, "metadata.labels") || !strcmp(fp, "metadata.annotations"))) {
				kl_volumes_map_text(json_path(pod, fp), &m);
				val = xstrdup(buf_cstr(&m));
			} else {
				int kind = 0;
				struct podenv_ips none = { "", "", "" };
				if (!fp || podenv_field(pod, fp, s->ips ? s->ips : &none, &val, &kind) != 0) {
					free(val);
					buf_addf(err, "downwardAPI: unsupported fieldPath \"%s\"", fp ? fp : "");
					buf_release(&m);
					return E_INVALID;
				}
			}
			buf_release(&m);
		} else {
			const json_t *c = container_named(pod, json_str(rr, "containerName"));
			struct podenv_alloc none = { 0, 0, 0 };
			if (!c || podenv_resource(c, json_str(rr, "resource"), json_str(rr, "divisor"),
						  s->alloc ? s->alloc : &none, &val, err) != 0) {
				if (!c)
					buf_addf(err, "downwardAPI: resourceFieldRef names no container of the pod");
				free(val);
				return E_INVALID;
			}
		}
		int rc = add_file(f, path, val, strlen(val), (mode_t)mode, err);
		free(val);
		if (rc)
			return rc;
	}
	return 0;
}

/* A service-account token for audience, from the cache file when it has more than 20% of its
 * life left, else requested (and cached). */
static int add_token(struct files *f, const char *dir, const char *vol, size_t idx, const struct kl_vol_src *s,
		     const json_t *src, long mode, bool optional, struct buf *err)
{
	const char *path = json_str(src, "path"), *aud = json_str(src, "audience");
	const json_t *ev = json_object_get(src, "expirationSeconds");
	long long exp_s = json_is_integer(ev) ? json_integer_value(ev) : TOKEN_DEFAULT_S;
	if (!path || exp_s < TOKEN_MIN_S || exp_s > (1LL << 32)) {
		buf_addf(err, "serviceAccountToken needs a path and expirationSeconds of at least %d", TOKEN_MIN_S);
		return E_INVALID;
	}
	char *tdir = xasprintf("%s/.tokens", dir), *cache = xasprintf("%s/%s-%zu.json", tdir, vol, idx);
	json_t *c = json_load_file(cache, 0, NULL);
	const char *tok = json_str(c, "token");
	int64_t iat = json_integer_value(json_object_get(c, "iat")), exp = json_integer_value(json_object_get(c, "exp"));
	bool fresh = tok && exp > iat && s->now < iat + (exp - iat) * 8 / 10 && json_str(c, "audience") &&
		     !strcmp(json_str(c, "audience"), aud ? aud : "") &&
		     json_integer_value(json_object_get(c, "expirationSeconds")) == exp_s;
	int rc = 0;
	if (fresh) {
		rc = add_file(f, path, tok, strlen(tok), (mode_t)mode, err);
	} else if (s->token) {
		char *t = NULL;
		int64_t texp = 0;
		struct buf terr = BUF_INIT;
		if (s->token(s->ud, aud, exp_s, &t, &texp, &terr) == 0) {
			json_t *nc = json_pack("{s:s,s:I,s:I,s:s,s:I}", "token", t, "iat", (json_int_t)s->now, "exp",
					       (json_int_t)texp, "audience", aud ? aud : "", "expirationSeconds",
					       (json_int_t)exp_s);
			rt_mkdir_p(tdir, 0700);
			char *tmp = xasprintf("%s.tmp", cache);
			if (json_dump_file(nc, tmp, JSON_COMPACT) == 0) {
				chmod(tmp, 0600);
				rename(tmp, cache);
			}
			free(tmp);
			json_decref(nc);
			rc = add_file(f, path, t, strlen(t), (mode_t)mode, err);
			free(t);
		} else if (tok && exp > s->now) {
			rc = add_file(f, path, tok, strlen(tok), (mode_t)mode, err); /* old but still valid */
		} else if (!optional) {
			buf_addf(err, "cannot get a service account token: %s", buf_cstr(&terr));
			rc = E_NOT_FOUND;
		}
		buf_release(&terr);
	}
	json_decref(c);
	free(tdir);
	free(cache);
	return rc;
}

/* The files of a projected volume (sources). sa_default: the default service-account volume,
 * whose sources are optional. */
static int add_projected(struct files *f, const char *dir, const char *vol, const json_t *pod,
			 const struct kl_vol_src *s, const json_t *proj, bool sa_default, struct buf *err)
{
	long def = mode_of(json_object_get(proj, "defaultMode"), DEFAULT_MODE);
	if (def < 0) {
		buf_adds(err, "defaultMode must be from 0 to 0777");
		return E_INVALID;
	}
	size_t i;
	const json_t *src;
	json_array_foreach(json_object_get(proj, "sources"), i, src) {
		int rc = 0;
		const json_t *x;
		if ((x = json_object_get(src, "configMap")) || (x = json_object_get(src, "secret"))) {
			bool secret = json_object_get(src, "secret") != NULL;
			rc = add_object(f, s, secret, x, def, err);
			if (rc == E_NOT_FOUND && sa_default) {
				buf_reset(err);
				rc = 0;
			}
		} else if ((x = json_object_get(src, "downwardAPI"))) {
			rc = add_downward(f, pod, s, json_object_get(x, "items"), def, err);
		} else if ((x = json_object_get(src, "serviceAccountToken"))) {
			rc = add_token(f, dir, vol, i, s, x, def, sa_default, err);
		} else if (!json_object_get(src, "clusterTrustBundle")) {
			buf_addf(err, "projected volume \"%s\": sources[%zu] has no known source", vol, i);
			rc = E_INVALID;
		}
		if (rc)
			return rc;
	}
	return 0;
}

/* The default service-account volume: token, ca.crt, namespace. New reference. */
static json_t *sa_default_volume(void)
{
	return json_pack("{s:s,s:{s:[{s:{s:I,s:s}},{s:{s:s,s:[{s:s,s:s}]}},{s:{s:[{s:s,s:{s:s,s:s}}]}}]}}", "name",
			 KL_SA_VOLUME, "projected", "sources", "serviceAccountToken", "expirationSeconds",
			 (json_int_t)SA_TOKEN_S, "path", "token", "configMap", "name", KL_ROOT_CA_CONFIGMAP, "items",
			 "key", "ca.crt", "path", "ca.crt", "downwardAPI", "items", "path", "namespace", "fieldRef",
			 "apiVersion", "v1", "fieldPath", "metadata.namespace");
}

static bool automount(const json_t *pod)
{
	return !json_is_false(json_path(pod, "spec.automountServiceAccountToken"));
}

/* A container mounts something at path already. */
static bool mounts_at(const json_t *c, const char *path)
{
	size_t i;
	const json_t *m;
	json_array_foreach(json_object_get(c, "volumeMounts"), i, m) {
		const char *mp = json_str(m, "mountPath");
		if (mp && !strcmp(mp, path))
			return true;
	}
	return false;
}

/* A tmpfs at path (created) of size bytes (0: the kernel's default), unless one is there. */
static int mount_tmpfs(const char *path, long long size, struct buf *err)
{
	int rc = rt_mkdir_p(path, 0777);
	if (rc) {
		buf_addf(err, "cannot create %s: %s", path, strerror(-rc));
		return E_INTERNAL;
	}
	struct stat st, pst;
	char *parent = xasprintf("%s/..", path);
	bool mounted = stat(path, &st) == 0 && stat(parent, &pst) == 0 && st.st_dev != pst.st_dev;
	free(parent);
	if (mounted)
		return 0;
	char opts[64] = "mode=0777";
	if (size > 0)
		snprintf(opts, sizeof(opts), "mode=0777,size=%lld", size);
	if (mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0) {
		buf_addf(err, "cannot mount a tmpfs at %s: %s", path, strerror(errno));
		return E_INTERNAL;
	}
	return 0;
}

/* sizeLimit of an emptyDir in bytes: 0 when absent, -1 when malformed. */
static long long size_limit(const json_t *ed)
{
	const char *q = json_str(ed, "sizeLimit");
	long long milli;
	if (!q)
		return json_is_integer(json_object_get(ed, "sizeLimit")) ? json_integer_value(json_object_get(ed, "sizeLimit"))
									 : 0;
	if (quantity_parse_milli(q, &milli) < 0 || milli < 0)
		return -1;
	return (milli + 999) / 1000;
}

enum vkind { V_EMPTY, V_ATOMIC, V_HOST };

/* Writes volume v under dir/<name>: its kind in *ret_kind and its path (new) in *ret_path. */
static int setup_volume(const char *dir, const json_t *pod, const struct kl_vol_src *s, const json_t *v,
			bool sa_default, enum vkind *ret_kind, char **ret_path, struct buf *err)
{
	const char *name = json_str(v, "name");
	const json_t *x;
	if (!name || !*name || !atomicdir_path_ok(name) || strchr(name, '/')) {
		buf_adds(err, "a volume has no valid name");
		return E_INVALID;
	}
	char *path = xasprintf("%s/%s", dir, name);
	int rc = 0;
	struct files *f = NULL;
	if ((x = json_object_get(v, "hostPath"))) {
		const char *hp = json_str(x, "path"), *type = json_str(x, "type");
		free(path);
		if (!hp || hp[0] != '/') {
			buf_addf(err, "hostPath volume \"%s\" needs an absolute path", name);
			return E_INVALID;
		}
		if (type && !strcmp(type, "DirectoryOrCreate"))
			rt_mkdir_p(hp, 0755);
		*ret_kind = V_HOST;
		*ret_path = xstrdup(hp);
		return 0;
	}
	if ((x = json_object_get(v, "emptyDir"))) {
		long long lim = size_limit(x);
		*ret_kind = V_EMPTY;
		if (lim < 0) {
			buf_addf(err, "emptyDir \"%s\": sizeLimit is no quantity", name);
			rc = E_INVALID;
		} else if (json_str(x, "medium") && !strcmp(json_str(x, "medium"), "Memory")) {
			rc = mount_tmpfs(path, lim, err);
		} else if ((rc = rt_mkdir_p(path, 0777)) != 0) {
			buf_addf(err, "cannot create %s: %s", path, strerror(-rc));
			rc = E_INTERNAL;
		} else {
			chmod(path, 0777);
		}
		goto out;
	}
	*ret_kind = V_ATOMIC;
	f = xcalloc(1, sizeof(*f));
	if ((x = json_object_get(v, "configMap")) || (x = json_object_get(v, "secret"))) {
		long def = mode_of(json_object_get(x, "defaultMode"), DEFAULT_MODE);
		if (def < 0) {
			buf_adds(err, "defaultMode must be from 0 to 0777");
			rc = E_INVALID;
		} else {
			rc = add_object(f, s, json_object_get(v, "secret") != NULL, x, def, err);
		}
	} else if ((x = json_object_get(v, "downwardAPI"))) {
		long def = mode_of(json_object_get(x, "defaultMode"), DEFAULT_MODE);
		rc = def < 0 ? E_INVALID : add_downward(f, pod, s, json_object_get(x, "items"), def, err);
	} else if ((x = json_object_get(v, "projected"))) {
		rc = add_projected(f, dir, name, pod, s, x, sa_default, err);
	} else {
		buf_addf(err, "volume \"%s\": this kubelet supports emptyDir, configMap, secret, downwardAPI, projected and "
			      "hostPath volumes", name);
		rc = E_INVALID;
	}
	if (!rc && atomicdir_write(path, f->v, f->n, NULL, err) < 0)
		rc = E_INTERNAL;
out:
	if (f)
		files_release(f);
	free(f);
	if (rc)
		buf_addf(err, "%s(volume \"%s\")", err->len ? " " : "", name);
	if (rc)
		free(path);
	else
		*ret_path = path;
	return rc;
}

/* A subPath: relative, without "..". */
static bool sub_path_ok(const char *p)
{
	return atomicdir_path_ok(p) && !strstr(p, "/../");
}

struct vol {
	const char *name;
	enum vkind kind;
	char *path;
};

static int container_mounts(const json_t *c, const struct vol *vols, size_t nv, bool sa, struct rt_container *rc,
			    struct buf *err)
{
	const json_t *mounts = json_object_get(c, "volumeMounts");
	size_t n = json_array_size(mounts);
	rc->mounts = xcalloc(n + 1, sizeof(*rc->mounts));
	size_t i;
	const json_t *m;
	json_array_foreach(mounts, i, m) {
		const char *name = json_str(m, "name"), *mp = json_str(m, "mountPath"), *sub = json_str(m, "subPath");
		const struct vol *v = NULL;
		for (size_t j = 0; name && j < nv; j++)
			if (!strcmp(vols[j].name, name))
				v = &vols[j];
		if (!v || !mp || mp[0] != '/' || strpbrk(mp, "\t\n")) {
			buf_addf(err, "container \"%s\": volumeMounts[%zu] names no volume of the pod or has no absolute "
				      "mountPath", rc->name, i);
			return E_INVALID;
		}
		if (json_str(m, "subPathExpr")) {
			buf_addf(err, "container \"%s\": subPathExpr is not supported by this kubelet", rc->name);
			return E_INVALID;
		}
		if (sub && *sub && !sub_path_ok(sub)) {
			buf_addf(err, "container \"%s\": subPath \"%s\" must be a relative path without \"..\"", rc->name,
				 sub);
			return E_INVALID;
		}
		char *host = sub && *sub ? xasprintf("%s/%s", v->path, sub) : xstrdup(v->path);
		if (sub && *sub && v->kind == V_EMPTY)
			rt_mkdir_p(host, 0777); /* as Kubernetes: a missing subPath of an emptyDir is created */
		if (sub && *sub && v->kind == V_ATOMIC) {
			char real[4096];
			if (!realpath(host, real)) {
				buf_addf(err, "container \"%s\": subPath \"%s\" does not exist in volume \"%s\"", rc->name,
					 sub, v->name);
				free(host);
				return E_NOT_FOUND;
			}
			free(host);
			host = xstrdup(real);
		}
		struct rt_mount *rm = &rc->mounts[rc->nmounts++];
		rm->host_path = host;
		rm->container_path = xstrdup(mp);
		rm->readonly = json_is_true(json_object_get(m, "readOnly")) || v->kind == V_ATOMIC;
	}
	if (sa && !mounts_at(c, KL_SA_MOUNT)) {
		for (size_t j = 0; j < nv; j++)
			if (!strcmp(vols[j].name, KL_SA_VOLUME)) {
				struct rt_mount *rm = &rc->mounts[rc->nmounts++];
				rm->host_path = xstrdup(vols[j].path);
				rm->container_path = xstrdup(KL_SA_MOUNT);
				rm->readonly = true;
			}
	}
	return 0;
}

/* The pod's volumes, the default service-account one added: new array. */
static json_t *pod_volumes(const json_t *pod, bool *ret_sa)
{
	json_t *vols = json_array();
	size_t i;
	const json_t *v;
	bool named = false;
	json_array_foreach(json_path(pod, "spec.volumes"), i, v) {
		json_array_append(vols, (json_t *)v);
		named |= json_str(v, "name") && !strcmp(json_str(v, "name"), KL_SA_VOLUME);
	}
	*ret_sa = automount(pod) && !named;
	if (*ret_sa)
		json_array_append_new(vols, sa_default_volume());
	return vols;
}

int kl_volumes_setup(const char *dir, const json_t *pod, const struct kl_vol_src *s, struct rt_pod *spec,
		     struct buf *err)
{
	bool sa;
	json_t *vols = pod_volumes(pod, &sa);
	size_t nv = json_array_size(vols);
	struct vol *vs = xcalloc(nv + 1, sizeof(*vs));
	int rc = rt_mkdir_p(dir, 0755);
	if (rc) {
		buf_addf(err, "cannot create %s: %s", dir, strerror(-rc));
		rc = E_INTERNAL;
	}
	size_t i;
	const json_t *v;
	json_array_foreach(vols, i, v) {
		if (rc)
			break;
		vs[i].name = json_str(v, "name");
		rc = setup_volume(dir, pod, s, v, sa && i == nv - 1, &vs[i].kind, &vs[i].path, err);
	}
	for (size_t c = 0; !rc && spec && c < spec->ncontainers; c++) {
		const json_t *cj = container_named(pod, spec->containers[c].name);
		rc = container_mounts(cj, vs, nv, sa, &spec->containers[c], err);
	}
	for (i = 0; i < nv; i++)
		free(vs[i].path);
	free(vs);
	json_decref(vols);
	return rc;
}

/* Bytes used under path (files and directories, not following symlinks, one filesystem). */
static long long usage(const char *path, int depth)
{
	struct stat st;
	if (depth > 64 || lstat(path, &st) < 0)
		return 0;
	long long total = (long long)st.st_blocks * 512;
	if (!S_ISDIR(st.st_mode))
		return total;
	DIR *d = opendir(path);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char *sub = xasprintf("%s/%s", path, e->d_name);
		total += usage(sub, depth + 1);
		free(sub);
	}
	if (d)
		closedir(d);
	return total;
}

bool kl_volumes_over_limit(const char *dir, const json_t *pod, struct buf *msg)
{
	size_t i;
	const json_t *v;
	json_array_foreach(json_path(pod, "spec.volumes"), i, v) {
		const json_t *ed = json_object_get(v, "emptyDir");
		const char *medium = json_str(ed, "medium");
		long long lim = ed ? size_limit(ed) : 0;
		if (!ed || lim <= 0 || (medium && !strcmp(medium, "Memory")) || !json_str(v, "name"))
			continue;
		char *path = xasprintf("%s/%s", dir, json_str(v, "name"));
		long long used = usage(path, 0);
		free(path);
		if (used > lim) {
			const char *q = json_str(ed, "sizeLimit");
			buf_addf(msg, "Usage of EmptyDir volume \"%s\" exceeds the limit \"%s\". ", json_str(v, "name"),
				 q ? q : "");
			return true;
		}
	}
	return false;
}

bool kl_volumes_refreshable(const json_t *pod)
{
	if (automount(pod))
		return true;
	size_t i;
	const json_t *v;
	json_array_foreach(json_path(pod, "spec.volumes"), i, v)
		if (json_object_get(v, "configMap") || json_object_get(v, "secret") || json_object_get(v, "downwardAPI") ||
		    json_object_get(v, "projected"))
			return true;
	return false;
}

void kl_volumes_remove(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char *p = xasprintf("%s/%s", dir, e->d_name);
		struct stat st, pst;
		if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode) && stat(dir, &pst) == 0 && st.st_dev != pst.st_dev)
			umount2(p, MNT_DETACH);
		free(p);
	}
	if (d)
		closedir(d);
	rt_rm_rf(dir);
}
