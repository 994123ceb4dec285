/* cri_probe: one CRI call per run through ursa_cri, driven by tests/integration/test_cri.py.
 * Usage: cri_probe unix:///sock <command> [args]; prints one JSON document on stdout. On failure
 * prints {"error": "<Reason>", "grpc_code": N, "message": "..."} and exits 1; bad usage exits 2.
 * Commands: version, status, images, imagefs, image-status IMAGE, pull IMAGE, remove-image IMAGE,
 * run-pod NAME UID NS LOGDIR HOSTNET(0|1), pod-status ID, list-pods, stop-pod ID, rm-pod ID,
 * create SANDBOX NAME UID NS LOGDIR HOSTNET CNAME IMAGE LOGPATH MEMLIMIT CMD..., start ID,
 * cstatus ID, list-containers [SANDBOX], stop ID TIMEOUT, rm ID. */
#include "ursa/cri.h"
#include "ursa/errors.h"
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(int rc, const struct cri_err *err)
{
	json_t *o = json_pack("{s:s, s:I, s:s}", "error", err_reason(rc), "grpc_code", (json_int_t)err->grpc_code,
			      "message", err->message);
	json_dumpf(o, stdout, JSON_COMPACT);
	putchar('\n');
	json_decref(o);
	return 1;
}

static int print(json_t *o)
{
	json_dumpf(o, stdout, JSON_COMPACT | JSON_SORT_KEYS);
	putchar('\n');
	json_decref(o);
	return 0;
}

