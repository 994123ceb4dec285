/* core/v1 Event objects (ursa/event.h). */
#define _GNU_SOURCE
#include "ursa/event.h"
#include "ursa/buf.h"
#include "ursa/jsonutil.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

/* 64 bits that differ between calls and between processes: a counter mixed with the clock and
 * the address of a stack variable (ASLR), through splitmix64's finaliser. */
static uint64_t name_suffix(void)
{
	static atomic_uint_fast64_t counter;
	int here;
	uint64_t x = (uint64_t)now_ms() * 1000003u ^ (uint64_t)mono_us() ^ (uint64_t)(uintptr_t)&here ^
		     (atomic_fetch_add(&counter, 1) * 0x9e3779b97f4a7c15ull);
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

json_t *event_new(const json_t *obj, const char *api_version, const char *kind, const char *field_path,
		  const char *type, const char *reason, const char *message, const struct event_source *src,
		  char **ret_path)
{
	*ret_path = NULL;
	const char *name = json_path_str(obj, "metadata.name");
	if (!name || !*name)
		return NULL;
	const char *tenant = json_path_str(obj, "metadata.tenant");
	const char *ns = json_path_str(obj, "metadata.namespace");
	const char *ev_ns = ns && *ns ? ns : "default";
	struct buf now = BUF_INIT;
	rfc3339_add(&now, time(NULL));
	char *ev_name = xasprintf("%s.%016llx", name, (unsigned long long)name_suffix());

	json_t *inv = json_object();
	if (!api_version)
		api_version = json_str(obj, "apiVersion");
	if (!kind)
		kind = json_str(obj, "kind");
	const char *uid = json_path_str(obj, "metadata.uid");
	if (api_version)
		json_object_set_new(inv, "apiVersion", json_string(api_version));
	if (kind)
		json_object_set_new(inv, "kind", json_string(kind));
	json_object_set_new(inv, "name", json_string(name));
	if (ns && *ns)
		json_object_set_new(inv, "namespace", json_string(ns));
	if (uid)
		json_object_set_new(inv, "uid", json_string(uid));
	if (field_path)
		json_object_set_new(inv, "fieldPath", json_string(field_path));

	json_t *source = json_object();
	json_object_set_new(source, "component", json_string(src->component));
	if (src->host)
		json_object_set_new(source, "host", json_string(src->host));

	json_t *meta = json_object();
	json_object_set_new(meta, "name", json_string(ev_name));
	json_object_set_new(meta, "namespace", json_string(ev_ns));
	if (tenant && *tenant)
		json_object_set_new(meta, "tenant", json_string(tenant));

	json_t *ev = json_object();
	json_object_set_new(ev, "apiVersion", json_string("v1"));
	json_object_set_new(ev, "kind", json_string("Event"));
	json_object_set_new(ev, "metadata", meta);
	json_object_set_new(ev, "involvedObject", inv);
	json_object_set_new(ev, "type", json_string(type));
	json_object_set_new(ev, "reason", json_string(reason));
	json_object_set_new(ev, "message", json_string(message ? message : ""));
	json_object_set_new(ev, "source", source);
	json_object_set_new(ev, "reportingComponent", json_string(src->component));
	if (src->host)
		json_object_set_new(ev, "reportingInstance", json_string(src->host));
	json_object_set_new(ev, "firstTimestamp", json_string(buf_cstr(&now)));
	json_object_set_new(ev, "lastTimestamp", json_string(buf_cstr(&now)));
	json_object_set_new(ev, "count", json_integer(1));

	*ret_path = tenant && *tenant ? xasprintf("/api/v1/tenants/%s/namespaces/%s/events", tenant, ev_ns)
				      : xasprintf("/api/v1/namespaces/%s/events", ev_ns);
	buf_release(&now);
	free(ev_name);
	return ev;
}
