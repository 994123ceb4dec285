/* ursa-region's driver state: region.env, the admin client, recorded and retried calls
 * (driver.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include "region/driver.h"
#include "ursa/auth.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define CALLS_FLUSH (256u << 10)
#define WRITE_ATTEMPTS 10
#define WRITE_DEADLINE_MS 60000
#define CLIENT_TIMEOUT_MS 30000

void drv_raise_nofile(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int read_all(const char *path, struct buf *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int r = buf_read_fd(out, fd, 1u << 20);
	close(fd);
	return r < 0 ? -1 : 0;
}

struct rest_client *drv_client(struct drv *d, const char *token)
{
	struct rest_config cfg = {
		.servers = d->env.gateway_url,
		.token = token ? token : d->admin_token,
		.ca_file = d->env.ca_file,
		.user_agent = "ursa-region",
		.timeout_ms = CLIENT_TIMEOUT_MS,
	};
	return rest_new(&cfg);
}

int drv_open(struct drv *d, const char *prog, const char *env_path, const char *out_dir)
{
	struct buf text = BUF_INIT;
	char *err = NULL;

	memset(d, 0, sizeof(*d));
	pthread_mutex_init(&d->lock, NULL);
	d->stats = xcalloc(DRV_MAX_STATS, sizeof(*d->stats));
	d->env.nodes = d->env.tenants = -1;
	if (!env_path) {
		fprintf(stderr, "%s: --env is required (the region.env bench/run-region.sh writes)\n", prog);
		return -1;
	}
	if (read_all(env_path, &text) < 0) {
		fprintf(stderr, "%s: cannot read %s: %s\n", prog, env_path, strerror(errno));
		buf_release(&text);
		return -1;
	}
	int r = region_env_parse(text.ptr ? text.ptr : "", text.len, &d->env, &err);
	buf_release(&text);
	if (r < 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, env_path, err);
		free(err);
		return -1;
	}
	if (!d->env.gateway_url || !d->env.admin_token_file) {
		fprintf(stderr, "%s: %s names no GATEWAY_URL or ADMIN_TOKEN_FILE\n", prog, env_path);
		return -1;
	}
	d->admin_token = auth_read_token_file(d->env.admin_token_file, &err);
	if (!d->admin_token) {
		fprintf(stderr, "%s: admin token: %s\n", prog, err);
		free(err);
		return -1;
	}
	d->admin = drv_client(d, NULL);
	if (out_dir) {
		char *p = xasprintf("%s/calls.tsv", out_dir);
		d->calls = fopen(p, "w");
		if (!d->calls)
			fprintf(stderr, "%s: cannot write %s: %s\n", prog, p, strerror(errno));
		free(p);
		if (!d->calls)
			return -1;
		fputs("t_ms\tverb\tresource\tscope\tlatency_us\tcode\n", d->calls);
	}
	return 0;
}

static void flush_calls_locked(struct drv *d)
{
	if (d->calls && d->calls_buf.len) {
		fwrite(d->calls_buf.ptr, 1, d->calls_buf.len, d->calls);
		buf_reset(&d->calls_buf);
	}
}

void drv_close(struct drv *d)
{
	pthread_mutex_lock(&d->lock);
	flush_calls_locked(d);
	if (d->calls)
		fclose(d->calls);
	d->calls = NULL;
	pthread_mutex_unlock(&d->lock);
	buf_release(&d->calls_buf);
	rest_free(d->admin);
	free(d->admin_token);
	free(d->stats);
	region_env_release(&d->env);
}

/* An answer the caller did not want: a transport error, a 5xx or 429, or a 4xx other than the
 * expected ones (404 for a get or delete: verify's gone objects, a retried delete; 409 for a
 * create: a tenant that exists, a retried create). */
static bool is_error(const char *verb, int code)
{
	if (code < 100)
		return true;
	if (code == 404 && (!strcmp(verb, "get") || !strcmp(verb, "delete")))
		return false;
	if (code == 409 && !strcmp(verb, "create"))
		return false;
	return code >= 400;
}

void drv_record(struct drv *d, const char *verb, const char *path, int64_t t_ms, int64_t latency_us, int code)
{
	char res[DRV_RESOURCE_MAX];
	enum sli_scope scope = sli_classify(verb, path, res, sizeof(res));
	bool err = is_error(verb, code);

	atomic_fetch_add(&d->ncalls, 1);
	if (err)
		atomic_fetch_add(&d->nerrors, 1);
	if (code == 429)
		atomic_fetch_add(&d->n429, 1);
	pthread_mutex_lock(&d->lock);
	if (d->calls) {
		tsv_call_line(&d->calls_buf, t_ms, verb, res, scope, latency_us, code);
		if (d->calls_buf.len > CALLS_FLUSH)
			flush_calls_locked(d);
	}
	struct drv_stat *s = NULL;
	for (size_t i = 0; i < d->nstats && !s; i++)
		if (d->stats[i].scope == scope && !strcmp(d->stats[i].verb, verb) && !strcmp(d->stats[i].resource, res))
			s = &d->stats[i];
	if (!s && d->nstats < DRV_MAX_STATS) {
		s = &d->stats[d->nstats++];
		snprintf(s->verb, sizeof(s->verb), "%s", verb);
		snprintf(s->resource, sizeof(s->resource), "%s", res);
		s->scope = scope;
	}
	if (s && code >= 100) {
		hist_add(&s->h, latency_us);
		if (strcmp(verb, "watch-start") != 0)
			hist_add(sli_mutating(verb) ? &d->mutating : &d->readonly, latency_us);
	}
	if (s && err)
		s->errors++;
	pthread_mutex_unlock(&d->lock);
}

