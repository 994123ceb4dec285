/* Pod object -> runtime spec, refusing what the kubelet cannot run. */
#include <string.h>
#include <unistd.h>
#include "podenv.h"
#include "podlogic.h"
#include "hooks.h"
#include "probes.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/kinds.h"
#include "ursa/xalloc.h"

/* A NULL-terminated copy of an array of strings; NULL for absent. -1 if not strings or too long. */
static int str_array(const json_t *a, char ***ret)
{
	*ret = NULL;
	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a) || json_array_size(a) > KL_MAX_ARGS)
		return -1;
	size_t n = json_array_size(a);
	char **v = xcalloc(n + 1, sizeof(*v));
	for (size_t i = 0; i < n; i++) {
		const json_t *s = json_array_get(a, i);
		if (!json_is_string(s) || strlen(json_string_value(s)) != json_string_length(s)) {
			for (size_t j = 0; j < i; j++)
				free(v[j]);
			free(v);
			return -1;
		}
		v[i] = xstrdup(json_string_value(s));
	}
	*ret = v;
	return 0;
}

/* env and envFrom (podenv.h): E_INVALID for a malformed list, E_NOT_FOUND for a reference that
 * cannot be resolved now (CreateContainerConfigError). */
static int convert_env(const json_t *pod, const json_t *c, const struct kl_env_ctx *ctx, struct rt_container *rc,
		       struct buf *err)
{
	const json_t *env = json_object_get(c, "env"), *from = json_object_get(c, "envFrom");
	if (from && !json_is_null(from) && (!json_is_array(from) || json_array_size(from) > KL_MAX_ENV)) {
		buf_addf(err, "container \"%s\": envFrom must be a list of at most %d entries", rc->name, KL_MAX_ENV);
		return E_INVALID;
	}
	if (env && !json_is_null(env) && (!json_is_array(env) || json_array_size(env) > KL_MAX_ENV)) {
		buf_addf(err, "container \"%s\": env must be a list of at most %d entries", rc->name, KL_MAX_ENV);
		return E_INVALID;
	}
	size_t i;
	const json_t *e;
	json_array_foreach(env, i, e) {
		const char *name = json_str(e, "name");
		if (!name || !*name || strchr(name, '=')) {
			buf_addf(err, "container \"%s\": env[%zu] has no valid name", rc->name, i);
			return E_INVALID;
		}
		const json_t *vf = json_object_get(e, "valueFrom");
		if (vf && !json_is_null(vf) && !json_object_get(vf, "configMapKeyRef") &&
		    !json_object_get(vf, "secretKeyRef") && !json_object_get(vf, "fieldRef") &&
		    !json_object_get(vf, "resourceFieldRef")) {
			buf_addf(err, "container \"%s\": env \"%s\": valueFrom names no source", rc->name, name);
			return E_INVALID;
		}
	}
	struct podenv_ips no_ips = { NULL, NULL, NULL };
	int brc = podenv_build(pod, c, ctx ? ctx->ips : &no_ips, ctx ? ctx->alloc : NULL, ctx ? ctx->src : NULL, rc, err);
	if (brc == -2) {
		/* never resolvable: the pod fails (InvalidPodSpec), as the API server would have refused it */
		struct buf msg = BUF_INIT;
		buf_addf(&msg, "container \"%s\": %s", rc->name, buf_cstr(err));
		buf_reset(err);
		buf_adds(err, buf_cstr(&msg));
		buf_release(&msg);
		return E_INVALID;
	}
	return brc ? E_NOT_FOUND : 0;
}

/* A user or group id: an integer in 0..2147483647. */
static bool is_id(const json_t *v)
{
	return json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= 2147483647;
}

/* An id of a securityContext, the container's over the pod's: absent (*has false) or an id. */
static int sc_id(const json_t *pod_sc, const json_t *c_sc, const char *field, bool *has, long long *ret)
{
	const json_t *v = json_object_get(c_sc, field);
	if (!v || json_is_null(v))
		v = json_object_get(pod_sc, field);
	*has = false;
	if (!v || json_is_null(v))
		return 0;
	if (!is_id(v))
		return -1;
	*has = true;
	*ret = json_integer_value(v);
	return 0;
}

