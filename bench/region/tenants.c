/* ursa-region tenants: creates tenants <prefix>-00001.. through the front door with the admin
 * token, --concurrency at a time; a tenant that exists (409) is fine. Each is done once its
 * `default` namespace answers the admin, and then (when region.env names SIGNING_KEY) its own
 * administrator: user "loader" in group ursa:tenant-admins, with a token signed here as `ursa-region
 * load` signs it, must read it three times in a row (a new tenant's RBAC takes a while to reach
 * every API server; the load should not meet those 403s): every tenant with --check 0, else an
 * evenly spread sample of --check of them (default 500: each check opens a TLS connection of its
 * own through HAProxy, which cost more than the create itself; the load lets each of its active
 * tenants' users in before it starts anyway). Each wait is polled for at most --wait s.
 * Progress every 5 s; ends with "RESULT {json}" (created, existed, failed, seconds, rate, and
 * user_ready_p50_ms/p99_ms/max_ms: from the create to its administrator let in). Exit 1 if any
 * failed. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include "region/driver.h"
#include "ursa/auth.h"
#include "ursa/rbac.h"
#include "ursa/options.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define MAX_TENANTS 2000000
#define MAX_CONCURRENCY 256

struct tjob {
	struct drv *d;
	const char *prefix;
	long long count, wait_s;
	long long stride; /* pass 2 checks tenants 1, 1 + stride, ... */
	struct jwt_signer *signer; /* NULL: no user check */
	int pass;		   /* 1: create, 2: administrators let in */
	int64_t *t0;		   /* per tenant (from 1): when its create was sent; 0 if pass 1 failed for it */
	atomic_llong next, created, existed, failed, done, refusals, users_ok;
	atomic_bool stop;
	pthread_mutex_t lock;
	struct hist user_ready; /* µs from the create to the administrator let in */
};

/* The token of the tenant's administrator "loader" (as ursa-region load signs it). New string. */
char *region_user_token(const struct jwt_signer *s, const char *tenant, char **ret_err)
{
	struct identity id = {0};
	id.user = xstrdup("loader");
	id.tenant = xstrdup(tenant);
	id.groups = xcalloc(1, sizeof(char *));
	id.groups[0] = xstrdup(GROUP_TENANT_ADMINS);
	id.ngroups = 1;
	char *tok = jwt_signer_sign(s, &id, NULL, 0, time(NULL), 48 * 3600, ret_err);
	identity_release(&id);
	return tok;
}

/* Polls path with c until 200 `need` times in a row, or deadline. 0 or -1 (last status in *ret_st). */
static int poll_ok(struct tjob *j, struct rest_client *c, bool record, const char *path, int need, int64_t deadline,
		   int *ret_st)
{
	int64_t pause_ms = 50;
	for (int ok = 0;;) {
		int st = record ? drv_call(j->d, c, "get", "GET", path, NULL, NULL, NULL)
				: rest_do(c, "GET", path, NULL, NULL, NULL);
		*ret_st = st;
		ok = st == 200 ? ok + 1 : 0;
		if (ok >= need)
			return 0;
		if (st != 200 && !record)
			atomic_fetch_add(&j->refusals, 1);
		if (mono_ms() >= deadline || atomic_load(&j->stop))
			return -1;
		if (ok == 0) {
			drv_sleep_until(mono_us() + pause_ms * 1000, &j->stop);
			if (pause_ms < 1000)
				pause_ms *= 2;
		}
	}
}

