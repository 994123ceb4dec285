/* Test environment for the client library: a real etcd and a real ursa-tp-apiserver on free
 * loopback ports in a temporary directory, plus small helpers. Include after cmocka.h. */
#ifndef URSA_TEST_CLIENT_TESTLIB_H
#define URSA_TEST_CLIENT_TESTLIB_H
#include <arpa/inet.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "ursa/buf.h"
#include "ursa/client.h"
#include "ursa/jsonutil.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define TL_TOKEN "TOKEN"

/* One API server process; cert/key set means HTTPS. */
struct tl_api {
	char *listen, *url, *log;
	char *cert, *key;
	pid_t pid;
};

#define TL_MAX_API 3
struct tl_env {
	char *dir;
	char *api_bin;
	char *etcd_url, *etcd_peer_url, *token_file;
	char *api_url; /* api[0].url */
	struct tl_api api[TL_MAX_API];
	pid_t etcd_pid;
};

static inline void tl_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* Free loopback ports: all bound at once (so they differ), then released. */
static inline void tl_free_ports(int *ports, size_t n)
{
	int fds[8];
	for (size_t i = 0; i < n && i < 8; i++) {
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t len = sizeof(a);
		fds[i] = socket(AF_INET, SOCK_STREAM, 0);
		assert_true(fds[i] >= 0);
		assert_int_equal(bind(fds[i], (struct sockaddr *)&a, sizeof(a)), 0);
		assert_int_equal(getsockname(fds[i], (struct sockaddr *)&a, &len), 0);
		ports[i] = ntohs(a.sin_port);
	}
	for (size_t i = 0; i < n && i < 8; i++)
		close(fds[i]);
}

/* The API server binary: $URSA_BUILD_DIR/src/tenant-partition/ursa-tp-apiserver, else next
 * to this test's build tree. New string or NULL when it was not built. */
static inline char *tl_find_api_bin(void)
{
	const char *bd = getenv("URSA_BUILD_DIR");
	char *p;
	if (bd) {
		p = xasprintf("%s/src/tenant-partition/ursa-tp-apiserver", bd);
	} else {
		struct buf exe = BUF_INIT;
		buf_grow(&exe, 4096);
		ssize_t n = readlink("/proc/self/exe", exe.ptr, 4095);
		if (n <= 0) {
			buf_release(&exe);
			return NULL;
		}
		exe.ptr[n] = '\0';
		p = xasprintf("%s/../src/tenant-partition/ursa-tp-apiserver", dirname(exe.ptr));
		buf_release(&exe);
	}
	if (access(p, X_OK)) {
		free(p);
		return NULL;
	}
	return p;
}

static inline pid_t tl_spawn(const char *log, char *const argv[])
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static inline void tl_kill(pid_t *pid, int sig)
{
	if (*pid <= 0)
		return;
	kill(*pid, sig);
	waitpid(*pid, NULL, 0);
	*pid = 0;
}

/* A plain GET with the test token; the HTTP status or a negative code. */
static inline int tl_get_status(const char *url_base, const char *path)
{
	struct rest_config cfg = { .servers = url_base, .token = TL_TOKEN, .timeout_ms = 2000 };
	struct rest_client *c = rest_new(&cfg);
	int rc = rest_do_raw(c, "GET", path, NULL, 0, NULL, NULL);
	rest_free(c);
	return rc;
}

static inline void tl_start_etcd(struct tl_env *e)
{
	char *data = xasprintf("%s/etcd", e->dir), *log = xasprintf("%s/etcd.log", e->dir);
	char *argv[] = { "/usr/bin/etcd", "--data-dir", data, "--listen-client-urls", e->etcd_url,
			 "--advertise-client-urls", e->etcd_url, "--listen-peer-urls", e->etcd_peer_url,
			 "--initial-advertise-peer-urls", e->etcd_peer_url, "--initial-cluster",
			 NULL /* set below */, "--logger", "zap", "--log-level", "error", NULL };
	char *initial = xasprintf("default=%s", e->etcd_peer_url);
	argv[12] = initial;
	e->etcd_pid = tl_spawn(log, argv);
	int64_t deadline = mono_ms() + 15000;
	while (tl_get_status(e->etcd_url, "/health") != 200) {
		if (mono_ms() > deadline)
			fail_msg("etcd did not start; see %s", log);
		tl_sleep_ms(50);
	}
	free(initial);
	free(data);
	free(log);
}

