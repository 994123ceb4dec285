/* Credentials subcommands: keygen, token, kubeconfig. */
#include "ursactl.h"
#include "auth/auth_internal.h"
#include "ursa/base64.h"
#include "ursa/rbac.h"
#include "ursa/xalloc.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CA_FILE_MAX (1024 * 1024)
#define DEFAULT_TTL "24h"

const struct flag_spec keygen_flags[] = {
	{ "out-dir", "DIR", "Write DIR/signing-key.pem (mode 0600) and DIR/signing-key.pub", true },
	{ "force", NULL, "Replace an existing key pair (tokens signed with it stop working)", false },
	{ NULL, NULL, NULL, false },
};

#define IDENTITY_FLAGS(groups_help)                                                           \
	{ "tenant", "T", "Tenant of the user (a DNS label; \"system\" for operators)", true }, \
	{ "user", "U", "User name (the token's sub claim)", true },                            \
	{ "uid", "X", "User UID (omitted when not given)", false },                           \
	{ "groups", "G1,G2", groups_help, false },                                              \
	{ "ttl", "DURATION", "Lifetime such as 24h, 90m, 7d; 0 for no expiry (default " DEFAULT_TTL ")", false }, \
	{ "signing-key", "FILE", "PEM private key (default $URSA_SIGNING_KEY, else <region>/signing-key.pem)", false }

const struct flag_spec token_flags[] = {
	IDENTITY_FLAGS("Comma-separated groups, e.g. system:masters"),
	{ NULL, NULL, NULL, false },
};

const struct flag_spec kubeconfig_flags[] = {
	IDENTITY_FLAGS("Comma-separated groups, e.g. system:masters; exactly these. Without --groups the user is an "
		       "administrator of the tenant (group " GROUP_TENANT_ADMINS ")"),
	{ "server", "URL", "API server URL (default $URSA_SERVER, else the line in <region>/server)", false },
	{ "certificate-authority", "FILE", "CA certificate to embed (default $URSA_CA_FILE, else <region>/ca.crt)", false },
	{ "context", "NAME", "Name of the context (default USER@TENANT)", false },
	{ NULL, NULL, NULL, false },
};

/* ---- keygen ---- */

static int ensure_dir(const char *dir)
{
	struct stat st;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return fail("cannot create %s: %s", dir, strerror(errno));
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return fail("%s is not a directory", dir);
	return EXIT_OK;
}

int cmd_keygen(const struct command *cmd, const struct flags *f)
{
	const char *dir = flag_get(f, "out-dir");
	char *priv = xasprintf("%s/signing-key.pem", dir), *pub = xasprintf("%s/signing-key.pub", dir);
	struct stat st;
	int r = ensure_dir(dir);
	if (r != EXIT_OK)
		goto out;
	if (!flag_bool(f, "force") && stat(priv, &st) == 0) {
		r = fail("%s already exists; pass --force to replace it (tokens signed with it stop working)", priv);
		goto out;
	}
	if (keypair_generate(priv, pub) < 0) {
		r = fail("cannot write the key pair to %s: %s", dir, strerror(errno));
		goto out;
	}
	printf("wrote %s (private, mode 0600) and %s (public)\n", priv, pub);
out:
	free(priv);
	free(pub);
	return r;
}

/* ---- token ---- */

static void add_groups(struct identity *id, const char *list)
{
	const char *p = list;
	while (p && *p) {
		size_t n = strcspn(p, ",");
		const char *s = p, *e = p + n;
		while (s < e && (*s == ' ' || *s == '\t'))
			s++;
		while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if (e > s)
			identity_add_group(id, s, (size_t)(e - s));
		p += n + (p[n] == ',');
	}
}

/* Signs a token for the identity the flags describe, in groups default_groups when --groups is
 * not given. Returns a new string or NULL after printing why. */
static char *mint_token(const struct flags *f, const char *default_groups)
{
	const char *tenant = flag_get(f, "tenant"), *ttl_s = flag_get(f, "ttl");
	struct identity id = { 0 };
	char *key = NULL, *hint = NULL, *err = NULL, *tok = NULL;
	int64_t ttl = 0;
	if (!auth_tenant_ok(tenant, strlen(tenant))) {
		fail("bad --tenant \"%s\": need a DNS label (a-z, 0-9, '-', at most 63) other than \"all\"", tenant);
		goto out;
	}
	if (parse_duration(ttl_s ? ttl_s : DEFAULT_TTL, &ttl) < 0) {
		fail("bad --ttl \"%s\": use e.g. 24h, 90m, 1h30m, 7d, or 0 for no expiry", ttl_s);
		goto out;
	}
	key = region_file(flag_get(f, "signing-key"), "--signing-key", "URSA_SIGNING_KEY",
			  "signing-key.pem", &hint);
	if (!key) {
		fail("no signing key: %s (ursactl keygen --out-dir DIR makes one)", hint);
		goto out;
	}
	id.user = xstrdup(flag_get(f, "user"));
	id.uid = flag_get(f, "uid") ? xstrdup(flag_get(f, "uid")) : NULL;
	id.tenant = xstrdup(tenant);
	add_groups(&id, flag_get(f, "groups") ? flag_get(f, "groups") : default_groups);
	tok = jwt_sign_file(key, &id, ttl, &err);
	if (!tok)
		fail("cannot sign a token: %s", err);
out:
	identity_release(&id);
	free(key);
	free(hint);
	free(err);
	return tok;
}