/* Pass 1: creates tenant i and waits for its default namespace (as the admin). */
static int make_tenant(struct tjob *j, long long i)
{
	char *name = region_tenant_name(j->prefix, i);
	char *ns_path = xasprintf("/api/v1/tenants/%s/namespaces/default", name);
	json_t *body = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Tenant", "metadata", "name", name);
	int64_t t0 = mono_us();
	int st = drv_write(j->d, j->d->admin, "create", "POST", "/api/v1/tenants", body, NULL, NULL, NULL, &j->stop);
	int r = -1;

	json_decref(body);
	if (st == 409)
		atomic_fetch_add(&j->existed, 1);
	else if (st >= 200 && st < 300)
		atomic_fetch_add(&j->created, 1);
	else {
		fprintf(stderr, "ursa-region: create tenant %s: status %d\n", name, st);
		goto out;
	}
	if (poll_ok(j, j->d->admin, true, ns_path, 1, mono_ms() + j->wait_s * 1000, &st) < 0) {
		fprintf(stderr, "ursa-region: tenant %s: namespace default not there after %lld s (status %d)\n", name,
			j->wait_s, st);
		goto out;
	}
	j->t0[i] = t0;
	r = 0;
out:
	free(name);
	free(ns_path);
	return r;
}

/* Pass 2: tenant i's administrator reads the default namespace three times in a row. */
static int check_user(struct tjob *j, long long i)
{
	char *name = region_tenant_name(j->prefix, i), *err = NULL;
	char *ns_path = xasprintf("/api/v1/tenants/%s/namespaces/default", name);
	char *tok = region_user_token(j->signer, name, &err);
	struct rest_client *uc = tok ? drv_client(j->d, tok) : NULL;
	int st = 0, r = -1;

	if (!uc) {
		fprintf(stderr, "ursa-region: tenant %s: signing its administrator's token: %s\n", name, err);
	} else if (poll_ok(j, uc, false, ns_path, 3, mono_ms() + j->wait_s * 1000, &st) < 0) {
		fprintf(stderr, "ursa-region: tenant %s: its administrator is still refused after %lld s (status %d)\n",
			name, j->wait_s, st);
	} else {
		pthread_mutex_lock(&j->lock);
		hist_add(&j->user_ready, mono_us() - j->t0[i]);
		pthread_mutex_unlock(&j->lock);
		atomic_fetch_add(&j->users_ok, 1);
		r = 0;
	}
	rest_free(uc);
	free(tok);
	free(err);
	free(name);
	free(ns_path);
	return r;
}

static void *tenant_worker(void *arg)
{
	struct tjob *j = arg;
	for (;;) {
		long long i = atomic_fetch_add(&j->next, 1) + 1;
		if (i > j->count || atomic_load(&j->stop))
			return NULL;
		if (j->pass == 1 && make_tenant(j, i) < 0)
			atomic_fetch_add(&j->failed, 1);
		if (j->pass == 2 && (i - 1) % j->stride == 0 && j->t0[i] && check_user(j, i) < 0)
			atomic_fetch_add(&j->failed, 1);
		atomic_fetch_add(&j->done, 1);
	}
}

