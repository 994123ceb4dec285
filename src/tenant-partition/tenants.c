/* Tenant set-up that belongs to the tenant partition's API server: a new tenant gets its
 * standard namespaces, and a new namespace its default service account, as soon as they exist,
 * so a tenant is usable the moment it is created. */
#include "tp.h"
#include "ursa/auth.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include <string.h>

/* Every namespace gets its "default" ServiceAccount the moment it is created (the namespace
 * controller also ensures it for namespaces that existed before, and after a delete). */
static void default_service_account(struct apiserver *s, const json_t *ns)
{
	const char *tenant = json_path_str(ns, "metadata.tenant"), *name = json_path_str(ns, "metadata.name");
	if (!name || json_path(ns, "metadata.deletionTimestamp"))
		return;
	json_t *sa = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "ServiceAccount", "metadata", "name",
			       "default");
	int rc = apiserver_create(s, "serviceaccounts", tenant ? tenant : TENANT_SYSTEM, name, sa);
	if (rc < 0 && rc != E_ALREADY_EXISTS)
		log_warn("cannot create default service account", "tenant=\"%s\" namespace=\"%s\" err=%s",
			 tenant ? tenant : TENANT_SYSTEM, name, err_reason(rc));
	json_decref(sa);
}

void tp_on_created(struct apiserver *s, const struct api_resource *r, const json_t *obj)
{
	if (strcmp(r->plural, "namespaces") == 0) {
		default_service_account(s, obj);
		return;
	}
	if (strcmp(r->plural, "tenants") != 0)
		return;
	static const char *const names[] = { "default", "kube-system", "kube-public" };
	const char *tenant = json_path_str(obj, "metadata.name");
	apiserver_bootstrap_tenant(s, tenant); /* its default roles, first: its administrators act at once */
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
