/* Helpers shared by the proto unit tests: a tiny protobuf encoder for hand-made vectors,
 * JSON comparison that prints both sides, and the path of the captured kubectl vectors.
 * Each test_*.c includes this once. */
#ifndef URSA_PROTO_TEST_H
#define URSA_PROTO_TEST_H
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>
#include "ursa/buf.h"
#include "ursa/errors.h"
#include "ursa/proto.h"
#include "ursa/xalloc.h"

/* --- encoder: every helper appends to b --- */
static inline void e_varint(struct buf *b, uint64_t v)
{
	while (v >= 0x80) {
		buf_addch(b, (char)(v | 0x80));
		v >>= 7;
	}
	buf_addch(b, (char)v);
}

static inline void e_tag(struct buf *b, uint32_t num, unsigned wt)
{
	e_varint(b, (uint64_t)num << 3 | wt);
}

/* int32/int64/bool as protobuf does: negative numbers sign-extended to 10 bytes */
static inline void e_int(struct buf *b, uint32_t num, int64_t v)
{
	e_tag(b, num, 0);
	e_varint(b, (uint64_t)v);
}

static inline void e_bytes(struct buf *b, uint32_t num, const void *p, size_t n)
{
	e_tag(b, num, 2);
	e_varint(b, n);
	buf_add(b, p, n);
}

static inline void e_str(struct buf *b, uint32_t num, const char *s)
{
	e_bytes(b, num, s, strlen(s));
}

/* Length-delimited sub-message; releases sub. */
static inline void e_msg(struct buf *b, uint32_t num, struct buf *sub)
{
	e_bytes(b, num, sub->ptr ? sub->ptr : "", sub->len);
	buf_release(sub);
}

static inline void e_map(struct buf *b, uint32_t num, const char *k, const char *v)
{
	struct buf e = BUF_INIT;
	e_str(&e, 1, k);
	e_str(&e, 2, v);
	e_msg(b, num, &e);
}

/* map<string, Quantity> entry */
static inline void e_qmap(struct buf *b, uint32_t num, const char *k, const char *q)
{
	struct buf e = BUF_INIT, qm = BUF_INIT;
	e_str(&e, 1, k);
	e_str(&qm, 1, q);
	e_msg(&e, 2, &qm);
	e_msg(b, num, &e);
}

/* The whole body: magic + Unknown{typeMeta, raw}; releases raw. */
static inline void e_body(struct buf *out, const char *api_version, const char *kind,
			  struct buf *raw)
{
	struct buf tm = BUF_INIT;
	buf_add(out, "k8s", 4);
	e_str(&tm, 1, api_version);
	e_str(&tm, 2, kind);
	e_msg(out, 1, &tm);
	e_msg(out, 2, raw);
	e_str(out, 3, "");
	e_str(out, 4, "");
}

/* Parses test JSON; single quotes stand for double quotes so expectations stay readable. */
static inline json_t *J(const char *s)
{
	json_error_t e;
	char *t = xstrdup(s);
	for (char *p = t; *p; p++)
		if (*p == '\'')
			*p = '"';
	json_t *j = json_loads(t, 0, &e);
	if (!j)
		fail_msg("bad test JSON at %d: %s: %s", e.position, e.text, s);
	free(t);
	return j;
}

static inline void assert_json_eq(const json_t *got, const json_t *want, const char *what)
{
	if (json_equal(got, want))
		return;
	char *g = json_dumps(got, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY);
	char *w = json_dumps(want, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY);
	print_error("%s:\n  got:  %s\n  want: %s\n", what, g ? g : "(null)", w ? w : "(null)");
	free(g);
	free(w);
	fail();
}

/* Decodes body and compares with want (JSON text, single quotes allowed). */
static inline void check_decode(const struct buf *body, const char *want, const char *what)
{
	json_t *got = NULL, *w = J(want);
	struct buf err = BUF_INIT;
	int rc = k8s_protobuf_to_json(body->ptr, body->len, &got, &err);
	if (rc)
		fail_msg("%s: rc=%d err=%s", what, rc, buf_cstr(&err));
	assert_json_eq(got, w, what);
	json_decref(got);
	json_decref(w);
	buf_release(&err);
}

/* Expects error code want_rc with a message containing needle (if not NULL). */
static inline void check_error(const void *data, size_t len, int want_rc, const char *needle,
			       const char *what)
{
	json_t *got = (json_t *)0x1;
	struct buf err = BUF_INIT;
	int rc = k8s_protobuf_to_json(data, len, &got, &err);
	if (rc != want_rc)
		fail_msg("%s: rc=%d want %d err=%s", what, rc, want_rc, buf_cstr(&err));
	if (got != (json_t *)0x1)
		fail_msg("%s: *ret written on error", what);
	if (!err.len)
		fail_msg("%s: no error message", what);
	if (needle && !strstr(buf_cstr(&err), needle))
		fail_msg("%s: message '%s' lacks '%s'", what, buf_cstr(&err), needle);
	buf_release(&err);
}

#endif