/* runAsUser, runAsGroup and supplementalGroups; runAsNonRoot refuses a container that would
 * run as root (with no runAsUser it would run as the kubelet, root on a real host). */
static int convert_ids(const json_t *pod_sc, const json_t *c, bool image_users, struct rt_container *rc,
		       struct buf *err)
{
	const json_t *c_sc = json_object_get(c, "securityContext");
	struct rt_ids *ids = &rc->ids;
	if (sc_id(pod_sc, c_sc, "runAsUser", &ids->has_uid, &ids->uid) ||
	    sc_id(pod_sc, c_sc, "runAsGroup", &ids->has_gid, &ids->gid)) {
		buf_addf(err, "container \"%s\": runAsUser and runAsGroup must be integers from 0 to 2147483647",
			 rc->name);
		return E_INVALID;
	}
	const json_t *groups = json_object_get(pod_sc, "supplementalGroups");
	if (groups && !json_is_null(groups)) {
		size_t i;
		const json_t *g;
		if (!json_is_array(groups) || json_array_size(groups) > RT_MAX_GROUPS) {
			buf_addf(err, "supplementalGroups must list at most %d group ids", RT_MAX_GROUPS);
			return E_INVALID;
		}
		json_array_foreach(groups, i, g) {
			if (!is_id(g)) {
				buf_adds(err, "supplementalGroups must be integers from 0 to 2147483647");
				return E_INVALID;
			}
			ids->groups[ids->ngroups++] = json_integer_value(g);
		}
	}
	const json_t *nonroot = json_object_get(c_sc, "runAsNonRoot");
	if (!nonroot || json_is_null(nonroot))
		nonroot = json_object_get(pod_sc, "runAsNonRoot");
	if (json_is_true(nonroot) && ids->has_uid && ids->uid == 0) {
		buf_addf(err, "container \"%s\": runAsUser 0 breaks its runAsNonRoot policy", rc->name);
		return E_INVALID;
	}
	rc->sec.non_root = json_is_true(nonroot);
	if (json_is_true(nonroot) && !ids->has_uid && !image_users && geteuid() == 0) {
		buf_addf(err, "container \"%s\" has runAsNonRoot but would run as root: set runAsUser", rc->name);
		return E_INVALID;
	}
	return 0;
}

/* A capability list of securityContext.capabilities (add or drop) into out; -1 if malformed. */
static int cap_list(const json_t *a, char out[][32], unsigned *ret_n)
{
	*ret_n = 0;
	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a) || json_array_size(a) > RT_MAX_CAPS)
		return -1;
	size_t i;
	const json_t *v;
	json_array_foreach(a, i, v) {
		const char *name = json_string_value(v);
		if (!name || !*name || strlen(name) >= 32)
			return -1;
		snprintf(out[*ret_n], 32, "%s", name);
		(*ret_n)++;
	}
	return 0;
}

/* seccompProfile, allowPrivilegeEscalation and capabilities (see struct rt_security). */
static int convert_security(const json_t *pod_sc, const json_t *c, struct rt_container *rc, struct buf *err)
{
	const json_t *c_sc = json_object_get(c, "securityContext");
	struct rt_security *sec = &rc->sec;
	const json_t *prof = json_object_get(c_sc, "seccompProfile");
	if (!prof || json_is_null(prof))
		prof = json_object_get(pod_sc, "seccompProfile");
	const char *type = json_str(prof, "type");
	sec->seccomp = RT_SECCOMP_RUNTIME_DEFAULT;
	if (type && strcmp(type, "Unconfined") == 0) {
		sec->seccomp = RT_SECCOMP_UNCONFINED;
	} else if (type && strcmp(type, "Localhost") == 0) {
		const char *ref = json_str(prof, "localhostProfile");
		if (!ref || !*ref || ref[0] == '/' || strstr(ref, "..") || strlen(ref) >= sizeof(sec->seccomp_ref)) {
			buf_addf(err, "container \"%s\": a Localhost seccompProfile needs a relative localhostProfile "
				      "without \"..\"", rc->name);
			return E_INVALID;
		}
		sec->seccomp = RT_SECCOMP_LOCALHOST;
		snprintf(sec->seccomp_ref, sizeof(sec->seccomp_ref), "%s", ref);
	} else if (type && strcmp(type, "RuntimeDefault") != 0) {
		buf_addf(err, "container \"%s\": unknown seccompProfile type \"%s\"", rc->name, type);
		return E_INVALID;
	}
	sec->no_new_privs = !json_is_true(json_object_get(c_sc, "allowPrivilegeEscalation")) &&
			    !json_is_true(json_object_get(c_sc, "privileged"));
	const json_t *caps = json_object_get(c_sc, "capabilities");
	if (cap_list(json_object_get(caps, "add"), sec->cap_add, &sec->nadd) ||
	    cap_list(json_object_get(caps, "drop"), sec->cap_drop, &sec->ndrop)) {
		buf_addf(err, "container \"%s\": capabilities.add and drop must list at most %d names", rc->name,
			 RT_MAX_CAPS);
		return E_INVALID;
	}
	return 0;
}

