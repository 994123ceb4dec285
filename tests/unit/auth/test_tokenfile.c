/* Static token file parsing and lookup. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "auth/auth_internal.h"
#include "ursa/auth.h"
#include "ursa/errors.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct tokentab *parse_ok(const char *text)
{
	struct tokentab *t = NULL;
	struct buf err = BUF_INIT;
	int r = tokentab_parse(text, strlen(text), &t, &err);
	if (r != 0)
		fail_msg("unexpected parse error: %s", buf_cstr(&err));
	buf_release(&err);
	return t;
}

/* Returns the error text (new string) of a parse that must fail. */
static char *parse_err(const char *text, size_t len)
{
	struct tokentab *t = NULL;
	struct buf err = BUF_INIT;
	int r = tokentab_parse(text, len, &t, &err);
	assert_int_equal(r, E_BAD_REQUEST);
	assert_null(t);
	assert_true(err.len > 0);
	return buf_detach(&err, NULL);
}

static const struct identity *lookup(const struct tokentab *t, const char *tok)
{
	return tokentab_lookup(t, tok, strlen(tok));
}

static void test_good_file(void **state)
{
	const char *text = "# static tokens\n"
			   "\n"
			   "   \t\n"
			   "tok-admin,admin,uid-1,\"system:masters,ops\",system\n"
			   "tok-alice,alice,uid-2,\"dev, qa ,,\",acme\r\n"
			   "  # indented comment\n"
			   "tok-bob,bob,uid-3\n"
			   "tok-carol , carol , , , \n"
			   "tok-dave,dave,uid-4,,tenant-b";
	struct tokentab *t = parse_ok(text);
	assert_int_equal(tokentab_count(t), 5);

	const struct identity *id = lookup(t, "tok-admin");
	assert_non_null(id);
	assert_string_equal(id->user, "admin");
	assert_string_equal(id->uid, "uid-1");
	assert_string_equal(id->tenant, "system");
	assert_int_equal(id->ngroups, 2);
	assert_string_equal(id->groups[0], "system:masters");
	assert_string_equal(id->groups[1], "ops");

	id = lookup(t, "tok-alice");
	assert_non_null(id);
	assert_string_equal(id->tenant, "acme");
	assert_int_equal(id->ngroups, 2);
	assert_string_equal(id->groups[0], "dev");
	assert_string_equal(id->groups[1], "qa");

	id = lookup(t, "tok-bob");
	assert_non_null(id);
	assert_string_equal(id->tenant, TENANT_SYSTEM);
	assert_int_equal(id->ngroups, 0);

	id = lookup(t, "tok-carol");
	assert_non_null(id);
	assert_string_equal(id->user, "carol");
	assert_null(id->uid);
	assert_string_equal(id->tenant, TENANT_SYSTEM);

	id = lookup(t, "tok-dave");
	assert_non_null(id);
	assert_string_equal(id->tenant, "tenant-b");

	assert_null(lookup(t, "tok-eve"));
	assert_null(lookup(t, "tok-admi"));
	assert_null(lookup(t, "tok-admin "));
	assert_null(lookup(t, ""));
	tokentab_free(t);
}

static void test_quoting(void **state)
{
	struct tokentab *t = parse_ok("\"quoted-tok\",\"Mr \"\"Q\"\"\",\"u,1\", \"a\" ,\"acme\"\n");
	const struct identity *id = lookup(t, "quoted-tok");
	assert_non_null(id);
	assert_string_equal(id->user, "Mr \"Q\"");
	assert_string_equal(id->uid, "u,1");
	assert_int_equal(id->ngroups, 1);
	assert_string_equal(id->groups[0], "a");
	assert_string_equal(id->tenant, "acme");
	tokentab_free(t);
}

static void test_empty_file(void **state)
{
	struct tokentab *t = parse_ok("# nothing\n\n");
	assert_int_equal(tokentab_count(t), 0);
	assert_null(lookup(t, "x"));
	tokentab_free(t);
}

static void expect_error(const char *text, const char *needle)
{
	char *err = parse_err(text, strlen(text));
	if (!strstr(err, needle))
		fail_msg("error \"%s\" does not mention \"%s\"", err, needle);
	free(err);
}

static void test_malformed(void **state)
{
	expect_error("tok,user\n", "line 1: need at least");
	expect_error("# c\ntok,user,uid,\"g1,g2\n", "line 2: unterminated");
	expect_error("tok,user,uid,\"g\"x,acme\n", "text after a closing quote");
	expect_error("tok,us\"er,uid\n", "quote inside an unquoted field");
	expect_error("tok,user,uid,g,acme,extra\n", "more than 5 columns");
	expect_error(",user,uid\n", "token");
	expect_error("to ken,user,uid\n", "token");
	expect_error("tok,,uid\n", "user");
	expect_error("tok,user,uid,,all\n", "tenant");
	expect_error("tok,user,uid,,Bad_Tenant\n", "tenant");
	expect_error("tok,user,uid,,-acme\n", "tenant");
	expect_error("a,u1,1\nb,u2,2\n\na,u3,3\n", "duplicate token");
	expect_error("a,u1,1\nb,u2,2\n\na,u3,3\n", "line 4");
}

