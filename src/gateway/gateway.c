/* The gateway's request path: authenticate, route (route.c), authorize, rate-limit, then
 * forward to one partition (streaming when the reply is a watch or a followed log), fan a
 * list out over several partitions and merge it, or place a new tenant.
 *
 * Two paths. Every request first meets on_fast on the HTTP server's epoll thread: it is
 * admitted there (token, route, rate limit: no blocking work), answered at once when it can
 * be, and a plain request to one partition is forwarded through the plain-request loop
 * (plain.c) with its reply deferred, so it never occupies a worker. Everything that blocks
 * (streams waiting for their headers, merged lists, discovery, tenant and node placement) goes
 * on to on_request on an HTTP worker, with the admitted call attached to the request.
 *
 * A tenant moving between partitions (move.c): a plain request of the tenant that its partition
 * refuses with 429 and X-Ursa-Tenant-Moving is held (on_forwarded -> hold): parked in the plain
 * loop, sent again to the tenant's partition as soon as the registry's change hook reports a new
 * placement or MOVE_HOLD_STEP_MS passes, until --move-hold-seconds are spent (the last 429 is then
 * passed on). No thread waits meanwhile. A watch of the tenant goes through
 * upstream_tenant_watch, which continues it on the new partition after the switch. Requests that
 * go to a worker (forward(): discovery's fallbacks and such, never a tenant's writes) are not
 * held. */
#include <curl/curl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "gw.h"
#include "reconcile.h"
#include "ursa/apidisc.h"
#include "ursa/errors.h"
#include "ursa/etcd.h"
#include "ursa/http.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/timeutil.h"
#include "ursa/tunnel.h"
#include "ursa/path.h"
#include "ursa/xalloc.h"

#define PARTITION_ANNOTATION "ursa.io/partition"
#define MAX_PATH 4096

struct gateway {
	struct gw_options o;
	struct authn *authn;
	struct etcd *etcd;
	struct registry *reg;
	struct reconciler rc;
	struct limiter lim;
	struct audit *audit;
	struct http_server *http;
	char *own_auth; /* "Bearer <token>" of the gateway itself, or NULL */
	struct idkey *idkey; /* NULL: callers' tokens are forwarded as they came */
};

/* A request in flight. */
struct call {
	struct gateway *g;
	struct http_request *req;
	struct http_reply *reply;
	struct identity id;
	bool authed;
	struct route rt;
	char *assertion; /* the caller asserted to partitions (with an identity key), made once */
	/* a plain forward in flight (plain.c) */
	struct partition *p;     /* ref */
	char *path;
	struct upstream_req rq;
	struct http_deferred *deferred;
	int64_t held_since_ms; /* held (the tenant is moving) since then; 0: not held */
	char *deny_reason; /* a 403's message (the gateway's or the partition's), for the audit log */
};

