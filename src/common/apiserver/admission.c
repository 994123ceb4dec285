/* The admission chain: steps run on every create and every update of a main resource, after
 * validation and before the write, in table order. A step may change the object (defaults) or
 * refuse it (it replies and returns -1). */
#include "internal.h"
#include <string.h>
#include "ursa/jsonutil.h"
#include "ursa/podsecurity.h"

/* Tenant isolation on a shared node (ursa/podsecurity.h): a pod, or the pod template of a workload,
 * of any tenant but system that asks for what reaches past its sandbox is refused (403), worded as
 * Pod Security Admission words it. Templates are refused too (PSA only warns on them) so that a
 * controller does not create refused pods over and over. An update that brings no violation the
 * object did not already have is admitted (metadata changes, finalizers of an older object). */
static int admit_podsecurity(struct req *q, json_t *obj, const json_t *old)
{
	if (!q->tenant || !*q->tenant || !pod_security_applies(q->tenant))
		return 0;
	const char *group = q->res->r->group, *plural = q->res->r->plural;
	bool tmpl = false, otmpl;
	const json_t *subject = pod_security_subject(group, plural, obj, &tmpl);
	struct buf v = BUF_INIT, ov = BUF_INIT;
	int rc = 0;
	if (!subject || pod_security_violations(subject, &v) == 0)
		goto out;
	const json_t *osubject = old ? pod_security_subject(group, plural, old, &otmpl) : NULL;
	if (osubject && pod_security_violations(osubject, &ov) > 0 && !strcmp(buf_cstr(&ov), buf_cstr(&v)))
		goto out; /* nothing new */
	const char *name = json_path_str(obj, "metadata.name");
	if (!name || !*name)
		name = json_path_str(obj, "metadata.generateName");
	reply_status_details(q, E_FORBIDDEN, name, NULL, "%s%s%s \"%s\" is forbidden: %sviolates %s: %s", plural,
			     group[0] ? "." : "", group, name ? name : "", tmpl ? "pod template " : "",
			     POD_SECURITY_POLICY, buf_cstr(&v));
	rc = -1;
out:
	buf_release(&v);
	buf_release(&ov);
	return rc;
}

static const struct {
	const char *name;
	int (*fn)(struct req *q, json_t *obj, const json_t *old);
} steps[] = {
	{ "rbac-escalation", admit_rbac },
	{ "crd-names", admit_crd },
	{ "podsecurity", admit_podsecurity }, /* tenant isolation: before anything reserves */
	{ "limitranger", admit_limitrange }, /* defaults before the quota counts them */
	{ "serviceipallocator", admit_service }, /* reserves an address: svcip_release below on a refusal */
	{ "resourcequota", admit_quota },    /* last: it reserves what it admits */
};

int admit(struct req *q, json_t *obj, const json_t *old)
{
	if (!q->http)
		return 0; /* the server's own writes */
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		if (steps[i].fn(q, obj, old) < 0) {
			svcip_release(q, obj);
			return -1;
		}
	return 0;
}
