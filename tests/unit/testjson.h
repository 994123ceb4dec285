/* For unit tests: J(text), the JSON document text as a new reference, failing the test (cmocka's
 * fail_msg, so include <cmocka.h> first) when text is not JSON. */
#ifndef URSA_TESTS_TESTJSON_H
#define URSA_TESTS_TESTJSON_H
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static inline json_t *J(const char *text)
{
	json_error_t e;
	json_t *j = json_loads(text, 0, &e);
	if (!j)
		fail_msg("bad test JSON: %s: %s", e.text, text);
	return j;
}

/* The same for JSON written with single quotes (none inside strings): readable in C literals. */
static inline json_t *JQ(const char *text)
{
	char *d = strdup(text);
	for (char *p = d; *p; p++)
		if (*p == '\'')
			*p = '"';
	json_t *j = J(d);
	free(d);
	return j;
}

#endif
