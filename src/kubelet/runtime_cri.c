/* The "cri" runtime: pods run as CRI pod sandboxes with their containers in a CRI runtime
 * (containerd's CRI plugin) reached over a unix socket (ursa/cri.h).
 *
 * State: none on disk but logs. Every sandbox and container carries labels (runtime_cri.h): the
 * pod's uid, name, namespace and tenant, the container's name and an owner label (a hash of the
 * runtime's root_dir, so kubelets sharing one containerd keep apart). create() lists them to
 * recover the pods of a previous kubelet, and start_pod adopts what it finds instead of starting
 * it again.
 *
 * Logs: the sandbox's log_directory is <root>/pods/<uid>, a container instance's log
 * <root>/pods/<uid>/<container>/<attempt>.log (CRI format, written by the runtime).
 *
 * There are no CRI events in our subset: sync() polls ListContainers (one call) and asks
 * ContainerStatus only of containers whose state changed.
 *
 * Threads: the pod worker calls the runtime_ops (but log_path); the work that takes long runs
 * elsewhere, so that one pod does not hold up the others:
 * - a pool of threads (--pod-start-parallelism) runs a pod's sandbox creation and its containers'
 *   create/start (start_pod; restarts and sandbox recreation that sync finds due);
 * - a stop (StopContainer with the grace period, StopPodSandbox) runs on a thread of its own:
 *   stop_pod returns 1 at once and 0 once the pod is stopped (the caller asks again later;
 *   rt_pod_changed tells it when);
 * - PullImage runs on the puller's threads (imagepull.c: asked again each sync until done) and
 *   the image garbage collector on its own (imagegc.c), with clients of their own.
 * A pod has at most one operation at a time: while it is busy (queued or running) only that
 * operation touches the pod's state, sync leaves the pod alone, and status()/pod_ip() show a
 * copy made when it was handed over. rt->lock guards busy and the hand-over fields (cpod), the
 * pool's queue, and what log_path reads (the pod list, names, the container arrays and their
 * launch counts); the pod list itself changes on the pod worker only.
 *
 * Files: this one (pods, containers, sandboxes, recovery, the runtime_ops), cri_pool.c (the pool
 * and the stop threads), cri_probes.c (the prober's side), cri_convert.c (pure conversions),
 * podcgroup.c (pods' cgroups); runtime_cri_impl.h holds the state they share. */
#define _GNU_SOURCE
#include "runtime_cri_impl.h"
#include "images.h"
#include "podenv.h"
#include "probes.h"
#include "runtime_common.h"
#include "ursa/buf.h"
#include "ursa/errors.h"
#include "ursa/log.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CALL_TIMEOUT_MS 15000L
#define SANDBOX_TIMEOUT_MS 180000L /* RunPodSandbox may pull the sandbox image first */
#define PULL_SHOWN_MS 3000         /* ErrImagePull shows this long before ImagePullBackOff */
#define MAX_LABELS 8
#define PULL_THREADS 3             /* image pulls at once (different images) */
#define PING_TIMEOUT_MS 5000L

static char *g_endpoint, *g_cgroup_parent;
static struct imggc_policy g_gc = { .high_pct = 85, .low_pct = 80, .min_age_ms = 120000 };
static int64_t g_gc_period_ms = 300000;

void runtime_cri_configure_image_gc(int high_pct, int low_pct, int64_t min_age_ms, int64_t period_ms)
{
	g_gc = (struct imggc_policy){ .high_pct = high_pct, .low_pct = low_pct, .min_age_ms = min_age_ms };
	g_gc_period_ms = period_ms;
}
static long long g_pod_max_pids;
static int g_parallelism = 4;

void runtime_cri_set_pod_start_parallelism(int n)
{
	g_parallelism = n < 1 ? 1 : n > 64 ? 64 : n;
}

void runtime_cri_set_pod_max_pids(long long max_pids)
{
	g_pod_max_pids = max_pids > 0 ? max_pids : 0;
	if (g_pod_max_pids && !g_cgroup_parent)
		log_warn("cri: no --cgroup-parent: the pods' pids limit (--pod-max-pids) is not applied",
			 "pod_max_pids=%lld", g_pod_max_pids);
}

void runtime_cri_configure(const char *endpoint, const char *cgroup_parent)
{
	free(g_endpoint);
	free(g_cgroup_parent);
	g_endpoint = endpoint ? xstrdup(endpoint) : NULL;
	g_cgroup_parent = cgroup_parent && *cgroup_parent ? xstrdup(cgroup_parent) : NULL;
}

/* ---- labels ---- */

/* Every *LabelsEntry message of the CRI has this layout. */
struct kv {
	ProtobufCMessage base;
	char *key, *value;
};

struct labels {
	struct kv e[MAX_LABELS];
	struct kv *p[MAX_LABELS];
	size_t n;
};

static void labels_add(struct labels *l, const ProtobufCMessageDescriptor *d, const char *key, const char *value)
{
	struct kv *e = &l->e[l->n];
	protobuf_c_message_init(d, e);
	e->key = (char *)key;
	e->value = (char *)(value ? value : "");
	l->p[l->n] = e;
	l->n++;
}

static const char *label_get(struct kv *const *entries, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (entries[i]->key && strcmp(entries[i]->key, key) == 0)
			return entries[i]->value;
	return NULL;
}
#define LABEL(msg, key) label_get((struct kv *const *)(msg)->labels, (msg)->n_labels, key)

/* FNV-1a of the root dir: the owner label value. */
static void owner_hash(const char *s, char *out, size_t max)
{
	uint64_t h = 1469598103934665603ULL;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	snprintf(out, max, "%016llx", (unsigned long long)h);
}

/* ---- sandbox config ---- */

struct sbconf {
	Runtime__V1__PodSandboxConfig config;
	Runtime__V1__PodSandboxMetadata meta;
	Runtime__V1__LinuxPodSandboxConfig linux_;
	Runtime__V1__LinuxSandboxSecurityContext sc;
	Runtime__V1__NamespaceOption ns;
	Runtime__V1__SecurityProfile seccomp;
	struct labels labels;
	struct labels annotations; /* CRI_LABEL_TENANT, for the CNI plugin (ursa-cni) */
	char hostname[64];
	char *log_dir, *cgroup;
};

static char *pod_dir(const struct runtime *rt, const char *uid)
{
	return xasprintf("%s/pods/%s", rt->root, uid);
}

static void ns_options(const struct rt_pod *pod, Runtime__V1__NamespaceOption *ns)
{
	runtime__v1__namespace_option__init(ns);
	ns->network = pod->host_network ? RUNTIME__V1__NAMESPACE_MODE__NODE : RUNTIME__V1__NAMESPACE_MODE__POD;
	ns->pid = pod->share_pid ? RUNTIME__V1__NAMESPACE_MODE__POD : RUNTIME__V1__NAMESPACE_MODE__CONTAINER;
	ns->ipc = RUNTIME__V1__NAMESPACE_MODE__POD;
}