/* Starts API server i (its address was chosen by tl_env_up) and waits until it answers. */
static inline void tl_start_api_n(struct tl_env *e, int i)
{
	struct tl_api *a = &e->api[i];
	char *argv[16] = { e->api_bin, "--listen", a->listen, "--etcd-servers", e->etcd_url,
			   "--token-auth-file", e->token_file, "--log-level", "warn" };
	int n = 9;
	if (a->cert) {
		argv[n++] = "--tls-cert-file";
		argv[n++] = a->cert;
		argv[n++] = "--tls-private-key-file";
		argv[n++] = a->key;
	}
	argv[n] = NULL;
	a->pid = tl_spawn(a->log, argv);
	int64_t deadline = mono_ms() + 15000;
	for (;;) {
		struct rest_config cfg = { .servers = a->url, .token = TL_TOKEN, .timeout_ms = 2000, .ca_file = a->cert };
		struct rest_client *c = rest_new(&cfg);
		int rc = rest_do_raw(c, "GET", "/api/v1/tenants", NULL, 0, NULL, NULL);
		rest_free(c);
		if (rc == 200)
			break;
		if (mono_ms() > deadline)
			fail_msg("apiserver %d did not start; see %s", i, a->log);
		tl_sleep_ms(30);
	}
}

static inline void tl_start_api(struct tl_env *e)
{
	tl_start_api_n(e, 0);
}

static inline void tl_stop_api_n(struct tl_env *e, int i)
{
	tl_kill(&e->api[i].pid, SIGKILL);
}

static inline void tl_stop_api(struct tl_env *e)
{
	tl_stop_api_n(e, 0);
}

/* Makes API server i serve HTTPS with a fresh self-signed certificate for 127.0.0.1 (call
 * before starting it). */
static inline void tl_api_tls(struct tl_env *e, int i)
{
	struct tl_api *a = &e->api[i];
	a->cert = xasprintf("%s/api%d.crt", e->dir, i);
	a->key = xasprintf("%s/api%d.key", e->dir, i);
	char *cmd = xasprintf("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 "
			      "-addext subjectAltName=IP:127.0.0.1 -keyout %s -out %s >/dev/null 2>&1",
			      a->key, a->cert);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	free(a->url);
	a->url = xasprintf("https://%s", a->listen);
	if (i == 0)
		e->api_url = a->url;
}

/* etcd's current revision. */
static inline long long tl_etcd_revision(struct tl_env *e)
{
	struct rest_config cfg = { .servers = e->etcd_url, .timeout_ms = 3000 };
	struct rest_client *c = rest_new(&cfg);
	json_t *body = NULL, *req = json_pack("{s:s}", "key", "AA==");
	long long rev = 0;
	assert_int_equal(rest_do(c, "POST", "/v3/kv/range", req, NULL, &body), 200);
	assert_int_equal(parse_int64(json_path_str(body, "header.revision"), &rev), 0);
	json_decref(req);
	json_decref(body);
	rest_free(c);
	return rev;
}

/* Physically compacts etcd's history up to its current revision. */
static inline void tl_etcd_compact(struct tl_env *e)
{
	struct rest_config cfg = { .servers = e->etcd_url, .timeout_ms = 5000 };
	struct rest_client *c = rest_new(&cfg);
	char *rev = xasprintf("%lld", tl_etcd_revision(e));
	json_t *req = json_pack("{s:s,s:b}", "revision", rev, "physical", 1);
	assert_int_equal(rest_do(c, "POST", "/v3/kv/compaction", req, NULL, NULL), 200);
	json_decref(req);
	free(rev);
	rest_free(c);
}

