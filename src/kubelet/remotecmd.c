/* The pure parts of the kubelet's streams (see remotecmd.h). */
#include "remotecmd.h"
#include "ursa/base64.h"
#include "ursa/buf.h"
#include "ursa/xalloc.h"
#include <jansson.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

/* Decodes s[0..len) of a query (form encoding) into out: 0, or -1 for a bad escape or a NUL. */
static int form_decode(const char *s, size_t len, struct buf *out)
{
	buf_reset(out);
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (c == '+') {
			c = ' ';
		} else if (c == '%') {
			if (i + 2 >= len)
				return -1;
			int h = hex_digit(s[i + 1]), l = hex_digit(s[i + 2]);
			if (h < 0 || l < 0)
				return -1;
			c = (char)(h * 16 + l);
			i += 2;
		}
		if (c == '\0')
			return -1;
		buf_addch(out, c);
	}
	return 0;
}

static bool truthy(const char *v)
{
	return !strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "TRUE");
}

static int add_port(struct rc_query *q, const char *v, size_t len)
{
	long long p = 0;
	if (len == 0 || len > 5)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -1;
		p = p * 10 + (v[i] - '0');
	}
	if (p < 1 || p > 65535 || q->nports >= RC_MAX_PORTS)
		return -1;
	q->ports[q->nports++] = (int)p;
	return 0;
}

int rc_query_parse(const char *qs, struct rc_query *q, const char **ret_err)
{
	memset(q, 0, sizeof(*q));
	struct buf key = BUF_INIT, val = BUF_INIT;
	size_t cmd_bytes = 0;
	int ret = -1;
	const char *p = qs ? qs : "";
	while (*p) {
		const char *amp = strchr(p, '&');
		size_t n = amp ? (size_t)(amp - p) : strlen(p);
		const char *eq = memchr(p, '=', n);
		size_t kn = eq ? (size_t)(eq - p) : n;
		if (form_decode(p, kn, &key) < 0 || form_decode(eq ? eq + 1 : p + n, eq ? n - kn - 1 : 0, &val) < 0) {
			*ret_err = "malformed query string";
			goto out;
		}
		if (key.len && !strcmp(key.ptr, "command")) {
			cmd_bytes += val.len + 1;
			if (q->ncmd >= RC_MAX_ARGS || cmd_bytes > RC_MAX_CMD_BYTES) {
				*ret_err = "command too long";
				goto out;
			}
			q->cmd = xrealloc(q->cmd, (q->ncmd + 2) * sizeof(*q->cmd));
			q->cmd[q->ncmd++] = xstrdup(val.len ? val.ptr : "");
			q->cmd[q->ncmd] = NULL;
		} else if (key.len && (!strcmp(key.ptr, "stdin") || !strcmp(key.ptr, "input"))) {
			q->in = val.len && truthy(val.ptr);
		} else if (key.len && (!strcmp(key.ptr, "stdout") || !strcmp(key.ptr, "output"))) {
			q->out = val.len && truthy(val.ptr);
		} else if (key.len && (!strcmp(key.ptr, "stderr") || !strcmp(key.ptr, "error"))) {
			q->err = val.len && truthy(val.ptr);
		} else if (key.len && !strcmp(key.ptr, "tty")) {
			q->tty = val.len && truthy(val.ptr);
		} else if (key.len && (!strcmp(key.ptr, "port") || !strcmp(key.ptr, "ports"))) {
			const char *v = val.len ? val.ptr : "";
			for (;;) {
				const char *comma = strchr(v, ',');
				size_t vn = comma ? (size_t)(comma - v) : strlen(v);
				if (add_port(q, v, vn) < 0) {
					*ret_err = "ports must be integers in 1..65535 (at most 32)";
					goto out;
				}
				if (!comma)
					break;
				v = comma + 1;
			}
		}
		p += n + (amp ? 1 : 0);
	}
	ret = 0;
out:
	buf_release(&key);
	buf_release(&val);
	if (ret < 0)
		rc_query_release(q);
	return ret;
}