/* imagePullPolicy as the API server defaults it: Always for ":latest" or no tag (and no digest). */
static enum rt_pull pull_policy(const char *policy, const char *image)
{
	if (policy && strcmp(policy, "Always") == 0)
		return RT_PULL_ALWAYS;
	if (policy && strcmp(policy, "Never") == 0)
		return RT_PULL_NEVER;
	if (policy && strcmp(policy, "IfNotPresent") == 0)
		return RT_PULL_IF_NOT_PRESENT;
	if (!image || strchr(image, '@'))
		return RT_PULL_IF_NOT_PRESENT;
	const char *slash = strrchr(image, '/'), *colon = strrchr(image, ':');
	if (!colon || (slash && colon < slash) || strcmp(colon, ":latest") == 0)
		return RT_PULL_ALWAYS;
	return RT_PULL_IF_NOT_PRESENT;
}

static int convert_resources(const json_t *c, struct rt_container *rc, struct buf *err)
{
	struct rt_resources *r = &rc->res;
	if (podenv_res_milli(c, "requests", "cpu", &r->cpu_request_m) ||
	    podenv_res_milli(c, "limits", "cpu", &r->cpu_limit_m) ||
	    podenv_res_milli(c, "requests", "memory", &r->mem_request) ||
	    podenv_res_milli(c, "limits", "memory", &r->mem_limit)) {
		buf_addf(err, "container \"%s\": resources hold a quantity that does not parse", rc->name);
		return E_INVALID;
	}
	r->mem_request = (r->mem_request + 999) / 1000;
	r->mem_limit = (r->mem_limit + 999) / 1000;
	if (!r->cpu_request_m)
		r->cpu_request_m = r->cpu_limit_m; /* a limit stands in for a missing request */
	if (!r->mem_request)
		r->mem_request = r->mem_limit;
	return 0;
}

static int convert_container(const json_t *pod, const json_t *c, bool image_users, const struct kl_env_ctx *ctx,
			     struct rt_container *rc, struct buf *err)
{
	const json_t *pod_sc = json_path(pod, "spec.securityContext");
	const char *name = json_str(c, "name");
	if (!name || !*name) {
		buf_adds(err, "a container has no name");
		return E_INVALID;
	}
	rc->name = xstrdup(name);
	const char *image = json_str(c, "image");
	rc->image = xstrdup(image ? image : "");
	if (str_array(json_object_get(c, "command"), &rc->command) ||
	    str_array(json_object_get(c, "args"), &rc->args)) {
		buf_addf(err, "container \"%s\": command and args must be lists of at most %d strings", name,
			 KL_MAX_ARGS);
		return E_INVALID;
	}
	/* There are no images here: a container that names neither command nor args (it would
	 * run its image's entrypoint) runs a placeholder process that lives until stopped, so
	 * `kubectl create deployment web --image=nginx` gives Running pods. */
	rc->pull = pull_policy(json_str(c, "imagePullPolicy"), image);
	if (convert_resources(c, rc, err))
		return E_INVALID;
	if (!rc->command && !rc->args) {
		rc->default_command = true;
		rc->command = xcalloc(3, sizeof(*rc->command));
		rc->command[0] = xstrdup("sleep");
		rc->command[1] = xstrdup("infinity");
	}
	const char *wd = json_str(c, "workingDir");
	if (wd && *wd)
		rc->working_dir = xstrdup(wd);
	rc->stdin_open = json_is_true(json_object_get(c, "stdin"));
	rc->stdin_once = json_is_true(json_object_get(c, "stdinOnce"));
	rc->tty = json_is_true(json_object_get(c, "tty"));
	if (convert_ids(pod_sc, c, image_users, rc, err) || convert_security(pod_sc, c, rc, err))
		return E_INVALID;
	if (kl_probe_from_json(json_object_get(c, "livenessProbe"), c, RT_PROBE_LIVENESS,
			       &rc->probes[RT_PROBE_LIVENESS], err) ||
	    kl_probe_from_json(json_object_get(c, "readinessProbe"), c, RT_PROBE_READINESS,
			       &rc->probes[RT_PROBE_READINESS], err) ||
	    kl_probe_from_json(json_object_get(c, "startupProbe"), c, RT_PROBE_STARTUP, &rc->probes[RT_PROBE_STARTUP],
			       err) ||
	    kl_hooks_from_json(c, rc->hooks, err))
		return E_INVALID;
	return convert_env(pod, c, ctx, rc, err);
}

