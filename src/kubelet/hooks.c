/* Container lifecycle hooks (hooks.h). */
#define _GNU_SOURCE
#include "hooks.h"
#include <curl/curl.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define HOOK_USER_AGENT "kube-lifecycle/1.30"

/* ---- specs ---- */

void rt_hook_free(struct rt_hook *h)
{
	if (!h)
		return;
	rt_probe_free(h->action);
	free(h);
}

struct rt_hook *rt_hook_dup(const struct rt_hook *h)
{
	if (!h)
		return NULL;
	struct rt_hook *d = xcalloc(1, sizeof(*d));
	d->action = rt_probe_dup(h->action);
	d->sleep_s = h->sleep_s;
	return d;
}

/* One LifecycleHandler j: a new hook, or NULL (with *bad) when it is malformed. */
static struct rt_hook *hook_from_json(const json_t *j, const json_t *c, bool *bad)
{
	static const char *const names[] = { "exec", "httpGet", "tcpSocket", "sleep" };
	const json_t *hj = NULL;
	int which = -1, n = 0;
	*bad = true;
	if (!json_is_object(j))
		return NULL;
	for (int i = 0; i < 4; i++) {
		const json_t *v = json_object_get(j, names[i]);
		if (v && !json_is_null(v)) {
			n++;
			which = i;
			hj = v;
		}
	}
	if (n != 1 || !json_is_object(hj))
		return NULL;
	struct rt_hook *h = xcalloc(1, sizeof(*h));
	if (which == 3) {
		const json_t *s = json_object_get(hj, "seconds");
		if (!json_is_integer(s) || json_integer_value(s) < 0 || json_integer_value(s) > HOOK_MAX_SLEEP_S)
			goto fail;
		h->sleep_s = json_integer_value(s);
		*bad = false;
		return h;
	}
	h->action = xcalloc(1, sizeof(*h->action));
	h->action->grace_s = -1;
	if (which == 2) { /* kept so that running it fails as Kubernetes' does */
		h->action->handler = RT_PROBE_TCP;
		*bad = false;
		return h;
	}
	if (kl_probe_handler_from_json(hj, c, which == 0 ? RT_PROBE_EXEC : RT_PROBE_HTTP, h->action))
		goto fail;
	*bad = false;
	return h;
fail:
	rt_hook_free(h);
	return NULL;
}

int kl_hooks_from_json(const json_t *c, struct rt_hook *hooks[RT_HOOK_KINDS], struct buf *err)
{
	static const char *const fields[RT_HOOK_KINDS] = { "postStart", "preStop" };
	const json_t *lc = json_object_get(c, "lifecycle");
	for (int k = 0; k < RT_HOOK_KINDS; k++)
		hooks[k] = NULL;
	if (!lc || json_is_null(lc))
		return 0;
	const char *cname = json_str(c, "name");
	if (!json_is_object(lc)) {
		buf_addf(err, "container \"%s\": lifecycle must be an object", cname ? cname : "");
		return E_INVALID;
	}
	for (int k = 0; k < RT_HOOK_KINDS; k++) {
		const json_t *j = json_object_get(lc, fields[k]);
		if (!j || json_is_null(j))
			continue;
		bool bad;
		hooks[k] = hook_from_json(j, c, &bad);
		if (bad) {
			buf_addf(err, "container \"%s\": lifecycle.%s needs exactly one valid handler (exec with a "
				      "command, httpGet with a port 1..65535 or the name of a container port, or sleep "
				      "with seconds 0..%d)", cname ? cname : "", fields[k], HOOK_MAX_SLEEP_S);
			for (int i = 0; i < RT_HOOK_KINDS; i++) {
				rt_hook_free(hooks[i]);
				hooks[i] = NULL;
			}
			return E_INVALID;
		}
	}
	return 0;
}

/* ---- pure parts ---- */

const char *hook_event_reason(enum rt_hook_kind kind)
{
	return kind == RT_HOOK_POST_START ? "FailedPostStartHook" : "FailedPreStopHook";
}

long long hook_grace_left(long long grace_s, int64_t elapsed_ms)
{
	long long left = grace_s - (elapsed_ms > 0 ? elapsed_ms / 1000 : 0);
	return left < HOOK_MIN_GRACE_S ? HOOK_MIN_GRACE_S : left;
}

static void add_cmd(struct buf *out, char *const *cmd, char sep_open, char sep_close)
{
	if (sep_open)
		buf_addch(out, sep_open);
	for (size_t i = 0; cmd && cmd[i]; i++) {
		if (i)
			buf_addch(out, ' ');
		buf_adds(out, cmd[i]);
	}
	if (sep_close)
		buf_addch(out, sep_close);
}

