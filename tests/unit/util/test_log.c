/* Log lines carry a syslog priority prefix exactly when stderr is the journal stream that
 * JOURNAL_STREAM names. One process per test file: the check is made once per process. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ursa/log.h"

static char *read_all(FILE *f)
{
	static char text[4096];
	size_t n;
	fflush(stderr);
	rewind(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	return text;
}

static void test_priority_prefix_on_journal_stream(void **state)
{
	(void)state;
	FILE *f = tmpfile();
	struct stat st;
	char env[64];
	assert_non_null(f);
	int saved = dup(STDERR_FILENO);
	assert_true(dup2(fileno(f), STDERR_FILENO) >= 0);
	assert_int_equal(fstat(STDERR_FILENO, &st), 0);
	snprintf(env, sizeof(env), "%ju:%ju", (uintmax_t)st.st_dev, (uintmax_t)st.st_ino);
	setenv("JOURNAL_STREAM", env, 1);
	log_set_level(LOG_DEBUG);
	log_msg(LOG_WARN, "disk almost full", "free=%d", 3);
	log_msg(LOG_ERROR, "gone", NULL);
	log_msg(LOG_INFO, "ok", NULL);
	char *text = read_all(f);
	dup2(saved, STDERR_FILENO);
	close(saved);
	fclose(f);
	assert_int_equal(strncmp(text, "<4>ts=", 6), 0);
	assert_non_null(strstr(text, "level=warn component=ursa msg=\"disk almost full\" free=3\n<3>ts="));
	assert_non_null(strstr(text, "\n<6>ts="));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_priority_prefix_on_journal_stream),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
