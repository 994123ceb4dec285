/* Static token file: the Kubernetes --token-auth-file CSV with Arktos' tenant column,
 *   token,user,uid,"group1,group2",tenant
 * Fields follow CSV quoting ("" inside quotes is one quote; leading and trailing blanks of a
 * field are dropped). Lines whose first non-blank character is '#' and blank lines are skipped.
 * Tokens are kept only as SHA-256 digests, sorted for binary search. */
#include "auth/auth_internal.h"
#include "ursa/errors.h"
#include "ursa/xalloc.h"
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define COLUMNS_MAX 5
#define DIGEST_LEN 32

struct token_entry {
	unsigned char digest[DIGEST_LEN];
	size_t line;
	struct identity id;
};

struct tokentab {
	struct token_entry *v;
	size_t n;
};

struct fields {
	struct buf f[COLUMNS_MAX];
	size_t n;
};

/* SHA-256, looked up once: EVP_sha256() makes every digest look the algorithm up again in
 * OpenSSL 3 (0.94 against 0.33 us per token). */
static EVP_MD *sha256;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

static void fetch_sha256(void)
{
	sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
}

static void digest_token(const char *token, size_t len, unsigned char out[DIGEST_LEN])
{
	unsigned int n = 0;
	pthread_once(&sha256_once, fetch_sha256);
	if (!sha256 || !EVP_Digest(token, len, out, &n, sha256, NULL) || n != DIGEST_LEN)
		abort(); /* SHA-256 is always available in OpenSSL 3's default provider */
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static void fields_release(struct fields *fs)
{
	for (size_t i = 0; i < COLUMNS_MAX; i++)
		buf_release(&fs->f[i]);
	fs->n = 0;
}

/* Reads one quoted field starting after the opening quote; *pos ends after the closing one. */
static int read_quoted(struct sv line, size_t *pos, struct buf *out, const char **why)
{
	size_t i = *pos;
	for (;;) {
		if (i >= line.len) {
			*why = "unterminated quoted field";
			return -1;
		}
		char c = line.ptr[i++];
		if (c != '"') {
			buf_addch(out, c);
			continue;
		}
		if (i < line.len && line.ptr[i] == '"') {
			buf_addch(out, '"');
			i++;
			continue;
		}
		break;
	}
	while (i < line.len && is_blank(line.ptr[i]))
		i++;
	if (i < line.len && line.ptr[i] != ',') {
		*why = "text after a closing quote";
		return -1;
	}
	*pos = i;
	return 0;
}

static int read_plain(struct sv line, size_t *pos, struct buf *out, const char **why)
{
	size_t i = *pos, end;
	while (i < line.len && line.ptr[i] != ',') {
		if (line.ptr[i] == '"') {
			*why = "quote inside an unquoted field";
			return -1;
		}
		i++;
	}
	end = i;
	while (end > *pos && is_blank(line.ptr[end - 1]))
		end--;
	buf_add(out, line.ptr + *pos, end - *pos);
	*pos = i;
	return 0;
}

static int split_fields(struct sv line, struct fields *fs, const char **why)
{
	size_t pos = 0;
	for (;;) {
		if (fs->n == COLUMNS_MAX) {
			*why = "more than 5 columns";
			return -1;
		}
		struct buf *out = &fs->f[fs->n++];
		buf_grow(out, 0);
		out->ptr[0] = '\0';
		while (pos < line.len && is_blank(line.ptr[pos]))
			pos++;
		int r;
		if (pos < line.len && line.ptr[pos] == '"') {
			pos++;
			r = read_quoted(line, &pos, out, why);
		} else {
			r = read_plain(line, &pos, out, why);
		}
		if (r < 0)
			return -1;
		if (pos >= line.len)
			return 0;
		pos++; /* the comma */
	}
}

static bool token_ok(const struct buf *t)
{
	if (t->len == 0 || t->len > AUTH_TOKEN_MAX)
		return false;
	for (size_t i = 0; i < t->len; i++) {
		unsigned char c = (unsigned char)t->ptr[i];
		if (c <= 0x20 || c >= 0x7f)
			return false;
	}
	return true;
}

static int parse_groups(const struct buf *g, struct identity *id, const char **why)
{
	const char *p = buf_cstr(g), *end = p + g->len;
	while (p < end) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *stop = comma ? comma : end, *s = p;
		while (s < stop && is_blank(*s))
			s++;
		const char *e = stop;
		while (e > s && is_blank(e[-1]))
			e--;
		if (e > s) {
			if (!auth_field_ok(s, (size_t)(e - s))) {
				*why = "bad group name";
				return -1;
			}
			if (id->ngroups == AUTH_GROUPS_MAX) {
				*why = "too many groups";
				return -1;
			}
			identity_add_group(id, s, (size_t)(e - s));
		}
		p = stop + (comma ? 1 : 0);
	}
	return 0;
}

