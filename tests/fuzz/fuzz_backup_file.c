/* Fuzzes the backup file parser (backup_parse) and unsealing (backup_unseal) on arbitrary
 * bytes. Invariants: a file is refused with a message and nothing returned, or parsed into a
 * header naming a tenant and items led by the one tenant object, every item with a resource, a
 * path and an object; unsealing with a key never crashes and, refused, says why. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "backup/internal.h"
#include "ursa/jsonutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *header, *items;
	struct buf err = BUF_INIT;
	if (backup_parse((const char *)data, size, &header, &items, &err) < 0) {
		if (header || items || !err.len)
			abort();
	} else {
		if (!json_str(header, "tenant") || json_array_size(items) < 1 ||
		    strcmp(json_str(json_array_get(items, 0), "resource"), "tenants") != 0)
			abort();
		size_t i;
		json_t *it;
		json_array_foreach(items, i, it)
			if (!json_str(it, "resource") || !json_str(it, "path") || !json_is_object(json_object_get(it, "object")))
				abort();
		struct backup_key key = { .id = "0000000000000000" };
		memset(key.k, 7, sizeof(key.k));
		buf_reset(&err);
		if (backup_unseal(&key, header, items, &err) < 0 && !err.len)
			abort();
		json_decref(header);
		json_decref(items);
	}
	buf_release(&err);
	return 0;
}
