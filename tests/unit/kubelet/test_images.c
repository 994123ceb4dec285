/* Image references (normalisation and InvalidImageName messages), registry mirrors, and pull
 * credentials picked from docker-registry secrets as Kubernetes' keyring picks them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include "images.h"
#include "ursa/buf.h"
#include "ursa/xalloc.h"

/* The fully qualified form of s, or "ERR: <message>". New string. */
static char *norm(const char *s)
{
	struct image_ref r;
	char *err = NULL;
	if (image_ref_parse(s, &r, &err) < 0) {
		char *out = xasprintf("ERR: %s", err);
		free(err);
		return out;
	}
	char *out = image_ref_string(&r);
	image_ref_release(&r);
	return out;
}

#define assert_norm(in, want)                    \
	do {                                     \
		char *got_ = norm(in);           \
		assert_string_equal(got_, want); \
		free(got_);                      \
	} while (0)

#define HEX64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void test_normalise(void **state)
{
	assert_norm("busybox", "docker.io/library/busybox:latest");
	assert_norm("busybox:1.36", "docker.io/library/busybox:1.36");
	assert_norm("team/app", "docker.io/team/app:latest");
	assert_norm("docker.io/busybox", "docker.io/library/busybox:latest");
	assert_norm("index.docker.io/busybox:1", "docker.io/library/busybox:1");
	assert_norm("index.docker.io/team/app", "docker.io/team/app:latest");
	assert_norm("localhost/app", "localhost/app:latest");
	assert_norm("localhost:5000/app:v1", "localhost:5000/app:v1");
	assert_norm("127.0.0.1:5000/library/busybox:1.36", "127.0.0.1:5000/library/busybox:1.36");
	assert_norm("registry.example:5000/team/app@sha256:" HEX64, "registry.example:5000/team/app@sha256:" HEX64);
	assert_norm("busybox@sha256:" HEX64, "docker.io/library/busybox@sha256:" HEX64);
	assert_norm("busybox:1.36@sha256:" HEX64, "docker.io/library/busybox:1.36@sha256:" HEX64);
	assert_norm("gcr.io/a/b/c_d__e-f--g.h:T_1.x-y", "gcr.io/a/b/c_d__e-f--g.h:T_1.x-y");
	assert_norm("Example.COM/app", "Example.COM/app:latest");
	assert_norm("Reg/app", "Reg/app:latest"); /* an upper-case first component names a registry */
	assert_norm("[::1]:5000/app", "[::1]:5000/app:latest");
	/* without '/', "localhost:5000" is a Hub name with a tag */
	assert_norm("localhost:5000", "docker.io/library/localhost:5000");
}

static void test_parts(void **state)
{
	struct image_ref r;
	char *err = NULL;
	assert_int_equal(image_ref_parse("registry.example:5000/team/app@sha256:" HEX64, &r, &err), 0);
	assert_string_equal(r.domain, "registry.example:5000");
	assert_string_equal(r.path, "team/app");
	assert_null(r.tag);
	assert_string_equal(r.digest, "sha256:" HEX64);
	char *repo = image_ref_repository(&r);
	assert_string_equal(repo, "registry.example:5000/team/app");
	free(repo);
	image_ref_release(&r);
	image_ref_release(&r); /* zeroed: fine */
	image_ref_release(NULL);
}

static void test_invalid(void **state)
{
	assert_norm("BUSYBOX", "ERR: Failed to apply default image tag \"BUSYBOX\": couldn't parse image reference "
			       "\"BUSYBOX\": invalid reference format: repository name (library/BUSYBOX) must be lowercase");
	assert_norm("team/App:1", "ERR: Failed to apply default image tag \"team/App:1\": couldn't parse image reference "
				  "\"team/App:1\": invalid reference format: repository name (team/App) must be lowercase");
	assert_norm("busybox:", "ERR: Failed to apply default image tag \"busybox:\": couldn't parse image reference "
				"\"busybox:\": invalid reference format");
	assert_norm("", "ERR: Failed to apply default image tag \"\": couldn't parse image reference \"\": invalid "
			"reference format");
	assert_norm(HEX64, "ERR: Failed to apply default image tag \"" HEX64 "\": couldn't parse image reference \"" HEX64
			   "\": invalid repository name (" HEX64 "), cannot specify 64-byte hexadecimal strings");
	static const char *const bad[] = {
		"busybox:1:2", "busybox@sha256:abc", "busybox@sha256:" HEX64 "0", "busybox@md5:" HEX64,
		"busybox@sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
		"a/b//c", "a/-b", "a/b-", "a/b..c", "a/b___c", "/busybox", "busybox/", "example.com/", "ex ample/a",
		"-x.com/a", "x-.com/a", "x.com:/a", "x.com:5x/a", "[zz]/a", "busybox:-tag", "busybox:.tag", "a@b@c",
		"a/b:tag/c", "busybox@", "a..b.com/x",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct image_ref r = { 0 };
		char *err = NULL;
		if (image_ref_parse(bad[i], &r, &err) == 0)
			fail_msg("accepted %s as %s/%s", bad[i], r.domain, r.path);
		assert_non_null(strstr(err, "invalid reference format"));
		assert_null(r.domain); /* untouched on error */
		free(err);
	}
	assert_int_equal(image_ref_parse(NULL, &(struct image_ref){ 0 }, NULL), -1);
}

