/* Malformed and unsupported bodies give E_BAD_REQUEST / E_MEDIA_TYPE with a message. */
#include "proto_test.h"

static void cm_body(struct buf *body, struct buf *cm)
{
	e_body(body, "v1", "ConfigMap", cm);
}

static void test_magic(void **state)
{
	check_error("", 0, E_BAD_REQUEST, "magic", "empty");
	check_error("k8s", 3, E_BAD_REQUEST, "magic", "short");
	check_error("{\"kind\":\"Pod\"}", 14, E_BAD_REQUEST, "magic", "json");
	check_error("k8s\x01\x0a\x00", 6, E_BAD_REQUEST, "magic", "wrong magic");
}

static void test_unknown_kind(void **state)
{
	struct buf body = BUF_INIT, raw = BUF_INIT;

	e_str(&raw, 1, "");
	e_body(&body, "networking.k8s.io/v1", "Ingress", &raw);
	check_error(body.ptr, body.len, E_MEDIA_TYPE, "networking.k8s.io/v1 Ingress", "ingress");
	buf_release(&body);
	e_body(&body, "v1", "Deployment", &raw);
	check_error(body.ptr, body.len, E_MEDIA_TYPE, "v1 Deployment", "wrong group");
	buf_release(&body);
}

static void test_envelope(void **state)
{
	struct buf body = BUF_INIT, raw = BUF_INIT, tm = BUF_INIT;

	buf_add(&body, "k8s", 4);
	check_error(body.ptr, body.len, E_BAD_REQUEST, "apiVersion", "no typeMeta");
	e_str(&tm, 2, "Pod");
	e_msg(&body, 1, &tm);
	check_error(body.ptr, body.len, E_BAD_REQUEST, "apiVersion", "no apiVersion");
	buf_release(&body);

	e_body(&body, "v1", "Pod", &raw);
	e_str(&body, 3, "gzip");
	check_error(body.ptr, body.len, E_MEDIA_TYPE, "encoding", "gzip");
	buf_release(&body);

	e_body(&body, "v1", "Pod", &raw);
	e_str(&body, 4, "application/json");
	check_error(body.ptr, body.len, E_MEDIA_TYPE, NULL, "json content type");
	buf_release(&body);

	/* an explicit protobuf content type and an empty raw are fine */
	e_body(&body, "v1", "Namespace", &raw);
	e_str(&body, 4, K8S_PROTOBUF_MEDIA_TYPE);
	check_decode(&body, "{'kind':'Namespace','apiVersion':'v1'}", "empty raw");
	buf_release(&body);

	buf_add(&body, "k8s", 4);
	e_tag(&body, 1, 2);
	e_varint(&body, 200);         /* typeMeta longer than the body */
	buf_add(&body, "\x0a\x02v1", 4);
	check_error(body.ptr, body.len, E_BAD_REQUEST, "typeMeta", "typeMeta past end");
	buf_release(&body);

	buf_add(&body, "k8s", 4);
	e_tag(&body, 1, 3);           /* start group: not used by Kubernetes */
	check_error(body.ptr, body.len, E_BAD_REQUEST, NULL, "group in envelope");
	buf_release(&body);
}

static void test_truncated_varint(void **state)
{
	struct buf body = BUF_INIT, cm = BUF_INIT, m = BUF_INIT;

	e_str(&m, 1, "x");
	e_tag(&m, 7, 0);
	buf_add(&m, "\xff\xff", 2);   /* generation varint cut short */
	e_msg(&cm, 1, &m);
	cm_body(&body, &cm);
	check_error(body.ptr, body.len, E_BAD_REQUEST, "generation", "truncated varint");
	buf_release(&body);

	/* eleven continuation bytes: longer than any varint */
	e_tag(&m, 7, 0);
	buf_add(&m, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11);
	e_msg(&cm, 1, &m);
	cm_body(&body, &cm);
	check_error(body.ptr, body.len, E_BAD_REQUEST, NULL, "overlong varint");
	buf_release(&body);

	/* truncated tag at the end of a message */
	buf_addch(&m, (char)0x80);
	e_msg(&cm, 1, &m);
	cm_body(&body, &cm);
	check_error(body.ptr, body.len, E_BAD_REQUEST, "object_meta", "truncated tag");
	buf_release(&body);
}

static void test_length_past_end(void **state)
{
	struct buf body = BUF_INIT, cm = BUF_INIT, m = BUF_INIT;

	e_tag(&m, 1, 2);
	e_varint(&m, 50);
	buf_add(&m, "short", 5);
	e_msg(&cm, 1, &m);
	cm_body(&body, &cm);
	check_error(body.ptr, body.len, E_BAD_REQUEST, "name", "string past end");
	buf_release(&body);

	e_tag(&m, 42, 2);             /* unknown field whose length runs past the message */
	e_varint(&m, 1000);
	e_msg(&cm, 1, &m);
	cm_body(&body, &cm);
	check_error(body.ptr, body.len, E_BAD_REQUEST, "unknown field 42", "unknown past end");
	buf_release(&body);

	e_tag(&m, 42, 1);             /* fixed64 with 3 bytes left */
	buf_add(&m, "abc", 3);
	e_msg(&cm, 1, &m);
	cm_body(&body, &cm);
	check_error(body.ptr, body.len, E_BAD_REQUEST, NULL, "fixed64 past end");
	buf_release(&body);

	/* huge length that would overflow a pointer sum */
	e_tag(&cm, 2, 2);
	e_varint(&cm, UINT64_MAX);
	cm_body(&body, &cm);
	check_error(body.ptr, body.len, E_BAD_REQUEST, NULL, "huge length");
	buf_release(&body);
}

