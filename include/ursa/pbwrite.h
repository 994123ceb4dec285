/* Protobuf wire encoding into a struct buf: the few primitives the servers need to write
 * protobuf documents (the OpenAPI v2 document kubectl asks for as gnostic's openapi_v2.Document).
 * Every function appends to b; nothing here fails (allocation failure aborts). Fields are
 * written in the order called; the caller omits proto3 defaults it does not want on the wire.
 * Nested messages: encode the child into a buf of its own, then pbw_msg it into the parent. */
#ifndef URSA_PBWRITE_H
#define URSA_PBWRITE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ursa/buf.h"

enum pbw_wire { PBW_VARINT = 0, PBW_FIXED64 = 1, PBW_LEN = 2, PBW_FIXED32 = 5 };

void pbw_varint(struct buf *b, uint64_t v);
void pbw_key(struct buf *b, uint32_t field, enum pbw_wire wire);
void pbw_int64(struct buf *b, uint32_t field, int64_t v);   /* int64/int32 (two's complement varint) */
void pbw_bool(struct buf *b, uint32_t field, bool v);
void pbw_double(struct buf *b, uint32_t field, double v);   /* fixed64, little endian */
void pbw_bytes(struct buf *b, uint32_t field, const void *data, size_t len);
void pbw_string(struct buf *b, uint32_t field, const char *s); /* NUL-terminated; NULL writes "" */
void pbw_msg(struct buf *b, uint32_t field, const struct buf *msg); /* msg's bytes, length-delimited */

#endif /* URSA_PBWRITE_H */
