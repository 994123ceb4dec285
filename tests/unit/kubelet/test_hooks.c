/* Lifecycle hooks: spec parsing, the event reasons and messages, the grace left after a preStop,
 * runs of exec (through fake runtime ops), sleep and httpGet hooks (against a local listener), and
 * postStart runs watched from status() with a kill after a failure. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "hooks.h"
#include "ursa/errors.h"
#include "ursa/timeutil.h"

static int parse(const char *container_json, struct rt_hook *hooks[RT_HOOK_KINDS])
{
	json_error_t je;
	json_t *c = json_loads(container_json, 0, &je);
	assert_non_null(c);
	struct buf err = BUF_INIT;
	int rc = kl_hooks_from_json(c, hooks, &err);
	if (rc)
		assert_true(err.len > 0);
	buf_release(&err);
	json_decref(c);
	return rc;
}

static void test_parse(void **state)
{
	(void)state;
	struct rt_hook *h[RT_HOOK_KINDS];
	assert_int_equal(parse("{\"name\":\"c\"}", h), 0);
	assert_null(h[0]);
	assert_null(h[1]);
	assert_int_equal(parse("{\"name\":\"c\",\"ports\":[{\"name\":\"web\",\"containerPort\":8080}],"
			       "\"lifecycle\":{\"postStart\":{\"exec\":{\"command\":[\"sh\",\"-c\",\"true\"]}},"
			       "\"preStop\":{\"httpGet\":{\"path\":\"bye\",\"port\":\"web\",\"host\":\"10.0.0.1\"}}}}",
			       h),
			 0);
	assert_non_null(h[RT_HOOK_POST_START]);
	assert_int_equal(h[RT_HOOK_POST_START]->action->handler, RT_PROBE_EXEC);
	assert_string_equal(h[RT_HOOK_POST_START]->action->exec[2], "true");
	assert_null(h[RT_HOOK_POST_START]->action->exec[3]);
	assert_int_equal(h[RT_HOOK_PRE_STOP]->action->handler, RT_PROBE_HTTP);
	assert_string_equal(h[RT_HOOK_PRE_STOP]->action->path, "/bye");
	assert_int_equal(h[RT_HOOK_PRE_STOP]->action->port, 8080);
	assert_string_equal(h[RT_HOOK_PRE_STOP]->action->host, "10.0.0.1");
	struct rt_hook *d = rt_hook_dup(h[RT_HOOK_PRE_STOP]);
	assert_string_equal(d->action->path, "/bye");
	rt_hook_free(d);
	rt_hook_free(h[0]);
	rt_hook_free(h[1]);
	assert_int_equal(parse("{\"name\":\"c\",\"lifecycle\":{\"preStop\":{\"sleep\":{\"seconds\":5}}}}", h), 0);
	assert_null(h[RT_HOOK_POST_START]);
	assert_null(h[RT_HOOK_PRE_STOP]->action);
	assert_int_equal(h[RT_HOOK_PRE_STOP]->sleep_s, 5);
	rt_hook_free(h[1]);
	assert_int_equal(parse("{\"name\":\"c\",\"lifecycle\":{\"preStop\":{\"tcpSocket\":{\"port\":80}}}}", h), 0);
	assert_int_equal(h[RT_HOOK_PRE_STOP]->action->handler, RT_PROBE_TCP);
	rt_hook_free(h[1]);
	/* refused: no handler, two handlers, bad pieces; nothing is left allocated */
	const char *bad[] = {
		"{\"name\":\"c\",\"lifecycle\":[]}",
		"{\"name\":\"c\",\"lifecycle\":{\"postStart\":{}}}",
		"{\"name\":\"c\",\"lifecycle\":{\"postStart\":{\"exec\":{\"command\":[\"a\"]},\"sleep\":{\"seconds\":1}}}}",
		"{\"name\":\"c\",\"lifecycle\":{\"postStart\":{\"exec\":{\"command\":[]}}}}",
		"{\"name\":\"c\",\"lifecycle\":{\"postStart\":{\"exec\":{\"command\":[\"a\"]}},\"preStop\":{\"exec\":{}}}}",
		"{\"name\":\"c\",\"lifecycle\":{\"preStop\":{\"httpGet\":{\"port\":\"nope\"}}}}",
		"{\"name\":\"c\",\"lifecycle\":{\"preStop\":{\"httpGet\":{\"port\":70000}}}}",
		"{\"name\":\"c\",\"lifecycle\":{\"preStop\":{\"sleep\":{\"seconds\":-1}}}}",
		"{\"name\":\"c\",\"lifecycle\":{\"preStop\":{\"sleep\":{}}}}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		assert_int_equal(parse(bad[i], h), E_INVALID);
		assert_null(h[0]);
		assert_null(h[1]);
	}
}

