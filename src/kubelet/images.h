/* Image references, registry mirrors and pull credentials: the pure helpers the CRI runtime uses
 * before PullImage. Nothing here does I/O except kl_pull_secrets_fetch (secrets.c).
 *
 * References follow the docker reference grammar as Kubernetes and containerd normalise it:
 *   busybox                    -> docker.io/library/busybox:latest
 *   team/app:1                 -> docker.io/team/app:1
 *   registry.example:5000/a/b@sha256:<64 hex> -> kept, no tag added
 * The first path component is a registry domain when it holds '.' or ':', is "localhost", or
 * has an upper-case letter; index.docker.io is written docker.io. */
#ifndef URSA_KUBELET_IMAGES_H
#define URSA_KUBELET_IMAGES_H
#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#define IMAGE_DEFAULT_DOMAIN "docker.io"
#define IMAGE_NAME_MAX 255 /* domain/path, as the reference grammar caps it */
#define IMAGE_TAG_MAX 128

/* A parsed, normalised reference. Every string is owned; tag and digest may be NULL (a
 * reference without either gets tag "latest"; one with only a digest keeps no tag). */
struct image_ref {
	char *domain; /* "docker.io", "127.0.0.1:5000", "localhost" */
	char *path;   /* "library/busybox" */
	char *tag;    /* "1.36" or NULL */
	char *digest; /* "sha256:<hex>" or NULL */
};

/* Parses and normalises s. 0 with *ret filled (release with image_ref_release), or -1 with
 * *ret_err (new string, may be NULL to skip) set to Kubernetes' InvalidImageName message:
 *   Failed to apply default image tag "S": couldn't parse image reference "S": invalid reference format[: why]
 * *ret is not touched on error. */
int image_ref_parse(const char *s, struct image_ref *ret, char **ret_err);
void image_ref_release(struct image_ref *r); /* frees the strings; NULL or zeroed is fine */
/* The fully qualified form "domain/path[:tag][@digest]" (new string). */
char *image_ref_string(const struct image_ref *r);
/* "domain/path" (new string): what credential lookup matches against. */
char *image_ref_repository(const struct image_ref *r);

/* Registry mirrors: a small table domain -> mirror host, filled from repeated
 * --registry-mirror DOMAIN=HOST[:PORT] flags (e.g. docker.io=127.0.0.1:5000). The kubelet
 * rewrites the reference it asks the runtime to pull; containerd's own hosts.toml mirrors are
 * the alternative when the runtime's configuration is ours to write. */
struct image_mirrors {
	size_t n;
	char **from; /* normalised domains ("index.docker.io" is stored as "docker.io") */
	char **to;
};
/* Adds one "DOMAIN=HOST" entry. 0, or -1 with *ret_err (new string) when spec is malformed
 * (no '=', empty side, a side that is not a registry host[:port], or a duplicate domain). */
int image_mirrors_add(struct image_mirrors *m, const char *spec, char **ret_err);
void image_mirrors_release(struct image_mirrors *m);
/* The reference to pull for r: r's fully qualified form with its domain replaced by the
 * mirror configured for it, or r's own form when there is none (new string). Look credentials
 * up for the reference actually pulled (parse this string), so that a secret's credentials for
 * one registry are never sent to another; report the user's own image name in pod status.
 * The result can exceed IMAGE_NAME_MAX when the mirror host is longer than the domain. */
char *image_mirror_ref(const struct image_mirrors *m, const struct image_ref *r);

/* Pull credentials from docker-registry Secrets (type kubernetes.io/dockerconfigjson with
 * data[".dockerconfigjson"] = base64 {"auths":{REG:{...}}}, or kubernetes.io/dockercfg with
 * data[".dockercfg"] = base64 {REG:{...}}). An entry's "auth" (base64 "user:pass"), when present,
 * wins over its "username"/"password", as in Kubernetes. */
struct pull_auth {
	char *server;   /* the entry's registry key as written in the secret */
	char *username;
	char *password;
};
void pull_auth_release(struct pull_auth *a);
/* Looks up credentials for ref among the secrets (borrowed Secret objects, in the pod's
 * imagePullSecrets order; NULL items and secrets of other types or unparseable data are
 * skipped). Matching is Kubernetes' keyring: a key's scheme is dropped and a trailing /v1/ or
 * /v2/ path ignored; key host (with '*' globs per dot-separated label) and port must equal the
 * reference's domain, and the key's path must prefix the reference's path; among matches the
 * greatest key in byte order wins (so longer, more specific paths first), then the earliest
 * secret. A docker.io reference with no match falls back to an "index.docker.io" key
 * (e.g. "https://index.docker.io/v1/").
 * Returns 1 with *ret filled, 0 when no entry matches (*ret untouched). */
int pull_auth_lookup(const json_t *const *secrets, size_t n, const struct image_ref *ref, struct pull_auth *ret);

/* The registry entries of one secret: fn is called for each (key, username, password) of a
 * well-formed entry, in key order. Returns the number of entries, or -1 when the secret is not
 * a docker-registry secret or its data does not parse. Exposed for the fuzz target. */
int pull_secret_entries(const json_t *secret, void (*fn)(void *ud, const char *key, const char *user, const char *pass),
			void *ud);

struct kl_partition;
/* Secrets (secrets.c): GETs each of the pod's spec.imagePullSecrets from the pod's tenant
 * partition (tenant and namespace of the pod) with the node's credential. Returns the number
 * fetched (0..n) and *ret_secrets (new array of new references, NULL when none; free with
 * kl_pull_secrets_free); a secret that is missing or refused is skipped (logged once), as the
 * kubelet does, and *ret_missing (may be NULL) counts those. Blocking (one GET per secret, at
 * most 64): call it from the pod worker, right before a pull that needs credentials.
 * The API servers let a node credential naming its node (system:node:<name>) GET exactly the
 * secrets that pods bound to that node name (src/common/apiserver/nodesecrets.c). */
size_t kl_pull_secrets_fetch(struct kl_partition *p, const json_t *pod, json_t ***ret_secrets, size_t *ret_missing);
void kl_pull_secrets_free(json_t **secrets, size_t n);

#endif
