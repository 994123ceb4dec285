/* etcd v3 JSON gateway client: transport with member fail-over, KV, txn-based conditional writes
 * and leases. See ursa/etcd.h for the contract. */
#include "etcd/etcd_internal.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define TRY_NEXT 1 /* attempt() result: this member did not take the request, try another */

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

struct etcd *etcd_new(const char *endpoints, const struct etcd_options *opts)
{
	struct etcd *e;

	if (!endpoints)
		return NULL;
	pthread_once(&curl_once, curl_init_once);
	e = xcalloc(1, sizeof(*e));
	e->endpoints = xcalloc(ETCD_MAX_ENDPOINTS, sizeof(*e->endpoints));
	pthread_mutex_init(&e->pool_lock, NULL);
	if (parse_endpoints(e, endpoints) < 0) {
		etcd_free(e);
		return NULL;
	}
	atomic_init(&e->preferred, 0);
	e->timeout_ms = opts && opts->timeout_ms > 0 ? opts->timeout_ms : 5000;
	e->connect_timeout_ms = opts && opts->connect_timeout_ms > 0 ? opts->connect_timeout_ms : 1000;
	e->headers = curl_slist_append(NULL, "Expect:");
	e->headers = curl_slist_append(e->headers, "Content-Type: application/json");
	e->gc = etcd_gc_new();
	return e;
}

void etcd_free(struct etcd *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->n_pool; i++)
		curl_easy_cleanup(e->pool[i]);
	free(e->pool);
	for (size_t i = 0; i < e->n_endpoints; i++)
		free(e->endpoints[i]);
	free(e->endpoints);
	curl_slist_free_all(e->headers);
	pthread_mutex_destroy(&e->pool_lock);
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

struct reply {
	struct buf body;
	bool too_big;
};

static size_t on_body(char *data, size_t size, size_t nmemb, void *ud)
{
	struct reply *r = ud;
	size_t n = size * nmemb;

	if (r->body.len + n > ETCD_MAX_BODY) {
		r->too_big = true;
		return 0;
	}
	buf_add(&r->body, data, n);
	return n;
}

/* Settings shared by unary handles and the watch stream handle. */
void etcd_curl_setup(struct etcd *e, CURL *c)
{
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPIDLE, 10L);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPINTVL, 5L);
	/* h2 (ALPN or prior knowledge) would be routed to etcd's gRPC server, not the gateway */
	curl_easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, e->headers);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, e->connect_timeout_ms);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
}

static CURL *handle_take(struct etcd *e)
{
	CURL *c = NULL;

	pthread_mutex_lock(&e->pool_lock);
	if (e->n_pool)
		c = e->pool[--e->n_pool];
	pthread_mutex_unlock(&e->pool_lock);
	if (c)
		return c;
	c = curl_easy_init();
	if (!c)
		abort();
	etcd_curl_setup(e, c);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, e->timeout_ms);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	return c;
}

static void handle_give(struct etcd *e, CURL *c)
{
	pthread_mutex_lock(&e->pool_lock);
	if (e->n_pool == e->pool_alloc) {
		e->pool_alloc = e->pool_alloc ? e->pool_alloc * 2 : 8;
		e->pool = xrealloc(e->pool, e->pool_alloc * sizeof(*e->pool));
	}
	e->pool[e->n_pool++] = c;
	pthread_mutex_unlock(&e->pool_lock);
}

/* A transfer that failed: may another member be tried? Only if the request cannot have been
 * applied (nothing sent, or refused), or if it is a read. */
static int transport_error(CURL *c, CURLcode cc, bool idempotent)
{
	long sent = 0;

	curl_easy_getinfo(c, CURLINFO_REQUEST_SIZE, &sent);
	if (idempotent || sent == 0 || cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST)
		return TRY_NEXT;
	return cc == CURLE_OPERATION_TIMEDOUT ? E_TIMEOUT : E_UNAVAILABLE;
}

/* One request to member idx. body NULL means GET. Returns 0 with *ret (new reference to the
 * parsed 200 body), TRY_NEXT, or an E_* code from the member's answer. */