void hook_message(const struct rt_hook *h, const char *cname, const char *pod, const char *ns, const char *uid,
		  const char *error, const char *output, struct buf *out)
{
	const struct rt_probe *a = h ? h->action : NULL;
	if (a && a->handler == RT_PROBE_EXEC) {
		buf_adds(out, "Exec lifecycle hook (");
		add_cmd(out, a->exec, '[', ']');
		buf_addf(out, ") for Container \"%s\" in Pod \"%s_%s(%s)\" failed - error: %s, message: \"%s\"", cname, pod,
			 ns, uid, error ? error : "", output ? output : "");
	} else if (a && a->handler == RT_PROBE_HTTP) {
		buf_addf(out, "HTTP lifecycle hook (%s) for Container \"%s\" in Pod \"%s_%s(%s)\" failed - error: %s",
			 a->path ? a->path : "/", cname, pod, ns, uid, error ? error : "");
	} else {
		buf_addf(out, "Cannot run handler: %s", error ? error : "invalid handler");
	}
}

/* ---- running hooks ---- */

static const char *hook_host(const struct rt_probe *a, const char *ip)
{
	if (a->host)
		return a->host;
	return ip && *ip ? ip : "127.0.0.1";
}

static size_t discard_body(char *data, size_t size, size_t n, void *ud)
{
	(void)data, (void)ud;
	return size * n;
}

/* GET of an httpGet hook: 0 when any answer came, else -1 or E_TIMEOUT with the error in err. */
static int run_http(const struct rt_probe *a, const char *ip, long long timeout_s, struct buf *err)
{
	struct buf url = BUF_INIT, h = BUF_INIT;
	const char *host = hook_host(a, ip);
	buf_adds(&url, a->https ? "https://" : "http://");
	buf_addf(&url, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, a->port);
	buf_adds(&url, a->path ? a->path : "/");
	struct curl_slist *hdrs = NULL;
	bool ua = false;
	for (size_t i = 0; i < a->nheaders; i++) {
		buf_reset(&h);
		buf_addf(&h, "%s: %s", a->headers[i].name, a->headers[i].value);
		hdrs = curl_slist_append(hdrs, buf_cstr(&h));
		ua |= strcasecmp(a->headers[i].name, "User-Agent") == 0;
	}
	if (!ua)
		hdrs = curl_slist_append(hdrs, "User-Agent: " HOOK_USER_AGENT);
	char errbuf[CURL_ERROR_SIZE] = "";
	CURL *e = curl_easy_init();
	curl_easy_setopt(e, CURLOPT_URL, buf_cstr(&url));
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)timeout_s * 1000);
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L); /* as Kubernetes: hooks do not verify */
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard_body);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	CURLcode cc = curl_easy_perform(e);
	int rc = 0;
	if (cc != CURLE_OK) {
		rc = cc == CURLE_OPERATION_TIMEDOUT ? E_TIMEOUT : -1;
		buf_addf(err, "Get \"%s\": %s", buf_cstr(&url), errbuf[0] ? errbuf : curl_easy_strerror(cc));
	}
	curl_easy_cleanup(e);
	curl_slist_free_all(hdrs);
	buf_release(&url);
	buf_release(&h);
	return rc;
}

/* An exec hook through the runtime: 0, E_TIMEOUT, or -1 with error and output filled. */
static int run_exec(const struct rt_probe *a, const struct hook_target *t, long long timeout_s, struct buf *error,
		    struct buf *output)
{
	int code = -1;
	if (!t->ops || !t->ops->exec) {
		buf_adds(error, "exec hooks are not supported by this runtime");
		return -1;
	}
	int rc = t->ops->exec(t->ud, t->cid ? t->cid : "", a->exec, (int)timeout_s, output, &code);
	while (output->len && (output->ptr[output->len - 1] == '\n' || output->ptr[output->len - 1] == '\r'))
		output->ptr[--output->len] = '\0';
	if (rc == 0 && code == 0)
		return 0;
	if (rc == E_TIMEOUT) {
		buf_addf(error, "command timed out after %llds", timeout_s);
		return E_TIMEOUT;
	}
	if (rc != 0) {
		buf_addf(error, "exec failed: %s", buf_cstr(output));
		return -1;
	}
	buf_adds(error, "command '");
	add_cmd(error, a->exec, 0, 0);
	buf_addf(error, "' exited with %d: %s", code, buf_cstr(output));
	return -1;
}