static int fields_to_entry(struct fields *fs, struct token_entry *e, const char **why)
{
	struct buf *f = fs->f;
	if (fs->n < 3) {
		*why = "need at least token,user,uid";
		return -1;
	}
	if (!token_ok(&f[0])) {
		*why = "empty or malformed token";
		return -1;
	}
	if (!auth_field_ok(f[1].ptr, f[1].len)) {
		*why = "empty or malformed user";
		return -1;
	}
	if (f[2].len && !auth_field_ok(f[2].ptr, f[2].len)) {
		*why = "malformed uid";
		return -1;
	}
	const char *tenant = fs->n >= 5 && f[4].len ? f[4].ptr : TENANT_SYSTEM;
	if (!auth_tenant_ok(tenant, strlen(tenant))) {
		*why = "tenant is not a DNS label (or is \"all\")";
		return -1;
	}
	digest_token(f[0].ptr, f[0].len, e->digest);
	e->id.user = xstrdup(f[1].ptr);
	e->id.uid = f[2].len ? xstrdup(f[2].ptr) : NULL;
	e->id.tenant = xstrdup(tenant);
	if (fs->n >= 4 && parse_groups(&f[3], &e->id, why) < 0) {
		identity_release(&e->id);
		return -1;
	}
	return 0;
}

static int cmp_entry(const void *a, const void *b)
{
	return memcmp(((const struct token_entry *)a)->digest, ((const struct token_entry *)b)->digest,
		      DIGEST_LEN);
}

static bool skip_line(struct sv line)
{
	size_t i = 0;
	while (i < line.len && (is_blank(line.ptr[i]) || line.ptr[i] == '\r'))
		i++;
	return i == line.len || line.ptr[i] == '#';
}

static int parse_line(struct tokentab *t, struct sv line, size_t *alloc, size_t lineno,
		      struct buf *err)
{
	struct fields fs = { 0 };
	const char *why = NULL;
	int r = -1;
	if (line.len && line.ptr[line.len - 1] == '\r')
		line.len--;
	if (split_fields(line, &fs, &why) < 0)
		goto out;
	if (t->n == *alloc) {
		*alloc = *alloc ? *alloc * 2 : 16;
		t->v = xrealloc(t->v, *alloc * sizeof(*t->v));
	}
	struct token_entry *e = &t->v[t->n];
	memset(e, 0, sizeof(*e));
	e->line = lineno;
	if (fields_to_entry(&fs, e, &why) < 0)
		goto out;
	t->n++;
	r = 0;
out:
	if (r < 0)
		buf_addf(err, "line %zu: %s", lineno, why);
	fields_release(&fs);
	return r;
}

static int check_duplicates(const struct tokentab *t, struct buf *err)
{
	for (size_t i = 1; i < t->n; i++) {
		if (memcmp(t->v[i - 1].digest, t->v[i].digest, DIGEST_LEN) == 0) {
			size_t a = t->v[i - 1].line, b = t->v[i].line;
			buf_addf(err, "line %zu: duplicate token (also on line %zu)", a > b ? a : b,
				 a > b ? b : a);
			return -1;
		}
	}
	return 0;
}

int tokentab_parse(const char *data, size_t len, struct tokentab **ret, struct buf *err)
{
	struct tokentab *t = xcalloc(1, sizeof(*t));
	size_t alloc = 0, lineno = 0, pos = 0;
	int r = E_BAD_REQUEST;
	if (len > AUTH_TOKEN_FILE_MAX) {
		buf_addf(err, "token file larger than %d bytes", AUTH_TOKEN_FILE_MAX);
		goto out;
	}
	while (pos < len) {
		const char *nl = memchr(data + pos, '\n', len - pos);
		struct sv line = { data + pos, nl ? (size_t)(nl - (data + pos)) : len - pos };
		pos += line.len + (nl ? 1 : 0);
		lineno++;
		if (memchr(line.ptr, '\0', line.len)) {
			buf_addf(err, "line %zu: NUL byte", lineno);
			goto out;
		}
		if (!skip_line(line) && parse_line(t, line, &alloc, lineno, err) < 0)
			goto out;
	}
	if (t->n)
		qsort(t->v, t->n, sizeof(*t->v), cmp_entry);
	if (check_duplicates(t, err) < 0)
		goto out;
	*ret = t;
	t = NULL;
	r = 0;
out:
	tokentab_free(t);
	return r;
}

void tokentab_free(struct tokentab *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++)
		identity_release(&t->v[i].id);
	free(t->v);
	free(t);
}

size_t tokentab_count(const struct tokentab *t)
{
	return t ? t->n : 0;
}

/* Binary search over digests: what the timing of memcmp reveals is about the SHA-256 of the
 * presented token, not about any stored token. The final check is constant-time anyway. */
const struct identity *tokentab_lookup(const struct tokentab *t, const char *token, size_t len)
{
	if (!t || !t->n || !token || len == 0 || len > AUTH_TOKEN_MAX)
		return NULL;
	struct token_entry key;
	digest_token(token, len, key.digest);
	size_t lo = 0, hi = t->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = memcmp(t->v[mid].digest, key.digest, 8);
		if (c == 0) {
			lo = mid;
			break;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Entries sharing the first 8 digest bytes are adjacent; walk back to the first of them. */
	while (lo > 0 && lo < t->n && memcmp(t->v[lo - 1].digest, key.digest, 8) == 0)
		lo--;
	for (size_t i = lo; i < t->n && memcmp(t->v[i].digest, key.digest, 8) == 0; i++)
		if (CRYPTO_memcmp(t->v[i].digest, key.digest, DIGEST_LEN) == 0)
			return &t->v[i].id;
	return NULL;
}
