/* Feeds arbitrary bytes, as a TokenRequest body, to tokenreq_parse (its "spec"), and as token
 * claims to the claims validator for another audience than the API's: whatever is accepted
 * must be consistent (expiry within bounds, audiences present, a bound object complete). */
#include "auth/auth_internal.h"
#include "ursa/jsonutil.h"
#include "ursa/tokenreq.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *body = json_parse_limited((const char *)data, size, 8, NULL);
	struct tokenreq r = { 0 };
	char *err = NULL;
	if (body) {
		if (tokenreq_parse(json_object_get(body, "spec"), &r, &err) == 0) {
			if (r.expiration_s < TOKENREQ_MIN_S || r.expiration_s > TOKENREQ_MAX_S || !r.naudiences ||
			    (r.bound_kind && !r.bound_name) || (!r.bound_kind && (r.bound_name || r.bound_uid)))
				abort();
		} else if (!err) {
			abort();
		}
		tokenreq_release(&r);
		free(err);
		json_decref(body);
	}
	struct identity id = { 0 };
	if (jwt_claims_identity_for((const char *)data, size, 1700000000, "vault", &id) == 0) {
		if (!id.tenant || (id.bound_kind && (!id.sa_uid || !id.bound_name || !id.bound_uid)))
			abort();
		if (id.sa_uid && jwt_check_identity(&id))
			abort(); /* what verifies must be signable again */
	}
	identity_release(&id);
	return 0;
}
