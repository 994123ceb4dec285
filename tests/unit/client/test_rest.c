/* REST client against a real ursa-tp-apiserver (HTTP and HTTPS): statuses and Status bodies,
 * fail-over, timeouts, streams that stop promptly, kubeconfig loading. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include "client/client_internal.h"
#include "client_testlib.h"
#include "ursa/errors.h"

static struct tl_env g_env;
static struct rest_client *g_c;

#define CM_PATH "/api/v1/tenants/t1/namespaces/default/configmaps"

static int group_setup(void **state)
{
	if (!tl_env_up(&g_env)) {
		fprintf(stderr, "ursa-tp-apiserver or etcd not found (set URSA_BUILD_DIR): the REST tests cannot run\n");
		return -1; /* a test that cannot run fails */
	}
	g_c = tl_client(&g_env);
	tl_create_tenant(g_c, "t1");
	tl_api_tls(&g_env, 1);
	tl_start_api_n(&g_env, 1);
	return 0;
}

static int group_teardown(void **state)
{
	rest_free(g_c);
	if (g_env.dir)
		tl_env_down(&g_env);
	return 0;
}

#define NEED_ENV()              \
	do {                    \
		if (!g_env.dir) \
			fail_msg("no test environment"); \
	} while (0)

static int dead_port(void)
{
	int p;
	tl_free_ports(&p, 1);
	return p;
}

static void test_statuses(void **state)
{
	json_t *body = NULL, *obj;
	struct buf raw = BUF_INIT;
	NEED_ENV();
	obj = json_pack("{s:s,s:s,s:{s:s},s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap", "metadata", "name", "r1",
			"data", "k", "v");
	assert_int_equal(rest_do(g_c, "POST", CM_PATH, obj, NULL, &body), 201);
	assert_string_equal(json_path_str(body, "metadata.name"), "r1");
	json_decref(body);
	assert_int_equal(rest_do(g_c, "POST", CM_PATH, obj, NULL, &body), 409);
	assert_string_equal(json_str(body, "reason"), "AlreadyExists");
	json_decref(body);
	assert_int_equal(rest_do(g_c, "GET", CM_PATH "/nope", NULL, NULL, &body), 404);
	assert_string_equal(json_str(body, "kind"), "Status");
	assert_string_equal(json_str(body, "reason"), "NotFound");
	json_decref(body);
	/* merge patch with an explicit content type, raw response */
	const char *patch = "{\"data\":{\"k\":\"patched\"}}";
	assert_int_equal(rest_do_raw(g_c, "PATCH", CM_PATH "/r1", patch, strlen(patch),
				     "application/merge-patch+json", &raw),
			 200);
	assert_non_null(strstr(buf_cstr(&raw), "\"patched\""));
	buf_release(&raw);
	assert_int_equal(rest_do(g_c, "DELETE", CM_PATH "/r1", NULL, NULL, NULL), 200);
	json_decref(obj);

	/* no token: 401 */
	struct rest_client *anon = rest_new(&(struct rest_config){ .servers = g_env.api_url });
	assert_int_equal(rest_do(anon, "GET", CM_PATH, NULL, NULL, NULL), 401);
	rest_free(anon);
	assert_null(rest_new(&(struct rest_config){ .servers = " , " }));
}

/* A pooled handle keeps its options between requests: each request must still be sent with its
 * own method, body and content type, whatever the handle sent before. Sequential calls reuse one
 * handle. */
