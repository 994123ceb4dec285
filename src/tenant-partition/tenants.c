/* Tenant set-up that belongs to the tenant partition's API server: a new tenant gets its
 * standard namespaces as soon as it exists, so a tenant is usable the moment it is created. */
#include "tp.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include <string.h>

void tp_on_created(struct apiserver *s, const struct api_resource *r, const json_t *obj)
{
	if (strcmp(r->plural, "tenants") != 0)
		return;
	static const char *const names[] = { "default", "kube-system", "kube-public" };
	const char *tenant = json_path_str(obj, "metadata.name");
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		json_t *ns = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata", "name",
				       names[i]);
		int rc = apiserver_create(s, "namespaces", tenant, NULL, ns);
		if (rc < 0 && rc != E_ALREADY_EXISTS)
			log_warn("cannot create tenant namespace", "tenant=\"%s\" namespace=%s err=%s", tenant, names[i],
				 err_reason(rc));
		json_decref(ns);
	}
}