static void sbconf_init(struct sbconf *s, const struct runtime *rt, const struct cpod *p)
{
	const struct rt_pod *pod = &p->spec;
	runtime__v1__pod_sandbox_config__init(&s->config);
	runtime__v1__pod_sandbox_metadata__init(&s->meta);
	runtime__v1__linux_pod_sandbox_config__init(&s->linux_);
	runtime__v1__linux_sandbox_security_context__init(&s->sc);
	ns_options(pod, &s->ns);
	s->meta.name = pod->name;
	s->meta.uid = pod->uid;
	s->meta.namespace_ = pod->ns;
	s->meta.attempt = p->sandbox_attempt;
	s->config.metadata = &s->meta;
	/* the node's network means the node's UTS namespace: runc refuses to set a hostname there */
	snprintf(s->hostname, sizeof(s->hostname), "%s", pod->host_network ? "" : pod->name);
	s->config.hostname = s->hostname;
	s->log_dir = pod_dir(rt, pod->uid);
	s->config.log_directory = s->log_dir;
	s->labels.n = 0;
	const ProtobufCMessageDescriptor *d = &runtime__v1__pod_sandbox_config__labels_entry__descriptor;
	labels_add(&s->labels, d, CRI_LABEL_UID, pod->uid);
	labels_add(&s->labels, d, CRI_LABEL_NAME, pod->name);
	labels_add(&s->labels, d, CRI_LABEL_NS, pod->ns);
	labels_add(&s->labels, d, CRI_LABEL_TENANT, pod->tenant);
	labels_add(&s->labels, d, CRI_LABEL_OWNER, rt->owner);
	s->config.labels = (Runtime__V1__PodSandboxConfig__LabelsEntry **)s->labels.p;
	s->config.n_labels = s->labels.n;
	/* containerd hands the sandbox's annotations to CNI plugins that ask for them (runtimeConfig
	 * io.kubernetes.cri.pod-annotations): ursa-cni puts the pod on its tenant's network */
	s->annotations.n = 0;
	labels_add(&s->annotations, &runtime__v1__pod_sandbox_config__annotations_entry__descriptor, CRI_LABEL_TENANT,
		   pod->tenant);
	s->config.annotations = (Runtime__V1__PodSandboxConfig__AnnotationsEntry **)s->annotations.p;
	s->config.n_annotations = s->annotations.n;
	s->sc.namespace_options = &s->ns;
	runtime__v1__security_profile__init(&s->seccomp); /* the pause container: RuntimeDefault */
	s->sc.seccomp = &s->seccomp;
	s->linux_.security_context = &s->sc;
	s->cgroup = g_cgroup_parent ? xasprintf("%s/pod%s", g_cgroup_parent, pod->uid) : NULL;
	if (s->cgroup)
		s->linux_.cgroup_parent = s->cgroup;
	s->config.linux = &s->linux_;
}

static void sbconf_release(struct sbconf *s)
{
	free(s->log_dir);
	free(s->cgroup);
}

/* ---- pods ---- */

static struct cpod *find_pod(struct runtime *rt, const char *uid)
{
	for (struct cpod *p = rt->pods; p; p = p->next)
		if (strcmp(p->uid, uid) == 0)
			return p;
	return NULL;
}

static void cont_release(struct cri_cont *c)
{
	img_pull_put(c->pull);
	free(c->id);
	free(c->prev_id);
	free(c->cred_server);
	free(c->cred_user);
	free(c->cred_pass);
}

static void free_pod(struct cpod *p)
{
	for (size_t i = 0; i < p->nc; i++)
		cont_release(&p->c[i]);
	free(p->c);
	if (p->has_spec)
		rt_pod_release(&p->spec);
	free(p->uid);
	free(p->tenant);
	free(p->ns);
	free(p->name);
	free(p->sandbox_id);
	free(p->shown);
	free(p);
}

static void set_waiting(struct runtime *rt, struct cri_cont *c, const char *reason, const char *message)
{
	if (c->phase != CP_WAITING || strcmp(c->reason, reason) != 0 || strcmp(c->message, message ? message : ""))
		rt->changed = true;
	c->phase = CP_WAITING;
	snprintf(c->reason, sizeof(c->reason), "%s", reason);
	snprintf(c->message, sizeof(c->message), "%s", message ? message : "");
}

static bool wants_restart(const struct cpod *p, const struct cri_term *t)
{
	if (p->stopped)
		return false;
	return p->spec.restart == RT_RESTART_ALWAYS || (p->spec.restart == RT_RESTART_ON_FAILURE && t->exit_code != 0);
}

static void on_terminated(struct runtime *rt, struct cpod *p, size_t i, const struct cri_term *t)
{
	struct cri_cont *c = &p->c[i];
	if (c->has_term) {
		c->prev = c->term;
		c->has_prev = true;
	}
	c->term = *t;
	c->has_term = true;
	c->cri_state = RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED;
	if (p->has_spec && wants_restart(p, t)) {
		c->backoff_ms = cri_backoff_next(c->backoff_ms, rt->backoff_base_ms, rt->backoff_max_ms,
						 (t->finished_at - t->started_at) * 1000);
		c->retry_at_ms = now_ms() + c->backoff_ms;
		c->phase = CP_BACKOFF;
		POD_EVENT(p, c->name, true, "BackOff", "Back-off restarting failed container %s in pod %s_%s(%s)",
			  c->name, p->name, p->ns, p->uid);
	} else {
		c->phase = CP_TERMINATED;
	}
	rt->changed = true;
}

/* Asks the runtime about c's current instance and records what changed. */
void crirt_poll_container(struct runtime *rt, struct cpod *p, size_t i)
{
	struct cri_cont *c = &p->c[i];
	Runtime__V1__ContainerStatusRequest req = RUNTIME__V1__CONTAINER_STATUS_REQUEST__INIT;
	Runtime__V1__ContainerStatusResponse *r = NULL;
	struct cri_err err;
	req.container_id = c->id;
	int rc = cri_container_status(rt->cri, &req, &r, &err);
	if (rc == E_NOT_FOUND) {
		struct cri_term t = { .exit_code = 137, .finished_at = now_ms() / 1000 };
		t.started_at = c->started_at;
		snprintf(t.reason, sizeof(t.reason), "ContainerStatusUnknown");
		snprintf(t.message, sizeof(t.message), "The container could not be located when the pod was checked");
		on_terminated(rt, p, i, &t);
		return;
	}
	if (rc != 0 || !r->status) {
		cri_free(r);
		return;
	}
	Runtime__V1__ContainerStatus *s = r->status;
	if (s->image_ref && *s->image_ref)
		snprintf(c->image_ref, sizeof(c->image_ref), "%s", s->image_ref);
	if (s->state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED) {
		struct cri_term t;
		cri_term_from_status(s, &t);
		on_terminated(rt, p, i, &t);
	} else if ((int)s->state != c->cri_state) {
		c->cri_state = (int)s->state;
		if (s->started_at > 0)
			c->started_at = s->started_at / 1000000000;
		rt->changed = true;
	}
	cri_free(r);
}

void crirt_remove_container(struct runtime *rt, const char *id)
{
	Runtime__V1__RemoveContainerRequest req = RUNTIME__V1__REMOVE_CONTAINER_REQUEST__INIT;
	struct cri_err err;
	req.container_id = (char *)id;
	int rc = cri_remove_container(rt->cri, &req, NULL, &err);
	if (rc != 0 && rc != E_NOT_FOUND)
		log_warn("cri: cannot remove container", "id=%s err=\"%s\"", id, err.message);
}

/* The image for container i: NULL when it is there (image_ref set), else the Waiting reason
 * (static) with *ret_msg (new string). */
/* ensure_image's answers besides a Waiting reason: the image's pull runs on the puller (ask again
 * soon), or the runtime does not answer (a containerd restart: change nothing, ask again later). */
static const char IMAGE_PULLING[] = "ContainerCreating", RUNTIME_DOWN[] = "RuntimeDown";

/* The outcome of c's pull, once it is known: NULL (pulled: image_ref set), "ErrImagePull" with
 * *ret_msg, or IMAGE_PULLING. */
static const char *pull_outcome(struct cri_cont *c, char **ret_msg)
{
	char *ref = NULL, *err = NULL;
	int st = img_pull_result(c->pull, &ref, &err);
	if (st == 0)
		return IMAGE_PULLING;
	img_pull_put(c->pull);
	c->pull = NULL;
	if (st < 0) {
		*ret_msg = err;
		return "ErrImagePull";
	}
	snprintf(c->image_ref, sizeof(c->image_ref), "%s", ref);
	free(ref);
	return NULL;
}

