/* Protobuf wire encoding (see ursa/pbwrite.h). */
#include "ursa/pbwrite.h"
#include <string.h>

void pbw_varint(struct buf *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;
	do {
		tmp[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			tmp[n] |= 0x80;
		n++;
	} while (v);
	buf_add(b, tmp, n);
}

void pbw_key(struct buf *b, uint32_t field, enum pbw_wire wire)
{
	pbw_varint(b, ((uint64_t)field << 3) | (uint64_t)wire);
}

void pbw_int64(struct buf *b, uint32_t field, int64_t v)
{
	pbw_key(b, field, PBW_VARINT);
	pbw_varint(b, (uint64_t)v);
}

void pbw_bool(struct buf *b, uint32_t field, bool v)
{
	pbw_key(b, field, PBW_VARINT);
	pbw_varint(b, v ? 1 : 0);
}

void pbw_double(struct buf *b, uint32_t field, double v)
{
	uint64_t bits;
	uint8_t le[8];
	memcpy(&bits, &v, sizeof(bits));
	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)(bits >> (8 * i));
	pbw_key(b, field, PBW_FIXED64);
	buf_add(b, le, sizeof(le));
}

void pbw_bytes(struct buf *b, uint32_t field, const void *data, size_t len)
{
	pbw_key(b, field, PBW_LEN);
	pbw_varint(b, len);
	if (len)
		buf_add(b, data, len);
}

void pbw_string(struct buf *b, uint32_t field, const char *s)
{
	pbw_bytes(b, field, s ? s : "", s ? strlen(s) : 0);
}

void pbw_msg(struct buf *b, uint32_t field, const struct buf *msg)
{
	pbw_bytes(b, field, msg->ptr, msg->len);
}
