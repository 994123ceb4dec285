/* etcd v3 client: members, pooled handles with member fail-over, and the KV calls over gRPC
 * (txn-based conditional writes included). See ursa/etcd.h for the contract. */
#include "etcd/etcd_internal.h"
#include "etcd/pb.h"
#include "ursa/errors.h"
#include "ursa/xalloc.h"
#include <stdlib.h>
#include <string.h>

/* KV service methods. */
#define KV_RANGE "/etcdserverpb.KV/Range"
#define KV_PUT "/etcdserverpb.KV/Put"
#define KV_DELETE "/etcdserverpb.KV/DeleteRange"
#define KV_TXN "/etcdserverpb.KV/Txn"
#define KV_COMPACT "/etcdserverpb.KV/Compact"

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* ---- endpoints ---- */

static bool valid_endpoint(struct sv s)
{
	size_t skip;

	if (sv_has_prefix(s, "http://"))
		skip = 7;
	else if (sv_has_prefix(s, "https://"))
		skip = 8;
	else
		return false;
	if (s.len <= skip)
		return false;
	for (size_t i = 0; i < s.len; i++)
		if ((unsigned char)s.ptr[i] <= ' ' || s.ptr[i] == ',')
			return false;
	return true;
}

static int parse_endpoints(struct etcd *e, const char *list)
{
	const char *p = list;

	while (*p) {
		const char *end = strchr(p, ',');
		struct sv s = { p, end ? (size_t)(end - p) : strlen(p) };
		while (s.len && s.ptr[0] == ' ')
			s.ptr++, s.len--;
		while (s.len && (s.ptr[s.len - 1] == ' ' || s.ptr[s.len - 1] == '/'))
			s.len--;
		if (s.len) {
			if (!valid_endpoint(s) || e->n_endpoints == ETCD_MAX_ENDPOINTS)
				return -1;
			e->endpoints[e->n_endpoints++] = sv_dup(s);
		}
		if (!end)
			break;
		p = end + 1;
	}
	return e->n_endpoints ? 0 : -1;
}

/* grpc-timeout (unary calls only, not the watch stream: timeout 0) lets etcd give up on a
 * request the client stopped waiting for. */
struct etcd *etcd_new(const char *endpoints, const struct etcd_options *opts)
{
	struct etcd *e;

	if (!endpoints)
		return NULL;
	pthread_once(&curl_once, curl_init_once);
	e = xcalloc(1, sizeof(*e));
	e->endpoints = xcalloc(ETCD_MAX_ENDPOINTS, sizeof(*e->endpoints));
	if (parse_endpoints(e, endpoints) < 0) {
		for (size_t i = 0; i < e->n_endpoints; i++)
			free(e->endpoints[i]);
		free(e->endpoints);
		free(e);
		return NULL;
	}
	atomic_init(&e->preferred, 0);
	e->timeout_ms = opts && opts->timeout_ms > 0 ? opts->timeout_ms : 5000;
	e->connect_timeout_ms = opts && opts->connect_timeout_ms > 0 ? opts->connect_timeout_ms : 1000;
	e->headers = curl_slist_append(NULL, "Expect:");
	e->headers = curl_slist_append(e->headers, "Content-Type: application/json");
	e->grpc_headers = grpc_headers(NULL, e->timeout_ms);
	e->stream_headers = grpc_headers(NULL, 0);
	curl_pool_init(&e->json_pool, 0, etcd_curl_setup, e);
	curl_pool_init(&e->grpc_pool, 0, etcd_grpc_setup, e);
	e->gc = etcd_gc_new(opts);
	return e;
}

void etcd_free(struct etcd *e)
{
	if (!e)
		return;
	curl_pool_release(&e->json_pool);
	curl_pool_release(&e->grpc_pool);
	for (size_t i = 0; i < e->n_endpoints; i++)
		free(e->endpoints[i]);
	free(e->endpoints);
	curl_slist_free_all(e->headers);
	curl_slist_free_all(e->grpc_headers);
	curl_slist_free_all(e->stream_headers);
	etcd_gc_free(e->gc);
	free(e);
}

char *etcd_prefix_end(const char *prefix)
{
	char *end = xstrdup(prefix ? prefix : "");
	size_t n = strlen(end);

	/* "" stands for "\0", the end of the keyspace, when every byte is 0xff */
	while (n > 0) {
		unsigned char c = (unsigned char)end[n - 1];
		if (c < 0xff) {
			end[n - 1] = (char)(c + 1);
			break;
		}
		n--;
	}
	end[n] = '\0';
	return end;
}

