/* Image references, registry mirrors and pull credentials: the pure helpers the CRI runtime uses
 * before PullImage. Nothing here does I/O except kl_pull_secrets_fetch (secrets.c), the image
 * puller (imagepull.c) and the image garbage collector (imagegc.c), declared at the end.
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
#include <stdint.h>
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

/* ---- image pulls off the pod worker (imagepull.c) ----
 * A few puller threads with their own CRI client (ursa/cri.h allows sharing one, but the
 * puller's threads may outlive the runtime while a pull hangs: see img_puller_stop) run
 * PullImage. Pulls are keyed by image name and credentials: a request for a pull already queued
 * or running joins it (one pull per image at a time, shared by every pod waiting for it); a
 * finished pull leaves the table, so a later request (a back-off retry) pulls again. */
struct img_puller;
struct img_pull;

/* Starts nthreads (1..16) pullers talking to endpoint (unix:///...). NULL for a bad endpoint. */
struct img_puller *img_puller_start(const char *endpoint, int nthreads);
/* Stops the threads: queued pulls fail ("the kubelet is stopping"), running ones are left to
 * end on their own (their threads are detached and free the puller last); waits at most about
 * 2 s. Pulls still referenced stay valid. NULL is fine. */
void img_puller_stop(struct img_puller *pl);

/* A reference to the pull of image with these credentials (NULL: none), started or joined.
 * sandbox_config (may be NULL) is copied and sent with the pull that starts. Release with
 * img_pull_put. Never blocks on the runtime. */
struct img_pull *img_pull_get(struct img_puller *pl, const char *image, const char *server, const char *user,
			      const char *pass, const void *sandbox_config);
/* 0 while pending; 1 when pulled, with *ret_ref (new string: the runtime's image reference);
 * -1 when it failed, with *ret_err (new string: the runtime's message). */
int img_pull_result(struct img_pull *p, char **ret_ref, char **ret_err);
void img_pull_put(struct img_pull *p); /* NULL is fine */

/* ---- image garbage collection (imagegc.c) ----
 * As Kubernetes' kubelet: when the image filesystem's usage (100 - available*100/capacity, in
 * whole percent) reaches high_pct, images no container uses (and not pinned, not the sandbox
 * image) are removed, least recently used first (then first detected first), skipping those
 * first detected less than min_age_ms ago, until capacity*(100-low_pct)/100 - available bytes
 * are freed. high_pct 100 disables it. */
struct imggc_policy {
	int high_pct, low_pct; /* 0..100, low < high */
	int64_t min_age_ms;
};

struct imggc_image {
	const char *id;
	uint64_t size;
	int64_t first_seen_ms, last_used_ms; /* last_used_ms 0: never seen in use */
	bool in_use, pinned;                 /* pinned: the runtime's pin or the sandbox image */
};

/* Bytes to free for a filesystem of capacity bytes with available bytes free: 0 when usage is
 * below high_pct (or capacity is 0). */
uint64_t imggc_bytes_to_free(const struct imggc_policy *p, uint64_t capacity, uint64_t available);
/* The images to remove to free to_free bytes: indexes into imgs, in removal order, written to
 * ret_idx (room for n); returns their count and their total size in *ret_freed (which is less
 * than to_free when not enough is eligible). Pure. */
size_t imggc_select(const struct imggc_policy *p, const struct imggc_image *imgs, size_t n, int64_t now_ms,
		    uint64_t to_free, size_t *ret_idx, uint64_t *ret_freed);
/* A Go duration as Kubernetes' flags take it ("2m", "1m30s", "500ms", "0", "1.5h"): 0 with
 * *ret_ms, or -1 (negative, malformed, a unit other than h, m, s, ms, or over a year). */
int imggc_parse_duration(const char *s, int64_t *ret_ms);

/* The collector: a thread with its own CRI client that records images (first detected, last
 * used by a container) every few seconds and checks the disk every period_ms. */
struct img_gc;
struct img_gc *img_gc_start(const char *endpoint, const struct imggc_policy *p, int64_t period_ms);
void img_gc_stop(struct img_gc *g); /* joins the thread; NULL is fine */

#endif
