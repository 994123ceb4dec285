/* kubeconfig files: current-context → context → cluster (server, CA, insecure flag) and user
 * (token or client certificate). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>
#include "client/client_internal.h"
#include "ursa/base64.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

#define KUBECONFIG_MAX_BYTES (4u << 20)
#define YAML_MAX_DEPTH 32
#define YAML_MAX_NODES 100000 /* after alias expansion */

/* YAML → JSON ---------------------------------------------------------------------------------- */

static json_t *node_to_json(yaml_document_t *doc, yaml_node_t *node, int depth, size_t *budget)
{
	json_t *out = NULL;

	if (!node || depth > YAML_MAX_DEPTH || !*budget)
		return NULL;
	(*budget)--;
	switch (node->type) {
	case YAML_SCALAR_NODE:
		return json_stringn((const char *)node->data.scalar.value, node->data.scalar.length);
	case YAML_SEQUENCE_NODE:
		out = json_array();
		for (yaml_node_item_t *it = node->data.sequence.items.start; it < node->data.sequence.items.top; it++) {
			json_t *v = node_to_json(doc, yaml_document_get_node(doc, *it), depth + 1, budget);
			if (!v)
				goto fail;
			json_array_append_new(out, v);
		}
		return out;
	case YAML_MAPPING_NODE:
		out = json_object();
		for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
			yaml_node_t *k = yaml_document_get_node(doc, p->key);
			json_t *v;
			if (!k || k->type != YAML_SCALAR_NODE)
				goto fail;
			v = node_to_json(doc, yaml_document_get_node(doc, p->value), depth + 1, budget);
			if (!v)
				goto fail;
			json_object_setn_new_nocheck(out, (const char *)k->data.scalar.value, k->data.scalar.length, v);
		}
		return out;
	default:
		return NULL;
	}
fail:
	json_decref(out);
	return NULL;
}

json_t *yaml_doc_to_json(const char *data, size_t len, struct buf *ret_err)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	json_t *out = NULL;
	size_t budget = YAML_MAX_NODES;

	if (!yaml_parser_initialize(&parser))
		return NULL;
	yaml_parser_set_input_string(&parser, (const unsigned char *)data, len);
	if (!yaml_parser_load(&parser, &doc)) {
		if (ret_err)
			buf_addf(ret_err, "YAML: %s at line %zu", parser.problem ? parser.problem : "parse error",
				 parser.problem_mark.line + 1);
		yaml_parser_delete(&parser);
		return NULL;
	}
	out = node_to_json(&doc, yaml_document_get_root_node(&doc), 0, &budget);
	if (!out && ret_err)
		buf_adds(ret_err, "YAML: empty, too deep, too large or with a non-scalar key");
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	return out;
}

/* Base64 ----------------------------------------------------------------------------------------- */

int base64_decode_buf(const char *s, size_t len, struct buf *out)
{
	struct buf text = BUF_INIT; /* kubeconfigs may wrap long base64 values: whitespace goes */
	for (size_t i = 0; i < len; i++)
		if (s[i] != ' ' && s[i] != '\n' && s[i] != '\r' && s[i] != '\t')
			buf_addch(&text, s[i]);
	int rc = base64_decode(out, text.ptr ? text.ptr : "", text.len, BASE64_PAD_OPTIONAL);
	buf_release(&text);
	return rc;
}

/* Files and lookups ------------------------------------------------------------------------------- */

static int read_file(const char *path, struct buf *out, char **ret_err)
{
	FILE *f = fopen(path, "rb");
	char chunk[8192];
	size_t n;

	if (!f) {
		*ret_err = xasprintf("cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		if (out->len + n > KUBECONFIG_MAX_BYTES) {
			fclose(f);
			*ret_err = xasprintf("%s is larger than %u bytes", path, KUBECONFIG_MAX_BYTES);
			return -1;
		}
		buf_add(out, chunk, n);
	}
	fclose(f);
	if (!out->ptr)
		buf_adds(out, "");
	return 0;
}

/* Paths in a kubeconfig are relative to the file's directory. New string. */
static char *resolve(const char *kubeconfig, const char *p)
{
	const char *slash = strrchr(kubeconfig, '/');
	if (*p == '/' || !slash)
		return xstrdup(p);
	return xasprintf("%.*s/%s", (int)(slash - kubeconfig), kubeconfig, p);
}

/* The "what" member of the entry of list "list" whose name is name; borrowed or NULL. */
static json_t *find_named(const json_t *doc, const char *list, const char *what, const char *name)
{
	json_t *arr = json_object_get(doc, list), *it;
	size_t i;
	if (!name)
		return NULL;
	json_array_foreach(arr, i, it) {
		const char *n = json_str(it, "name");
		if (n && !strcmp(n, name))
			return json_object_get(it, what);
	}
	return NULL;
}

static void trim_end(struct buf *b)
{
	while (b->len && (b->ptr[b->len - 1] == '\n' || b->ptr[b->len - 1] == '\r' || b->ptr[b->len - 1] == ' '))
		b->ptr[--b->len] = '\0';
}