/* ---- transport ---- */

size_t etcd_on_body(char *data, size_t size, size_t nmemb, void *ud)
{
	struct etcd_reply *r = ud;
	size_t n = size * nmemb;

	if (r->body.len + n > ETCD_MAX_BODY + 5) { /* + the gRPC prefix */
		r->too_big = true;
		return 0;
	}
	buf_add(&r->body, data, n);
	return n;
}

int etcd_transport_error(CURLcode cc, bool sent, bool idempotent)
{
	if (idempotent || !sent || cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST)
		return ETCD_TRY_NEXT;
	return cc == CURLE_OPERATION_TIMEDOUT ? E_TIMEOUT : E_UNAVAILABLE;
}

int etcd_failover(struct etcd *e, struct curl_pool *pool, etcd_attempt_fn attempt, void *ctx)
{
	CURL *c = curl_pool_take(pool);
	size_t start = atomic_load(&e->preferred);
	int rc = E_UNAVAILABLE;

	for (size_t i = 0; i < e->n_endpoints; i++) {
		size_t idx = (start + i) % e->n_endpoints;
		rc = attempt(e, c, idx, ctx);
		if (rc == ETCD_TRY_NEXT) {
			rc = E_UNAVAILABLE;
			continue;
		}
		if (i > 0 && rc != E_UNAVAILABLE && rc != E_TIMEOUT)
			atomic_store(&e->preferred, idx);
		break;
	}
	curl_pool_give(pool, c);
	return rc;
}

/* ---- KV ---- */

/* A call whose response carries only the header's revision. */
static int call_rev(struct etcd *e, const char *method, const struct buf *req, bool idempotent, int64_t *ret_rev)
{
	struct buf resp = BUF_INIT;
	int64_t rev;
	int rc = etcd_grpc_call(e, method, req, idempotent, &resp);

	if (rc == 0 && etcd_pb_response_rev(resp.ptr, resp.len, &rev) < 0)
		rc = E_INTERNAL;
	if (rc == 0 && ret_rev)
		*ret_rev = rev;
	buf_release(&resp);
	return rc;
}

int etcd_range(struct etcd *e, const char *key, const char *range_end, int64_t revision, int64_t limit,
	       bool keys_only, struct etcd_range_result *ret)
{
	struct buf req = BUF_INIT, resp = BUF_INIT;
	int rc;

	if (!key || revision < 0 || limit < 0)
		return E_BAD_REQUEST;
	etcd_pb_range_request(&req, key, range_end, revision, limit, keys_only, false);
	rc = etcd_grpc_call(e, KV_RANGE, &req, true, &resp);
	if (rc == 0)
		rc = etcd_pb_decode_range(resp.ptr, resp.len, ret);
	buf_release(&req);
	buf_release(&resp);
	return rc;
}

int etcd_get(struct etcd *e, const char *key, struct etcd_kv *ret_kv)
{
	struct etcd_range_result r;
	int rc = etcd_range(e, key, NULL, 0, 0, false, &r);

	if (rc < 0)
		return rc;
	if (r.n == 0) {
		etcd_range_result_release(&r);
		return E_NOT_FOUND;
	}
	*ret_kv = r.kvs[0];
	memset(&r.kvs[0], 0, sizeof(r.kvs[0]));
	etcd_range_result_release(&r);
	return 0;
}

int etcd_current_revision(struct etcd *e, int64_t *ret_rev)
{
	struct buf req = BUF_INIT;
	int rc;

	etcd_pb_range_request(&req, "", "", 0, 0, false, true);
	rc = call_rev(e, KV_RANGE, &req, true, ret_rev);
	buf_release(&req);
	return rc;
}

int etcd_put(struct etcd *e, const char *key, const char *value, size_t len, int64_t lease, int64_t *ret_rev)
{
	struct buf req = BUF_INIT;
	int rc;

	if (!key)
		return E_BAD_REQUEST;
	etcd_pb_put_request(&req, key, value, len, lease);
	rc = call_rev(e, KV_PUT, &req, false, ret_rev);
	buf_release(&req);
	return rc;
}

static int txn_call(struct etcd *e, const struct buf *req, struct buf *resp, struct etcd_pb_txn_result *ret);

int etcd_put_all(struct etcd *e, const struct etcd_kv *kvs, size_t n, int64_t *ret_rev)
{
	struct etcd_op ops[ETCD_TXN_MAX_OPS];

	if (n == 0 || n > ETCD_TXN_MAX_OPS)
		return E_BAD_REQUEST;
	for (size_t i = 0; i < n; i++)
		ops[i] = (struct etcd_op){ .key = kvs[i].key, .value = kvs[i].value, .value_len = kvs[i].value_len };
	return etcd_write_all(e, ops, n, ret_rev);
}

