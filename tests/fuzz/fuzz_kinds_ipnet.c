/* Fuzzes the IPv4 parsers (ursa/ipnet.h) on arbitrary text, checking that what parses formats
 * back to the same text, and the Network, Endpoints, EndpointSlice and Service strategies on
 * arbitrary JSON. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ursa/api.h"
#include "ursa/ipnet.h"
#include "ursa/jsonutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	memcpy(s, data, size);
	s[size] = 0;
	uint32_t ip;
	struct ipv4_net n;
	struct buf out = BUF_INIT;
	if (ipv4_parse(s, &ip) == 0) {
		ipv4_format(ip, &out);
		if (strcmp(out.ptr, s) != 0)
			abort();
	}
	const char *why = NULL;
	if (ipv4_cidr_parse(s, &n, &why) == 0) {
		if (n.prefix < 0 || n.prefix > 32 || !ipv4_net_contains(n, n.base))
			abort();
		buf_reset(&out);
		ipv4_format(n.base, &out);
		buf_addf(&out, "/%d", n.prefix);
		if (strcmp(out.ptr, s) != 0)
			abort();
	} else if (!why) {
		abort();
	}
	free(s);
	struct buf err = BUF_INIT;
	json_t *j = json_parse_limited((const char *)data, size, 64, &err);
	if (j && json_is_object(j)) {
		const struct api_strategy *ss[] = { &strategy_network, &strategy_endpoints, &strategy_endpointslice,
						    &strategy_service };
		for (size_t i = 0; i < sizeof(ss) / sizeof(ss[0]); i++) {
			json_t *c = json_deep_copy(j);
			struct field_errors e = { NULL };
			if (ss[i]->defaults)
				ss[i]->defaults(c);
			ss[i]->validate(c, j, &e);
			json_t *cells = json_array();
			ss[i]->cells(c, 0, cells);
			if (json_array_size(cells) != ss[i]->ncolumns)
				abort();
			json_decref(cells);
			field_errors_release(&e);
			json_decref(c);
		}
	}
	json_decref(j);
	buf_release(&err);
	buf_release(&out);
	return 0;
}