static const char *ensure_image(struct runtime *rt, struct cpod *p, size_t i, char **ret_msg)
{
	const struct rt_container *sc = &p->spec.containers[i];
	struct cri_cont *c = &p->c[i];
	struct cri_err err;
	Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
	spec.image = sc->image;
	*ret_msg = NULL;
	struct image_ref ref;
	char *perr = NULL;
	if (!sc->image || image_ref_parse(sc->image, &ref, &perr) != 0) {
		*ret_msg = perr ? perr : xstrdup("the container names no image");
		return "InvalidImageName";
	}
	image_ref_release(&ref); /* the runtime gets the name as written: it applies the same defaults */
	if (c->pull) {
		const char *reason = pull_outcome(c, ret_msg);
		if (!reason)
			POD_EVENT(p, c->name, false, "Pulled", "Successfully pulled image \"%s\" in %.3fs", sc->image,
				  (double)(mono_us() / 1000 - c->pull_started_ms) / 1000.0);
		return reason;
	}
	if (sc->pull != RT_PULL_ALWAYS) {
		Runtime__V1__ImageStatusRequest req = RUNTIME__V1__IMAGE_STATUS_REQUEST__INIT;
		Runtime__V1__ImageStatusResponse *r = NULL;
		req.image = &spec;
		int rc = cri_image_status(rt->cri, &req, &r, &err);
		if (rc == E_UNAVAILABLE)
			return RUNTIME_DOWN;
		if (rc != 0) {
			*ret_msg = xasprintf("checking image \"%s\": %s", sc->image, err.message);
			return "ErrImageInspect";
		}
		bool have = r->image && r->image->id && *r->image->id;
		if (have)
			snprintf(c->image_ref, sizeof(c->image_ref), "%s", r->image->id);
		cri_free(r);
		if (have) {
			POD_EVENT(p, c->name, false, "Pulled", "Container image \"%s\" already present on machine",
				  sc->image);
			return NULL;
		}
		if (sc->pull == RT_PULL_NEVER) {
			*ret_msg = xasprintf("Container image \"%s\" is not present with pull policy of Never",
					     sc->image);
			return "ErrImageNeverPull";
		}
	}
	/* PullImage runs on the puller's threads (joining a pull of the same image and credentials
	 * under way): a slow or hanging registry holds up this container only, not the pod worker */
	struct sbconf sb;
	sbconf_init(&sb, rt, p);
	c->pull = img_pull_get(rt->puller, sc->image, c->cred_server, c->cred_user, c->cred_pass, &sb.config);
	sbconf_release(&sb);
	c->pull_started_ms = mono_us() / 1000;
	POD_EVENT(p, c->name, false, "Pulling", "Pulling image \"%s\"", sc->image);
	const char *reason = pull_outcome(c, ret_msg);
	if (!reason)
		POD_EVENT(p, c->name, false, "Pulled", "Successfully pulled image \"%s\" in %.3fs", sc->image,
			  (double)(mono_us() / 1000 - c->pull_started_ms) / 1000.0);
	return reason;
}

static void image_failed(struct runtime *rt, struct cpod *p, size_t i, const char *reason, const char *msg)
{
	struct cri_cont *c = &p->c[i];
	c->pull_backoff_ms = cri_backoff_next(c->pull_backoff_ms, rt->backoff_base_ms, rt->backoff_max_ms, 0);
	c->pull_failed_ms = now_ms();
	c->retry_at_ms = c->pull_failed_ms + c->pull_backoff_ms;
	set_waiting(rt, c, reason, msg);
	log_info("cri: image not available", "pod=\"%s/%s\" container=%s reason=%s msg=\"%s\"", p->ns, p->name, c->name,
		 reason, msg);
	const char *image = p->spec.containers[i].image ? p->spec.containers[i].image : "";
	if (strcmp(reason, "ErrImagePull") == 0) {
		POD_EVENT(p, c->name, true, "Failed", "Failed to pull image \"%s\": %s", image, msg ? msg : "");
		POD_EVENT(p, c->name, true, "Failed", "Error: %s", reason);
		POD_EVENT(p, c->name, false, "BackOff", "Back-off pulling image \"%s\"", image);
	} else if (strcmp(reason, "ErrImageNeverPull") == 0) {
		POD_EVENT(p, c->name, true, reason, "%s", msg ? msg : "");
	} else {
		POD_EVENT(p, c->name, true, "InspectFailed", "%s", msg ? msg : "");
		POD_EVENT(p, c->name, true, "Failed", "Error: %s", reason);
	}
}

/* runAsNonRoot without runAsUser: NULL when the image's user is not root, else the Waiting reason
 * with *ret_msg (new string), as Kubernetes' kubelet refuses it. */
static const char *image_user_refusal(struct runtime *rt, struct cpod *p, size_t i, char **ret_msg)
{
	const struct rt_container *sc = &p->spec.containers[i];
	Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
	Runtime__V1__ImageStatusRequest req = RUNTIME__V1__IMAGE_STATUS_REQUEST__INIT;
	Runtime__V1__ImageStatusResponse *r = NULL;
	struct cri_err err;
	spec.image = p->c[i].image_ref[0] ? p->c[i].image_ref : sc->image;
	req.image = &spec;
	if (cri_image_status(rt->cri, &req, &r, &err) != 0) {
		*ret_msg = xasprintf("checking the user of image \"%s\": %s", sc->image, err.message);
		return "CreateContainerConfigError";
	}
	const char *reason = cri_nonroot_refusal(r->image, &p->spec, sc->name, ret_msg);
	cri_free(r);
	return reason;
}

