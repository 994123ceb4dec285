/* Fuzzes label_selector_parse. Invariants: an accepted selector's canonical form parses back to
 * the same canonical form and matches the same label sets; the JSON form never crashes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ursa/selector.h"
#include "ursa/xalloc.h"

static void check_roundtrip(const struct label_selector *s, const json_t *labels)
{
	struct buf a = BUF_INIT, b = BUF_INIT;
	struct label_selector *s2 = NULL;
	label_selector_format(s, &a);
	if (a.len <= 16 * 1024) {
		if (label_selector_parse(buf_cstr(&a), &s2, NULL) != 0)
			abort();
		label_selector_format(s2, &b);
		if (strcmp(buf_cstr(&a), buf_cstr(&b)) != 0)
			abort();
		if (label_selector_matches(s, labels) != label_selector_matches(s2, labels))
			abort();
		if (label_selector_empty(s) != label_selector_empty(s2))
			abort();
	}
	label_selector_free(s2);
	buf_release(&a);
	buf_release(&b);
}

/* Interprets the input as a LabelSelector JSON document too. */
static void fuzz_json(const char *text, size_t len)
{
	json_t *j = json_loadb(text, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
	struct label_selector *s = NULL;
	struct buf err = BUF_INIT;
	if (j && label_selector_from_json(j, &s, &err) == 0) {
		json_t *labels = json_object_get(j, "matchLabels");
		label_selector_matches(s, labels);
		label_selector_exact(s, "a");
		label_selector_free(s);
	}
	json_decref(j);
	buf_release(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = xstrndup((const char *)data, size);
	struct label_selector *s = NULL;
	struct buf err = BUF_INIT;
	json_t *labels = json_pack("{s:s, s:s, s:s, s:s}", "a", "b", "x", "", "example.com/k", "1", "in", "notin");
	if (label_selector_parse(text, &s, &err) == 0) {
		label_selector_matches(s, labels);
		label_selector_matches(s, NULL);
		label_selector_exact(s, "a");
		check_roundtrip(s, labels);
		label_selector_free(s);
	} else if (err.len == 0) {
		abort(); /* every failure explains itself */
	}
	fuzz_json((const char *)data, size);
	json_decref(labels);
	buf_release(&err);
	free(text);
	return 0;
}
