/* Background work of a gateway, on one thread:
 *  - health checks: GET <endpoint>/readyz of every partition each second; two failures in a
 *    row open the partition's circuit (requests for it get 503 at once), one success closes it;
 *  - every resync period: the node -> resource manager map (listing each RM's nodes), and the
 *    tenant map against the tenant partitions: tenants a TP has but the map lacks are adopted,
 *    pending assignments are confirmed when the TP has the tenant or dropped after the grace
 *    period when it does not, and ready assignments whose tenant is gone are removed.
 * Every gateway runs this; the writes are conditional, so several gateways agree. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "gw.h"
#include "reconcile.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

static void check_health(struct partition *p)
{
	bool ok = false;
	for (size_t i = 0; i < p->nendpoints && !ok; i++) {
		struct upstream_req rq = { .method = "GET", .path = "/readyz", .timeout_ms = 1000 };
		struct upstream_resp resp = { 0 };
		if (upstream_do(p->endpoints[i], &rq, &resp) == 0 && resp.status == 200) {
			ok = true;
			atomic_store(&p->next_ep, (int)i);
		}
		upstream_resp_release(&resp);
	}
	if (ok) {
		atomic_store(&p->fails, 0);
		if (atomic_exchange(&p->down, false))
			log_info("partition up", "partition=%s", p->id);
		return;
	}
	if (atomic_fetch_add(&p->fails, 1) + 1 >= 2 && !atomic_exchange(&p->down, true))
		log_warn("partition down", "partition=%s", p->id);
}

/* GET path from p with the gateway's own token: parsed JSON (new ref) or NULL. */
static json_t *list_from(struct reconciler *rc, struct partition *p, const char *path)
{
	struct upstream_req rq = { .method = "GET", .path = path, .authorization = rc->auth, .timeout_ms = 10000 };
	struct upstream_resp resp = { 0 };
	json_t *j = NULL;
	if (upstream_partition(p, &rq, &resp) == 0 && resp.status == 200)
		j = json_loadb(buf_cstr(&resp.body), resp.body.len, 0, NULL);
	upstream_resp_release(&resp);
	return j;
}

static void sync_nodes(struct reconciler *rc, struct partition *rm)
{
	json_t *list = list_from(rc, rm, "/api/v1/nodes");
	if (!list)
		return;
	json_t *items = json_object_get(list, "items");
	size_t n = 0, i;
	char **names = xcalloc(json_array_size(items) + 1, sizeof(char *));
	json_t *it;
	json_array_foreach(items, i, it) {
		const char *name = json_path_str(it, "metadata.name");
		if (name)
			names[n++] = xstrdup(name);
	}
	registry_set_nodes(rc->reg, rm->id, names, n);
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	json_decref(list);
}

static void sync_tenants(struct reconciler *rc, struct partition *tp, const struct strmap *recs)
{
	json_t *list = list_from(rc, tp, "/api/v1/tenants");
	if (!list)
		return;
	struct strmap have;
	strmap_init(&have);
	size_t i, it;
	json_t *t;
	json_array_foreach(json_object_get(list, "items"), i, t) {
		const char *name = json_path_str(t, "metadata.name");
		if (!name)
			continue;
		strmap_put(&have, name, NULL);
		struct strmap_ent *e = strmap_get(recs, name);
		struct tenant_rec *rec = e ? e->val : NULL;
		int64_t rev = 0;
		if (!rec) {
			if (registry_assign(rc->reg, name, tp->id, false, &rev) == 0)
				log_info("tenant adopted", "tenant=\"%s\" partition=%s", name, tp->id);
		} else if (rec->pending && strcmp(rec->partition, tp->id) == 0) {
			if (registry_confirm(rc->reg, name, tp->id, rec->mod_rev) == 0)
				log_info("tenant assignment confirmed", "tenant=\"%s\" partition=%s", name, tp->id);
		}
	}
	int64_t now = now_ms();
	for (struct strmap_ent *e = strmap_next(recs, NULL, &it); e; e = strmap_next(recs, e, &it)) {
		struct tenant_rec *rec = e->val;
		if (strcmp(rec->partition, tp->id) != 0 || strmap_get(&have, e->key) ||
		    strcmp(e->key, TENANT_SYSTEM) == 0)
			continue;
		if (rec->pending && now - rec->since_ms < rc->pending_grace_ms)
			continue;
		if (registry_unassign(rc->reg, e->key, rec->mod_rev) == 0)
			log_info("tenant assignment removed", "tenant=\"%s\" partition=%s pending=%s", e->key, tp->id,
				 rec->pending ? "true" : "false");
	}
	strmap_release(&have, NULL);
	json_decref(list);
}

static void resync(struct reconciler *rc)
{
	size_t n;
	struct partition **rms = registry_partitions(rc->reg, true, &n);
	for (size_t i = 0; i < n; i++)
		if (!atomic_load(&rms[i]->down))
			sync_nodes(rc, rms[i]);
	partitions_free(rms, n);
	struct strmap recs;
	registry_tenants_snapshot(rc->reg, &recs);
	struct partition **tps = registry_partitions(rc->reg, false, &n);
	for (size_t i = 0; i < n; i++)
		if (!atomic_load(&tps[i]->down))
			sync_tenants(rc, tps[i], &recs);
	partitions_free(tps, n);
	strmap_release(&recs, tenant_rec_free);
}

void reconciler_refresh_nodes(struct reconciler *rc)
{
	size_t n;
	struct partition **rms = registry_partitions(rc->reg, true, &n);
	for (size_t i = 0; i < n; i++)
		if (!atomic_load(&rms[i]->down))
			sync_nodes(rc, rms[i]);
	partitions_free(rms, n);
}

static void *rc_main(void *arg)
{
	struct reconciler *rc = arg;
	int64_t next_resync = 0;
	while (!atomic_load(&rc->stop)) {
		registry_resync_if_needed(rc->reg);
		size_t n;
		struct partition **all = registry_partitions(rc->reg, false, &n);
		for (size_t i = 0; i < n; i++)
			check_health(all[i]);
		partitions_free(all, n);
		all = registry_partitions(rc->reg, true, &n);
		for (size_t i = 0; i < n; i++)
			check_health(all[i]);
		partitions_free(all, n);
		if (mono_ms() >= next_resync) {
			resync(rc);
			next_resync = mono_ms() + rc->resync_ms;
		}
		for (int i = 0; i < 10 && !atomic_load(&rc->stop); i++)
			nanosleep(&(struct timespec){ 0, 100 * 1000 * 1000 }, NULL);
	}
	return NULL;
}

int reconciler_start(struct reconciler *rc)
{
	atomic_store(&rc->stop, false);
	return pthread_create(&rc->thread, NULL, rc_main, rc) == 0 ? 0 : E_INTERNAL;
}

void reconciler_stop(struct reconciler *rc)
{
	atomic_store(&rc->stop, true);
	pthread_join(rc->thread, NULL);
}
