/* Field errors as Kubernetes StatusCause objects, with upstream's message shapes. */
#include <stdarg.h>
#include <string.h>
#include "api/validation.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

/* Quoted values longer than this are cut (at a UTF-8 boundary) and marked with "...". */
#define QUOTE_MAX 256

static void add_cause(struct field_errors *e, const char *reason, const char *field, struct buf *msg)
{
	if (!e->causes)
		e->causes = json_array();
	if (json_array_size(e->causes) >= FIELD_ERRORS_MAX)
		return;
	json_t *c = json_object();
	json_object_set_new(c, "reason", json_string(reason));
	/* Messages are built from valid UTF-8 pieces; fall back to a bare text if not. */
	json_t *m = json_stringn(buf_cstr(msg), msg->len);
	json_object_set_new(c, "message", m ? m : json_string("invalid value"));
	json_t *f = json_string(field ? field : "");
	json_object_set_new(c, "field", f ? f : json_string(""));
	json_array_append_new(e->causes, c);
}

static void add_vf(struct field_errors *e, const char *reason, const char *field, struct buf *msg,
		   const char *fmt, va_list ap)
{
	if (fmt)
		buf_vaddf(msg, fmt, ap);
	add_cause(e, reason, field, msg);
}

/* Appends s as a quoted, escaped, length-capped string. */
static void add_quoted(struct buf *b, const char *s)
{
	size_t len = s ? strlen(s) : 0;
	bool cut = len > QUOTE_MAX;
	if (cut) {
		len = QUOTE_MAX;
		while (len > 0 && ((unsigned char)s[len] & 0xC0) == 0x80)
			len--;
	}
	buf_add_json_str(b, s ? s : "", len);
	if (cut)
		buf_adds(b, "...");
}

void field_error_add(struct field_errors *e, const char *reason, const char *field, const char *fmt, ...)
{
	struct buf msg = BUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	add_vf(e, reason, field, &msg, fmt, ap);
	va_end(ap);
	buf_release(&msg);
}

void field_error_required(struct field_errors *e, const char *field)
{
	field_error_add(e, "FieldValueRequired", field, "Required value");
}

void field_error_required_why(struct field_errors *e, const char *field, const char *fmt, ...)
{
	struct buf msg = BUF_INIT;
	buf_adds(&msg, "Required value: ");
	va_list ap;
	va_start(ap, fmt);
	add_vf(e, "FieldValueRequired", field, &msg, fmt, ap);
	va_end(ap);
	buf_release(&msg);
}

void field_errors_release(struct field_errors *e)
{
	json_decref(e->causes);
	e->causes = NULL;
}

void field_error_invalid(struct field_errors *e, const char *field, const char *value, const char *fmt, ...)
{
	struct buf msg = BUF_INIT;
	buf_adds(&msg, "Invalid value: ");
	add_quoted(&msg, value);
	buf_adds(&msg, ": ");
	va_list ap;
	va_start(ap, fmt);
	add_vf(e, "FieldValueInvalid", field, &msg, fmt, ap);
	va_end(ap);
	buf_release(&msg);
}

void field_error_invalid_int(struct field_errors *e, const char *field, long long value, const char *fmt, ...)
{
	struct buf msg = BUF_INIT;
	buf_addf(&msg, "Invalid value: %lld: ", value);
	va_list ap;
	va_start(ap, fmt);
	add_vf(e, "FieldValueInvalid", field, &msg, fmt, ap);
	va_end(ap);
	buf_release(&msg);
}

void field_error_invalid_json(struct field_errors *e, const char *field, const json_t *value, const char *fmt, ...)
{
	struct buf msg = BUF_INIT, dump = BUF_INIT;
	buf_adds(&msg, "Invalid value: ");
	if (value)
		json_dump_buf(value, &dump);
	else
		buf_adds(&dump, "null");
	if (dump.len > QUOTE_MAX) {
		size_t n = QUOTE_MAX;
		while (n > 0 && ((unsigned char)dump.ptr[n] & 0xC0) == 0x80)
			n--;
		buf_add(&msg, dump.ptr, n);
		buf_adds(&msg, "...");
	} else {
		buf_add(&msg, buf_cstr(&dump), dump.len);
	}
	buf_adds(&msg, ": ");
	va_list ap;
	va_start(ap, fmt);
	add_vf(e, "FieldValueInvalid", field, &msg, fmt, ap);
	va_end(ap);
	buf_release(&msg);
	buf_release(&dump);
}

void field_error_not_supported(struct field_errors *e, const char *field, const char *value,
			       const char *const *supported)
{
	struct buf msg = BUF_INIT;
	buf_adds(&msg, "Unsupported value: ");
	add_quoted(&msg, value);
	if (supported && supported[0]) {
		buf_adds(&msg, ": supported values: ");
		for (size_t i = 0; supported[i]; i++) {
			if (i)
				buf_adds(&msg, ", ");
			add_quoted(&msg, supported[i]);
		}
	}
	add_cause(e, "FieldValueNotSupported", field, &msg);
	buf_release(&msg);
}

void field_error_duplicate(struct field_errors *e, const char *field, const char *value)
{
	struct buf msg = BUF_INIT;
	buf_adds(&msg, "Duplicate value: ");
	add_quoted(&msg, value);
	add_cause(e, "FieldValueDuplicate", field, &msg);
	buf_release(&msg);
}

void field_error_forbidden(struct field_errors *e, const char *field, const char *fmt, ...)
{
	struct buf msg = BUF_INIT;
	buf_adds(&msg, "Forbidden: ");
	va_list ap;
	va_start(ap, fmt);
	add_vf(e, "FieldValueForbidden", field, &msg, fmt, ap);
	va_end(ap);
	buf_release(&msg);
}

void field_error_too_long(struct field_errors *e, const char *field, long long max)
{
	field_error_add(e, "FieldValueTooLong", field, "Too long: must have at most %lld bytes", max);
}

void field_error_not_found(struct field_errors *e, const char *field, const char *value)
{
	struct buf msg = BUF_INIT;
	buf_adds(&msg, "Not found: ");
	add_quoted(&msg, value);
	add_cause(e, "FieldValueNotFound", field, &msg);
	buf_release(&msg);
}

void field_error_type(struct field_errors *e, const char *field, const char *want)
{
	field_error_add(e, "FieldValueTypeInvalid", field, "Invalid value: must be %s", want);
}