/* Creates and starts a new instance of container i (pulling its image first). */
static void launch(struct runtime *rt, struct cpod *p, size_t i)
{
	const struct rt_container *sc = &p->spec.containers[i];
	struct cri_cont *c = &p->c[i];
	char *msg = NULL;
	struct podenv_copy envc; /* the env, command and args with the sandbox's IP (podenv.h) */
	const char *reason = ensure_image(rt, p, i, &msg);
	if (reason == IMAGE_PULLING || reason == RUNTIME_DOWN) {
		/* the status stays as it is (ContainerCreating, or the last pull's back-off): the next
		 * sync asks again */
		c->retry_at_ms = now_ms() + (reason == RUNTIME_DOWN ? 2000 : 0);
		return;
	}
	if (reason) {
		image_failed(rt, p, i, reason, msg);
		free(msg);
		return;
	}
	c->pull_backoff_ms = 0;
	if (sc->sec.non_root && !sc->ids.has_uid && (reason = image_user_refusal(rt, p, i, &msg))) {
		c->backoff_ms = cri_backoff_next(c->backoff_ms, rt->backoff_base_ms, rt->backoff_max_ms, 0);
		c->retry_at_ms = now_ms() + c->backoff_ms;
		set_waiting(rt, c, reason, msg);
		POD_EVENT(p, c->name, true, "Failed", "Error: %s", msg ? msg : reason);
		free(msg);
		return;
	}

	struct sbconf sb;
	sbconf_init(&sb, rt, p);
	sc = podenv_finished(sc, p->ip, &envc);
	Runtime__V1__ContainerConfig cc = RUNTIME__V1__CONTAINER_CONFIG__INIT;
	Runtime__V1__ContainerMetadata meta = RUNTIME__V1__CONTAINER_METADATA__INIT;
	Runtime__V1__ImageSpec image = RUNTIME__V1__IMAGE_SPEC__INIT;
	Runtime__V1__LinuxContainerConfig lc = RUNTIME__V1__LINUX_CONTAINER_CONFIG__INIT;
	Runtime__V1__LinuxContainerResources res = RUNTIME__V1__LINUX_CONTAINER_RESOURCES__INIT;
	Runtime__V1__LinuxContainerSecurityContext csc = RUNTIME__V1__LINUX_CONTAINER_SECURITY_CONTEXT__INIT;
	Runtime__V1__NamespaceOption ns;
	Runtime__V1__Int64Value uid = RUNTIME__V1__INT64_VALUE__INIT, gid = RUNTIME__V1__INT64_VALUE__INIT;
	struct labels labels = { .n = 0 };
	const ProtobufCMessageDescriptor *d = &runtime__v1__container_config__labels_entry__descriptor;
	int attempt = c->launches;
	meta.name = sc->name;
	meta.attempt = (uint32_t)attempt;
	cc.metadata = &meta;
	image.image = c->image_ref[0] ? c->image_ref : sc->image;
	cc.image = &image;
	size_t ncmd = 0, nargs = 0;
	if (!sc->default_command) {
		for (; sc->command && sc->command[ncmd]; ncmd++)
			;
		for (; sc->args && sc->args[nargs]; nargs++)
			;
		cc.command = sc->command;
		cc.n_command = ncmd;
		cc.args = sc->args;
		cc.n_args = nargs;
	}
	cc.working_dir = sc->working_dir ? sc->working_dir : "";
	cc.stdin = sc->stdin_open;
	cc.stdin_once = sc->stdin_once;
	cc.tty = sc->tty;
	Runtime__V1__KeyValue *envs = xcalloc(sc->nenv ? sc->nenv : 1, sizeof(*envs));
	Runtime__V1__KeyValue **envp = xcalloc(sc->nenv ? sc->nenv : 1, sizeof(*envp));
	for (size_t e = 0; e < sc->nenv; e++) {
		runtime__v1__key_value__init(&envs[e]);
		envs[e].key = sc->env[e].name;
		envs[e].value = sc->env[e].value;
		envp[e] = &envs[e];
	}
	cc.envs = envp;
	cc.n_envs = sc->nenv;
	Runtime__V1__Mount *mnts = xcalloc(sc->nmounts + 1, sizeof(*mnts));
	Runtime__V1__Mount **mntp = xcalloc(sc->nmounts + 1, sizeof(*mntp));
	for (size_t m = 0; m < sc->nmounts; m++) { /* volumes (volumes.h) */
		runtime__v1__mount__init(&mnts[m]);
		mnts[m].container_path = sc->mounts[m].container_path;
		mnts[m].host_path = sc->mounts[m].host_path;
		mnts[m].readonly = sc->mounts[m].readonly;
		mntp[m] = &mnts[m];
	}
	cc.mounts = mntp;
	cc.n_mounts = sc->nmounts;
	labels_add(&labels, d, CRI_LABEL_UID, p->spec.uid);
	labels_add(&labels, d, CRI_LABEL_NAME, p->spec.name);
	labels_add(&labels, d, CRI_LABEL_NS, p->spec.ns);
	labels_add(&labels, d, CRI_LABEL_TENANT, p->spec.tenant);
	labels_add(&labels, d, CRI_LABEL_OWNER, rt->owner);
	labels_add(&labels, d, CRI_LABEL_CONTAINER, sc->name);
	cc.labels = (Runtime__V1__ContainerConfig__LabelsEntry **)labels.p;
	cc.n_labels = labels.n;
	char *log_rel = xasprintf("%s/%d.log", sc->name, attempt);
	cc.log_path = log_rel;
	cri_linux_resources(&sc->res, &res);
	ns_options(&p->spec, &ns);
	csc.namespace_options = &ns;
	if (sc->ids.has_uid) {
		uid.value = sc->ids.uid;
		csc.run_as_user = &uid;
	}
	if (sc->ids.has_gid) {
		gid.value = sc->ids.gid;
		csc.run_as_group = &gid;
	}
	int64_t groups[RT_MAX_GROUPS];
	for (unsigned g = 0; g < sc->ids.ngroups; g++)
		groups[g] = sc->ids.groups[g];
	csc.supplemental_groups = groups;
	csc.n_supplemental_groups = sc->ids.ngroups;
	Runtime__V1__SecurityProfile seccomp;
	char *seccomp_root = xasprintf("%s/seccomp", rt->root), *seccomp_ref;
	cri_seccomp_profile(&sc->sec, seccomp_root, &seccomp, &seccomp_ref);
	free(seccomp_root);
	csc.seccomp = &seccomp;
	csc.no_new_privs = sc->sec.no_new_privs;
	Runtime__V1__Capability caps = RUNTIME__V1__CAPABILITY__INIT;
	char *cap_add[RT_MAX_CAPS], *cap_drop[RT_MAX_CAPS];
	for (unsigned k = 0; k < sc->sec.nadd; k++)
		cap_add[k] = (char *)sc->sec.cap_add[k];
	for (unsigned k = 0; k < sc->sec.ndrop; k++)
		cap_drop[k] = (char *)sc->sec.cap_drop[k];
	caps.add_capabilities = cap_add;
	caps.n_add_capabilities = sc->sec.nadd;
	caps.drop_capabilities = cap_drop;
	caps.n_drop_capabilities = sc->sec.ndrop;
	if (sc->sec.nadd || sc->sec.ndrop) /* none: the runtime's default set */
		csc.capabilities = &caps;
	lc.resources = &res;
	lc.security_context = &csc;
	cc.linux = &lc;

	Runtime__V1__CreateContainerRequest req = RUNTIME__V1__CREATE_CONTAINER_REQUEST__INIT;
	Runtime__V1__CreateContainerResponse *cr = NULL;
	struct cri_err err;
	req.pod_sandbox_id = p->sandbox_id;
	req.config = &cc;
	req.sandbox_config = &sb.config;
	int rc = cri_call(rt->cri, "/runtime.v1.RuntimeService/CreateContainer", &req.base,
			  &runtime__v1__create_container_response__descriptor, 60000, (ProtobufCMessage **)&cr, &err);
	free(log_rel);
	free(envs);
	free(envp);
	free(mnts);
	free(mntp);
	free(seccomp_ref);
	sbconf_release(&sb);
	podenv_copy_release(&envc);
	sc = &p->spec.containers[i];
	if (rc == E_UNAVAILABLE) { /* the runtime is away (restarting): nothing was created, try again */
		c->retry_at_ms = now_ms() + 2000;
		return;
	}
	if (rc != 0) {
		c->backoff_ms = cri_backoff_next(c->backoff_ms, rt->backoff_base_ms, rt->backoff_max_ms, 0);
		c->retry_at_ms = now_ms() + c->backoff_ms;
		set_waiting(rt, c, "CreateContainerError", err.message);
		POD_EVENT(p, c->name, true, "Failed", "Error: %s", err.message);
		return;
	}
	/* keep the newest instance and the one before it (lastState, logs --previous) */
	char *older = c->prev_id;
	pthread_mutex_lock(&rt->lock);
	c->prev_id = c->id;
	c->id = xstrdup(cr->container_id);
	c->launches = attempt + 1;
	pthread_mutex_unlock(&rt->lock);
	cri_free(cr);
	if (older) {
		crirt_remove_container(rt, older);
		char *old_log = xasprintf("%s/pods/%s/%s/%d.log", rt->root, p->uid, sc->name, attempt - 2);
		unlink(old_log); /* the logs of the two newest instances stay (logs --previous) */
		free(old_log);
	}
	free(older);
	c->phase = CP_RUNNING;
	c->cri_state = RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED;
	c->reason[0] = c->message[0] = '\0';
	rt->changed = true;
	POD_EVENT(p, c->name, false, "Created", "Created container: %s", c->name);

	Runtime__V1__StartContainerRequest sreq = RUNTIME__V1__START_CONTAINER_REQUEST__INIT;
	sreq.container_id = c->id;
	rc = cri_call(rt->cri, "/runtime.v1.RuntimeService/StartContainer", &sreq.base,
		      &runtime__v1__start_container_response__descriptor, 60000, NULL, &err);
	if (rc != 0) {
		struct cri_term t = { .exit_code = 128, .finished_at = now_ms() / 1000 };
		t.started_at = t.finished_at;
		snprintf(t.reason, sizeof(t.reason), "StartError");
		snprintf(t.message, sizeof(t.message), "%.255s", err.message);
		POD_EVENT(p, c->name, true, "Failed", "Error: %s", err.message);
		on_terminated(rt, p, i, &t);
		return;
	}
	POD_EVENT(p, c->name, false, "Started", "Started container %s", c->name);
	crirt_post_start(rt, p, i); /* hooks.h: while it runs the pod is busy, its status the one handed over */
	crirt_poll_container(rt, p, i);
}

static void sandbox_status(struct runtime *rt, struct cpod *p)
{
	Runtime__V1__PodSandboxStatusRequest req = RUNTIME__V1__POD_SANDBOX_STATUS_REQUEST__INIT;
	Runtime__V1__PodSandboxStatusResponse *r = NULL;
	struct cri_err err;
	req.pod_sandbox_id = p->sandbox_id;
	if (cri_pod_sandbox_status(rt->cri, &req, &r, &err) != 0)
		return;
	if (r->status) {
		p->sandbox_ready = r->status->state == RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY;
		const char *ip = r->status->network && r->status->network->ip ? r->status->network->ip : "";
		if (strcmp(ip, p->ip) != 0)
			rt->changed = true;
		snprintf(p->ip, sizeof(p->ip), "%s", ip);
	}
	cri_free(r);
}