/* Loads inline base64 data (field data_key) or a file (field path_key) into out. 0 or -1. */
static int load_pem(const char *kubeconfig, const json_t *obj, const char *data_key, const char *path_key,
		    struct buf *out, char **ret_err)
{
	const char *data = json_str(obj, data_key), *path = json_str(obj, path_key);
	if (data) {
		if (base64_decode_buf(data, strlen(data), out) < 0) {
			*ret_err = xasprintf("%s is not valid base64", data_key);
			return -1;
		}
		return 0;
	}
	if (path) {
		char *full = resolve(kubeconfig, path);
		int rc = read_file(full, out, ret_err);
		free(full);
		return rc;
	}
	return 0;
}

struct rest_creds {
	struct buf ca, cert, key, token;
	char *server;
	bool insecure;
};

static int load_user(const char *path, const json_t *user, struct rest_creds *kc, char **ret_err)
{
	const char *token = json_str(user, "token"), *token_file = json_str(user, "tokenFile");

	if (token) {
		buf_adds(&kc->token, token);
	} else if (token_file) {
		char *full = resolve(path, token_file);
		int rc = read_file(full, &kc->token, ret_err);
		free(full);
		if (rc < 0)
			return -1;
		trim_end(&kc->token);
	}
	if (load_pem(path, user, "client-certificate-data", "client-certificate", &kc->cert, ret_err) < 0 ||
	    load_pem(path, user, "client-key-data", "client-key", &kc->key, ret_err) < 0)
		return -1;
	return 0;
}

void rest_creds_free(struct rest_creds *kc)
{
	if (!kc)
		return;
	buf_release(&kc->ca);
	buf_release(&kc->cert);
	buf_release(&kc->key);
	buf_release(&kc->token);
	free(kc->server);
	free(kc);
}

const char *rest_creds_server(const struct rest_creds *kc)
{
	return kc->server;
}

struct rest_creds *rest_creds_from_kubeconfig(const char *path, char **ret_err)
{
	struct buf text = BUF_INIT, perr = BUF_INIT;
	struct rest_creds *kc = xcalloc(1, sizeof(*kc));
	json_t *doc = NULL, *ctx, *cluster, *user;
	const char *cur, *server, *insecure;
	char *err = NULL;
	bool ok = false;

	if (read_file(path, &text, &err) < 0)
		goto out;
	doc = yaml_doc_to_json(text.ptr, text.len, &perr);
	if (!json_is_object(doc)) {
		err = xasprintf("%s: %s", path, perr.len ? buf_cstr(&perr) : "not a YAML mapping");
		goto out;
	}
	cur = json_str(doc, "current-context");
	ctx = find_named(doc, "contexts", "context", cur);
	if (!ctx) {
		err = xasprintf("%s: current-context \"%s\" not found", path, cur ? cur : "");
		goto out;
	}
	cluster = find_named(doc, "clusters", "cluster", json_str(ctx, "cluster"));
	server = json_str(cluster, "server");
	if (!server || !*server) {
		err = xasprintf("%s: cluster of context \"%s\" has no server", path, cur);
		goto out;
	}
	kc->server = xstrdup(server);
	if (load_pem(path, cluster, "certificate-authority-data", "certificate-authority", &kc->ca, &err) < 0)
		goto out;
	user = find_named(doc, "users", "user", json_str(ctx, "user"));
	if (user && load_user(path, user, kc, &err) < 0)
		goto out;
	insecure = json_str(cluster, "insecure-skip-tls-verify");
	kc->insecure = insecure && !strcmp(insecure, "true");
	ok = true;
out:
	if (!ok) {
		if (ret_err)
			*ret_err = err ? err : xstrdup("kubeconfig: unknown error");
		else
			free(err);
		rest_creds_free(kc);
		kc = NULL;
	}
	json_decref(doc);
	buf_release(&text);
	buf_release(&perr);
	return kc;
}

struct rest_client *rest_new_with_creds(const struct rest_creds *kc, const char *servers, const char *user_agent)
{
	struct rest_config cfg = { .servers = servers, .token = kc->token.len ? kc->token.ptr : NULL,
				   .user_agent = user_agent };
	struct rest_extra extra = {
		.ca_blob = kc->ca.ptr, .ca_blob_len = kc->ca.len,
		.cert_blob = kc->cert.ptr, .cert_blob_len = kc->cert.len,
		.key_blob = kc->key.ptr, .key_blob_len = kc->key.len,
		.insecure = kc->insecure,
	};
	return rest_new_ext(&cfg, &extra);
}

struct rest_client *rest_from_kubeconfig(const char *path, char **ret_err)
{
	struct rest_creds *kc = rest_creds_from_kubeconfig(path, ret_err);
	if (!kc)
		return NULL;
	struct rest_client *c = rest_new_with_creds(kc, kc->server, NULL);
	if (!c && ret_err)
		*ret_err = xasprintf("%s: bad server \"%s\"", path, kc->server);
	rest_creds_free(kc);
	return c;
}
