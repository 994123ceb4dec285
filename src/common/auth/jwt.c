/* Signed tokens: JWT compact serialization (RFC 7519/7515), RS256 and ES256 only.
 * The algorithm is fixed by the verifying key; the header's "alg" must name exactly it, so
 * "none" and HS256-with-the-public-key tricks fail before any signature is looked at. */
#include "auth/auth_internal.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <stdlib.h>
#include <string.h>

#define ES256_HALF 32
#define ISSUER API_AUDIENCE

/* ECDSA signatures are DER in OpenSSL and raw r||s (32 bytes each) in JWS. */
static int der_to_raw(const unsigned char *der, size_t len, struct buf *out)
{
	const unsigned char *p = der;
	ECDSA_SIG *sig = d2i_ECDSA_SIG(NULL, &p, (long)len);
	unsigned char raw[2 * ES256_HALF];
	int r = -1;
	if (!sig)
		return -1;
	const BIGNUM *br = NULL, *bs = NULL;
	ECDSA_SIG_get0(sig, &br, &bs);
	if (BN_bn2binpad(br, raw, ES256_HALF) == ES256_HALF &&
	    BN_bn2binpad(bs, raw + ES256_HALF, ES256_HALF) == ES256_HALF) {
		buf_add(out, raw, sizeof(raw));
		r = 0;
	}
	ECDSA_SIG_free(sig);
	return r;
}

/* Returns a new DER encoding in *ret_der (OPENSSL_free it) and its length, or -1. */
static int raw_to_der(const unsigned char *raw, size_t len, unsigned char **ret_der)
{
	if (len != 2 * ES256_HALF)
		return -1;
	ECDSA_SIG *sig = ECDSA_SIG_new();
	BIGNUM *br = BN_bin2bn(raw, ES256_HALF, NULL);
	BIGNUM *bs = BN_bin2bn(raw + ES256_HALF, ES256_HALF, NULL);
	int n = -1;
	if (!sig || !br || !bs || !ECDSA_SIG_set0(sig, br, bs)) {
		BN_free(br);
		BN_free(bs);
		goto out;
	}
	*ret_der = NULL;
	n = i2d_ECDSA_SIG(sig, ret_der);
out:
	ECDSA_SIG_free(sig);
	return n > 0 ? n : -1;
}

static int sign_bytes(EVP_PKEY *key, bool ecdsa, const char *data, size_t len, struct buf *out)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char *sig = NULL;
	size_t siglen = 0;
	int r = -1;
	if (!ctx || EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, key) != 1)
		goto out;
	if (EVP_DigestSign(ctx, NULL, &siglen, (const unsigned char *)data, len) != 1)
		goto out;
	sig = xmalloc(siglen);
	if (EVP_DigestSign(ctx, sig, &siglen, (const unsigned char *)data, len) != 1)
		goto out;
	if (ecdsa)
		r = der_to_raw(sig, siglen, out);
	else
		buf_add(out, sig, siglen), r = 0;
out:
	free(sig);
	EVP_MD_CTX_free(ctx);
	ERR_clear_error();
	return r;
}

static int verify_bytes(EVP_PKEY *key, bool ecdsa, const char *data, size_t len,
			const struct buf *sig)
{
	const unsigned char *s = (const unsigned char *)sig->ptr;
	unsigned char *der = NULL;
	size_t slen = sig->len;
	EVP_MD_CTX *ctx = NULL;
	int r = -1;
	if (ecdsa) {
		int n = raw_to_der(s, slen, &der);
		if (n < 0)
			goto out;
		s = der, slen = (size_t)n;
	} else if (slen != (size_t)EVP_PKEY_get_size(key)) {
		goto out;
	}
	ctx = EVP_MD_CTX_new();
	if (!ctx || EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, key) != 1)
		goto out;
	if (EVP_DigestVerify(ctx, s, slen, (const unsigned char *)data, len) == 1)
		r = 0;
out:
	OPENSSL_free(der);
	EVP_MD_CTX_free(ctx);
	ERR_clear_error();
	return r;
}

