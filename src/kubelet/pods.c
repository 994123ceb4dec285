/* The pod worker: the one thread that calls the runtime. For each queued pod key it admits
 * new pods (resources, spec), starts them, reports their status to the partition they came
 * from when it changed, finishes graceful deletions, and stops pods that disappeared. A
 * periodic "sync" item reaps container exits and collects pods the runtime still runs that no
 * partition has any more (only once every partition's informer has synced).
 *
 * A runtime may stop pods in the background (stop_pod returns 1 until done): a pod being deleted
 * keeps its entry until its containers are gone, and only then is deleted for good; pods that
 * went away otherwise (gone from the partition, orphans) wait in `stopping` for the periodic
 * sync to remove them. The runtime's rt_pod_changed queues the pod's key again (on_pod_changed).
 *
 * Pods are run once per uid across partitions: a pod's entry is under its home key, and the same
 * uid under another partition's key (a tenant moving between partitions) is its second copy,
 * remembered but never started; when the home copy goes away the second becomes the home, with
 * no container stopped (podlogic.h, kl_pod_key_action). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include "images.h"
#include "kubelet.h"
#include "objcache.h"
#include "podenv.h"
#include "podlogic.h"
#include "volumes.h"
#include "ursa/ipnet.h"
#include "ursa/strmap.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"
#include "klmetrics.h"

#define SYNC_KEY "@sync"
#define SYNC_MS 1000
#define RESYNC_MS 30000   /* re-check every pod's status, and collect orphans, this often */

enum kp_state {
	KP_RUNTIME,   /* handed to the runtime */
	KP_FAILED,    /* rejected (admission, bad spec): never ran */
	KP_DONE,      /* already terminal when we first saw it and unknown to the runtime */
	KP_CONFIG,    /* a configmap or secret its env names is missing: retried (CreateContainerConfigError) */
};

#define CONFIG_RETRY_MIN_MS 1000
#define CONFIG_RETRY_MAX_MS 10000
#define VOLUME_REFRESH_MS 10000 /* configmap, secret and token contents of running pods */

struct kl_pod {
	char *uid;
	long node;
	enum kp_state state;
	bool counted;             /* its requests count against the node */
	struct kl_res req;
	char *fail_reason, *fail_message;
	char *config_container, *config_message; /* KP_CONFIG: which container and why */
	int64_t config_retry_ms, config_delay_ms;
	bool config_new;          /* a failed attempt not yet scheduled again */
	int64_t vol_next_ms;      /* next refresh of its volumes (0: none scheduled) */
	int64_t seen_ms;          /* mono_ms() when this kubelet first saw it (pod start metric) */
	bool start_observed;      /* its start latency went into the metric (or it was running already) */
	json_t *sent;             /* last status sent (new reference) */
	char *copy;               /* wkey of its second copy on another partition, or NULL */
};

/* Volume refreshes reuse a configmap or secret read this recently for another pod of the node
 * (below the refresh period, so each object is read about once per period). */
#define OBJ_CACHE_MS 8000

struct kl_pods {
	struct kubelet *k;
	pthread_t thread;
	struct strmap pods;       /* home wkey -> struct kl_pod */
	struct strmap copies;     /* wkey of a second copy -> its struct kl_pod (borrowed from pods) */
	struct strmap gone;       /* uids stopped here while a second copy lived: never started again */
	struct strmap uids;       /* uid of every pod in pods -> its wkey (new string); changes under ulock */
	pthread_mutex_t ulock;    /* uids' changes here, and its reads by on_pod_changed */
	struct strmap known;      /* uids the runtime had when we started */
	struct strmap stopping;   /* uids stopping in the background, to remove when stopped */
	int64_t last_resync_ms;
	bool collected_once;
	struct kl_objcache *objs; /* volume refreshes' configmaps and secrets, shared by the node's pods */
};

static void pod_free(void *v)
{
	struct kl_pod *kp = v;
	if (!kp)
		return;
	free(kp->uid);
	free(kp->fail_reason);
	free(kp->fail_message);
	free(kp->config_container);
	free(kp->config_message);
	json_decref(kp->sent);
	free(kp->copy);
	free(kp);
}

static void uncount(struct kl_pods *ps, struct kl_pod *kp)
{
	if (!kp->counted || kp->node < 0)
		return;
	struct kl_node *n = &ps->k->nodes[kp->node];
	n->cpu_used_m -= kp->req.cpu_m;
	n->mem_used_m -= kp->req.mem_m;
	n->pods_used -= kp->req.pods;
	kp->counted = false;
}

/* Volumes (volumes.h) are made on real nodes only. */
static bool volumes_on(const struct kubelet *k)
{
	return k->rt_ops != &runtime_fake && !k->hollow;
}

/* <root-dir>/volumes/<uid>: new string. */
static char *vol_dir(const struct kubelet *k, const char *uid)
{
	return xasprintf("%s/volumes/%s", k->opt.root_dir, uid);
}

/* Stops the pod's containers and removes it from the runtime: true when done, false while the
 * runtime stops it in the background (call again later). */
static bool rt_stop_remove(struct kl_pods *ps, const char *uid, long long grace)
{
	struct kubelet *k = ps->k;
	if (k->rt_ops->stop_pod(k->rt, uid, grace) > 0)
		return false;
	k->rt_ops->remove_pod(k->rt, uid);
	if (volumes_on(k)) {
		char *dir = vol_dir(k, uid);
		kl_volumes_remove(dir);
		free(dir);
	}
	strmap_del(&ps->known, uid, NULL);
	return true;
}

/* Forgets a pod, stopping its containers first if it has any (in the background: removed from
 * the runtime later, by periodic). */
