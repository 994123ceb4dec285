/* Service cluster IPs at admission: every Service of a ClusterIP, NodePort or LoadBalancer type
 * gets spec.clusterIP (and clusterIPs) from its tenant's service range, the serviceCIDR of the
 * tenant's Network `default` (IPNET_DEFAULT_SERVICE_CIDR until it exists); headless ("None")
 * and a free address the client chose are honoured; a taken or out-of-range address is a 422.
 * NodePort and LoadBalancer services are refused (422) for tenants other than `system`.
 *
 * Which addresses are taken is kept in memory: a follower (follow.c) of the services and
 * networks watch caches keeps a bitmap per tenant (one bit per address of its range), and an
 * address handed out at admission is reserved until the watch brings the service holding it
 * (or the create fails: svcip_release, or RESV_TTL_MS pass), so creates racing each other never
 * get the same address. IPNET_FRONT_DOOR_IP (10.96.0.1) is never handed out: CRI pods reach the
 * region's front door there (ursa-cni's DNAT). Everything sits under one mutex. As for quotas (quota.c), this is exact
 * with one API server per partition; with several, two servers could hand out one address
 * within the time an event takes to reach the other (docs/architecture.md says why this and
 * not an etcd allocation object). */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "internal.h"
#include "ursa/ipnet.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/strmap.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define RESV_TTL_MS 30000

struct tnet {
	struct ipv4_net net;
	uint8_t *bits;
	uint32_t cursor;
};
struct svcrec {
	char *tenant;
	uint32_t ip;
};
struct svcip {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool synced, relisting[2];
	struct strmap tnets; /* tenant -> struct tnet */
	struct strmap svcs;  /* service etcd key -> struct svcrec */
	struct strmap cidrs; /* tenant -> serviceCIDR of its Network "default" (string) */
	struct strmap resv;  /* "tenant/ip" -> int64_t * mono ms the reservation was made */
	struct served *fsv[2]; /* services, networks (NULL when not served) */
	size_t nf;
	struct follower *f;
};

static void tnet_free(void *v)
{
	struct tnet *t = v;
	if (t)
		free(t->bits);
	free(t);
}

static void svcrec_free(void *v)
{
	struct svcrec *r = v;
	if (r)
		free(r->tenant);
	free(r);
}

/* The front door's address (IPNET_FRONT_DOOR_IP), taken in every range holding it. */
static uint32_t front_door_ip(void)
{
	uint32_t ip = 0;
	ipv4_parse(IPNET_FRONT_DOOR_IP, &ip);
	return ip;
}

static void mark(struct tnet *t, uint32_t ip, bool on)
{
	if (!ipv4_net_contains(t->net, ip) || (!on && ip == front_door_ip()))
		return;
	uint32_t off = ip - t->net.base;
	if (on)
		t->bits[off / 8] |= (uint8_t)(1u << (off % 8));
	else
		t->bits[off / 8] &= (uint8_t) ~(1u << (off % 8));
}

/* The tenant's range, built from the services known (under mu). */
static struct tnet *tnet_get(struct svcip *a, const char *tenant)
{
	struct strmap_ent *e = strmap_get(&a->tnets, tenant);
	if (e)
		return e->val;
	struct tnet *t = xcalloc(1, sizeof(*t));
	struct strmap_ent *c = strmap_get(&a->cidrs, tenant);
	if (!c || ipv4_cidr_parse(c->val, &t->net, NULL) < 0 || t->net.prefix < IPNET_MIN_PREFIX ||
	    t->net.prefix > IPNET_MAX_PREFIX)
		ipv4_cidr_parse(IPNET_DEFAULT_SERVICE_CIDR, &t->net, NULL);
	t->bits = xcalloc(ipv4_net_size(t->net) / 8, 1);
	mark(t, front_door_ip(), true);
	size_t it;
	for (struct strmap_ent *s = strmap_next(&a->svcs, NULL, &it); s; s = strmap_next(&a->svcs, s, &it)) {
		struct svcrec *r = s->val;
		if (!strcmp(r->tenant, tenant))
			mark(t, r->ip, true);
	}
	strmap_put(&a->tnets, tenant, NULL)->val = t;
	return t;
}

