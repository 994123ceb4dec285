/* Fuzzes the header parsers of apidisc.h: Accept negotiation, Content-Type recognition and
 * If-None-Match. Invariants: forms are in range, a form's Content-Type names that form again,
 * "*" in If-None-Match matches any tag. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ursa/apidisc.h"
#include "ursa/xalloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = xstrndup((const char *)data, size);
	enum apidisc_form f = apidisc_negotiate(text);
	if (f != APIDISC_LEGACY && f != APIDISC_V2BETA1 && f != APIDISC_V2)
		abort();
	if (apidisc_form_of(apidisc_content_type(f)) != f)
		abort();
	enum apidisc_form c = apidisc_form_of(text);
	if (c != APIDISC_LEGACY && c != APIDISC_V2BETA1 && c != APIDISC_V2)
		abort();
	(void)apidisc_etag_matches(text, "\"abc\"");
	if (!apidisc_etag_matches("*", text[0] ? text : "\"\""))
		abort();
	free(text);
	return 0;
}
