/* Internals of the auth module, exposed for its unit tests, fuzz targets and ursactl.
 * Nothing here is part of the daemon-facing API in include/ursa/auth.h. */
#ifndef URSA_AUTH_INTERNAL_H
#define URSA_AUTH_INTERNAL_H
#include <jansson.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <time.h>
#include "ursa/auth.h"
#include "ursa/base64.h"
#include "ursa/buf.h"

/* Caps on what a client or an operator controls. */
#define AUTH_TOKEN_MAX (16 * 1024)          /* bearer token length, static or signed */
#define AUTH_TOKEN_FILE_MAX (16 * 1024 * 1024)
#define AUTH_FIELD_MAX 1024                 /* user, uid, tenant, one group name */
#define AUTH_GROUPS_MAX 256
#define AUTH_AUDIENCES_MAX 32                /* entries of a token's "aud" */
#define AUTH_JSON_DEPTH 4                   /* header and claims: {"groups":[...]} is depth 2 */

/* ---- base64url as JWT compact serialization uses it (RFC 7515: RFC 4648 section 5, no padding),
 * over the common codec in ursa/base64.h ---- */
#define B64URL_JWT (BASE64_URL | BASE64_NOPAD | BASE64_CANONICAL)
static inline void b64url_encode(struct buf *out, const void *data, size_t len)
{
	base64_encode(out, data, len, B64URL_JWT);
}
/* Strict decode: only the url alphabet, no padding, no stray bits, so each token has one
 * spelling. Appends to out (allocated and NUL-terminated afterwards); 0, or -1 with out unchanged. */
static inline int b64url_decode(struct sv in, struct buf *out)
{
	return base64_decode(out, in.ptr, in.len, B64URL_JWT);
}

/* ---- identity helpers ---- */
/* Checks one identity string (user, uid, tenant, group): not empty, at most AUTH_FIELD_MAX bytes,
 * no control characters. */
bool auth_field_ok(const char *s, size_t len);
/* True if tenant is a name an identity may carry: a DNS label (at most 63 of [a-z0-9-], alphanumeric
 * at both ends), and not "all". */
bool auth_tenant_ok(const char *s, size_t len);
/* Appends a copy of group to id->groups. */
void identity_add_group(struct identity *id, const char *group, size_t len);

/* ---- static token file ---- */
struct tokentab;
/* Parses token-file content from memory (see auth.h for the format). A duplicate token is an
 * error. Returns 0 and a new table in *ret, or E_BAD_REQUEST with "line N: why" appended to err. */
int tokentab_parse(const char *data, size_t len, struct tokentab **ret, struct buf *err);
void tokentab_free(struct tokentab *t);
size_t tokentab_count(const struct tokentab *t);
/* Looks a token up (the comparison of digests is constant-time). Returns a borrowed identity
 * owned by the table, or NULL. */
const struct identity *tokentab_lookup(const struct tokentab *t, const char *token, size_t len);

/* ---- files and keys ---- */
/* Appends the whole file to out. Returns 0, or -1 with a new message (missing, unreadable,
 * larger than cap bytes). */
int auth_read_file(const char *path, size_t cap, struct buf *out, char **ret_err);
/* Loads a PEM file: a public key, a certificate or an (unencrypted) private key. RSA keys must be
 * at least 2048 bits, EC keys on P-256. Returns 0 and a new key, or -1 with a new message. */
int auth_load_public_key(const char *path, EVP_PKEY **ret, char **ret_err);
/* Loads an unencrypted PEM private key with the same restrictions. */
int auth_load_private_key(const char *path, EVP_PKEY **ret, char **ret_err);
/* "RS256" for RSA, "ES256" for P-256, NULL for anything else. Static string. */
const char *jwt_alg_for_key(EVP_PKEY *key);

/* ---- signed tokens ---- */
/* Signs header.claims (both JSON texts, encoded here) with key using alg's digest and signature
 * format, without checking that alg suits key: tests use it to build hostile tokens. alg must be
 * "RS256" or "ES256". Returns a new string, or NULL. */
char *jwt_sign_raw(EVP_PKEY *key, const char *alg, const char *header_json, const char *claims_json);
/* Builds and signs the claims of id (see auth.h). ttl_s 0: no "exp"; a negative ttl gives an
 * already expired token. Returns a new string, or NULL with a new message in *ret_err. */
char *jwt_sign(EVP_PKEY *key, const struct identity *id, time_t now, int64_t ttl_s, char **ret_err);
/* Why id cannot be put in a token (static text), or NULL if it can. */
const char *jwt_check_identity(const struct identity *id);
/* The claims of id (iss, sub, uid, tenant, groups, iat, exp when ttl_s; kubernetes.io for a
 * service account): a new reference. */
json_t *jwt_identity_claims(const struct identity *id, time_t now, int64_t ttl_s);
/* Verifies token against key at time now and fills *ret (written only on success).
 * Returns 0 or E_UNAUTHORIZED. Safe to call from several threads with one key. */
int jwt_verify(EVP_PKEY *key, const char *token, size_t len, time_t now, struct identity *ret);
/* Validates decoded claims JSON (iss, sub, tenant, uid, groups, exp, nbf) at time now and fills
 * *ret (only on success). Exposed for fuzzing. Returns 0 or E_UNAUTHORIZED. */
int jwt_claims_identity(const char *json, size_t len, time_t now, struct identity *ret);
/* The same two for a given audience (the two above use API_AUDIENCE): claims with "aud" (a
 * string or an array of at most AUTH_AUDIENCES_MAX strings) must list audience; claims without
 * it are accepted for API_AUDIENCE only. A "kubernetes.io" claim makes a service-account
 * identity: it must name the namespace and service account (name, uid) that "sub" names
 * (SA_USER_PREFIX "<ns>:<name>"), and at most one of "pod", "secret" (name, uid). */
int jwt_verify_for(EVP_PKEY *key, const char *token, size_t len, time_t now, const char *audience,
		   struct identity *ret);
int jwt_claims_identity_for(const char *json, size_t len, time_t now, const char *audience, struct identity *ret);

/* ---- identity assertions ---- */
/* A key from bytes (no length check: idkey_load enforces the minimum). */
struct idkey *idkey_from_bytes(const void *p, size_t len);

#endif