int etcd_write_all(struct etcd *e, const struct etcd_op *ops, size_t n, int64_t *ret_rev)
{
	struct buf req = BUF_INIT, msg = BUF_INIT, op = BUF_INIT, resp = BUF_INIT;
	struct etcd_pb_txn_result t = { 0 };
	int rc;

	if (n == 0 || n > ETCD_TXN_MAX_OPS)
		return E_BAD_REQUEST;
	for (size_t i = 0; i < n; i++) {
		if (!ops[i].key)
			return E_BAD_REQUEST;
		for (size_t j = 0; j < i; j++)
			if (strcmp(ops[i].key, ops[j].key) == 0)
				return E_BAD_REQUEST;
	}
	for (size_t i = 0; i < n; i++) { /* no compare: the success branch always runs */
		buf_reset(&msg);
		buf_reset(&op);
		if (ops[i].del) {
			etcd_pb_delete_request(&msg, ops[i].key, false);
			etcd_pb_put_msg(&op, ETCD_OP_DELETE, &msg);
		} else {
			etcd_pb_put_request(&msg, ops[i].key, ops[i].value, ops[i].value_len, 0);
			etcd_pb_put_msg(&op, ETCD_OP_PUT, &msg);
		}
		etcd_pb_put_msg(&req, 2, &op);
	}
	rc = txn_call(e, &req, &resp, &t);
	if (rc == 0 && ret_rev)
		*ret_rev = t.revision;
	etcd_pb_txn_release(&t);
	buf_release(&req);
	buf_release(&msg);
	buf_release(&op);
	buf_release(&resp);
	return rc;
}

/* Creates go through group commit (batch.c): concurrent creates share one txn. */
int etcd_create(struct etcd *e, const char *key, const char *value, size_t len, int64_t lease, int64_t *ret_rev)
{
	if (!key)
		return E_BAD_REQUEST;
	return etcd_gc_put(e, key, value, len, lease, -1, ret_rev);
}

/* A txn with one compare on key, one success op and a range of key as the failure branch. */
static void txn_one(struct buf *req, const char *key, enum etcd_pb_target target, enum etcd_pb_result result,
		    int64_t v, enum etcd_pb_op kind, const struct buf *op)
{
	struct buf m = BUF_INIT, ro = BUF_INIT;

	etcd_pb_compare(&m, key, target, result, v);
	etcd_pb_put_msg(req, 1, &m);
	etcd_pb_put_msg(&ro, kind, op);
	etcd_pb_put_msg(req, 2, &ro);
	buf_reset(&m);
	buf_reset(&ro);
	etcd_pb_range_request(&m, key, NULL, 0, 0, false, false);
	etcd_pb_put_msg(&ro, ETCD_OP_RANGE, &m);
	etcd_pb_put_msg(req, 3, &ro);
	buf_release(&m);
	buf_release(&ro);
}

/* Response op i of kind, or NULL. */
static const struct etcd_pb_op_view *txn_op(const struct etcd_pb_txn_result *t, size_t i, enum etcd_pb_op kind)
{
	return i < t->n && t->ops[i].kind == kind ? &t->ops[i] : NULL;
}

/* After a failed compare with a range in the failure branch: E_NOT_FOUND if the key is absent,
 * else E_CONFLICT with the current kv moved to ret_current (if not NULL). */
static int txn_failed(const struct etcd_pb_txn_result *t, struct etcd_kv *ret_current)
{
	const struct etcd_pb_op_view *rr = txn_op(t, 0, ETCD_OP_RANGE);
	struct etcd_range_result r;

	if (!rr || etcd_pb_decode_range(rr->data, rr->len, &r) < 0)
		return E_INTERNAL;
	if (r.n == 0) {
		etcd_range_result_release(&r);
		return E_NOT_FOUND;
	}
	if (ret_current) {
		*ret_current = r.kvs[0];
		memset(&r.kvs[0], 0, sizeof(r.kvs[0]));
	}
	etcd_range_result_release(&r);
	return E_CONFLICT;
}

/* Sends a txn built by txn_one; on success decodes it into ret (release with etcd_pb_txn_release)
 * with the response bytes kept in resp (the views point there). */
static int txn_call(struct etcd *e, const struct buf *req, struct buf *resp, struct etcd_pb_txn_result *ret)
{
	int rc = etcd_grpc_call(e, KV_TXN, req, false, resp);

	if (rc == 0)
		rc = etcd_pb_decode_txn(resp->ptr, resp->len, ret);
	return rc;
}

