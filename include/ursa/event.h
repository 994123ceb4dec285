/* core/v1 Events, as every component records them: the scheduler (Scheduled, FailedScheduling),
 * the controllers (SuccessfulCreate, ...) and the kubelet (Pulling, Started, BackOff, ...).
 * One builder, so that every Event has the same shape. Pure; thread-safe. */
#ifndef URSA_EVENT_H
#define URSA_EVENT_H
#include <jansson.h>

struct event_source {
	const char *component; /* "kubelet", "default-scheduler", "controller-manager" */
	const char *host;      /* the node, for the kubelet; NULL: none */
};

/* An Event about obj (read: metadata.tenant, .namespace, .name, .uid; and apiVersion and kind
 * unless api_version and kind are given: objects of lists and watches may lack them), of type "Normal" or "Warning", with reason and message; field_path (may be NULL) names a part of
 * the object, e.g. "spec.containers{web}". Its name is "<obj name>.<16 hex digits>", unique with
 * overwhelming likelihood; first and last timestamps are now, count 1. Events about objects
 * without a namespace go to "default", as in Kubernetes.
 * Returns a new reference and sets *ret_path to the collection to POST it to
 * ("/api/v1/tenants/<t>/namespaces/<ns>/events", or without the tenant segment when obj has no
 * metadata.tenant; new string), or NULL (and *ret_path NULL) when obj has no metadata.name. */
json_t *event_new(const json_t *obj, const char *api_version, const char *kind, const char *field_path,
		  const char *type, const char *reason, const char *message, const struct event_source *src,
		  char **ret_path);

#endif
