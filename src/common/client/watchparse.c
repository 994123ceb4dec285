/* Watch streams: newline-delimited JSON events that arrive in arbitrary chunks. */
#include <string.h>
#include "client/client_internal.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"

void watch_lines_init(struct watch_lines *wl)
{
	buf_init(&wl->partial);
	wl->max_line = 0;
}

void watch_lines_release(struct watch_lines *wl)
{
	buf_release(&wl->partial);
}

static bool blank(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return false;
	return true;
}

static int emit(const char *line, size_t len, int (*on_line)(void *, const char *, size_t), void *ud)
{
	if (len && line[len - 1] == '\r')
		len--;
	if (blank(line, len))
		return 0;
	return on_line(ud, line, len);
}

int watch_lines_feed(struct watch_lines *wl, const char *data, size_t len,
		     int (*on_line)(void *ud, const char *line, size_t len), void *ud)
{
	size_t cap = wl->max_line ? wl->max_line : WATCH_MAX_LINE;
	int rc;

	while (len) {
		const char *nl = memchr(data, '\n', len);
		size_t take = nl ? (size_t)(nl - data) : len;
		if (wl->partial.len + take > cap) {
			buf_reset(&wl->partial);
			return E_TOO_LARGE;
		}
		if (!nl) {
			buf_add(&wl->partial, data, take);
			return 0;
		}
		if (wl->partial.len) {
			buf_add(&wl->partial, data, take);
			rc = emit(wl->partial.ptr, wl->partial.len, on_line, ud);
			buf_reset(&wl->partial);
		} else {
			rc = emit(data, take, on_line, ud);
		}
		if (rc)
			return rc;
		data += take + 1;
		len -= take + 1;
	}
	return 0;
}

static const char *const type_names[] = {
	[WEV_ADDED] = "ADDED", [WEV_MODIFIED] = "MODIFIED", [WEV_DELETED] = "DELETED",
	[WEV_BOOKMARK] = "BOOKMARK", [WEV_ERROR] = "ERROR",
};

const char *watch_event_type_name(enum watch_event_type t)
{
	return (unsigned)t < sizeof(type_names) / sizeof(type_names[0]) ? type_names[t] : "UNKNOWN";
}

int watch_event_parse(const char *line, size_t len, struct watch_event *ev)
{
	json_t *j = json_parse_limited(line, len, WATCH_MAX_DEPTH, NULL);
	const char *type = json_str(j, "type");
	json_t *obj = json_object_get(j, "object");
	int rc = E_BAD_REQUEST;

	if (!type || !json_is_object(obj))
		goto out;
	for (size_t i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++) {
		if (strcmp(type, type_names[i]))
			continue;
		ev->type = (enum watch_event_type)i;
		ev->object = json_incref(obj);
		rc = 0;
		break;
	}
out:
	json_decref(j);
	return rc;
}

bool watch_status_expired(const json_t *status)
{
	json_t *code = json_object_get(status, "code");
	const char *reason = json_str(status, "reason");
	if (json_is_integer(code) && json_integer_value(code) == 410)
		return true;
	return reason && (!strcmp(reason, "Expired") || !strcmp(reason, "Gone"));
}