static void test_limits(void **state)
{
	struct buf b = BUF_INIT;
	buf_adds(&b, "x.io/"); /* 5 + 250 = 255: the limit */
	for (int i = 0; i < 250; i++)
		buf_addch(&b, 'a');
	char *got = norm(buf_cstr(&b));
	assert_int_equal(strlen(got), 255 + strlen(":latest"));
	assert_int_equal(strncmp(got, "x.io/aaa", 8), 0);
	free(got);
	buf_addch(&b, 'a');
	got = norm(buf_cstr(&b));
	assert_non_null(strstr(got, "repository name must not be more than 255 characters"));
	free(got);
	buf_reset(&b);
	buf_adds(&b, "a:");
	for (int i = 0; i < 128; i++)
		buf_addch(&b, 't');
	got = norm(buf_cstr(&b));
	assert_int_equal(strncmp(got, "docker.io/library/a:ttt", 23), 0);
	free(got);
	buf_addch(&b, 't'); /* 129 */
	got = norm(buf_cstr(&b));
	assert_non_null(strstr(got, "invalid reference format"));
	free(got);
	buf_release(&b);
}

static void test_mirrors(void **state)
{
	struct image_mirrors m = { 0 };
	char *err = NULL;
	assert_int_equal(image_mirrors_add(&m, "docker.io=127.0.0.1:5000", &err), 0);
	assert_int_equal(image_mirrors_add(&m, "quay.io=mirror.local", &err), 0);
	assert_int_equal(image_mirrors_add(&m, "index.docker.io=127.0.0.1:6000", &err), -1);
	assert_non_null(strstr(err, "docker.io already has a mirror"));
	free(err);
	static const char *const bad[] = { "docker.io", "=x", "docker.io=", "docker.io=a/b", "a b=c", "x=-y" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err = NULL;
		assert_int_equal(image_mirrors_add(&m, bad[i], &err), -1);
		assert_non_null(strstr(err, "want DOMAIN=HOST[:PORT]"));
		free(err);
	}
	assert_int_equal(m.n, 2);

	struct image_ref r;
	assert_int_equal(image_ref_parse("busybox:1.36", &r, NULL), 0);
	char *s = image_mirror_ref(&m, &r);
	assert_string_equal(s, "127.0.0.1:5000/library/busybox:1.36");
	free(s);
	image_ref_release(&r);
	assert_int_equal(image_ref_parse("quay.io/a/b@sha256:" HEX64, &r, NULL), 0);
	s = image_mirror_ref(&m, &r);
	assert_string_equal(s, "mirror.local/a/b@sha256:" HEX64);
	free(s);
	image_ref_release(&r);
	assert_int_equal(image_ref_parse("gcr.io/x", &r, NULL), 0);
	s = image_mirror_ref(&m, &r);
	assert_string_equal(s, "gcr.io/x:latest");
	free(s);
	s = image_mirror_ref(NULL, &r);
	assert_string_equal(s, "gcr.io/x:latest");
	free(s);
	image_ref_release(&r);
	image_mirrors_release(&m);
	assert_int_equal(m.n, 0);
}

/* Secrets */

static char *b64(const char *s)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t n = strlen(s);
	struct buf b = BUF_INIT;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)(unsigned char)s[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)(unsigned char)s[i + 1] << 8;
		if (i + 2 < n)
			v |= (unsigned char)s[i + 2];
		buf_addch(&b, tab[(v >> 18) & 63]);
		buf_addch(&b, tab[(v >> 12) & 63]);
		buf_addch(&b, i + 1 < n ? tab[(v >> 6) & 63] : '=');
		buf_addch(&b, i + 2 < n ? tab[v & 63] : '=');
	}
	return buf_detach(&b, NULL);
}

/* A Secret of type (dockerconfigjson when json_form) whose config document is doc. */
static json_t *secret(bool json_form, const char *doc)
{
	char *d = b64(doc);
	json_t *s = json_pack("{s:s,s:{s:s}}", "type",
			      json_form ? "kubernetes.io/dockerconfigjson" : "kubernetes.io/dockercfg", "data",
			      json_form ? ".dockerconfigjson" : ".dockercfg", d);
	free(d);
	return s;
}

/* "user:pass@server" of the credentials for image among the secrets, or "none". */
static char *lookup(json_t **secrets, size_t n, const char *image)
{
	struct image_ref r;
	if (image_ref_parse(image, &r, NULL) < 0)
		fail_msg("bad test image %s", image);
	struct pull_auth a = { 0 };
	int rc = pull_auth_lookup((const json_t *const *)secrets, n, &r, &a);
	image_ref_release(&r);
	if (rc == 0) {
		assert_null(a.username);
		return xstrdup("none");
	}
	assert_int_equal(rc, 1);
	char *out = xasprintf("%s:%s@%s", a.username, a.password, a.server);
	pull_auth_release(&a);
	return out;
}

