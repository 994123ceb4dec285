/* spdy_probe: runs one command in a CRI container through the runtime's streaming server with the
 * SPDY codec (ursa/spdy.h), driven by tests/integration/test_spdy_exec.py.
 * Usage: spdy_probe unix:///sock exec CONTAINER_ID STDIN_TEXT CMD [ARGS...]
 * Asks CRI Exec (stdin, stdout, stderr, no tty) for a URL, upgrades to SPDY/3.1 with
 * X-Stream-Protocol-Version v4.channel.k8s.io, opens the error, stdin, stdout and stderr streams as
 * Kubernetes' clients do, writes STDIN_TEXT then FIN on stdin, and reads until the server is done.
 * Prints {"url":..., "http_status":101, "protocol":..., "stdout":..., "stderr":..., "error":...,
 * "pings":N} and exits 0; on failure {"error_probe": "..."} and exit 1; bad usage exits 2. */
#define _GNU_SOURCE
#include "ursa/cri.h"
#include "ursa/errors.h"
#include "ursa/spdy.h"
#include <arpa/inet.h>
#include <jansson.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { S_ERROR, S_STDIN, S_STDOUT, S_STDERR, S_N };
static const char *const stream_types[S_N] = { "error", "stdin", "stdout", "stderr" };

struct probe {
	struct spdy_session *s;
	uint32_t ids[S_N];
	bool replied[S_N];
	bool fin[S_N];
	struct buf data[S_N];
	int pings;
	bool goaway;
};

static int die(const char *what)
{
	json_t *o = json_pack("{s:s}", "error_probe", what);
	json_dumpf(o, stdout, JSON_COMPACT);
	putchar('\n');
	json_decref(o);
	return 1;
}

static int which(struct probe *p, uint32_t id)
{
	for (int i = 0; i < S_N; i++)
		if (p->ids[i] == id)
			return i;
	return -1;
}

static void on_syn_reply(void *ud, uint32_t id, const struct spdy_header *h, size_t n, bool fin)
{
	struct probe *p = ud;
	int i = which(p, id);
	(void)h;
	(void)n;
	(void)fin;
	if (i >= 0)
		p->replied[i] = true;
}

static void on_data(void *ud, uint32_t id, const char *data, size_t len)
{
	struct probe *p = ud;
	int i = which(p, id);
	if (i >= 0)
		buf_add(&p->data[i], data, len);
}

static void on_fin(void *ud, uint32_t id)
{
	struct probe *p = ud;
	int i = which(p, id);
	if (i >= 0)
		p->fin[i] = true;
}

static void on_rst(void *ud, uint32_t id, uint32_t status)
{
	struct probe *p = ud;
	int i = which(p, id);
	fprintf(stderr, "spdy_probe: RST_STREAM id=%u status=%u\n", id, status);
	if (i >= 0)
		p->fin[i] = true;
}

static void on_ping(void *ud, uint32_t ping_id)
{
	struct probe *p = ud;
	(void)ping_id;
	p->pings++;
}

static void on_goaway(void *ud, uint32_t last, uint32_t status)
{
	struct probe *p = ud;
	(void)last;
	(void)status;
	p->goaway = true;
}

static int flush(struct spdy_session *s, int fd)
{
	const char *out;
	size_t len;
	while ((out = spdy_session_output(s, &len)) != NULL) {
		ssize_t w = write(fd, out, len);
		if (w <= 0)
			return -1;
		spdy_session_output_consumed(s, (size_t)w);
	}
	return 0;
}

/* Connects to http://host:port/path; the path (borrowed from url) in *ret_path. */
static int dial(const char *url, char *hostport, size_t hp_len, const char **ret_path)
{
	if (strncmp(url, "http://", 7) != 0)
		return -1;
	const char *hp = url + 7, *slash = strchr(hp, '/');
	if (!slash || (size_t)(slash - hp) >= hp_len)
		return -1;
	memcpy(hostport, hp, (size_t)(slash - hp));
	hostport[slash - hp] = '\0';
	char host[256];
	const char *colon = strrchr(hostport, ':');
	if (!colon || (size_t)(colon - hostport) >= sizeof(host))
		return -1;
	memcpy(host, hostport, (size_t)(colon - hostport));
	host[colon - hostport] = '\0';
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai;
	if (getaddrinfo(host, colon + 1, &hints, &ai) != 0)
		return -1;
	int fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
		freeaddrinfo(ai);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	freeaddrinfo(ai);
	*ret_path = slash;
	return fd;
}