static void forget(struct kl_pods *ps, const char *wkey, struct kl_pod *kp, long long grace)
{
	if (kp->state == KP_RUNTIME && !rt_stop_remove(ps, kp->uid, grace))
		strmap_put(&ps->stopping, kp->uid, NULL);
	uncount(ps, kp);
	if (kp->copy) { /* the copy, a moment behind, must not start the pod again when it comes */
		strmap_del(&ps->copies, kp->copy, NULL);
		strmap_put(&ps->gone, kp->uid, NULL);
	}
	void *wk = NULL;
	pthread_mutex_lock(&ps->ulock);
	strmap_del(&ps->uids, kp->uid, &wk);
	pthread_mutex_unlock(&ps->ulock);
	free(wk);
	strmap_del(&ps->pods, wkey, NULL);
	pod_free(kp);
}

static bool verbose(const struct kubelet *k)
{
	return !k->hollow;
}

/* Files the pod under its home key wkey (pods, and uids for on_pod_changed). */
static void file_under(struct kl_pods *ps, const char *wkey, struct kl_pod *kp)
{
	strmap_put(&ps->pods, wkey, NULL)->val = kp;
	pthread_mutex_lock(&ps->ulock);
	struct strmap_ent *ue = strmap_put(&ps->uids, kp->uid, NULL);
	free(ue->val);
	ue->val = xstrdup(wkey);
	pthread_mutex_unlock(&ps->ulock);
}

/* The home copy of a pod went away and its second copy lives: the copy's key becomes the home, so
 * status goes to its partition; the containers run on. */
static void hand_off(struct kl_pods *ps, const char *wkey, struct kl_pod *kp)
{
	char *home = kp->copy;
	kp->copy = NULL;
	strmap_del(&ps->copies, home, NULL);
	strmap_del(&ps->pods, wkey, NULL);
	file_under(ps, home, kp);
	/* the new home's status is compared afresh (it may lag what the old home had); what was
	 * scheduled for the old key (a volume refresh, a configuration retry) happens for the new */
	json_decref(kp->sent);
	kp->sent = NULL;
	kp->vol_next_ms = 0;
	kp->config_retry_ms = 0;
	if (verbose(ps->k))
		log_info("pod handed off", "uid=%s from=\"%s\" to=\"%s\"", kp->uid, wkey, home);
	wq_add(ps->k->wq, home);
	free(home);
}

/* A second copy (key wkey) of the pod with this uid, which runs under another key. */
static void add_copy(struct kl_pods *ps, const char *wkey, const char *uid)
{
	struct strmap_ent *ue = strmap_get(&ps->uids, uid); /* only this thread changes uids */
	struct strmap_ent *e = ue ? strmap_get(&ps->pods, ue->val) : NULL;
	struct kl_pod *kp = e ? e->val : NULL;
	if (!kp)
		return;
	if (kp->copy) {
		log_warn("third copy of a pod ignored", "uid=%s home=\"%s\" copy=\"%s\" other=\"%s\"", uid,
			 (const char *)ue->val, kp->copy, wkey);
		return;
	}
	kp->copy = xstrdup(wkey);
	strmap_put(&ps->copies, wkey, NULL)->val = kp;
	if (verbose(ps->k))
		log_info("pod copy seen", "uid=%s home=\"%s\" copy=\"%s\"", uid, (const char *)ue->val, wkey);
}

static void forget_copy(struct kl_pods *ps, struct kl_pod *kp)
{
	if (verbose(ps->k))
		log_info("pod copy gone", "uid=%s copy=\"%s\"", kp->uid, kp->copy);
	strmap_del(&ps->copies, kp->copy, NULL);
	free(kp->copy);
	kp->copy = NULL;
}

/* The runtime's rt_pod_changed (any thread): the pod's key again. */
static void on_pod_changed(void *ud, const char *uid)
{
	struct kl_pods *ps = ud;
	pthread_mutex_lock(&ps->ulock);
	struct strmap_ent *e = strmap_get(&ps->uids, uid);
	if (e && e->val)
		wq_add(ps->k->wq, e->val);
	pthread_mutex_unlock(&ps->ulock);
}

static void fail_pod(struct kl_pod *kp, const char *reason, const char *message)
{
	kp->state = KP_FAILED;
	kp->fail_reason = xstrdup(reason);
	kp->fail_message = xstrdup(message);
}

/* Registry credentials from the pod's imagePullSecrets for each container's image (CRI runtime
 * only: the others pull nothing). Fills spec's pull_cred pointers, valid until pull_creds_release. */
struct pull_creds {
	struct pull_auth auth[KL_MAX_CONTAINERS];
	struct rt_pull_cred cred[KL_MAX_CONTAINERS];
};

static void pull_creds_get(struct kubelet *k, struct kl_partition *p, const json_t *obj, struct rt_pod *spec,
			   struct pull_creds *pc)
{
	memset(pc, 0, sizeof(*pc));
	if (k->rt_ops != &runtime_cri || json_array_size(json_path(obj, "spec.imagePullSecrets")) == 0)
		return;
	json_t **secrets = NULL;
	size_t n = kl_pull_secrets_fetch(p, obj, &secrets, NULL);
	for (size_t i = 0; n && i < spec->ncontainers && i < KL_MAX_CONTAINERS; i++) {
		struct image_ref ref;
		if (image_ref_parse(spec->containers[i].image, &ref, NULL) != 0)
			continue;
		if (pull_auth_lookup((const json_t *const *)secrets, n, &ref, &pc->auth[i]) == 1) {
			pc->cred[i] = (struct rt_pull_cred){ pc->auth[i].server, pc->auth[i].username,
							     pc->auth[i].password };
			spec->containers[i].pull_cred = &pc->cred[i];
			log_info("image pull credentials", "pod=\"%s/%s\" container=%s registry=\"%s\"", spec->ns,
				 spec->name, spec->containers[i].name, pc->auth[i].server ? pc->auth[i].server : "");
		}
		image_ref_release(&ref);
	}
	kl_pull_secrets_free(secrets, n);
}

