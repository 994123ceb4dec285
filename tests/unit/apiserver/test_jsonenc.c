/* store_dump (src/common/apiserver/jsonenc.c) writes what jansson's compact dump writes;
 * json_parse_fast (jsondec.c) parses what it takes as jansson does and gives up on the rest. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include "apiserver/internal.h"
#include "ursa/jsonutil.h"

static void assert_same(const json_t *j)
{
	struct buf want = BUF_INIT, got = BUF_INIT;
	json_dump_buf(j, &want);
	buf_adds(&got, "prefix:"); /* appends, as json_dump_buf does */
	store_dump(j, &got);
	assert_int_equal(got.len, want.len + 7);
	assert_memory_equal(got.ptr + 7, want.ptr, want.len);
	assert_int_equal(got.ptr[got.len], '\0');
	buf_release(&want);
	buf_release(&got);
}

static void assert_text_same(const char *text)
{
	json_error_t err;
	json_t *j = json_loads(text, JSON_ALLOW_NUL | JSON_DECODE_ANY, &err);
	assert_non_null(j);
	assert_same(j);
	json_decref(j);
}

static void test_scalars(void **state)
{
	(void)state;
	const char *texts[] = { "0", "-1", "9223372036854775807", "-9223372036854775808", "true", "false", "null",
				"\"\"", "1.5", "-0.0", "1e300", "3.0", "{}", "[]", "[[]]", "{\"\":{}}" };
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		assert_text_same(texts[i]);
}

static void test_every_byte_in_strings(void **state)
{
	(void)state;
	/* every byte below 0x80 (NUL included) as a value and in a key, then UTF-8 */
	json_t *o = json_object();
	for (int c = 0; c < 0x80; c++) {
		char s[4] = { 'a', (char)c, 'z', 0 };
		json_object_set_new(o, c ? s : "k0", json_stringn(s, 3));
	}
	json_object_set_new(o, "utf8 é ☃ 😀", json_string("é ☃ 😀 \xe2\x80\xa8 \x7f /"));
	assert_same(o);
	json_decref(o);
}

static void test_pod(void **state)
{
	(void)state;
	assert_text_same(
		"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"labels\":{\"app\":\"a\\\"b\"},"
		"\"annotations\":{\"x\":\"line\\nbreak\\ttab\\u0001\"},\"generation\":1,\"hashKey\":-42},"
		"\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"ports\":[{\"containerPort\":8080}],"
		"\"resources\":{\"requests\":{\"cpu\":\"10m\"}},\"env\":[]}],\"priority\":0,\"x\":[1,2.25,null,true]},"
		"\"status\":{}}");
}

static void test_insertion_order(void **state)
{
	(void)state;
	json_t *o = json_object();
	json_object_set_new(o, "z", json_integer(1));
	json_object_set_new(o, "a", json_integer(2));
	json_object_set_new(o, "m", json_integer(3));
	json_object_del(o, "a");
	json_object_set_new(o, "a", json_integer(4));
	struct buf b = BUF_INIT;
	store_dump(o, &b);
	assert_string_equal(buf_cstr(&b), "{\"z\":1,\"m\":3,\"a\":4}");
	assert_same(o);
	buf_release(&b);
	json_decref(o);
}

static void test_deep(void **state)
{
	(void)state;
	/* deeper than the encoder goes: jansson's dump takes over, same text */
	json_t *root = json_array(), *cur = root;
	for (int i = 0; i < 3000; i++) {
		json_t *n = json_array();
		json_array_append_new(cur, n);
		cur = n;
	}
	assert_same(root);
	json_decref(root);
}

static void test_parse_fast_same_tree(void **state)
{
	(void)state;
	const char *texts[] = {
		"{}", " {\"a\" : [ 1 , -2, 0, -0 ] ,\"b\":{}}\n",
		"{\"s\":\"q\\\"b\\\\s\\/n\\nt\\tr\\rb\\bf\\f\",\"t\":true,\"f\":false,\"n\":null}",
		"{\"z\":1,\"a\":{\"y\":[{},[]],\"b\":\"x\"},\"big\":99999999999999999,\"neg\":-99999999999999999}",
		"{\"del\":\"\x7f\"}",
	};
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		json_t *fast = json_parse_fast(texts[i], strlen(texts[i]), MAX_JSON_DEPTH);
		json_t *want = json_loadb(texts[i], strlen(texts[i]), JSON_REJECT_DUPLICATES, NULL);
		assert_non_null(fast);
		assert_non_null(want);
		assert_true(json_equal(fast, want));
		struct buf a = BUF_INIT, b = BUF_INIT;
		json_dump_buf(fast, &a);
		json_dump_buf(want, &b);
		assert_string_equal(buf_cstr(&a), buf_cstr(&b)); /* key order too */
		buf_release(&a);
		buf_release(&b);
		json_decref(fast);
		json_decref(want);
	}
	json_t *n = json_parse_fast("{\"n\":-0}", 8, MAX_JSON_DEPTH);
	assert_true(json_is_integer(json_object_get(n, "n")));
	json_decref(n);
}

static void test_parse_fast_gives_up(void **state)
{
	(void)state;
	/* left to jansson: invalid text, and valid text this parser does not take */
	const char *texts[] = {
		"", "[1]", "\"s\"", "{\"a\":1,\"a\":2}", "{\"a\":1.5}", "{\"a\":1e3}", "{\"a\":123456789012345678}",
		"{\"a\":\"\\u0041\"}", "{\"\\u0041\":1}", "{\"a\\n\":1}", "{\"a\":\"\xc3\xa9\"}", "{\"a\":01}",
		"{\"a\":\"\x01\"}", "{\"a\":1} x", "{\"a\":1,}", "{\"a\" 1}", "{\"a\":tru}", "{\"a\":-}",
		"{\"a\":[1,]}", "{\"a\":\"x}", "{\"a\":\"x\\q\"}",
	};
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		assert_null(json_parse_fast(texts[i], strlen(texts[i]), MAX_JSON_DEPTH));
	/* nesting deeper than the limit */
	char deep[64] = "{\"a\":";
	for (int i = 0; i < 10; i++)
		strcat(deep, "[");
	assert_null(json_parse_fast(deep, strlen(deep), 4));
	assert_null(json_parse_fast("{\"a\":[[[[1]]]]}", 15, 4));
	json_t *ok = json_parse_fast("{\"a\":[[1]]}", 11, 4);
	assert_non_null(ok);
	json_decref(ok);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scalars),
		cmocka_unit_test(test_every_byte_in_strings),
		cmocka_unit_test(test_pod),
		cmocka_unit_test(test_insertion_order),
		cmocka_unit_test(test_deep),
		cmocka_unit_test(test_parse_fast_same_tree),
		cmocka_unit_test(test_parse_fast_gives_up),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
