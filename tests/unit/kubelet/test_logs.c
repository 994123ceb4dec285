/* The kubelet's HTTP endpoints: /healthz and /containerLogs with tailLines, timestamps,
 * limitBytes, sinceSeconds, follow, the bearer token and 404s. Most cases serve a log file
 * the test writes itself (through a stub runtime whose log_path points at it); the last one
 * follows a real container of the process runtime. This executable is its own shim. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "../support/testnet.h"
#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include "logs.h"
#include "runtime.h"
#include "runtime_common.h"
#include "shim.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

static char g_root[64];
static char *g_log; /* the stub's log file for default/web/app in tenant "system" */

static char *stub_log_path(struct runtime *rt, const char *tenant, const char *ns, const char *pod,
			   const char *container)
{
	if (!strcmp(tenant, "system") && !strcmp(ns, "default") && !strcmp(pod, "web") && !strcmp(container, "app"))
		return xstrdup(g_log);
	return NULL;
}

static const struct runtime_ops stub_ops = { .name = "stub", .log_path = stub_log_path };

struct reply {
	long status;
	struct buf body;
};

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
	buf_add(&((struct reply *)ud)->body, p, sz * n);
	return sz * n;
}

static void http_get(int port, const char *path, const char *token, struct reply *r)
{
	CURL *c = curl_easy_init();
	char *url = xasprintf("http://127.0.0.1:%d%s", port, path);
	struct curl_slist *h = NULL;
	char *auth = token ? xasprintf("Authorization: Bearer %s", token) : NULL;
	if (auth)
		h = curl_slist_append(h, auth);
	memset(r, 0, sizeof(*r));
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
	CURLcode rc = curl_easy_perform(c);
	assert_int_equal(rc, CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	free(url);
	free(auth);
}

static void append_log(const char *line)
{
	FILE *f = fopen(g_log, "a");
	assert_non_null(f);
	fputs(line, f);
	fclose(f);
}

struct server {
	struct kl_logs *l;
	int port;
};

static void start(struct server *s, const char *token, const struct runtime_ops *ops, struct runtime *rt)
{
	s->port = test_free_port();
	assert_true(s->port > 0);
	char *listen = xasprintf("127.0.0.1:%d", s->port);
	char *err = NULL;
	s->l = kl_logs_start(listen, NULL, NULL, token, ops, rt, &err);
	if (!s->l)
		fail_msg("kl_logs_start: %s", err);
	free(listen);
}

static int setup(void **state)
{
	snprintf(g_root, sizeof(g_root), "/tmp/ursa-logs-XXXXXX");
	if (!mkdtemp(g_root))
		return -1;
	g_log = xasprintf("%s/app.log", g_root);
	unlink(g_log);
	/* Two old records, a line split into P + F, and three recent ones. */
	append_log("2020-01-01T00:00:00.000000001Z stdout F old1\n"
		   "2020-01-01T00:00:01.000000002Z stderr F old2\n"
		   "2020-01-01T00:00:02.000000003Z stdout P split-\n"
		   "2020-01-01T00:00:02.000000004Z stdout F line\n");
	struct buf b = BUF_INIT;
	for (int i = 1; i <= 3; i++) {
		rt_cri_time_add(&b, rt_now_ns());
		buf_addf(&b, " stdout F new%d\n", i);
	}
	append_log(b.ptr);
	buf_release(&b);
	return 0;
}

static int teardown(void **state)
{
	rt_rm_rf(g_root);
	free(g_log);
	return 0;
}

static void test_plain_tail_limit_since(void **state)
{
	struct server s;
	start(&s, NULL, &stub_ops, NULL);
	struct reply r;
	http_get(s.port, "/healthz", NULL, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(buf_cstr(&r.body), "ok");
	buf_release(&r.body);

	http_get(s.port, "/containerLogs/default/web/app", NULL, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(buf_cstr(&r.body), "old1\nold2\nsplit-line\nnew1\nnew2\nnew3\n");
	buf_release(&r.body);

	http_get(s.port, "/containerLogs/default/web/app?tailLines=2", NULL, &r);
	assert_string_equal(buf_cstr(&r.body), "new2\nnew3\n");
	buf_release(&r.body);
	http_get(s.port, "/containerLogs/default/web/app?tailLines=0", NULL, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(buf_cstr(&r.body), "");
	buf_release(&r.body);
	http_get(s.port, "/containerLogs/default/web/app?tailLines=100", NULL, &r);
	assert_int_equal(r.body.len, strlen("old1\nold2\nsplit-line\nnew1\nnew2\nnew3\n"));
	buf_release(&r.body);

	http_get(s.port, "/containerLogs/default/web/app?limitBytes=8", NULL, &r);
	assert_string_equal(buf_cstr(&r.body), "old1\nold");
	buf_release(&r.body);

	http_get(s.port, "/containerLogs/default/web/app?timestamps=true&tailLines=5", NULL, &r);
	/* the last 5 records are P+F of one line and three more: one stamp per line */
	const char *want = "2020-01-01T00:00:02.000000003Z split-line\n";
	assert_true(!strncmp(buf_cstr(&r.body), want, strlen(want)));
	int lines = 0;
	for (const char *q = buf_cstr(&r.body); (q = strchr(q, '\n')); q++)
		lines++;
	assert_int_equal(lines, 4);
	assert_non_null(strstr(buf_cstr(&r.body), "Z new3\n"));
	buf_release(&r.body);

	http_get(s.port, "/containerLogs/default/web/app?sinceSeconds=600", NULL, &r);
	assert_string_equal(buf_cstr(&r.body), "new1\nnew2\nnew3\n");
	buf_release(&r.body);
	http_get(s.port, "/containerLogs/default/web/app?sinceTime=2020-01-01T00:00:01Z", NULL, &r);
	assert_true(!strncmp(buf_cstr(&r.body), "old2\nsplit-line\n", 16));
	buf_release(&r.body);

	http_get(s.port, "/containerLogs/default/web/app?tailLines=abc", NULL, &r);
	assert_int_equal(r.status, 400);
	buf_release(&r.body);
	http_get(s.port, "/containerLogs/default/web/other", NULL, &r);
	assert_int_equal(r.status, 404);
	assert_non_null(strstr(buf_cstr(&r.body), "container \"other\" in pod \"web\""));
	buf_release(&r.body);
	http_get(s.port, "/containerLogs/default/web/app?tenant=acme", NULL, &r);
	assert_int_equal(r.status, 404);
	buf_release(&r.body);
	http_get(s.port, "/containerLogs/default/web", NULL, &r);
	assert_int_equal(r.status, 404);
	buf_release(&r.body);
	http_get(s.port, "/nothing", NULL, &r);
	assert_int_equal(r.status, 404);
	buf_release(&r.body);
	kl_logs_stop(s.l);
}

static void test_auth_token(void **state)
{
	struct server s;
	start(&s, "s3cret", &stub_ops, NULL);
	struct reply r;
	/* health checks stay open; logs need the token */
	http_get(s.port, "/healthz", NULL, &r);
	assert_int_equal(r.status, 200);
	buf_release(&r.body);
	http_get(s.port, "/containerLogs/default/web/app", NULL, &r);
	assert_int_equal(r.status, 401);
	buf_release(&r.body);
	http_get(s.port, "/containerLogs/default/web/app", "wrong", &r);
	assert_int_equal(r.status, 401);
	assert_int_equal(strstr(buf_cstr(&r.body), "old1") == NULL, 1);
	buf_release(&r.body);
	http_get(s.port, "/containerLogs/default/web/app?tailLines=1", "s3cret", &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(buf_cstr(&r.body), "new3\n");
	buf_release(&r.body);
	kl_logs_stop(s.l);
}

struct bg_get {
	int port;
	const char *path;
	struct reply r;
	int64_t done_ms;
};

static void *bg_main(void *arg)
{
	struct bg_get *g = arg;
	http_get(g->port, g->path, NULL, &g->r);
	g->done_ms = mono_ms();
	return NULL;
}

static void test_follow_appended_lines(void **state)
{
	struct server s;
	start(&s, NULL, &stub_ops, NULL);
	struct bg_get g = { .port = s.port, .path = "/containerLogs/default/web/app?follow=true&tailLines=1" };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, bg_main, &g), 0);
	usleep(400000);
	append_log("2026-11-21T22:40:18.123456789Z stdout F later1\n");
	usleep(300000);
	append_log("2026-11-21T22:40:19.123456789Z stderr P lat");
	usleep(300000);
	append_log("er2-part\n2026-11-21T22:40:19.223456789Z stderr F -end\n");
	usleep(300000);
	assert_int_equal(g.done_ms, 0); /* still following */
	int64_t t0 = mono_ms();
	assert_int_equal(chmod(g_log, 0440), 0); /* what the shim does when the container ends */
	pthread_join(th, NULL);
	assert_true(g.done_ms - t0 < 2000);
	assert_int_equal(g.r.status, 200);
	assert_string_equal(buf_cstr(&g.r.body), "new3\nlater1\nlater2-part-end\n");
	buf_release(&g.r.body);

	/* A follower still waiting when the server stops is ended, not leaked. */
	assert_int_equal(chmod(g_log, 0640), 0);
	struct bg_get g2 = { .port = s.port, .path = "/containerLogs/default/web/app?follow=true&tailLines=0" };
	assert_int_equal(pthread_create(&th, NULL, bg_main, &g2), 0);
	usleep(300000);
	kl_logs_stop(s.l);
	pthread_join(th, NULL);
	assert_int_equal(g2.r.status, 200);
	assert_string_equal(buf_cstr(&g2.r.body), "");
	buf_release(&g2.r.body);
}

/* A follower whose client hung up on a quiet log is freed, at the latest once the log is final
 * (a suspended connection may not notice the hang-up before that). */
static void test_follow_client_gone(void **state)
{
	struct server s;
	start(&s, NULL, &stub_ops, NULL);
	CURL *c = curl_easy_init();
	char *url = xasprintf("http://127.0.0.1:%d/containerLogs/default/web/app?follow=true", s.port);
	struct reply r = { 0 };
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 500L);
	assert_int_equal(curl_easy_perform(c), CURLE_OPERATION_TIMEDOUT);
	assert_non_null(strstr(buf_cstr(&r.body), "new3\n"));
	curl_easy_cleanup(c);
	buf_release(&r.body);
	free(url);
	usleep(300000);
	/* the server may already have noticed the hang-up; at the latest, the final log ends it */
	assert_true(kl_logs_streams(s.l) <= 1);
	assert_int_equal(chmod(g_log, 0440), 0);
	int64_t end = mono_ms() + 3000;
	while (kl_logs_streams(s.l) && mono_ms() < end)
		usleep(50000);
	assert_int_equal(kl_logs_streams(s.l), 0);
	kl_logs_stop(s.l);
}

/* End to end with the process runtime: follow a real container until it exits. */
static void test_follow_process_container(void **state)
{
	struct runtime *rt = runtime_process.create(g_root, "/proc/self/exe");
	assert_non_null(rt);
	struct server s;
	start(&s, NULL, &runtime_process, rt);
	char *cmd[] = { "sh", "-c", "echo first; sleep 1; echo second", NULL };
	struct rt_env env = { 0 };
	struct rt_container c = { .name = "main", .image = "x", .command = cmd, .env = &env };
	struct rt_pod p = { .uid = "uid-f", .tenant = "acme", .ns = "prod", .name = "job", .restart = RT_RESTART_NEVER,
			    .grace_s = 1, .containers = &c, .ncontainers = 1 };
	char *err = NULL;
	assert_int_equal(runtime_process.start_pod(rt, &p, &err), 0);
	struct bg_get g = { .port = s.port, .path = "/containerLogs/prod/job/main?tenant=acme&follow=true" };
	pthread_t th;
	int64_t t0 = mono_ms();
	assert_int_equal(pthread_create(&th, NULL, bg_main, &g), 0);
	pthread_join(th, NULL);
	assert_true(g.done_ms - t0 >= 700);
	assert_int_equal(g.r.status, 200);
	assert_string_equal(buf_cstr(&g.r.body), "first\nsecond\n");
	buf_release(&g.r.body);

	struct reply r;
	http_get(s.port, "/containerLogs/prod/job/main", NULL, &r);
	assert_int_equal(r.status, 404); /* tenant defaults to "system" */
	buf_release(&r.body);
	runtime_process.remove_pod(rt, "uid-f");
	http_get(s.port, "/containerLogs/prod/job/main?tenant=acme", NULL, &r);
	assert_int_equal(r.status, 404);
	buf_release(&r.body);
	kl_logs_stop(s.l);
	runtime_process.destroy(rt);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "shim"))
		return shim_main(argc - 1, argv + 1);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_plain_tail_limit_since, setup, teardown),
		cmocka_unit_test_setup_teardown(test_auth_token, setup, teardown),
		cmocka_unit_test_setup_teardown(test_follow_appended_lines, setup, teardown),
		cmocka_unit_test_setup_teardown(test_follow_client_gone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_follow_process_container, setup, teardown),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return r;
}
