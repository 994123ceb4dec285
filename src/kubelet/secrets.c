/* A pod's image pull secrets, read from the pod's tenant partition with the node's credential.
 * The API servers let a node credential GET (never list or watch) only the secrets that a pod
 * bound to that node names (server.c node_may / read.c), as Kubernetes' node authorizer does. */
#include <string.h>
#include "images.h"
#include "kubelet.h"
#include "ursa/buf.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/xalloc.h"

#define MAX_PULL_SECRETS 64 /* a cap on what one pod makes the kubelet fetch */

size_t kl_pull_secrets_fetch(struct kl_partition *p, const json_t *pod, json_t ***ret_secrets, size_t *ret_missing)
{
	const json_t *refs = json_object_get(json_object_get(pod, "spec"), "imagePullSecrets");
	const char *tenant = json_path_str(pod, "metadata.tenant");
	const char *ns = json_path_str(pod, "metadata.namespace");
	size_t n = json_array_size(refs), got = 0, missing = 0;
	json_t **out = NULL;
	if (n > MAX_PULL_SECRETS)
		n = MAX_PULL_SECRETS;
	if (n)
		out = xcalloc(n, sizeof(*out));
	for (size_t i = 0; i < n; i++) {
		const char *name = json_string_value(json_object_get(json_array_get(refs, i), "name"));
		if (!name || !*name || !p || !p->rc)
			continue;
		struct buf path = BUF_INIT;
		buf_adds(&path, "/api/v1/tenants/");
		buf_add_query_escaped(&path, tenant && *tenant ? tenant : "system");
		buf_adds(&path, "/namespaces/");
		buf_add_query_escaped(&path, ns && *ns ? ns : "default");
		buf_adds(&path, "/secrets/");
		buf_add_query_escaped(&path, name);
		json_t *body = NULL;
		int code = rest_do(p->rc, "GET", buf_cstr(&path), NULL, NULL, &body);
		if (code == 200 && json_is_object(body)) {
			out[got++] = body;
			body = NULL;
		} else {
			missing++;
			log_warn("image pull secret not read", "partition=\"%s\" path=\"%s\" code=%d", p->name, buf_cstr(&path),
				 code);
		}
		json_decref(body);
		buf_release(&path);
	}
	if (ret_missing)
		*ret_missing = missing;
	if (!got) {
		free(out);
		out = NULL;
	}
	*ret_secrets = out;
	return got;
}

void kl_pull_secrets_free(json_t **secrets, size_t n)
{
	for (size_t i = 0; secrets && i < n; i++)
		json_decref(secrets[i]);
	free(secrets);
}