static enum rt_restart restart_policy(const char *p)
{
	if (p && strcmp(p, "Never") == 0)
		return RT_RESTART_NEVER;
	if (p && strcmp(p, "OnFailure") == 0)
		return RT_RESTART_ON_FAILURE;
	return RT_RESTART_ALWAYS;
}

int kl_rt_pod_from_json(const json_t *pod, struct rt_pod *ret, struct buf *err)
{
	return kl_rt_pod_from_json_for(pod, false, ret, err);
}

int kl_rt_pod_from_json_for(const json_t *pod, bool image_users, struct rt_pod *ret, struct buf *err)
{
	return kl_rt_pod_from_json_env(pod, image_users, NULL, ret, err, NULL);
}

int kl_rt_pod_from_json_env(const json_t *pod, bool image_users, const struct kl_env_ctx *ctx, struct rt_pod *ret,
			    struct buf *err, char **ret_container)
{
	struct rt_pod p;
	memset(&p, 0, sizeof(p));
	const char *uid = json_path_str(pod, "metadata.uid"), *name = json_path_str(pod, "metadata.name");
	const char *tenant = json_path_str(pod, "metadata.tenant"), *ns = json_path_str(pod, "metadata.namespace");
	const json_t *containers = json_path(pod, "spec.containers");
	int rc = E_INVALID;
	if (!uid || !*uid || !name || !*name) {
		buf_adds(err, "pod has no uid or name");
		return E_INVALID;
	}
	if (json_path(pod, "spec.initContainers") && json_array_size(json_path(pod, "spec.initContainers")) > 0) {
		buf_adds(err, "init containers are not supported by this kubelet");
		return E_INVALID;
	}
	if (!json_is_array(containers) || json_array_size(containers) == 0 ||
	    json_array_size(containers) > KL_MAX_CONTAINERS) {
		buf_addf(err, "spec.containers must list 1 to %d containers", KL_MAX_CONTAINERS);
		return E_INVALID;
	}
	p.uid = xstrdup(uid);
	p.name = xstrdup(name);
	p.tenant = xstrdup(tenant && *tenant ? tenant : "system");
	p.ns = xstrdup(ns && *ns ? ns : "default");
	p.restart = restart_policy(json_path_str(pod, "spec.restartPolicy"));
	p.grace_s = kl_pod_grace(pod);
	p.host_network = json_is_true(json_path(pod, "spec.hostNetwork"));
	p.share_pid = json_is_true(json_path(pod, "spec.shareProcessNamespace"));
	p.containers = xcalloc(json_array_size(containers), sizeof(*p.containers));
	size_t i;
	const json_t *c;
	json_array_foreach(containers, i, c) {
		p.ncontainers++;
		rc = convert_container(pod, c, image_users, ctx, &p.containers[i], err);
		if (rc) {
			if (ret_container)
				*ret_container = xstrdup(p.containers[i].name ? p.containers[i].name : "");
			goto out;
		}
		for (size_t j = 0; j < i; j++)
			if (strcmp(p.containers[j].name, p.containers[i].name) == 0) {
				buf_addf(err, "duplicate container name \"%s\"", p.containers[i].name);
				rc = E_INVALID;
				goto out;
			}
	}
	rc = 0;
	*ret = p;
out:
	if (rc)
		rt_pod_release(&p);
	return rc;
}
