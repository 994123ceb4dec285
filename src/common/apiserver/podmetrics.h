/* metrics.k8s.io quantities as metrics-server writes them (pure; podmetrics.c). */
#ifndef URSA_APISERVER_PODMETRICS_H
#define URSA_APISERVER_PODMETRICS_H
#include <stdint.h>

/* CPU in nanocores: "123456n" ("0" for none). */
void metrics_cpu_quantity(uint64_t nanocores, char out[32]);
/* Memory in bytes, binary suffixed when exact: "1234Ki", "5Mi", "1000" (not a multiple of 1024). */
void metrics_memory_quantity(uint64_t bytes, char out[32]);
/* A window as a Go duration string, to the millisecond: "1s", "1.5s", "10.125s". */
void metrics_window(double seconds, char out[32]);

#endif