void crirt_stop_sandbox(struct runtime *rt, const char *id)
{
	Runtime__V1__StopPodSandboxRequest req = RUNTIME__V1__STOP_POD_SANDBOX_REQUEST__INIT;
	struct cri_err err;
	req.pod_sandbox_id = (char *)id;
	int rc = cri_call(rt->cri, "/runtime.v1.RuntimeService/StopPodSandbox", &req.base,
			  &runtime__v1__stop_pod_sandbox_response__descriptor, 120000, NULL, &err);
	if (rc != 0 && rc != E_NOT_FOUND)
		log_warn("cri: cannot stop sandbox", "id=%s err=\"%s\"", id, err.message);
}

void crirt_remove_sandbox(struct runtime *rt, const char *id)
{
	Runtime__V1__RemovePodSandboxRequest req = RUNTIME__V1__REMOVE_POD_SANDBOX_REQUEST__INIT;
	struct cri_err err;
	req.pod_sandbox_id = (char *)id;
	int rc = cri_call(rt->cri, "/runtime.v1.RuntimeService/RemovePodSandbox", &req.base,
			  &runtime__v1__remove_pod_sandbox_response__descriptor, 120000, NULL, &err);
	if (rc != 0 && rc != E_NOT_FOUND)
		log_warn("cri: cannot remove sandbox", "id=%s err=\"%s\"", id, err.message);
}

/* RunPodSandbox; on failure every container waits (ContainerCreating with the error) and the
 * sandbox is tried again after a back-off. */
static bool run_sandbox(struct runtime *rt, struct cpod *p)
{
	struct sbconf sb;
	sbconf_init(&sb, rt, p);
	rt_mkdir_p(sb.log_dir, 0755);
	Runtime__V1__RunPodSandboxRequest req = RUNTIME__V1__RUN_POD_SANDBOX_REQUEST__INIT;
	Runtime__V1__RunPodSandboxResponse *r = NULL;
	struct cri_err err;
	req.config = &sb.config;
	cri_pod_pids_limit(sb.cgroup, g_pod_max_pids);
	int rc = cri_call(rt->cri, "/runtime.v1.RuntimeService/RunPodSandbox", &req.base,
			  &runtime__v1__run_pod_sandbox_response__descriptor, SANDBOX_TIMEOUT_MS,
			  (ProtobufCMessage **)&r, &err);
	sbconf_release(&sb);
	if (rc != 0) {
		p->sandbox_backoff_ms =
			cri_backoff_next(p->sandbox_backoff_ms, rt->backoff_base_ms, rt->backoff_max_ms, 0);
		p->sandbox_retry_ms = now_ms() + p->sandbox_backoff_ms;
		snprintf(p->sandbox_error, sizeof(p->sandbox_error), "Failed to create pod sandbox: %.200s",
			 err.message[0] ? err.message : err_reason(rc));
		for (size_t i = 0; i < p->nc; i++)
			set_waiting(rt, &p->c[i], "ContainerCreating", p->sandbox_error);
		log_warn("cri: cannot run pod sandbox", "pod=\"%s/%s\" err=\"%s\"", p->ns, p->name, p->sandbox_error);
		return false;
	}
	p->sandbox_id = xstrdup(r->pod_sandbox_id);
	p->sandbox_backoff_ms = 0;
	p->sandbox_error[0] = '\0';
	cri_free(r);
	sandbox_status(rt, p);
	rt->changed = true;
	return true;
}

/* Whether crirt_advance(p, false) has something to do now: a sandbox to try again, a container to
 * (re)start or whose pull to look at, ErrImagePull to turn into ImagePullBackOff. */
static bool advance_due(const struct cpod *p, int64_t now)
{
	bool waiting = false;
	for (size_t i = 0; i < p->nc; i++) {
		const struct cri_cont *c = &p->c[i];
		if (c->phase != CP_WAITING && c->phase != CP_BACKOFF)
			continue;
		waiting = true;
		if (p->sandbox_id && (now >= c->retry_at_ms || strcmp(c->reason, "ErrImagePull") == 0))
			return true;
	}
	return waiting && !p->sandbox_id && now >= p->sandbox_retry_ms;
}

/* Starts what should run and is not running: the sandbox, then each waiting container. */
void crirt_advance(struct runtime *rt, struct cpod *p, bool force)
{
	int64_t now = now_ms();
	if (!p->sandbox_id) {
		bool needed = false;
		for (size_t i = 0; i < p->nc; i++)
			needed = needed || p->c[i].phase == CP_WAITING || p->c[i].phase == CP_BACKOFF;
		if (!needed || (!force && now < p->sandbox_retry_ms))
			return;
		if (!run_sandbox(rt, p))
			return;
		force = true;
	}
	for (size_t i = 0; i < p->nc; i++) {
		struct cri_cont *c = &p->c[i];
		if (c->phase == CP_WAITING && strcmp(c->reason, "ErrImagePull") == 0) {
			int64_t shown = c->pull_backoff_ms / 2 < PULL_SHOWN_MS ? c->pull_backoff_ms / 2 : PULL_SHOWN_MS;
			if (now >= c->pull_failed_ms + shown && now < c->retry_at_ms) {
				char *m = xasprintf("Back-off pulling image \"%s\"", p->spec.containers[i].image);
				set_waiting(rt, c, "ImagePullBackOff", m);
				free(m);
			}
		}
		if ((c->phase == CP_WAITING || c->phase == CP_BACKOFF) && (force || now >= c->retry_at_ms))
			launch(rt, p, i);
	}
}

/* ---- recovery ---- */

static struct cpod *new_pod(struct runtime *rt, const char *uid, const char *tenant, const char *ns, const char *name)
{
	struct cpod *p = xcalloc(1, sizeof(*p));
	p->uid = xstrdup(uid);
	p->tenant = xstrdup(tenant ? tenant : "system");
	p->ns = xstrdup(ns ? ns : "default");
	p->name = xstrdup(name ? name : "");
	p->c = xcalloc(1, sizeof(*p->c));
	pthread_mutex_lock(&rt->lock);
	p->next = rt->pods;
	rt->pods = p;
	pthread_mutex_unlock(&rt->lock);
	return p;
}

static struct cri_cont *find_cont(struct cpod *p, const char *name)
{
	for (size_t i = 0; i < p->nc; i++)
		if (strcmp(p->c[i].name, name) == 0)
			return &p->c[i];
	return NULL;
}

static Runtime__V1__ListContainersResponse *list_containers(struct runtime *rt)
{
	Runtime__V1__ListContainersRequest req = RUNTIME__V1__LIST_CONTAINERS_REQUEST__INIT;
	Runtime__V1__ContainerFilter f = RUNTIME__V1__CONTAINER_FILTER__INIT;
	Runtime__V1__ListContainersResponse *r = NULL;
	struct labels sel = { .n = 0 };
	struct cri_err err;
	labels_add(&sel, &runtime__v1__container_filter__label_selector_entry__descriptor, CRI_LABEL_OWNER, rt->owner);
	f.label_selector = (Runtime__V1__ContainerFilter__LabelSelectorEntry **)sel.p;
	f.n_label_selector = sel.n;
	req.filter = &f;
	if (cri_list_containers(rt->cri, &req, &r, &err) != 0)
		return NULL;
	return r;
}

/* Finds this runtime's sandboxes and containers (a kubelet restart): one pod per uid, with
 * its newest sandbox, and per container name the newest instance and the one before. */
