/* JSON text surgery without parsing (pure; jsontext.c): the pieces of a stored object that a
 * Table row needs, cut from its compact text. The input is expected to be valid JSON (the cache's
 * own dumps); malformed input makes a function fail (return -1), never read out of bounds. Keys
 * are compared as they are written (no escape decoding). */
#ifndef URSA_APISERVER_JSONTEXT_H
#define URSA_APISERVER_JSONTEXT_H
#include <jansson.h>
#include <stddef.h>
#include "ursa/buf.h"

/* Offset one past the JSON value starting at s[i] (after optional whitespace), or (size_t)-1 when
 * it is malformed or deeper than 512 levels. */
size_t json_text_skip(const char *s, size_t len, size_t i);

/* In the object text s, the value of the top-level member key: its offset and length in
 * *ret_off, *ret_len. Returns 0, or -1 when s is not an object or has no such member. */
int json_text_member(const char *s, size_t len, const char *key, size_t *ret_off, size_t *ret_len);

/* Appends the object text s without its top-level member key (as it is when there is none).
 * Returns 0, or -1 (out unchanged) when s is not an object. */
int json_text_drop_member(const char *s, size_t len, const char *key, struct buf *out);

/* Appends the projection of the value s to the NULL-terminated dotted paths keep: an object
 * member is kept whole when its path is a listed path or below one, projected when it lies on
 * the way to one, and dropped otherwise; array elements are all kept (counts do not change) and
 * projected as path segment "*", which also matches any member name. Scalars on the way are kept.
 * E.g. keep {"metadata.name", "spec.containers.*.name", NULL}. Returns 0, or -1 (out holding
 * part of the text) when s is malformed. */
int json_text_project(const char *s, size_t len, const char *const *keep, struct buf *out);

/* The value s parsed into a new jansson value, projected to keep as json_text_project does (the
 * whole value when keep is NULL). Strings are taken as UTF-8 without checking (the text is the
 * cache's own); objects' members keep their order. Returns NULL when s is malformed, holds a
 * NUL escape or an out-of-range number, or is nested deeper than 512 levels. */
json_t *json_text_load(const char *s, size_t len, const char *const *keep);

#endif