int hook_run(const struct rt_hook *h, const struct hook_target *t, long long timeout_s, struct buf *msg)
{
	if (timeout_s < 1)
		timeout_s = 1;
	if (!h->action) {
		int64_t end = mono_ms() + (h->sleep_s < timeout_s ? h->sleep_s : timeout_s) * 1000;
		for (int64_t now = mono_ms(); now < end; now = mono_ms())
			usleep((useconds_t)((end - now) > 200 ? 200000 : (end - now) * 1000));
		return h->sleep_s > timeout_s ? E_TIMEOUT : 0;
	}
	struct buf error = BUF_INIT, output = BUF_INIT;
	int rc;
	if (h->action->handler == RT_PROBE_EXEC) {
		rc = run_exec(h->action, t, timeout_s, &error, &output);
	} else if (h->action->handler == RT_PROBE_HTTP) {
		rc = run_http(h->action, t->ip, timeout_s, &error);
	} else {
		buf_adds(&error, "invalid handler: tcpSocket is not supported in lifecycle hooks");
		rc = -1;
	}
	if (rc) {
		size_t from = msg->len;
		hook_message(h, t->container, t->pod, t->ns, t->uid, buf_cstr(&error),
			     h->action->handler == RT_PROBE_EXEC ? buf_cstr(&output) : NULL, msg);
		for (size_t i = from; i < msg->len; i++) /* one log line */
			if (msg->ptr[i] == '\n' || msg->ptr[i] == '\r')
				msg->ptr[i] = ' ';
	}
	buf_release(&error);
	buf_release(&output);
	return rc;
}

long long hook_pre_stop(const struct rt_hook *h, const struct hook_target *t, long long grace_s)
{
	if (!h || grace_s <= 0)
		return grace_s;
	struct buf msg = BUF_INIT;
	int64_t t0 = mono_ms();
	int rc = hook_run(h, t, grace_s, &msg);
	int64_t took = mono_ms() - t0;
	if (rc == E_TIMEOUT) {
		log_info("preStop hook not completed in the grace period", "pod=\"%s/%s\" container=\"%s\" grace=%lld",
			 t->ns, t->pod, t->container, grace_s);
	} else if (rc) {
		log_info("preStop hook failed", "pod=\"%s/%s\" container=\"%s\" err=\"%s\"", t->ns, t->pod, t->container,
			 buf_cstr(&msg));
		rt_event(t->tenant, t->ns, t->pod, t->uid, t->container, true, hook_event_reason(RT_HOOK_PRE_STOP),
			 "PreStopHook failed");
	}
	buf_release(&msg);
	return hook_grace_left(grace_s, took);
}

struct job_arg {
	struct hook_job *job;
	long long grace_s;
};

static void *job_main(void *arg)
{
	struct job_arg *a = arg;
	a->job->left = hook_pre_stop(a->job->h, &a->job->t, a->grace_s);
	return NULL;
}

long long hooks_pre_stop_all(struct hook_job *jobs, size_t n, long long grace_s)
{
	if (!n || grace_s <= 0)
		return grace_s;
	struct job_arg *args = xcalloc(n, sizeof(*args));
	bool *started = xcalloc(n, sizeof(*started));
	for (size_t i = 0; i < n; i++) {
		args[i] = (struct job_arg){ &jobs[i], grace_s };
		started[i] = pthread_create(&jobs[i].thread, NULL, job_main, &args[i]) == 0;
		if (!started[i])
			job_main(&args[i]);
	}
	long long left = grace_s;
	for (size_t i = 0; i < n; i++) {
		if (started[i])
			pthread_join(jobs[i].thread, NULL);
		if (jobs[i].left < left)
			left = jobs[i].left;
	}
	free(args);
	free(started);
	return left;
}

/* ---- postStart runs watched from status() ---- */

/* One container instance's postStart run, in g_runs while linked (found by lookups) or while its
 * thread runs: a run forgotten (or replaced by a newer instance) is unlinked, and freed by whoever
 * is last, the forgetter or the thread. */