static bool recover(struct runtime *rt)
{
	Runtime__V1__ListPodSandboxRequest req = RUNTIME__V1__LIST_POD_SANDBOX_REQUEST__INIT;
	Runtime__V1__PodSandboxFilter f = RUNTIME__V1__POD_SANDBOX_FILTER__INIT;
	Runtime__V1__ListPodSandboxResponse *r = NULL;
	struct labels sel = { .n = 0 };
	struct cri_err err;
	labels_add(&sel, &runtime__v1__pod_sandbox_filter__label_selector_entry__descriptor, CRI_LABEL_OWNER,
		   rt->owner);
	f.label_selector = (Runtime__V1__PodSandboxFilter__LabelSelectorEntry **)sel.p;
	f.n_label_selector = sel.n;
	req.filter = &f;
	int rc = cri_list_pod_sandbox(rt->cri, &req, &r, &err);
	if (rc != 0) {
		log_warn("cri: cannot list pod sandboxes", "err=\"%s\"", err.message);
		return false;
	}
	for (size_t i = 0; i < r->n_items; i++) {
		Runtime__V1__PodSandbox *sb = r->items[i];
		const char *uid = LABEL(sb, CRI_LABEL_UID);
		if (!uid || !*uid || !sb->metadata)
			continue;
		struct cpod *p = find_pod(rt, uid);
		if (p && p->sandbox_attempt >= sb->metadata->attempt)
			continue;
		if (!p)
			p = new_pod(rt, uid, LABEL(sb, CRI_LABEL_TENANT), LABEL(sb, CRI_LABEL_NS),
				    LABEL(sb, CRI_LABEL_NAME));
		free(p->sandbox_id);
		p->sandbox_id = xstrdup(sb->id);
		p->sandbox_attempt = sb->metadata->attempt;
		p->sandbox_ready = sb->state == RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY;
	}
	cri_free(r);
	Runtime__V1__ListContainersResponse *lc = list_containers(rt);
	if (!lc) { /* what runs in the sandboxes is unknown: adopting now would start containers again */
		log_warn("cri: cannot list containers", "endpoint=\"%s\"", g_endpoint);
		return false;
	}
	for (size_t i = 0; lc && i < lc->n_containers; i++) {
		Runtime__V1__Container *ct = lc->containers[i];
		const char *uid = LABEL(ct, CRI_LABEL_UID);
		struct cpod *p = uid ? find_pod(rt, uid) : NULL;
		if (!p || !ct->metadata || !ct->metadata->name || !p->sandbox_id ||
		    strcmp(ct->pod_sandbox_id, p->sandbox_id) != 0)
			continue;
		struct cri_cont *c = find_cont(p, ct->metadata->name);
		if (!c) {
			pthread_mutex_lock(&rt->lock);
			p->c = xrealloc(p->c, (p->nc + 1) * sizeof(*p->c));
			c = &p->c[p->nc++];
			memset(c, 0, sizeof(*c));
			snprintf(c->name, sizeof(c->name), "%s", ct->metadata->name);
			pthread_mutex_unlock(&rt->lock);
		}
		int attempt = (int)ct->metadata->attempt;
		if (attempt + 1 > c->launches) {
			free(c->prev_id);
			c->prev_id = c->id;
			c->id = xstrdup(ct->id);
			c->launches = attempt + 1;
			c->cri_state = (int)ct->state;
		} else if (!c->prev_id || attempt + 1 == c->launches - 1) {
			free(c->prev_id);
			c->prev_id = xstrdup(ct->id);
		}
	}
	cri_free(lc);
	size_t n = 0;
	for (struct cpod *p = rt->pods; p; p = p->next)
		n++;
	if (n)
		log_info("cri: found pods of a previous run", "count=%zu", n);
	return true;
}

/* Fills the termination of an exited instance (lastState after a restart). */
static bool fetch_term(struct runtime *rt, const char *id, struct cri_term *t)
{
	Runtime__V1__ContainerStatusRequest req = RUNTIME__V1__CONTAINER_STATUS_REQUEST__INIT;
	Runtime__V1__ContainerStatusResponse *r = NULL;
	struct cri_err err;
	req.container_id = (char *)id;
	if (cri_container_status(rt->cri, &req, &r, &err) != 0)
		return false;
	bool ok = r->status && r->status->state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED;
	if (ok)
		cri_term_from_status(r->status, t);
	cri_free(r);
	return ok;
}

/* ---- the runtime_ops ---- */

static void cri_rt_destroy(struct runtime *rt);

static struct runtime *cri_rt_create(const char *root_dir, const char *self_exe)
{
	(void)self_exe;
	if (!g_endpoint || rt_mkdir_p(root_dir, 0755) != 0)
		return NULL;
	struct cri *cri = cri_open(g_endpoint, CALL_TIMEOUT_MS);
	if (!cri) {
		log_error("cri: bad endpoint", "endpoint=\"%s\"", g_endpoint);
		return NULL;
	}
	struct runtime *rt = xcalloc(1, sizeof(*rt));
	rt->root = xstrdup(root_dir);
	rt->cri = cri;
	pthread_mutex_init(&rt->lock, NULL);
	pthread_cond_init(&rt->work, NULL);
	pthread_cond_init(&rt->idle, NULL);
	owner_hash(root_dir, rt->owner, sizeof(rt->owner));
	rt->backoff_base_ms = rt_backoff_base_ms();
	rt->backoff_max_ms = 30 * rt->backoff_base_ms;
	snprintf(rt->runtime_name, sizeof(rt->runtime_name), "cri");
	/* the runtime may come up after the kubelet: wait a little for it */
	for (int attempt = 0;; attempt++) {
		Runtime__V1__VersionRequest vreq = RUNTIME__V1__VERSION_REQUEST__INIT;
		Runtime__V1__VersionResponse *v = NULL;
		struct cri_err err;
		vreq.version = "v1";
		int rc = cri_version(cri, &vreq, &v, &err);
		if (rc == 0) {
			if (v->runtime_name && *v->runtime_name && rt_path_component_ok(v->runtime_name))
				snprintf(rt->runtime_name, sizeof(rt->runtime_name), "%s", v->runtime_name);
			log_info("cri: runtime", "endpoint=\"%s\" name=%s version=%s", g_endpoint, v->runtime_name,
				 v->runtime_version);
			cri_free(v);
			break;
		}
		if (attempt == 30) {
			log_error("cri: runtime not reachable", "endpoint=\"%s\" err=\"%s\"", g_endpoint, err.message);
			cri_close(cri);
			pthread_mutex_destroy(&rt->lock);
			pthread_cond_destroy(&rt->work);
			pthread_cond_destroy(&rt->idle);
			free(rt->root);
			free(rt);
			return NULL;
		}
		usleep(1000 * 1000);
	}
	/* a runtime that answers Version but not the lists (a containerd restarting): wait for them,
	 * since pods found later would be started a second time */
	for (int attempt = 0; !recover(rt); attempt++) {
		if (attempt == 30) {
			log_error("cri: cannot list the runtime's sandboxes and containers", "endpoint=\"%s\"", g_endpoint);
			cri_rt_destroy(rt);
			return NULL;
		}
		usleep(1000 * 1000);
	}
	rt->puller = img_puller_start(g_endpoint, PULL_THREADS);
	rt->gc = img_gc_start(g_endpoint, &g_gc, g_gc_period_ms);
	rt->pool = xcalloc((size_t)g_parallelism, sizeof(*rt->pool));
	for (int i = 0; i < g_parallelism; i++)
		if (pthread_create(&rt->pool[rt->npool], NULL, crirt_pool_main, rt) == 0)
			rt->npool++;
	if (!rt->npool) {
		log_error("cri: cannot start the pod start threads", "count=%d", g_parallelism);
		cri_rt_destroy(rt);
		return NULL;
	}
	return rt;
}

int runtime_cri_ping(char *ret_err, size_t max)
{
	struct cri *cri = g_endpoint ? cri_open(g_endpoint, PING_TIMEOUT_MS) : NULL;
	if (!cri) {
		snprintf(ret_err, max, "malformed endpoint \"%s\" (unix:///absolute/path)",
			 g_endpoint ? g_endpoint : "");
		return -1;
	}
	Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
	struct cri_err err;
	req.version = "v1";
	int rc = cri_version(cri, &req, NULL, &err);
	snprintf(ret_err, max, "%s", rc == 0 ? "" : err.message[0] ? err.message : err_reason(rc));
	cri_close(cri);
	return rc == 0 ? 0 : rc;
}

static void cri_rt_destroy(struct runtime *rt)
{
	if (!rt)
		return;
	prober_forget_owner(rt);
	/* operations under way end first (a stop waits out its grace period); queued ones are
	 * dropped: what they would have started is adopted by the next kubelet */
	pthread_mutex_lock(&rt->lock);
	rt->quit = true;
	pthread_cond_broadcast(&rt->work);
	pthread_mutex_unlock(&rt->lock);
	for (size_t i = 0; i < rt->npool; i++)
		pthread_join(rt->pool[i], NULL);
	free(rt->pool);
	pthread_mutex_lock(&rt->lock);
	while (rt->nstoppers)
		pthread_cond_wait(&rt->idle, &rt->lock);
	pthread_mutex_unlock(&rt->lock);
	img_gc_stop(rt->gc);
	img_puller_stop(rt->puller);
	while (rt->pods) {
		struct cpod *p = rt->pods;
		rt->pods = p->next;
		free_pod(p);
	}
	cri_close(rt->cri);
	pthread_mutex_destroy(&rt->lock);
	pthread_cond_destroy(&rt->work);
	pthread_cond_destroy(&rt->idle);
	free(rt->root);
	free(rt);
}