static void pull_creds_release(struct pull_creds *pc)
{
	for (size_t i = 0; i < KL_MAX_CONTAINERS; i++)
		pull_auth_release(&pc->auth[i]);
}

/* The configmaps and secrets a pod's env names, read with the node's credential from the pod's
 * partition (the API servers let a node GET only those its pods name), once per start. */
struct env_objs {
	struct kl_partition *p;
	struct kl_objcache *cache; /* NULL: read fresh (a pod starting) */
	const json_t *pod;
	json_t *objs[64];
	char *names[64];
	bool secret[64];
	int codes[64];
	size_t n;
};

static const json_t *env_get(void *ud, bool secret, const char *name, int *ret_code)
{
	struct env_objs *eo = ud;
	for (size_t i = 0; i < eo->n; i++)
		if (eo->secret[i] == secret && strcmp(eo->names[i], name) == 0) {
			*ret_code = eo->codes[i];
			return eo->objs[i];
		}
	if (!eo->p || !eo->p->rc || eo->n == sizeof(eo->objs) / sizeof(eo->objs[0])) {
		*ret_code = 503;
		return NULL;
	}
	const char *tenant = json_path_str(eo->pod, "metadata.tenant"), *ns = json_path_str(eo->pod, "metadata.namespace");
	struct buf path = BUF_INIT;
	buf_adds(&path, "/api/v1/tenants/");
	buf_add_query_escaped(&path, tenant && *tenant ? tenant : "system");
	buf_adds(&path, "/namespaces/");
	buf_add_query_escaped(&path, ns && *ns ? ns : "default");
	buf_adds(&path, secret ? "/secrets/" : "/configmaps/");
	buf_add_query_escaped(&path, name);
	json_t *body = NULL;
	int code;
	char *key = eo->cache ? xasprintf("%s|%s", eo->p->name, buf_cstr(&path)) : NULL;
	if (!key || !kl_objcache_get(eo->cache, key, mono_ms(), &body, &code)) {
		code = rest_do(eo->p->rc, "GET", buf_cstr(&path), NULL, NULL, &body);
		if (code != 200 || !json_is_object(body)) {
			json_decref(body);
			body = NULL;
			if (code == 200)
				code = 500;
		}
		if (key && (code == 200 || code == 404))
			kl_objcache_put(eo->cache, key, mono_ms(), body, code);
	}
	free(key);
	buf_release(&path);
	size_t i = eo->n++;
	eo->objs[i] = body;
	eo->names[i] = xstrdup(name);
	eo->secret[i] = secret;
	eo->codes[i] = code;
	*ret_code = code;
	return body;
}

static void env_invalid_keys(void *ud, const char *kind, const char *name, const char *keys)
{
	struct env_objs *eo = ud;
	const json_t *pod = eo->pod;
	const char *t = json_path_str(pod, "metadata.tenant"), *ns = json_path_str(pod, "metadata.namespace");
	rt_event(t && *t ? t : "system", ns, json_path_str(pod, "metadata.name"), json_path_str(pod, "metadata.uid"), NULL,
		 true, "InvalidEnvironmentVariableNames",
		 "Keys [%s] from the EnvFrom %s %s/%s were skipped since they are considered invalid environment variable "
		 "names.", keys, kind, ns ? ns : "", name);
}

/* A TokenRequest for the pod's service account, bound to the pod (volumes.h). */
static int vol_token(void *ud, const char *audience, long long exp_s, char **ret_token, int64_t *ret_exp,
		     struct buf *err)
{
	struct env_objs *eo = ud;
	const json_t *pod = eo->pod;
	if (!eo->p || !eo->p->rc) {
		buf_adds(err, "the pod's partition is not reachable");
		return -1;
	}
	const char *t = json_path_str(pod, "metadata.tenant"), *ns = json_path_str(pod, "metadata.namespace");
	const char *sa = json_path_str(pod, "spec.serviceAccountName");
	struct buf path = BUF_INIT;
	buf_adds(&path, "/api/v1/tenants/");
	buf_add_query_escaped(&path, t && *t ? t : "system");
	buf_adds(&path, "/namespaces/");
	buf_add_query_escaped(&path, ns && *ns ? ns : "default");
	buf_adds(&path, "/serviceaccounts/");
	buf_add_query_escaped(&path, sa && *sa ? sa : "default");
	buf_adds(&path, "/token");
	json_t *spec = json_pack("{s:I,s:{s:s,s:s,s:s,s:s}}", "expirationSeconds", (json_int_t)exp_s, "boundObjectRef",
				 "kind", "Pod", "apiVersion", "v1", "name", json_path_str(pod, "metadata.name"), "uid",
				 json_path_str(pod, "metadata.uid"));
	if (audience && *audience)
		json_object_set_new(spec, "audiences", json_pack("[s]", audience));
	json_t *body = json_pack("{s:s,s:s,s:o}", "apiVersion", "authentication.k8s.io/v1", "kind", "TokenRequest",
				 "spec", spec), *reply = NULL;
	int code = rest_do(eo->p->rc, "POST", buf_cstr(&path), body, NULL, &reply);
	json_decref(body);
	buf_release(&path);
	const char *tok = json_path_str(reply, "status.token"), *exp = json_path_str(reply, "status.expirationTimestamp");
	time_t texp = 0;
	int rc = -1;
	if ((code == 200 || code == 201) && tok && exp && rfc3339_parse(exp, &texp) == 0) {
		*ret_token = xstrdup(tok);
		*ret_exp = (int64_t)texp;
		rc = 0;
	} else {
		buf_addf(err, "TokenRequest for service account \"%s\": HTTP %d %s", sa && *sa ? sa : "default", code,
			 json_str(reply, "message") ? json_str(reply, "message") : "");
	}
	json_decref(reply);
	return rc;
}