int region_tenants_main(int argc, char **argv)
{
	const char *env = NULL, *prefix = "t";
	long long count = -1, concurrency = 32, wait_s = 60, check = 500;
	const struct opt opts[] = {
		{"env", OPT_STRING, &env, "region.env of the region (required)"},
		{"count", OPT_INT, &count, "tenants to create (default: TENANTS of region.env)"},
		{"prefix", OPT_STRING, &prefix, "tenants are <prefix>-00001, ..."},
		{"concurrency", OPT_INT, &concurrency, "creates in flight"},
		{"wait", OPT_INT, &wait_s, "seconds to wait for each tenant's default namespace"},
		{"check", OPT_INT, &check, "administrators checked, spread evenly (0: every tenant's)"},
	};
	if (opts_parse("ursa-region tenants", "Creates the region's tenants through the front door.", opts,
		       (int)(sizeof(opts) / sizeof(opts[0])), argc, argv) < 0)
		return 2;
	static struct drv d;
	if (drv_open(&d, "ursa-region tenants", env, NULL) < 0)
		return 2;
	if (count < 0)
		count = d.env.tenants;
	if (count < 0 || count > MAX_TENANTS || concurrency < 1 || concurrency > MAX_CONCURRENCY || wait_s < 1 ||
	    wait_s > 3600 || check < 0) {
		fprintf(stderr,
			"ursa-region tenants: need --count 0..%d (or TENANTS in region.env), --concurrency "
			"1..%d, --wait 1..3600, --check >= 0\n",
			MAX_TENANTS, MAX_CONCURRENCY);
		drv_close(&d);
		return 2;
	}
	drv_raise_nofile();
	static struct tjob j;
	pthread_mutex_init(&j.lock, NULL);
	if (d.env.signing_key) {
		char *err = NULL;
		if (jwt_signer_load(d.env.signing_key, &j.signer, &err) < 0) {
			fprintf(stderr, "ursa-region tenants: signing key: %s\n", err);
			free(err);
			drv_close(&d);
			return 2;
		}
	}
	j.d = &d;
	j.prefix = prefix;
	j.count = count;
	j.wait_s = wait_s;
	j.stride = check == 0 || check >= count ? 1 : (count + check - 1) / check;
	pthread_t *th = xcalloc((size_t)concurrency, sizeof(*th));
	j.t0 = xcalloc((size_t)count + 1, sizeof(*j.t0));
	int64_t t0 = mono_ms(), next = t0 + 5000;
	/* pass 1 creates every tenant; pass 2 then lets each administrator in (by then most are) */
	for (j.pass = 1; j.pass <= (j.signer ? 2 : 1); j.pass++) {
		atomic_store(&j.next, 0);
		atomic_store(&j.done, 0);
		for (long long k = 0; k < concurrency; k++)
			pthread_create(&th[k], NULL, tenant_worker, &j);
		/* progress every 5 s until every tenant is done (the workers' own waits are bounded) */
		while (atomic_load(&j.done) < count) {
			drv_sleep_until(mono_us() + 100000, NULL);
			if (mono_ms() < next)
				continue;
			next += 5000;
			double s = (double)(mono_ms() - t0) / 1000.0;
			if (j.pass == 1)
				printf("tenants: %.0f s: %lld/%lld done (%lld created, %lld existed, %lld failed), "
				       "%.1f/s\n",
				       s, atomic_load(&j.done), count, atomic_load(&j.created), atomic_load(&j.existed),
				       atomic_load(&j.failed), s > 0 ? (double)atomic_load(&j.done) / s : 0.0);
			else
				printf("tenants: %.0f s: %lld/%lld administrators let in (%lld refusals so far)\n", s,
				       atomic_load(&j.users_ok), (count + j.stride - 1) / j.stride,
				       atomic_load(&j.refusals));
			fflush(stdout);
		}
		for (long long k = 0; k < concurrency; k++)
			pthread_join(th[k], NULL);
	}
	free(th);
	free(j.t0);
	double s = (double)(mono_ms() - t0) / 1000.0;
	double mut, ro;
	drv_p99(&d, &mut, &ro);
	printf("RESULT {\"phase\":\"tenants\",\"count\":%lld,\"created\":%lld,\"existed\":%lld,\"failed\":%lld,"
	       "\"seconds\":%.1f,\"rate\":%.1f,\"create_p99_ms\":%.1f,\"retries\":%lld,\"users_checked\":%llu,"
	       "\"user_ready_p50_ms\":%.1f,\"user_ready_p99_ms\":%.1f,\"user_ready_max_ms\":%.1f,\"user_refusals\":%"
	       "lld}\n",
	       count, atomic_load(&j.created), atomic_load(&j.existed), atomic_load(&j.failed), s,
	       s > 0 ? (double)count / s : 0.0, mut, atomic_load(&d.nretries), (unsigned long long)j.user_ready.n,
	       (double)hist_quantile(&j.user_ready, 0.5) / 1000.0, (double)hist_quantile(&j.user_ready, 0.99) / 1000.0,
	       (double)j.user_ready.max / 1000.0, atomic_load(&j.refusals));
	fflush(stdout);
	int rc = atomic_load(&j.failed) ? 1 : 0;
	jwt_signer_free(j.signer);
	drv_close(&d);
	return rc;
}
