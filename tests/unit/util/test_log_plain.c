/* No priority prefix when JOURNAL_STREAM names another file than stderr (a daemon started by
 * systemd whose stderr was redirected since), nor when it is malformed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ursa/log.h"

static void test_no_prefix_for_another_stream(void **state)
{
	(void)state;
	FILE *f = tmpfile();
	static char text[1024];
	assert_non_null(f);
	int saved = dup(STDERR_FILENO);
	assert_true(dup2(fileno(f), STDERR_FILENO) >= 0);
	setenv("JOURNAL_STREAM", "1:1", 1);
	log_msg(LOG_ERROR, "gone", NULL);
	fflush(stderr);
	rewind(f);
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	dup2(saved, STDERR_FILENO);
	close(saved);
	fclose(f);
	assert_int_equal(strncmp(text, "ts=", 3), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_prefix_for_another_stream),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
