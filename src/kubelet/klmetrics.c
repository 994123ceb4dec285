/* The kubelet's histograms (see klmetrics.h). Buckets as Kubernetes' kubelet uses for these
 * families, so dashboards built for it read ours. */
#include "klmetrics.h"

#include <pthread.h>
#include <string.h>

#define NBUCKETS_MAX 16

struct histogram {
	const double *bounds;
	int nbounds;
	unsigned long long counts[NBUCKETS_MAX]; /* per bucket, not cumulative */
	unsigned long long count;
	double sum;
};

static const double pod_start_bounds[] = { 0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240 };
static const double probe_bounds[] = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10 };
static const char *const probe_types[] = { "Liveness", "Readiness", "Startup" };
static const char *const probe_results[] = { "successful", "failed" };

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct histogram g_pod_start = { pod_start_bounds, 16, { 0 }, 0, 0 };
static struct histogram g_probe[3][2];

static void observe(struct histogram *h, const double *bounds, int nbounds, double v)
{
	h->bounds = bounds;
	h->nbounds = nbounds;
	int i = 0;
	while (i < nbounds && v > bounds[i])
		i++;
	if (i < nbounds)
		h->counts[i]++;
	h->count++;
	h->sum += v;
}

void kl_metrics_pod_start(double seconds)
{
	pthread_mutex_lock(&g_lock);
	observe(&g_pod_start, pod_start_bounds, 16, seconds);
	pthread_mutex_unlock(&g_lock);
}

void kl_metrics_probe(int kind, bool success, double seconds)
{
	if (kind < 0 || kind > 2)
		return;
	pthread_mutex_lock(&g_lock);
	observe(&g_probe[kind][success ? 0 : 1], probe_bounds, 11, seconds);
	pthread_mutex_unlock(&g_lock);
}

/* One histogram's samples; labels is "" or 'k="v",...' without braces. */
static void render(struct buf *out, const char *name, const char *labels, const struct histogram *h,
		   const double *bounds, int nbounds)
{
	unsigned long long cum = 0;
	const char *sep = *labels ? "," : "";
	for (int i = 0; i < nbounds; i++) {
		cum += h->counts[i];
		buf_addf(out, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, sep, bounds[i], cum);
	}
	buf_addf(out, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep, h->count);
	if (*labels) {
		buf_addf(out, "%s_sum{%s} %.9g\n", name, labels, h->sum);
		buf_addf(out, "%s_count{%s} %llu\n", name, labels, h->count);
	} else {
		buf_addf(out, "%s_sum %.9g\n%s_count %llu\n", name, h->sum, name, h->count);
	}
}

void kl_metrics_render(struct buf *out)
{
	pthread_mutex_lock(&g_lock);
	buf_adds(out, "# HELP kubelet_pod_start_duration_seconds Duration in seconds from the kubelet seeing a pod "
		      "for the first time to the pod starting to run\n# TYPE kubelet_pod_start_duration_seconds histogram\n");
	render(out, "kubelet_pod_start_duration_seconds", "", &g_pod_start, pod_start_bounds, 16);
	buf_adds(out, "# HELP prober_probe_duration_seconds Duration in seconds for a probe response.\n"
		      "# TYPE prober_probe_duration_seconds histogram\n");
	for (int k = 0; k < 3; k++) {
		for (int r = 0; r < 2; r++) {
			struct buf labels = BUF_INIT;
			buf_addf(&labels, "probe_type=\"%s\",result=\"%s\"", probe_types[k], probe_results[r]);
			render(out, "prober_probe_duration_seconds", labels.ptr, &g_probe[k][r], probe_bounds, 11);
			buf_release(&labels);
		}
	}
	pthread_mutex_unlock(&g_lock);
}

void kl_metrics_reset(void)
{
	pthread_mutex_lock(&g_lock);
	memset(&g_pod_start.counts, 0, sizeof(g_pod_start.counts));
	g_pod_start.count = 0;
	g_pod_start.sum = 0;
	memset(g_probe, 0, sizeof(g_probe));
	pthread_mutex_unlock(&g_lock);
}
