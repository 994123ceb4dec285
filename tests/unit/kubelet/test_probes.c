/* Probes: spec parsing with Kubernetes' defaults, the result/threshold state machine, the HTTP
 * status mapping, the schedule, the gRPC health messages, tcp and local exec runs, and the
 * prober end to end with a fake runtime (readiness, liveness kill, startup gating). */
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
#include "probes.h"
#include "ursa/errors.h"
#include "ursa/timeutil.h"

static struct rt_probe *parse(const char *container_json, const char *field, enum rt_probe_kind kind, int *ret_rc)
{
	json_error_t je;
	json_t *c = json_loads(container_json, 0, &je);
	assert_non_null(c);
	struct rt_probe *p = NULL;
	struct buf err = BUF_INIT;
	*ret_rc = kl_probe_from_json(json_object_get(c, field), c, kind, &p, &err);
	if (*ret_rc)
		assert_true(err.len > 0);
	buf_release(&err);
	json_decref(c);
	return p;
}

static void test_parse_defaults(void **state)
{
	(void)state;
	int rc;
	struct rt_probe *p = parse("{\"name\":\"c\",\"readinessProbe\":{\"httpGet\":{\"path\":\"ready\",\"port\":8080}}}",
				   "readinessProbe", RT_PROBE_READINESS, &rc);
	assert_int_equal(rc, 0);
	assert_non_null(p);
	assert_int_equal(p->handler, RT_PROBE_HTTP);
	assert_string_equal(p->path, "/ready");
	assert_int_equal(p->port, 8080);
	assert_null(p->host);
	assert_false(p->https);
	assert_int_equal(p->initial_delay_s, 0);
	assert_int_equal(p->period_s, 10);
	assert_int_equal(p->timeout_s, 1);
	assert_int_equal(p->success_threshold, 1);
	assert_int_equal(p->failure_threshold, 3);
	assert_int_equal(p->grace_s, -1);
	struct rt_probe *d = rt_probe_dup(p);
	assert_string_equal(d->path, "/ready");
	rt_probe_free(p);
	rt_probe_free(d);
}

