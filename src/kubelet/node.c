/* Node objects: built on demand, registered, status posted, name uniqueness checked. */
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include "kubelet.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

static json_t *time_json(int64_t t)
{
	struct buf b = BUF_INIT;
	rfc3339_add(&b, (time_t)t);
	json_t *j = json_string(buf_cstr(&b));
	buf_release(&b);
	return j;
}

static json_t *cpu_json(long long m)
{
	return m % 1000 == 0 ? json_sprintf("%lld", m / 1000) : json_sprintf("%lldm", m);
}

static json_t *mem_json(long long m)
{
	long long bytes = m / 1000;
	return bytes % 1024 == 0 ? json_sprintf("%lldKi", bytes / 1024) : json_sprintf("%lld", bytes);
}

static json_t *resources_json(const struct kubelet *k, bool allocatable)
{
	json_t *r = json_object();
	json_object_set_new(r, "cpu", cpu_json(allocatable ? k->alloc_cpu_m : k->cpu_m));
	json_object_set_new(r, "memory", mem_json(allocatable ? k->alloc_mem_m : k->mem_m));
	json_object_set_new(r, "pods", json_sprintf("%lld", k->max_pods));
	return r;
}

static json_t *condition(const char *type, bool status, const char *reason, const char *msg, int64_t now,
			 int64_t since)
{
	json_t *c = json_object();
	json_object_set_new(c, "type", json_string(type));
	json_object_set_new(c, "status", json_string(status ? "True" : "False"));
	json_object_set_new(c, "lastHeartbeatTime", time_json(now));
	json_object_set_new(c, "lastTransitionTime", time_json(since ? since : now));
	json_object_set_new(c, "reason", json_string(reason));
	json_object_set_new(c, "message", json_string(msg));
	return c;
}

static json_t *conditions_json(const struct kl_node *n, int64_t now)
{
	static const struct {
		const char *type, *ok_reason, *ok_msg, *bad_reason, *bad_msg;
	} p[KL_NPRESSURE] = {
		[KL_MEMORY_PRESSURE] = { "MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available",
					 "KubeletHasInsufficientMemory", "kubelet has insufficient memory available" },
		[KL_DISK_PRESSURE] = { "DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure",
				       "KubeletHasDiskPressure", "kubelet has disk pressure" },
		[KL_PID_PRESSURE] = { "PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available",
				      "KubeletHasInsufficientPID", "kubelet has insufficient PID available" },
	};
	json_t *a = json_array();
	for (int i = 0; i < KL_NPRESSURE; i++) {
		bool on = n->pressure & (1u << i);
		json_array_append_new(a, condition(p[i].type, on, on ? p[i].bad_reason : p[i].ok_reason,
						   on ? p[i].bad_msg : p[i].ok_msg, now, n->pressure_since[i]));
	}
	json_array_append_new(a, condition("Ready", true, "KubeletReady", "kubelet is posting ready status", now,
					   n->ready_since));
	return a;
}

static json_t *node_info(const struct kubelet *k)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "machineID", k->kubelet_id, "systemUUID",
			 k->kubelet_id, "bootID", k->kubelet_id, "kernelVersion", "linux", "osImage", "Ursa",
			 "containerRuntimeVersion", k->hollow ? "fake://0.1" : (strcmp(k->opt.runtime, "fake") == 0 ? "fake://0.1" : "process://0.1"),
			 "kubeletVersion", KL_VERSION, "kubeProxyVersion", "", "operatingSystem", "linux",
			 "architecture", "amd64");
}

json_t *kl_node_status(const struct kubelet *k, size_t i)
{
	const struct kl_node *n = &k->nodes[i];
	int64_t now = now_ms() / 1000;
	json_t *st = json_object();
	json_object_set_new(st, "capacity", resources_json(k, false));
	json_object_set_new(st, "allocatable", resources_json(k, true));
	json_object_set_new(st, "conditions", conditions_json(n, now));
	json_object_set_new(st, "addresses", json_pack("[{s:s, s:s}, {s:s, s:s}]", "type", "InternalIP", "address",
						       k->opt.address, "type", "Hostname", "address", n->name));
	json_object_set_new(st, "daemonEndpoints",
			    json_pack("{s:{s:I}}", "kubeletEndpoint", "Port", (json_int_t)k->opt.port));
	json_object_set_new(st, "nodeInfo", node_info(k));
	return st;
}