/* The pod's volumes under <root-dir>/volumes/<uid>, and its containers' mounts when spec is not
 * NULL (volumes.h). */
static int volumes_setup(struct kubelet *k, struct env_objs *eo, const struct podenv_ips *ips,
			 const struct podenv_alloc *alloc, struct rt_pod *spec, struct buf *err)
{
	struct kl_vol_src vs = { env_get, vol_token, eo, ips, alloc, now_ms() / 1000 };
	char *dir = vol_dir(k, json_path_str(eo->pod, "metadata.uid"));
	int rc = kl_volumes_setup(dir, eo->pod, &vs, spec, err);
	free(dir);
	return rc;
}

/* KUBERNETES_SERVICE_HOST and _PORT (the region's front door) for every container that does not
 * set them itself: --api-front-door for pods on the node's network (process runtime, hostNetwork);
 * a CRI pod in a network namespace of its own, where the node's loopback front door is out of
 * reach, gets the front door's service address instead (IPNET_FRONT_DOOR_IP:443, which ursa-cni
 * DNATs to the node's front door). */
static void front_door_env(const struct kubelet *k, struct rt_pod *spec, bool own_net)
{
	const char *fd = k->opt.api_front_door;
	const char *colon = fd ? strrchr(fd, ':') : NULL;
	if (!colon)
		return;
	char svc_port[8];
	snprintf(svc_port, sizeof(svc_port), "%d", IPNET_FRONT_DOOR_PORT);
	char *host = own_net ? xstrdup(IPNET_FRONT_DOOR_IP) : xstrndup(fd, (size_t)(colon - fd));
	const char *port = own_net ? svc_port : colon + 1;
	const char *names[] = { "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "KUBERNETES_SERVICE_PORT_HTTPS" };
	const char *values[] = { host, port, port };
	for (size_t i = 0; i < spec->ncontainers; i++) {
		struct rt_container *c = &spec->containers[i];
		for (size_t n = 0; n < 3; n++) {
			bool set = false;
			for (size_t e = 0; e < c->nenv && !set; e++)
				set = !strcmp(c->env[e].name, names[n]);
			if (set)
				continue;
			c->env = xrealloc(c->env, (c->nenv + 1) * sizeof(*c->env));
			memmove(c->env + 1, c->env, c->nenv * sizeof(*c->env));
			c->env[0] = (struct rt_env){ xstrdup(names[n]), xstrdup(values[n]), RT_ENV_RESOLVED };
			c->nenv++;
		}
	}
	free(host);
}

static void env_objs_release(struct env_objs *eo)
{
	for (size_t i = 0; i < eo->n; i++) {
		json_decref(eo->objs[i]);
		free(eo->names[i]);
	}
}

/* The runtime spec of the pod with its environment; E_NOT_FOUND for a reference that cannot be
 * resolved now (kp->config_*), E_INVALID for a spec that cannot run. */
static int build_spec(struct kl_pods *ps, struct kl_partition *p, struct kl_pod *kp, const json_t *obj,
		      struct rt_pod *spec, struct buf *err)
{
	struct kubelet *k = ps->k;
	bool cri = k->rt_ops == &runtime_cri;
	bool host_net = json_is_true(json_path(obj, "spec.hostNetwork"));
	const char *host_ip = k->opt.address;
	/* the pod's IP: the node's, except on CRI with a network of its own, where the runtime fills
	 * it in once the sandbox has it (podenv_finish) */
	struct podenv_ips ips = { host_ip, (!cri || host_net) ? host_ip : NULL, (!cri || host_net) ? host_ip : NULL };
	struct podenv_alloc alloc = { k->alloc_cpu_m, k->alloc_mem_m / 1000, 0 };
	struct statvfs vfs;
	if (statvfs(k->opt.root_dir ? k->opt.root_dir : "/", &vfs) == 0)
		alloc.storage_bytes = (long long)(vfs.f_blocks * vfs.f_frsize);
	struct env_objs *eo = xcalloc(1, sizeof(*eo));
	eo->p = p;
	eo->pod = obj;
	struct podenv_src src = { env_get, eo, env_invalid_keys };
	struct kl_env_ctx ctx = { &ips, &alloc, &src };
	char *cname = NULL;
	int rc = kl_rt_pod_from_json_env(obj, cri, &ctx, spec, err, &cname);
	if (rc == 0 && volumes_on(k)) {
		front_door_env(k, spec, cri && !host_net);
		rc = volumes_setup(k, eo, &ips, &alloc, spec, err);
		if (rc) {
			rt_pod_release(spec);
			free(cname);
			cname = xstrdup(json_str(json_array_get(json_path(obj, "spec.containers"), 0), "name")
						? json_str(json_array_get(json_path(obj, "spec.containers"), 0), "name")
						: "");
			if (rc != E_NOT_FOUND && rc != E_INVALID)
				rc = E_NOT_FOUND; /* a local failure (mount, disk): tried again */
		}
	}
	env_objs_release(eo);
	free(eo);
	free(kp->config_container);
	free(kp->config_message);
	kp->config_container = kp->config_message = NULL;
	if (rc == E_NOT_FOUND) {
		kp->config_container = cname ? cname : xstrdup("");
		kp->config_message = xstrdup(buf_cstr(err));
		cname = NULL;
	}
	free(cname);
	return rc;
}

static void start(struct kl_pods *ps, struct kl_partition *p, struct kl_pod *kp, const json_t *obj, bool adopt)
{
	struct kubelet *k = ps->k;
	struct buf err = BUF_INIT;
	struct rt_pod spec;
	char *rt_err = NULL;
	int brc = 0;
	if (kl_pod_requests(obj, &kp->req, &err) != 0 || (brc = build_spec(ps, p, kp, obj, &spec, &err)) != 0) {
		if (brc == E_NOT_FOUND && adopt) {
			/* running from before a restart: its containers keep the env they started with */
			struct kl_node *an = &k->nodes[kp->node];
			kp->state = KP_RUNTIME;
			kp->counted = true;
			an->cpu_used_m += kp->req.cpu_m;
			an->mem_used_m += kp->req.mem_m;
			an->pods_used += kp->req.pods;
			goto out;
		}
		if (brc == E_NOT_FOUND) {
			/* Waiting, CreateContainerConfigError, until the object appears (process retries) */
			kp->state = KP_CONFIG;
			kp->config_new = true;
			const char *t = json_path_str(obj, "metadata.tenant");
			rt_event(t && *t ? t : "system", json_path_str(obj, "metadata.namespace"),
				 json_path_str(obj, "metadata.name"), kp->uid, kp->config_container, true, "Failed",
				 "Error: %s", kp->config_message);
			goto out;
		}
		fail_pod(kp, "InvalidPodSpec", buf_cstr(&err));
		goto out;
	}
	struct kl_node *n = &k->nodes[kp->node];
	if (!adopt) {
		struct kl_res alloc = { k->alloc_cpu_m, k->alloc_mem_m, k->max_pods };
		struct kl_res used = { n->cpu_used_m, n->mem_used_m, n->pods_used };
		struct buf msg = BUF_INIT;
		buf_adds(&msg, "Pod was rejected: ");
		const char *reason = kl_admit_isolation(obj, &msg);
		if (!reason)
			reason = kl_admit(&alloc, &used, &kp->req, &msg);
		if (reason)
			fail_pod(kp, reason, buf_cstr(&msg));
		buf_release(&msg);
		if (reason) {
			rt_pod_release(&spec);
			goto out;
		}
	}
	struct pull_creds *pc = xmalloc(sizeof(*pc));
	pull_creds_get(k, p, obj, &spec, pc);
	int rc = k->rt_ops->start_pod(k->rt, &spec, &rt_err);
	pull_creds_release(pc);
	free(pc);
	rt_pod_release(&spec);
	struct rt_container_status probe;
	if (rc != 0 && k->rt_ops->status(k->rt, kp->uid, &probe, 1) < 0) {
		fail_pod(kp, "RunContainerError", rt_err ? rt_err : "the runtime could not start the pod");
		goto out;
	}
	/* A container the runtime cannot start (rc != 0 but the pod is known to the runtime) keeps
	 * the pod Pending with the container Waiting, as Kubernetes does: failing the pod would make
	 * its ReplicaSet replace it at once, over and over. */
	if (rc != 0)
		log_warn("container cannot start", "pod=\"%s/%s/%s\" err=\"%s\"", json_path_str(obj, "metadata.tenant"),
			 json_path_str(obj, "metadata.namespace"), json_path_str(obj, "metadata.name"), rt_err ? rt_err : "");
	kp->state = KP_RUNTIME;
	kp->counted = true;
	n->cpu_used_m += kp->req.cpu_m;
	n->mem_used_m += kp->req.mem_m;
	n->pods_used += kp->req.pods;
out:
	if (kp->state == KP_CONFIG)
		log_info("pod waits for its configuration", "pod=\"%s/%s/%s\" container=%s message=\"%s\"",
			 json_path_str(obj, "metadata.tenant"), json_path_str(obj, "metadata.namespace"),
			 json_path_str(obj, "metadata.name"), kp->config_container, kp->config_message);
	else if (kp->state == KP_FAILED)
		log_warn("pod rejected", "pod=\"%s/%s/%s\" reason=%s message=\"%s\"", json_path_str(obj, "metadata.tenant"),
			 json_path_str(obj, "metadata.namespace"), json_path_str(obj, "metadata.name"), kp->fail_reason,
			 kp->fail_message);
	else if (verbose(k))
		log_info(adopt ? "pod adopted" : "pod started", "pod=\"%s/%s/%s\" uid=%s",
			 json_path_str(obj, "metadata.tenant"), json_path_str(obj, "metadata.namespace"),
			 json_path_str(obj, "metadata.name"), kp->uid);
	free(rt_err);
	buf_release(&err);
}

static struct kl_pod *admit(struct kl_pods *ps, struct kl_partition *p, const char *wkey, const json_t *obj,
			    long node)
{
	struct kl_pod *kp = xcalloc(1, sizeof(*kp));
	kp->seen_ms = mono_ms();
	kp->uid = xstrdup(json_path_str(obj, "metadata.uid"));
	kp->node = node;
	bool known = strmap_get(&ps->known, kp->uid) != NULL;
	if (!known && kl_phase_terminal(json_path_str(obj, "status.phase")))
		kp->state = KP_DONE;  /* finished before (or rejected): never start it again */
	else
		start(ps, p, kp, obj, known);
	file_under(ps, wkey, kp);
	return kp;
}

/* tenant/ns/name of an object for URLs. */
static char *pod_url(const json_t *obj, const char *suffix)
{
	const char *t = json_path_str(obj, "metadata.tenant");
	return xasprintf("/api/v1/tenants/%s/namespaces/%s/pods/%s%s", t && *t ? t : "system",
			 json_path_str(obj, "metadata.namespace"), json_path_str(obj, "metadata.name"), suffix);
}

static int send_status(struct kl_partition *p, const json_t *obj, const json_t *old, json_t *st)
{
	json_t *patch_st = json_deep_copy(st);
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)old, key, v)
		if (!json_object_get(st, key))
			json_object_set_new(patch_st, key, json_null());
	json_t *patch = json_pack("{s:o}", "status", patch_st);
	char *path = pod_url(obj, "/status");
	int code = rest_do(p->rc, "PATCH", path, patch, "application/merge-patch+json", NULL);
	free(path);
	json_decref(patch);
	if (code == 200 || code == 201 || code == 404)
		return 0;
	log_warn("pod status update failed", "partition=\"%s\" pod=\"%s\" code=%d", p->name,
		 json_path_str(obj, "metadata.name"), code);
	return code < 0 ? code : E_INTERNAL;
}

