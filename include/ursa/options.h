/* Table-driven command-line flags ("--name value" or "--name=value"), with --help built
 * from the table. */
#ifndef URSA_OPTIONS_H
#define URSA_OPTIONS_H
#include <stdbool.h>

enum opt_type { OPT_STRING, OPT_INT, OPT_BOOL };

struct opt {
	const char *name;  /* without dashes */
	enum opt_type type;
	void *ptr;         /* const char ** | long long * | bool * */
	const char *help;
};

/* Parses argv into the table's pointers (which hold the defaults beforehand). Prints usage
 * and exits 0 for --help; prints an error and returns -1 for unknown flags or bad values. */
int opts_parse(const char *prog, const char *summary, const struct opt *opts, int n, int argc, char **argv);

#endif
