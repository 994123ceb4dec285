/* Limits shared by the selector parsers (module-private). */
#ifndef URSA_SELECTOR_INT_H
#define URSA_SELECTOR_INT_H

#define SELECTOR_MAX_INPUT (16 * 1024) /* bytes of selector text */
#define SELECTOR_MAX_REQUIREMENTS 100  /* requirements (label) or terms (field) */
#define SELECTOR_MAX_VALUES 64         /* values in one "in"/"notin" set or matchExpressions entry */

#endif
