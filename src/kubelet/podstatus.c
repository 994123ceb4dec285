/* Pod status from the runtime's container statuses. */
#include <string.h>
#include "podlogic.h"
#include "ursa/jsonutil.h"
#include "ursa/kinds.h"
#include "ursa/timeutil.h"

static json_t *time_json(int64_t t)
{
	struct buf b = BUF_INIT;
	rfc3339_add(&b, (time_t)t);
	json_t *j = json_string(buf_cstr(&b));
	buf_release(&b);
	return j;
}

static const struct rt_container_status *find_status(const struct kl_status_in *in, const char *name)
{
	for (size_t i = 0; i < in->ncs; i++)
		if (name && strcmp(in->cs[i].name, name) == 0)
			return &in->cs[i];
	return NULL;
}

static json_t *terminated_json(int exit_code, int sig, const char *reason, int64_t started, int64_t finished,
			       const char *container_id)
{
	json_t *t = json_object();
	json_object_set_new(t, "exitCode", json_integer(exit_code));
	if (sig)
		json_object_set_new(t, "signal", json_integer(sig));
	json_object_set_new(t, "reason", json_string(reason && *reason ? reason : (exit_code ? "Error" : "Completed")));
	if (started)
		json_object_set_new(t, "startedAt", time_json(started));
	if (finished)
		json_object_set_new(t, "finishedAt", time_json(finished));
	if (container_id && *container_id)
		json_object_set_new(t, "containerID", json_string(container_id));
	return t;
}

static json_t *state_json(const struct rt_container_status *s)
{
	json_t *st = json_object(), *inner;
	if (!s || s->state == RT_WAITING) {
		inner = json_object();
		const char *reason = s && s->reason[0] ? s->reason : "ContainerCreating";
		json_object_set_new(inner, "reason", json_string(reason));
		if (s && s->message[0])
			json_object_set_new(inner, "message", json_string(s->message));
		json_object_set_new(st, "waiting", inner);
	} else if (s->state == RT_RUNNING) {
		inner = json_object();
		json_object_set_new(inner, "startedAt", time_json(s->started_at));
		json_object_set_new(st, "running", inner);
	} else {
		json_object_set_new(st, "terminated", terminated_json(s->exit_code, s->signal, s->reason,
								     s->started_at, s->finished_at, s->container_id));
	}
	return st;
}

static json_t *container_status_json(const json_t *spec_c, const struct rt_container_status *s)
{
	const char *image = json_str(spec_c, "image");
	json_t *cs = json_object();
	json_object_set_new(cs, "name", json_string(json_str(spec_c, "name") ? json_str(spec_c, "name") : ""));
	json_object_set_new(cs, "image", json_string(image ? image : ""));
	json_object_set_new(cs, "imageID", json_string(s ? s->image_id : ""));
	if (s && s->container_id[0])
		json_object_set_new(cs, "containerID", json_string(s->container_id));
	json_object_set_new(cs, "ready", json_boolean(s && s->state == RT_RUNNING && s->ready));
	json_object_set_new(cs, "started", json_boolean(s && s->state == RT_RUNNING && !s->startup_pending));
	json_object_set_new(cs, "restartCount", json_integer(s ? s->restart_count : 0));
	json_object_set_new(cs, "state", state_json(s));
	json_t *last = json_object();
	if (s && s->has_last)
		json_object_set_new(last, "terminated",
				    terminated_json(s->last_exit_code, 0, s->last_reason, s->last_started_at,
						    s->last_finished_at, NULL));
	json_object_set_new(cs, "lastState", last);
	return cs;
}

struct tally {
	size_t n, running, waiting_new, stopped_ok, stopped_failed, ready;
	struct buf unready;  /* "[a b]" names for the ContainersNotReady message */
};

static void tally_add(struct tally *t, const char *name, const struct rt_container_status *s, enum rt_restart rp)
{
	t->n++;
	bool ready = s && s->state == RT_RUNNING && s->ready;
	if (ready) {
		t->ready++;
	} else {
		if (t->unready.len)
			buf_addch(&t->unready, ' ');
		buf_adds(&t->unready, name ? name : "");
	}
	if (s && s->state == RT_RUNNING)
		t->running++;
	else if (s && s->state == RT_TERMINATED)
		*(s->exit_code == 0 ? &t->stopped_ok : &t->stopped_failed) += 1;
	else if (s && s->restart_count > 0 && rp != RT_RESTART_NEVER)
		t->running++;  /* between restarts (back-off): the pod is still Running */
	else
		t->waiting_new++;
}

static const char *phase_of(const struct tally *t, enum rt_restart rp)
{
	if (t->waiting_new > 0)
		return "Pending";
	if (t->running > 0)
		return "Running";
	if (rp == RT_RESTART_ALWAYS)
		return "Running";
	if (t->stopped_failed > 0)
		return rp == RT_RESTART_ON_FAILURE ? "Running" : "Failed";
	return "Succeeded";
}