static void test_wrong_wire_type(void **state)
{
	struct buf body = BUF_INIT, cm = BUF_INIT, m = BUF_INIT;

	e_int(&m, 1, 5);              /* name as a varint */
	e_msg(&cm, 1, &m);
	cm_body(&body, &cm);
	check_error(body.ptr, body.len, E_BAD_REQUEST, "name", "varint for string");
	buf_release(&body);

	e_str(&m, 7, "3");            /* generation as bytes (not repeated: no packing) */
	e_msg(&cm, 1, &m);
	cm_body(&body, &cm);
	check_error(body.ptr, body.len, E_BAD_REQUEST, "generation", "bytes for int64");
	buf_release(&body);

	e_int(&cm, 1, 1);             /* metadata as a varint */
	cm_body(&body, &cm);
	check_error(body.ptr, body.len, E_BAD_REQUEST, "metadata", "varint for message");
	buf_release(&body);

	e_tag(&cm, 0, 0);             /* field number 0 */
	e_varint(&cm, 1);
	cm_body(&body, &cm);
	check_error(body.ptr, body.len, E_BAD_REQUEST, NULL, "field 0");
	buf_release(&body);
}

static void test_bad_values(void **state)
{
	struct buf body = BUF_INIT, cm = BUF_INIT, m = BUF_INIT, t = BUF_INIT, svc = BUF_INIT,
		   spec = BUF_INIT, port = BUF_INIT, ios = BUF_INIT;

	e_bytes(&m, 1, "\xc3\x28", 2);  /* invalid UTF-8 */
	e_msg(&cm, 1, &m);
	cm_body(&body, &cm);
	check_error(body.ptr, body.len, E_BAD_REQUEST, "UTF-8", "bad utf8");
	buf_release(&body);

	e_bytes(&m, 1, "a\0b", 3);      /* NUL inside a string */
	e_msg(&cm, 1, &m);
	cm_body(&body, &cm);
	check_error(body.ptr, body.len, E_BAD_REQUEST, NULL, "nul in string");
	buf_release(&body);

	struct buf e = BUF_INIT;
	e_bytes(&e, 1, "k\0", 2);       /* NUL inside a map key */
	e_str(&e, 2, "v");
	e_msg(&cm, 2, &e);
	cm_body(&body, &cm);
	check_error(body.ptr, body.len, E_BAD_REQUEST, "data", "nul in key");
	buf_release(&body);

	e_int(&t, 1, 253402300800LL);   /* year 10000 */
	e_msg(&m, 8, &t);
	e_msg(&cm, 1, &m);
	cm_body(&body, &cm);
	check_error(body.ptr, body.len, E_BAD_REQUEST, "creationTimestamp", "time range");
	buf_release(&body);

	e_int(&ios, 1, 2);              /* IntOrString type 2 does not exist */
	e_msg(&port, 4, &ios);
	e_msg(&spec, 1, &port);
	e_msg(&svc, 2, &spec);
	e_body(&body, "v1", "Service", &svc);
	check_error(body.ptr, body.len, E_BAD_REQUEST, "targetPort", "intstr type");
	buf_release(&body);

	struct buf pod = BUF_INIT, c = BUF_INIT, res = BUF_INIT;
	e_qmap(&res, 1, "cpu", "");     /* empty quantity */
	e_msg(&c, 8, &res);
	e_msg(&spec, 2, &c);
	e_msg(&pod, 2, &spec);
	e_body(&body, "v1", "Pod", &pod);
	check_error(body.ptr, body.len, E_BAD_REQUEST, "quantity", "empty quantity");
	buf_release(&body);
}

/* Many tiny repeated values hit the value cap instead of building a huge tree. */
static void test_value_cap(void **state)
{
	struct buf body = BUF_INIT, ns = BUF_INIT, spec = BUF_INIT;

	for (int i = 0; i <= K8S_PROTOBUF_MAX_VALUES; i++)
		e_str(&spec, 1, "");
	e_msg(&ns, 2, &spec);
	e_body(&body, "v1", "Namespace", &ns);
	check_error(body.ptr, body.len, E_BAD_REQUEST, "values", "value cap");
	buf_release(&body);
}

/* The decoder reports errors to a NULL err as well. */
static void test_null_err(void **state)
{
	json_t *got = NULL;

	assert_int_equal(k8s_protobuf_to_json("nope", 4, &got, NULL), E_BAD_REQUEST);
	assert_null(got);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_magic),
		cmocka_unit_test(test_unknown_kind),
		cmocka_unit_test(test_envelope),
		cmocka_unit_test(test_truncated_varint),
		cmocka_unit_test(test_length_past_end),
		cmocka_unit_test(test_wrong_wire_type),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_value_cap),
		cmocka_unit_test(test_null_err),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