#define assert_lookup(secrets, n, image, want)              \
	do {                                                \
		char *got_ = lookup(secrets, n, image);    \
		assert_string_equal(got_, want);            \
		free(got_);                                 \
	} while (0)

static void test_pull_auth_match(void **state)
{
	char *auth = b64("alice:s3cr:et"); /* the password may hold ':' */
	char *doc = xasprintf("{\"auths\":{"
			      "\"https://registry.example:5000\":{\"username\":\"u1\",\"password\":\"p1\"},"
			      "\"registry.example:5000/team\":{\"auth\":\"%s\",\"username\":\"ignored\"},"
			      "\"http://*.corp.example/v2/\":{\"username\":\"u3\",\"password\":\"p3\"},"
			      "\"other.example\":{\"username\":\"u4\",\"password\":\"p4\"}}}",
			      auth);
	json_t *s[2] = { secret(true, doc), NULL };
	assert_lookup(s, 2, "registry.example:5000/team/app:1", "alice:s3cr:et@registry.example:5000/team");
	assert_lookup(s, 2, "registry.example:5000/teamx/app", "alice:s3cr:et@registry.example:5000/team"); /* string prefix */
	assert_lookup(s, 2, "registry.example:5000/other/app", "u1:p1@https://registry.example:5000");
	assert_lookup(s, 2, "registry.example/team/app", "none");     /* the port must match */
	assert_lookup(s, 2, "registry.example:5001/team/app", "none");
	assert_lookup(s, 2, "a.corp.example/x", "u3:p3@http://*.corp.example/v2/");
	assert_lookup(s, 2, "a.b.corp.example/x", "none"); /* '*' is one label */
	assert_lookup(s, 2, "other.example/x", "u4:p4@other.example");
	assert_lookup(s, 2, "busybox", "none");
	free(doc);
	free(auth);
	json_decref(s[0]);
}

static void test_pull_auth_docker_hub(void **state)
{
	json_t *s[3] = {
		secret(true, "{\"auths\":{\"https://index.docker.io/v1/\":{\"username\":\"hub\",\"password\":\"h\"}}}"),
		secret(false, "{\"docker.io/team\":{\"username\":\"team\",\"password\":\"t\"}}"),
		secret(true, "{\"auths\":{\"docker.io/team\":{\"username\":\"later\",\"password\":\"l\"}}}"),
	};
	assert_lookup(s, 3, "busybox", "hub:h@https://index.docker.io/v1/");
	assert_lookup(s, 3, "team/app", "team:t@docker.io/team"); /* a match beats the Hub fallback; first secret wins */
	assert_lookup(s, 3, "index.docker.io/team/app", "team:t@docker.io/team");
	assert_lookup(s, 3, "quay.io/team/app", "none");
	assert_lookup(s, 1, "docker.io/team/app", "hub:h@https://index.docker.io/v1/");
	for (int i = 0; i < 3; i++)
		json_decref(s[i]);
}

static void count_entry(void *ud, const char *key, const char *user, const char *pass)
{
	(*(int *)ud)++;
}

static void test_pull_secret_bad(void **state)
{
	int seen = 0;
	json_t *s = secret(true, "{\"auths\":{\"a\":{\"auth\":\"bm9jb2xvbg==\"},\"b\":{\"username\":\"u\"},\"c\":7}}");
	/* "a"'s auth decodes to "nocolon": skipped; "c" is not an object */
	assert_int_equal(pull_secret_entries(s, count_entry, &seen), 1);
	assert_int_equal(seen, 1);
	json_decref(s);
	json_t *bad[] = {
		json_pack("{s:s,s:{s:s}}", "type", "Opaque", "data", ".dockerconfigjson", "e30="),
		json_pack("{s:s,s:{s:s}}", "type", "kubernetes.io/dockerconfigjson", "data", ".dockerconfigjson", "!!!"),
		json_pack("{s:s,s:{s:s}}", "type", "kubernetes.io/dockerconfigjson", "data", ".dockercfg", "e30="),
		secret(true, "{\"auths\":[]}"),
		secret(true, "not json"),
		secret(false, "[1]"),
		json_pack("{s:s}", "type", "kubernetes.io/dockercfg"),
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(pull_secret_entries(bad[i], count_entry, &seen), -1);
		json_decref(bad[i]);
	}
	assert_int_equal(seen, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_normalise),     cmocka_unit_test(test_parts),
		cmocka_unit_test(test_invalid),       cmocka_unit_test(test_limits),
		cmocka_unit_test(test_mirrors),       cmocka_unit_test(test_pull_auth_match),
		cmocka_unit_test(test_pull_auth_docker_hub), cmocka_unit_test(test_pull_secret_bad),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