static void resv_key(const char *tenant, uint32_t ip, struct buf *out)
{
	buf_addf(out, "%s/", tenant);
	ipv4_format(ip, out);
}

static void resv_drop(struct svcip *a, const char *tenant, uint32_t ip)
{
	struct buf k = BUF_INIT;
	resv_key(tenant, ip, &k);
	void *v = NULL;
	if (strmap_del(&a->resv, k.ptr, &v))
		free(v);
	buf_release(&k);
}

static void forget_service(struct svcip *a, const char *key)
{
	void *v = NULL;
	if (!strmap_del(&a->svcs, key, &v))
		return;
	struct svcrec *r = v;
	struct strmap_ent *e = strmap_get(&a->tnets, r->tenant);
	if (e)
		mark(e->val, r->ip, false);
	svcrec_free(r);
}

static void on_event(void *ud, size_t i, enum wev_type type, struct cobj *o)
{
	struct svcip *a = ud;
	json_t *obj = type == WEV_DELETED ? NULL : json_loadb(o->json, o->json_len, 0, NULL);
	pthread_mutex_lock(&a->mu);
	if (i == 0) {
		forget_service(a, o->key);
		uint32_t ip;
		const char *cip = json_path_str(obj, "spec.clusterIP");
		if (obj && cip && ipv4_parse(cip, &ip) == 0) {
			struct svcrec *r = xcalloc(1, sizeof(*r));
			r->tenant = xstrdup(o->tenant);
			r->ip = ip;
			strmap_put(&a->svcs, o->key, NULL)->val = r;
			struct strmap_ent *e = strmap_get(&a->tnets, o->tenant);
			if (e)
				mark(e->val, ip, true);
			resv_drop(a, o->tenant, ip);
		}
	} else if (!strcmp(o->name, "default")) {
		const char *cidr = json_path_str(obj, "spec.serviceCIDR");
		struct strmap_ent *c = strmap_get(&a->cidrs, o->tenant);
		if (!c || !cidr || strcmp(c->val, cidr)) {
			void *v = NULL;
			if (strmap_del(&a->cidrs, o->tenant, &v))
				free(v);
			if (cidr)
				strmap_put(&a->cidrs, o->tenant, NULL)->val = xstrdup(cidr);
			if (strmap_del(&a->tnets, o->tenant, &v)) /* rebuilt on next use, over the new range */
				tnet_free(v);
		}
	}
	pthread_mutex_unlock(&a->mu);
	json_decref(obj);
}

static void on_reset(void *ud, size_t i)
{
	struct svcip *a = ud;
	pthread_mutex_lock(&a->mu);
	a->relisting[i] = true;
	if (i == 0)
		strmap_release(&a->svcs, svcrec_free), strmap_init(&a->svcs);
	else
		strmap_release(&a->cidrs, free), strmap_init(&a->cidrs);
	strmap_release(&a->tnets, tnet_free);
	strmap_init(&a->tnets);
	pthread_mutex_unlock(&a->mu);
}

static void on_listed(void *ud, size_t i)
{
	struct svcip *a = ud;
	pthread_mutex_lock(&a->mu);
	a->relisting[i] = false;
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
}

static void on_synced(void *ud)
{
	struct svcip *a = ud;
	pthread_mutex_lock(&a->mu);
	a->synced = true;
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
}

struct svcip *svcip_start(struct apiserver *s)
{
	struct served *svc = served_by_plural(s, "services"), *net = served_by_plural(s, "networks");
	if (!svc || !svc->cache)
		return NULL;
	struct svcip *a = xcalloc(1, sizeof(*a));
	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->cv, NULL);
	strmap_init(&a->tnets);
	strmap_init(&a->svcs);
	strmap_init(&a->cidrs);
	strmap_init(&a->resv);
	a->fsv[a->nf++] = svc;
	if (net && net->cache)
		a->fsv[a->nf++] = net;
	static const struct follower_ops ops = { on_event, on_reset, on_listed, on_synced };
	if (!(a->f = follower_start(a->fsv, a->nf, &ops, a)))
		abort();
	return a;
}

