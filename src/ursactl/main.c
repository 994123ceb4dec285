/* ursactl: subcommand dispatch. Adding a subcommand is one entry in commands[] plus its run
 * function and flag table (see ursactl.h). */
#include "ursactl.h"
#include <string.h>

static const struct command commands[] = {
	{
		.name = "keygen",
		.summary = "Generate the key pair that signs user tokens.",
		.description = "Writes an RSA-2048 private key (PEM, mode 0600) and its public key. Give the\n"
			       "public key to the API servers; keep the private key for 'ursactl token'.",
		.flags = keygen_flags,
		.run = cmd_keygen,
	},
	{
		.name = "token",
		.summary = "Print a signed bearer token for a user of a tenant.",
		.description = "The signing key, when --signing-key is not given, comes from $URSA_SIGNING_KEY,\n"
			       "else signing-key.pem in the region directory ($URSA_HOME, else the nearest\n"
			       ".ursa directory above the current one).",
		.flags = token_flags,
		.run = cmd_token,
	},
	{
		.name = "kubeconfig",
		.summary = "Print a kubeconfig with a signed token for a user of a tenant.",
		.description = "Defaults come from flags, else $URSA_SIGNING_KEY, $URSA_SERVER and $URSA_CA_FILE,\n"
			       "else from the region directory ($URSA_HOME, else the nearest .ursa above the\n"
			       "current directory): signing-key.pem, server (one line: the URL) and ca.crt.\n"
			       "Without a CA, an https server is written with insecure-skip-tls-verify.",
		.flags = kubeconfig_flags,
		.run = cmd_kubeconfig,
	},
	{
		.name = "register",
		.summary = "Register a partition in the region (in every partition of the other kind).",
		.description = "Records the partition in the region file and writes it into every partition of the\n"
			       "other kind (TenantPartition objects in resource managers, ResourceManager objects in\n"
			       "tenant partitions), and those into it. Safe to repeat.",
		.flags = register_flags,
		.run = cmd_register,
	},
	{
		.name = "unregister",
		.summary = "Remove a partition from the region.",
		.flags = unregister_flags,
		.run = cmd_unregister,
	},
	{
		.name = "tenant",
		.summary = "Back a tenant up, make it again from a backup, or move it to another partition.",
		.description = "backup TENANT FILE reads every object of the tenant at one revision of its\n"
			       "partition's etcd (the tenant, namespaces, CRDs and custom resources, RBAC,\n"
			       "workloads, configuration; not events) into FILE, JSON lines; secrets' data is\n"
			       "sealed with the backup key (--key, else $URSA_BACKUP_KEY, else backup.key in the\n"
			       "region directory).\n"
			       "restore FILE makes the tenant again, under --as NAME if given (a copy), on the\n"
			       "partition --to names. The tenant must not exist. Restored objects are new objects\n"
			       "(new uids); pods a controller owns are made again by it, other pods come back\n"
			       "unscheduled.\n"
			       "move TENANT --to PARTITION moves the tenant to another tenant partition while its\n"
			       "users keep working: its objects copied as they are (same uids; pods keep running\n"
			       "on their nodes), its changes followed, then its writes held for a moment while the\n"
			       "gateways switch it over (--fence-timeout bounds that: past it the move is\n"
			       "abandoned and the tenant stays). Every step is recorded in the gateways' etcd:\n"
			       "after a crash, move TENANT --recover finishes or undoes it (docs/migration.md).",
		.args_usage = "backup TENANT FILE | restore FILE | move TENANT",
		.max_args = 3,
		.flags = tenant_flags,
		.run = cmd_tenant,
	},
	{
		.name = "partition",
		.summary = "Drain a tenant partition, or balance tenants between partitions.",
		.description = "drain PARTITION marks the partition draining (the gateways place no new tenant\n"
			       "there; undrain PARTITION ends that) and moves every tenant off it, --parallel at\n"
			       "a time, each to the partition with the fewest stored objects.\n"
			       "balance moves tenants from the partitions holding more than --margin above the\n"
			       "mean of stored objects to the least loaded ones (the counts: docs/migration.md\n"
			       "\"Draining and balancing\").",
		.args_usage = "drain PARTITION | undrain PARTITION | balance",
		.max_args = 2,
		.flags = partition_flags,
		.run = cmd_partition,
	},
	{
		.name = "partitions",
		.summary = "List the region's partitions from the region file.",
		.flags = partitions_flags,
		.run = cmd_partitions,
	},
};

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

static void usage(FILE *out)
{
	fputs("Usage: ursactl COMMAND [flags]\n\nCommands:\n", out);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
	fputs("  help         Show help for a command.\n\n"
	      "Run 'ursactl COMMAND --help' for the flags of a command.\n", out);
}

static int help(int argc, char **argv)
{
	if (argc < 1) {
		usage(stdout);
		return EXIT_OK;
	}
	const struct command *cmd = find_command(argv[0]);
	if (!cmd)
		return fail("unknown command \"%s\"; run 'ursactl --help'", argv[0]);
	command_help(cmd, stdout);
	return EXIT_OK;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	const char *name = argv[1];
	if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0 || strcmp(name, "help") == 0)
		return help(argc - 2, argv + 2);
	const struct command *cmd = find_command(name);
	if (!cmd) {
		fprintf(stderr, "ursactl: unknown command \"%s\"\n\n", name);
		usage(stderr);
		return EXIT_USAGE;
	}
	struct flags f;
	int r = flags_parse(cmd, argc - 2, argv + 2, &f);
	if (r < 0)
		return EXIT_OK; /* --help */
	if (r != EXIT_OK)
		return r;
	r = cmd->run(cmd, &f);
	flags_release(&f);
	return r;
}
