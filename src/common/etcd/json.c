/* The calls that still go through etcd's JSON gateway over HTTP/1.1: leases and /health (the
 * watch stream is in watch.c). They are rare (a keep-alive every few seconds per holder), so
 * moving them to gRPC would buy nothing measurable. */
#include "etcd/etcd_internal.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Settings shared by unary handles and the watch stream handle. */
void etcd_curl_setup(void *ud, CURL *c)
{
	const struct etcd *e = ud;
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

struct call {
	const char *path;
	const struct buf *body; /* NULL: GET */
	bool idempotent;
	json_t **ret;
};

/* One request to member idx. Returns 0 with *k->ret (new reference to the parsed 200 body),
 * ETCD_TRY_NEXT, or an E_* code from the member's answer. */
static int attempt(struct etcd *e, CURL *c, size_t idx, void *ctx)
{
	struct call *k = ctx;
	struct etcd_reply r = { BUF_INIT, false };
	char *url = xasprintf("%s%s", e->endpoints[idx], k->path);
	json_t *j = NULL;
	long status = 0;
	curl_off_t sent = 0;
	CURLcode cc;
	int rc;

	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, e->timeout_ms);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, etcd_on_body);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
	if (k->body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, buf_cstr(k->body));
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)k->body->len);
	} else {
		curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
	}
	cc = curl_easy_perform(c);
	if (cc != CURLE_OK) {
		long req = 0;
		curl_easy_getinfo(c, CURLINFO_REQUEST_SIZE, &req);
		sent = req;
		rc = r.too_big ? E_INTERNAL : etcd_transport_error(cc, sent != 0, k->idempotent);
		goto out;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	j = etcd_json_parse(buf_cstr(&r.body), r.body.len);
	if (status == 200 && json_is_object(j) && !json_object_get(j, "error")) {
		*k->ret = j;
		j = NULL;
		rc = 0;
		goto out;
	}
	rc = etcd_parse_error(j, status);
	if (rc == E_UNAVAILABLE)
		rc = ETCD_TRY_NEXT;
out:
	json_decref(j);
	buf_release(&r.body);
	free(url);
	return rc;
}

int etcd_call(struct etcd *e, const char *path, const struct buf *body, bool idempotent, json_t **ret)
{
	struct call k = { path, body, idempotent, ret };
	return etcd_failover(e, &e->json_pool, attempt, &k);
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

/* ---- health ---- */

struct health {
	bool ok;
};

/* One member's /health; never fails over by itself (etcd_healthy asks each member). */
static bool member_healthy(struct etcd *e, CURL *c, size_t idx)
{
	json_t *resp = NULL;
	struct call k = { "/health", NULL, true, &resp };
	const char *h;
	bool ok;

	if (attempt(e, c, idx, &k) != 0)
		return false;
	h = json_str(resp, "health");
	ok = h && !strcmp(h, "true");
	json_decref(resp);
	return ok;
}

static int health_attempt(struct etcd *e, CURL *c, size_t idx, void *ctx)
{
	struct health *h = ctx;

	h->ok = member_healthy(e, c, idx);
	return h->ok ? 0 : ETCD_TRY_NEXT;
}

bool etcd_healthy(struct etcd *e)
{
	struct health h = { false };

	etcd_failover(e, &e->json_pool, health_attempt, &h);
	return h.ok;
}