static void test_pure(void **state)
{
	(void)state;
	assert_string_equal(hook_event_reason(RT_HOOK_POST_START), "FailedPostStartHook");
	assert_string_equal(hook_event_reason(RT_HOOK_PRE_STOP), "FailedPreStopHook");
	assert_int_equal(hook_grace_left(30, 0), 30);
	assert_int_equal(hook_grace_left(30, 4999), 26);
	assert_int_equal(hook_grace_left(30, 29000), HOOK_MIN_GRACE_S);
	assert_int_equal(hook_grace_left(30, 90000), HOOK_MIN_GRACE_S);
	assert_int_equal(hook_grace_left(1, 0), HOOK_MIN_GRACE_S);

	struct rt_hook *h[RT_HOOK_KINDS];
	assert_int_equal(parse("{\"name\":\"c\",\"lifecycle\":{\"postStart\":{\"exec\":{\"command\":[\"sh\",\"-c\","
			       "\"exit 3\"]}},\"preStop\":{\"httpGet\":{\"path\":\"/q\",\"port\":1}}}}",
			       h),
			 0);
	struct buf m = BUF_INIT;
	hook_message(h[0], "c", "p", "ns", "u1", "command 'sh -c exit 3' exited with 3: oops", "oops", &m);
	assert_string_equal(buf_cstr(&m), "Exec lifecycle hook ([sh -c exit 3]) for Container \"c\" in Pod \"p_ns(u1)\" "
					  "failed - error: command 'sh -c exit 3' exited with 3: oops, message: \"oops\"");
	buf_reset(&m);
	hook_message(h[1], "c", "p", "ns", "u1", "Get \"http://x:1/q\": refused", NULL, &m);
	assert_string_equal(buf_cstr(&m), "HTTP lifecycle hook (/q) for Container \"c\" in Pod \"p_ns(u1)\" failed - "
					  "error: Get \"http://x:1/q\": refused");
	buf_release(&m);
	rt_hook_free(h[0]);
	rt_hook_free(h[1]);
}

/* ---- runs with a fake runtime ---- */

static int g_exec_code, g_exec_rc, g_execs, g_kills;
static long long g_kill_grace;
static char g_last_cid[64];

static int fake_exec(void *ud, const char *cid, char *const *cmd, int timeout_s, struct buf *out, int *ret_code)
{
	(void)ud, (void)timeout_s;
	__atomic_add_fetch(&g_execs, 1, __ATOMIC_SEQ_CST);
	snprintf(g_last_cid, sizeof(g_last_cid), "%s", cid);
	buf_addf(out, "ran %s\n", cmd[0]);
	*ret_code = g_exec_code;
	return g_exec_rc;
}

static void fake_kill(void *ud, const char *uid, const char *container, const char *cid, long long grace_s)
{
	(void)ud, (void)uid, (void)container, (void)cid;
	g_kill_grace = grace_s;
	__atomic_add_fetch(&g_kills, 1, __ATOMIC_SEQ_CST);
}

static const struct prober_ops fake_ops = { .exec = fake_exec, .kill = fake_kill };
static int g_owner;

static struct hook_target target(const char *cid)
{
	return (struct hook_target){ .uid = "u1", .tenant = "t", .ns = "ns", .pod = "p", .container = "c", .cid = cid,
				     .ip = "127.0.0.1", .ops = &fake_ops, .ud = &g_owner };
}

static void test_run_exec_sleep(void **state)
{
	(void)state;
	struct rt_hook *h[RT_HOOK_KINDS];
	assert_int_equal(parse("{\"name\":\"c\",\"lifecycle\":{\"postStart\":{\"exec\":{\"command\":[\"x\"]}},"
			       "\"preStop\":{\"sleep\":{\"seconds\":1}}}}",
			       h),
			 0);
	struct hook_target t = target("id1");
	struct buf m = BUF_INIT;
	g_exec_code = 0;
	g_exec_rc = 0;
	assert_int_equal(hook_run(h[0], &t, 5, &m), 0);
	assert_string_equal(g_last_cid, "id1");
	assert_int_equal(m.len, 0);
	g_exec_code = 2;
	assert_int_equal(hook_run(h[0], &t, 5, &m), -1);
	assert_non_null(strstr(buf_cstr(&m), "exited with 2: ran x"));
	buf_reset(&m);
	g_exec_rc = E_TIMEOUT;
	assert_int_equal(hook_run(h[0], &t, 5, &m), E_TIMEOUT);
	buf_reset(&m);
	/* sleep: takes its time, and no more than the timeout */
	int64_t t0 = mono_ms();
	assert_int_equal(hook_run(h[1], &t, 5, &m), 0);
	assert_true(mono_ms() - t0 >= 950);
	h[1]->sleep_s = 100;
	t0 = mono_ms();
	assert_int_equal(hook_run(h[1], &t, 1, &m), E_TIMEOUT);
	assert_true(mono_ms() - t0 < 3000);
	/* preStop: counts against the grace period; none with grace 0 */
	h[1]->sleep_s = 1;
	t0 = mono_ms();
	assert_int_equal(hook_pre_stop(h[1], &t, 10), 9);
	assert_int_equal(hook_pre_stop(h[1], &t, 0), 0);
	assert_true(mono_ms() - t0 < 1900);
	assert_int_equal(hook_pre_stop(NULL, &t, 7), 7);
	/* several at once: the slowest decides */
	struct hook_job jobs[2] = { { .t = t, .h = h[1] }, { .t = t, .h = h[1] } };
	t0 = mono_ms();
	assert_int_equal(hooks_pre_stop_all(jobs, 2, 20), 19);
	assert_true(mono_ms() - t0 < 1900);
	buf_release(&m);
	rt_hook_free(h[0]);
	rt_hook_free(h[1]);
}