/* Sets a condition, keeping lastTransitionTime from old when the status is unchanged. */
static void set_condition(json_t *conds, const json_t *old_conds, const char *type, bool status,
			  const char *reason, const char *message, int64_t now)
{
	const char *st = status ? "True" : "False";
	const json_t *ltt = NULL;
	size_t i;
	const json_t *c;
	json_array_foreach(old_conds, i, c) {
		const char *ct = json_str(c, "type"), *cs = json_str(c, "status");
		if (ct && strcmp(ct, type) == 0 && cs && strcmp(cs, st) == 0)
			ltt = json_object_get(c, "lastTransitionTime");
	}
	json_t *nc = json_object();
	json_object_set_new(nc, "type", json_string(type));
	json_object_set_new(nc, "status", json_string(st));
	json_object_set_new(nc, "lastProbeTime", json_null());
	json_object_set_new(nc, "lastTransitionTime", ltt ? json_deep_copy(ltt) : time_json(now));
	if (reason)
		json_object_set_new(nc, "reason", json_string(reason));
	if (message)
		json_object_set_new(nc, "message", json_string(message));
	json_array_append_new(conds, nc);
}

static enum rt_restart restart_of(const json_t *pod)
{
	const char *p = json_path_str(pod, "spec.restartPolicy");
	if (p && strcmp(p, "Never") == 0)
		return RT_RESTART_NEVER;
	if (p && strcmp(p, "OnFailure") == 0)
		return RT_RESTART_ON_FAILURE;
	return RT_RESTART_ALWAYS;
}

static void set_ips(json_t *st, const char *ip, const char *own_ip, bool pod_ip)
{
	if (!ip || !*ip)
		return;
	json_object_set_new(st, "hostIP", json_string(ip));
	json_object_set_new(st, "hostIPs", json_pack("[{s:s}]", "ip", ip));
	if (pod_ip && own_ip && !*own_ip) {
		json_object_del(st, "podIP");
		json_object_del(st, "podIPs");
	} else if (pod_ip) {
		const char *p = own_ip ? own_ip : ip;
		json_object_set_new(st, "podIP", json_string(p));
		json_object_set_new(st, "podIPs", json_pack("[{s:s}]", "ip", p));
	}
}

static void build_failed(json_t *st, const json_t *old_conds, const struct kl_status_in *in)
{
	json_t *conds = json_array();
	set_condition(conds, old_conds, "PodScheduled", true, NULL, NULL, in->now);
	json_object_set_new(st, "conditions", conds);
	json_object_set_new(st, "phase", json_string("Failed"));
	json_object_set_new(st, "reason", json_string(in->fail_reason));
	json_object_set_new(st, "message", json_string(in->fail_message ? in->fail_message : ""));
	set_ips(st, in->host_ip, NULL, false);
}

json_t *kl_pod_status_build(const json_t *pod, const struct kl_status_in *in)
{
	const json_t *old = json_object_get(pod, "status");
	json_t *st = json_is_object(old) ? json_deep_copy(old) : json_object();
	const json_t *old_conds = json_object_get(old, "conditions");
	if (!json_object_get(st, "qosClass"))
		json_object_set_new(st, "qosClass", json_string(pod_qos_class(pod)));
	if (!json_object_get(st, "startTime"))
		json_object_set_new(st, "startTime", time_json(in->now));
	if (in->fail_reason) {
		build_failed(st, old_conds, in);
		return st;
	}
	enum rt_restart rp = restart_of(pod);
	struct tally t = { .n = 0 };
	buf_init(&t.unready);
	json_t *statuses = json_array();
	size_t i;
	const json_t *c;
	json_array_foreach(json_path(pod, "spec.containers"), i, c) {
		const struct rt_container_status *s = find_status(in, json_str(c, "name"));
		json_array_append_new(statuses, container_status_json(c, s));
		tally_add(&t, json_str(c, "name"), s, rp);
	}
	const char *phase = phase_of(&t, rp);
	bool all_ready = t.n > 0 && t.ready == t.n;
	bool done = kl_phase_terminal(phase);
	json_t *conds = json_array();
	struct buf msg = BUF_INIT;
	buf_addf(&msg, "containers with unready status: [%s]", buf_cstr(&t.unready));
	const char *nr_reason = done ? "PodCompleted" : "ContainersNotReady";
	set_condition(conds, old_conds, "PodReadyToStartContainers", !done, NULL, NULL, in->now);
	set_condition(conds, old_conds, "Initialized", true, NULL, NULL, in->now);
	set_condition(conds, old_conds, "Ready", all_ready, all_ready ? NULL : nr_reason,
		      all_ready || done ? NULL : buf_cstr(&msg), in->now);
	set_condition(conds, old_conds, "ContainersReady", all_ready, all_ready ? NULL : nr_reason,
		      all_ready || done ? NULL : buf_cstr(&msg), in->now);
	set_condition(conds, old_conds, "PodScheduled", true, NULL, NULL, in->now);
	buf_release(&msg);
	buf_release(&t.unready);
	json_object_set_new(st, "conditions", conds);
	json_object_set_new(st, "containerStatuses", statuses);
	json_object_set_new(st, "phase", json_string(phase));
	json_object_del(st, "reason");
	json_object_del(st, "message");
	set_ips(st, in->host_ip, in->pod_ip, true);
	return st;
}
