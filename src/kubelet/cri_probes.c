/* The CRI runtime's side of the prober (probes.h, runtime_cri_impl.h): exec probes through CRI
 * ExecSync, a failed liveness probe's StopContainer, and the probes' results in the statuses; and
 * of the lifecycle hooks (hooks.h): exec hooks through ExecSync as well. */
#define _GNU_SOURCE
#include "runtime_cri_impl.h"
#include "hooks.h"
#include "images.h"
#include "probes.h"
#include "runtime_common.h"
#include "ursa/buf.h"
#include "ursa/errors.h"
#include "ursa/log.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int crirt_probe_exec(void *ud, const char *cid, char *const *cmd, int timeout_s, struct buf *out, int *ret_code)
{
	struct runtime *rt = ud;
	Runtime__V1__ExecSyncRequest req = RUNTIME__V1__EXEC_SYNC_REQUEST__INIT;
	Runtime__V1__ExecSyncResponse *r = NULL;
	struct cri_err err;
	size_t n = 0;
	while (cmd[n])
		n++;
	req.container_id = (char *)cid;
	req.cmd = (char **)cmd;
	req.n_cmd = n;
	req.timeout = timeout_s;
	int rc = cri_exec_sync(rt->cri, &req, &r, &err);
	if (rc != 0) {
		buf_adds(out, err.message);
		/* containerd answers a command that outlives its timeout with DEADLINE_EXCEEDED or a message */
		if (rc != E_TIMEOUT && strstr(err.message, "timeout"))
			rc = E_TIMEOUT;
		return rc;
	}
	size_t lo = r->stdout.len < PROBE_MAX_OUTPUT ? r->stdout.len : PROBE_MAX_OUTPUT;
	buf_add(out, r->stdout.data ? (const char *)r->stdout.data : "", lo);
	size_t le = r->stderr.len < PROBE_MAX_OUTPUT - lo ? r->stderr.len : PROBE_MAX_OUTPUT - lo;
	buf_add(out, r->stderr.data ? (const char *)r->stderr.data : "", le);
	*ret_code = r->exit_code;
	cri_free(r);
	return 0;
}

static void crirt_probe_kill(void *ud, const char *uid, const char *container, const char *cid, long long grace_s)
{
	struct runtime *rt = ud;
	Runtime__V1__StopContainerRequest req = RUNTIME__V1__STOP_CONTAINER_REQUEST__INIT;
	struct cri_err err;
	req.container_id = (char *)cid;
	req.timeout = grace_s < 0 ? 0 : grace_s;
	int rc = cri_stop_container(rt->cri, &req, NULL, &err);
	if (rc != 0 && rc != E_NOT_FOUND)
		log_warn("cri: StopContainer after a failed probe", "uid=%s container=\"%s\" err=\"%s\"", uid, container,
			 err.message);
	rt->changed = true;
}

static const struct prober_ops crirt_probe_ops = { .exec = crirt_probe_exec, .kill = crirt_probe_kill };

/* Readiness and startup of the running containers in out from the prober (which starts probing
 * new instances); the probes of containers that no longer run stop. */
void crirt_apply_probes(struct runtime *rt, struct cpod *p, const char *ip, struct rt_container_status *out,
			 size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct rt_container *spec = NULL;
		for (size_t j = 0; j < p->spec.ncontainers; j++)
			if (strcmp(p->spec.containers[j].name, out[i].name) == 0)
				spec = &p->spec.containers[j];
		if (!spec)
			continue;
		if (out[i].state != RT_RUNNING) {
			prober_container_gone(p->uid, out[i].name);
			continue;
		}
		const char *cid = strstr(out[i].container_id, "://");
		struct prober_target t = {
			.uid = p->uid, .tenant = p->tenant, .ns = p->ns, .pod = p->name, .spec = spec,
			.pod_grace_s = p->spec.grace_s, .cid = cid ? cid + 3 : out[i].container_id,
			.started_at = out[i].started_at, .ip = p->spec.host_network ? NULL : ip,
			.ops = &crirt_probe_ops, .ud = rt,
		};
		bool started, ready;
		prober_container(&t, &started, &ready);
		out[i].startup_pending = !started;
		out[i].ready = ready;
	}
}


/* ---- lifecycle hooks ---- */

static void hook_target_of(struct runtime *rt, struct cpod *p, size_t i, const char *cid, struct hook_target *t)
{
	*t = (struct hook_target){ .uid = p->uid, .tenant = p->tenant, .ns = p->ns, .pod = p->name,
				   .container = p->c[i].name, .cid = cid,
				   .ip = p->spec.host_network ? NULL : p->ip, .ops = &crirt_probe_ops, .ud = rt };
}

long long crirt_pre_stop(struct runtime *rt, struct cpod *p, size_t i, const char *cid, const struct rt_hook *h,
			 long long grace_s)
{
	struct hook_target t;
	hook_target_of(rt, p, i, cid, &t);
	return hook_pre_stop(h, &t, grace_s);
}

bool crirt_post_start(struct runtime *rt, struct cpod *p, size_t i)
{
	if (!p->has_spec || i >= p->spec.ncontainers || i >= p->nc)
		return true;
	const struct rt_container *spec = &p->spec.containers[i];
	struct cri_cont *c = &p->c[i];
	if (!spec->hooks[RT_HOOK_POST_START] || !c->id)
		return true;
	struct hook_target t;
	struct buf msg = BUF_INIT;
	hook_target_of(rt, p, i, c->id, &t);
	int rc = hook_run(spec->hooks[RT_HOOK_POST_START], &t, HOOK_POST_START_MAX_S, &msg);
	if (rc == 0) {
		buf_release(&msg);
		return true;
	}
	if (!msg.len)
		buf_addf(&msg, "the hook did not end within %ds", HOOK_POST_START_MAX_S);
	log_info("postStart hook failed: killing the container", "pod=\"%s/%s\" container=\"%s\" err=\"%s\"", p->ns,
		 p->name, c->name, buf_cstr(&msg));
	buf_release(&msg);
	POD_EVENT(p, c->name, true, hook_event_reason(RT_HOOK_POST_START), "PostStartHook failed");
	POD_EVENT(p, c->name, false, "Killing", "FailedPostStartHook");
	struct stopper st = { .rt = rt, .id = c->id, .grace_s = p->spec.grace_s, .p = p, .i = i,
			      .pre_stop = spec->hooks[RT_HOOK_PRE_STOP] };
	crirt_stop_one(&st);
	return false;
}
