/* The CRI runtime's pure conversions (runtime_cri.h): our specs to CRI resources and security
 * profiles, CRI statuses to the kubelet's container statuses, the restart back-off. */
#define _GNU_SOURCE
#include "runtime_common.h"
#include "runtime_cri.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cri_linux_resources(const struct rt_resources *r, Runtime__V1__LinuxContainerResources *out)
{
	long long shares = r->cpu_request_m * 1024 / 1000;
	if (shares < CRI_MIN_SHARES)
		shares = CRI_MIN_SHARES;
	if (shares > CRI_MAX_SHARES)
		shares = CRI_MAX_SHARES;
	out->cpu_shares = shares;
	out->cpu_period = 0;
	out->cpu_quota = 0;
	if (r->cpu_limit_m > 0) {
		long long quota = r->cpu_limit_m * CRI_CPU_PERIOD / 1000;
		out->cpu_period = CRI_CPU_PERIOD;
		out->cpu_quota = quota < CRI_MIN_QUOTA ? CRI_MIN_QUOTA : quota;
	}
	out->memory_limit_in_bytes = r->mem_limit > 0 ? r->mem_limit : 0;
}

void cri_term_from_status(const Runtime__V1__ContainerStatus *s, struct cri_term *t)
{
	memset(t, 0, sizeof(*t));
	t->exit_code = s->exit_code;
	const char *reason = s->reason && *s->reason ? s->reason : (s->exit_code == 0 ? "Completed" : "Error");
	snprintf(t->reason, sizeof(t->reason), "%s", reason);
	snprintf(t->message, sizeof(t->message), "%s", s->message ? s->message : "");
	t->started_at = s->started_at > 0 ? s->started_at / 1000000000 : 0;
	t->finished_at = s->finished_at > 0 ? s->finished_at / 1000000000 : 0;
}

int64_t cri_backoff_next(int64_t cur_ms, int64_t base_ms, int64_t max_ms, int64_t ran_ms)
{
	if (cur_ms <= 0 || ran_ms > 2 * max_ms)
		return base_ms;
	return cur_ms * 2 > max_ms ? max_ms : cur_ms * 2;
}

static void term_to_status(const struct cri_term *t, struct rt_container_status *s)
{
	s->exit_code = t->exit_code;
	if (t->exit_code > 128 && t->exit_code < 128 + 65)
		s->signal = 0; /* Kubernetes reports the exit code only */
	snprintf(s->reason, sizeof(s->reason), "%s", t->reason);
	snprintf(s->message, sizeof(s->message), "%s", t->message);
	s->started_at = t->started_at;
	s->finished_at = t->finished_at;
}

void cri_cont_status(const struct cri_cont *c, const struct rt_pod *pod, const char *runtime_name,
		     struct rt_container_status *s)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", c->name);
	s->restart_count = c->launches > 1 ? c->launches - 1 : 0;
	if (c->id)
		snprintf(s->container_id, sizeof(s->container_id), "%s://%s", runtime_name, c->id);
	snprintf(s->image_id, sizeof(s->image_id), "%.127s", c->image_ref);
	const struct cri_term *last = c->phase == CP_TERMINATED ? (c->has_prev ? &c->prev : NULL)
							      : (c->has_term ? &c->term : NULL);
	if (last)
		rt_status_set_last(s, last->exit_code, last->reason, last->started_at, last->finished_at);
	switch (c->phase) {
	case CP_WAITING:
		s->state = RT_WAITING;
		snprintf(s->reason, sizeof(s->reason), "%s", c->reason[0] ? c->reason : "ContainerCreating");
		snprintf(s->message, sizeof(s->message), "%s", c->message);
		break;
	case CP_RUNNING:
		if (c->cri_state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING) {
			s->state = RT_RUNNING;
			s->started_at = c->started_at;
			s->ready = true;
		} else {
			s->state = RT_WAITING;
			snprintf(s->reason, sizeof(s->reason), "ContainerCreating");
		}
		break;
	case CP_BACKOFF:
		rt_status_set_backoff(s, c->backoff_ms, c->name, pod ? pod->name : "", pod ? pod->ns : "",
				      pod ? pod->uid : "");
		break;
	case CP_TERMINATED:
		s->state = RT_TERMINATED;
		if (c->has_term)
			term_to_status(&c->term, s);
		else
			snprintf(s->reason, sizeof(s->reason), "Completed");
		break;
	}
}

const char *cri_nonroot_refusal(const Runtime__V1__Image *img, const struct rt_pod *pod, const char *container,
				char **ret_msg)
{
	*ret_msg = NULL;
	if (img && img->uid && img->uid->value != 0)
		return NULL;
	/* a name cannot be verified, but "root" is uid 0 everywhere (busybox images say "root") */
	if (img && !img->uid && img->username && *img->username && strcmp(img->username, "root") != 0) {
		*ret_msg = xasprintf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify "
				     "user is non-root (pod: \"%s_%s(%s)\", container: %s)",
				     img->username, pod->name, pod->ns, pod->uid, container);
		return "CreateContainerConfigError";
	}
	*ret_msg = xasprintf("container has runAsNonRoot and image will run as root (pod: \"%s_%s(%s)\", container: %s)",
			     pod->name, pod->ns, pod->uid, container);
	return "CreateContainerConfigError";
}

void cri_seccomp_profile(const struct rt_security *sec, const char *seccomp_root, Runtime__V1__SecurityProfile *out,
			 char **ret_ref)
{
	runtime__v1__security_profile__init(out);
	*ret_ref = NULL;
	switch (sec->seccomp) {
	case RT_SECCOMP_UNCONFINED:
		out->profile_type = RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__Unconfined;
		break;
	case RT_SECCOMP_LOCALHOST:
		out->profile_type = RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__Localhost;
		*ret_ref = xasprintf("%s/%s", seccomp_root, sec->seccomp_ref);
		out->localhost_ref = *ret_ref;
		break;
	default:
		out->profile_type = RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__RuntimeDefault;
	}
}