static int report(struct kl_pods *ps, struct kl_partition *p, const json_t *obj, struct kl_pod *kp)
{
	struct kubelet *k = ps->k;
	if (kp->state == KP_DONE)
		return 0;
	struct rt_container_status cs[KL_MAX_CONTAINERS];
	char pod_ip[64] = "";
	bool own_ip = false;
	int n = 0;
	if (kp->state == KP_CONFIG) {
		memset(&cs[0], 0, sizeof(cs[0]));
		snprintf(cs[0].name, sizeof(cs[0].name), "%s", kp->config_container ? kp->config_container : "");
		cs[0].state = RT_WAITING;
		snprintf(cs[0].reason, sizeof(cs[0].reason), "CreateContainerConfigError");
		snprintf(cs[0].message, sizeof(cs[0].message), "%s", kp->config_message ? kp->config_message : "");
		n = 1;
	}
	if (kp->state == KP_RUNTIME) {
		n = k->rt_ops->status(k->rt, kp->uid, cs, KL_MAX_CONTAINERS);
		if (n < 0)
			n = 0;
		own_ip = k->rt_ops->pod_ip && k->rt_ops->pod_ip(k->rt, kp->uid, pod_ip, sizeof(pod_ip)) == 0;
	}
	struct kl_status_in in = { .cs = cs, .ncs = (size_t)n, .host_ip = k->opt.address,
				   .pod_ip = own_ip ? pod_ip : NULL,
				   .now = now_ms() / 1000, .fail_reason = kp->fail_reason,
				   .fail_message = kp->fail_message };
	/* Build on what we sent last: the informer may not show it yet. */
	const json_t *server = json_object_get(obj, "status");
	json_t *base = json_copy((json_t *)obj);
	if (kp->sent)
		json_object_set(base, "status", kp->sent);
	json_t *st = kl_pod_status_build(base, &in);
	json_decref(base);
	int rc = 0;
	if (kl_phase_terminal(json_str(st, "phase")))
		uncount(ps, kp);
	if (!kp->start_observed && json_str(st, "phase") && !strcmp(json_str(st, "phase"), "Running")) {
		kp->start_observed = true; /* a pod Running before we saw it (kubelet restart) does not count */
		if (!(server && json_str(server, "phase") && !strcmp(json_str(server, "phase"), "Running")))
			kl_metrics_pod_start((double)(mono_ms() - kp->seen_ms) / 1000.0);
	}
	if (!(server && json_equal(st, server)) && !(kp->sent && json_equal(st, kp->sent))) {
		rc = send_status(p, obj, server, st);
		if (rc == 0) {
			json_decref(kp->sent);
			kp->sent = json_incref(st);
			if (verbose(k))
				log_info("pod status", "pod=\"%s\" phase=%s", json_path_str(obj, "metadata.name"),
					 json_str(st, "phase"));
		}
	}
	json_decref(st);
	return rc;
}