static void reply_status(struct http_reply *reply, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void reply_status(struct http_reply *reply, int err, const char *fmt, ...)
{
	struct buf msg = BUF_INIT, b = BUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	buf_vaddf(&msg, fmt, ap);
	va_end(ap);
	buf_adds(&b, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":");
	buf_add_json_str(&b, msg.ptr, msg.len);
	buf_addf(&b, ",\"reason\":\"%s\",\"code\":%d}", err_reason(err), err_http_code(err));
	if (err == E_UNAVAILABLE)
		http_reply_header(reply, "Retry-After", "1");
	http_reply_set(reply, err_http_code(err), "application/json", &b);
	buf_release(&msg);
}

static bool url_safe(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("-._~/:@!$&'()*+,;=", c);
}

/* Parameters a merged (fanned-out) request does not pass on as is: paging (merged lists are
 * complete) and the resourceVersion (each partition gets its own). */
static const char *const fanout_dropped[] = { "limit", "continue", "resourceVersion" };

/* The path and query to send to a partition: the client's query string passed on unchanged,
 * except that a fanned-out request drops fanout_dropped and, when rv is not NULL, asks for
 * resourceVersion=rv. */
static char *upstream_path(struct http_request *req, bool fanout, const char *rv)
{
	struct buf b = BUF_INIT;
	const char *path = http_path(req);
	for (const char *c = path; *c; c++) {
		if (url_safe(*c))
			buf_addch(&b, *c);
		else
			buf_addf(&b, "%%%02X", (unsigned char)*c);
	}
	char sep = '?';
	const char *q = http_query_string(req);
	while (q && *q) {
		const char *amp = strchr(q, '&');
		size_t len = amp ? (size_t)(amp - q) : strlen(q);
		const char *eq = memchr(q, '=', len);
		size_t klen = eq ? (size_t)(eq - q) : len;
		bool drop = len == 0;
		for (size_t i = 0; fanout && !drop && i < ARRAY_SIZE(fanout_dropped); i++)
			drop = query_key_is(q, klen, fanout_dropped[i]);
		if (!drop) {
			/* As sent, except bytes a URL may not hold raw (already-encoded ones stay). */
			buf_addch(&b, sep);
			for (size_t i = 0; i < len; i++) {
				if (url_safe(q[i]) || q[i] == '%' || q[i] == '?')
					buf_addch(&b, q[i]);
				else
					buf_addf(&b, "%%%02X", (unsigned char)q[i]);
			}
			sep = '&';
		}
		q = amp ? amp + 1 : NULL;
	}
	if (rv && *rv) {
		char *esc = curl_easy_escape(NULL, rv, 0);
		buf_addf(&b, "%cresourceVersion=%s", sep, esc ? esc : "");
		curl_free(esc);
	}
	return buf_detach(&b, NULL);
}

static struct upstream_req base_req(struct call *c, const char *path)
{
	size_t len = 0;
	const char *body = http_body(c->req, &len);
	if (c->g->idkey && c->authed && !c->assertion)
		c->assertion = identity_assert(c->g->idkey, &c->id, time(NULL), 60);
	return (struct upstream_req){
		.method = http_method(c->req), .path = path,
		.authorization = c->assertion ? NULL : http_header(c->req, "Authorization"), .identity = c->assertion,
		.content_type = http_header(c->req, "Content-Type"), .accept = http_header(c->req, "Accept"),
		.forwarded_for = http_client_addr(c->req), .body = body, .len = len, .timeout_ms = 60000,
	};
}

/* The message of a refusal (a Status body) for the audit log: the partition's authorizer's
 * words. */
static void note_refusal(struct call *c, const struct upstream_resp *resp)
{
	if (resp->status != 403 || c->deny_reason)
		return;
	json_t *st = json_loadb(resp->body.ptr ? resp->body.ptr : "", resp->body.len, 0, NULL);
	const char *m = json_string_value(json_object_get(st, "message"));
	c->deny_reason = xstrdup(m ? m : "forbidden by the partition");
	json_decref(st);
}

static void relay(struct call *c, struct upstream_resp *resp)
{
	note_refusal(c, resp);
	if (resp->warning)
		http_reply_header(c->reply, "Warning", resp->warning);
	http_reply_set(c->reply, resp->status, ctype_intern(resp->content_type), &resp->body);
}

/* A boolean query parameter as Kubernetes reads it (Go's strconv.ParseBool): python clients
 * send "True". */
static bool truthy(const char *v)
{
	static const char *const yes[] = { "1", "t", "T", "true", "True", "TRUE" };
	for (size_t i = 0; v && i < ARRAY_SIZE(yes); i++)
		if (strcmp(v, yes[i]) == 0)
			return true;
	return false;
}

static bool wants_stream(struct call *c)
{
	return c->rt.watch || truthy(http_query(c->req, "follow"));
}

/* Forwards the request as is to p. */
static void forward(struct call *c, struct partition *p)
{
	if (atomic_load(&p->down)) {
		reply_status(c->reply, E_UNAVAILABLE, "partition %s is unavailable", p->id);
		return;
	}
	char *path = upstream_path(c->req, false, NULL);
	struct upstream_req rq = base_req(c, path);
	if (wants_stream(c) && strcmp(rq.method, "GET") == 0) {
		/* One tenant's watch on its partition may follow the tenant to another one; merged
		 * watches (fan_out) and log -f end with their partitions as before. */
		if (c->rt.kind == RT_TENANT && c->rt.watch)
			upstream_tenant_watch(p, &rq, c->g->reg, c->rt.tenant, c->reply);
		else
			upstream_stream(p, &rq, c->reply);
		free(path);
		return;
	}
	struct upstream_resp resp = { 0 };
	int err = upstream_partition(p, &rq, &resp);
	if (err == E_UNAVAILABLE)
		reply_status(c->reply, E_UNAVAILABLE, "partition %s is unavailable", p->id);
	else if (err)
		reply_status(c->reply, E_TIMEOUT, "partition %s did not answer in time", p->id);
	else
		relay(c, &resp);
	upstream_resp_release(&resp);
	free(path);
}

/* An exec, attach or port-forward upgrade: tunnelled to the partition (worker thread), with the
 * caller's identity asserted (or its token passed on) as for other requests. */
static void stream_to(struct call *c, struct partition *p)
{
	if (atomic_load(&p->down)) {
		reply_status(c->reply, E_UNAVAILABLE, "partition %s is unavailable", p->id);
		return;
	}
	char *path = upstream_path(c->req, false, NULL);
	struct upstream_req rq = base_req(c, path);
	const char *bearer = NULL;
	if (!rq.identity && rq.authorization && strncasecmp(rq.authorization, "Bearer ", 7) == 0)
		bearer = rq.authorization + 7;
	const char *headers[] = { IDENTITY_HEADER, rq.identity, "X-Forwarded-For", rq.forwarded_for, NULL };
	struct tunnel_hop hop = { .ca_file = c->g->o.partition_ca, .bearer = bearer,
				  .headers = rq.identity ? headers : headers + 2, .timeout_ms = 15000 };
	int err = E_UNAVAILABLE;
	size_t n = p->nendpoints, first = n ? (size_t)atomic_load(&p->next_ep) % n : 0;
	for (size_t i = 0; i < n && err == E_UNAVAILABLE; i++) {
		hop.base = p->endpoints[(first + i) % n];
		err = tunnel_proxy(c->req, c->reply, &hop, path);
	}
	if (err == E_UNAVAILABLE)
		reply_status(c->reply, E_UNAVAILABLE, "partition %s is unavailable", p->id);
	else if (err)
		reply_status(c->reply, E_TIMEOUT, "partition %s did not answer in time", p->id);
	else if (http_reply_status(c->reply) == 403)
		c->deny_reason = xstrdup("forbidden by the partition");
	free(path);
}

static void to_tenant(struct call *c, const char *tenant)
{
	struct partition *p = registry_tenant_partition(c->g->reg, tenant);
	if (!p) {
		reply_status(c->reply, E_NOT_FOUND, "tenant \"%s\" is not known to this region", tenant);
		return;
	}
	if (c->rt.stream && tunnel_is_upgrade(c->req))
		stream_to(c, p);
	else
		forward(c, p);
	partition_unref(p);
}

/* The tenant partitions to ask for what the caller's tenant sees (a new array of refs): the
 * tenant's own partition first, then the others by id (they answer with the built-in kinds when
 * it is down). */
static struct partition **tenant_tps(struct call *c, size_t *ret_n)
{
	size_t n;
	struct partition **all = registry_partitions(c->g->reg, false, &n);
	struct partition *own = c->authed ? registry_tenant_partition(c->g->reg, c->id.tenant) : NULL;
	struct partition **ps = xcalloc(n + 1, sizeof(*ps));
	size_t m = 0;
	if (own)
		ps[m++] = own;
	for (size_t i = 0; i < n; i++) {
		if (own && strcmp(all[i]->id, own->id) == 0)
			partition_unref(all[i]);
		else
			ps[m++] = all[i];
	}
	free(all);
	*ret_n = m;
	return ps;
}

static int fetch_discovery(void *ud, struct partition *p, const char *path, int form, const char *inm,
			   struct upstream_resp *ret)
{
	struct upstream_req rq = base_req(ud, path);
	rq.method = "GET";
	rq.accept = apidisc_content_type((enum apidisc_form)form);
	rq.if_none_match = inm;
	rq.body = NULL;
	rq.len = 0;
	rq.timeout_ms = 30000;
	return upstream_partition(p, &rq, ret);
}

static int fetch_openapi(void *ud, struct partition *p, const char *path, const char *if_none_match,
			 struct upstream_resp *ret)
{
	struct upstream_req rq = base_req(ud, path);
	rq.method = "GET";
	rq.accept = "application/json";
	rq.if_none_match = if_none_match;
	rq.body = NULL;
	rq.len = 0;
	rq.timeout_ms = 30000;
	return upstream_partition(p, &rq, ret);
}

/* GET /openapi/...: the documents of the caller's tenant's partition (tps[0]; the others when
 * it is down) and of the resource managers, merged (openapi.c). */
static void to_openapi(struct call *c, struct partition **tps, size_t n, struct partition **rms, size_t nrm)
{
	struct oapi_fetcher f = { .tps = tps, .ntp = n, .rms = rms, .nrm = nrm, .fresh_ms = OAPI_FRESH_MS,
				  .tenant = c->authed ? c->id.tenant : NULL, .fetch = fetch_openapi, .ud = c };
	struct oapi_reply r;
	int err = oapi_get(&f, http_path(c->req), http_header(c->req, "Accept"), http_header(c->req, "If-None-Match"),
			   http_query(c->req, "hash"), &r);
	if (!err) {
		http_reply_header(c->reply, "ETag", r.etag);
		http_reply_header(c->reply, "Vary", "Accept");
		http_reply_header(c->reply, "Cache-Control", r.cache_control);
		http_reply_set(c->reply, r.status, r.content_type, r.status == 304 ? NULL : &r.body);
		oapi_reply_release(&r);
	} else if (err == E_NOT_FOUND)
		reply_status(c->reply, E_NOT_FOUND, "the server could not find the requested resource");
	else if (err == E_TIMEOUT)
		reply_status(c->reply, E_TIMEOUT, "the partitions did not answer in time");
	else if (err)
		reply_status(c->reply, E_UNAVAILABLE, "no partition serves the OpenAPI documents now");
}

/* Forwards to the partition named id among tps, else to the first of them not down. */
static void forward_first(struct call *c, struct partition **tps, size_t n, const char *id)
{
	struct partition *p = NULL;
	for (size_t i = 0; id && i < n && !p; i++)
		if (strcmp(tps[i]->id, id) == 0)
			p = tps[i];
	for (size_t i = 0; i < n && !p; i++)
		if (!atomic_load(&tps[i]->down))
			p = tps[i];
	if (p)
		forward(c, p);
	else
		reply_status(c->reply, E_UNAVAILABLE, "no tenant partition is available");
}

/* Discovery is what the caller's tenant sees: its partition answers (built-in kinds, the
 * tenant's and the system tenant's custom resources); API resource and group lists (and the
 * aggregated documents at /api and /apis, for clients that ask for them) also carry what the
 * resource managers serve, so kubectl sees one consistent API (disco.c caches the merged
 * documents). */
static void to_discovery(struct call *c)
{
	size_t n, nrm;
	struct partition **tps = tenant_tps(c, &n);
	struct partition **rms = registry_partitions(c->g->reg, true, &nrm);
	const char *path = http_path(c->req);
	bool get = strcmp(http_method(c->req), "GET") == 0;
	if (get && strncmp(path, "/openapi/", 9) == 0) {
		to_openapi(c, tps, n, rms, nrm);
		goto out;
	}
	if (!get || strncmp(path, "/api", 4) != 0) {
		forward_first(c, tps, n, NULL);
		goto out;
	}
	bool root = strcmp(path, "/api") == 0 || strcmp(path, "/apis") == 0 || strcmp(path, "/api/") == 0 ||
		    strcmp(path, "/apis/") == 0;
	enum apidisc_form f = root ? apidisc_negotiate(http_header(c->req, "Accept")) : APIDISC_LEGACY;
	struct disco_fetcher df = { .tps = tps, .ntp = n, .rms = rms, .nrm = nrm, .tenant = c->authed ? c->id.tenant : "",
				    .fresh_ms = OAPI_FRESH_MS, .fetch = fetch_discovery, .ud = c };
	struct disco_reply r;
	const char *inm = http_header(c->req, "If-None-Match");
	int err = disco_get(&df, path, (int)f, inm, &r);
	if (err == E_NOT_FOUND && r.other_form && f != APIDISC_LEGACY) {
		/* a partition without the aggregated form: every client understands the legacy one */
		disco_reply_release(&r);
		f = APIDISC_LEGACY;
		err = disco_get(&df, path, (int)f, inm, &r);
	}
	if (!err) {
		http_reply_header(c->reply, "ETag", r.etag);
		http_reply_header(c->reply, "Vary", "Accept");
		http_reply_set(c->reply, r.status, apidisc_content_type(f), r.status == 304 ? NULL : &r.body);
	} else if (err == E_NOT_FOUND) {
		forward_first(c, tps, n, r.partition); /* its answer as it gives it (a 404, most often) */
	} else {
		reply_status(c->reply, E_UNAVAILABLE, "no tenant partition is available");
	}
	disco_reply_release(&r);
out:
	partitions_free(tps, n);
	partitions_free(rms, nrm);
}

/* --- merged lists -------------------------------------------------------------------------- */
static void annotate_item(json_t *item, const char *pid)
{
	json_t *meta = json_obj_child(item, "metadata");
	json_t *ann = json_obj_child(meta, "annotations");
	json_object_set_new(ann, PARTITION_ANNOTATION, json_string(pid));
}

/* Folds one partition's response into merged (new list or Table). */
static void merge_into(json_t *merged, json_t *part, const char *pid, bool annotate)
{
	bool table = json_str(merged, "kind") && strcmp(json_str(merged, "kind"), "Table") == 0;
	json_t *dst = json_object_get(merged, table ? "rows" : "items");
	json_t *src = json_object_get(part, table ? "rows" : "items");
	size_t i;
	json_t *v;
	json_array_foreach(src, i, v) {
		if (annotate && table) {
			json_t *cells = json_object_get(v, "cells");
			if (json_is_array(cells))
				json_array_append_new(cells, json_string(pid));
		} else if (annotate) {
			annotate_item(v, pid);
		}
		json_array_append(dst, v);
	}
}

/* The resourceVersion each of the n partitions ps is asked for, from the client's
 * resourceVersion: a composite one gives each partition its own ("" for a partition it does not
 * name: one added since, which then starts from its current state with every object as ADDED,
 * as a watch without resourceVersion does, so that nothing it holds is missed); "" and "0" go
 * to every partition as is; another plain one is only meaningful to a single partition. Fills
 * ret_rvs (n new strings, "" = none) or answers the client and returns an E_* code. */
static int partition_rvs(struct call *c, struct partition **ps, size_t n, char ***ret_rvs)
{
	const char *rv = http_query(c->req, "resourceVersion");
	struct crv crv;
	crv_init(&crv);
	if (crv_is_composite(rv)) {
		const char *msg = NULL;
		if (crv_parse(rv, &crv, &msg) != 0) {
			reply_status(c->reply, E_BAD_REQUEST, "invalid resourceVersion \"%.64s\": %s", rv, msg);
			return E_BAD_REQUEST;
		}
	} else if (rv && *rv && strcmp(rv, "0") != 0 && n != 1) {
		reply_status(c->reply, E_GONE,
			     "too old resource version: %.64s is not a resourceVersion of the merged list over %zu partitions; "
			     "list again", rv, n);
		return E_GONE;
	}
	char **rvs = xcalloc(n ? n : 1, sizeof(*rvs));
	for (size_t i = 0; i < n; i++) {
		const char *v = crv_is_composite(rv) ? crv_get(&crv, ps[i]->id) : rv;
		rvs[i] = xstrdup(v ? v : "");
	}
	crv_release(&crv);
	*ret_rvs = rvs;
	return 0;
}

static void free_strv(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

/* A watch over every partition of a kind: one partition without a composite resourceVersion
 * is passed through as is; otherwise the events of all are merged into one stream whose
 * resourceVersions are composite. */
static void merged_watch(struct call *c, struct partition **ps, size_t n, bool annotate)
{
	const char *rv = http_query(c->req, "resourceVersion");
	if (n == 0) {
		reply_status(c->reply, E_UNAVAILABLE, "no partition serves this resource");
		return;
	}
	if (n == 1 && !crv_is_composite(rv)) {
		forward(c, ps[0]);
		return;
	}
	/* Events are rewritten as JSON lines: the partitions are asked for JSON (a Table when the
	 * client asked for one); a client that accepts no JSON cannot be served. */
	const char *acc = http_header(c->req, "Accept");
	if (acc && *acc && !strstr(acc, "json") && !strstr(acc, "*/*")) {
		reply_status(c->reply, E_NOT_ACCEPTABLE, "a watch across partitions is served as JSON only; accept application/json");
		return;
	}
	char **rvs = NULL;
	if (partition_rvs(c, ps, n, &rvs) != 0)
		return;
	char **paths = xcalloc(n, sizeof(*paths));
	struct merge_state *m = xmalloc(sizeof(*m));
	merge_state_init(m, annotate);
	for (size_t i = 0; i < n; i++) {
		paths[i] = upstream_path(c->req, true, rvs[i]);
		crv_set(&m->rv, ps[i]->id, rvs[i]);
	}
	struct upstream_req rq = base_req(c, paths[0]);
	rq.accept = acc && strstr(acc, "as=Table") ? "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
						   : "application/json";
	upstream_merged_watch(ps, paths, n, &rq, m, c->reply);
	free_strv(paths, n);
	free_strv(rvs, n);
}

static void fan_out(struct call *c, bool rm, bool annotate)
{
	size_t n;
	struct partition **ps = registry_partitions(c->g->reg, rm, &n);
	json_t *merged = NULL;
	char **rvs = NULL;
	struct crv list_rv;
	crv_init(&list_rv);
	if (c->rt.watch) {
		merged_watch(c, ps, n, annotate);
		goto out;
	}
	if (partition_rvs(c, ps, n, &rvs) != 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		char *path = upstream_path(c->req, true, rvs[i]);
		struct upstream_req rq = base_req(c, path);
		struct upstream_resp resp = { 0 };
		int err = upstream_partition(ps[i], &rq, &resp);
		free(path);
		if (err) {
			reply_status(c->reply, E_UNAVAILABLE, "partition %s is unavailable; the merged list would be incomplete",
				     ps[i]->id);
			upstream_resp_release(&resp);
			goto out;
		}
		json_t *j = resp.status == 200 ? json_loadb(buf_cstr(&resp.body), resp.body.len, 0, NULL) : NULL;
		if (!json_is_object(j)) {
			json_decref(j);
			relay(c, &resp); /* an error Status (or a format we cannot merge) as is */
			upstream_resp_release(&resp);
			goto out;
		}
		upstream_resp_release(&resp);
		if (!merged) {
			merged = json_deep_copy(j);
			json_t *key = json_object_get(merged, "rows") ? json_object_get(merged, "rows") : json_object_get(merged, "items");
			if (key)
				json_array_clear(key);
			else
				json_object_set_new(merged, "items", json_array());
			json_t *cols = json_object_get(merged, "columnDefinitions");
			if (annotate && json_is_array(cols))
				json_array_append_new(cols, json_pack("{s:s,s:s,s:s,s:s,s:i}", "name", "Partition", "type",
								      "string", "format", "", "description",
								      "The tenant partition storing the tenant", "priority", 0));
		}
		const char *prv = json_path_str(j, "metadata.resourceVersion");
		crv_set(&list_rv, ps[i]->id, prv && crv_partition_rv_ok(prv) ? prv : "");
		merge_into(merged, j, ps[i]->id, annotate);
		json_decref(j);
	}
	if (!merged)
		merged = json_pack("{s:s,s:s,s:{},s:[]}", "kind", "List", "apiVersion", "v1", "metadata", "items");
	json_t *meta = json_obj_child(merged, "metadata");
	json_object_del(meta, "continue");
	json_object_del(meta, "remainingItemCount");
	/* One partition keeps its own resourceVersion (what a client of that partition alone would
	 * see); several, or a client that already holds a composite one, get a composite one to
	 * list or watch from. */
	if (n > 1 || crv_is_composite(http_query(c->req, "resourceVersion"))) {
		char *crv = crv_encode(&list_rv);
		json_object_set_new(meta, "resourceVersion", json_string(crv));
		free(crv);
	}
	struct buf b = BUF_INIT;
	json_dump_buf(merged, &b);
	http_reply_set(c->reply, 200, "application/json", &b);
out:
	crv_release(&list_rv);
	free_strv(rvs, n);
	json_decref(merged);
	partitions_free(ps, n);
}

/* --- tenants -------------------------------------------------------------------------------- */
static void create_tenant(struct call *c)
{
	size_t len;
	const char *body = http_body(c->req, &len);
	json_t *obj = json_parse_limited(body, len, 32, NULL);
	const char *name = json_path_str(obj, "metadata.name");
	const char *want = json_is_object(json_path(obj, "metadata.annotations"))
				   ? json_str(json_path(obj, "metadata.annotations"), PARTITION_ANNOTATION)
				   : NULL;
	struct partition *p = NULL;
	int64_t rev = 0;
	if (!name || !dns_label_ok(name) || strcmp(name, TENANT_ALL) == 0 || strcmp(name, TENANT_SYSTEM) == 0) {
		reply_status(c->reply, E_INVALID, "metadata.name must be a DNS label other than \"all\" and \"system\"");
		goto out;
	}
	p = want ? registry_partition(c->g->reg, want) : registry_pick_tp(c->g->reg);
	if (!p || p->is_rm) {
		reply_status(c->reply, want ? E_INVALID : E_UNAVAILABLE, "%s", want ? "annotation ursa.io/partition names no tenant partition"
									 : "no tenant partition is available");
		goto out;
	}
	if (atomic_load(&p->down)) {
		reply_status(c->reply, E_UNAVAILABLE, "partition %s is unavailable", p->id);
		goto out;
	}
	int err = registry_assign(c->g->reg, name, p->id, true, &rev);
	if (err == E_ALREADY_EXISTS) {
		reply_status(c->reply, E_ALREADY_EXISTS, "tenants \"%s\" already exists", name);
		goto out;
	} else if (err) {
		reply_status(c->reply, E_UNAVAILABLE, "the gateway's registry is unavailable");
		goto out;
	}
	char *path = upstream_path(c->req, false, NULL);
	struct upstream_req rq = base_req(c, path);
	struct upstream_resp resp = { 0 };
	err = upstream_partition(p, &rq, &resp);
	free(path);
	if (err == E_TIMEOUT) {
		/* The partition may or may not have it: the reconciler settles the pending record. */
		reply_status(c->reply, E_TIMEOUT, "partition %s did not answer; the tenant may still be created", p->id);
	} else if (err || (resp.status / 100 != 2 && resp.status != 409)) {
		registry_unassign(c->g->reg, name, rev);
		if (err)
			reply_status(c->reply, E_UNAVAILABLE, "partition %s is unavailable", p->id);
		else
			relay(c, &resp);
	} else {
		/* 2xx, or 409: the partition already has it, so that is where it lives. A conflict
		 * means the reconciler confirmed it first. */
		registry_confirm(c->g->reg, name, p->id, rev);
		log_info("tenant placed", "tenant=\"%s\" partition=%s code=%d", name, p->id, resp.status);
		relay(c, &resp);
	}
	upstream_resp_release(&resp);
out:
	partition_unref(p);
	json_decref(obj);
}

/* --- nodes ---------------------------------------------------------------------------------- */
static struct partition *rm_of_node(struct call *c, const char *node)
{
	char *id = registry_node_rm(c->g->reg, node);
	if (!id) {
		reconciler_refresh_nodes(&c->g->rc);
		id = registry_node_rm(c->g->reg, node);
	}
	struct partition *p = id ? registry_partition(c->g->reg, id) : NULL;
	free(id);
	return p;
}

static void to_node(struct call *c)
{
	struct partition *p = rm_of_node(c, c->rt.node);
	if (!p) {
		reply_status(c->reply, E_NOT_FOUND, "node \"%s\" is not known to any resource manager", c->rt.node);
		return;
	}
	forward(c, p);
	partition_unref(p);
}

static void create_node_object(struct call *c)
{
	size_t len;
	const char *body = http_body(c->req, &len);
	json_t *obj = json_parse_limited(body, len, 32, NULL);
	const char *name = json_path_str(obj, "metadata.name");
	const char *zone = json_is_object(json_path(obj, "metadata.labels"))
				   ? json_str(json_path(obj, "metadata.labels"), "topology.kubernetes.io/zone")
				   : NULL;
	struct partition *p = name ? rm_of_node(c, name) : NULL;
	if (!p && zone) {
		size_t n;
		struct partition **rms = registry_partitions(c->g->reg, true, &n);
		for (size_t i = 0; i < n && !p; i++)
			if (rms[i]->zone && strcmp(rms[i]->zone, zone) == 0)
				p = registry_partition(c->g->reg, rms[i]->id);
		partitions_free(rms, n);
	}
	if (p)
		forward(c, p);
	else
		reply_status(c->reply, E_INVALID, "cannot tell which resource manager owns this object: "
						"label topology.kubernetes.io/zone names no resource manager's zone");
	partition_unref(p);
	json_decref(obj);
}

/* --- the handler ---------------------------------------------------------------------------- */
static int authenticate(struct call *c)
{
	const char *h = http_header(c->req, "Authorization");
	if (!h || strncasecmp(h, "Bearer ", 7) != 0 || !h[7])
		return E_UNAUTHORIZED;
	if (authn_token(c->g->authn, h + 7, &c->id) != 0)
		return E_UNAUTHORIZED;
	c->authed = true;
	return 0;
}



static void local(struct call *c)
{
	const char *path = http_path(c->req);
	struct buf b = BUF_INIT;
	bool ok = strcmp(path, "/livez") == 0 || registry_loaded(c->g->reg);
	buf_adds(&b, ok ? "ok" : "registry not loaded");
	http_reply_set(c->reply, ok ? 200 : 503, "text/plain", &b);
}

/* GET /metrics (authenticated callers): the gateway's stream gauges in the Prometheus text
 * format. */
static void metrics(struct call *c)
{
	struct buf b = BUF_INIT;
	buf_addf(&b,
		 "# HELP gateway_streams_open Client streams (watch, log -f) open through the gateway.\n"
		 "# TYPE gateway_streams_open gauge\ngateway_streams_open %ld\n"
		 "# HELP gateway_stream_upstreams_open Transfers from partitions feeding those streams.\n"
		 "# TYPE gateway_stream_upstreams_open gauge\ngateway_stream_upstreams_open %ld\n"
		 "# HELP gateway_stream_descriptor_budget Descriptors streams may use (RLIMIT_NOFILE less a reserve).\n"
		 "# TYPE gateway_stream_descriptor_budget gauge\ngateway_stream_descriptor_budget %ld\n"
		 "# HELP gateway_requests_in_flight Plain requests forwarded to partitions and not answered yet.\n"
		 "# TYPE gateway_requests_in_flight gauge\ngateway_requests_in_flight %ld\n",
		 upstream_streams_open(), upstream_legs_open(), upstream_stream_fd_budget(), plain_in_flight());
	struct move_stats ms;
	move_stats_get(&ms);
	buf_addf(&b,
		 "# HELP gateway_move_held_requests Requests of a moving tenant held now.\n"
		 "# TYPE gateway_move_held_requests gauge\ngateway_move_held_requests %ld\n"
		 "# HELP gateway_move_held_requests_total Requests held because their tenant was moving (429 with "
		 "X-Ursa-Tenant-Moving).\n"
		 "# TYPE gateway_move_held_requests_total counter\ngateway_move_held_requests_total %ld\n"
		 "# HELP gateway_move_held_resends_total Held requests sent again to their tenant's partition.\n"
		 "# TYPE gateway_move_held_resends_total counter\ngateway_move_held_resends_total %ld\n"
		 "# HELP gateway_move_held_expired_total Held requests whose 429 was passed on after --move-hold-seconds.\n"
		 "# TYPE gateway_move_held_expired_total counter\ngateway_move_held_expired_total %ld\n"
		 "# HELP gateway_move_hold_seconds_total Time held requests spent held, in all.\n"
		 "# TYPE gateway_move_hold_seconds_total counter\ngateway_move_hold_seconds_total %.3f\n"
		 "# HELP gateway_move_watches_bridged_total Watches continued on the partition their tenant moved to.\n"
		 "# TYPE gateway_move_watches_bridged_total counter\ngateway_move_watches_bridged_total %ld\n"
		 "# HELP gateway_move_watch_waits_total Ended tenant watches that waited for a placement change.\n"
		 "# TYPE gateway_move_watch_waits_total counter\ngateway_move_watch_waits_total %ld\n"
		 "# HELP gateway_move_watch_bridge_failures_total Continued watches the new partition refused.\n"
		 "# TYPE gateway_move_watch_bridge_failures_total counter\ngateway_move_watch_bridge_failures_total %ld\n",
		 plain_parked(), ms.held, ms.resent, ms.expired, (double)ms.held_ms / 1000.0, ms.bridged,
		 ms.bridge_waits, ms.bridge_failed);
	http_reply_set(c->reply, 200, "text/plain; version=0.0.4", &b);
}

static void dispatch(struct call *c)
{
	switch (c->rt.kind) {
	case RT_ERROR:
		if (c->rt.err == E_FORBIDDEN)
			c->deny_reason = xstrdup(c->rt.msg);
		reply_status(c->reply, c->rt.err, "%s", c->rt.msg);
		break;
	case RT_LOCAL:
		local(c);
		break;
	case RT_DISCOVERY:
		to_discovery(c);
		break;
	case RT_TENANT:
		to_tenant(c, c->rt.tenant);
		break;
	case RT_TENANT_CREATE:
		create_tenant(c);
		break;
	case RT_TENANT_LIST:
		fan_out(c, false, true);
		break;
	case RT_ALL_TENANTS:
		fan_out(c, false, false);
		break;
	case RT_NODE:
		to_node(c);
		break;
	case RT_NODE_CREATE:
		create_node_object(c);
		break;
	case RT_NODE_LIST:
		fan_out(c, true, false);
		break;
	}
}

static bool mutating(const char *m)
{
	return strcmp(m, "POST") == 0 || strcmp(m, "PUT") == 0 || strcmp(m, "PATCH") == 0 || strcmp(m, "DELETE") == 0;
}

static struct call *call_new(struct gateway *g, struct http_request *req, struct http_reply *reply)
{
	struct call *c = xcalloc(1, sizeof(*c));
	c->g = g;
	c->req = req;
	c->reply = reply;
	return c;
}

/* The audit line (mutating and refused requests) and the debug line, then frees c. The reply must be
 * final and still valid. */
static void call_end(struct call *c)
{
	const char *method = http_method(c->req), *path = http_path(c->req);
	int code = http_reply_status(c->reply);
	if (mutating(method) || code == 403)
		audit_log(c->g->audit, c->authed ? c->id.user : NULL, c->authed ? c->id.tenant : NULL, method, path, code,
			  mono_us() - http_started_us(c->req), code == 403 ? (c->deny_reason ? c->deny_reason : "forbidden") : NULL);
	log_debug("request", "method=%s path=\"%s\" route=%s code=%d", method, path, route_kind_name(c->rt.kind),
		  http_reply_status(c->reply));
	route_release(&c->rt);
	free(c->assertion);
	free(c->path);
	free(c->deny_reason);
	partition_unref(c->p);
	if (c->authed)
		identity_release(&c->id);
	free(c);
}

/* A tenant's prefix (ursa/path.h) dropped from the request's path: the tenant it names, or NULL. */
static char *client_prefix_strip(struct http_request *req)
{
	const char *rest;
	char *t = path_client_prefix(http_path(req), &rest);
	if (t)
		http_request_set_path(req, rest);
	return t;
}

/* Authentication, /metrics, routing, the tenant's rate limit: none of it blocks. True when the
 * request goes on to dispatch; false when c->reply holds the answer. */
static bool admit(struct call *c)
{
	struct http_request *req = c->req;
	struct http_reply *reply = c->reply;
	const char *method = http_method(req), *path = http_path(req);
	if (strlen(path) > MAX_PATH) {
		reply_status(reply, E_BAD_REQUEST, "the path is too long");
		return false;
	}
	char *prefix_tenant = client_prefix_strip(req);
	path = http_path(req);
	int err = authenticate(c);
	if (prefix_tenant && !err && strcmp(prefix_tenant, c->id.tenant) != 0) {
		reply_status(reply, E_FORBIDDEN, "the server URL names tenant \"%s\", the credential is of tenant \"%s\"",
			     prefix_tenant, c->id.tenant);
		free(prefix_tenant);
		return false;
	}
	free(prefix_tenant);
	if (strcmp(path, "/metrics") == 0 && strcmp(method, "GET") == 0) {
		if (err)
			reply_status(reply, E_UNAUTHORIZED, "a valid bearer token is required");
		else
			metrics(c);
		c->rt.kind = RT_LOCAL;
		return false;
	}
	gw_route(method, path, truthy(http_query(req, "watch")), c->authed ? &c->id : NULL, &c->rt);
	if (c->rt.kind != RT_LOCAL && err) {
		reply_status(reply, E_UNAUTHORIZED, "a valid bearer token is required");
		return false;
	}
	/* the region's administrators (system:masters) are exempt, as Kubernetes' priority and
	 * fairness exempts them: an operator's tenant creations and a region-wide watch must not
	 * queue behind one tenant's budget */
	if (c->rt.kind != RT_LOCAL && c->rt.kind != RT_ERROR && !identity_is_system_admin(&c->id)) {
		int wait = limiter_check(&c->g->lim, c->id.tenant, mono_us());
		if (wait) {
			char s[24];
			snprintf(s, sizeof(s), "%d", wait);
			http_reply_header(reply, "Retry-After", s);
			reply_status(reply, E_TOO_MANY, "tenant \"%s\" is over its request rate; retry in %d s", c->id.tenant,
				     wait);
			return false;
		}
	}
	return true;
}

static void on_forwarded(void *ud, int err, struct upstream_resp *resp);

/* A held call is done being held (answered now): its time goes to the counters. */
static void hold_end(struct call *c, bool expired)
{
	if (!c->held_since_ms)
		return;
	move_count_hold(0, 0, expired, (long)(mono_ms() - c->held_since_ms));
	c->held_since_ms = 0;
}

/* Sends a held call again, to p (taken; NULL: the tenant is gone from the registry). */
static void resend(struct call *c, struct partition *p)
{
	if (!p) {
		hold_end(c, false);
		reply_status(c->reply, E_NOT_FOUND, "tenant \"%s\" is not known to this region", c->rt.tenant);
		struct http_deferred *d = c->deferred;
		call_end(c);
		http_deferred_finish(d);
		return;
	}
	move_count_hold(0, 1, 0, 0);
	partition_unref(c->p);
	c->p = p;
	plain_forward(p, &c->rq, on_forwarded, c);
}

/* The park of a held call ended: its tenant's placement changed or its wait passed (send it again
 * to the tenant's partition), or the gateway is stopping (answer as the partition did). */
static void on_hold_over(void *ud, bool cancelled)
{
	struct call *c = ud;
	if (!cancelled) {
		resend(c, registry_tenant_partition(c->g->reg, c->rt.tenant));
		return;
	}
	hold_end(c, true);
	http_reply_header(c->reply, "Retry-After", "1");
	http_reply_header(c->reply, MOVING_HEADER, c->rt.tenant);
	reply_status(c->reply, E_TOO_MANY, "tenant \"%s\" is moving to another partition; retry", c->rt.tenant);
	struct http_deferred *d = c->deferred;
	call_end(c);
	http_deferred_finish(d);
}

/* A 429 with MOVING_HEADER (loop thread): true when the call is held (parked, or sent again at
 * once); false when the answer is to be relayed (with the headers a client retries by). */
static bool hold(struct call *c, struct upstream_resp *resp)
{
	int64_t now = mono_ms(), budget = c->g->o.move_hold_s * 1000;
	const char *tenant = c->rt.kind == RT_TENANT ? c->rt.tenant : NULL;
	struct partition *cur = tenant ? registry_tenant_partition(c->g->reg, tenant) : NULL;
	enum move_hold d = move_hold_decide(resp->status, resp->moving, tenant, c->p->id, cur ? cur->id : NULL,
					    c->held_since_ms ? now - c->held_since_ms : 0, budget);
	if (d == MOVE_PASS) {
		partition_unref(cur);
		hold_end(c, c->held_since_ms != 0);
		http_reply_header(c->reply, "Retry-After", "1");
		http_reply_header(c->reply, MOVING_HEADER, resp->moving);
		return false;
	}
	if (!c->held_since_ms) {
		c->held_since_ms = now;
		move_count_hold(1, 0, 0, 0);
		log_debug("request held", "tenant=\"%s\" partition=%s method=%s", tenant, c->p->id, c->rq.method);
	}
	if (d == MOVE_RESEND) {
		resend(c, cur);
		return true;
	}
	partition_unref(cur);
	int64_t due = now + MOVE_HOLD_STEP_MS, end = c->held_since_ms + budget;
	plain_park(c->rt.tenant, due < end ? due : end, on_hold_over, c);
	return true;
}

/* The partition answered (loop thread): relay, then finish the client's deferred reply. A 429
 * for a moving tenant may hold the call instead (hold). */
static void on_forwarded(void *ud, int err, struct upstream_resp *resp)
{
	struct call *c = ud;
	if (!err && resp->status == 429 && resp->moving && hold(c, resp))
		return;
	hold_end(c, false);
	if (err == E_UNAVAILABLE)
		reply_status(c->reply, E_UNAVAILABLE, "partition %s is unavailable", c->p->id);
	else if (err)
		reply_status(c->reply, E_TIMEOUT, "partition %s did not answer in time", c->p->id);
	else
		relay(c, resp);
	struct http_deferred *d = c->deferred;
	call_end(c);
	http_deferred_finish(d);
}

/* forward() without a worker: p is taken. The call ends in on_forwarded (or here). */
static void forward_async(struct call *c, struct partition *p)
{
	c->p = p;
	if (atomic_load(&p->down)) {
		reply_status(c->reply, E_UNAVAILABLE, "partition %s is unavailable", p->id);
		call_end(c);
		return;
	}
	c->path = upstream_path(c->req, false, NULL);
	c->rq = base_req(c, c->path);
	c->deferred = http_reply_defer(c->reply);
	plain_forward(p, &c->rq, on_forwarded, c);
}

/* The partition an admitted request goes to when that needs no blocking work and the reply is
 * not a stream (a new ref), or NULL: the request goes to a worker. Answers (and sets
 * *ret_answered) an unknown tenant. */
static struct partition *plain_target(struct call *c, bool *ret_answered)
{
	*ret_answered = false;
	if (wants_stream(c) && strcmp(http_method(c->req), "GET") == 0)
		return NULL;
	if (c->rt.stream && tunnel_is_upgrade(c->req))
		return NULL; /* the tunnel dials the partition: a worker's job */
	if (c->rt.kind == RT_TENANT) {
		struct partition *p = registry_tenant_partition(c->g->reg, c->rt.tenant);
		if (!p) {
			reply_status(c->reply, E_NOT_FOUND, "tenant \"%s\" is not known to this region", c->rt.tenant);
			*ret_answered = true;
		}
		return p;
	}
	if (c->rt.kind == RT_NODE) {
		/* A node not in the map yet needs a refresh from the resource managers (blocking). */
		char *id = registry_node_rm(c->g->reg, c->rt.node);
		struct partition *p = id ? registry_partition(c->g->reg, id) : NULL;
		free(id);
		return p;
	}
	return NULL;
}

static bool on_fast(void *ud, struct http_request *req, struct http_reply *reply)
{
	struct call *c = call_new(ud, req, reply);
	if (!admit(c)) {
		call_end(c);
		return true;
	}
	if (c->rt.kind == RT_LOCAL || c->rt.kind == RT_ERROR) {
		dispatch(c);
		call_end(c);
		return true;
	}
	bool answered;
	struct partition *p = plain_target(c, &answered);
	if (answered) {
		call_end(c);
		return true;
	}
	if (!p) {
		http_request_set_data(req, c); /* admitted: the worker dispatches it */
		return false;
	}
	forward_async(c, p);
	return true;
}

static void on_request(void *ud, struct http_request *req, struct http_reply *reply)
{
	struct call *c = http_request_data(req);
	if (!c) {
		c = call_new(ud, req, reply);
		if (!admit(c))
			goto out;
	}
	dispatch(c);
out:
	call_end(c);
}

/* The registry applied a change of tenant's record (NULL: a reload): its held requests go
 * again now (registry_on_tenant_change's thread, under its lock: plain_unpark only queues). */
static void on_placement_change(void *ud, const char *tenant)
{
	(void)ud;
	plain_unpark(tenant);
}

struct gateway *gateway_start(const struct gw_options *o, char **ret_err)
{
	struct gateway *g = xcalloc(1, sizeof(*g));
	g->o = *o;
	upstream_init(o->partition_ca);
	if (authn_new(o->token_file, o->signing_pub, &g->authn, ret_err) != 0)
		goto fail;
	if (o->partition_token_file) {
		char *tok = auth_read_token_file(o->partition_token_file, ret_err);
		if (!tok)
			goto fail;
		g->own_auth = xasprintf("Bearer %s", tok);
		free(tok);
	}
	if (o->identity_key && idkey_load(o->identity_key, &g->idkey, ret_err) != 0)
		goto fail;
	g->etcd = etcd_new(o->etcd_servers, NULL);
	if (!g->etcd) {
		*ret_err = xasprintf("bad --etcd-servers %s", o->etcd_servers);
		goto fail;
	}
	g->reg = registry_new(g->etcd, o->etcd_prefix);
	registry_on_tenant_change(g->reg, on_placement_change, NULL);
	if (registry_start(g->reg) != 0) {
		*ret_err = xasprintf("cannot load the registry from etcd %s", o->etcd_servers);
		goto fail;
	}
	limiter_init(&g->lim, (double)o->tenant_qps, (double)o->tenant_burst);
	g->audit = audit_open(o->audit_path, o->audit_max_mb << 20);
	g->rc = (struct reconciler){ .reg = g->reg, .auth = g->own_auth, .resync_ms = o->resync_s * 1000,
				     .sweep_ms = o->sweep_s * 1000, .pending_grace_ms = o->pending_grace_s * 1000,
				     .mirror_ms = o->crd_mirror_s * 1000 };
	if (reconciler_start(&g->rc) != 0) {
		*ret_err = xstrdup("cannot start the reconciler");
		goto fail;
	}
	if (streams_start() != 0) {
		*ret_err = xstrdup("cannot start the stream loop");
		reconciler_stop(&g->rc);
		goto fail;
	}
	/* The plain-request loop drives the HTTP server (external mode): a plain request is
	 * read, forwarded and answered on that one thread. */
	struct http_server_options ho = { .listen = o->listen, .tls_cert = o->tls_cert, .tls_key = o->tls_key,
					  .threads = (unsigned)o->threads, .fast = on_fast, .fast_ud = g, .external = true,
					  .wake = plain_wake, .reuse_port = o->workers > 1 };
	g->http = http_server_start(&ho, on_request, g, ret_err);
	if (!g->http) {
		streams_stop();
		reconciler_stop(&g->rc);
		goto fail;
	}
	if (plain_start(g->http) != 0) {
		*ret_err = xstrdup("cannot start the request loop");
		http_server_stop(g->http);
		streams_stop();
		reconciler_stop(&g->rc);
		goto fail;
	}
	log_info("serving", "listen=%s etcd=%s prefix=%s", o->listen, o->etcd_servers, o->etcd_prefix);
	return g;
fail:
	registry_free(g->reg);
	etcd_free(g->etcd);
	authn_free(g->authn);
	idkey_free(g->idkey);
	free(g->own_auth);
	free(g);
	return NULL;
}

void gateway_stop(struct gateway *g)
{
	/* The loop closes the listening socket and gives forwards still running 10 s; then the
	 * server stops here (it cannot stop with a deferred reply's connection suspended). */
	plain_stop();
	http_server_stop(g->http);
	streams_stop(); /* after the server: clients gone, then their partitions' transfers */
	reconciler_stop(&g->rc);
	oapi_cache_clear();
	disco_cache_clear();
	registry_free(g->reg);
	etcd_free(g->etcd);
	authn_free(g->authn);
	idkey_free(g->idkey);
	limiter_release(&g->lim);
	audit_close(g->audit);
	free(g->own_auth);
	free(g);
}