static int attempt(struct etcd *e, CURL *c, size_t idx, const char *path, const struct buf *body,
		   bool idempotent, json_t **ret)
{
	struct reply r = { BUF_INIT, false };
	char *url = xasprintf("%s%s", e->endpoints[idx], path);
	json_t *j = NULL;
	long status = 0;
	CURLcode cc;
	int rc;

	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
	if (body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, buf_cstr(body));
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body->len);
	} else {
		curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
	}
	cc = curl_easy_perform(c);
	if (cc != CURLE_OK) {
		rc = r.too_big ? E_INTERNAL : transport_error(c, cc, idempotent);
		goto out;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	j = etcd_json_parse(buf_cstr(&r.body), r.body.len);
	if (status == 200 && json_is_object(j) && !json_object_get(j, "error")) {
		*ret = j;
		j = NULL;
		rc = 0;
		goto out;
	}
	rc = etcd_parse_error(j, status);
	if (rc == E_UNAVAILABLE)
		rc = TRY_NEXT;
out:
	json_decref(j);
	buf_release(&r.body);
	free(url);
	return rc;
}

/* Sends body to path on the preferred member, failing over to the others. Returns 0 with *ret
 * (a new reference the caller must json_decref), or an E_* code. */
int etcd_call(struct etcd *e, const char *path, const struct buf *body, bool idempotent, json_t **ret)
{
	CURL *c = handle_take(e);
	size_t start = atomic_load(&e->preferred);
	int rc = E_UNAVAILABLE;

	for (size_t i = 0; i < e->n_endpoints; i++) {
		size_t idx = (start + i) % e->n_endpoints;
		rc = attempt(e, c, idx, path, body, idempotent, ret);
		if (rc == TRY_NEXT) {
			rc = E_UNAVAILABLE;
			continue;
		}
		if (i > 0 && rc != E_UNAVAILABLE && rc != E_TIMEOUT)
			atomic_store(&e->preferred, idx);
		break;
	}
	handle_give(e, c);
	return rc;
}

/* ---- request bodies (base64 and digits only, so nothing needs escaping) ---- */

static void add_bytes(struct buf *b, const char *name, const void *data, size_t len)
{
	buf_addf(b, "\"%s\":\"", name);
	etcd_b64_encode(b, data, len);
	buf_addch(b, '"');
}

void etcd_body_key(struct buf *b, const char *key, const char *range_end)
{
	if (range_end && !*key)
		add_bytes(b, "key", "", 1);
	else
		add_bytes(b, "key", key, strlen(key));
	if (range_end) {
		buf_addch(b, ',');
		add_bytes(b, "range_end", range_end, *range_end ? strlen(range_end) : 1);
	}
}

static void add_i64(struct buf *b, const char *name, int64_t v)
{
	buf_addf(b, ",\"%s\":\"%" PRId64 "\"", name, v);
}

static void put_op(struct buf *b, const char *key, const char *value, size_t len, int64_t lease)
{
	buf_addch(b, '{');
	etcd_body_key(b, key, NULL);
	buf_addch(b, ',');
	add_bytes(b, "value", value ? value : "", value ? len : 0);
	if (lease)
		add_i64(b, "lease", lease);
	buf_addch(b, '}');
}

/* A txn with one compare on key: target (CREATE or MOD), result, and the value. */
static void txn_compare(struct buf *b, const char *key, const char *target, const char *result, int64_t v)
{
	buf_adds(b, "{\"compare\":[{");
	etcd_body_key(b, key, NULL);
	buf_addf(b, ",\"target\":\"%s\",\"result\":\"%s\"", target, result);
	add_i64(b, !strcmp(target, "MOD") ? "mod_revision" : "create_revision", v);
	buf_adds(b, "}]");
}

static void txn_failure_range(struct buf *b, const char *key)
{
	buf_adds(b, ",\"failure\":[{\"request_range\":{");
	etcd_body_key(b, key, NULL);
	buf_adds(b, "}}]}");
}

/* Borrowed responses[0][kind] of a txn response, or NULL. */
static json_t *txn_op_response(const json_t *resp, const char *kind)
{
	json_t *arr = json_object_get(resp, "responses");
	json_t *first = json_is_array(arr) ? json_array_get(arr, 0) : NULL;
	json_t *r = json_is_object(first) ? json_object_get(first, kind) : NULL;
	return json_is_object(r) ? r : NULL;
}

/* After a failed compare with a range in the failure branch: E_NOT_FOUND if the key is absent,
 * else E_CONFLICT with the current kv moved to ret_current (if not NULL). */