static void test_handle_reuse(void **state)
{
	json_t *body = NULL, *obj;
	struct buf raw = BUF_INIT;
	NEED_ENV();
	obj = json_pack("{s:s,s:s,s:{s:s},s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap", "metadata", "name", "r2",
			"data", "k", "v");
	assert_int_equal(rest_do(g_c, "POST", CM_PATH, obj, NULL, NULL), 201);
	/* a GET after a POST is a GET: the object, not a second create's 409 */
	assert_int_equal(rest_do(g_c, "GET", CM_PATH "/r2", NULL, NULL, &body), 200);
	assert_string_equal(json_path_str(body, "data.k"), "v");
	json_decref(body);
	/* HEAD has no body; the GET after it has one again */
	assert_int_equal(rest_do_raw(g_c, "HEAD", "/healthz", NULL, 0, NULL, &raw), 200);
	assert_int_equal(raw.len, 0);
	assert_int_equal(rest_do_raw(g_c, "GET", "/healthz", NULL, 0, NULL, &raw), 200);
	assert_string_equal(buf_cstr(&raw), "ok");
	buf_reset(&raw);
	/* a merge patch, then a JSON-body PUT: each with its content type */
	const char *patch = "{\"data\":{\"k\":\"m\"}}";
	assert_int_equal(rest_do_raw(g_c, "PATCH", CM_PATH "/r2", patch, strlen(patch),
				     "application/merge-patch+json", &raw),
			 200);
	buf_reset(&raw);
	assert_int_equal(rest_do(g_c, "GET", CM_PATH "/r2", NULL, NULL, &body), 200);
	assert_string_equal(json_path_str(body, "data.k"), "m");
	json_object_set_new(json_object_get(body, "data"), "k", json_string("put"));
	json_t *put = NULL;
	assert_int_equal(rest_do(g_c, "PUT", CM_PATH "/r2", body, NULL, &put), 200);
	assert_string_equal(json_path_str(put, "data.k"), "put");
	json_decref(put);
	json_decref(body);
	/* a DELETE without a body, then the GET after it finds nothing */
	assert_int_equal(rest_do(g_c, "DELETE", CM_PATH "/r2", NULL, NULL, NULL), 200);
	assert_int_equal(rest_do(g_c, "GET", CM_PATH "/r2", NULL, NULL, NULL), 404);
	/* a POST without a body is still a POST (an empty one, no content type: 415), not a GET */
	assert_int_equal(rest_do_raw(g_c, "POST", CM_PATH, NULL, 0, NULL, &raw), 415);
	buf_release(&raw);
	json_decref(obj);
}

static void test_failover(void **state)
{
	NEED_ENV();
	char *servers = xasprintf("http://127.0.0.1:%d, %s/", dead_port(), g_env.api_url);
	struct rest_client *c = rest_new(&(struct rest_config){ .servers = servers, .token = TL_TOKEN });
	for (int i = 0; i < 3; i++)
		assert_int_equal(rest_do(c, "GET", CM_PATH, NULL, NULL, NULL), 200);
	rest_free(c);
	free(servers);
	servers = xasprintf("http://127.0.0.1:%d,http://127.0.0.1:%d", dead_port(), dead_port());
	c = rest_new(&(struct rest_config){ .servers = servers, .token = TL_TOKEN });
	assert_int_equal(rest_do(c, "GET", CM_PATH, NULL, NULL, NULL), E_UNAVAILABLE);
	assert_int_equal(rest_stream(c, CM_PATH "?watch=true", NULL, NULL, NULL), E_UNAVAILABLE);
	rest_free(c);
	free(servers);
}

/* Asynchronous requests ----------------------------------------------------------------------- */
struct async_rec {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	int done, codes[64];
	char *bodies[64];
	pthread_t thread[64];
	struct rest_async *a; /* to submit more from a callback */
};

struct async_req {
	struct async_rec *r;
	int i;
};

static void on_async(void *ud, int status, const struct buf *body)
{
	struct async_req *q = ud;
	struct async_rec *r = q->r;
	pthread_mutex_lock(&r->mu);
	r->codes[q->i] = status;
	r->bodies[q->i] = xstrdup(buf_cstr(body));
	r->thread[q->i] = pthread_self();
	r->done++;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->mu);
	free(q);
}

static void async_wait(struct async_rec *r, int n)
{
	int64_t deadline = mono_ms() + 10000;
	pthread_mutex_lock(&r->mu);
	while (r->done < n && mono_ms() < deadline) {
		pthread_mutex_unlock(&r->mu);
		usleep(5000);
		pthread_mutex_lock(&r->mu);
	}
	pthread_mutex_unlock(&r->mu);
	assert_int_equal(r->done, n);
}

static void async_submit(struct async_rec *r, int i, const char *method, const char *path, const char *body,
			 const char *content_type)
{
	struct async_req *q = xcalloc(1, sizeof(*q));
	q->r = r;
	q->i = i;
	rest_async_submit(r->a, method, path, body ? xstrdup(body) : NULL, body ? strlen(body) : 0, content_type,
			  on_async, q);
}

static void async_release(struct async_rec *r)
{
	for (int i = 0; i < 64; i++)
		free(r->bodies[i]);
}

/* Many requests at once on two connections: every one answered once, on the client's own
 * thread, with its own status and body; then methods and content types as rest_do_raw's. */
