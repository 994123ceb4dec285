/* Fuzz target: protobuf-c decoding of hostile CRI responses. The first byte picks the message
 * type, the rest is its encoding; whatever decodes must pack to its computed size, and when that
 * packed form decodes again it must pack to the same bytes (unknown fields included: protobuf-c
 * keeps and re-emits them). The packed form need not decode: protobuf-c 1.4 accepts field number
 * 0 when its tag is a non-minimal varint ("80 00"), keeps it as an unknown field and re-emits it
 * as "00", which it then refuses. We never re-send a decoded message, so that is harmless. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ursa/cri.h"

static const ProtobufCMessageDescriptor *const types[] = {
	&runtime__v1__container_status_response__descriptor, &runtime__v1__pod_sandbox_status_response__descriptor,
	&runtime__v1__list_containers_response__descriptor,  &runtime__v1__list_pod_sandbox_response__descriptor,
	&runtime__v1__list_images_response__descriptor,      &runtime__v1__image_status_response__descriptor,
	&runtime__v1__image_fs_info_response__descriptor,    &runtime__v1__status_response__descriptor,
	&runtime__v1__version_response__descriptor,          &runtime__v1__container_config__descriptor,
	&runtime__v1__pod_sandbox_config__descriptor,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const ProtobufCMessageDescriptor *d;
	ProtobufCMessage *m, *again;
	uint8_t *wire, *wire2;
	size_t n, n2;

	if (size < 1)
		return 0;
	d = types[data[0] % (sizeof(types) / sizeof(types[0]))];
	m = cri_unpack(d, data + 1, size - 1);
	if (!m)
		return 0;
	if (m->descriptor != d)
		abort();
	/* what decoded packs, and the packed form decodes to a message that packs the same */
	n = protobuf_c_message_get_packed_size(m);
	wire = malloc(n ? n : 1);
	if (protobuf_c_message_pack(m, wire) != n)
		abort();
	again = cri_unpack(d, wire, n);
	if (!again) {
		free(wire);
		cri_free(m);
		return 0;
	}
	n2 = protobuf_c_message_get_packed_size(again);
	wire2 = malloc(n2 ? n2 : 1);
	if (n2 != n || protobuf_c_message_pack(again, wire2) != n2 || memcmp(wire, wire2, n) != 0)
		abort();
	free(wire);
	free(wire2);
	cri_free(again);
	cri_free(m);
	return 0;
}
