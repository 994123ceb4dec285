/* Fuzzes the etcd JSON gateway parsers that remain (the watch stream, lease replies, errors):
 * every newline-separated line goes through the watch line parser (as the watch stream does),
 * and the whole input through the KeyValue and error parsers and the base64 decoder. The KV
 * calls' protobuf decoders are fuzz_etcd_pb.c. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "etcd/etcd_internal.h"

static void one_line(const char *p, size_t len)
{
	struct etcd_watch_msg m;

	if (etcd_parse_watch_line(p, len, &m) == 0) {
		for (size_t i = 0; i < m.n_events; i++)
			if (!m.events[i].kv.key || !m.events[i].kv.value)
				abort();
		etcd_watch_msg_release(&m);
	} else if (m.events || m.n_events) {
		abort();
	}
}

static void whole(const char *p, size_t len)
{
	json_t *j = etcd_json_parse(p, len);
	struct etcd_kv kv;
	int64_t v;
	char *out;
	size_t out_len;

	if (etcd_parse_error(j, 400) == 0)
		abort();
	if (etcd_parse_kv(j, &kv) == 0) {
		if (!kv.key || !kv.value || kv.value[kv.value_len] != '\0')
			abort();
		etcd_kv_release(&kv);
	} else if (kv.key || kv.value) {
		abort();
	}
	etcd_header_rev(j, &v);
	json_decref(j);
	if (etcd_b64_decode(p, len, &out, &out_len) == 0) {
		if (out_len > len || out[out_len] != '\0')
			abort();
		free(out);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data;
	size_t start = 0;

	for (size_t i = 0; i <= size; i++) {
		if (i == size || p[i] == '\n') {
			one_line(p + start, i - start);
			start = i + 1;
		}
	}
	whole(p, size);
	return 0;
}