/* A running pod's volumes every VOLUME_REFRESH_MS: configmap, secret, downward API and token
 * contents brought up to date, and a disk emptyDir over its sizeLimit evicts the pod. */
static void refresh_volumes(struct kl_pods *ps, struct kl_partition *p, const char *wkey, const json_t *obj,
			    struct kl_pod *kp)
{
	struct kubelet *k = ps->k;
	int64_t now = mono_ms();
	if (kp->state != KP_RUNTIME || !volumes_on(k) || kl_phase_terminal(json_str(kp->sent, "phase")))
		return;
	if (kp->vol_next_ms && now < kp->vol_next_ms)
		return;
	bool first = kp->vol_next_ms == 0;
	kp->vol_next_ms = now + VOLUME_REFRESH_MS;
	wq_add_after(k->wq, wkey, VOLUME_REFRESH_MS);
	if (first)
		return; /* just written by the start */
	char *dir = vol_dir(k, kp->uid);
	struct buf msg = BUF_INIT;
	const char *t = json_path_str(obj, "metadata.tenant");
	if (kl_volumes_over_limit(dir, obj, &msg)) {
		log_warn("pod evicted", "pod=\"%s/%s/%s\" message=\"%s\"", t, json_path_str(obj, "metadata.namespace"),
			 json_path_str(obj, "metadata.name"), buf_cstr(&msg));
		rt_event(t && *t ? t : "system", json_path_str(obj, "metadata.namespace"), json_path_str(obj, "metadata.name"),
			 kp->uid, NULL, true, "Evicted", "%s", buf_cstr(&msg));
		if (!rt_stop_remove(ps, kp->uid, kl_pod_grace(obj)))
			strmap_put(&ps->stopping, kp->uid, NULL);
		uncount(ps, kp);
		fail_pod(kp, "Evicted", buf_cstr(&msg));
	} else if (kl_volumes_refreshable(obj)) {
		struct podenv_ips ips = { k->opt.address, k->opt.address, k->opt.address };
		char ip[64] = "";
		if (k->rt_ops->pod_ip && k->rt_ops->pod_ip(k->rt, kp->uid, ip, sizeof(ip)) == 0 && ip[0])
			ips.pod_ip = ips.pod_ips = ip;
		struct podenv_alloc alloc = { k->alloc_cpu_m, k->alloc_mem_m / 1000, 0 };
		struct env_objs *eo = xcalloc(1, sizeof(*eo));
		eo->p = p;
		eo->cache = ps->objs;
		eo->pod = obj;
		if (volumes_setup(k, eo, &ips, &alloc, NULL, &msg) != 0)
			log_warn("volume refresh failed", "pod=\"%s/%s\" err=\"%s\"", json_path_str(obj, "metadata.namespace"),
				 json_path_str(obj, "metadata.name"), buf_cstr(&msg));
		env_objs_release(eo);
		free(eo);
	}
	buf_release(&msg);
	free(dir);
}

