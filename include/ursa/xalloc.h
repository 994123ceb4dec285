/* Allocation wrappers: allocation failure aborts the process, so callers never check for NULL. */
#ifndef URSA_XALLOC_H
#define URSA_XALLOC_H
#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* Returns a new heap string formatted like printf. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