/* Gives p its spec: containers in spec order, matched by name with what recovery found. */
static void attach_spec(struct runtime *rt, struct cpod *p, const struct rt_pod *pod)
{
	struct cri_cont *c = xcalloc(pod->ncontainers ? pod->ncontainers : 1, sizeof(*c));
	for (size_t i = 0; i < pod->ncontainers; i++) {
		struct cri_cont *old = find_cont(p, pod->containers[i].name);
		if (old) {
			c[i] = *old;
			memset(old, 0, sizeof(*old));
		}
		snprintf(c[i].name, sizeof(c[i].name), "%s", pod->containers[i].name);
		const struct rt_pull_cred *cred = pod->containers[i].pull_cred;
		if (cred) {
			c[i].cred_server = cred->server ? xstrdup(cred->server) : NULL;
			c[i].cred_user = cred->username ? xstrdup(cred->username) : NULL;
			c[i].cred_pass = cred->password ? xstrdup(cred->password) : NULL;
		}
	}
	pthread_mutex_lock(&rt->lock);
	struct cri_cont *oc = p->c;
	size_t on = p->nc;
	p->c = c;
	p->nc = pod->ncontainers;
	rt_pod_copy(&p->spec, pod);
	for (size_t i = 0; i < pod->ncontainers; i++) {
		p->spec.containers[i].pull = pod->containers[i].pull;
		p->spec.containers[i].res = pod->containers[i].res;
		p->spec.containers[i].default_command = pod->containers[i].default_command;
		p->spec.containers[i].sec = pod->containers[i].sec;
	}
	p->spec.host_network = pod->host_network;
	p->spec.share_pid = pod->share_pid;
	p->has_spec = true;
	free(p->tenant);
	free(p->ns);
	free(p->name);
	p->tenant = xstrdup(pod->tenant);
	p->ns = xstrdup(pod->ns);
	p->name = xstrdup(pod->name);
	pthread_mutex_unlock(&rt->lock);
	/* instances of containers no longer in the spec go */
	for (size_t i = 0; i < on; i++) {
		if (oc[i].id)
			crirt_remove_container(rt, oc[i].id);
		if (oc[i].prev_id)
			crirt_remove_container(rt, oc[i].prev_id);
		cont_release(&oc[i]);
	}
	free(oc);
}

/* An adopted container: its current state decides what comes next. */
static void adopt_container(struct runtime *rt, struct cpod *p, size_t i)
{
	struct cri_cont *c = &p->c[i];
	if (!c->id) {
		c->phase = CP_WAITING;
		return;
	}
	if (c->prev_id && fetch_term(rt, c->prev_id, &c->term))
		c->has_term = true;
	c->phase = CP_RUNNING;
	c->cri_state = -1;
	crirt_poll_container(rt, p, i); /* exited meanwhile: restarted or terminated per the policy */
	if (c->phase == CP_BACKOFF)
		c->retry_at_ms = now_ms(); /* it ended while nobody watched: restart at once */
}

static int cri_rt_start_pod(struct runtime *rt, const struct rt_pod *pod, char **ret_err)
{
	*ret_err = NULL;
	struct cpod *p = find_pod(rt, pod->uid);
	if (p && p->has_spec)
		return 0;
	if (!p)
		p = new_pod(rt, pod->uid, pod->tenant, pod->ns, pod->name);
	crirt_wait_idle(rt, p); /* a recovered pod being stopped (rare) */
	attach_spec(rt, p, pod);
	if (p->sandbox_id && p->sandbox_ready) {
		/* adoption is quick (status calls): done here so that the status never shows less */
		sandbox_status(rt, p);
		for (size_t i = 0; i < p->nc; i++)
			adopt_container(rt, p, i);
		log_info("cri: pod adopted", "pod=\"%s/%s\" sandbox=%.12s ip=%s", p->ns, p->name, p->sandbox_id, p->ip);
	}
	crirt_dispatch(rt, p, OP_START);
	rt->changed = true;
	return 0;
}

static int cri_rt_stop_pod(struct runtime *rt, const char *uid, long long grace_s)
{
	struct cpod *p = find_pod(rt, uid);
	if (!p)
		return 0;
	prober_forget_pod(uid);
	if (grace_s < 0)
		grace_s = 0;
	pthread_mutex_lock(&rt->lock);
	bool done = p->stop_done, busy = p->busy;
	if (!done && busy && p->op != OP_STOP && !p->stop_wanted) {
		p->stop_wanted = true; /* after the operation under way (crirt_op_done) */
		p->stop_grace_s = grace_s;
	} else if (!done && !busy) {
		p->stop_grace_s = grace_s;
	}
	pthread_mutex_unlock(&rt->lock);
	if (done)
		return 0;
	if (!busy)
		crirt_dispatch(rt, p, OP_STOP);
	return 1;
}

/* Every sandbox of uid the runtime has (older attempts too). */
static void remove_all_sandboxes(struct runtime *rt, const char *uid)
{
	Runtime__V1__ListPodSandboxRequest req = RUNTIME__V1__LIST_POD_SANDBOX_REQUEST__INIT;
	Runtime__V1__PodSandboxFilter f = RUNTIME__V1__POD_SANDBOX_FILTER__INIT;
	Runtime__V1__ListPodSandboxResponse *r = NULL;
	struct labels sel = { .n = 0 };
	struct cri_err err;
	const ProtobufCMessageDescriptor *d = &runtime__v1__pod_sandbox_filter__label_selector_entry__descriptor;
	labels_add(&sel, d, CRI_LABEL_OWNER, rt->owner);
	labels_add(&sel, d, CRI_LABEL_UID, uid);
	f.label_selector = (Runtime__V1__PodSandboxFilter__LabelSelectorEntry **)sel.p;
	f.n_label_selector = sel.n;
	req.filter = &f;
	if (cri_list_pod_sandbox(rt->cri, &req, &r, &err) != 0)
		return;
	for (size_t i = 0; i < r->n_items; i++) {
		crirt_stop_sandbox(rt, r->items[i]->id);
		crirt_remove_sandbox(rt, r->items[i]->id);
	}
	cri_free(r);
}

static void cri_rt_remove_pod(struct runtime *rt, const char *uid)
{
	prober_forget_pod(uid);
	struct cpod *p = find_pod(rt, uid);
	if (!p)
		return;
	crirt_wait_idle(rt, p); /* the caller waits for stop_pod's 0 first: this does not wait then */
	if (!p->stop_done)
		crirt_stop_now(rt, p, 0);
	for (size_t i = 0; i < p->nc; i++) {
		if (p->c[i].id)
			crirt_remove_container(rt, p->c[i].id);
		if (p->c[i].prev_id)
			crirt_remove_container(rt, p->c[i].prev_id);
	}
	if (p->sandbox_id)
		crirt_remove_sandbox(rt, p->sandbox_id);
	remove_all_sandboxes(rt, uid);
	char *dir = pod_dir(rt, uid);
	rt_rm_rf(dir);
	free(dir);
	char *cgroup = g_cgroup_parent ? xasprintf("%s/pod%s", g_cgroup_parent, uid) : NULL;
	cri_pod_cgroup_remove(cgroup);
	free(cgroup);
	pthread_mutex_lock(&rt->lock);
	for (struct cpod **l = &rt->pods; *l; l = &(*l)->next)
		if (*l == p) {
			*l = p->next;
			break;
		}
	pthread_mutex_unlock(&rt->lock);
	free_pod(p);
	rt->changed = true;
}