void rc_query_release(struct rc_query *q)
{
	for (size_t i = 0; i < q->ncmd; i++)
		free(q->cmd[i]);
	free(q->cmd);
	q->cmd = NULL;
	q->ncmd = 0;
}

const char *rc_pick_protocol(const char *offered, const char *const *want)
{
	if (!offered)
		return NULL;
	for (size_t w = 0; want[w]; w++) {
		size_t wn = strlen(want[w]);
		const char *p = offered;
		while (*p) {
			while (*p == ' ' || *p == '\t' || *p == ',')
				p++;
			const char *end = p;
			while (*end && *end != ',' && *end != ' ' && *end != '\t')
				end++;
			if ((size_t)(end - p) == wn && !memcmp(p, want[w], wn))
				return want[w];
			p = end;
		}
	}
	return NULL;
}

void rc_ws_accept(const char *key, char out[29])
{
	static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	char *in = xasprintf("%s%s", key, guid);
	EVP_Digest(in, strlen(in), md, &mdlen, EVP_sha1(), NULL);
	free(in);
	struct buf b = BUF_INIT;
	base64_encode(&b, md, mdlen, 0);
	memcpy(out, b.ptr, 28);
	out[28] = '\0';
	buf_release(&b);
}

static void add_json(struct buf *out, json_t *j /* taken */)
{
	char *s = json_dumps(j, JSON_COMPACT);
	buf_adds(out, s);
	free(s);
	json_decref(j);
}

void rc_status_success(struct buf *out)
{
	add_json(out, json_pack("{s:{},s:s}", "metadata", "status", "Success"));
}

void rc_status_exit(struct buf *out, int code, const char *cmdline)
{
	char num[16];
	snprintf(num, sizeof(num), "%d", code);
	char *msg = xasprintf("command terminated with non-zero exit code: error executing command [%s], exit code %d",
			      cmdline ? cmdline : "", code);
	add_json(out, json_pack("{s:{},s:s,s:s,s:s,s:{s:[{s:s,s:s}]}}", "metadata", "status", "Failure", "message", msg,
				"reason", "NonZeroExitCode", "details", "causes", "reason", "ExitCode", "message", num));
	free(msg);
}

void rc_status_failure(struct buf *out, const char *message)
{
	char *msg = xasprintf("Internal error occurred: %s", message);
	add_json(out, json_pack("{s:{},s:s,s:s,s:s,s:{s:[{s:s}]},s:i}", "metadata", "status", "Failure", "message", msg,
				"reason", "InternalError", "details", "causes", "message", message, "code", 500));
	free(msg);
}

int rc_parse_resize(const uint8_t *data, size_t len, unsigned *ret_w, unsigned *ret_h)
{
	json_t *j = json_loadb((const char *)data, len, JSON_REJECT_DUPLICATES, NULL);
	json_t *w = json_object_get(j, "Width"), *h = json_object_get(j, "Height");
	int ret = -1;
	if (json_is_integer(w) && json_is_integer(h) && json_integer_value(w) >= 0 && json_integer_value(w) <= 65535 &&
	    json_integer_value(h) >= 0 && json_integer_value(h) <= 65535) {
		*ret_w = (unsigned)json_integer_value(w);
		*ret_h = (unsigned)json_integer_value(h);
		ret = 0;
	}
	json_decref(j);
	return ret;
}

int rc_exec_failure(const char *status_json, size_t len, struct buf *msg)
{
	json_t *j = json_loadb(status_json, len, 0, NULL);
	const char *reason = json_string_value(json_object_get(j, "reason"));
	const char *text = json_string_value(json_object_get(j, "message"));
	int code = 0;
	if (reason && text && !strcmp(reason, "InternalError") && strstr(text, "exec failed")) {
		if (strstr(text, "executable file not found") || strstr(text, "no such file or directory"))
			code = 127;
		else if (strstr(text, "permission denied"))
			code = 126;
	}
	if (code) {
		const char *oci = strstr(text, "OCI runtime exec failed");
		buf_adds(msg, oci ? oci : text);
	}
	json_decref(j);
	return code;
}