static json_t *strs(char **v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

/* A sandbox config; the strings are borrowed from argv. */
struct pod {
	Runtime__V1__PodSandboxConfig config;
	Runtime__V1__PodSandboxMetadata meta;
	Runtime__V1__LinuxPodSandboxConfig linux_;
	Runtime__V1__LinuxSandboxSecurityContext sc;
	Runtime__V1__NamespaceOption ns;
	Runtime__V1__SecurityProfile seccomp;
	Runtime__V1__PodSandboxConfig__LabelsEntry label;
	Runtime__V1__PodSandboxConfig__LabelsEntry *labels[1];
};

static void pod_init(struct pod *p, char **a /* NAME UID NS LOGDIR HOSTNET */)
{
	runtime__v1__pod_sandbox_config__init(&p->config);
	runtime__v1__pod_sandbox_metadata__init(&p->meta);
	runtime__v1__linux_pod_sandbox_config__init(&p->linux_);
	runtime__v1__linux_sandbox_security_context__init(&p->sc);
	runtime__v1__namespace_option__init(&p->ns);
	runtime__v1__security_profile__init(&p->seccomp);
	runtime__v1__pod_sandbox_config__labels_entry__init(&p->label);
	p->meta.name = a[0];
	p->meta.uid = a[1];
	p->meta.namespace_ = a[2];
	p->config.metadata = &p->meta;
	/* with the node's network the node's UTS namespace too: runc refuses to set a hostname */
	p->config.hostname = strcmp(a[4], "1") == 0 ? "" : a[0];
	p->config.log_directory = a[3];
	p->label.key = "ursa.io/test";
	p->label.value = "cri";
	p->labels[0] = &p->label;
	p->config.n_labels = 1;
	p->config.labels = p->labels;
	p->ns.network = strcmp(a[4], "1") == 0 ? RUNTIME__V1__NAMESPACE_MODE__NODE : RUNTIME__V1__NAMESPACE_MODE__POD;
	p->ns.pid = RUNTIME__V1__NAMESPACE_MODE__CONTAINER;
	p->seccomp.profile_type = RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__RuntimeDefault;
	p->sc.namespace_options = &p->ns;
	p->sc.seccomp = &p->seccomp;
	p->linux_.security_context = &p->sc;
	p->config.linux = &p->linux_;
}

static const char *container_state(int s)
{
	static const char *names[] = { "CREATED", "RUNNING", "EXITED", "UNKNOWN" };
	return s >= 0 && s < 4 ? names[s] : "?";
}

int main(int argc, char **argv)
{
	struct cri_err err = { -1, "" };
	struct cri *c;
	const char *cmd;
	int rc = 0;

	if (argc < 3)
		return 2;
	c = cri_open(argv[1], 20000);
	if (!c) {
		fprintf(stderr, "bad endpoint %s\n", argv[1]);
		return 2;
	}
	cmd = argv[2];
	argv += 3;
	argc -= 3;
	if (strcmp(cmd, "version") == 0) {
		Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
		Runtime__V1__VersionResponse *r;
		req.version = "v1";
		if ((rc = cri_version(c, &req, &r, &err)) == 0) {
			print(json_pack("{s:s, s:s, s:s, s:s}", "version", r->version, "runtime_name", r->runtime_name,
					"runtime_version", r->runtime_version, "runtime_api_version", r->runtime_api_version));
			cri_free(r);
		}
	} else if (strcmp(cmd, "status") == 0) {
		Runtime__V1__StatusRequest req = RUNTIME__V1__STATUS_REQUEST__INIT;
		Runtime__V1__StatusResponse *r;
		if ((rc = cri_status(c, &req, &r, &err)) == 0) {
			json_t *conds = json_object();
			for (size_t i = 0; r->status && i < r->status->n_conditions; i++) {
				Runtime__V1__RuntimeCondition *k = r->status->conditions[i];
				json_object_set_new(conds, k->type, json_pack("{s:b, s:s, s:s}", "status", k->status,
									    "reason", k->reason, "message", k->message));
			}
			print(json_pack("{s:o}", "conditions", conds));
			cri_free(r);
		}
	} else if (strcmp(cmd, "images") == 0) {
		Runtime__V1__ListImagesRequest req = RUNTIME__V1__LIST_IMAGES_REQUEST__INIT;
		Runtime__V1__ListImagesResponse *r;
		if ((rc = cri_list_images(c, &req, &r, &err)) == 0) {
			json_t *a = json_array();
			for (size_t i = 0; i < r->n_images; i++) {
				Runtime__V1__Image *im = r->images[i];
				json_array_append_new(a, json_pack("{s:s, s:o, s:o, s:I}", "id", im->id, "repo_tags",
								   strs(im->repo_tags, im->n_repo_tags), "repo_digests",
								   strs(im->repo_digests, im->n_repo_digests), "size",
								   (json_int_t)im->size));
			}
			print(a);
			cri_free(r);
		}
	} else if (strcmp(cmd, "imagefs") == 0) {
		Runtime__V1__ImageFsInfoRequest req = RUNTIME__V1__IMAGE_FS_INFO_REQUEST__INIT;
		Runtime__V1__ImageFsInfoResponse *r;
		if ((rc = cri_image_fs_info(c, &req, &r, &err)) == 0) {
			json_t *a = json_array();
			for (size_t i = 0; i < r->n_image_filesystems; i++) {
				Runtime__V1__FilesystemUsage *u = r->image_filesystems[i];
				json_array_append_new(
					a, json_pack("{s:s, s:I, s:I}", "mountpoint", u->fs_id ? u->fs_id->mountpoint : "",
						     "used_bytes", (json_int_t)(u->used_bytes ? u->used_bytes->value : 0),
						     "timestamp", (json_int_t)u->timestamp));
			}
			print(a);
			cri_free(r);
		}
	} else if ((strcmp(cmd, "image-status") == 0 || strcmp(cmd, "pull") == 0 || strcmp(cmd, "remove-image") == 0) &&
		   argc == 1) {
		Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
		spec.image = argv[0];
		if (cmd[0] == 'i') {
			Runtime__V1__ImageStatusRequest req = RUNTIME__V1__IMAGE_STATUS_REQUEST__INIT;
			Runtime__V1__ImageStatusResponse *r;
			req.image = &spec;
			if ((rc = cri_image_status(c, &req, &r, &err)) == 0) {
				print(r->image ? json_pack("{s:s, s:I}", "id", r->image->id, "size", (json_int_t)r->image->size)
					       : json_pack("{s:n}", "id"));
				cri_free(r);
			}
		} else if (cmd[0] == 'p') {
			Runtime__V1__PullImageRequest req = RUNTIME__V1__PULL_IMAGE_REQUEST__INIT;
			Runtime__V1__PullImageResponse *r;
			req.image = &spec;
			if ((rc = cri_pull_image(c, &req, &r, &err)) == 0) {
				print(json_pack("{s:s}", "image_ref", r->image_ref));
				cri_free(r);
			}
		} else {
			Runtime__V1__RemoveImageRequest req = RUNTIME__V1__REMOVE_IMAGE_REQUEST__INIT;
			req.image = &spec;
			if ((rc = cri_remove_image(c, &req, NULL, &err)) == 0)
				print(json_object());
		}
	} else if (strcmp(cmd, "run-pod") == 0 && argc == 5) {
		struct pod p;
		Runtime__V1__RunPodSandboxRequest req = RUNTIME__V1__RUN_POD_SANDBOX_REQUEST__INIT;
		Runtime__V1__RunPodSandboxResponse *r;
		pod_init(&p, argv);
		req.config = &p.config;
		if ((rc = cri_run_pod_sandbox(c, &req, &r, &err)) == 0) {
			print(json_pack("{s:s}", "id", r->pod_sandbox_id));
			cri_free(r);
		}
	} else if (strcmp(cmd, "pod-status") == 0 && argc == 1) {
		Runtime__V1__PodSandboxStatusRequest req = RUNTIME__V1__POD_SANDBOX_STATUS_REQUEST__INIT;
		Runtime__V1__PodSandboxStatusResponse *r;
		req.pod_sandbox_id = argv[0];
		if ((rc = cri_pod_sandbox_status(c, &req, &r, &err)) == 0) {
			Runtime__V1__PodSandboxStatus *s = r->status;
			print(json_pack("{s:s, s:s, s:s, s:s}", "id", s ? s->id : "", "state",
					s && s->state == RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY ? "READY" : "NOTREADY",
					"ip", s && s->network ? s->network->ip : "", "name",
					s && s->metadata ? s->metadata->name : ""));
			cri_free(r);
		}
	} else if (strcmp(cmd, "list-pods") == 0) {
		Runtime__V1__ListPodSandboxRequest req = RUNTIME__V1__LIST_POD_SANDBOX_REQUEST__INIT;
		Runtime__V1__ListPodSandboxResponse *r;
		if ((rc = cri_list_pod_sandbox(c, &req, &r, &err)) == 0) {
			json_t *a = json_array();
			for (size_t i = 0; i < r->n_items; i++)
				json_array_append_new(a, json_pack("{s:s, s:s, s:i}", "id", r->items[i]->id, "name",
								   r->items[i]->metadata ? r->items[i]->metadata->name : "",
								   "state", (int)r->items[i]->state));
			print(a);
			cri_free(r);
		}
	} else if ((strcmp(cmd, "stop-pod") == 0 || strcmp(cmd, "rm-pod") == 0) && argc == 1) {
		if (cmd[0] == 's') {
			Runtime__V1__StopPodSandboxRequest req = RUNTIME__V1__STOP_POD_SANDBOX_REQUEST__INIT;
			req.pod_sandbox_id = argv[0];
			rc = cri_stop_pod_sandbox(c, &req, NULL, &err);
		} else {
			Runtime__V1__RemovePodSandboxRequest req = RUNTIME__V1__REMOVE_POD_SANDBOX_REQUEST__INIT;
			req.pod_sandbox_id = argv[0];
			rc = cri_remove_pod_sandbox(c, &req, NULL, &err);
		}
		if (rc == 0)
			print(json_object());
	} else if (strcmp(cmd, "create") == 0 && argc >= 11) {
		struct pod p;
		Runtime__V1__CreateContainerRequest req = RUNTIME__V1__CREATE_CONTAINER_REQUEST__INIT;
		Runtime__V1__CreateContainerResponse *r;
		Runtime__V1__ContainerConfig cc = RUNTIME__V1__CONTAINER_CONFIG__INIT;
		Runtime__V1__ContainerMetadata meta = RUNTIME__V1__CONTAINER_METADATA__INIT;
		Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
		Runtime__V1__LinuxContainerConfig lc = RUNTIME__V1__LINUX_CONTAINER_CONFIG__INIT;
		Runtime__V1__LinuxContainerResources res = RUNTIME__V1__LINUX_CONTAINER_RESOURCES__INIT;
		Runtime__V1__LinuxContainerSecurityContext sc = RUNTIME__V1__LINUX_CONTAINER_SECURITY_CONTEXT__INIT;
		Runtime__V1__NamespaceOption ns = RUNTIME__V1__NAMESPACE_OPTION__INIT;
		Runtime__V1__KeyValue env = RUNTIME__V1__KEY_VALUE__INIT;
		Runtime__V1__KeyValue *envs[1] = { &env };
		pod_init(&p, argv + 1);
		meta.name = argv[6];
		spec.image = argv[7];
		cc.metadata = &meta;
		cc.image = &spec;
		cc.log_path = argv[8];
		res.memory_limit_in_bytes = atoll(argv[9]);
		res.cpu_period = 100000;
		res.cpu_quota = 50000;
		res.cpu_shares = 512;
		ns.network = p.ns.network;
		ns.pid = RUNTIME__V1__NAMESPACE_MODE__CONTAINER;
		sc.namespace_options = &ns;
		sc.seccomp = &p.seccomp;
		lc.resources = &res;
		lc.security_context = &sc;
		cc.linux = &lc;
		env.key = "GREETING";
		env.value = "hi";
		cc.envs = envs;
		cc.n_envs = 1;
		cc.command = argv + 10;
		cc.n_command = (size_t)(argc - 10);
		req.pod_sandbox_id = argv[0];
		req.config = &cc;
		req.sandbox_config = &p.config;
		if ((rc = cri_create_container(c, &req, &r, &err)) == 0) {
			print(json_pack("{s:s}", "id", r->container_id));
			cri_free(r);
		}
	} else if (strcmp(cmd, "start") == 0 && argc == 1) {
		Runtime__V1__StartContainerRequest req = RUNTIME__V1__START_CONTAINER_REQUEST__INIT;
		req.container_id = argv[0];
		if ((rc = cri_start_container(c, &req, NULL, &err)) == 0)
			print(json_object());
	} else if (strcmp(cmd, "cstatus") == 0 && argc == 1) {
		Runtime__V1__ContainerStatusRequest req = RUNTIME__V1__CONTAINER_STATUS_REQUEST__INIT;
		Runtime__V1__ContainerStatusResponse *r;
		req.container_id = argv[0];
		if ((rc = cri_container_status(c, &req, &r, &err)) == 0) {
			Runtime__V1__ContainerStatus *s = r->status;
			Runtime__V1__LinuxContainerResources *lr = s && s->resources ? s->resources->linux : NULL;
			print(json_pack("{s:s, s:s, s:i, s:s, s:s, s:s, s:I, s:I, s:I}", "id", s ? s->id : "", "state",
					container_state(s ? (int)s->state : -1), "exit_code", s ? s->exit_code : -1, "reason",
					s ? s->reason : "", "log_path", s ? s->log_path : "", "image_ref",
					s ? s->image_ref : "", "started_at", (json_int_t)(s ? s->started_at : 0),
					"memory_limit", (json_int_t)(lr ? lr->memory_limit_in_bytes : -1), "cpu_quota",
					(json_int_t)(lr ? lr->cpu_quota : -1)));
			cri_free(r);
		}
	} else if (strcmp(cmd, "list-containers") == 0 && argc <= 1) {
		Runtime__V1__ListContainersRequest req = RUNTIME__V1__LIST_CONTAINERS_REQUEST__INIT;
		Runtime__V1__ContainerFilter f = RUNTIME__V1__CONTAINER_FILTER__INIT;
		Runtime__V1__ListContainersResponse *r;
		if (argc == 1) {
			f.pod_sandbox_id = argv[0];
			req.filter = &f;
		}
		if ((rc = cri_list_containers(c, &req, &r, &err)) == 0) {
			json_t *a = json_array();
			for (size_t i = 0; i < r->n_containers; i++)
				json_array_append_new(a, json_pack("{s:s, s:s, s:s}", "id", r->containers[i]->id, "sandbox",
								   r->containers[i]->pod_sandbox_id, "state",
								   container_state((int)r->containers[i]->state)));
			print(a);
			cri_free(r);
		}
	} else if (strcmp(cmd, "stop") == 0 && argc == 2) {
		Runtime__V1__StopContainerRequest req = RUNTIME__V1__STOP_CONTAINER_REQUEST__INIT;
		req.container_id = argv[0];
		req.timeout = atoll(argv[1]);
		if ((rc = cri_stop_container(c, &req, NULL, &err)) == 0)
			print(json_object());
	} else if (strcmp(cmd, "rm") == 0 && argc == 1) {
		Runtime__V1__RemoveContainerRequest req = RUNTIME__V1__REMOVE_CONTAINER_REQUEST__INIT;
		req.container_id = argv[0];
		if ((rc = cri_remove_container(c, &req, NULL, &err)) == 0)
			print(json_object());
	} else {
		fprintf(stderr, "unknown command or arguments: %s\n", cmd);
		cri_close(c);
		return 2;
	}
	cri_close(c);
	return rc < 0 ? fail(rc, &err) : 0;
}