static void test_async(void **state)
{
	NEED_ENV();
	struct async_rec r = { .mu = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	r.a = rest_async_start(g_c, 2);
	assert_non_null(r.a);
	char body[256];
	for (int i = 0; i < 40; i++) {
		snprintf(body, sizeof(body),
			 "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"as%d\"},\"data\":{\"i\":\"%d\"}}",
			 i, i);
		async_submit(&r, i, "POST", CM_PATH, body, NULL);
	}
	async_wait(&r, 40);
	for (int i = 0; i < 40; i++) {
		char want[32];
		snprintf(want, sizeof(want), "\"i\":\"%d\"", i);
		assert_int_equal(r.codes[i], 201);
		assert_non_null(strstr(r.bodies[i], want));
		assert_false(pthread_equal(r.thread[i], pthread_self()));
	}
	async_release(&r);
	memset(r.bodies, 0, sizeof(r.bodies));
	r.done = 0;
	/* a second create conflicts; a merge patch with its content type; GET, DELETE, GET */
	async_submit(&r, 0, "POST", CM_PATH, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"as0\"}}",
		     NULL);
	async_submit(&r, 1, "PATCH", CM_PATH "/as1", "{\"data\":{\"i\":\"patched\"}}", "application/merge-patch+json");
	async_wait(&r, 2);
	assert_int_equal(r.codes[0], 409);
	assert_non_null(strstr(r.bodies[0], "AlreadyExists"));
	assert_int_equal(r.codes[1], 200);
	assert_non_null(strstr(r.bodies[1], "patched"));
	async_submit(&r, 2, "GET", CM_PATH "/as1", NULL, NULL);
	async_wait(&r, 3);
	assert_int_equal(r.codes[2], 200);
	assert_non_null(strstr(r.bodies[2], "patched"));
	async_submit(&r, 3, "DELETE", CM_PATH "/as1", NULL, NULL);
	async_wait(&r, 4);
	async_submit(&r, 4, "GET", CM_PATH "/as1", NULL, NULL);
	async_submit(&r, 5, "HEAD", "/healthz", NULL, NULL);
	async_wait(&r, 6);
	assert_int_equal(r.codes[3], 200);
	assert_int_equal(r.codes[4], 404);
	assert_int_equal(r.codes[5], 200);
	assert_string_equal(r.bodies[5], "");
	rest_async_stop(r.a);
	async_release(&r);
	for (int i = 0; i < 40; i++) {
		snprintf(body, sizeof(body), CM_PATH "/as%d", i);
		rest_do(g_c, "DELETE", body, NULL, NULL, NULL);
	}
}

/* A first server that refuses connections: the request goes to the next; none answering
 * is E_UNAVAILABLE; a server that never answers, E_TIMEOUT; stopping with requests in flight
 * ends them with E_UNAVAILABLE at once. */
static void test_async_failures(void **state)
{
	NEED_ENV();
	struct async_rec r = { .mu = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	char *servers = xasprintf("http://127.0.0.1:%d,%s", dead_port(), g_env.api_url);
	struct rest_client *c = rest_new(&(struct rest_config){ .servers = servers, .token = TL_TOKEN });
	r.a = rest_async_start(c, 0);
	async_submit(&r, 0, "POST", CM_PATH, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"fo\"}}",
		     NULL);
	async_wait(&r, 1);
	assert_int_equal(r.codes[0], 201);
	rest_async_stop(r.a);
	rest_free(c);
	free(servers);
	assert_int_equal(rest_do(g_c, "DELETE", CM_PATH "/fo", NULL, NULL, NULL), 200);

	servers = xasprintf("http://127.0.0.1:%d,http://127.0.0.1:%d", dead_port(), dead_port());
	c = rest_new(&(struct rest_config){ .servers = servers, .token = TL_TOKEN });
	r.a = rest_async_start(c, 0);
	async_submit(&r, 1, "GET", CM_PATH, NULL, NULL);
	async_wait(&r, 2);
	assert_int_equal(r.codes[1], E_UNAVAILABLE);
	rest_async_stop(r.a);
	rest_free(c);
	free(servers);

	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 8), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	servers = xasprintf("http://127.0.0.1:%d", ntohs(sa.sin_port));
	c = rest_new(&(struct rest_config){ .servers = servers, .timeout_ms = 300 });
	r.a = rest_async_start(c, 0);
	int64_t t0 = mono_ms();
	async_submit(&r, 2, "GET", "/x", NULL, NULL);
	async_wait(&r, 3);
	assert_int_equal(r.codes[2], E_TIMEOUT);
	assert_in_range(mono_ms() - t0, 250, 2000);
	rest_async_stop(r.a);
	rest_free(c);
	c = rest_new(&(struct rest_config){ .servers = servers, .timeout_ms = 60000 });
	r.a = rest_async_start(c, 0);
	async_submit(&r, 3, "GET", "/x", NULL, NULL);
	async_submit(&r, 4, "GET", "/y", NULL, NULL);
	usleep(100 * 1000);
	t0 = mono_ms();
	rest_async_stop(r.a);
	assert_in_range(mono_ms() - t0, 0, 1500);
	assert_int_equal(r.done, 5);
	assert_int_equal(r.codes[3], E_UNAVAILABLE);
	assert_int_equal(r.codes[4], E_UNAVAILABLE);
	rest_free(c);
	free(servers);
	close(fd);
	async_release(&r);
}

/* A server that accepts connections and never answers. */
static void test_timeout(void **state)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 8), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	char *url = xasprintf("http://127.0.0.1:%d", ntohs(a.sin_port));
	struct rest_client *c = rest_new(&(struct rest_config){ .servers = url, .timeout_ms = 300 });
	int64_t t0 = mono_ms();
	assert_int_equal(rest_do(c, "GET", "/x", NULL, NULL, NULL), E_TIMEOUT);
	int64_t took = mono_ms() - t0;
	assert_in_range(took, 250, 2000);
	rest_free(c);
	free(url);
	close(fd);
}