/* A listener answering one request with a status line; the request's first line and headers go
 * to g_req. */
static char g_req[2048];
static void *serve_one(void *arg)
{
	int lfd = *(int *)arg;
	int fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		return NULL;
	ssize_t n = read(fd, g_req, sizeof(g_req) - 1);
	g_req[n > 0 ? n : 0] = '\0';
	const char *resp = "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
	(void)!write(fd, resp, strlen(resp));
	close(fd);
	return NULL;
}

static void test_run_http(void **state)
{
	(void)state;
	int lfd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(lfd, 4), 0);
	getsockname(lfd, (struct sockaddr *)&a, &al);
	char json[256];
	snprintf(json, sizeof(json),
		 "{\"name\":\"c\",\"lifecycle\":{\"preStop\":{\"httpGet\":{\"path\":\"/bye\",\"port\":%d,"
		 "\"httpHeaders\":[{\"name\":\"X-Who\",\"value\":\"me\"}]}}}}",
		 ntohs(a.sin_port));
	struct rt_hook *h[RT_HOOK_KINDS];
	assert_int_equal(parse(json, h), 0);
	pthread_t th;
	pthread_create(&th, NULL, serve_one, &lfd);
	struct hook_target t = target("id1");
	struct buf m = BUF_INIT;
	/* any answer counts as success (Kubernetes does not look at the status code) */
	assert_int_equal(hook_run(h[1], &t, 5, &m), 0);
	pthread_join(th, NULL);
	assert_non_null(strstr(g_req, "GET /bye HTTP/1.1"));
	assert_non_null(strstr(g_req, "X-Who: me"));
	assert_non_null(strstr(g_req, "User-Agent: kube-lifecycle/"));
	close(lfd); /* nobody listens any more: fails */
	assert_int_equal(hook_run(h[1], &t, 5, &m), -1);
	assert_non_null(strstr(buf_cstr(&m), "HTTP lifecycle hook (/bye)"));
	buf_release(&m);
	rt_hook_free(h[1]);
}

static enum hook_state wait_state(const struct hook_target *t, const struct rt_hook *post, const struct rt_hook *pre)
{
	enum hook_state st = HOOK_RUNNING;
	for (int i = 0; i < 300 && st == HOOK_RUNNING; i++) {
		st = hooks_post_start(t, post, pre, 5);
		if (st == HOOK_RUNNING)
			usleep(10000);
	}
	return st;
}

static void test_post_start_runs(void **state)
{
	(void)state;
	struct rt_hook *h[RT_HOOK_KINDS];
	assert_int_equal(parse("{\"name\":\"c\",\"lifecycle\":{\"postStart\":{\"exec\":{\"command\":[\"x\"]}}}}", h), 0);
	g_exec_rc = 0;
	g_exec_code = 0;
	g_execs = g_kills = 0;
	struct hook_target t = target("inst1");
	assert_int_equal(wait_state(&t, h[0], NULL), HOOK_DONE);
	assert_int_equal(hooks_post_start(&t, h[0], NULL, 5), HOOK_DONE);
	assert_int_equal(g_execs, 1); /* once per instance */
	assert_int_equal(g_kills, 0);
	/* a new instance whose hook fails: killed with the pod's grace (no preStop) */
	g_exec_code = 1;
	t = target("inst2");
	assert_int_equal(wait_state(&t, h[0], NULL), HOOK_FAILED);
	for (int i = 0; i < 300 && !__atomic_load_n(&g_kills, __ATOMIC_SEQ_CST); i++)
		usleep(10000);
	assert_int_equal(g_execs, 2);
	assert_int_equal(g_kills, 1);
	assert_int_equal(g_kill_grace, 5);
	assert_int_equal(hooks_post_start(&t, h[0], NULL, 5), HOOK_FAILED);
	hooks_forget_pod("u1");
	/* forgotten: a new call runs the hook again */
	g_exec_code = 0;
	assert_int_equal(wait_state(&t, h[0], NULL), HOOK_DONE);
	assert_int_equal(g_execs, 3);
	hooks_forget_owner(&g_owner);
	rt_hook_free(h[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_pure),
		cmocka_unit_test(test_run_exec_sleep),
		cmocka_unit_test(test_run_http),
		cmocka_unit_test(test_post_start_runs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
