/* Drives the kubelet's pull secret path for test_pull_secrets.py: with a node's kubeconfig,
 * GETs the pod at POD_PATH, fetches its imagePullSecrets from that partition
 * (kl_pull_secrets_fetch) and prints, as one JSON object, how many were fetched and missing and,
 * per IMAGE, the credentials pull_auth_lookup picks ({"server","username","password"} or null).
 * Usage: pullsecret_probe KUBECONFIG POD_PATH IMAGE... Exit 0, or 2 when the pod cannot be read. */
#include <stdio.h>
#include <stdlib.h>
#include "images.h"
#include "kubelet.h"
#include "ursa/client.h"

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: pullsecret_probe KUBECONFIG POD_PATH IMAGE...\n");
		return 2;
	}
	char *err = NULL;
	struct rest_client *rc = rest_from_kubeconfig(argv[1], &err);
	if (!rc) {
		fprintf(stderr, "kubeconfig: %s\n", err ? err : "?");
		return 2;
	}
	json_t *pod = NULL;
	int code = rest_do(rc, "GET", argv[2], NULL, NULL, &pod);
	if (code != 200 || !pod) {
		fprintf(stderr, "GET %s: %d\n", argv[2], code);
		return 2;
	}
	struct kl_partition p = { .name = "probe", .rc = rc };
	json_t **secrets = NULL;
	size_t missing = 0;
	size_t n = kl_pull_secrets_fetch(&p, pod, &secrets, &missing);
	json_t *out = json_pack("{s:I,s:I,s:{}}", "fetched", (json_int_t)n, "missing", (json_int_t)missing, "auth");
	for (int i = 3; i < argc; i++) {
		struct image_ref ref;
		char *perr = NULL;
		json_t *v = json_null();
		if (image_ref_parse(argv[i], &ref, &perr) < 0) {
			v = json_pack("{s:s}", "error", perr);
			free(perr);
		} else {
			struct pull_auth a = { 0 };
			if (pull_auth_lookup((const json_t *const *)secrets, n, &ref, &a) == 1)
				v = json_pack("{s:s,s:s,s:s}", "server", a.server, "username", a.username, "password", a.password);
			pull_auth_release(&a);
			image_ref_release(&ref);
		}
		json_object_set_new(json_object_get(out, "auth"), argv[i], v);
	}
	char *s = json_dumps(out, JSON_COMPACT);
	printf("%s\n", s);
	free(s);
	json_decref(out);
	kl_pull_secrets_free(secrets, n);
	json_decref(pod);
	rest_free(rc);
	return 0;
}
