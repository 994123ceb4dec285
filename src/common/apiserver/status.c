/* Kubernetes Status bodies for errors, and plain JSON replies. */
#include "internal.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

json_t *status_object(int err, const char *message, const char *name, const char *kind, json_t *causes)
{
	json_t *st = json_pack("{s:s,s:s,s:{},s:s,s:s,s:s,s:i}", "kind", "Status", "apiVersion", "v1", "metadata",
			       "status", "Failure", "message", message, "reason", err_reason(err), "code",
			       err_http_code(err));
	if (name || kind || causes) {
		json_t *d = json_object();
		if (name)
			json_object_set_new(d, "name", json_string(name));
		if (kind)
			json_object_set_new(d, "kind", json_string(kind));
		if (causes)
			json_object_set_new(d, "causes", causes);
		json_object_set_new(st, "details", d);
	}
	return st;
}

void reply_status_raw(struct http_reply *rp, int err, const char *message)
{
	json_t *st = status_object(err, message, NULL, NULL, NULL);
	struct buf b = BUF_INIT;
	json_dump_buf(st, &b);
	json_decref(st);
	if (err == E_UNAVAILABLE || err == E_TOO_MANY)
		http_reply_header(rp, "Retry-After", "1");
	http_reply_set(rp, err_http_code(err), "application/json", &b);
}

static void reply_status_v(struct req *q, int err, const char *name, json_t *causes, const char *fmt, va_list ap)
{
	struct buf msg = BUF_INIT;
	buf_vaddf(&msg, fmt, ap);
	const char *kind = q->res ? q->res->r->plural : NULL;
	bool typed = name || causes || err == E_FORBIDDEN; /* a 403 names the kind, as Kubernetes' */
	json_t *st = status_object(err, buf_cstr(&msg), name, typed ? kind : NULL, causes);
	if (q->res && (err == E_INVALID || err == E_FORBIDDEN) && q->res->r->group[0] && json_object_get(st, "details"))
		json_object_set_new(json_object_get(st, "details"), "group", json_string(q->res->r->group));
	if ((err == E_UNAVAILABLE || err == E_TOO_MANY) && q->reply)
		http_reply_header(q->reply, "Retry-After", "1");
	if (q->capture && !*q->capture)
		*q->capture = json_incref(st);
	reply_json(q, err_http_code(err), st);
	json_decref(st);
	buf_release(&msg);
}

void reply_status(struct req *q, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	reply_status_v(q, err, NULL, NULL, fmt, ap);
	va_end(ap);
}

void reply_status_details(struct req *q, int err, const char *name, json_t *causes, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	reply_status_v(q, err, name, causes, fmt, ap);
	va_end(ap);
}

void reply_not_found(struct req *q, const char *name)
{
	const char *res = q->res->r->plural;
	if (q->res->r->group[0])
		reply_status_details(q, E_NOT_FOUND, name, NULL, "%s.%s \"%s\" not found", res, q->res->r->group, name);
	else
		reply_status_details(q, E_NOT_FOUND, name, NULL, "%s \"%s\" not found", res, name);
}

void reply_json(struct req *q, int code, const json_t *obj)
{
	struct buf b = BUF_INIT;
	json_dump_buf(obj, &b);
	reply_buf(q, code, &b);
}

void reply_buf(struct req *q, int code, struct buf *body)
{
	q->replied_code = code;
	if (q->reply)
		http_reply_set(q->reply, code, "application/json", body);
	else
		buf_release(body);
}