char *jwt_sign_raw(EVP_PKEY *key, const char *alg, const char *header_json, const char *claims_json)
{
	struct buf tok = BUF_INIT, sig = BUF_INIT;
	bool ecdsa = strcmp(alg, "ES256") == 0;
	if (!ecdsa && strcmp(alg, "RS256") != 0)
		return NULL;
	b64url_encode(&tok, header_json, strlen(header_json));
	buf_addch(&tok, '.');
	b64url_encode(&tok, claims_json, strlen(claims_json));
	if (sign_bytes(key, ecdsa, tok.ptr, tok.len, &sig) < 0) {
		buf_release(&tok);
		buf_release(&sig);
		return NULL;
	}
	buf_addch(&tok, '.');
	b64url_encode(&tok, sig.ptr, sig.len);
	buf_release(&sig);
	return buf_detach(&tok, NULL);
}

static bool opt_field_ok(const char *s)
{
	return s && auth_field_ok(s, strlen(s));
}

static const char *check_sa(const struct identity *id)
{
	char *ns = NULL, *name = NULL;
	const char *why = NULL;
	if (!id->sa_uid) {
		if (id->bound_kind || id->bound_name || id->bound_uid)
			why = "only a service account's token can be bound to an object";
	} else if (!opt_field_ok(id->sa_uid) || sa_user_split(id->user, &ns, &name) < 0) {
		why = "a service account's token needs its uid and user " SA_USER_PREFIX "<namespace>:<name>";
	} else if (id->bound_kind || id->bound_name || id->bound_uid) {
		bool kind_ok = id->bound_kind && (!strcmp(id->bound_kind, "Pod") || !strcmp(id->bound_kind, "Secret"));
		if (!kind_ok || !opt_field_ok(id->bound_name) || !opt_field_ok(id->bound_uid))
			why = "a token is bound to a Pod or a Secret, by name and uid";
	}
	free(ns);
	free(name);
	return why;
}

const char *jwt_check_identity(const struct identity *id)
{
	const char *tenant = id->tenant ? id->tenant : TENANT_SYSTEM;
	if (!id->user || !auth_field_ok(id->user, strlen(id->user)))
		return "user must be 1 to 1024 printable characters";
	if (id->uid && *id->uid && !auth_field_ok(id->uid, strlen(id->uid)))
		return "uid must be at most 1024 printable characters";
	if (!auth_tenant_ok(tenant, strlen(tenant)))
		return "tenant must be a DNS label (lowercase letters, digits, '-') other than \"all\"";
	if (id->ngroups > AUTH_GROUPS_MAX)
		return "too many groups";
	for (size_t i = 0; i < id->ngroups; i++)
		if (!id->groups[i] || !auth_field_ok(id->groups[i], strlen(id->groups[i])))
			return "group names must be 1 to 1024 printable characters";
	return check_sa(id);
}

json_t *jwt_identity_claims(const struct identity *id, time_t now, int64_t ttl_s)
{
	json_t *c = json_object();
	json_object_set_new(c, "iss", json_string(ISSUER));
	json_object_set_new(c, "sub", json_string(id->user));
	if (id->uid && *id->uid)
		json_object_set_new(c, "uid", json_string(id->uid));
	json_object_set_new(c, "tenant", json_string(id->tenant ? id->tenant : TENANT_SYSTEM));
	if (id->ngroups) {
		json_t *g = json_array();
		for (size_t i = 0; i < id->ngroups; i++)
			json_array_append_new(g, json_string(id->groups[i]));
		json_object_set_new(c, "groups", g);
	}
	json_object_set_new(c, "iat", json_integer((json_int_t)now));
	if (ttl_s)
		json_object_set_new(c, "exp", json_integer((json_int_t)now + ttl_s));
	char *ns = NULL, *name = NULL;
	if (id->sa_uid && sa_user_split(id->user, &ns, &name) == 0) {
		json_t *k = json_pack("{s:s,s:{s:s,s:s}}", "namespace", ns, "serviceaccount", "name", name, "uid",
				      id->sa_uid);
		if (id->bound_kind && id->bound_name && id->bound_uid)
			json_object_set_new(k, strcmp(id->bound_kind, "Pod") == 0 ? "pod" : "secret",
					    json_pack("{s:s,s:s}", "name", id->bound_name, "uid", id->bound_uid));
		json_object_set_new(c, "kubernetes.io", k);
	}
	free(ns);
	free(name);
	return c;
}