struct stream_rec {
	struct buf data;
	atomic_bool stop;
	int stop_after_bytes; /* > 0: on_data asks to stop once this much arrived */
};

static int on_data(void *ud, const char *data, size_t len)
{
	struct stream_rec *s = ud;
	buf_add(&s->data, data, len);
	return s->stop_after_bytes > 0 && s->data.len >= (size_t)s->stop_after_bytes;
}

struct streamer {
	struct stream_rec *s;
	const char *path;
	int rc;
	int64_t ended;
};

static void *stream_thread(void *arg)
{
	struct streamer *st = arg;
	st->rc = rest_stream(g_c, st->path, on_data, st->s, &st->s->stop);
	st->ended = mono_ms();
	return NULL;
}

static void test_stream_stop(void **state)
{
	struct stream_rec s = { .data = BUF_INIT };
	struct streamer st = { .s = &s, .path = CM_PATH "?watch=true&timeoutSeconds=60" };
	pthread_t th;
	NEED_ENV();
	atomic_init(&s.stop, false);
	tl_post(g_c, CM_PATH, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"s1\"}}", 201);
	pthread_create(&th, NULL, stream_thread, &st);
	tl_sleep_ms(400);
	assert_non_null(strstr(buf_cstr(&s.data), "\"ADDED\"")); /* initial state of an RV-less watch */
	tl_post(g_c, CM_PATH, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"s2\"}}", 201);
	tl_sleep_ms(300);
	assert_non_null(strstr(buf_cstr(&s.data), "\"s2\""));
	int64_t t0 = mono_ms();
	atomic_store(&s.stop, true);
	pthread_join(th, NULL);
	assert_true(st.ended - t0 <= 200);
	assert_int_equal(st.rc, 200);
	buf_release(&s.data);

	/* on_data's non-zero result ends the stream too */
	struct stream_rec s2 = { .data = BUF_INIT, .stop_after_bytes = 1 };
	atomic_init(&s2.stop, false);
	assert_int_equal(rest_stream(g_c, CM_PATH "?watch=true&timeoutSeconds=60", on_data, &s2, &s2.stop), 200);
	assert_true(s2.data.len >= 1);
	buf_release(&s2.data);

	/* error statuses come back as the result; their body is not streamed */
	struct stream_rec s3 = { .data = BUF_INIT };
	atomic_init(&s3.stop, false);
	assert_int_equal(rest_stream(g_c, "/api/v1/tenants/t1/namespaces/default/nothings?watch=true", on_data, &s3,
				     &s3.stop),
			 404);
	assert_int_equal(s3.data.len, 0);
	buf_release(&s3.data);
}

