/* Authentication: bearer tokens from a static token file and signed tokens (JWT, RS256 or
 * ES256 with OpenSSL). Authorization helpers for tenant isolation. */
#ifndef URSA_AUTH_H
#define URSA_AUTH_H
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#define TENANT_SYSTEM "system"
#define TENANT_ALL "all"
#define GROUP_MASTERS "system:masters"
/* Site reliability engineers: read-only access to every tenant and the cluster scope. */
#define GROUP_SRE "ursa:sre"
/* Kubelets: the group of the credentials a node holds. */
#define GROUP_NODES "system:nodes"

struct identity {
	char *user;
	char *uid;
	char *tenant;   /* never NULL once authenticated; "system" by default */
	char **groups;  /* owned array of owned strings */
	size_t ngroups;
	/* Service-account tokens only (all NULL for any other identity): the uid of the service
	 * account (user is SA_USER_PREFIX "<namespace>:<name>", uid the same uid), and the object the
	 * token is bound to, if any: kind "Pod" or "Secret", its name (in the same namespace) and uid.
	 * The API servers refuse the identity once either is gone (apiserver/tokens.c). Owned. */
	char *sa_uid;
	char *bound_kind, *bound_name, *bound_uid;
};
/* Service accounts: user names, their groups (as Kubernetes), and the audience of the API. */
#define SA_USER_PREFIX "system:serviceaccount:"
#define GROUP_SERVICEACCOUNTS "system:serviceaccounts"
#define GROUP_AUTHENTICATED "system:authenticated"
/* A signed token that carries "aud" authenticates to the API (gateways, API servers) only if it
 * lists this audience; tokens without "aud" (ursactl kubeconfig's) are API tokens. It is also the
 * tokens' issuer ("iss"). TokenRequest's default audience. */
#define API_AUDIENCE "ursa"
void identity_release(struct identity *id);
void identity_copy(const struct identity *src, struct identity *ret);
bool identity_in_group(const struct identity *id, const char *group);
/* For a service account's user name (SA_USER_PREFIX "<ns>:<name>", both non-empty, name without
 * ':'): 0 with new strings in *ret_ns and *ret_name; -1 for any other user name. */
int sa_user_split(const char *user, char **ret_ns, char **ret_name);
/* A system:masters member of tenant system: may reach every tenant. */
bool identity_is_system_admin(const struct identity *id);
/* True if id may act inside tenant (its own tenant, or a system admin). */
bool identity_may_access_tenant(const struct identity *id, const char *tenant);
/* An ursa:sre member of tenant system who is not a system admin: may get, list and watch
 * every tenant's objects and the cluster scope (secrets excepted, as Kubernetes' "view" role),
 * and may write nothing. */
bool identity_is_sre(const struct identity *id);
/* A system:nodes member of tenant system who is not a system admin: reads what an SRE reads, and
 * writes only what a kubelet writes (nodes, node leases, pod status, the final delete of a pod;
 * the API server's node rule, apiserver/server.c). */
bool identity_is_node(const struct identity *id);
/* The node a node credential names (user "system:node:<name>", as Kubernetes' node
 * credentials), which alone it may write; NULL for any other identity, and for a node
 * credential without a name (one process simulating many nodes holds such a one). Borrowed. */
const char *identity_node_name(const struct identity *id);
/* True if id may read inside tenant: identity_may_access_tenant, or an SRE ("all" included). */
bool identity_may_read_tenant(const struct identity *id, const char *tenant);

/* A bearer token kept in a file (the region token, a kubelet's client token): its first line
 * without surrounding blanks. Returns a new string, or NULL with a new message in *ret_err
 * (missing, unreadable, too long, empty). */
char *auth_read_token_file(const char *path, char **ret_err);

struct authn;
/* token_file: CSV lines `token,user,uid,"group1,group2",tenant` (groups and tenant optional,
 * tenant defaults to "system"; '#' comments). public_key_file: PEM public key verifying signed
 * tokens. Either may be NULL. Returns 0 or E_BAD_REQUEST with a message in *ret_err (new string). */
int authn_new(const char *token_file, const char *public_key_file, struct authn **ret, char **ret_err);
void authn_free(struct authn *a);
/* Authenticates a bearer token (without "Bearer "). E_UNAUTHORIZED if unknown, badly signed or
 * expired. Thread-safe. */
int authn_token(struct authn *a, const char *token, struct identity *ret);
/* The same for a given audience: a signed token with an "aud" claim must list audience; one
 * without, and a static token, are API tokens (API_AUDIENCE) only. authn_token is this with
 * API_AUDIENCE. */
