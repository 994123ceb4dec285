/* Fuzzes field_selector_parse, check and matching. Invariant: exact values are found by matching. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ursa/selector.h"
#include "ursa/xalloc.h"

static const char *get_fixed(void *ud, const char *label)
{
	(void)ud;
	if (strcmp(label, "metadata.name") == 0)
		return "p1";
	if (strcmp(label, "spec.nodeName") == 0)
		return "n,1=";
	return "";
}

static const char *get_exact(void *ud, const char *label)
{
	const struct field_selector *s = ud;
	const char *v = field_selector_exact(s, label);
	return v ? v : "";
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct api_field fields[] = { { "spec.nodeName", "spec.nodeName" }, { "source", "source.component" } };
	char *text = xstrndup((const char *)data, size);
	struct field_selector *s = NULL;
	struct buf err = BUF_INIT;
	if (field_selector_parse(text, &s, &err) == 0) {
		json_t *obj = json_pack("{s:{s:s}, s:{s:s}}", "metadata", "name", "p1", "spec", "nodeName", "n,1=");
		field_selector_check(s, fields, 2, &err);
		bool a = field_selector_matches(s, get_fixed, NULL);
		bool b = field_selector_matches_obj(s, obj, fields, 2);
		/* both read the same values for metadata.name and spec.nodeName only; compare when
		 * the selector uses nothing else */
		buf_reset(&err);
		if (field_selector_check(s, fields, 1, &err) == 0 && a != b)
			abort();
		field_selector_exact(s, "metadata.name");
		field_selector_empty(s);
		field_selector_matches(s, get_exact, s);
		json_decref(obj);
		field_selector_free(s);
	} else if (err.len == 0) {
		abort();
	}
	buf_release(&err);
	free(text);
	return 0;
}