/* Signs claims c (borrowed); NULL with a new message. */
static char *sign_claims(EVP_PKEY *key, const char *alg, const json_t *c, char **ret_err)
{
	struct buf header = BUF_INIT, claims = BUF_INIT;
	buf_addf(&header, "{\"alg\":\"%s\",\"typ\":\"JWT\"}", alg);
	json_dump_buf(c, &claims);
	char *tok = jwt_sign_raw(key, alg, header.ptr, buf_cstr(&claims));
	buf_release(&header);
	buf_release(&claims);
	if (!tok) {
		*ret_err = xstrdup("signing failed");
	} else if (strlen(tok) > AUTH_TOKEN_MAX) {
		free(tok);
		tok = NULL;
		*ret_err = xasprintf("token longer than %d bytes (too many groups?)", AUTH_TOKEN_MAX);
	}
	return tok;
}

char *jwt_sign(EVP_PKEY *key, const struct identity *id, time_t now, int64_t ttl_s, char **ret_err)
{
	const char *alg = jwt_alg_for_key(key), *why = jwt_check_identity(id);
	if (!alg) {
		*ret_err = xstrdup("unsupported signing key (need RSA of 2048 bits or more, or EC P-256)");
		return NULL;
	}
	if (why) {
		*ret_err = xstrdup(why);
		return NULL;
	}
	if (ttl_s > INT64_MAX / 2 || ttl_s < -(INT64_MAX / 2)) {
		*ret_err = xstrdup("ttl out of range");
		return NULL;
	}
	json_t *c = jwt_identity_claims(id, now, ttl_s);
	char *tok = sign_claims(key, alg, c, ret_err);
	json_decref(c);
	return tok;
}

struct jwt_signer {
	EVP_PKEY *key;
};

int jwt_signer_load(const char *private_key_file, struct jwt_signer **ret, char **ret_err)
{
	EVP_PKEY *key = NULL;
	if (auth_load_private_key(private_key_file, &key, ret_err) < 0)
		return -1;
	struct jwt_signer *s = xcalloc(1, sizeof(*s));
	s->key = key;
	*ret = s;
	return 0;
}

void jwt_signer_free(struct jwt_signer *s)
{
	if (!s)
		return;
	EVP_PKEY_free(s->key);
	free(s);
}

char *jwt_signer_sign(const struct jwt_signer *s, const struct identity *id, const char *const *aud, size_t naud,
		      time_t now, int64_t ttl_s, char **ret_err)
{
	const char *alg = jwt_alg_for_key(s->key), *why = jwt_check_identity(id);
	if (why || !alg) {
		*ret_err = xstrdup(why ? why : "unsupported signing key");
		return NULL;
	}
	if (ttl_s <= 0 || ttl_s > INT64_MAX / 2 || naud > AUTH_AUDIENCES_MAX) {
		*ret_err = xstrdup(naud > AUTH_AUDIENCES_MAX ? "too many audiences" : "ttl out of range");
		return NULL;
	}
	json_t *c = jwt_identity_claims(id, now, ttl_s);
	json_object_set_new(c, "nbf", json_integer((json_int_t)now));
	if (naud) {
		json_t *a = json_array();
		for (size_t i = 0; i < naud; i++) {
			if (!opt_field_ok(aud[i])) {
				json_decref(a);
				json_decref(c);
				*ret_err = xstrdup("audiences must be 1 to 1024 printable characters");
				return NULL;
			}
			json_array_append_new(a, json_string(aud[i]));
		}
		json_object_set_new(c, "aud", a);
	}
	char *tok = sign_claims(s->key, alg, c, ret_err);
	json_decref(c);
	return tok;
}

