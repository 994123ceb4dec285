/* Parses arbitrary region.env content (ursa-region's input from bench/run-region.sh); on success
 * every numeric field is -1 or a whole number and the strings are NUL-terminated; on failure a
 * message comes back. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "region/region.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct region_env e;
	char *err = NULL;
	if (region_env_parse((const char *)data, size, &e, &err) == 0) {
		if (err || e.nodes < -1 || e.tenants < -1)
			abort();
		const char *s[] = {e.gateway_url, e.ca_file, e.signing_key, e.admin_token_file, e.tp_urls, e.rm_urls};
		for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++)
			if (s[i] && strlen(s[i]) > size)
				abort();
		region_env_release(&e);
	} else if (!err) {
		abort();
	}
	free(err);
	return 0;
}
