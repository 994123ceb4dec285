/* The audit log: whole JSON lines, rotation by size, and two writers of one file (the gateway's
 * worker processes; two handles here hold separate open files, as two processes would). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "gw.h"

static char dir[] = "/tmp/ursa-test-audit-XXXXXX";
static char path[256], old[256];

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/audit.log", dir);
	snprintf(old, sizeof(old), "%s/audit.log.1", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	unlink(old);
	rmdir(dir);
	return 0;
}

/* Counts the lines of FILE that carry user WHO; fails on any line that is not whole. */
static int count_lines(const char *file, const char *who)
{
	FILE *f = fopen(file, "r");
	if (!f)
		return 0;
	char line[8192];
	int n = 0;
	while (fgets(line, sizeof(line), f)) {
		size_t len = strlen(line);
		assert_true(len > 2);
		assert_memory_equal(line, "{\"time\":\"", 9);
		assert_string_equal(line + len - 2, "}\n");
		if (strstr(line, who))
			n++;
	}
	fclose(f);
	return n;
}

static long long file_size(const char *file)
{
	struct stat st;
	return stat(file, &st) == 0 ? (long long)st.st_size : -1;
}

static void test_lines_and_rotation(void **state)
{
	(void)state;
	struct audit *a = audit_open(path, 2000);
	assert_non_null(a);
	for (int i = 0; i < 10; i++)
		audit_log(a, "\"alice\"", "t1", "create", "/api/v1/tenants/t1/namespaces/default/pods", 201, 1234, NULL);
	assert_int_equal(count_lines(path, "alice"), 10);
	assert_int_equal(file_size(old), -1);
	for (int i = 0; i < 30; i++)
		audit_log(a, "bob", "t1", "delete", "/api/v1/tenants/t1/namespaces/default/pods/p", 200, 10, NULL);
	assert_true(file_size(old) > 0);
	assert_true(file_size(path) <= 2000);
	assert_true(file_size(old) <= 2000);
	audit_close(a);
}

static void test_refusal_carries_its_reason(void **state)
{
	(void)state;
	unlink(path);
	unlink(old);
	struct audit *a = audit_open(path, 100000);
	assert_non_null(a);
	audit_log(a, "bob", "t1", "POST", "/api/v1/namespaces/team/pods", 403, 10,
		  "pods is forbidden: User \"bob\" cannot create resource \"pods\" in API group \"\" in the namespace \"team\"");
	audit_close(a);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char line[8192];
	assert_non_null(fgets(line, sizeof(line), f));
	fclose(f);
	json_t *j = json_loads(line, 0, NULL);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "decision")), "forbid");
	assert_string_equal(json_string_value(json_object_get(j, "reason")),
			    "pods is forbidden: User \"bob\" cannot create resource \"pods\" in API group \"\" in the namespace \"team\"");
	assert_int_equal(json_integer_value(json_object_get(j, "code")), 403);
	json_decref(j);
	unlink(path);
}

static void test_two_writers_share_rotation(void **state)
{
	(void)state;
	unlink(path);
	unlink(old);
	struct audit *a = audit_open(path, 4000), *b = audit_open(path, 4000);
	assert_non_null(a);
	assert_non_null(b);
	char longpath[3000];
	memset(longpath, 'x', sizeof(longpath) - 1);
	longpath[sizeof(longpath) - 1] = '\0';
	/* Interleaved, one long line each (larger than stdio's buffer would write at once). */
	for (int i = 0; i < 3; i++) {
		audit_log(a, "writer-a", "t", "update", longpath, 200, 1, NULL);
		audit_log(b, "writer-b", "t", "update", longpath, 200, 1, NULL);
	}
	/* Both rotated or followed the other's rotation; no line was cut. */
	int na = count_lines(path, "writer-a") + count_lines(old, "writer-a");
	int nb = count_lines(path, "writer-b") + count_lines(old, "writer-b");
	assert_true(na >= 1 && nb >= 1);
	/* A writer that did not rotate follows the new file within a second. */
	sleep(1);
	usleep(100 * 1000);
	audit_log(a, "late-a", "t", "create", "/p", 201, 1, NULL);
	audit_log(b, "late-b", "t", "create", "/p", 201, 1, NULL);
	assert_int_equal(count_lines(path, "late-a"), 1);
	assert_int_equal(count_lines(path, "late-b"), 1);
	audit_close(a);
	audit_close(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines_and_rotation),
		cmocka_unit_test(test_refusal_carries_its_reason),
		cmocka_unit_test(test_two_writers_share_rotation),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