static void test_parse_kinds(void **state)
{
	(void)state;
	int rc;
	struct rt_probe *p = parse("{\"name\":\"c\",\"ports\":[{\"name\":\"web\",\"containerPort\":80}],"
				   "\"livenessProbe\":{\"tcpSocket\":{\"port\":\"web\"},\"periodSeconds\":2,"
				   "\"failureThreshold\":1,\"initialDelaySeconds\":5,\"terminationGracePeriodSeconds\":3}}",
				   "livenessProbe", RT_PROBE_LIVENESS, &rc);
	assert_int_equal(rc, 0);
	assert_int_equal(p->handler, RT_PROBE_TCP);
	assert_int_equal(p->port, 80);
	assert_int_equal(p->period_s, 2);
	assert_int_equal(p->failure_threshold, 1);
	assert_int_equal(p->initial_delay_s, 5);
	assert_int_equal(p->grace_s, 3);
	rt_probe_free(p);
	p = parse("{\"name\":\"c\",\"startupProbe\":{\"exec\":{\"command\":[\"cat\",\"/tmp/x\"]}}}", "startupProbe",
		  RT_PROBE_STARTUP, &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(p->exec[0], "cat");
	assert_string_equal(p->exec[1], "/tmp/x");
	assert_null(p->exec[2]);
	rt_probe_free(p);
	p = parse("{\"name\":\"c\",\"readinessProbe\":{\"grpc\":{\"port\":9090,\"service\":\"s\"}}}", "readinessProbe",
		  RT_PROBE_READINESS, &rc);
	assert_int_equal(rc, 0);
	assert_int_equal(p->handler, RT_PROBE_GRPC);
	assert_string_equal(p->service, "s");
	rt_probe_free(p);
	p = parse("{\"name\":\"c\"}", "readinessProbe", RT_PROBE_READINESS, &rc);
	assert_int_equal(rc, 0);
	assert_null(p);
}

static void test_parse_invalid(void **state)
{
	(void)state;
	const char *bad[] = {
		"{\"name\":\"c\",\"livenessProbe\":{}}",
		"{\"name\":\"c\",\"livenessProbe\":{\"exec\":{\"command\":[\"a\"]},\"tcpSocket\":{\"port\":1}}}",
		"{\"name\":\"c\",\"livenessProbe\":{\"tcpSocket\":{\"port\":\"nope\"}}}",
		"{\"name\":\"c\",\"livenessProbe\":{\"tcpSocket\":{\"port\":70000}}}",
		"{\"name\":\"c\",\"livenessProbe\":{\"exec\":{\"command\":[]}}}",
		"{\"name\":\"c\",\"livenessProbe\":{\"exec\":{\"command\":[\"a\"]},\"periodSeconds\":-1}}",
		"{\"name\":\"c\",\"livenessProbe\":{\"exec\":{\"command\":[\"a\"]},\"successThreshold\":2}}",
		"{\"name\":\"c\",\"livenessProbe\":{\"httpGet\":{\"port\":80,\"scheme\":\"FTP\"}}}",
		"{\"name\":\"c\",\"livenessProbe\":{\"httpGet\":{\"port\":80,\"httpHeaders\":[{\"name\":\"a:b\"}]}}}",
		"{\"name\":\"c\",\"livenessProbe\":\"x\"}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc;
		struct rt_probe *p = parse(bad[i], "livenessProbe", RT_PROBE_LIVENESS, &rc);
		if (rc != E_INVALID)
			fail_msg("accepted: %s", bad[i]);
		assert_null(p);
	}
	int rc;
	struct rt_probe *p = parse("{\"name\":\"c\",\"readinessProbe\":{\"exec\":{\"command\":[\"a\"]},"
				   "\"successThreshold\":2}}", "readinessProbe", RT_PROBE_READINESS, &rc);
	assert_int_equal(rc, 0);
	assert_int_equal(p->success_threshold, 2);
	rt_probe_free(p);
}

static void test_state_machine(void **state)
{
	(void)state;
	struct rt_probe p = { .success_threshold = 2, .failure_threshold = 3 };
	struct probe_state s;
	probe_state_init(&s, RT_PROBE_READINESS);
	assert_int_equal(s.result, PROBE_FAILURE);
	assert_false(probe_state_record(&s, true, &p));
	assert_int_equal(s.result, PROBE_FAILURE);
	assert_true(probe_state_record(&s, true, &p));
	assert_int_equal(s.result, PROBE_SUCCESS);
	assert_false(probe_state_record(&s, true, &p));
	assert_false(probe_state_record(&s, false, &p));
	assert_false(probe_state_record(&s, false, &p));
	assert_false(probe_state_record(&s, true, &p)); /* the run of failures broke */
	assert_false(probe_state_record(&s, false, &p));
	assert_false(probe_state_record(&s, false, &p));
	assert_true(probe_state_record(&s, false, &p));
	assert_int_equal(s.result, PROBE_FAILURE);

	probe_state_init(&s, RT_PROBE_LIVENESS);
	assert_int_equal(s.result, PROBE_SUCCESS);
	struct rt_probe l = { .success_threshold = 1, .failure_threshold = 1 };
	assert_false(probe_state_record(&s, true, &l));
	assert_true(probe_state_record(&s, false, &l));

	probe_state_init(&s, RT_PROBE_STARTUP);
	assert_int_equal(s.result, PROBE_UNKNOWN);
	assert_true(probe_state_record(&s, true, &l));
	assert_int_equal(s.result, PROBE_SUCCESS);
}

static void test_http_and_schedule(void **state)
{
	(void)state;
	assert_false(probe_http_ok(199));
	assert_true(probe_http_ok(200));
	assert_true(probe_http_ok(302));
	assert_true(probe_http_ok(399));
	assert_false(probe_http_ok(400));
	assert_false(probe_http_ok(404));
	assert_false(probe_http_ok(500));
	assert_false(probe_http_ok(0));
	struct rt_probe p = { .initial_delay_s = 5, .period_s = 2 };
	assert_int_equal(probe_first_due(&p, 1000000), 1005000);
	assert_int_equal(probe_next_due(&p, 1005300), 1007300);
	assert_string_equal(probe_kind_title(RT_PROBE_LIVENESS), "Liveness");
	assert_string_equal(probe_kind_title(RT_PROBE_READINESS), "Readiness");
	assert_string_equal(probe_kind_title(RT_PROBE_STARTUP), "Startup");
}

static void test_grpc_messages(void **state)
{
	(void)state;
	struct buf b = BUF_INIT;
	probe_grpc_request(NULL, &b);
	assert_int_equal(b.len, 5);
	assert_memory_equal(b.ptr, "\0\0\0\0\0", 5);
	buf_reset(&b);
	probe_grpc_request("svc", &b);
	assert_int_equal(b.len, 10);
	assert_memory_equal(b.ptr, "\0\0\0\0\x05\x0a\x03svc", 10);
	buf_release(&b);
	const uint8_t serving[] = { 0, 0, 0, 0, 2, 0x08, 0x01 };
	const uint8_t not_serving[] = { 0, 0, 0, 0, 2, 0x08, 0x02 };
	const uint8_t empty[] = { 0, 0, 0, 0, 0 };
	const uint8_t bad_len[] = { 0, 0, 0, 0, 9, 0x08, 0x01 };
	const uint8_t compressed[] = { 1, 0, 0, 0, 2, 0x08, 0x01 };
	const uint8_t truncated[] = { 0, 0, 0, 0, 1, 0x08 };
	const uint8_t unknown_field[] = { 0, 0, 0, 0, 6, 0x12, 0x02, 'h', 'i', 0x08, 0x01 };
	assert_int_equal(probe_grpc_status(serving, sizeof(serving)), 1);
	assert_int_equal(probe_grpc_status(not_serving, sizeof(not_serving)), 2);
	assert_int_equal(probe_grpc_status(empty, sizeof(empty)), 0);
	assert_int_equal(probe_grpc_status(bad_len, sizeof(bad_len)), -1);
	assert_int_equal(probe_grpc_status(compressed, sizeof(compressed)), -1);
	assert_int_equal(probe_grpc_status(truncated, sizeof(truncated)), -1);
	assert_int_equal(probe_grpc_status(unknown_field, sizeof(unknown_field)), 1);
	assert_int_equal(probe_grpc_status(serving, 3), -1);
}

static int listener(int *ret_port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 8), 0);
	socklen_t l = sizeof(a);
	getsockname(fd, (struct sockaddr *)&a, &l);
	*ret_port = ntohs(a.sin_port);
	return fd;
}