static int txn_failed(const json_t *resp, struct etcd_kv *ret_current)
{
	json_t *rr = txn_op_response(resp, "response_range");
	struct etcd_range_result r;

	if (!rr || etcd_parse_range(rr, &r) < 0)
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

static int ret_header_rev(const json_t *resp, int64_t *ret_rev)
{
	int64_t rev;

	if (etcd_header_rev(resp, &rev) < 0)
		return E_INTERNAL;
	if (ret_rev)
		*ret_rev = rev;
	return 0;
}

/* ---- KV ---- */

int etcd_range(struct etcd *e, const char *key, const char *range_end, int64_t revision, int64_t limit,
	       bool keys_only, struct etcd_range_result *ret)
{
	struct buf b = BUF_INIT;
	json_t *resp = NULL;
	int rc;

	if (!key || revision < 0 || limit < 0)
		return E_BAD_REQUEST;
	buf_addch(&b, '{');
	etcd_body_key(&b, key, range_end);
	if (revision)
		add_i64(&b, "revision", revision);
	if (limit)
		add_i64(&b, "limit", limit);
	if (keys_only)
		buf_adds(&b, ",\"keys_only\":true");
	buf_addch(&b, '}');
	rc = etcd_call(e, "/v3/kv/range", &b, true, &resp);
	if (rc == 0)
		rc = etcd_parse_range(resp, ret);
	json_decref(resp);
	buf_release(&b);
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
	struct buf b = BUF_INIT;
	json_t *resp = NULL;
	int rc;

	buf_addch(&b, '{');
	add_bytes(&b, "key", "", 1);
	buf_adds(&b, ",\"count_only\":true}");
	rc = etcd_call(e, "/v3/kv/range", &b, true, &resp);
	if (rc == 0)
		rc = ret_header_rev(resp, ret_rev);
	json_decref(resp);
	buf_release(&b);
	return rc;
}

int etcd_put(struct etcd *e, const char *key, const char *value, size_t len, int64_t lease, int64_t *ret_rev)
{
	struct buf b = BUF_INIT;
	json_t *resp = NULL;
	int rc;

	if (!key)
		return E_BAD_REQUEST;
	put_op(&b, key, value, len, lease);
	rc = etcd_call(e, "/v3/kv/put", &b, false, &resp);
	if (rc == 0)
		rc = ret_header_rev(resp, ret_rev);
	json_decref(resp);
	buf_release(&b);
	return rc;
}

/* Creates go through group commit (batch.c): concurrent creates share one txn. */
int etcd_create(struct etcd *e, const char *key, const char *value, size_t len, int64_t lease, int64_t *ret_rev)
{
	if (!key)
		return E_BAD_REQUEST;
	return etcd_gc_put(e, key, value, len, lease, -1, ret_rev);
}

int etcd_update(struct etcd *e, const char *key, const char *value, size_t len, int64_t expect_rev,
		int64_t *ret_rev, struct etcd_kv *ret_current)
{
	struct buf b = BUF_INIT;
	json_t *resp = NULL;
	int rc;

	if (!key || expect_rev < 0)
		return E_BAD_REQUEST;
	if (expect_rev > 0 && !ret_current)
		return etcd_gc_put(e, key, value, len, 0, expect_rev, ret_rev);
	if (expect_rev)
		txn_compare(&b, key, "MOD", "EQUAL", expect_rev);
	else
		txn_compare(&b, key, "CREATE", "GREATER", 0);
	buf_adds(&b, ",\"success\":[{\"request_put\":");
	put_op(&b, key, value, len, 0);
	buf_adds(&b, "}]");
	txn_failure_range(&b, key);
	rc = etcd_call(e, "/v3/kv/txn", &b, false, &resp);
	if (rc == 0)
		rc = etcd_json_bool(resp, "succeeded") ? ret_header_rev(resp, ret_rev) : txn_failed(resp, ret_current);
	json_decref(resp);
	buf_release(&b);
	return rc;
}

/* Moves the first of a delete response's prev_kvs into ret_prev. E_NOT_FOUND if nothing was deleted. */
static int delete_result(const json_t *dr, const json_t *resp, int64_t *ret_rev, struct etcd_kv *ret_prev)
{
	json_t *prevs = json_object_get(dr, "prev_kvs");
	int64_t deleted;
	struct etcd_kv kv;

	if (etcd_json_i64(dr, "deleted", &deleted) < 0)
		return E_INTERNAL;
	if (deleted == 0)
		return E_NOT_FOUND;
	if (ret_header_rev(resp, ret_rev) < 0)
		return E_INTERNAL;
	if (!ret_prev)
		return 0;
	if (!json_is_array(prevs) || etcd_parse_kv(json_array_get(prevs, 0), &kv) < 0)
		return E_INTERNAL;
	*ret_prev = kv;
	return 0;
}

int etcd_delete(struct etcd *e, const char *key, int64_t expect_rev, int64_t *ret_rev, struct etcd_kv *ret_prev)
{
	struct buf b = BUF_INIT;
	json_t *resp = NULL;
	json_t *dr;
	int rc;

	if (!key || expect_rev < 0)
		return E_BAD_REQUEST;
	if (!expect_rev) {
		buf_addch(&b, '{');
		etcd_body_key(&b, key, NULL);
		buf_adds(&b, ",\"prev_kv\":true}");
		rc = etcd_call(e, "/v3/kv/deleterange", &b, false, &resp);
		if (rc == 0)
			rc = delete_result(resp, resp, ret_rev, ret_prev);
		goto out;
	}
	txn_compare(&b, key, "MOD", "EQUAL", expect_rev);
	buf_adds(&b, ",\"success\":[{\"request_delete_range\":{");
	etcd_body_key(&b, key, NULL);
	buf_adds(&b, ",\"prev_kv\":true}}]");
	txn_failure_range(&b, key);
	rc = etcd_call(e, "/v3/kv/txn", &b, false, &resp);
	if (rc < 0)
		goto out;
	if (!etcd_json_bool(resp, "succeeded")) {
		rc = txn_failed(resp, NULL);
		goto out;
	}
	dr = txn_op_response(resp, "response_delete_range");
	rc = dr ? delete_result(dr, resp, ret_rev, ret_prev) : E_INTERNAL;
out:
	json_decref(resp);
	buf_release(&b);
	return rc;
}

int etcd_compact(struct etcd *e, int64_t rev)
{
	struct buf b = BUF_INIT;
	json_t *resp = NULL;
	int rc;

	if (rev <= 0)
		return E_BAD_REQUEST;
	buf_addf(&b, "{\"revision\":\"%" PRId64 "\",\"physical\":true}", rev);
	rc = etcd_call(e, "/v3/kv/compaction", &b, true, &resp);
	json_decref(resp);
	buf_release(&b);
	return rc;
}

/* ---- leases ---- */

int etcd_lease_grant(struct etcd *e, int64_t ttl_s, int64_t *ret_id)
{
	struct buf b = BUF_INIT;
	json_t *resp = NULL;
	int64_t id;
	int rc;

	if (ttl_s <= 0)
		return E_BAD_REQUEST;
	buf_addf(&b, "{\"TTL\":\"%" PRId64 "\"}", ttl_s);
	rc = etcd_call(e, "/v3/lease/grant", &b, false, &resp);
	if (rc == 0) {
		rc = etcd_json_i64(resp, "ID", &id);
		if (rc == 0 && id == 0)
			rc = E_INTERNAL;
		if (rc == 0)
			*ret_id = id;
	}
	json_decref(resp);
	buf_release(&b);
	return rc;
}

int etcd_lease_keepalive(struct etcd *e, int64_t id, int64_t *ret_ttl)
{
	struct buf b = BUF_INIT;
	json_t *resp = NULL;
	json_t *result;
	int64_t ttl = 0;
	int rc;

	buf_addf(&b, "{\"ID\":\"%" PRId64 "\"}", id);
	rc = etcd_call(e, "/v3/lease/keepalive", &b, true, &resp);
	if (rc < 0)
		goto out;
	/* a stream: one {"result":LeaseKeepAliveResponse} line; a gone lease has TTL omitted */
	result = json_object_get(resp, "result");
	if (!json_is_object(result) || etcd_json_i64(result, "TTL", &ttl) < 0) {
		rc = E_INTERNAL;
		goto out;
	}
	if (ttl <= 0) {
		rc = E_NOT_FOUND;
		goto out;
	}
	if (ret_ttl)
		*ret_ttl = ttl;
out:
	json_decref(resp);
	buf_release(&b);
	return rc;
}

int etcd_lease_revoke(struct etcd *e, int64_t id)
{
	struct buf b = BUF_INIT;
	json_t *resp = NULL;
	int rc;

	buf_addf(&b, "{\"ID\":\"%" PRId64 "\"}", id);
	rc = etcd_call(e, "/v3/lease/revoke", &b, false, &resp);
	json_decref(resp);
	buf_release(&b);
	return rc;
}

bool etcd_healthy(struct etcd *e)
{
	CURL *c = handle_take(e);
	bool ok = false;

	for (size_t i = 0; i < e->n_endpoints && !ok; i++) {
		json_t *resp = NULL;
		const char *h;
		if (attempt(e, c, i, "/health", NULL, true, &resp) != 0)
			continue;
		h = json_str(resp, "health");
		ok = h && !strcmp(h, "true");
		json_decref(resp);
	}
	handle_give(e, c);
	return ok;
}