int etcd_update(struct etcd *e, const char *key, const char *value, size_t len, int64_t expect_rev,
		int64_t *ret_rev, struct etcd_kv *ret_current)
{
	struct buf req = BUF_INIT, put = BUF_INIT, resp = BUF_INIT;
	struct etcd_pb_txn_result t = { 0 };
	int rc;

	if (!key || expect_rev < 0)
		return E_BAD_REQUEST;
	if (expect_rev > 0 && !ret_current)
		return etcd_gc_put(e, key, value, len, 0, expect_rev, ret_rev);
	etcd_pb_put_request(&put, key, value, len, 0);
	if (expect_rev)
		txn_one(&req, key, ETCD_CMP_MOD, ETCD_CMP_EQUAL, expect_rev, ETCD_OP_PUT, &put);
	else
		txn_one(&req, key, ETCD_CMP_CREATE, ETCD_CMP_GREATER, 0, ETCD_OP_PUT, &put);
	rc = txn_call(e, &req, &resp, &t);
	if (rc == 0 && !t.succeeded)
		rc = txn_failed(&t, ret_current);
	else if (rc == 0 && ret_rev)
		*ret_rev = t.revision;
	etcd_pb_txn_release(&t);
	buf_release(&req);
	buf_release(&put);
	buf_release(&resp);
	return rc;
}

/* The outcome of a DeleteRangeResponse: E_NOT_FOUND if nothing was deleted. */
static int delete_result(const uint8_t *p, size_t len, int64_t *ret_rev, struct etcd_kv *ret_prev)
{
	struct etcd_pb_delete_result d;

	if (etcd_pb_decode_delete(p, len, &d) < 0)
		return E_INTERNAL;
	if (d.deleted == 0 || (ret_prev && !d.prev.key)) {
		int rc = d.deleted == 0 ? E_NOT_FOUND : E_INTERNAL;
		etcd_kv_release(&d.prev);
		return rc;
	}
	if (ret_rev)
		*ret_rev = d.revision;
	if (ret_prev)
		*ret_prev = d.prev;
	else
		etcd_kv_release(&d.prev);
	return 0;
}

static int delete_txn(struct etcd *e, const char *key, int64_t expect_rev, int64_t *ret_rev, struct etcd_kv *ret_prev)
{
	struct buf req = BUF_INIT, del = BUF_INIT, resp = BUF_INIT;
	struct etcd_pb_txn_result t = { 0 };
	const struct etcd_pb_op_view *dr;
	int rc;

	etcd_pb_delete_request(&del, key, true);
	txn_one(&req, key, ETCD_CMP_MOD, ETCD_CMP_EQUAL, expect_rev, ETCD_OP_DELETE, &del);
	rc = txn_call(e, &req, &resp, &t);
	if (rc == 0 && !t.succeeded) {
		rc = txn_failed(&t, NULL);
	} else if (rc == 0) {
		dr = txn_op(&t, 0, ETCD_OP_DELETE);
		rc = dr ? delete_result(dr->data, dr->len, NULL, ret_prev) : E_INTERNAL;
		if (rc == 0 && ret_rev)
			*ret_rev = t.revision;
	}
	etcd_pb_txn_release(&t);
	buf_release(&req);
	buf_release(&del);
	buf_release(&resp);
	return rc;
}

int etcd_delete(struct etcd *e, const char *key, int64_t expect_rev, int64_t *ret_rev, struct etcd_kv *ret_prev)
{
	struct buf req = BUF_INIT, resp = BUF_INIT;
	int rc;

	if (!key || expect_rev < 0)
		return E_BAD_REQUEST;
	if (expect_rev)
		return delete_txn(e, key, expect_rev, ret_rev, ret_prev);
	etcd_pb_delete_request(&req, key, true);
	rc = etcd_grpc_call(e, KV_DELETE, &req, false, &resp);
	if (rc == 0)
		rc = delete_result((const uint8_t *)resp.ptr, resp.len, ret_rev, ret_prev);
	buf_release(&req);
	buf_release(&resp);
	return rc;
}

int etcd_compact(struct etcd *e, int64_t rev)
{
	struct buf req = BUF_INIT;
	int rc;

	if (rev <= 0)
		return E_BAD_REQUEST;
	etcd_pb_compaction_request(&req, rev, true);
	rc = call_rev(e, KV_COMPACT, &req, true, NULL);
	buf_release(&req);
	return rc;
}