static void test_tcp_run(void **state)
{
	(void)state;
	int port;
	int fd = listener(&port);
	struct rt_probe p = { .handler = RT_PROBE_TCP, .port = port, .timeout_s = 1 };
	struct buf msg = BUF_INIT;
	assert_true(probe_run(&p, "127.0.0.1", NULL, NULL, NULL, &msg));
	close(fd);
	assert_false(probe_run(&p, "127.0.0.1", NULL, NULL, NULL, &msg));
	assert_non_null(strstr(buf_cstr(&msg), "connection refused"));
	assert_non_null(strstr(buf_cstr(&msg), "dial tcp 127.0.0.1:"));
	buf_release(&msg);
}

/* A one-shot HTTP server answering with a fixed status. */
struct http_srv {
	int fd, status;
	char request[2048];
};

static void *http_main(void *arg)
{
	struct http_srv *s = arg;
	int c = accept(s->fd, NULL, NULL);
	if (c < 0)
		return NULL;
	ssize_t n = read(c, s->request, sizeof(s->request) - 1);
	if (n > 0)
		s->request[n] = '\0';
	char resp[128];
	int l = snprintf(resp, sizeof(resp), "HTTP/1.1 %d X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", s->status);
	if (write(c, resp, (size_t)l) < 0)
		return NULL;
	close(c);
	return NULL;
}

