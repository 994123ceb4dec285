/* Tenant moves seen from the gateway (issue 23): the pure decisions the plain loop (held writes,
 * gateway.c) and the stream loop (watch bridge, stream.c) take, and their counters. The protocol
 * is in gw.h ("tenant moves"); the design in docs/migration.md. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "gw.h"
#include "ursa/buf.h"
#include "ursa/xalloc.h"

enum move_hold move_hold_decide(int status, const char *moving, const char *tenant, const char *sent_to,
				const char *now_on, int64_t held_ms, int64_t budget_ms)
{
	/* Other 429s (the partition's fair queuing, a quota) are the client's to see. */
	if (status != 429 || !moving || !tenant || strcmp(moving, tenant) != 0 || held_ms >= budget_ms)
		return MOVE_PASS;
	/* The switch came while the write was out: no need to wait for what already happened. */
	if (now_on && sent_to && strcmp(now_on, sent_to) != 0)
		return MOVE_RESEND;
	return MOVE_HOLD;
}

bool query_key_is(const char *k, size_t n, const char *name)
{
	size_t j = 0;
	for (size_t i = 0; i < n; i++, j++) {
		char c = k[i];
		if (c == '%' && i + 2 < n && hex_digit(k[i + 1]) >= 0 && hex_digit(k[i + 2]) >= 0) {
			c = (char)(hex_digit(k[i + 1]) * 16 + hex_digit(k[i + 2]));
			i += 2;
		}
		if (!name[j] || name[j] != c)
			return false;
	}
	return name[j] == '\0';
}

/* Calls fn for every "key[=value]" member of path's query: raw key and value views. Stops
 * early when fn returns false. */
static void each_param(const char *path, bool (*fn)(void *ud, struct sv k, struct sv v, struct sv whole), void *ud)
{
	const char *q = strchr(path, '?');
	while (q && *q) {
		q++;
		const char *amp = strchr(q, '&');
		size_t len = amp ? (size_t)(amp - q) : strlen(q);
		const char *eq = memchr(q, '=', len);
		struct sv k = { q, eq ? (size_t)(eq - q) : len };
		struct sv v = eq ? (struct sv){ eq + 1, len - k.len - 1 } : (struct sv){ q + len, 0 };
		if (len && !fn(ud, k, v, (struct sv){ q, len }))
			return;
		q = amp;
	}
}

static bool find_timeout(void *ud, struct sv k, struct sv v, struct sv whole)
{
	(void)whole;
	if (!query_key_is(k.ptr, k.len, "timeoutSeconds"))
		return true;
	long long n;
	*(int64_t *)ud = parse_int64_sv(v, &n) == 0 && n > 0 ? n : 0;
	return false;
}

int64_t move_watch_timeout_s(const char *path)
{
	int64_t t = 0;
	each_param(path, find_timeout, &t);
	return t;
}

struct rewrite {
	struct buf out;
	char sep;
	int64_t elapsed_s;
};

static bool copy_param(void *ud, struct sv k, struct sv v, struct sv whole)
{
	struct rewrite *w = ud;
	static const char *const dropped[] = { "resourceVersion", "resourceVersionMatch", "sendInitialEvents" };
	for (size_t i = 0; i < sizeof(dropped) / sizeof(dropped[0]); i++)
		if (query_key_is(k.ptr, k.len, dropped[i]))
			return true;
	buf_addch(&w->out, w->sep);
	w->sep = '&';
	long long t;
	if (query_key_is(k.ptr, k.len, "timeoutSeconds") && parse_int64_sv(v, &t) == 0 && t > 0) {
		t = t > w->elapsed_s ? t - w->elapsed_s : 1;
		buf_add(&w->out, k.ptr, k.len);
		buf_addf(&w->out, "=%lld", (long long)t);
		return true;
	}
	buf_add(&w->out, whole.ptr, whole.len);
	return true;
}

char *move_watch_path(const char *path, int64_t rv, int64_t elapsed_s)
{
	struct rewrite w = { .out = BUF_INIT, .sep = '?', .elapsed_s = elapsed_s > 0 ? elapsed_s : 0 };
	const char *q = strchr(path, '?');
	buf_add(&w.out, path, q ? (size_t)(q - path) : strlen(path));
	each_param(path, copy_param, &w);
	buf_addf(&w.out, "%cresourceVersion=%lld", w.sep, (long long)rv);
	return buf_detach(&w.out, NULL);
}

/* --- counters ----------------------------------------------------------------------------------- */
static atomic_long n_held, n_resent, n_expired, n_held_ms, n_bridged, n_bridge_waits, n_bridge_failed;

void move_count_hold(long held, long resent, long expired, long held_ms)
{
	if (held)
		atomic_fetch_add(&n_held, held);
	if (resent)
		atomic_fetch_add(&n_resent, resent);
	if (expired)
		atomic_fetch_add(&n_expired, expired);
	if (held_ms)
		atomic_fetch_add(&n_held_ms, held_ms);
}

void move_count_bridge(long bridged, long waits, long failed)
{
	if (bridged)
		atomic_fetch_add(&n_bridged, bridged);
	if (waits)
		atomic_fetch_add(&n_bridge_waits, waits);
	if (failed)
		atomic_fetch_add(&n_bridge_failed, failed);
}

void move_stats_get(struct move_stats *ret)
{
	*ret = (struct move_stats){
		.held = atomic_load(&n_held), .resent = atomic_load(&n_resent), .expired = atomic_load(&n_expired),
		.held_ms = atomic_load(&n_held_ms), .bridged = atomic_load(&n_bridged),
		.bridge_waits = atomic_load(&n_bridge_waits), .bridge_failed = atomic_load(&n_bridge_failed),
	};
}
