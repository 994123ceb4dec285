/* Helpers for the gateway's unit tests (header-only: each test is its own executable). */
#ifndef URSA_TEST_GW_H
#define URSA_TEST_GW_H
#include <stdlib.h>
#include <string.h>
#include "gw.h"
#include "ursa/xalloc.h"

/* A partition record of KIND ("tp" or "rm") with ENDPOINTS, a JSON list body ("\"http://...\""). */
static inline struct partition *test_partition(const char *kind, const char *id, const char *endpoints)
{
	char *js = xasprintf("{\"kind\":\"%s\",\"endpoints\":[%s]}", kind, endpoints);
	struct partition *p = partition_parse(id, js, strlen(js));
	free(js);
	assert_non_null(p);
	return p;
}

#endif