static bool http_once(int status, struct buf *msg, char *request, size_t max)
{
	int port;
	struct http_srv s = { .status = status };
	s.fd = listener(&port);
	pthread_t th;
	pthread_create(&th, NULL, http_main, &s);
	struct rt_env h = { .name = "X-Probe", .value = "yes" };
	struct rt_probe p = { .handler = RT_PROBE_HTTP, .port = port, .timeout_s = 2, .path = "/healthz",
			      .headers = &h, .nheaders = 1 };
	bool ok = probe_run(&p, "127.0.0.1", NULL, NULL, NULL, msg);
	pthread_join(th, NULL);
	close(s.fd);
	snprintf(request, max, "%s", s.request);
	return ok;
}

static void test_http_run(void **state)
{
	(void)state;
	struct buf msg = BUF_INIT;
	char req[2048];
	assert_true(http_once(200, &msg, req, sizeof(req)));
	assert_non_null(strstr(req, "GET /healthz HTTP/1.1"));
	assert_non_null(strstr(req, "X-Probe: yes"));
	assert_non_null(strstr(req, "User-Agent: kube-probe/"));
	assert_true(http_once(301, &msg, req, sizeof(req)));
	assert_int_equal(msg.len, 0);
	assert_false(http_once(500, &msg, req, sizeof(req)));
	assert_string_equal(buf_cstr(&msg), "HTTP probe failed with statuscode: 500");
	buf_release(&msg);
}

static void test_exec_local(void **state)
{
	(void)state;
	char *cmd[] = { "sh", "-c", "echo hi; echo err >&2; exit 3", NULL };
	struct buf out = BUF_INIT;
	int code = -1;
	assert_int_equal(probe_exec_local(getpid(), cmd, 5, &out, &code), 0);
	assert_int_equal(code, 3);
	assert_string_equal(buf_cstr(&out), "hi\nerr\n");
	buf_reset(&out);
	char *slow[] = { "sleep", "5", NULL };
	int64_t t0 = mono_ms();
	assert_int_equal(probe_exec_local(getpid(), slow, 1, &out, &code), E_TIMEOUT);
	assert_true(mono_ms() - t0 < 3000);
	char *missing[] = { "/nonexistent/cmd", NULL };
	assert_int_equal(probe_exec_local(getpid(), missing, 5, &out, &code), 0);
	assert_int_equal(code, 127);
	buf_release(&out);
}

/* ---- the prober with a fake runtime: exec answers from `healthy`, kill counts ---- */

static pthread_mutex_t f_lock = PTHREAD_MUTEX_INITIALIZER;
static int f_healthy = 1, f_kills, f_execs;
static char f_events[4096];

static int fake_exec(void *ud, const char *cid, char *const *cmd, int timeout_s, struct buf *out, int *ret_code)
{
	(void)ud, (void)cid, (void)cmd, (void)timeout_s;
	pthread_mutex_lock(&f_lock);
	f_execs++;
	*ret_code = f_healthy ? 0 : 1;
	if (!f_healthy)
		buf_adds(out, "cat: can't open '/tmp/healthy': No such file or directory\n");
	pthread_mutex_unlock(&f_lock);
	return 0;
}

static void fake_kill(void *ud, const char *uid, const char *container, const char *cid, long long grace_s)
{
	(void)ud, (void)uid, (void)container, (void)cid, (void)grace_s;
	pthread_mutex_lock(&f_lock);
	f_kills++;
	pthread_mutex_unlock(&f_lock);
}

static void on_event(void *ud, const char *tenant, const char *ns, const char *pod, const char *uid,
		     const char *container, bool warning, const char *reason, const char *message)
{
	(void)ud, (void)tenant, (void)ns, (void)pod, (void)uid, (void)container;
	pthread_mutex_lock(&f_lock);
	size_t l = strlen(f_events);
	snprintf(f_events + l, sizeof(f_events) - l, "%s %s: %s\n", warning ? "Warning" : "Normal", reason, message);
	pthread_mutex_unlock(&f_lock);
}

static const struct prober_ops fake_ops = { .exec = fake_exec, .kill = fake_kill };

