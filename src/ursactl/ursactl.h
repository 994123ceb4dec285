/* ursactl: the operator's command-line tool. A subcommand is one entry in the table in main.c
 * (name, summary, flag table, run function); options.c parses flags and prints help from that
 * table, region.c finds the defaults of the local region directory. */
#ifndef URSACTL_H
#define URSACTL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "ursa/buf.h"

typedef struct json_t json_t;

/* Exit codes. */
#define EXIT_OK 0
#define EXIT_FAIL 1
#define EXIT_USAGE 2

struct flag_spec {
	const char *name;     /* long name without "--" */
	const char *metavar;  /* value placeholder for help; NULL for a boolean flag */
	const char *help;
	bool required;
};

struct flags;

struct command {
	const char *name;
	const char *summary;      /* one line for `ursactl --help` */
	const char *description;  /* paragraph for `ursactl NAME --help`; may be NULL */
	const char *args_usage;   /* positional arguments in the usage line, e.g. "NAME"; may be NULL */
	size_t max_args;          /* positional arguments accepted */
	const struct flag_spec *flags; /* ends with an entry whose name is NULL */
	int (*run)(const struct command *cmd, const struct flags *f);
};

/* ---- options.c ---- */
struct flags {
	const struct command *cmd;
	const char **values;      /* parallel to cmd->flags; borrowed from argv; NULL if absent */
	const char **args;        /* positional arguments, borrowed */
	size_t nargs;
};
/* Parses argv (after the subcommand name). Returns EXIT_OK, EXIT_USAGE after printing why to
 * stderr, or -1 when --help was asked and printed (the caller exits 0). */
int flags_parse(const struct command *cmd, int argc, char **argv, struct flags *ret);
void flags_release(struct flags *f);
/* Value of a flag named in cmd's table (a name missing from the table is a bug: aborts), or
 * NULL if not given. Booleans read "true". */
const char *flag_get(const struct flags *f, const char *name);
bool flag_bool(const struct flags *f, const char *name);
void command_help(const struct command *cmd, FILE *out);

/* Parses "24h", "90m", "1h30m", "7d", "45s" or "0" (no expiry) into seconds. 0 or -1. */
int parse_duration(const char *s, int64_t *ret_s);

/* ---- region.c ---- */
/* The region directory: $URSA_HOME, else the nearest ".ursa" directory found by walking up from
 * the current directory. New string, or NULL if there is none. */
char *region_dir(void);
/* Resolves a file setting: the flag value, else environment variable env, else file name inside
 * the region directory if it exists. New string, or NULL (then *ret_hint, a new string, says
 * how to provide it, naming flag_name such as "--signing-key"). */
char *region_file(const char *flag_value, const char *flag_name, const char *env, const char *name,
		  char **ret_hint);
/* Resolves the server URL: flag, else $URSA_SERVER, else the first line of <region>/server.
 * New string or NULL with a new hint. */
char *region_server(const char *flag_value, char **ret_hint);

/* ---- cmd_auth.c ---- */
int cmd_keygen(const struct command *cmd, const struct flags *f);
int cmd_token(const struct command *cmd, const struct flags *f);
int cmd_kubeconfig(const struct command *cmd, const struct flags *f);
extern const struct flag_spec keygen_flags[], token_flags[], kubeconfig_flags[];

/* ---- cmd_partition.c ---- */
/* The flags region_load and region_auth read, for a command's table. */
#define REGION_AUTH_FLAGS                                                                                  \
	{ "region-file", "FILE", "the region file (default <region dir>/region.json)", false },              \
	{ "signing-key", "FILE", "key to mint an admin token (default from the region directory)", false }, \
	{ "certificate-authority", "FILE", "CA of the partitions' certificates (default <region dir>/ca.crt)", false }
/* The region file and the credentials for its partitions. region_load reads the file (flag
 * "region-file", else <region dir>/region.json; an empty region when there is none); region_auth
 * mints a system:masters token (flag "signing-key") and finds the CA (flag
 * "certificate-authority"): both need those flags in the command's table. EXIT_OK or EXIT_FAIL
 * (printed). */
