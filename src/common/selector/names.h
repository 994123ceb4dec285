/* Name syntax checks with upstream's error details (module-private; api.h has the bool forms).
 * Each *_error function returns NULL when s is valid, else a static string describing the first
 * rule that s breaks, worded like Kubernetes' apimachinery validation messages. */
#ifndef URSA_SELECTOR_NAMES_H
#define URSA_SELECTOR_NAMES_H
#include <stdbool.h>
#include <stddef.h>

#define LABEL_NAME_MAX 63
#define DNS1123_SUBDOMAIN_MAX 253

const char *label_key_error(const char *s);
const char *label_value_error(const char *s);
/* Same checks on a byte range (need not be NUL-terminated). */
bool valid_label_key_n(const char *s, size_t len);
bool valid_label_value_n(const char *s, size_t len);

#endif