static struct rt_probe *exec_probe(int threshold)
{
	struct rt_probe *p = calloc(1, sizeof(*p));
	p->handler = RT_PROBE_EXEC;
	p->exec = calloc(3, sizeof(char *));
	p->exec[0] = strdup("cat");
	p->exec[1] = strdup("/tmp/healthy");
	p->period_s = 1;
	p->timeout_s = 1;
	p->success_threshold = 1;
	p->failure_threshold = threshold;
	p->grace_s = -1;
	return p;
}

static void poll_until(const struct prober_target *t, bool want_ready, bool *ret_started)
{
	bool started = false, ready = !want_ready;
	for (int i = 0; i < 60 && ready != want_ready; i++) {
		prober_container(t, &started, &ready);
		if (ready != want_ready)
			usleep(100000);
	}
	assert_int_equal(ready, want_ready);
	if (ret_started)
		*ret_started = started;
}

static void test_prober(void **state)
{
	(void)state;
	rt_set_event_sink(on_event, NULL);
	struct rt_container c = { .name = "c" };
	struct prober_target t = { .uid = "u1", .tenant = "t", .ns = "default", .pod = "p", .spec = &c, .cid = "id1",
				   .started_at = now_ms() / 1000, .ops = &fake_ops, .ud = &c, .pod_grace_s = 30 };
	bool started, ready;
	/* no probes: started and ready at once */
	prober_container(&t, &started, &ready);
	assert_true(started && ready);

	/* readiness: not ready until the first success; failures make it unready again */
	c.probes[RT_PROBE_READINESS] = exec_probe(1);
	prober_container(&t, &started, &ready);
	assert_true(started);
	poll_until(&t, true, NULL);
	pthread_mutex_lock(&f_lock);
	f_healthy = 0;
	pthread_mutex_unlock(&f_lock);
	poll_until(&t, false, NULL);
	assert_non_null(strstr(f_events, "Warning Unhealthy: Readiness probe failed: cat: can't open"));
	assert_int_equal(f_kills, 0);
	prober_forget_pod("u1");

	/* liveness after a startup probe: the startup probe holds liveness off until it succeeds */
	rt_probe_free(c.probes[RT_PROBE_READINESS]);
	c.probes[RT_PROBE_READINESS] = NULL;
	c.probes[RT_PROBE_STARTUP] = exec_probe(30);
	c.probes[RT_PROBE_LIVENESS] = exec_probe(1);
	t.cid = "id2";
	f_events[0] = '\0';
	prober_container(&t, &started, &ready);
	assert_false(started);
	assert_false(ready);
	usleep(1500000);
	prober_container(&t, &started, &ready);
	assert_false(started);
	assert_int_equal(f_kills, 0); /* failing startup runs under its threshold, liveness not yet run */
	assert_non_null(strstr(f_events, "Startup probe failed"));
	assert_null(strstr(f_events, "Liveness probe failed"));
	pthread_mutex_lock(&f_lock);
	f_healthy = 1;
	pthread_mutex_unlock(&f_lock);
	poll_until(&t, true, &started);
	assert_true(started);
	pthread_mutex_lock(&f_lock);
	f_healthy = 0;
	pthread_mutex_unlock(&f_lock);
	for (int i = 0; i < 40 && f_kills == 0; i++)
		usleep(100000);
	assert_int_equal(f_kills, 1);
	assert_non_null(strstr(f_events, "Warning Unhealthy: Liveness probe failed: cat: can't open"));
	assert_non_null(strstr(f_events, "Normal Killing: Container c failed liveness probe, will be restarted"));
	usleep(1500000);
	assert_int_equal(f_kills, 1); /* on hold until a new instance */
	prober_forget_owner(&c);
	for (int k = 0; k < RT_PROBE_KINDS; k++)
		rt_probe_free(c.probes[k]);
	rt_set_event_sink(NULL, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_defaults),
		cmocka_unit_test(test_parse_kinds),
		cmocka_unit_test(test_parse_invalid),
		cmocka_unit_test(test_state_machine),
		cmocka_unit_test(test_http_and_schedule),
		cmocka_unit_test(test_grpc_messages),
		cmocka_unit_test(test_tcp_run),
		cmocka_unit_test(test_http_run),
		cmocka_unit_test(test_exec_local),
		cmocka_unit_test(test_prober),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
