#include "ursa/errors.h"
#include <stddef.h>

struct err_info {
	int err;
	int http;
	const char *reason;
};

static const struct err_info table[] = {
#define X(name, code, reason) { name, code, reason },
	URSA_ERRORS(X)
#undef X
};

static const struct err_info *find(int err)
{
	for (unsigned i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].err == err)
			return &table[i];
	return NULL;
}

int err_http_code(int err)
{
	const struct err_info *e = find(err);
	return e ? e->http : 500;
}

const char *err_reason(int err)
{
	const struct err_info *e = find(err);
	return e ? e->reason : "InternalError";
}
