/* Merged watches: the composite resourceVersion round-trips and rejects malformed input; event
 * lines are rewritten (plain objects, Tables and their rows, bookmarks, tenant annotations),
 * ERROR events end the watch, and line splitting is capped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "gw.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"

static void test_crv_roundtrip(void **state)
{
	struct crv c, d;
	crv_init(&c);
	crv_set(&c, "rm-az-2", "456");
	crv_set(&c, "rm-az-1", "123");
	crv_set(&c, "rm-az-2", "789");
	char *s = crv_encode(&c);
	assert_true(crv_is_composite(s));
	const char *msg = NULL;
	assert_int_equal(crv_parse(s, &d, &msg), 0);
	assert_int_equal(d.n, 2);
	assert_string_equal(d.pid[0], "rm-az-1"); /* sorted */
	assert_string_equal(crv_get(&d, "rm-az-1"), "123");
	assert_string_equal(crv_get(&d, "rm-az-2"), "789");
	assert_null(crv_get(&d, "rm-az-3"));
	char *s2 = crv_encode(&d);
	assert_string_equal(s, s2); /* one spelling per value */
	free(s);
	free(s2);
	crv_release(&c);
	crv_release(&d);
	/* every length modulo 3 of the JSON text round-trips */
	for (int i = 0; i < 6; i++) {
		char rv[8];
		snprintf(rv, sizeof(rv), "%.*s", i + 1, "1234567");
		crv_init(&c);
		crv_set(&c, "p", rv);
		s = crv_encode(&c);
		assert_int_equal(crv_parse(s, &d, &msg), 0);
		assert_string_equal(crv_get(&d, "p"), rv);
		crv_release(&d);
		crv_release(&c);
		free(s);
	}
}

static void test_crv_rejects(void **state)
{
	static const char *const bad[] = {
		"123", "", "u1.", "u1.!!!!", "u1.e", "u1.eyJ", /* not base64url / impossible length */
		"u1.W10",            /* [] */
		"u1.eyJhIjoxfQ",     /* {"a":1}: value not a string */
		"u1.eyJhIjoieCJ9",   /* {"a":"x"}: not digits */
		"u1.eyIiOiIxIn0",    /* {"":"1"}: empty id */
		"u1.eyJhIjp7fX0",    /* {"a":{}} */
		"u1.eyJhIjoiMSJ9=",  /* padding */
		"u1.eyJhIjoiMSJ9a",  /* trailing garbage */
		"u1.W11",            /* non-zero trailing bits */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct crv c;
		const char *msg = NULL;
		int r = crv_parse(bad[i], &c, &msg);
		if (r != E_BAD_REQUEST)
			fail_msg("accepted %s", bad[i]);
		assert_non_null(msg);
	}
	struct crv c;
	const char *msg = NULL;
	assert_int_equal(crv_parse("u1.eyJhIjoiMSJ9", &c, &msg), 0); /* {"a":"1"} */
	assert_string_equal(crv_get(&c, "a"), "1");
	crv_release(&c);
	/* too long */
	char *big = calloc(1, CRV_MAX_LEN + 16);
	memcpy(big, "u1.", 3);
	memset(big + 3, 'A', CRV_MAX_LEN + 8);
	assert_int_equal(crv_parse(big, &c, &msg), E_BAD_REQUEST);
	free(big);
}

static json_t *parse_out(struct buf *out)
{
	assert_true(out->len > 0);
	assert_int_equal(out->ptr[out->len - 1], '\n');
	json_t *j = json_loadb(out->ptr, out->len, 0, NULL);
	assert_non_null(j);
	return j;
}

static const char *rv_of(json_t *ev, const char *pid, struct crv *ret)
{
	const char *s = json_path_str(ev, "object.metadata.resourceVersion");
	const char *msg;
	assert_non_null(s);
	assert_int_equal(crv_parse(s, ret, &msg), 0);
	return crv_get(ret, pid);
}

static void test_event_rewrite(void **state)
{
	struct merge_state m;
	merge_state_init(&m, false);
	crv_set(&m.rv, "rm-1", "10");
	crv_set(&m.rv, "rm-2", "");
	struct buf out = BUF_INIT;
	const char *ev = "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\",\"resourceVersion\":\"42\"}}}";
	assert_int_equal(merge_event(&m, "rm-2", ev, strlen(ev), &out), MERGE_OK);
	json_t *j = parse_out(&out);
	struct crv c;
	assert_string_equal(rv_of(j, "rm-2", &c), "42");
	assert_string_equal(crv_get(&c, "rm-1"), "10");
	assert_string_equal(json_path_str(j, "object.metadata.name"), "n1");
	crv_release(&c);
	json_decref(j);
	/* a bookmark moves its partition's component */
	buf_reset(&out);
	ev = "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Node\",\"metadata\":{\"resourceVersion\":\"77\"}}}";
	assert_int_equal(merge_event(&m, "rm-1", ev, strlen(ev), &out), MERGE_OK);
	j = parse_out(&out);
	assert_string_equal(rv_of(j, "rm-1", &c), "77");
	assert_string_equal(crv_get(&c, "rm-2"), "42");
	assert_string_equal(json_path_str(j, "type"), "BOOKMARK");
	crv_release(&c);
	json_decref(j);
	/* blank lines, garbage, bad partition resourceVersions */
	assert_int_equal(merge_event(&m, "rm-1", " \r", 2, &out), MERGE_SKIP);
	assert_int_equal(merge_event(&m, "rm-1", "{", 1, &out), E_BAD_REQUEST);
	ev = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":\"u1.x\"}}}";
	assert_int_equal(merge_event(&m, "rm-1", ev, strlen(ev), &out), E_BAD_REQUEST);
	ev = "{\"type\":\"WHATEVER\",\"object\":{}}";
	assert_int_equal(merge_event(&m, "rm-1", ev, strlen(ev), &out), E_BAD_REQUEST);
	/* ERROR passes as is and ends the watch */
	buf_reset(&out);
	ev = "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\"}}";
	assert_int_equal(merge_event(&m, "rm-1", ev, strlen(ev), &out), MERGE_FINAL);
	j = parse_out(&out);
	assert_int_equal(json_integer_value(json_path(j, "object.code")), 410);
	json_decref(j);
	buf_release(&out);
	merge_state_release(&m);
}

