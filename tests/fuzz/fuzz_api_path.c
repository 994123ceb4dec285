/* Fuzzes path_parse. Invariants: success implies a sane info (no '/' or empty segments in any
 * field, resource set exactly for PATH_RESOURCE, subresource only with a name). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ursa/errors.h"
#include "ursa/path.h"
#include "ursa/xalloc.h"

static void check_segment(const char *s, bool may_be_empty)
{
	if (!s)
		return;
	if ((!may_be_empty && !*s) || strchr(s, '/') || strlen(s) > 253 || strcmp(s, "..") == 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = xstrndup((const char *)data, size);
	struct path_info p;
	int rc = path_parse(text, &p);
	if (rc == 0) {
		if (!p.group)
			abort();
		check_segment(p.group, true);
		check_segment(p.version, false);
		check_segment(p.tenant, false);
		check_segment(p.namespace_, false);
		check_segment(p.resource, false);
		check_segment(p.name, false);
		check_segment(p.subresource, false);
		if ((p.kind == PATH_RESOURCE) != (p.resource != NULL))
			abort();
		if (p.subresource && !p.name)
			abort();
		if (p.legacy_core && p.group[0])
			abort();
		path_info_release(&p);
	} else if (rc != E_NOT_FOUND) {
		abort();
	}
	free(text);
	return 0;
}