static json_t *node_meta(const struct kubelet *k, size_t i)
{
	const struct kl_node *n = &k->nodes[i];
	json_t *labels = json_object();
	json_object_set_new(labels, "kubernetes.io/hostname", json_string(n->name));
	json_object_set_new(labels, "kubernetes.io/os", json_string("linux"));
	json_object_set_new(labels, "kubernetes.io/arch", json_string("amd64"));
	if (k->opt.zone)
		json_object_set_new(labels, "topology.kubernetes.io/zone", json_string(k->opt.zone));
	if (k->opt.region)
		json_object_set_new(labels, "topology.kubernetes.io/region", json_string(k->opt.region));
	json_object_set_new(labels, k->hollow ? "node-role.kubernetes.io/hollow" : "node-role.kubernetes.io/worker",
			    json_string(""));
	if (k->hollow && kl_label_value_ok(k->kubelet_id))
		json_object_set_new(labels, KL_LABEL_ID, json_string(k->kubelet_id));
	json_t *ann = json_object();
	json_object_set_new(ann, KL_ANN_ID, json_string(k->kubelet_id));
	json_object_set_new(ann, KL_ANN_SCHEME, json_string(k->opt.tls_cert ? "https" : "http"));
	return json_pack("{s:s, s:o, s:o}", "name", n->name, "labels", labels, "annotations", ann);
}

static json_t *node_spec(const struct kubelet *k)
{
	if (!k->hollow)
		return json_object();
	return json_pack("{s:[{s:s, s:s, s:s}]}", "taints", "key", KL_HOLLOW_TAINT, "value", "true", "effect",
			 "NoSchedule");
}

json_t *kl_node_object(const struct kubelet *k, size_t i)
{
	return json_pack("{s:s, s:s, s:o, s:o, s:o}", "apiVersion", "v1", "kind", "Node", "metadata", node_meta(k, i),
			 "spec", node_spec(k), "status", kl_node_status(k, i));
}

static int http_err(int code)
{
	if (code < 0)
		return code;
	if (code == 404)
		return E_NOT_FOUND;
	if (code == 409)
		return E_CONFLICT;
	return code >= 200 && code < 300 ? 0 : E_INTERNAL;
}

int kl_node_post_status(struct kubelet *k, size_t i)
{
	struct kl_node *n = &k->nodes[i];
	char *path = xasprintf("/api/v1/nodes/%s/status", n->name);
	json_t *body = json_pack("{s:o}", "status", kl_node_status(k, i));
	int code = rest_do(k->rm, "PATCH", path, body, "application/merge-patch+json", NULL);
	json_decref(body);
	free(path);
	int rc = http_err(code);
	if (rc == 0) {
		n->status_posted_ms = mono_ms();
		n->status_dirty = false;
	}
	return rc;
}

int kl_node_register(struct kubelet *k, size_t i)
{
	struct kl_node *n = &k->nodes[i];
	if (!n->ready_since)
		n->ready_since = now_ms() / 1000;
	/* A restarted kubelet's nodes exist (the start-up list said so): it sends their status and
	 * lease, two requests instead of four, and leaves alone the taints the node lifecycle
	 * controller put on them while they were silent (it takes them off once they are Ready). */
	bool known = n->known, meta_ok = n->known_meta_ok;
	n->known = n->known_meta_ok = false;
	int code = 409;
	if (!known) {
		json_t *obj = kl_node_object(k, i);
		code = rest_do(k->rm, "POST", "/api/v1/nodes", obj, NULL, NULL);
		json_decref(obj);
	}
	n->created = code == 201;
	if (code == 409 && meta_ok) {
		code = 200;
	} else if (code == 409) {
		char *path = xasprintf("/api/v1/nodes/%s", n->name);
		json_t *patch = json_pack("{s:o}", "metadata", node_meta(k, i));
		json_object_del(json_object_get(patch, "metadata"), "name");
		if (k->hollow)
			json_object_set_new(patch, "spec", node_spec(k));
		code = rest_do(k->rm, "PATCH", path, patch, "application/merge-patch+json", NULL);
		json_decref(patch);
		free(path);
	}
	int rc = http_err(code);
	if (rc == 0)
		rc = kl_node_post_status(k, i);
	if (rc == 0 && !n->registered) {
		n->registered = true;
		if (!k->hollow || i == 0 || i + 1 == k->nnodes)
			log_info("node registered", "node=\"%s\"", n->name);
	}
	return rc;
}