/* ---- verification ---- */

static json_t *decode_json(struct sv part)
{
	struct buf raw = BUF_INIT;
	json_t *j = NULL;
	if (b64url_decode(part, &raw) == 0 && raw.len)
		j = json_parse_limited(raw.ptr, raw.len, AUTH_JSON_DEPTH, NULL);
	buf_release(&raw);
	if (j && !json_is_object(j)) {
		json_decref(j);
		j = NULL;
	}
	return j;
}

static bool header_ok(const json_t *h, const char *want_alg)
{
	const char *alg = json_str(h, "alg");
	json_t *typ = json_object_get(h, "typ");
	if (!alg || strcmp(alg, want_alg) != 0)
		return false;
	if (typ && (!json_is_string(typ) || strcmp(json_string_value(typ), "JWT") != 0))
		return false;
	/* "crit" names extensions that must be understood; this verifier understands none. */
	return json_object_get(h, "crit") == NULL;
}

static bool str_claim_ok(const json_t *v, bool tenant)
{
	if (!json_is_string(v))
		return false;
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	return tenant ? auth_tenant_ok(s, n) : auth_field_ok(s, n);
}

static bool time_claims_ok(const json_t *c, time_t now)
{
	json_t *exp = json_object_get(c, "exp"), *nbf = json_object_get(c, "nbf");
	json_t *iat = json_object_get(c, "iat");
	if (exp && (!json_is_number(exp) || (double)now >= json_number_value(exp)))
		return false;
	if (nbf && (!json_is_number(nbf) || (double)now < json_number_value(nbf)))
		return false;
	return !iat || json_is_number(iat);
}

static bool groups_ok(const json_t *g)
{
	if (!g || json_is_null(g))
		return true;
	if (!json_is_array(g) || json_array_size(g) > AUTH_GROUPS_MAX)
		return false;
	size_t i;
	json_t *v;
	json_array_foreach(g, i, v)
		if (!str_claim_ok(v, false))
			return false;
	return true;
}

static bool audience_ok(const json_t *aud, const char *audience)
{
	if (!aud)
		return strcmp(audience, API_AUDIENCE) == 0;
	if (json_is_string(aud))
		return strcmp(json_string_value(aud), audience) == 0;
	if (!json_is_array(aud) || json_array_size(aud) > AUTH_AUDIENCES_MAX)
		return false;
	bool found = false;
	size_t i;
	json_t *v;
	json_array_foreach(aud, i, v) {
		if (!json_is_string(v))
			return false;
		if (strcmp(json_string_value(v), audience) == 0)
			found = true;
	}
	return found;
}

/* name and uid of {"name":..,"uid":..} (borrowed), both valid fields, or false. */
static bool ref_ok(const json_t *o, const char **ret_name, const char **ret_uid)
{
	json_t *n = json_object_get(o, "name"), *u = json_object_get(o, "uid");
	if (!json_is_object(o) || !str_claim_ok(n, false) || !str_claim_ok(u, false))
		return false;
	*ret_name = json_string_value(n);
	*ret_uid = json_string_value(u);
	return true;
}

/* The "kubernetes.io" claim k (absent: a plain identity) into id; false if malformed or if it
 * names another service account than sub. */
static bool sa_claims(const json_t *k, const char *sub, struct identity *id)
{
	if (!k)
		return true;
	json_t *ns = json_object_get(k, "namespace"), *pod = json_object_get(k, "pod");
	json_t *secret = json_object_get(k, "secret");
	const char *name, *uid, *bname = NULL, *buid = NULL;
	if (!json_is_object(k) || !str_claim_ok(ns, false) || !ref_ok(json_object_get(k, "serviceaccount"), &name, &uid))
		return false;
	if ((pod && secret) || (pod && !ref_ok(pod, &bname, &buid)) || (secret && !ref_ok(secret, &bname, &buid)))
		return false;
	char *want_ns = NULL, *want_name = NULL;
	bool same = sa_user_split(sub, &want_ns, &want_name) == 0 && strcmp(want_ns, json_string_value(ns)) == 0 &&
		    strcmp(want_name, name) == 0;
	free(want_ns);
	free(want_name);
	if (!same)
		return false;
	id->sa_uid = xstrdup(uid);
	if (bname) {
		id->bound_kind = xstrdup(pod ? "Pod" : "Secret");
		id->bound_name = xstrdup(bname);
		id->bound_uid = xstrdup(buid);
	}
	return true;
}