void svcip_stop(struct svcip *a)
{
	if (!a)
		return;
	follower_stop(a->f);
	strmap_release(&a->tnets, tnet_free);
	strmap_release(&a->svcs, svcrec_free);
	strmap_release(&a->cidrs, free);
	strmap_release(&a->resv, free);
	pthread_mutex_destroy(&a->mu);
	pthread_cond_destroy(&a->cv);
	free(a);
}

/* ---- admission ---------------------------------------------------------------------------- */

static void reply_field(struct req *q, const json_t *obj, int err, const char *reason, const char *field,
			const char *msg)
{
	const char *name = json_path_str(obj, "metadata.name");
	struct buf m = BUF_INIT;
	buf_addf(&m, "Service \"%s\" is %s: %s: %s", name ? name : "", err == E_INVALID ? "invalid" : "forbidden",
		 field, msg);
	json_t *causes = json_pack("[{s:s,s:s,s:s}]", "reason", reason, "message", msg, "field", field);
	json_t *st = status_object(err, buf_cstr(&m), name, "Service", causes);
	reply_json(q, err == E_INVALID ? 422 : 403, st);
	json_decref(st);
	buf_release(&m);
}

struct taken_ctx {
	struct svcip *a;
	const char *tenant;
	uint32_t base;
	int64_t now;
};

/* Whether an address is reserved by a create still in flight (expired reservations go). */
static bool reserved(void *ud, uint32_t off)
{
	struct taken_ctx *c = ud;
	if (c->a->resv.n == 0)
		return false;
	struct buf k = BUF_INIT;
	resv_key(c->tenant, c->base + off, &k);
	struct strmap_ent *e = strmap_get(&c->a->resv, k.ptr);
	bool r = e && c->now - *(int64_t *)e->val < RESV_TTL_MS;
	if (e && !r) {
		void *v = NULL;
		strmap_del(&c->a->resv, k.ptr, &v);
		free(v);
	}
	buf_release(&k);
	return r;
}

static void set_ips(json_t *spec, const char *ip)
{
	json_object_set_new(spec, "clusterIP", json_string(ip));
	json_object_set_new(spec, "clusterIPs", json_pack("[s]", ip));
	if (strcmp(ip, "None")) {
		json_object_set_new(spec, "ipFamilies", json_pack("[s]", "IPv4"));
		json_object_set_new(spec, "ipFamilyPolicy", json_string("SingleStack"));
	}
}