static void test_nul_byte(void **state)
{
	static const char text[] = "tok,us\0er,uid\n";
	char *err = parse_err(text, sizeof(text) - 1);
	assert_non_null(strstr(err, "NUL"));
	free(err);
}

static void test_many_groups_capped(void **state)
{
	struct buf b = BUF_INIT;
	buf_adds(&b, "tok,user,uid,\"");
	for (int i = 0; i <= AUTH_GROUPS_MAX; i++)
		buf_addf(&b, "g%d,", i);
	buf_adds(&b, "\"\n");
	expect_error(buf_cstr(&b), "too many groups");
	buf_release(&b);
}

static void test_many_entries(void **state)
{
	struct buf b = BUF_INIT;
	for (int i = 0; i < 500; i++)
		buf_addf(&b, "token-%d,user-%d,%d,,t%d\n", i, i, i, i % 7);
	struct tokentab *t = parse_ok(buf_cstr(&b));
	assert_int_equal(tokentab_count(t), 500);
	for (int i = 0; i < 500; i++) {
		char tok[32], user[32], tenant[8];
		snprintf(tok, sizeof(tok), "token-%d", i);
		snprintf(user, sizeof(user), "user-%d", i);
		snprintf(tenant, sizeof(tenant), "t%d", i % 7);
		const struct identity *id = lookup(t, tok);
		assert_non_null(id);
		assert_string_equal(id->user, user);
		assert_string_equal(id->tenant, tenant);
	}
	assert_null(lookup(t, "token-500"));
	tokentab_free(t);
	buf_release(&b);
}

static void test_authn_token_file(void **state)
{
	char path[] = "/tmp/ursa-tokens-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	const char *text = "secret-1,alice,a1,\"g1,g2\",acme\nsecret-2,root,r1,system:masters\n";
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);

	struct authn *a = NULL;
	char *err = NULL;
	assert_int_equal(authn_new(path, NULL, &a, &err), 0);
	struct identity id = { 0 };
	assert_int_equal(authn_token(a, "secret-1", &id), 0);
	assert_string_equal(id.user, "alice");
	assert_string_equal(id.tenant, "acme");
	assert_int_equal(id.ngroups, 2);
	identity_release(&id);
	assert_int_equal(authn_token(a, "secret-2", &id), 0);
	assert_true(identity_is_system_admin(&id));
	identity_release(&id);
	assert_int_equal(authn_token(a, "secret-3", &id), E_UNAUTHORIZED);
	assert_int_equal(authn_token(a, "", &id), E_UNAUTHORIZED);
	/* A JWT-shaped token without a configured key is just unknown. */
	assert_int_equal(authn_token(a, "a.b.c", &id), E_UNAUTHORIZED);
	authn_free(a);
	unlink(path);

	a = NULL;
	assert_int_equal(authn_new(path, NULL, &a, &err), E_BAD_REQUEST);
	assert_null(a);
	assert_non_null(err);
	assert_non_null(strstr(err, path));
	free(err);
}

static void test_authn_bad_file_reports_line(void **state)
{
	char path[] = "/tmp/ursa-tokens-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	const char *text = "ok,alice,1\nbroken\n";
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	struct authn *a = NULL;
	char *err = NULL;
	assert_int_equal(authn_new(path, NULL, &a, &err), E_BAD_REQUEST);
	assert_non_null(strstr(err, "line 2"));
	free(err);
	unlink(path);
}

/* A bearer token kept in a file: its first line, blanks trimmed; an empty, missing or too long
 * one is an error that names the file. */
static char *token_of(const char *text, size_t len, char **err)
{
	char path[] = "/tmp/ursa-token-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	close(fd);
	char *tok = auth_read_token_file(path, err);
	unlink(path);
	return tok;
}

static void test_token_file(void **state)
{
	char *err = NULL, *tok;
	tok = token_of("abc.def\n", strlen("abc.def\n"), &err);
	assert_string_equal(tok, "abc.def");
	free(tok);
	tok = token_of("  abc\t\r\nsecond line\n", strlen("  abc\t\r\nsecond line\n"), &err);
	assert_string_equal(tok, "abc");
	free(tok);
	tok = token_of("xyz", strlen("xyz"), &err); /* no line end */
	assert_string_equal(tok, "xyz");
	free(tok);
	assert_null(token_of(" \nxyz\n", strlen(" \nxyz\n"), &err)); /* the first line is blank */
	assert_non_null(strstr(err, "no token"));
	free(err);
	err = NULL;
	size_t big = AUTH_TOKEN_MAX + 10;
	char *long_tok = malloc(big);
	memset(long_tok, 'a', big);
	assert_null(token_of(long_tok, big, &err));
	assert_non_null(strstr(err, "too long"));
	free(err);
	free(long_tok);
	err = NULL;
	assert_null(auth_read_token_file("/nonexistent/ursa-token", &err));
	assert_non_null(strstr(err, "/nonexistent/ursa-token"));
	free(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_file),
		cmocka_unit_test(test_quoting),
		cmocka_unit_test(test_empty_file),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_nul_byte),
		cmocka_unit_test(test_many_groups_capped),
		cmocka_unit_test(test_many_entries),
		cmocka_unit_test(test_authn_token_file),
		cmocka_unit_test(test_authn_bad_file_reports_line),
		cmocka_unit_test(test_token_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