static int cri_rt_status(struct runtime *rt, const char *uid, struct rt_container_status *out, size_t max)
{
	struct cpod *p = find_pod(rt, uid);
	if (!p || !p->has_spec)
		return -1;
	char ip[64];
	size_t n;
	pthread_mutex_lock(&rt->lock);
	snprintf(ip, sizeof(ip), "%s", p->busy ? p->shown_ip : p->ip);
	bool stopping = p->stopped || p->stop_wanted || p->stop_done || (p->busy && p->op == OP_STOP);
	if (p->busy) { /* as it was handed over */
		n = p->nshown < max ? p->nshown : max;
		memcpy(out, p->shown, n * sizeof(*out));
		pthread_mutex_unlock(&rt->lock);
	} else {
		pthread_mutex_unlock(&rt->lock);
		n = p->nc < max ? p->nc : max;
		for (size_t i = 0; i < n; i++)
			cri_cont_status(&p->c[i], &p->spec, rt->runtime_name, &out[i]);
	}
	if (!stopping)
		crirt_apply_probes(rt, p, ip, out, n);
	return (int)n;
}

static int cri_rt_pod_ip(struct runtime *rt, const char *uid, char *out, size_t max)
{
	struct cpod *p = find_pod(rt, uid);
	if (!p)
		return -1;
	pthread_mutex_lock(&rt->lock);
	snprintf(out, max, "%s", p->busy ? p->shown_ip : p->ip);
	pthread_mutex_unlock(&rt->lock);
	return p->has_spec && p->spec.host_network ? 1 : 0;
}

static const Runtime__V1__Container *listed(const Runtime__V1__ListContainersResponse *lc, const char *id)
{
	for (size_t i = 0; lc && i < lc->n_containers; i++)
		if (lc->containers[i]->id && strcmp(lc->containers[i]->id, id) == 0)
			return lc->containers[i];
	return NULL;
}

/* The pod's sandbox is gone or no longer ready (its pause process died, the node rebooted):
 * as Kubernetes does, its containers are killed and everything starts again in a new sandbox;
 * containers that are to restart do so at once. */
void crirt_sandbox_lost(struct runtime *rt, struct cpod *p)
{
	log_warn("cri: pod sandbox lost, starting a new one", "pod=\"%s/%s\" sandbox=%.12s", p->ns, p->name,
		 p->sandbox_id);
	for (size_t i = 0; i < p->nc; i++) {
		struct cri_cont *c = &p->c[i];
		if (c->phase == CP_RUNNING && c->id) {
			struct stopper st = { .rt = rt, .id = c->id, .grace_s = 0 };
			crirt_stop_one(&st);
			crirt_poll_container(rt, p, i);
			if (c->phase == CP_BACKOFF)
				c->retry_at_ms = now_ms();
		}
		if (c->id)
			crirt_remove_container(rt, c->id);
		if (c->prev_id)
			crirt_remove_container(rt, c->prev_id);
		free(c->id);
		free(c->prev_id);
		c->id = c->prev_id = NULL;
	}
	crirt_stop_sandbox(rt, p->sandbox_id);
	crirt_remove_sandbox(rt, p->sandbox_id);
	free(p->sandbox_id);
	p->sandbox_id = NULL;
	p->sandbox_attempt++;
	p->sandbox_retry_ms = 0;
	p->ip[0] = '\0';
	rt->changed = true;
}

static Runtime__V1__ListPodSandboxResponse *list_sandboxes(struct runtime *rt)
{
	Runtime__V1__ListPodSandboxRequest req = RUNTIME__V1__LIST_POD_SANDBOX_REQUEST__INIT;
	Runtime__V1__PodSandboxFilter f = RUNTIME__V1__POD_SANDBOX_FILTER__INIT;
	Runtime__V1__ListPodSandboxResponse *r = NULL;
	struct labels sel = { .n = 0 };
	struct cri_err err;
	labels_add(&sel, &runtime__v1__pod_sandbox_filter__label_selector_entry__descriptor, CRI_LABEL_OWNER,
		   rt->owner);
	f.label_selector = (Runtime__V1__PodSandboxFilter__LabelSelectorEntry **)sel.p;
	f.n_label_selector = sel.n;
	req.filter = &f;
	if (cri_list_pod_sandbox(rt->cri, &req, &r, &err) != 0)
		return NULL;
	return r;
}

static bool sandbox_ok(const Runtime__V1__ListPodSandboxResponse *ls, const char *id)
{
	for (size_t i = 0; i < ls->n_items; i++)
		if (ls->items[i]->id && strcmp(ls->items[i]->id, id) == 0)
			return ls->items[i]->state == RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY;
	return false;
}

static bool cri_rt_sync(struct runtime *rt)
{
	Runtime__V1__ListContainersResponse *lc = list_containers(rt);
	Runtime__V1__ListPodSandboxResponse *ls = lc ? list_sandboxes(rt) : NULL;
	int64_t now = now_ms();
	for (struct cpod *p = rt->pods; p; p = p->next) {
		if (!p->has_spec || crirt_is_busy(rt, p) || p->stopped)
			continue;
		if (ls && p->sandbox_id && !sandbox_ok(ls, p->sandbox_id)) {
			crirt_dispatch(rt, p, OP_LOST);
			continue;
		}
		if (lc) {
			for (size_t i = 0; i < p->nc; i++) {
				struct cri_cont *c = &p->c[i];
				if (c->phase != CP_RUNNING || !c->id)
					continue;
				const Runtime__V1__Container *ct = listed(lc, c->id);
				if (!ct || (int)ct->state != c->cri_state)
					crirt_poll_container(rt, p, i);
			}
		}
		if (advance_due(p, now))
			crirt_dispatch(rt, p, OP_ADVANCE);
	}
	cri_free(ls);
	cri_free(lc);
	return atomic_exchange(&rt->changed, false);
}

static size_t cri_rt_list_pods(struct runtime *rt, char ***ret)
{
	size_t n = 0;
	for (struct cpod *p = rt->pods; p; p = p->next)
		n++;
	char **v = xcalloc(n ? n : 1, sizeof(*v));
	size_t i = 0;
	for (struct cpod *p = rt->pods; p; p = p->next)
		v[i++] = xstrdup(p->uid);
	*ret = v;
	return n;
}

/* The log of a container's instance `back` launches before the newest (0: the newest), if it is
 * still on disk: <attempt>.log with attempt = launches - 1 - back (launch keeps the two newest). */
static char *instance_log_path(struct runtime *rt, const char *tenant, const char *ns, const char *pod,
			       const char *container, int back)
{
	if (!rt_path_component_ok(container))
		return NULL;
	char *path = NULL;
	pthread_mutex_lock(&rt->lock);
	const struct cpod *best = NULL;
	for (const struct cpod *p = rt->pods; p; p = p->next)
		if (strcmp(p->tenant, tenant) == 0 && strcmp(p->ns, ns) == 0 && strcmp(p->name, pod) == 0 &&
		    (!best || (best->stopped && !p->stopped)))
			best = p;
	for (size_t i = 0; best && i < best->nc; i++)
		if (strcmp(best->c[i].name, container) == 0 && best->c[i].launches > back)
			path = xasprintf("%s/pods/%s/%s/%d.log", rt->root, best->uid, container,
					 best->c[i].launches - 1 - back);
	pthread_mutex_unlock(&rt->lock);
	struct stat st;
	if (path && (stat(path, &st) != 0 || !S_ISREG(st.st_mode))) {
		free(path);
		path = NULL;
	}
	return path;
}

static char *cri_rt_log_path(struct runtime *rt, const char *tenant, const char *ns, const char *pod,
			     const char *container)
{
	return instance_log_path(rt, tenant, ns, pod, container, 0);
}

static char *cri_rt_prev_log_path(struct runtime *rt, const char *tenant, const char *ns, const char *pod,
				  const char *container)
{
	return instance_log_path(rt, tenant, ns, pod, container, 1);
}

const struct runtime_ops runtime_cri = {
	.name = "cri",
	.create = cri_rt_create,
	.destroy = cri_rt_destroy,
	.start_pod = cri_rt_start_pod,
	.stop_pod = cri_rt_stop_pod,
	.remove_pod = cri_rt_remove_pod,
	.status = cri_rt_status,
	.sync = cri_rt_sync,
	.list_pods = cri_rt_list_pods,
	.log_path = cri_rt_log_path,
	.pod_ip = cri_rt_pod_ip,
	.prev_log_path = cri_rt_prev_log_path,
	.stream_target = crirt_stream_target,
};