int main(int argc, char **argv)
{
	if (argc < 6 || strcmp(argv[2], "exec") != 0) {
		fprintf(stderr, "usage: spdy_probe unix:///sock exec CONTAINER_ID STDIN_TEXT CMD [ARGS...]\n");
		return 2;
	}
	struct cri *c = cri_open(argv[1], 20000);
	if (!c)
		return die("bad endpoint");
	Runtime__V1__ExecRequest req = RUNTIME__V1__EXEC_REQUEST__INIT;
	Runtime__V1__ExecResponse *resp = NULL;
	struct cri_err cerr = { 0 };
	req.container_id = argv[3];
	req.cmd = argv + 5;
	req.n_cmd = (size_t)(argc - 5);
	req.stdin = true;
	req.stdout = true;
	req.stderr = true;
	if (cri_exec(c, &req, &resp, &cerr) != 0)
		return die("CRI Exec failed");
	char *url = strdup(resp->url);
	cri_free(resp);
	cri_close(c);

	char hostport[300];
	const char *path;
	int fd = dial(url, hostport, sizeof(hostport), &path);
	if (fd < 0)
		return die("cannot connect to the streaming URL");
	struct buf rq = BUF_INIT;
	buf_addf(&rq,
		 "POST %s HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
		 "X-Stream-Protocol-Version: v4.channel.k8s.io\r\nContent-Length: 0\r\n\r\n",
		 path, hostport);
	if (write(fd, rq.ptr, rq.len) != (ssize_t)rq.len)
		return die("write of the upgrade request failed");

	/* the response head, byte by byte-ish: keep what follows it for the session */
	struct buf head = BUF_INIT;
	char tmp[65536];
	char *end = NULL;
	while (!end) {
		ssize_t r = read(fd, tmp, sizeof(tmp));
		if (r <= 0)
			return die("connection closed before the response head");
		buf_add(&head, tmp, (size_t)r);
		end = strstr(head.ptr, "\r\n\r\n");
		if (!end && head.len > 16384)
			return die("response head too long");
	}
	size_t head_len = (size_t)(end - head.ptr) + 4;
	int status = 0;
	if (sscanf(head.ptr, "HTTP/1.1 %d", &status) != 1 || status != 101) {
		fprintf(stderr, "spdy_probe: response: %.*s\n", (int)head.len, head.ptr);
		return die("no 101 Switching Protocols");
	}
	char proto[64] = "";
	const char *pv = strcasestr(head.ptr, "\r\nX-Stream-Protocol-Version:");
	if (pv && pv < end)
		sscanf(pv + 28, " %63[^\r\n]", proto);

	struct probe p = { 0 };
	struct spdy_callbacks cb = {
		.on_syn_reply = on_syn_reply, .on_data = on_data, .on_fin = on_fin,
		.on_rst = on_rst, .on_ping = on_ping, .on_goaway = on_goaway,
	};
	p.s = spdy_session_new(SPDY_CLIENT, &cb, &p, NULL, 0);
	/* error first, as Kubernetes' clients do: the server waits for every stream it expects */
	for (int i = 0; i < S_N; i++) {
		struct spdy_header h = { "streamtype", stream_types[i], 0 };
		if (spdy_open_stream(p.s, &h, 1, 0, false, &p.ids[i]) != 0)
			return die("open stream");
	}
	if (spdy_ping(p.s, NULL) != 0)
		return die("ping");
	if (head.len > head_len && spdy_session_feed(p.s, head.ptr + head_len, head.len - head_len) != 0)
		return die("protocol error in the first bytes");
	if (flush(p.s, fd) != 0)
		return die("write failed");

	bool stdin_sent = false;
	time_t deadline = time(NULL) + 30;
	while (!(p.fin[S_ERROR] && p.fin[S_STDOUT] && p.fin[S_STDERR])) {
		if (!stdin_sent && p.replied[S_STDIN]) {
			if (spdy_send_data(p.s, p.ids[S_STDIN], argv[4], strlen(argv[4]), true) != 0)
				return die("stdin write");
			stdin_sent = true;
		}
		if (flush(p.s, fd) != 0)
			return die("write failed");
		if (time(NULL) > deadline)
			return die("timeout");
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		if (poll(&pfd, 1, 1000) <= 0)
			continue;
		ssize_t r = read(fd, tmp, sizeof(tmp));
		if (r <= 0)
			break; /* the server closes the connection once the command ended */
		int fr = spdy_session_feed(p.s, tmp, (size_t)r);
		if (fr != 0) {
			fprintf(stderr, "spdy_probe: feed: %s\n", err_reason(fr));
			return die("protocol error from the server");
		}
	}
	json_t *o = json_pack("{s:s, s:i, s:s, s:s%, s:s%, s:s%, s:i, s:b, s:b}", "url", url, "http_status", status,
			      "protocol", proto, "stdout", p.data[S_STDOUT].ptr ? p.data[S_STDOUT].ptr : "",
			      p.data[S_STDOUT].len, "stderr", p.data[S_STDERR].ptr ? p.data[S_STDERR].ptr : "",
			      p.data[S_STDERR].len, "error", p.data[S_ERROR].ptr ? p.data[S_ERROR].ptr : "",
			      p.data[S_ERROR].len, "pings", p.pings, "stdin_sent", stdin_sent, "all_replied",
			      p.replied[0] && p.replied[1] && p.replied[2] && p.replied[3]);
	json_dumpf(o, stdout, JSON_COMPACT | JSON_SORT_KEYS);
	putchar('\n');
	json_decref(o);
	spdy_session_free(p.s);
	for (int i = 0; i < S_N; i++)
		buf_release(&p.data[i]);
	buf_release(&head);
	buf_release(&rq);
	close(fd);
	free(url);
	return 0;
}