/* True when every key of want is in have with the same string value. */
static bool strings_within(const json_t *want, const json_t *have)
{
	const char *key;
	const json_t *v;
	json_object_foreach((json_t *)want, key, v) {
		const char *h = json_string_value(json_object_get(have, key));
		if (!h || strcmp(h, json_string_value(v)) != 0)
			return false;
	}
	return true;
}

bool kl_node_meta_current(const struct kubelet *k, size_t i, const json_t *node)
{
	json_t *meta = node_meta(k, i);
	const json_t *have = json_object_get(node, "metadata");
	bool ok = strings_within(json_object_get(meta, "labels"), json_object_get(have, "labels")) &&
		  strings_within(json_object_get(meta, "annotations"), json_object_get(have, "annotations"));
	json_decref(meta);
	if (!ok || !k->hollow)
		return ok;
	/* the taint node_spec registers, among whatever taints others added */
	json_t *spec = node_spec(k);
	const json_t *mine = json_array_get(json_object_get(spec, "taints"), 0), *t;
	size_t j;
	ok = false;
	json_array_foreach(json_path(node, "spec.taints"), j, t)
		ok = ok || json_equal((json_t *)t, (json_t *)mine);
	json_decref(spec);
	return ok;
}

bool kl_label_value_ok(const char *v)
{
	size_t n = v ? strlen(v) : 0;
	if (n == 0 || n > 63)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = v[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		if (!alnum && ((c != '-' && c != '_' && c != '.') || i == 0 || i + 1 == n))
			return false;
	}
	return true;
}

bool kl_node_status_stale(const json_t *node)
{
	static const char *const types[] = { "MemoryPressure", "DiskPressure", "PIDPressure", "Ready" };
	const json_t *conds = json_path(node, "status.conditions");
	for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		const json_t *found = NULL, *c;
		size_t i;
		json_array_foreach(conds, i, c) {
			const char *type = json_str(c, "type");
			if (type && strcmp(type, types[t]) == 0)
				found = c;
		}
		if (!found)
			return true;
		const char *st = json_str(found, "status");
		if (strcmp(types[t], "Ready") == 0 && (!st || strcmp(st, "True") != 0))
			return true;
	}
	return false;
}

/* The holder is live when its lease was renewed within its duration. */
static bool lease_live(const json_t *lease, int64_t now)
{
	const char *renew = json_path_str(lease, "spec.renewTime");
	const json_t *dur = json_path(lease, "spec.leaseDurationSeconds");
	time_t t;
	if (!renew || rfc3339_parse(renew, &t) != 0)
		return false;
	long long d = json_is_integer(dur) ? json_integer_value(dur) : 40;
	return (int64_t)t + d > now;
}

/* Non-zero when node object n belongs to another kubelet whose lease (may be NULL) is live. */
static bool taken(const struct kubelet *k, const json_t *node, const json_t *lease, int64_t now)
{
	/* the key holds dots, so no dotted path */
	const char *id = json_str(json_path(node, "metadata.annotations"), KL_ANN_ID);
	if (!id || strcmp(id, k->kubelet_id) == 0)
		return false;
	return lease && lease_live(lease, now);
}

