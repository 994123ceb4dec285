/* The RM kubeconfig's credentials, reused for the tenant partitions found in the registry.
 * The client library's public API loads a kubeconfig only into a client for its own server,
 * so this uses the library's internal YAML and base64 helpers and rest_new_ext (see the
 * report: a public "kubeconfig with other servers" call would replace this file). */
#include <stdio.h>
#include <string.h>
#include "kubelet.h"
#include "client/client_internal.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

#define KUBECONFIG_MAX (1u << 20)

static int read_small_file(const char *path, struct buf *out, char **ret_err)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		*ret_err = xasprintf("cannot open %s", path);
		return -1;
	}
	char chunk[4096];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		buf_add(out, chunk, n);
		if (out->len > KUBECONFIG_MAX) {
			fclose(f);
			*ret_err = xasprintf("%s is larger than %u bytes", path, KUBECONFIG_MAX);
			return -1;
		}
	}
	fclose(f);
	return 0;
}

static const json_t *named(const json_t *doc, const char *list, const char *what, const char *name)
{
	size_t i;
	const json_t *it;
	json_array_foreach(json_object_get(doc, list), i, it) {
		const char *n = json_str(it, "name");
		if (name && n && strcmp(n, name) == 0)
			return json_object_get(it, what);
	}
	return NULL;
}

static char *resolve(const char *kubeconfig, const char *p)
{
	const char *slash = strrchr(kubeconfig, '/');
	if (*p == '/' || !slash)
		return xstrdup(p);
	return xasprintf("%.*s/%s", (int)(slash - kubeconfig), kubeconfig, p);
}

static int load_ca(const char *path, const json_t *cluster, struct kl_creds *c, char **ret_err)
{
	const char *data = json_str(cluster, "certificate-authority-data");
	const char *file = json_str(cluster, "certificate-authority");
	if (data) {
		if (base64_decode_buf(data, strlen(data), &c->ca) < 0) {
			*ret_err = xasprintf("%s: certificate-authority-data is not base64", path);
			return -1;
		}
		return 0;
	}
	if (!file)
		return 0;
	char *full = resolve(path, file);
	int rc = read_small_file(full, &c->ca, ret_err);
	free(full);
	return rc;
}

int kl_creds_load(const char *path, struct kl_creds *ret, char **ret_err)
{
	struct kl_creds c = { .server = NULL };
	struct buf text = BUF_INIT, perr = BUF_INIT;
	json_t *doc = NULL;
	int rc = -1;
	buf_init(&c.ca);
	if (read_small_file(path, &text, ret_err) < 0)
		goto out;
	doc = yaml_doc_to_json(buf_cstr(&text), text.len, &perr);
	if (!json_is_object(doc)) {
		*ret_err = xasprintf("%s: %s", path, perr.len ? buf_cstr(&perr) : "not a kubeconfig");
		goto out;
	}
	const json_t *ctx = named(doc, "contexts", "context", json_str(doc, "current-context"));
	const json_t *cluster = named(doc, "clusters", "cluster", json_str(ctx, "cluster"));
	const json_t *user = named(doc, "users", "user", json_str(ctx, "user"));
	const char *server = json_str(cluster, "server");
	if (!server || !*server) {
		*ret_err = xasprintf("%s: the current context has no cluster server", path);
		goto out;
	}
	if (load_ca(path, cluster, &c, ret_err) < 0)
		goto out;
	const char *ins = json_str(cluster, "insecure-skip-tls-verify");
	c.insecure = (ins && strcmp(ins, "true") == 0) ||
		     json_is_true(json_object_get(cluster, "insecure-skip-tls-verify"));
	c.server = xstrdup(server);
	if (json_str(user, "token"))
		c.token = xstrdup(json_str(user, "token"));
	*ret = c;
	rc = 0;
out:
	if (rc)
		kl_creds_release(&c);
	json_decref(doc);
	buf_release(&text);
	buf_release(&perr);
	return rc;
}

void kl_creds_release(struct kl_creds *c)
{
	free(c->server);
	free(c->token);
	buf_release(&c->ca);
	c->server = c->token = NULL;
}

struct rest_client *kl_creds_client(const struct kl_creds *c, const char *servers)
{
	struct rest_config cfg = { .servers = servers, .token = c->token, .user_agent = "ursa-kubelet/" KL_VERSION };
	struct rest_extra extra = { .ca_blob = c->ca.len ? c->ca.ptr : NULL, .ca_blob_len = c->ca.len,
				    .insecure = c->insecure };
	return rest_new_ext(&cfg, &extra);
}
