/*
 * ursa-region: the load driver of the region simulation (issue 21; bench/run-region.sh runs it):
 *
 *   ursa-region tenants --env OUT/region.env [--count T] [--prefix t] [--concurrency 32]
 *   ursa-region load    --env OUT/region.env --out OUT [--duration S] [--rate P] [--burst-rate P2]
 *                       [--burst-seconds S2] [--tenants T] [--active-share F] ...
 *   ursa-region verify  --env OUT/region.env --out OUT [--wait S]
 *
 * `ursa-region SUBCOMMAND --help` lists each one's flags; bench/region/{tenants,load,verify}.c say what each does and
 * writes (calls.tsv, pods.tsv, acked.jsonl, load.json, verify.json). Each prints progress and a
 * final "RESULT {json}" line.
 */
#include <stdio.h>
#include <string.h>
#include "region/region.h"

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "tenants"))
		return region_tenants_main(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "load"))
		return region_load_main(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "verify"))
		return region_verify_main(argc - 1, argv + 1);
	fprintf(argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) ? stdout : stderr,
		"usage: ursa-region tenants|load|verify --env REGION_ENV [flags] (each takes --help)\n");
	return argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) ? 0 : 2;
}