/* Starts etcd and the API server; returns false (test should skip) without the binary. */
static inline bool tl_env_up(struct tl_env *e)
{
	char tmpl[] = "/tmp/ursa-client-test-XXXXXX";
	int ports[2 + TL_MAX_API];
	FILE *f;

	memset(e, 0, sizeof(*e));
	e->api_bin = tl_find_api_bin();
	if (!e->api_bin)
		return false;
	assert_non_null(mkdtemp(tmpl));
	e->dir = xstrdup(tmpl);
	tl_free_ports(ports, 2 + TL_MAX_API);
	e->etcd_url = xasprintf("http://127.0.0.1:%d", ports[0]);
	e->etcd_peer_url = xasprintf("http://127.0.0.1:%d", ports[1]);
	for (int i = 0; i < TL_MAX_API; i++) {
		e->api[i].listen = xasprintf("127.0.0.1:%d", ports[2 + i]);
		e->api[i].url = xasprintf("http://127.0.0.1:%d", ports[2 + i]);
		e->api[i].log = xasprintf("%s/apiserver%d.log", e->dir, i);
	}
	e->api_url = e->api[0].url;
	e->token_file = xasprintf("%s/tokens.csv", e->dir);
	f = fopen(e->token_file, "w");
	assert_non_null(f);
	fprintf(f, "%s,admin,uid1,\"system:masters\",system\n", TL_TOKEN);
	fclose(f);
	tl_start_etcd(e);
	tl_start_api(e);
	return true;
}

static inline int tl_rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static inline void tl_env_down(struct tl_env *e)
{
	for (int i = 0; i < TL_MAX_API; i++)
		tl_kill(&e->api[i].pid, SIGKILL);
	tl_kill(&e->etcd_pid, SIGKILL);
	if (e->dir && !getenv("URSA_KEEP_TEST_DIR"))
		nftw(e->dir, tl_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(e->dir);
	free(e->api_bin);
	free(e->etcd_url);
	free(e->etcd_peer_url);
	for (int i = 0; i < TL_MAX_API; i++) {
		free(e->api[i].listen);
		free(e->api[i].url);
		free(e->api[i].log);
		free(e->api[i].cert);
		free(e->api[i].key);
	}
	free(e->token_file);
	memset(e, 0, sizeof(*e));
}

static inline struct rest_client *tl_client(const struct tl_env *e)
{
	struct rest_config cfg = { .servers = e->api_url, .token = TL_TOKEN, .timeout_ms = 5000 };
	return rest_new(&cfg);
}

/* POSTs a JSON literal; asserts the status. */
static inline void tl_post(struct rest_client *c, const char *path, const char *json, int want)
{
	int rc = rest_do_raw(c, "POST", path, json, strlen(json), NULL, NULL);
	if (rc != want && !(want == 201 && rc == 200))
		fail_msg("POST %s: status %d, want %d", path, rc, want);
}

static inline void tl_create_tenant(struct rest_client *c, const char *name)
{
	char *body = xasprintf("{\"apiVersion\":\"v1\",\"kind\":\"Tenant\",\"metadata\":{\"name\":\"%s\"}}", name);
	tl_post(c, "/api/v1/tenants", body, 201);
	free(body);
}

/* Polls cond(ud) every 20 ms up to timeout_ms; returns whether it became true. */
static inline bool tl_wait(bool (*cond)(void *ud), void *ud, int64_t timeout_ms)
{
	int64_t deadline = mono_ms() + timeout_ms;
	while (!cond(ud)) {
		if (mono_ms() > deadline)
			return false;
		tl_sleep_ms(20);
	}
	return true;
}

#endif
