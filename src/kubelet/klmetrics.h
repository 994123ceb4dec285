/* The kubelet's own Prometheus metrics, served at /metrics by its server (logs.c):
 *   kubelet_pod_start_duration_seconds          histogram: from the kubelet first seeing a pod to
 *                                               its phase first reported Running
 *   prober_probe_duration_seconds{probe_type,result}
 *                                               histogram: one probe run (liveness|readiness|startup,
 *                                               successful|failed)
 * Observations come from any thread (the pod loop, the prober's threads); a mutex guards them. */
#ifndef KL_METRICS_H
#define KL_METRICS_H
#include <stdbool.h>
#include "ursa/buf.h"

/* A pod went from first seen to Running in seconds. */
void kl_metrics_pod_start(double seconds);
/* A probe of kind (0 liveness, 1 readiness, 2 startup: enum rt_probe_kind) ran for seconds. Other
 * kinds are ignored. */
void kl_metrics_probe(int kind, bool success, double seconds);
/* Appends the families above (with # HELP / # TYPE lines) to out. */
void kl_metrics_render(struct buf *out);
/* Forgets every observation (tests). */
void kl_metrics_reset(void);

#endif