struct hrun {
	char *uid, *tenant, *ns, *pod, *cname, *cid, *ip;
	struct rt_hook *post, *pre;
	long long grace_s;
	struct prober_ops ops;
	void *ud;
	enum hook_state state;
	bool linked, running;
	struct hrun *next;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER; /* a thread ended (hooks_forget_owner) */
static struct hrun *g_runs;

static void hrun_free(struct hrun *r)
{
	free(r->uid);
	free(r->tenant);
	free(r->ns);
	free(r->pod);
	free(r->cname);
	free(r->cid);
	free(r->ip);
	rt_hook_free(r->post);
	rt_hook_free(r->pre);
	free(r);
}

static void hrun_target(const struct hrun *r, struct hook_target *t)
{
	*t = (struct hook_target){ .uid = r->uid, .tenant = r->tenant, .ns = r->ns, .pod = r->pod,
				   .container = r->cname, .cid = r->cid, .ip = r->ip, .ops = &r->ops, .ud = r->ud };
}

/* Takes r out of g_runs and frees it (g_lock held). */
static void hrun_drop(struct hrun *r)
{
	for (struct hrun **pp = &g_runs; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	hrun_free(r);
}

/* Forgets r (g_lock held): freed now unless its thread still runs. */
static void hrun_unlink(struct hrun *r)
{
	r->linked = false;
	if (!r->running)
		hrun_drop(r);
}

static void *hrun_main(void *arg)
{
	struct hrun *r = arg;
	struct hook_target t;
	struct buf msg = BUF_INIT;
	hrun_target(r, &t);
	int rc = hook_run(r->post, &t, HOOK_POST_START_MAX_S, &msg);
	pthread_mutex_lock(&g_lock);
	bool forgotten = !r->linked;
	r->state = rc ? HOOK_FAILED : HOOK_DONE;
	pthread_mutex_unlock(&g_lock);
	if (rc && !forgotten) {
		if (!msg.len)
			buf_addf(&msg, "the hook did not end within %ds", HOOK_POST_START_MAX_S);
		log_info("postStart hook failed: killing the container", "pod=\"%s/%s\" container=\"%s\" err=\"%s\"", r->ns,
			 r->pod, r->cname, buf_cstr(&msg));
		rt_event(r->tenant, r->ns, r->pod, r->uid, r->cname, true, hook_event_reason(RT_HOOK_POST_START),
			 "PostStartHook failed");
		rt_event(r->tenant, r->ns, r->pod, r->uid, r->cname, false, "Killing", "FailedPostStartHook");
		long long grace = hook_pre_stop(r->pre, &t, r->grace_s);
		if (r->ops.kill)
			r->ops.kill(r->ud, r->uid, r->cname, r->cid, grace);
	}
	if (!forgotten)
		rt_pod_changed(r->uid);
	buf_release(&msg);
	pthread_mutex_lock(&g_lock);
	r->running = false;
	if (!r->linked)
		hrun_drop(r);
	pthread_cond_broadcast(&g_cond);
	pthread_mutex_unlock(&g_lock);
	return NULL;
}

static char *dup_or(const char *s, const char *def)
{
	return xstrdup(s && *s ? s : def);
}

enum hook_state hooks_post_start(const struct hook_target *t, const struct rt_hook *post, const struct rt_hook *pre,
				 long long grace_s)
{
	if (!post)
		return HOOK_DONE;
	const char *cid = t->cid ? t->cid : "";
	pthread_mutex_lock(&g_lock);
	struct hrun *r = g_runs;
	while (r && (!r->linked || strcmp(r->uid, t->uid) != 0 || strcmp(r->cname, t->container) != 0))
		r = r->next;
	if (r && strcmp(r->cid, cid) != 0) { /* an older instance */
		hrun_unlink(r);
		r = NULL;
	}
	if (!r) {
		r = xcalloc(1, sizeof(*r));
		r->uid = xstrdup(t->uid);
		r->tenant = dup_or(t->tenant, "system");
		r->ns = dup_or(t->ns, "default");
		r->pod = dup_or(t->pod, "");
		r->cname = xstrdup(t->container);
		r->cid = xstrdup(cid);
		r->ip = dup_or(t->ip, "127.0.0.1");
		r->post = rt_hook_dup(post);
		r->pre = rt_hook_dup(pre);
		r->grace_s = grace_s;
		if (t->ops)
			r->ops = *t->ops;
		r->ud = t->ud;
		r->state = HOOK_RUNNING;
		r->linked = r->running = true;
		pthread_t th;
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&attr, 256 * 1024);
		if (pthread_create(&th, &attr, hrun_main, r) != 0) {
			log_warn("hooks: cannot start a thread", "pod=\"%s/%s\" container=\"%s\"", r->ns, r->pod, r->cname);
			r->running = false;
			r->state = HOOK_RUNNING; /* tried again at the next status() */
			r->linked = false;
			hrun_free(r);
			pthread_attr_destroy(&attr);
			pthread_mutex_unlock(&g_lock);
			return HOOK_RUNNING;
		}
		pthread_attr_destroy(&attr);
		r->next = g_runs;
		g_runs = r;
	}
	enum hook_state st = r->state;
	pthread_mutex_unlock(&g_lock);
	return st;
}

static void forget_matching(const char *uid, void *ud)
{
	pthread_mutex_lock(&g_lock);
	struct hrun *r = g_runs;
	while (r) {
		struct hrun *next = r->next;
		if (r->linked && (uid ? strcmp(r->uid, uid) == 0 : r->ud == ud))
			hrun_unlink(r);
		r = next;
	}
	pthread_mutex_unlock(&g_lock);
}

void hooks_forget_pod(const char *uid)
{
	forget_matching(uid, NULL);
}

void hooks_forget_owner(void *ud)
{
	forget_matching(NULL, ud);
	pthread_mutex_lock(&g_lock);
	for (;;) {
		bool left = false;
		for (struct hrun *r = g_runs; r; r = r->next)
			left |= r->ud == ud;
		if (!left)
			break;
		pthread_cond_wait(&g_cond, &g_lock);
	}
	pthread_mutex_unlock(&g_lock);
}
