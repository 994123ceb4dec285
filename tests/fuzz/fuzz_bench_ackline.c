/* Parses an arbitrary line of acked.jsonl (ursa-region verify's input); a parsed ack formats
 * back into a line that parses to the same fields, and folds into a map of one object. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "region/region.h"

static bool same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ack a, b;
	if (ack_parse((const char *)data, size, &a) < 0)
		return 0;
	struct buf line = BUF_INIT;
	ack_format(&line, &a);
	if (ack_parse(line.ptr, line.len, &b) < 0)
		abort();
	if (!same(a.op, b.op) || !same(a.kind, b.kind) || !same(a.tenant, b.tenant) || !same(a.ns, b.ns) ||
	    !same(a.name, b.name) || !same(a.uid, b.uid) || !same(a.rv, b.rv))
		abort();
	struct strmap m;
	strmap_init(&m);
	ack_fold(&m, &a);
	ack_fold(&m, &b);
	if (m.n != 1)
		abort();
	ack_fold_release(&m);
	buf_release(&line);
	return 0;
}
