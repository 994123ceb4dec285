/* The health and metrics endpoint (ursa/health.h) on loopback: probes answer "ok", /metrics
 * carries ursa_leader as set, the start time and the daemon's own families, other paths are 404
 * and other methods 405, and a taken address is refused. */
#include <curl/curl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "../support/testnet.h"
#include "ursa/health.h"
#include "ursa/xalloc.h"

static int port;

/* GET (or method) path; returns the status, the body in *body. */
static long request(const char *method, const char *path, struct buf *body)
{
	char url[128];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
	CURL *c = curl_easy_init();
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, test_body_to_buf);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
	long code = 0;
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(c);
	buf_addch(body, '\0');
	return code;
}

static void own_metrics(void *ud, struct buf *out)
{
	health_counter(out, "test_things_total", "Things.", *(long long *)ud);
	health_gauge(out, "test_level", "Level.", -3);
}

static void test_probes_and_metrics(void **state)
{
	(void)state;
	long long things = 42;
	char *err = NULL, listen[32];
	port = test_free_port();
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	struct health_server *h = health_start(listen, "ursa-test", own_metrics, &things, &err);
	assert_non_null(h);

	static const char *const probes[] = { "/healthz", "/livez", "/readyz" };
	for (size_t i = 0; i < 3; i++) {
		struct buf b = BUF_INIT;
		assert_int_equal(request("GET", probes[i], &b), 200);
		assert_string_equal(b.ptr, "ok");
		buf_release(&b);
	}

	struct buf b = BUF_INIT;
	assert_int_equal(request("GET", "/metrics", &b), 200);
	assert_non_null(strstr(b.ptr, "# TYPE ursa_leader gauge\nursa_leader{component=\"ursa-test\"} 1\n"));
	assert_non_null(strstr(b.ptr, "\nprocess_start_time_seconds "));
	assert_non_null(strstr(b.ptr, "# TYPE test_things_total counter\ntest_things_total 42\n"));
	assert_non_null(strstr(b.ptr, "\ntest_level -3\n"));
	buf_release(&b);

	health_set_leader(h, false);
	things = 43;
	assert_int_equal(request("GET", "/metrics", &b), 200);
	assert_non_null(strstr(b.ptr, "ursa_leader{component=\"ursa-test\"} 0\n"));
	assert_non_null(strstr(b.ptr, "test_things_total 43\n"));
	buf_release(&b);

	assert_int_equal(request("GET", "/healthz/x", &b), 404);
	buf_release(&b);
	assert_int_equal(request("POST", "/healthz", &b), 405);
	buf_release(&b);

	/* a second server on the same address is refused with a message */
	struct health_server *again = health_start(listen, "ursa-test", NULL, NULL, &err);
	assert_null(again);
	assert_non_null(err);
	assert_non_null(strstr(err, listen));
	free(err);

	health_stop(h);
	health_stop(NULL);
}

int main(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_probes_and_metrics),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