static int get_json(struct kubelet *k, const char *path, json_t **ret)
{
	json_t *body = NULL;
	int code = rest_do(k->rm, "GET", path, NULL, NULL, &body);
	*ret = NULL;
	if (code == 200) {
		*ret = body;
		return 0;
	}
	json_decref(body);
	return code == 404 ? E_NOT_FOUND : (code < 0 ? code : E_INTERNAL);
}

static int check_single(struct kubelet *k, char **ret_err)
{
	const char *name = k->nodes[0].name;
	char *npath = xasprintf("/api/v1/nodes/%s", name), *lpath = xasprintf("%s/%s", KL_LEASE_NS_PATH, name);
	json_t *node = NULL, *lease = NULL;
	int rc = get_json(k, npath, &node);
	if (rc == 0) {
		rc = get_json(k, lpath, &lease);
		if (rc == E_NOT_FOUND)
			rc = 0;
	} else if (rc == E_NOT_FOUND) {
		rc = 0;
	}
	if (rc == 0 && node && taken(k, node, lease, now_ms() / 1000)) {
		*ret_err = xasprintf("node \"%s\" is already registered by another kubelet that is renewing its "
				     "lease; pick another --node-name", name);
		rc = -1;
	}
	json_decref(node);
	json_decref(lease);
	free(npath);
	free(lpath);
	return rc;
}

static int check_many(struct kubelet *k, char **ret_err)
{
	json_t *nodes = NULL, *leases = NULL;
	int rc = get_json(k, "/api/v1/nodes", &nodes);
	if (rc == 0)
		rc = get_json(k, KL_LEASE_NS_PATH, &leases);
	int64_t now = now_ms() / 1000;
	size_t i;
	json_t *n, *l;
	/* the leases by name: a restarted process holding 5,000 nodes in a zone of 10,000 scanned
	 * every lease for each of its nodes, minutes of CPU before its first heartbeat */
	json_t *by_name = json_object();
	json_array_foreach(rc == 0 ? json_object_get(leases, "items") : NULL, i, l) {
		const char *ln = json_path_str(l, "metadata.name");
		if (ln)
			json_object_set(by_name, ln, l);
	}
	json_array_foreach(rc == 0 ? json_object_get(nodes, "items") : NULL, i, n) {
		const char *name = json_path_str(n, "metadata.name");
		long idx = kl_node_find(k, name);
		if (idx < 0)
			continue;
		const json_t *lease = json_object_get(by_name, name);
		if (taken(k, n, lease, now)) {
			*ret_err = xasprintf("node \"%s\" is already registered by another kubelet that is renewing "
					     "its lease; pick another --hollow-prefix", name);
			rc = -1;
			break;
		}
		k->nodes[idx].known = true;
		k->nodes[idx].known_meta_ok = kl_node_meta_current(k, (size_t)idx, n);
	}
	json_decref(by_name);
	json_decref(nodes);
	json_decref(leases);
	return rc;
}

int kl_nodes_check_unique(struct kubelet *k, char **ret_err)
{
	return k->hollow ? check_many(k, ret_err) : check_single(k, ret_err);
}

static long long meminfo_available_kb(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	if (!f)
		return -1;
	char line[256];  /* lines of /proc/meminfo are short and kernel-made */
	long long v = -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "MemAvailable:", 13) == 0) {
			char *end = line + 13;
			while (*end == ' ')
				end++;
			char *num = end;
			while (*end >= '0' && *end <= '9')
				end++;
			*end = '\0';
			if (parse_int64(num, &v) != 0)
				v = -1;
			break;
		}
	fclose(f);
	return v;
}

uint8_t kl_host_pressure(const struct kubelet *k)
{
	uint8_t p = 0;
	long long avail = meminfo_available_kb();
	if (avail >= 0 && avail < 100 * 1024)  /* eviction-hard memory.available<100Mi */
		p |= 1u << KL_MEMORY_PRESSURE;
	struct statvfs vfs;
	if (statvfs(k->opt.root_dir, &vfs) == 0 && vfs.f_blocks > 0 && vfs.f_bavail * 10 < vfs.f_blocks)
		p |= 1u << KL_DISK_PRESSURE;  /* nodefs.available<10% */
	return p;
}