int cmd_token(const struct command *cmd, const struct flags *f)
{
	char *tok = mint_token(f, NULL);
	if (!tok)
		return EXIT_FAIL;
	printf("%s\n", tok);
	free(tok);
	return EXIT_OK;
}

/* ---- kubeconfig ---- */

static bool url_ok(const char *url)
{
	if (strncmp(url, "https://", 8) != 0 && strncmp(url, "http://", 7) != 0)
		return false;
	for (const char *p = url; *p; p++)
		if ((unsigned char)*p <= 0x20 || *p == 0x7f)
			return false;
	return true;
}

/* Reads the CA file (if any) and appends its base64 to out. EXIT_OK or EXIT_FAIL. */
static int ca_data(const char *path, struct buf *out)
{
	struct buf pem = BUF_INIT;
	char *err = NULL;
	int r = EXIT_FAIL;
	if (auth_read_file(path, CA_FILE_MAX, &pem, &err) < 0) {
		fail("certificate authority: %s", err);
		goto out;
	}
	if (!strstr(buf_cstr(&pem), "-----BEGIN CERTIFICATE-----")) {
		fail("certificate authority %s: no PEM certificate in it", path);
		goto out;
	}
	base64_encode(out, pem.ptr, pem.len, 0);
	r = EXIT_OK;
out:
	buf_release(&pem);
	free(err);
	return r;
}

/* YAML double-quoted scalars accept JSON string escapes, so every value goes out JSON-quoted. */
static void yaml_kv(struct buf *y, const char *indent, const char *key, const char *val)
{
	buf_addf(y, "%s%s: ", indent, key);
	buf_add_json_str(y, val, strlen(val));
	buf_addch(y, '\n');
}

static void render_kubeconfig(struct buf *y, const char *server, const char *ca64, const char *ctx,
			      const char *tenant, const char *token)
{
	buf_adds(y, "apiVersion: v1\nkind: Config\nclusters:\n");
	yaml_kv(y, "- ", "name", "ursa");
	buf_adds(y, "  cluster:\n");
	yaml_kv(y, "    ", "server", server);
	if (ca64)
		yaml_kv(y, "    ", "certificate-authority-data", ca64);
	else if (strncmp(server, "https://", 8) == 0)
		buf_adds(y, "    insecure-skip-tls-verify: true\n");
	buf_adds(y, "users:\n");
	yaml_kv(y, "- ", "name", ctx);
	buf_adds(y, "  user:\n");
	yaml_kv(y, "    ", "token", token);
	buf_adds(y, "contexts:\n");
	yaml_kv(y, "- ", "name", ctx);
	buf_adds(y, "  context:\n");
	yaml_kv(y, "    ", "cluster", "ursa");
	yaml_kv(y, "    ", "user", ctx);
	yaml_kv(y, "    ", "tenant", tenant);
	yaml_kv(y, "    ", "namespace", "default");
	yaml_kv(y, "", "current-context", ctx);
	buf_adds(y, "preferences: {}\n");
}

int cmd_kubeconfig(const struct command *cmd, const struct flags *f)
{
	char *server = NULL, *ca = NULL, *hint = NULL, *tok = NULL, *ctx = NULL;
	struct buf ca64 = BUF_INIT, yaml = BUF_INIT;
	int r = EXIT_FAIL;
	server = region_server(flag_get(f, "server"), &hint);
	if (!server) {
		fail("no server URL: %s", hint);
		goto out;
	}
	if (!url_ok(server)) {
		fail("bad server URL \"%s\": need http:// or https:// and no spaces", server);
		goto out;
	}
	free(hint);
	hint = NULL;
	/* The CA is optional: without one an https server is trusted without verification. */
	ca = region_file(flag_get(f, "certificate-authority"), "--certificate-authority",
			 "URSA_CA_FILE", "ca.crt", &hint);
	if (ca && ca_data(ca, &ca64) != EXIT_OK)
		goto out;
	tok = mint_token(f, GROUP_TENANT_ADMINS);
	if (!tok)
		goto out;
	ctx = flag_get(f, "context") ? xstrdup(flag_get(f, "context"))
				      : xasprintf("%s@%s", flag_get(f, "user"), flag_get(f, "tenant"));
	/* A tenant's own server URL (the gateway drops the prefix): kubectl caches discovery per
	 * server URL, and each tenant sees its own API (its CustomResourceDefinitions). */
	const char *tenant = flag_get(f, "tenant");
	char *url = strcmp(tenant, TENANT_SYSTEM) == 0 ? xstrdup(server)
			: xasprintf("%.*s/tenants/%s", (int)(strlen(server) - (server[strlen(server) - 1] == '/')),
				    server, tenant);
	render_kubeconfig(&yaml, url, ca ? buf_cstr(&ca64) : NULL, ctx, tenant, tok);
	free(url);
	fputs(buf_cstr(&yaml), stdout);
	r = EXIT_OK;
out:
	free(server);
	free(ca);
	free(hint);
	free(tok);
	free(ctx);
	buf_release(&ca64);
	buf_release(&yaml);
	return r;
}