int drv_call(struct drv *d, struct rest_client *c, const char *verb, const char *method, const char *path,
	     const json_t *body, const char *content_type, json_t **ret_body)
{
	int64_t t = now_ms(), t0 = mono_us();
	int st = rest_do(c, method, path, body, content_type, ret_body);
	drv_record(d, verb, path, t, mono_us() - t0, st);
	return st;
}

void drv_sleep_until(int64_t t_us, const atomic_bool *stop)
{
	for (;;) {
		int64_t left = t_us - mono_us();
		if (left <= 0 || (stop && atomic_load(stop)))
			return;
		if (left > 100000)
			left = 100000;
		struct timespec ts = {.tv_sec = 0, .tv_nsec = left * 1000};
		nanosleep(&ts, NULL);
	}
}

int drv_write(struct drv *d, struct rest_client *c, const char *verb, const char *method, const char *path,
	      const json_t *body, const char *content_type, json_t **ret_body, int *ret_retried,
	      const atomic_bool *stop)
{
	int64_t deadline = mono_ms() + WRITE_DEADLINE_MS, backoff_ms = 250;
	int st = 0, attempt;

	for (attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
		json_t *resp = NULL;
		if (ret_body)
			*ret_body = NULL;
		st = drv_call(d, c, verb, method, path, body, content_type, &resp);
		bool retry = st < 100 || st >= 500 || st == 429;
		if (!retry || attempt + 1 == WRITE_ATTEMPTS || mono_ms() >= deadline || (stop && atomic_load(stop))) {
			if (ret_body)
				*ret_body = resp;
			else
				json_decref(resp);
			break;
		}
		json_int_t ra =
			json_integer_value(json_object_get(json_object_get(resp, "details"), "retryAfterSeconds"));
		/* the gateway's 429 says it in Retry-After (rest_do does not hand headers back) and in
		 * its message: "... retry in N s" */
		const char *msg = json_string_value(json_object_get(resp, "message"));
		const char *in = msg ? strstr(msg, "retry in ") : NULL;
		int secs;
		if (ra <= 0 && in && sscanf(in, "retry in %d s", &secs) == 1)
			ra = secs;
		json_decref(resp);
		int64_t wait_ms = ra > 0 ? (ra > 10 ? 10 : ra) * 1000 : backoff_ms;
		if (ra <= 0 && backoff_ms < 4000)
			backoff_ms *= 2;
		atomic_fetch_add(&d->nretries, 1);
		drv_sleep_until(mono_us() + wait_ms * 1000, stop);
	}
	if (ret_retried)
		*ret_retried = attempt;
	return st;
}

static int stat_cmp(const void *a, const void *b)
{
	const struct drv_stat *x = a, *y = b;
	int r = strcmp(x->resource, y->resource);
	if (!r)
		r = strcmp(x->verb, y->verb);
	return r ? r : (int)x->scope - (int)y->scope;
}

json_t *drv_stats_json(struct drv *d)
{
	json_t *arr = json_array();
	pthread_mutex_lock(&d->lock);
	qsort(d->stats, d->nstats, sizeof(*d->stats), stat_cmp);
	for (size_t i = 0; i < d->nstats; i++) {
		const struct drv_stat *s = &d->stats[i];
		json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:b, s:I, s:I, s:f, s:f, s:f, s:f}", "verb",
						     s->verb, "resource", s->resource, "scope",
						     sli_scope_name(s->scope), "mutating", sli_mutating(s->verb),
						     "count", (json_int_t)s->h.n, "errors", (json_int_t)s->errors,
						     "p50_ms", (double)hist_quantile(&s->h, 0.5) / 1000.0, "p90_ms",
						     (double)hist_quantile(&s->h, 0.9) / 1000.0, "p99_ms",
						     (double)hist_quantile(&s->h, 0.99) / 1000.0, "max_ms",
						     (double)s->h.max / 1000.0));
	}
	pthread_mutex_unlock(&d->lock);
	return arr;
}

void drv_p99(struct drv *d, double *ret_mut_ms, double *ret_ro_ms)
{
	pthread_mutex_lock(&d->lock);
	*ret_mut_ms = (double)hist_quantile(&d->mutating, 0.99) / 1000.0;
	*ret_ro_ms = (double)hist_quantile(&d->readonly, 0.99) / 1000.0;
	pthread_mutex_unlock(&d->lock);
}

int drv_write_file(const char *dir, const char *name, const char *text, size_t len)
{
	char *p = xasprintf("%s/%s", dir, name), *tmp = xasprintf("%s/.%s.tmp", dir, name);
	FILE *f = fopen(tmp, "w");
	int r = -1;
	if (f && fwrite(text, 1, len, f) == len && fclose(f) == 0) {
		f = NULL;
		r = rename(tmp, p) == 0 ? 0 : -1;
	}
	if (f)
		fclose(f);
	if (r < 0)
		fprintf(stderr, "ursa-region: cannot write %s: %s\n", p, strerror(errno));
	free(p);
	free(tmp);
	return r;
}
