/* The root CA publisher: every namespace holds the ConfigMap kube-root-ca.crt with the CA bundle
 * (--root-ca-file) that pods verify the API's front door with (the default service-account volume
 * projects it as ca.crt), as Kubernetes' root-ca-cert-publisher does. Created when missing, its
 * data put back when changed; nothing without --root-ca-file. */
#include <stdlib.h>
#include <string.h>
#include "tpc.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

#define ROOT_CA_KEY "ca.crt"

int tpc_sync_rootca(struct tpc *m, const char *key)
{
	char *t = NULL, *ns = NULL, *name = NULL;
	if (!m->root_ca || !tpc_split_key(key, &t, &ns, &name))
		return 0;
	struct buf path = BUF_INIT, cm = BUF_INIT;
	json_t *nsobj = NULL, *cur = NULL;
	int rc = 0;
	/* both read from the informers: the resync of every namespace each minute asks nothing of the
	 * API server when all is in place; a stale view costs a 409 and a retry */
	int code = tpc_get_cached(m, INF_NAMESPACES, "namespaces", t, NULL, ns, &nsobj);
	if (code == 404 || (code == 200 && json_path(nsobj, "metadata.deletionTimestamp")))
		goto out;
	if (code != 200) {
		rc = E_UNAVAILABLE;
		goto out;
	}
	tpc_path(&cm, "configmaps", t, ns, TPC_ROOT_CA_NAME);
	code = tpc_get_cached(m, INF_CONFIGMAPS, "configmaps", t, ns, TPC_ROOT_CA_NAME, &cur);
	if (code == 404) {
		tpc_path(&path, "configmaps", t, ns, NULL);
		json_t *obj = json_pack("{s:s,s:s,s:{s:s},s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap", "metadata",
					"name", TPC_ROOT_CA_NAME, "data", ROOT_CA_KEY, m->root_ca);
		code = tpc_send(m, "POST", path.ptr, obj, NULL);
		json_decref(obj);
		rc = code == 201 || code == 409 ? 0 : E_UNAVAILABLE;
	} else if (code == 200) {
		const char *have = json_str(json_object_get(cur, "data"), ROOT_CA_KEY);
		if (!have || strcmp(have, m->root_ca) != 0) {
			json_t *body = json_deep_copy(cur); /* an informer's objects are shared */
			json_object_set_new(body, "data", json_pack("{s:s}", ROOT_CA_KEY, m->root_ca));
			code = tpc_send(m, "PUT", cm.ptr, body, NULL);
			json_decref(body);
			rc = code == 200 ? 0 : code == 409 ? E_CONFLICT : E_UNAVAILABLE;
		}
	} else {
		rc = E_UNAVAILABLE;
	}
out:
	json_decref(nsobj);
	json_decref(cur);
	buf_release(&path);
	buf_release(&cm);
	free(t), free(ns), free(name);
	return rc;
}
