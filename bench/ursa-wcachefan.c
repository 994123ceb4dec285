/* ursa-wcachefan: what delivering one pod event costs a watch cache that many kubelets watch, in
 * process (no etcd, no HTTP): W watchers with spec.nodeName=n<i> (a kubelet each) and one
 * without a filter (a scheduler's), then E pods created bound to nodes round-robin, applied in
 * batches of 10 as an etcd watch stream hands them over. Prints the CPU per event.
 *
 * usage: ursa-wcachefan [--watchers W (5000)] [--events E (20000)] [--rounds R (3)]
 * The last line is machine-readable: key=value pairs (us_per_event is the median of rounds). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cache/wcache_internal.h"
#include "ursa/buf.h"
#include "ursa/selector.h"
#include "ursa/xalloc.h"

static const struct api_field pod_fields[] = {
	{ "spec.nodeName", "spec.nodeName" },
	{ "status.phase", "status.phase" },
};
static const struct api_strategy pod_strategy = { .fields = pod_fields, .nfields = 2 };
static const struct api_resource pods = {
	.group = "", .version = "v1", .plural = "pods", .singular = "pod", .kind = "Pod",
	.scope = SCOPE_NAMESPACE, .strategy = &pod_strategy,
};

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void nop(void *ud)
{
	(*(long *)ud)++;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* One round: a fresh cache, the watchers, the events; CPU microseconds per event. */
static double round_us(long nw, long ne, long *ret_delivered)
{
	struct wcache *c = wcache_new_detached(&pods, NULL);
	wcache_apply_list(c, NULL, 0, 1);
	struct watcher **ws = xcalloc((size_t)nw + 1, sizeof(*ws));
	long notified = 0;
	char sel[64];
	for (long i = 0; i <= nw; i++) {
		struct field_selector *fs = NULL;
		snprintf(sel, sizeof(sel), "spec.nodeName=n%ld", i);
		if (i < nw && field_selector_parse(sel, &fs, NULL) != 0)
			abort();
		struct wfilter f = { NULL, NULL, NULL, NULL, fs };
		if (wcache_watch(c, &f, 1, (size_t)ne + 16, nop, &notified, &ws[i]) != 0)
			abort();
		field_selector_free(fs);
	}
	enum { BATCH = 10 };
	struct etcd_event evs[BATCH];
	memset(evs, 0, sizeof(evs));
	double t0 = cpu_s();
	for (long j = 0; j < ne; j += BATCH) {
		size_t n = 0;
		for (long k = j; k < j + BATCH && k < ne; k++, n++) {
			struct buf b = BUF_INIT;
			buf_addf(&b, "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"p%ld\",\"namespace\":\"d\","
				     "\"tenant\":\"t\"},\"spec\":{\"nodeName\":\"n%ld\",\"containers\":[{\"name\":\"c\","
				     "\"image\":\"nginx\"}]},\"status\":{\"phase\":\"Pending\"}}",
				 k, k % nw);
			evs[n].type = ETCD_EV_PUT;
			evs[n].kv.key = xasprintf("/registry/pods/t/d/p%ld", k);
			evs[n].kv.value_len = b.len;
			evs[n].kv.value = buf_detach(&b, NULL);
			evs[n].kv.mod_rev = 2 + k;
		}
		wcache_apply_events(c, evs, n);
		for (size_t i = 0; i < n; i++) {
			free(evs[i].kv.key);
			free(evs[i].kv.value);
		}
	}
	double us = (cpu_s() - t0) * 1e6 / (double)ne;
	long delivered = 0;
	for (long i = 0; i <= nw; i++) {
		struct wevent ev;
		while (watcher_next(ws[i], &ev) == 1) {
			delivered++;
			wevent_release(&ev);
		}
		watcher_close(ws[i]);
	}
	free(ws);
	wcache_free(c);
	*ret_delivered = delivered;
	return us;
}

int main(int argc, char **argv)
{
	long nw = 5000, ne = 20000, rounds = 3;
	for (int i = 1; i + 1 < argc; i += 2) {
		long v = atol(argv[i + 1]);
		if (!strcmp(argv[i], "--watchers"))
			nw = v;
		else if (!strcmp(argv[i], "--events"))
			ne = v;
		else if (!strcmp(argv[i], "--rounds"))
			rounds = v;
	}
	if (nw < 1 || nw > 1000000 || ne < 1 || ne > 10000000 || rounds < 1 || rounds > 100) {
		fprintf(stderr, "usage: ursa-wcachefan [--watchers 1..1000000] [--events 1..10000000] [--rounds 1..100]\n");
		return 2;
	}
	double *us = xcalloc((size_t)rounds, sizeof(*us));
	long delivered = 0;
	for (long r = 0; r < rounds; r++) {
		us[r] = round_us(nw, ne, &delivered);
		printf("round %ld: %.2f us of CPU per event, %ld events delivered\n", r + 1, us[r], delivered);
	}
	qsort(us, (size_t)rounds, sizeof(*us), cmp_double);
	printf("RESULT watchers=%ld events=%ld us_per_event=%.2f delivered=%ld\n", nw, ne, us[rounds / 2], delivered);
	free(us);
	return delivered == 2 * ne ? 0 : 1;
}