static void test_table_rewrite(void **state)
{
	struct merge_state m;
	merge_state_init(&m, true);
	struct buf out = BUF_INIT;
	const char *ev = "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Table\",\"apiVersion\":\"meta.k8s.io/v1\","
			 "\"metadata\":{\"resourceVersion\":\"5\"},\"columnDefinitions\":[{\"name\":\"Name\"}],"
			 "\"rows\":[{\"cells\":[\"t1\"],\"object\":{\"kind\":\"PartialObjectMetadata\",\"metadata\":"
			 "{\"name\":\"t1\",\"resourceVersion\":\"5\"}}}]}}";
	assert_int_equal(merge_event(&m, "tp-1", ev, strlen(ev), &out), MERGE_OK);
	json_t *j = parse_out(&out);
	struct crv c;
	assert_string_equal(rv_of(j, "tp-1", &c), "5");
	crv_release(&c);
	json_t *row = json_array_get(json_path(j, "object.rows"), 0);
	assert_string_equal(json_path_str(row, "object.metadata.resourceVersion"),
			    json_path_str(j, "object.metadata.resourceVersion"));
	assert_int_equal(json_array_size(json_path(j, "object.columnDefinitions")), 2); /* + Partition */
	assert_string_equal(json_string_value(json_array_get(json_object_get(row, "cells"), 1)), "tp-1");
	json_decref(j);
	/* the second partition's first event carries columns again: sent once only */
	buf_reset(&out);
	assert_int_equal(merge_event(&m, "tp-2", ev, strlen(ev), &out), MERGE_OK);
	j = parse_out(&out);
	assert_true(json_is_null(json_path(j, "object.columnDefinitions")));
	assert_string_equal(rv_of(j, "tp-2", &c), "5");
	assert_string_equal(crv_get(&c, "tp-1"), "5");
	crv_release(&c);
	json_decref(j);
	/* tenants (annotate) outside tables get the partition annotation */
	buf_reset(&out);
	ev = "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Tenant\",\"metadata\":{\"name\":\"t1\",\"resourceVersion\":\"9\"}}}";
	assert_int_equal(merge_event(&m, "tp-2", ev, strlen(ev), &out), MERGE_OK);
	j = parse_out(&out);
	assert_string_equal(json_str(json_path(j, "object.metadata.annotations"), "ursa.io/partition"), "tp-2");
	json_decref(j);
	buf_release(&out);
	merge_state_release(&m);
}

static void test_lines(void **state)
{
	struct merge_state m;
	merge_state_init(&m, false);
	struct buf pending = BUF_INIT, out = BUF_INIT;
	const char *two = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":\"1\"}}}\n"
			  "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"resourceVersion\":\"2\"}}}\n";
	/* fed one byte at a time, the result is the same as in one piece */
	for (size_t i = 0; two[i]; i++)
		assert_int_equal(merge_lines(&m, "p", &pending, two + i, 1, &out), MERGE_OK);
	assert_int_equal(pending.len, 0);
	const char *nl = memchr(out.ptr, '\n', out.len);
	assert_non_null(nl);
	assert_int_equal(out.ptr[out.len - 1], '\n');
	assert_string_equal(crv_get(&m.rv, "p"), "2");
	/* garbage ends the watch with an ERROR event of the gateway's */
	buf_reset(&out);
	assert_int_equal(merge_lines(&m, "p", &pending, "nope\n", 5, &out), MERGE_FINAL);
	json_t *j = parse_out(&out);
	assert_string_equal(json_str(j, "type"), "ERROR");
	json_decref(j);
	/* an endless line is capped */
	buf_reset(&out);
	char *chunk = malloc(1 << 20);
	memset(chunk, 'x', 1 << 20);
	int r = MERGE_OK;
	for (int i = 0; i < 40 && r == MERGE_OK; i++)
		r = merge_lines(&m, "p", &pending, chunk, 1 << 20, &out);
	assert_int_equal(r, MERGE_FINAL);
	assert_true(pending.len <= MERGE_LINE_MAX);
	free(chunk);
	buf_release(&pending);
	buf_release(&out);
	merge_state_release(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crv_roundtrip),
		cmocka_unit_test(test_crv_rejects),
		cmocka_unit_test(test_event_rewrite),
		cmocka_unit_test(test_table_rewrite),
		cmocka_unit_test(test_lines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