int jwt_claims_identity(const char *json, size_t len, time_t now, struct identity *ret)
{
	return jwt_claims_identity_for(json, len, now, API_AUDIENCE, ret);
}

int jwt_claims_identity_for(const char *json, size_t len, time_t now, const char *audience, struct identity *ret)
{
	json_t *c = json_parse_limited(json, len, AUTH_JSON_DEPTH, NULL);
	json_t *uid = json_object_get(c, "uid"), *groups = json_object_get(c, "groups");
	const char *iss = json_str(c, "iss");
	int r = E_UNAUTHORIZED;
	if (!json_is_object(c) || !iss || strcmp(iss, ISSUER) != 0)
		goto out;
	if (!str_claim_ok(json_object_get(c, "sub"), false) ||
	    !str_claim_ok(json_object_get(c, "tenant"), true))
		goto out;
	if (uid && !json_is_null(uid) && !str_claim_ok(uid, false))
		goto out;
	if (!groups_ok(groups) || !time_claims_ok(c, now) || !audience_ok(json_object_get(c, "aud"), audience))
		goto out;
	struct identity id = {
		.user = xstrdup(json_str(c, "sub")),
		.uid = json_is_string(uid) ? xstrdup(json_string_value(uid)) : NULL,
		.tenant = xstrdup(json_str(c, "tenant")),
	};
	size_t i;
	json_t *v;
	if (json_is_array(groups))
		json_array_foreach(groups, i, v)
			identity_add_group(&id, json_string_value(v), json_string_length(v));
	if (!sa_claims(json_object_get(c, "kubernetes.io"), id.user, &id)) {
		identity_release(&id);
		goto out;
	}
	*ret = id;
	r = 0;
out:
	json_decref(c);
	return r;
}

int jwt_verify(EVP_PKEY *key, const char *token, size_t len, time_t now, struct identity *ret)
{
	return jwt_verify_for(key, token, len, now, API_AUDIENCE, ret);
}

int jwt_verify_for(EVP_PKEY *key, const char *token, size_t len, time_t now, const char *audience,
		   struct identity *ret)
{
	const char *alg = jwt_alg_for_key(key);
	if (!alg || !token || len == 0 || len > AUTH_TOKEN_MAX)
		return E_UNAUTHORIZED;
	const char *d1 = memchr(token, '.', len);
	const char *d2 = d1 ? memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - token)) : NULL;
	if (!d2 || memchr(d2 + 1, '.', len - (size_t)(d2 + 1 - token)))
		return E_UNAUTHORIZED;
	struct sv head = { token, (size_t)(d1 - token) };
	struct sv body = { d1 + 1, (size_t)(d2 - d1 - 1) };
	struct sv sigpart = { d2 + 1, len - (size_t)(d2 + 1 - token) };
	struct buf sig = BUF_INIT, claims = BUF_INIT;
	json_t *h = decode_json(head);
	int r = E_UNAUTHORIZED;
	if (!h || !header_ok(h, alg))
		goto out;
	if (b64url_decode(sigpart, &sig) < 0 || sig.len == 0)
		goto out;
	if (verify_bytes(key, alg[0] == 'E', token, (size_t)(d2 - token), &sig) < 0)
		goto out;
	if (b64url_decode(body, &claims) < 0 || claims.len == 0)
		goto out;
	r = jwt_claims_identity_for(claims.ptr, claims.len, now, audience, ret);
out:
	json_decref(h);
	buf_release(&sig);
	buf_release(&claims);
	return r;
}
