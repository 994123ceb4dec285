/* core/v1 Events, printed as `kubectl get events` shows them. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include "kinds/kinds_common.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

/* An event about a namespaced object lives in that object's namespace; one about a cluster
 * object lives in "default" (or has no namespace). */
static void event_validate(const json_t *obj, const json_t *old, struct field_errors *errs)
{
	const json_t *io = json_object_get(obj, "involvedObject");
	if (!json_is_object(io)) {
		field_error_required(errs, "involvedObject");
		return;
	}
	const char *ns = json_path_str(obj, "metadata.namespace");
	const char *io_ns = json_str(io, "namespace");
	if (!ns)
		ns = "";
	if (io_ns && *io_ns) {
		if (strcmp(ns, io_ns))
			field_error_invalid(errs, "involvedObject.namespace", io_ns, "does not match event.namespace");
	} else if (*ns && strcmp(ns, "default")) {
		field_error_invalid(errs, "involvedObject.namespace", "", "does not match event.namespace");
	}
	validate_nonnegative(json_object_get(obj, "count"), "count", errs);
}

static void event_cells(const json_t *obj, time_t now, json_t *cells)
{
	struct buf first = BUF_INIT, last = BUF_INIT, b = BUF_INIT;
	const char *ft = json_str(obj, "firstTimestamp"), *lt = json_str(obj, "lastTimestamp");
	since_add(&first, ft && *ft ? ft : json_str(obj, "eventTime"), now);
	long long count = int_at(obj, "count", 0);
	const json_t *series = json_object_get(obj, "series");
	if (json_is_object(series)) {
		since_add(&last, json_str(series, "lastObservedTime"), now);
		count = int_at(series, "count", 0);
	} else {
		if (lt && *lt)
			since_add(&last, lt, now);
		else
			buf_adds(&last, buf_cstr(&first));
		if (count == 0)
			count = 1; /* singleton events of the new API carry no count */
	}
	cell_str(cells, buf_cstr(&last));
	cell_str(cells, json_str(obj, "type"));
	cell_str(cells, json_str(obj, "reason"));

	const char *kind = json_path_str(obj, "involvedObject.kind"), *name = json_path_str(obj, "involvedObject.name");
	for (const char *p = kind ? kind : ""; *p; p++)
		buf_addch(&b, (char)tolower((unsigned char)*p));
	if (name && *name)
		buf_addf(&b, "/%s", name);
	cell_str(cells, buf_cstr(&b));
	cell_str(cells, json_path_str(obj, "involvedObject.fieldPath"));

	const char *comp = json_path_str(obj, "source.component"), *host = json_path_str(obj, "source.host");
	if (!comp || !*comp)
		comp = json_str(obj, "reportingComponent");
	if (!host || !*host)
		host = json_str(obj, "reportingInstance");
	buf_reset(&b);
	buf_adds(&b, comp ? comp : "");
	if (host && *host)
		buf_addf(&b, ", %s", host);
	cell_str(cells, buf_cstr(&b));

	/* strings.TrimSpace of the message */
	const char *msg = json_str(obj, "message");
	size_t len = msg ? strlen(msg) : 0;
	while (len && isspace((unsigned char)msg[len - 1]))
		len--;
	while (len && isspace((unsigned char)*msg))
		msg++, len--;
	buf_reset(&b);
	buf_add(&b, msg ? msg : "", len);
	cell_str(cells, buf_cstr(&b));
	cell_str(cells, buf_cstr(&first));
	cell_int(cells, count);
	cell_name(obj, cells);
	buf_release(&first);
	buf_release(&last);
	buf_release(&b);
}

/* Upstream's order: Name is the last (wide) column, not the first. */
static const struct api_column event_columns[] = {
	{ "Last Seen", "string", "", "The time at which the most recent occurrence of this event was recorded.", 0 },
	{ "Type", "string", "", "Type of this event (Normal, Warning), new types could be added in the future", 0 },
	{ "Reason", "string", "", "This should be a short, machine understandable string that gives the reason "
	  "for the transition into the object's current status.", 0 },
	{ "Object", "string", "", "The object that this event is about.", 0 },
	{ "Subobject", "string", "", "If referring to a piece of an object instead of an entire object, this "
	  "string should contain a valid JSON/Go field access statement.", 1 },
	{ "Source", "string", "", "The component reporting this event.", 1 },
	{ "Message", "string", "", "A human-readable description of the status of this operation.", 0 },
	{ "First Seen", "string", "", "The time at which the event was first recorded.", 1 },
	{ "Count", "string", "", "The number of times this event has occurred.", 1 },
	{ "Name", "string", "name", "Name must be unique within a namespace.", 1 },
};

static const struct api_field event_fields[] = {
	{ "involvedObject.kind", "involvedObject.kind" },
	{ "involvedObject.namespace", "involvedObject.namespace" },
	{ "involvedObject.name", "involvedObject.name" },
	{ "involvedObject.uid", "involvedObject.uid" },
	{ "involvedObject.apiVersion", "involvedObject.apiVersion" },
	{ "involvedObject.resourceVersion", "involvedObject.resourceVersion" },
	{ "involvedObject.fieldPath", "involvedObject.fieldPath" },
	{ "reason", "reason" },
	{ "reportingComponent", "reportingComponent" },
	{ "source", "source.component" },
	{ "type", "type" },
};

const struct api_strategy strategy_event = {
	.validate = event_validate,
	.columns = event_columns,
	.ncolumns = ARRAY_SIZE(event_columns),
	.cells = event_cells,
	.fields = event_fields,
	.nfields = ARRAY_SIZE(event_fields),
};
