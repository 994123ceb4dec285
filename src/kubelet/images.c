/* Image references (the docker reference grammar, normalised as distribution/reference's
 * ParseNormalizedNamed and the kubelet's default tag do), registry mirrors, and pull credentials
 * from docker-registry secrets matched as Kubernetes' credential keyring matches them. */
#include <fnmatch.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "images.h"
#include "ursa/base64.h"
#include "ursa/buf.h"
#include "ursa/xalloc.h"

#define REF_INPUT_MAX 4096
#define SECRET_DATA_MAX (1024 * 1024) /* a Secret's data is capped at 1 MiB */
#define DOCKER_INDEX_HOST "index.docker.io"

static bool is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(char c)
{
	return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

static bool is_word(char c)
{
	return is_alnum(c) || c == '_';
}

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static bool has_upper(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] >= 'A' && s[i] <= 'Z')
			return true;
	return false;
}

/* host[:port]: dot-separated labels of [A-Za-z0-9-] not starting or ending with '-', or a
 * bracketed IPv6 address; port digits. */
static bool valid_domain(const char *s, size_t n)
{
	size_t i = 0;
	if (n == 0)
		return false;
	if (s[0] == '[') {
		for (i = 1; i < n && s[i] != ']'; i++)
			if (!is_hex(s[i]) && s[i] != ':')
				return false;
		if (i >= n || i == 1)
			return false;
		i++;
	} else {
		for (;;) {
			size_t start = i;
			while (i < n && (is_alnum(s[i]) || s[i] == '-'))
				i++;
			if (i == start || s[start] == '-' || s[i - 1] == '-')
				return false;
			if (i < n && s[i] == '.') {
				i++;
				continue;
			}
			break;
		}
	}
	if (i == n)
		return true;
	if (s[i] != ':' || i + 1 == n)
		return false;
	for (i++; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/* path-component ('/' path-component)*, path-component = [a-z0-9]+ ((. | _ | __ | -+) [a-z0-9]+)* */
static bool valid_path(const char *s, size_t n)
{
	size_t i = 0;
	if (n == 0)
		return false;
	for (;;) {
		if (i >= n || !is_lower_alnum(s[i]))
			return false;
		while (i < n && is_lower_alnum(s[i]))
			i++;
		if (i == n)
			return true;
		if (s[i] == '/') {
			i++;
			continue;
		}
		if (s[i] == '.') {
			i++;
		} else if (s[i] == '_') {
			i += i + 1 < n && s[i + 1] == '_' ? 2 : 1;
		} else if (s[i] == '-') {
			while (i < n && s[i] == '-')
				i++;
		} else {
			return false;
		}
		if (i >= n || !is_lower_alnum(s[i]))
			return false;
	}
}

static bool valid_tag(const char *s, size_t n)
{
	if (n == 0 || n > IMAGE_TAG_MAX || !is_word(s[0]))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!is_word(s[i]) && s[i] != '.' && s[i] != '-')
			return false;
	return true;
}

/* algorithm:hex with a known algorithm and its exact lower-case hex length. */
static bool valid_digest(const char *s, size_t n)
{
	static const struct {
		const char *alg;
		size_t hexlen;
	} algs[] = { { "sha256", 64 }, { "sha384", 96 }, { "sha512", 128 } };
	for (size_t a = 0; a < sizeof(algs) / sizeof(algs[0]); a++) {
		size_t al = strlen(algs[a].alg);
		if (n != al + 1 + algs[a].hexlen || memcmp(s, algs[a].alg, al) != 0 || s[al] != ':')
			continue;
		for (size_t i = al + 1; i < n; i++)
			if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
				return false;
		return true;
	}
	return false;
}

static bool is_hex64(const char *s)
{
	size_t n = strlen(s);
	if (n != 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* The first path component names a registry when it looks like a host: a dot, a port, the
 * name localhost, or an upper-case letter (repository paths are lower-case). */
static bool names_domain(const char *s, size_t n)
{
	return memchr(s, '.', n) || memchr(s, ':', n) || (n == 9 && memcmp(s, "localhost", 9) == 0) || has_upper(s, n);
}

static void normalise_domain(char **d)
{
	if (strcmp(*d, DOCKER_INDEX_HOST) == 0) {
		free(*d);
		*d = xstrdup(IMAGE_DEFAULT_DOMAIN);
	}
}

/* Fills r from s or returns the reason (static or new in *why_alloc). */
static const char *parse(const char *s, struct image_ref *r, char **why_alloc)
{
	size_t len = strlen(s);
	if (len > REF_INPUT_MAX)
		return "invalid reference format";
	if (is_hex64(s)) {
		*why_alloc = xasprintf("invalid repository name (%s), cannot specify 64-byte hexadecimal strings", s);
		return *why_alloc;
	}
	const char *slash = strchr(s, '/');
	const char *rem;
	if (slash && names_domain(s, (size_t)(slash - s))) {
		r->domain = xstrndup(s, (size_t)(slash - s));
		rem = slash + 1;
	} else {
		r->domain = xstrdup(IMAGE_DEFAULT_DOMAIN);
		rem = s;
	}
	normalise_domain(&r->domain);
	char *remainder = strcmp(r->domain, IMAGE_DEFAULT_DOMAIN) == 0 && !strchr(rem, '/')
				  ? xasprintf("library/%s", rem)
				  : xstrdup(rem);
	const char *why = NULL;
	size_t remote_len = strcspn(remainder, ":");
	if (has_upper(remainder, remote_len)) {
		*why_alloc = xasprintf("invalid reference format: repository name (%.*s) must be lowercase", (int)remote_len,
				       remainder);
		why = *why_alloc;
		goto out;
	}
	/* remainder = path [":" tag] ["@" digest]; neither a path nor a tag holds '@'. */
	size_t name_tag_len = strcspn(remainder, "@");
	const char *digest = remainder[name_tag_len] ? remainder + name_tag_len + 1 : NULL;
	size_t path_len = name_tag_len;
	const char *colon = memchr(remainder, ':', name_tag_len);
	const char *last_slash = NULL;
	for (const char *p = remainder; p < remainder + name_tag_len; p++)
		if (*p == '/')
			last_slash = p;
	if (colon && (!last_slash || colon > last_slash))
		path_len = (size_t)(colon - remainder);
	else if (colon)
		colon = NULL; /* a ':' before the last '/' cannot be valid in a path */
	why = "invalid reference format";
	if (!valid_domain(r->domain, strlen(r->domain)) || !valid_path(remainder, path_len))
		goto out;
	if (colon && !valid_tag(colon + 1, name_tag_len - path_len - 1))
		goto out;
	if (digest && !valid_digest(digest, strlen(digest)))
		goto out;
	if (strlen(r->domain) + 1 + path_len > IMAGE_NAME_MAX) {
		why = "repository name must not be more than 255 characters";
		goto out;
	}
	why = NULL;
	r->path = xstrndup(remainder, path_len);
	if (colon)
		r->tag = xstrndup(colon + 1, name_tag_len - path_len - 1);
	if (digest)
		r->digest = xstrdup(digest);
	if (!r->tag && !r->digest)
		r->tag = xstrdup("latest");
out:
	free(remainder);
	return why;
}

int image_ref_parse(const char *s, struct image_ref *ret, char **ret_err)
{
	struct image_ref r = { 0 };
	char *why_alloc = NULL;
	if (!s)
		s = "";
	const char *why = parse(s, &r, &why_alloc);
	if (why) {
		if (ret_err)
			*ret_err = xasprintf("Failed to apply default image tag \"%s\": couldn't parse image reference \"%s\": %s",
					     s, s, why);
		free(why_alloc);
		image_ref_release(&r);
		return -1;
	}
	*ret = r;
	return 0;
}

void image_ref_release(struct image_ref *r)
{
	if (!r)
		return;
	free(r->domain);
	free(r->path);
	free(r->tag);
	free(r->digest);
	memset(r, 0, sizeof(*r));
}

static char *ref_string_on(const char *domain, const struct image_ref *r)
{
	struct buf b = BUF_INIT;
	buf_addf(&b, "%s/%s", domain, r->path);
	if (r->tag)
		buf_addf(&b, ":%s", r->tag);
	if (r->digest)
		buf_addf(&b, "@%s", r->digest);
	return buf_detach(&b, NULL);
}

char *image_ref_string(const struct image_ref *r)
{
	return ref_string_on(r->domain, r);
}

char *image_ref_repository(const struct image_ref *r)
{
	return xasprintf("%s/%s", r->domain, r->path);
}

/* Mirrors */

int image_mirrors_add(struct image_mirrors *m, const char *spec, char **ret_err)
{
	const char *eq = strchr(spec, '=');
	if (!eq || eq == spec || !eq[1] || !valid_domain(spec, (size_t)(eq - spec)) || !valid_domain(eq + 1, strlen(eq + 1))) {
		*ret_err = xasprintf("invalid registry mirror \"%s\": want DOMAIN=HOST[:PORT], e.g. docker.io=127.0.0.1:5000", spec);
		return -1;
	}
	char *from = xstrndup(spec, (size_t)(eq - spec));
	normalise_domain(&from);
	for (size_t i = 0; i < m->n; i++) {
		if (strcmp(m->from[i], from) == 0) {
			*ret_err = xasprintf("invalid registry mirror \"%s\": %s already has a mirror", spec, from);
			free(from);
			return -1;
		}
	}
	m->from = xrealloc(m->from, (m->n + 1) * sizeof(*m->from));
	m->to = xrealloc(m->to, (m->n + 1) * sizeof(*m->to));
	m->from[m->n] = from;
	m->to[m->n] = xstrdup(eq + 1);
	m->n++;
	return 0;
}

void image_mirrors_release(struct image_mirrors *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++) {
		free(m->from[i]);
		free(m->to[i]);
	}
	free(m->from);
	free(m->to);
	memset(m, 0, sizeof(*m));
}

char *image_mirror_ref(const struct image_mirrors *m, const struct image_ref *r)
{
	for (size_t i = 0; m && i < m->n; i++)
		if (strcmp(m->from[i], r->domain) == 0)
			return ref_string_on(m->to[i], r);
	return image_ref_string(r);
}

/* Pull secrets */

void pull_auth_release(struct pull_auth *a)
{
	if (!a)
		return;
	free(a->server);
	free(a->username);
	free(a->password);
	memset(a, 0, sizeof(*a));
}

/* Standard base64, padding optional: any run of trailing '=' is dropped, then the rest must be
 * unpadded base64 (a length of 1 mod 4 is invalid; unused trailing bits are not checked). Appends
 * to out; 0 or -1. */
static int b64_decode(const char *s, size_t n, struct buf *out)
{
	while (n > 0 && s[n - 1] == '=')
		n--;
	return base64_decode(out, s, n, BASE64_NOPAD);
}

/* The decoded config of a docker-registry secret: the object of registry entries (new
 * reference), or NULL. */
static json_t *secret_auths(const json_t *secret)
{
	const char *type = json_string_value(json_object_get(secret, "type"));
	const char *field;
	bool with_auths;
	if (type && strcmp(type, "kubernetes.io/dockerconfigjson") == 0) {
		field = ".dockerconfigjson";
		with_auths = true;
	} else if (type && strcmp(type, "kubernetes.io/dockercfg") == 0) {
		field = ".dockercfg";
		with_auths = false;
	} else {
		return NULL;
	}
	json_t *v = json_object_get(json_object_get(secret, "data"), field);
	const char *b64 = json_string_value(v);
	size_t b64_len = json_string_length(v);
	if (!b64 || b64_len == 0 || b64_len > SECRET_DATA_MAX * 4 / 3 + 4)
		return NULL;
	struct buf raw = BUF_INIT;
	if (b64_decode(b64, b64_len, &raw) < 0) {
		buf_release(&raw);
		return NULL;
	}
	json_t *doc = json_loadb(raw.ptr, raw.len, 0, NULL); /* a repeated key: the last wins, as in Go */
	buf_release(&raw);
	json_t *auths = with_auths ? json_incref(json_object_get(doc, "auths")) : json_incref(doc);
	json_decref(doc);
	if (!json_is_object(auths)) {
		json_decref(auths);
		return NULL;
	}
	return auths;
}

/* user and pass of one entry (new strings), or -1 when its "auth" is not base64("user:pass"). */
static int entry_creds(const json_t *e, char **ret_user, char **ret_pass)
{
	json_t *auth = json_object_get(e, "auth");
	const char *a = json_string_value(auth);
	if (a && *a) {
		struct buf dec = BUF_INIT;
		const char *colon = NULL;
		if (b64_decode(a, json_string_length(auth), &dec) == 0)
			colon = memchr(dec.ptr, ':', dec.len);
		if (!colon) {
			buf_release(&dec);
			return -1;
		}
		*ret_user = xstrndup(dec.ptr, (size_t)(colon - dec.ptr));
		*ret_pass = xstrndup(colon + 1, dec.len - (size_t)(colon - dec.ptr) - 1);
		buf_release(&dec);
		return 0;
	}
	const char *u = json_string_value(json_object_get(e, "username"));
	const char *p = json_string_value(json_object_get(e, "password"));
	*ret_user = xstrdup(u ? u : "");
	*ret_pass = xstrdup(p ? p : "");
	return 0;
}

int pull_secret_entries(const json_t *secret, void (*fn)(void *ud, const char *key, const char *user, const char *pass),
			void *ud)
{
	json_t *auths = secret_auths(secret);
	if (!auths)
		return -1;
	const char *key;
	json_t *e;
	int count = 0;
	json_object_foreach(auths, key, e) {
		char *u = NULL, *p = NULL;
		if (!json_is_object(e) || entry_creds(e, &u, &p) < 0)
			continue;
		fn(ud, key, u, p);
		free(u);
		free(p);
		count++;
	}
	json_decref(auths);
	return count;
}

/* A keyring key or an image as a schemeless URL: host (with port) and path. */
struct url_parts {
	const char *host;
	size_t host_len;
	const char *path; /* "" or starting with '/' */
	size_t path_len;
};

static struct url_parts split_url(const char *s)
{
	if (strncmp(s, "https://", 8) == 0)
		s += 8;
	else if (strncmp(s, "http://", 7) == 0)
		s += 7;
	struct url_parts u = { s, strcspn(s, "/?#"), NULL, 0 };
	u.path = s + u.host_len;
	u.path_len = u.path[0] == '/' ? strcspn(u.path, "?#") : 0;
	return u;
}

/* The keyring's key for a secret's registry entry: scheme dropped, host, and the path unless
 * it is empty, "/" or only the /v1/ or /v2/ API prefix (kept past the prefix). */
static char *keyring_key(const char *loc)
{
	struct url_parts u = split_url(loc);
	const char *path = u.path;
	size_t plen = u.path_len;
	if (plen >= 4 && (strncmp(path, "/v1/", 4) == 0 || strncmp(path, "/v2/", 4) == 0)) {
		path += 3;
		plen -= 3;
	}
	if (plen == 0 || (plen == 1 && path[0] == '/'))
		return xstrndup(u.host, u.host_len);
	return xasprintf("%.*s%.*s", (int)u.host_len, u.host, (int)plen, path);
}

/* host[:port] of a key against an image's: ports equal, the same number of dot-separated
 * labels, each label of the key a glob of the image's. */
static bool hosts_match(const char *glob, size_t gl, const char *host, size_t hl)
{
	const char *gc = memchr(glob, ':', gl), *hc = memchr(host, ':', hl);
	size_t gport = gc ? gl - (size_t)(gc - glob) : 0, hport = hc ? hl - (size_t)(hc - host) : 0;
	if (gport != hport || (gport && memcmp(gc, hc, gport) != 0))
		return false;
	gl -= gport;
	hl -= hport;
	bool ok = true;
	char *g = xstrndup(glob, gl), *h = xstrndup(host, hl);
	char *gs = g, *hs = h;
	for (;;) {
		char *gd = strchr(gs, '.'), *hd = strchr(hs, '.');
		if (!gd != !hd) {
			ok = false;
			break;
		}
		if (gd)
			*gd = '\0';
		if (hd)
			*hd = '\0';
		if (fnmatch(gs, hs, 0) != 0) {
			ok = false;
			break;
		}
		if (!gd)
			break;
		gs = gd + 1;
		hs = hd + 1;
	}
	free(g);
	free(h);
	return ok;
}

static bool key_matches(const char *key, const char *image)
{
	struct url_parts k = split_url(key), t = split_url(image);
	if (!hosts_match(k.host, k.host_len, t.host, t.host_len))
		return false;
	return k.path_len <= t.path_len && memcmp(k.path, t.path, k.path_len) == 0;
}

struct lookup {
	const char *image; /* "domain/path" */
	bool docker_hub;
	struct pull_auth best;
	char *best_key; /* NULL: none yet */
	struct pull_auth index; /* the first "index.docker.io" entry, for the Hub fallback */
	bool have_index;
};

static void on_entry(void *ud, const char *loc, const char *user, const char *pass)
{
	struct lookup *l = ud;
	char *key = keyring_key(loc);
	if (key_matches(key, l->image)) {
		/* greater keys first; an equal key keeps the earlier secret's entry */
		if (!l->best_key || strcmp(key, l->best_key) > 0) {
			pull_auth_release(&l->best);
			free(l->best_key);
			l->best = (struct pull_auth){ xstrdup(loc), xstrdup(user), xstrdup(pass) };
			l->best_key = key;
			key = NULL;
		}
	} else if (l->docker_hub && !l->have_index && strcmp(key, DOCKER_INDEX_HOST) == 0) {
		l->index = (struct pull_auth){ xstrdup(loc), xstrdup(user), xstrdup(pass) };
		l->have_index = true;
	}
	free(key);
}

int pull_auth_lookup(const json_t *const *secrets, size_t n, const struct image_ref *ref, struct pull_auth *ret)
{
	char *image = image_ref_repository(ref);
	struct lookup l = { .image = image, .docker_hub = strcmp(ref->domain, IMAGE_DEFAULT_DOMAIN) == 0 };
	for (size_t i = 0; i < n; i++)
		if (secrets[i])
			pull_secret_entries(secrets[i], on_entry, &l);
	int found = 0;
	if (l.best_key) {
		*ret = l.best;
		pull_auth_release(&l.index);
		found = 1;
	} else if (l.have_index) {
		*ret = l.index;
		found = 1;
	}
	free(l.best_key);
	free(image);
	return found;
}