int admit_service(struct req *q, json_t *obj, const json_t *old)
{
	struct svcip *a = q->s->svcip;
	q->svcip_resv = 0;
	if (q->res->r->group[0] || strcmp(q->res->r->plural, "services") || !q->tenant)
		return 0;
	json_t *spec = json_object_get(obj, "spec");
	if (!json_is_object(spec))
		return 0;
	const char *type = json_str(spec, "type") ? json_str(spec, "type") : "ClusterIP";
	if ((!strcmp(type, "NodePort") || !strcmp(type, "LoadBalancer")) && strcmp(q->tenant, TENANT_SYSTEM)) {
		struct buf m = BUF_INIT;
		buf_addf(&m, "Unsupported value: \"%s\": %s services are not available to tenants: a node's ports "
			 "are shared by every tenant running pods on it, and the region has no design for sharing "
			 "them yet; use a ClusterIP service", type, type);
		reply_field(q, obj, E_INVALID, "FieldValueNotSupported", "spec.type", buf_cstr(&m));
		buf_release(&m);
		return -1;
	}
	if (!strcmp(type, "ExternalName")) {
		json_object_del(spec, "clusterIPs");
		return 0;
	}
	const char *cip = json_str(spec, "clusterIP"), *old_cip = json_path_str(old, "spec.clusterIP");
	if (old_cip && *old_cip && (!cip || !*cip || !strcmp(cip, old_cip))) {
		/* an update keeps the address (an apply that leaves it out too) */
		const json_t *ospec = json_object_get(old, "spec");
		static const char *const keep[] = { "clusterIPs", "ipFamilies", "ipFamilyPolicy" };
		json_object_set_new(spec, "clusterIP", json_string(old_cip));
		for (size_t i = 0; i < ARRAY_SIZE(keep); i++)
			if (json_object_get(ospec, keep[i]) && !json_object_get(spec, keep[i]))
				json_object_set(spec, keep[i], json_object_get(ospec, keep[i]));
		return 0;
	}
	if (cip && !strcmp(cip, "None")) {
		set_ips(spec, "None");
		return 0;
	}
	if (!a)
		return 0;
	uint32_t want = 0;
	if (cip && *cip && ipv4_parse(cip, &want) < 0)
		return 0; /* validation said so already */
	struct buf msg = BUF_INIT, ipb = BUF_INIT;
	int rc = 0;
	pthread_mutex_lock(&a->mu);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	while ((!a->synced || a->relisting[0] || a->relisting[1]) &&
	       pthread_cond_timedwait(&a->cv, &a->mu, &ts) == 0)
		;
	if (!a->synced || a->relisting[0] || a->relisting[1]) {
		pthread_mutex_unlock(&a->mu);
		reply_status(q, E_UNAVAILABLE, "the services' addresses are not known yet; please retry");
		return -1;
	}
	struct tnet *t = tnet_get(a, q->tenant);
	struct taken_ctx tc = { a, q->tenant, t->net.base, mono_ms() };
	uint32_t ip = 0;
	if (want) {
		uint32_t off = want - t->net.base;
		if (!ipv4_net_usable(t->net, want)) {
			buf_addf(&msg, "Invalid value: []string{\"%s\"}: failed to allocate IP %s: provided IP is not "
				 "in the valid range. The range of valid IPs is ", cip, cip);
			ipv4_format(t->net.base, &msg);
			buf_addf(&msg, "/%d", t->net.prefix);
			rc = -1;
		} else if (want == front_door_ip()) {
			buf_addf(&msg, "Invalid value: []string{\"%s\"}: failed to allocate IP %s: provided IP is "
				 "reserved for the region's front door (the kubernetes service address)", cip, cip);
			rc = -1;
		} else if ((t->bits[off / 8] & (1u << (off % 8))) || reserved(&tc, off)) {
			buf_addf(&msg, "Invalid value: []string{\"%s\"}: failed to allocate IP %s: provided IP is "
				 "already allocated", cip, cip);
			rc = -1;
		} else {
			ip = want;
		}
	} else {
		uint32_t off = ipv4_range_next_free(t->bits, ipv4_net_size(t->net), t->cursor, reserved, &tc);
		if (off == 0) {
			rc = -2;
		} else {
			ip = t->net.base + off;
			t->cursor = off + 1;
		}
	}
	if (ip) {
		struct buf k = BUF_INIT;
		resv_key(q->tenant, ip, &k);
		int64_t *born = xmalloc(sizeof(*born));
		*born = tc.now;
		struct strmap_ent *e = strmap_put(&a->resv, k.ptr, NULL);
		free(e->val);
		e->val = born;
		buf_release(&k);
		q->svcip_resv = ip;
	}
	pthread_mutex_unlock(&a->mu);
	if (rc == -1) {
		reply_field(q, obj, E_INVALID, "FieldValueInvalid", "spec.clusterIPs", buf_cstr(&msg));
	} else if (rc == -2) {
		reply_status(q, E_INTERNAL, "Internal error occurred: failed to allocate a serviceIP: range is full");
		rc = -1;
	} else {
		ipv4_format(ip, &ipb);
		set_ips(spec, ipb.ptr);
	}
	buf_release(&msg);
	buf_release(&ipb);
	return rc;
}

void svcip_release(struct req *q, const json_t *obj)
{
	(void)obj;
	struct svcip *a = q->s->svcip;
	if (!a || !q->svcip_resv)
		return;
	pthread_mutex_lock(&a->mu);
	resv_drop(a, q->tenant, q->svcip_resv);
	pthread_mutex_unlock(&a->mu);
	q->svcip_resv = 0;
}