static char *write_file(const char *name, const char *text)
{
	char *path = xasprintf("%s/%s", g_env.dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

static char *b64_file(const char *path)
{
	char *cmd = xasprintf("base64 -w0 %s", path);
	FILE *p = popen(cmd, "r");
	struct buf out = BUF_INIT;
	int ch;
	assert_non_null(p);
	while ((ch = fgetc(p)) != EOF)
		buf_addch(&out, (char)ch);
	pclose(p);
	free(cmd);
	return buf_detach(&out, NULL);
}

/* A kubeconfig with two contexts; current-context selects the one to use. */
static char *kubeconfig(const char *name, const char *server, const char *cluster_extra, const char *token)
{
	char *text = xasprintf("apiVersion: v1\n"
			       "kind: Config\n"
			       "current-context: main\n"
			       "clusters:\n"
			       "- name: decoy\n"
			       "  cluster:\n"
			       "    server: http://127.0.0.1:1\n"
			       "- name: c1\n"
			       "  cluster:\n"
			       "    server: %s\n"
			       "%s"
			       "contexts:\n"
			       "- name: other\n"
			       "  context: {cluster: decoy, user: u1}\n"
			       "- name: main\n"
			       "  context:\n"
			       "    cluster: c1\n"
			       "    user: u1\n"
			       "users:\n"
			       "- name: u1\n"
			       "  user:\n"
			       "    token: \"%s\"\n",
			       server, cluster_extra, token);
	char *path = write_file(name, text);
	free(text);
	return path;
}

static int kc_get(const char *path)
{
	char *err = NULL;
	struct rest_client *c = rest_from_kubeconfig(path, &err);
	if (!c)
		fail_msg("kubeconfig %s: %s", path, err);
	int rc = rest_do(c, "GET", CM_PATH, NULL, NULL, NULL);
	rest_free(c);
	return rc;
}

static void test_kubeconfig(void **state)
{
	NEED_ENV();
	const char *https = g_env.api[1].url;
	char *ca64 = b64_file(g_env.api[1].cert);
	char *extra = xasprintf("    certificate-authority-data: %s\n", ca64);
	char *kc;

	kc = kubeconfig("plain.yaml", g_env.api_url, "", TL_TOKEN);
	assert_int_equal(kc_get(kc), 200);
	free(kc);
	kc = kubeconfig("badtoken.yaml", g_env.api_url, "", "WRONG");
	assert_int_equal(kc_get(kc), 401);
	free(kc);

	/* HTTPS: trusted through the inline CA, through a CA file, or not verified at all */
	kc = kubeconfig("ca-data.yaml", https, extra, TL_TOKEN);
	assert_int_equal(kc_get(kc), 200);
	free(kc);
	char *rel = xasprintf("    certificate-authority: api1.crt\n"); /* relative to the kubeconfig */
	kc = kubeconfig("ca-file.yaml", https, rel, TL_TOKEN);
	assert_int_equal(kc_get(kc), 200);
	free(kc);
	free(rel);
	kc = kubeconfig("insecure.yaml", https, "    insecure-skip-tls-verify: true\n", TL_TOKEN);
	assert_int_equal(kc_get(kc), 200);
	free(kc);
	kc = kubeconfig("untrusted.yaml", https, "", TL_TOKEN);
	assert_int_equal(kc_get(kc), E_UNAVAILABLE);
	free(kc);

	/* rest_config.ca_file */
	struct rest_client *c = rest_new(&(struct rest_config){ .servers = https, .token = TL_TOKEN,
								 .ca_file = g_env.api[1].cert });
	assert_int_equal(rest_do(c, "GET", CM_PATH, NULL, NULL, NULL), 200);
	rest_free(c);

	/* failures name the problem */
	const char *bad[][2] = {
		{ "nocontext.yaml", "current-context: nope\ncontexts: []\n" },
		{ "noserver.yaml", "current-context: a\ncontexts:\n- name: a\n  context: {cluster: x}\nclusters:\n"
				   "- name: x\n  cluster: {}\n" },
		{ "badb64.yaml", "current-context: a\ncontexts:\n- name: a\n  context: {cluster: x}\nclusters:\n"
				 "- name: x\n  cluster: {server: 'https://h', certificate-authority-data: '!!!'}\n" },
		{ "notyaml.yaml", "a: [\n" },
		{ "scalar.yaml", "just text\n" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *err = NULL, *p = write_file(bad[i][0], bad[i][1]);
		assert_null(rest_from_kubeconfig(p, &err));
		assert_non_null(err);
		assert_true(strlen(err) > 0);
		free(err);
		free(p);
	}
	char *err = NULL;
	assert_null(rest_from_kubeconfig("/nonexistent/kubeconfig", &err));
	assert_non_null(strstr(err, "/nonexistent/kubeconfig"));
	free(err);
	free(extra);
	free(ca64);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_statuses),
		cmocka_unit_test(test_handle_reuse),    cmocka_unit_test(test_failover),
		cmocka_unit_test(test_async),           cmocka_unit_test(test_async_failures),
		cmocka_unit_test(test_timeout),     cmocka_unit_test(test_stream_stop),
		cmocka_unit_test(test_kubeconfig),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