/* The pod has a deletionTimestamp: stop it within its grace period, then delete it for good. */
static int finish_delete(struct kl_pods *ps, struct kl_partition *p, const char *wkey, const json_t *obj,
			 struct kl_pod *kp)
{
	const char *uid = json_path_str(obj, "metadata.uid");
	long long grace = kl_pod_grace(obj);
	struct kubelet *k = ps->k;
	/* stopping in the background: the pod stays (Terminating) until its containers are gone;
	 * the runtime's rt_pod_changed brings it back here */
	if (kp && kp->state == KP_RUNTIME && k->rt_ops->stop_pod(k->rt, kp->uid, grace) > 0)
		return 0;
	if (kp)
		forget(ps, wkey, kp, grace);
	else if (strmap_get(&ps->known, uid) && !rt_stop_remove(ps, uid, grace))
		return E_UNAVAILABLE; /* not ours since a restart: asked again with back-off */
	json_t *body = json_pack("{s:s, s:s, s:i, s:{s:s}}", "kind", "DeleteOptions", "apiVersion", "v1",
				 "gracePeriodSeconds", 0, "preconditions", "uid", uid);
	char *path = pod_url(obj, "");
	int code = rest_do(p->rc, "DELETE", path, body, NULL, NULL);
	free(path);
	json_decref(body);
	if (verbose(ps->k))
		log_info("pod deleted", "pod=\"%s\" uid=%s code=%d", json_path_str(obj, "metadata.name"), uid, code);
	if (code == 200 || code == 202 || code == 404 || code == 409)
		return 0;
	return code < 0 ? code : E_INTERNAL;
}

static int process(struct kl_pods *ps, const char *wkey)
{
	struct kubelet *k = ps->k;
	const char *bar = strrchr(wkey, '|');
	if (!bar)
		return 0;
	char *okey = xstrndup(wkey, (size_t)(bar - wkey));
	struct kl_partition *p = kl_partition_get(k, bar + 1);
	struct strmap_ent *e = strmap_get(&ps->pods, wkey);
	struct kl_pod *kp = e ? e->val : NULL;
	json_t *obj = NULL;
	int rc = 0;
	if (!p)
		goto out;  /* its partition went away: leave its pods as they are */
	obj = p->inf ? informer_get(p->inf, okey) : NULL;
	long node = obj ? kl_node_find(k, json_path_str(obj, "spec.nodeName")) : -1;
	const char *uid = json_path_str(obj, "metadata.uid");
	bool present = node >= 0 && uid;
	/* what the key is to the pods we run: a home, a second copy, or neither */
	struct strmap_ent *ce = kp ? NULL : strmap_get(&ps->copies, wkey);
	struct kl_pod *cp = ce ? ce->val : NULL, *owner = kp ? kp : cp;
	enum kl_pod_key role = kp ? KL_KEY_HOME : cp ? KL_KEY_COPY : KL_KEY_NEW;
	bool same = present && owner && strcmp(uid, owner->uid) == 0;
	bool elsewhere = role == KL_KEY_NEW && present && strmap_get(&ps->uids, uid);
	enum kl_pod_action act = kl_pod_key_action(role, owner ? same : present, kp ? kp->copy != NULL : elsewhere);
	if (act == KL_POD_HAND_OFF || act == KL_POD_STOP || act == KL_POD_FORGET_COPY) {
		if (act == KL_POD_HAND_OFF) {
			hand_off(ps, wkey, kp);
		} else if (act == KL_POD_FORGET_COPY) {
			forget_copy(ps, cp);
		} else {
			if (verbose(k))
				log_info("pod gone", "pod=\"%s\" uid=%s", okey, kp->uid);
			forget(ps, wkey, kp, 30);
		}
		kp = NULL;
		/* the name may hold another pod now (a new uid): a key of its own */
		act = kl_pod_key_action(KL_KEY_NEW, present, present && strmap_get(&ps->uids, uid));
	}
	if (act == KL_POD_ADD_COPY)
		add_copy(ps, wkey, uid);
	if (act != KL_POD_RUN)
		goto out;
	if (json_path(obj, "metadata.deletionTimestamp")) {
		rc = finish_delete(ps, p, wkey, obj, kp);
		goto out;
	}
	if (!kp) {
		if (strmap_get(&ps->gone, uid))
			goto out; /* stopped here while this copy of it lived: its deletion follows */
		kp = admit(ps, p, wkey, obj, node);
	} else if (kp->state == KP_CONFIG && mono_ms() >= kp->config_retry_ms) {
		kp->state = KP_RUNTIME; /* start sets it again */
		start(ps, p, kp, obj, false);
	}
	refresh_volumes(ps, p, wkey, obj, kp);
	rc = report(ps, p, obj, kp);
	if (kp->state == KP_CONFIG && kp->config_new) {
		/* again after a back-off: 1 s doubling to 10 s, as long as the object is missing */
		kp->config_new = false;
		kp->config_delay_ms = kp->config_delay_ms ? kp->config_delay_ms * 2 : CONFIG_RETRY_MIN_MS;
		if (kp->config_delay_ms > CONFIG_RETRY_MAX_MS)
			kp->config_delay_ms = CONFIG_RETRY_MAX_MS;
		kp->config_retry_ms = mono_ms() + kp->config_delay_ms;
		wq_add_after(k->wq, wkey, kp->config_delay_ms);
	}
out:
	json_decref(obj);
	kl_partition_put(p);
	free(okey);
	return rc;
}

