/* Feeds arbitrary bytes to the identity-assertion verifier under a fixed key (the seeds include
 * assertions made with it, valid at the fixed time). Whatever verifies must re-assert to
 * something that verifies to the same identity. */
#include "auth/auth_internal.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char key[] = "fuzz-identity-key-0123456789abcdef";
#define NOW 1700000000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct idkey *k;
	if (!k)
		k = idkey_from_bytes(key, strlen(key));
	struct identity id = { 0 }, again = { 0 };
	if (identity_assertion_verify(k, (const char *)data, size, NOW, &id) == 0) {
		char *a = identity_assert(k, &id, NOW, 60);
		if (!a || identity_assertion_verify(k, a, strlen(a), NOW, &again) != 0)
			abort();
		if (strcmp(again.user, id.user) != 0 || strcmp(again.tenant, id.tenant) != 0 ||
		    again.ngroups != id.ngroups)
			abort();
		free(a);
	}
	identity_release(&id);
	identity_release(&again);
	return 0;
}
