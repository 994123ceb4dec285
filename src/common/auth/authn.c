/* The authenticator a server holds: a static token table and/or a key for signed tokens.
 * Both are immutable after authn_new, so authn_token needs no lock (OpenSSL 3 allows one
 * EVP_PKEY to be used for verification from several threads). */
#include "auth/auth_internal.h"
#include "ursa/errors.h"
#include "ursa/xalloc.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct authn {
	struct tokentab *tokens;
	EVP_PKEY *key;
};

int auth_read_file(const char *path, size_t cap, struct buf *out, char **ret_err)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		*ret_err = xasprintf("cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	char chunk[8192];
	size_t n;
	int r = 0;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		if (out->len + n > cap) {
			*ret_err = xasprintf("%s: larger than %zu bytes", path, cap);
			r = -1;
			break;
		}
		buf_add(out, chunk, n);
	}
	if (r == 0 && ferror(f)) {
		*ret_err = xasprintf("cannot read %s", path);
		r = -1;
	}
	fclose(f);
	return r;
}

char *auth_read_token_file(const char *path, char **ret_err)
{
	struct buf b = BUF_INIT;
	char *tok = NULL;
	if (auth_read_file(path, AUTH_TOKEN_MAX + 4096, &b, ret_err) < 0)
		goto out;
	const char *p = buf_cstr(&b);
	size_t n = strcspn(p, "\r\n");
	while (n && (*p == ' ' || *p == '\t'))
		p++, n--;
	while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
		n--;
	if (n == 0 || n > AUTH_TOKEN_MAX)
		*ret_err = xasprintf("%s: %s", path, n ? "token too long" : "no token on its first line");
	else
		tok = xstrndup(p, n);
out:
	buf_release(&b);
	return tok;
}

static int load_token_file(struct authn *a, const char *path, char **ret_err)
{
	struct buf data = BUF_INIT, err = BUF_INIT;
	int r = -1;
	if (auth_read_file(path, AUTH_TOKEN_FILE_MAX, &data, ret_err) < 0)
		goto out;
	if (tokentab_parse(buf_cstr(&data), data.len, &a->tokens, &err) < 0) {
		*ret_err = xasprintf("%s: %s", path, buf_cstr(&err));
		goto out;
	}
	r = 0;
out:
	buf_release(&data);
	buf_release(&err);
	return r;
}

int authn_new(const char *token_file, const char *public_key_file, struct authn **ret, char **ret_err)
{
	struct authn *a = xcalloc(1, sizeof(*a));
	if (token_file && load_token_file(a, token_file, ret_err) < 0)
		goto fail;
	if (public_key_file && auth_load_public_key(public_key_file, &a->key, ret_err) < 0)
		goto fail;
	*ret = a;
	return 0;
fail:
	authn_free(a);
	return E_BAD_REQUEST;
}

void authn_free(struct authn *a)
{
	if (!a)
		return;
	tokentab_free(a->tokens);
	EVP_PKEY_free(a->key);
	free(a);
}

int authn_token(struct authn *a, const char *token, struct identity *ret)
{
	return authn_token_for(a, token, API_AUDIENCE, ret);
}

int authn_token_for(struct authn *a, const char *token, const char *audience, struct identity *ret)
{
	if (!a || !token || !audience)
		return E_UNAUTHORIZED;
	size_t len = strnlen(token, AUTH_TOKEN_MAX + 1);
	if (len == 0 || len > AUTH_TOKEN_MAX)
		return E_UNAUTHORIZED;
	const struct identity *id = tokentab_lookup(a->tokens, token, len);
	if (id && strcmp(audience, API_AUDIENCE) != 0)
		return E_UNAUTHORIZED;
	if (id) {
		identity_copy(id, ret);
		return 0;
	}
	if (a->key)
		return jwt_verify_for(a->key, token, len, time(NULL), audience, ret);
	return E_UNAUTHORIZED;
}

char *jwt_sign_file(const char *private_key_file, const struct identity *id, int64_t ttl_s, char **ret_err)
{
	EVP_PKEY *key = NULL;
	if (auth_load_private_key(private_key_file, &key, ret_err) < 0)
		return NULL;
	char *tok = jwt_sign(key, id, time(NULL), ttl_s, ret_err);
	EVP_PKEY_free(key);
	return tok;
}