static void enqueue_all(struct kl_pods *ps)
{
	size_t it;
	for (struct strmap_ent *e = strmap_next(&ps->pods, NULL, &it); e; e = strmap_next(&ps->pods, e, &it)) {
		struct kl_pod *kp = e->val;
		if (kp->state != KP_DONE)
			wq_add(ps->k->wq, e->key);
	}
}

/* Pods the runtime runs that no partition has any more. */
static bool collect_orphans(struct kl_pods *ps)
{
	struct kubelet *k = ps->k;
	if (!kl_partitions_synced(k))
		return false;
	char **uids = NULL;
	size_t n = k->rt_ops->list_pods(k->rt, &uids);
	for (size_t i = 0; i < n; i++) {
		if (!strmap_get(&ps->uids, uids[i]) && !strmap_get(&ps->stopping, uids[i]) &&
		    !kl_partitions_have_uid(k, uids[i])) {
			log_info("stopping orphaned pod", "uid=%s", uids[i]);
			if (!rt_stop_remove(ps, uids[i], 30))
				strmap_put(&ps->stopping, uids[i], NULL);
		}
		free(uids[i]);
	}
	free(uids);
	return true;
}

/* Removes the pods whose background stop ended. */
static void reap_stopped(struct kl_pods *ps)
{
	size_t it, n = 0;
	char **done = NULL;
	for (struct strmap_ent *e = strmap_next(&ps->stopping, NULL, &it); e; e = strmap_next(&ps->stopping, e, &it)) {
		if (rt_stop_remove(ps, e->key, 0)) {
			done = xrealloc(done, (n + 1) * sizeof(*done));
			done[n++] = xstrdup(e->key);
		}
	}
	for (size_t i = 0; i < n; i++) {
		strmap_del(&ps->stopping, done[i], NULL);
		free(done[i]);
	}
	free(done);
}

static void periodic(struct kl_pods *ps)
{
	struct kubelet *k = ps->k;
	reap_stopped(ps);
	bool changed = k->rt_ops->sync(k->rt);
	int64_t now = mono_ms();
	bool resync = now - ps->last_resync_ms >= RESYNC_MS;
	if (changed || resync)
		enqueue_all(ps);
	if (resync)
		ps->last_resync_ms = now;
	if ((resync || !ps->collected_once) && collect_orphans(ps))
		ps->collected_once = true;
}

static void *worker_main(void *arg)
{
	struct kl_pods *ps = arg;
	struct kubelet *k = ps->k;
	char *key;
	while ((key = wq_get(k->wq)) != NULL) {
		bool sync = strcmp(key, SYNC_KEY) == 0;
		if (sync) {
			periodic(ps);
		} else if (process(ps, key) != 0) {
			wq_add_rate_limited(k->wq, key);
		} else {
			wq_forget(k->wq, key);
		}
		wq_done(k->wq, key);
		if (sync)
			wq_add_after(k->wq, SYNC_KEY, SYNC_MS);
		free(key);
	}
	return NULL;
}

struct kl_pods *kl_pods_start(struct kubelet *k)
{
	struct kl_pods *ps = xcalloc(1, sizeof(*ps));
	ps->k = k;
	strmap_init(&ps->pods);
	strmap_init(&ps->copies);
	strmap_init(&ps->gone);
	strmap_init(&ps->uids);
	pthread_mutex_init(&ps->ulock, NULL);
	strmap_init(&ps->known);
	strmap_init(&ps->stopping);
	ps->last_resync_ms = mono_ms();
	ps->objs = kl_objcache_new(OBJ_CACHE_MS);
	char **uids = NULL;
	size_t n = k->rt_ops->list_pods(k->rt, &uids);
	for (size_t i = 0; i < n; i++) {
		strmap_put(&ps->known, uids[i], NULL);
		free(uids[i]);
	}
	free(uids);
	if (n)
		log_info("runtime recovered pods", "count=%zu", n);
	rt_set_pod_change_sink(on_pod_changed, ps);
	wq_add(k->wq, SYNC_KEY);
	pthread_create(&ps->thread, NULL, worker_main, ps);
	return ps;
}

void kl_pods_stop(struct kl_pods *ps)
{
	if (!ps)
		return;
	rt_set_pod_change_sink(NULL, NULL);
	wq_shutdown(ps->k->wq);
	pthread_join(ps->thread, NULL);
	strmap_release(&ps->copies, NULL);
	strmap_release(&ps->gone, NULL);
	strmap_release(&ps->pods, pod_free);
	strmap_release(&ps->uids, free);
	pthread_mutex_destroy(&ps->ulock);
	strmap_release(&ps->known, NULL);
	strmap_release(&ps->stopping, NULL);
	kl_objcache_free(ps->objs);
	free(ps);
}
