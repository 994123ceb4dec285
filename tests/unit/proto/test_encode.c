/* The protobuf writer (ursa/pbwrite.h): byte vectors for its primitives, the same bytes as the
 * tests' reference encoder, and a Deployment written with it that the decoder reads back. */
#include "proto_test.h"
#include "ursa/pbwrite.h"

static void assert_bytes(const struct buf *got, const char *want, size_t n, const char *what)
{
	if (got->len != n || memcmp(got->ptr, want, n) != 0) {
		fprintf(stderr, "%s: got %zu bytes:", what, got->len);
		for (size_t i = 0; i < got->len; i++)
			fprintf(stderr, " %02x", (unsigned char)got->ptr[i]);
		fprintf(stderr, "\n  want %zu bytes:", n);
		for (size_t i = 0; i < n; i++)
			fprintf(stderr, " %02x", (unsigned char)want[i]);
		fprintf(stderr, "\n");
		fail();
	}
}

static void test_varints(void **state)
{
	static const struct {
		uint64_t v;
		const char *bytes;
		size_t n;
	} cases[] = {
		{0, "\x00", 1},
		{1, "\x01", 1},
		{127, "\x7f", 1},
		{128, "\x80\x01", 2},
		{300, "\xac\x02", 2},
		{16384, "\x80\x80\x01", 3},
		{UINT64_MAX, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct buf b = BUF_INIT;
		pbw_varint(&b, cases[i].v);
		assert_bytes(&b, cases[i].bytes, cases[i].n, "varint");
		buf_release(&b);
	}
}

static void test_fields(void **state)
{
	struct buf b = BUF_INIT;
	pbw_int64(&b, 1, 150);
	assert_bytes(&b, "\x08\x96\x01", 3, "int64 150 as field 1");
	buf_reset(&b);
	pbw_int64(&b, 2, -1); /* sign-extended to ten bytes */
	assert_bytes(&b, "\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11, "int64 -1");
	buf_reset(&b);
	pbw_bool(&b, 16, true);
	assert_bytes(&b, "\x80\x01\x01", 3, "bool field 16 (two-byte key)");
	buf_reset(&b);
	pbw_string(&b, 2, "testing");
	assert_bytes(&b, "\x12\x07testing", 9, "string");
	buf_reset(&b);
	pbw_string(&b, 3, NULL);
	assert_bytes(&b, "\x1a\x00", 2, "NULL string is empty");
	buf_reset(&b);
	pbw_double(&b, 1, 1.0);
	assert_bytes(&b, "\x09\x00\x00\x00\x00\x00\x00\xf0\x3f", 9, "double 1.0 little endian");
	buf_reset(&b);
	struct buf child = BUF_INIT;
	pbw_int64(&child, 1, 150);
	pbw_msg(&b, 3, &child);
	assert_bytes(&b, "\x1a\x03\x08\x96\x01", 5, "nested message");
	buf_release(&child);
	buf_release(&b);
}

/* The same bytes as the tests' reference encoder, for keys and lengths past one byte. */
static void test_matches_reference(void **state)
{
	struct buf a = BUF_INIT, b = BUF_INIT;
	char big[300];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	pbw_string(&a, 1000, big);
	e_str(&b, 1000, big);
	pbw_int64(&a, 536870911, INT64_MIN);
	e_int(&b, 536870911, INT64_MIN);
	assert_bytes(&a, b.ptr, b.len, "long string and largest field number");
	buf_release(&a);
	buf_release(&b);
}

/* A Deployment written with pbw_* decodes with the server's decoder. */
static void test_decoder_reads_it(void **state)
{
	struct buf meta = BUF_INIT, entry = BUF_INIT, spec = BUF_INIT, dep = BUF_INIT, tm = BUF_INIT, unk = BUF_INIT,
		   body = BUF_INIT;
	pbw_string(&meta, 1, "web");
	pbw_string(&entry, 1, "app");
	pbw_string(&entry, 2, "web");
	pbw_msg(&meta, 11, &entry);
	pbw_int64(&spec, 1, 3);
	pbw_int64(&spec, 5, 7);
	pbw_msg(&dep, 1, &meta);
	pbw_msg(&dep, 2, &spec);
	pbw_string(&tm, 1, "apps/v1");
	pbw_string(&tm, 2, "Deployment");
	pbw_msg(&unk, 1, &tm);
	pbw_msg(&unk, 2, &dep);
	buf_add(&body, "k8s\0", 4);
	buf_add(&body, unk.ptr, unk.len);
	check_decode(&body,
		     "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web','labels':{'app':'web'}},"
		     "'spec':{'replicas':3,'minReadySeconds':7}}",
		     "pbw-encoded deployment");
	buf_release(&meta);
	buf_release(&entry);
	buf_release(&spec);
	buf_release(&dep);
	buf_release(&tm);
	buf_release(&unk);
	buf_release(&body);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_varints),
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_matches_reference),
		cmocka_unit_test(test_decoder_reads_it),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
