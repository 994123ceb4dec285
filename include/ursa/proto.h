/* Kubernetes protobuf request bodies (Content-Type: application/vnd.kubernetes.protobuf)
 * decoded into the JSON object the same request would have carried as application/json.
 *
 * The body is the 4-byte magic "k8s\0" followed by a runtime.Unknown message:
 * typeMeta {apiVersion, kind}, raw (the object's own message), contentEncoding, contentType.
 * The object's message is decoded with a per-kind field table (see src/common/proto/schema.h);
 * fields the table does not know are skipped by wire type. Zero scalars of fields that the Go
 * types mark omitempty are left out, so the result matches `kubectl create ... -o json`.
 */
#ifndef URSA_PROTO_H
#define URSA_PROTO_H
#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>
#include "ursa/buf.h"

#define K8S_PROTOBUF_MEDIA_TYPE "application/vnd.kubernetes.protobuf"
#define K8S_PROTOBUF_MAX_DEPTH 64          /* nested messages, envelope included */
#define K8S_PROTOBUF_MAX_VALUES 262144     /* JSON values produced by one body */

/* Decodes one protobuf body of len bytes (the caller caps len; the server allows 3 MiB).
 * On success returns 0 and sets *ret to a NEW reference: the object with "kind" and
 * "apiVersion" set from the envelope. On error *ret is untouched, a message is appended to
 * err (if not NULL), and the result is:
 *   E_MEDIA_TYPE   a kind/apiVersion without a schema (the message names both; the client
 *                  can send application/json instead), or a contentEncoding/contentType
 *                  this decoder does not handle;
 *   E_BAD_REQUEST  no "k8s\0" magic, or malformed protobuf: truncated varint or length,
 *                  wrong wire type for a known field, invalid UTF-8 or a NUL in a string,
 *                  bad Time/IntOrString/Quantity, nesting deeper than K8S_PROTOBUF_MAX_DEPTH,
 *                  more than K8S_PROTOBUF_MAX_VALUES values.
 * Status fields are not decoded: a status present in the body becomes {} (kubectl never sends
 * one), except the few small ones kubectl's JSON shows (Service, Namespace, PDB). */
int k8s_protobuf_to_json(const void *data, size_t len, json_t **ret, struct buf *err);

/* True if apiVersion/kind has a schema (both NUL-terminated). */
bool k8s_protobuf_has_kind(const char *api_version, const char *kind);

#endif