struct region {
	char *path;
	json_t *doc;   /* {"tenantPartitions":[...], "resourceManagers":[...]} */
	char *token;
	char *ca;
};
int region_load(const struct flags *f, struct region *r);
int region_auth(const struct flags *f, struct region *r);
void region_release(struct region *r);
const char *list_key(bool tp); /* the region file's list of tenant partitions (tp) or RMs */
/* The entry named name of a region-file list (borrowed; *ret_index, which may be NULL, gets its
 * position), or NULL. */
json_t *region_find(json_t *list, const char *name, size_t *ret_index);
char *endpoints_csv(const json_t *p); /* a region-file entry's endpoints, comma-separated; new string */
int cmd_register(const struct command *cmd, const struct flags *f);
int cmd_unregister(const struct command *cmd, const struct flags *f);
int cmd_partitions(const struct command *cmd, const struct flags *f);
extern const struct flag_spec register_flags[], unregister_flags[], partitions_flags[];

/* ---- cmd_backup.c ---- */
int cmd_tenant(const struct command *cmd, const struct flags *f);
extern const struct flag_spec tenant_flags[];
struct etcd;
struct rest_client;
/* The region file's tenant partition named name (borrowed), or NULL. */
json_t *find_tp(const struct region *r, const char *name);
/* A system:masters client for a region-file tenant partition entry (rest_free it). */
struct rest_client *tp_client(const struct region *r, const json_t *tp);
/* The gateways' etcd (etcd_free it) and its key prefix (borrowed), or NULL when the region has none. */
struct etcd *gateway_etcd(const struct region *r, const char **ret_prefix);
/* The gateways' record of tenant's placement: 0 with *ret_partition (new string) and
 * *ret_mod_rev, E_NOT_FOUND, or another etcd error; E_NOT_FOUND too without a gateway etcd. */
int placement_get(const struct region *r, const char *tenant, char **ret_partition, int64_t *ret_mod_rev);
/* The tenant partition that has tenant (new string): the one the gateways place it on when that
 * one has it, else any that has it; NULL when none has. */
char *tenant_partition(const struct region *r, const char *tenant);

/* POSTs a batch of restore items (items: comma-separated JSON objects) to tenant on c:
 * {"from","restore":id,"done",["mode"],"items"}. mode NULL: a restore; "move": a move's exact
 * copy. Returns rest_do_raw's status; ret_resp gets the body. */
int restore_post(struct rest_client *c, const char *tenant, const char *from, const char *id, const char *mode,
		 bool done, const struct buf *items, struct buf *ret_resp);
/* Whether a restore batch's answer (status, body) is the 409 of a tenant whose earlier namesake
 * its partition is still emptying: a restore or a move waits that out, up to WAIT_EMPTY_S. */
#define WAIT_EMPTY_S 120
bool restore_waits_for_leftovers(int status, const struct buf *resp);

/* ---- cmd_move.c ---- */
/* ursactl tenant move TENANT --to PARTITION | --recover (cmd_tenant hands "move" over). */
int tenant_move(const struct flags *f, const char *tenant);
int cmd_partition(const struct command *cmd, const struct flags *f);
extern const struct flag_spec partition_flags[];

/* ---- gateway_registry.c ---- */
/* Gateway etcd settings: flags (recorded into the region file doc) else doc; servers NULL if none. */
void gateway_etcd_settings(json_t *doc, const char *flag_servers, const char *flag_prefix,
			   const char **ret_servers, const char **ret_prefix);
/* Writes / deletes the gateway record of a region-file entry. EXIT_OK or EXIT_FAIL (printed). */
int gateway_record(const char *servers, const char *prefix, const json_t *entry, bool tp);
int gateway_forget(const char *servers, const char *prefix, const char *name);
/* Marks a tenant partition's gateway record draining (the gateways place no new tenant there) or
 * not. EXIT_OK or EXIT_FAIL (printed). */
int gateway_set_draining(const char *servers, const char *prefix, const char *name, bool draining);

/* Prints "ursactl: <msg>" to stderr. Returns EXIT_FAIL. */
int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
