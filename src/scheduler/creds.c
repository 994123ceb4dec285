/* The partition kubeconfig's credentials, also used for the resource managers (the region
 * gives every component one identity and one CA across partitions). */
#include <stdio.h>
#include <string.h>
#include "daemon.h"
#include "client/client_internal.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

#define KUBECONFIG_MAX (1u << 20)

static int slurp(const char *path, struct buf *out, char **ret_err)
{
	FILE *f = fopen(path, "rb");
	char chunk[4096];
	size_t n;
	if (!f) {
		*ret_err = xasprintf("cannot open %s", path);
		return -1;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		buf_add(out, chunk, n);
		if (out->len > KUBECONFIG_MAX) {
			fclose(f);
			*ret_err = xasprintf("%s: larger than %u bytes", path, KUBECONFIG_MAX);
			return -1;
		}
	}
	fclose(f);
	return 0;
}

/* The entry of list whose name is name: its member what (borrowed). */
static const json_t *entry(const json_t *doc, const char *list, const char *what, const char *name)
{
	size_t i;
	const json_t *it;
	json_array_foreach(json_object_get(doc, list), i, it) {
		const char *n = json_str(it, "name");
		if (n && name && strcmp(n, name) == 0)
			return json_object_get(it, what);
	}
	return NULL;
}

static int ca_of(const char *path, const json_t *cluster, struct buf *ca, char **ret_err)
{
	const char *data = json_str(cluster, "certificate-authority-data");
	const char *file = json_str(cluster, "certificate-authority");
	if (data) {
		if (base64_decode_buf(data, strlen(data), ca) == 0)
			return 0;
		*ret_err = xasprintf("%s: certificate-authority-data is not base64", path);
		return -1;
	}
	if (!file)
		return 0;
	const char *slash = strrchr(path, '/');
	char *full = *file == '/' || !slash ? xstrdup(file) : xasprintf("%.*s/%s", (int)(slash - path), path, file);
	int rc = slurp(full, ca, ret_err);
	free(full);
	return rc;
}

int sched_creds_load(const char *path, struct sched_creds *ret, char **ret_err)
{
	struct sched_creds c = { NULL };
	struct buf text = BUF_INIT, perr = BUF_INIT;
	json_t *doc = NULL;
	int rc = -1;
	if (slurp(path, &text, ret_err) < 0)
		goto out;
	doc = yaml_doc_to_json(buf_cstr(&text), text.len, &perr);
	if (!json_is_object(doc)) {
		*ret_err = xasprintf("%s: %s", path, perr.len ? buf_cstr(&perr) : "not a kubeconfig");
		goto out;
	}
	const json_t *ctx = entry(doc, "contexts", "context", json_str(doc, "current-context"));
	const json_t *cluster = entry(doc, "clusters", "cluster", json_str(ctx, "cluster"));
	const json_t *user = entry(doc, "users", "user", json_str(ctx, "user"));
	const char *server = json_str(cluster, "server");
	if (!server || !*server) {
		*ret_err = xasprintf("%s: the current context has no server", path);
		goto out;
	}
	if (ca_of(path, cluster, &c.ca, ret_err) < 0)
		goto out;
	const char *ins = json_str(cluster, "insecure-skip-tls-verify");
	c.insecure = (ins && strcmp(ins, "true") == 0) ||
		     json_is_true(json_object_get(cluster, "insecure-skip-tls-verify"));
	c.server = xstrdup(server);
	c.token = json_str(user, "token") ? xstrdup(json_str(user, "token")) : NULL;
	*ret = c;
	rc = 0;
out:
	if (rc)
		sched_creds_release(&c);
	json_decref(doc);
	buf_release(&text);
	buf_release(&perr);
	return rc;
}

void sched_creds_release(struct sched_creds *c)
{
	free(c->server);
	free(c->token);
	buf_release(&c->ca);
	c->server = c->token = NULL;
}

struct rest_client *sched_creds_client(const struct sched_creds *c, const char *servers)
{
	struct rest_config cfg = { .servers = servers, .token = c->token, .user_agent = "ursa-scheduler" };
	struct rest_extra extra = { .ca_blob = c->ca.len ? c->ca.ptr : NULL, .ca_blob_len = c->ca.len,
				    .insecure = c->insecure };
	return rest_new_ext(&cfg, &extra);
}