int authn_token_for(struct authn *a, const char *token, const char *audience, struct identity *ret);

/* Signed tokens: header {"alg":"RS256"|"ES256","typ":"JWT"}, claims {"iss":"ursa","sub":user,
 * "uid":..,"tenant":..,"groups":[..],"iat":..,"exp":..}. The key is a PEM private key file.
 * ttl_s 0 means no expiry. Returns a new string, or NULL with a message in *ret_err. */
char *jwt_sign_file(const char *private_key_file, const struct identity *id, int64_t ttl_s, char **ret_err);
/* A private key held for signing many tokens (an API server's service-account tokens). */
struct jwt_signer;
/* 0 and a new signer, or -1 with a new message in *ret_err. */
int jwt_signer_load(const char *private_key_file, struct jwt_signer **ret, char **ret_err);
void jwt_signer_free(struct jwt_signer *s);
/* Signs id's claims as jwt_sign_file does (service-account identities add {"kubernetes.io":
 * {"namespace":..,"serviceaccount":{"name":..,"uid":..},"pod"|"secret":{"name":..,"uid":..}}}),
 * plus "nbf" = now and "aud" listing aud[0..naud) (no "aud" when naud is 0), expiring at
 * now + ttl_s (ttl_s > 0). Returns a new string, or NULL with a new message in *ret_err.
 * Thread-safe. */
char *jwt_signer_sign(const struct jwt_signer *s, const struct identity *id, const char *const *aud, size_t naud,
		      time_t now, int64_t ttl_s, char **ret_err);
/* Generates an RSA-2048 key pair as PEM files (private mode 0600). 0 or -1. */
int keypair_generate(const char *private_path, const char *public_path);

/* Identity assertions: how a gateway, having authenticated a caller, tells a partition who the
 * caller is. Header IDENTITY_HEADER carries "v1.<claims>.<mac>": the token claims of the
 * identity (base64url JSON, as in signed tokens, with a short expiry) and an HMAC-SHA256 of
 * "v1.<claims>" under a secret only the region's gateways and partitions hold (a key file of at
 * least 32 bytes; surrounding whitespace is ignored). A partition configured with the key takes
 * the identity from the header instead of the Authorization header; nobody without the key can
 * make one. */
#define IDENTITY_HEADER "X-Ursa-Identity"
struct idkey;
/* 0 and a new key, or E_BAD_REQUEST with a new message in *ret_err. */
int idkey_load(const char *path, struct idkey **ret, char **ret_err);
void idkey_free(struct idkey *k);
/* A new assertion of id valid for ttl_s seconds from now, or NULL if id cannot be expressed. */
char *identity_assert(const struct idkey *k, const struct identity *id, time_t now, int64_t ttl_s);
/* Verifies an assertion at time now and fills *ret (only on success). 0 or E_UNAUTHORIZED.
 * Thread-safe. */
int identity_assertion_verify(const struct idkey *k, const char *s, size_t len, time_t now, struct identity *ret);

/* ---- token cache (tokcache.c) ----
 * A cache of bearer tokens the server has already authenticated, so a client's every request
 * does not pay the signature check of its token again (an RSA verification through OpenSSL 3
 * costs more than the rest of a small PATCH). Entries live TOKCACHE_TTL_S seconds at most, and
 * never past the token's own "exp" claim when it has one. Thread-safe. */
#define TOKCACHE_TTL_S 10
#define TOKCACHE_SLOTS 4096      /* direct-mapped: a colliding token replaces the older one */
#define TOKCACHE_MAX_TOKEN 8192  /* longer tokens are not cached */

struct tokcache;
struct tokcache *tokcache_new(void);
void tokcache_free(struct tokcache *c);
/* 0 with *ret (a copy the caller releases) when tok (len bytes) was put and has not expired
 * at now; E_NOT_FOUND otherwise (*ret untouched). */
int tokcache_get(struct tokcache *c, const char *tok, size_t len, time_t now, struct identity *ret);
/* Remembers that tok authenticates as id (copied), from now until now + TOKCACHE_TTL_S or the
 * exp claim of a signed token (header.claims.signature, claims base64url JSON), whichever
 * comes first. Tokens already expired or too long are not kept. */
void tokcache_put(struct tokcache *c, const char *tok, size_t len, const struct identity *id, time_t now);
/* The exp claim of a signed token, or 0 if it has none or the token is not one. */
long long tokcache_token_exp(const char *tok, size_t len);

#endif
