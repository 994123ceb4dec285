/* Fuzzes CustomResourceDefinition parsing: any JSON document either fails with causes or gives a
 * definition that keeps the promises of ursa/crd.h (one storage version, name = plural.group, an
 * unreserved group, valid printer-column paths, at most 8 selectable fields, compiled schemas). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ursa/crd.h"
#include "ursa/jsonutil.h"

static void check(const struct crd_def *d)
{
	const struct crd_version *st = crd_def_storage(d);
	if (!st || !st->storage || crd_def_version(d, st->name) != st)
		abort();
	size_t storage = 0;
	for (size_t i = 0; i < d->nversions; i++) {
		const struct crd_version *v = &d->versions[i];
		storage += v->storage;
		if (!v->schema || !*v->name || crd_def_version(d, v->name) != v)
			abort();
		for (size_t j = 0; j < v->ncolumns; j++)
			if (!crd_jsonpath_valid(v->columns[j].json_path) || v->columns[j].priority < 0)
				abort();
		if (v->nselectable > 8)
			abort();
		if (v->scale && (!v->spec_replicas_path || strncmp(v->spec_replicas_path, ".spec.", 6) ||
				 !v->status_replicas_path || strncmp(v->status_replicas_path, ".status.", 8)))
			abort();
	}
	if (storage != 1 || crd_group_reserved(d->group) || !strchr(d->group, '.'))
		abort();
	size_t np = strlen(d->plural);
	if (strncmp(d->name, d->plural, np) || d->name[np] != '.' || strcmp(d->name + np + 1, d->group))
		abort();
	if (!*d->singular || !*d->kind || !*d->list_kind || !strcmp(d->kind, d->list_kind))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 65536)
		return 0;
	json_t *obj = json_parse_limited((const char *)data, size, 64, NULL);
	if (!obj)
		return 0;
	struct field_errors errs = { NULL };
	struct crd_def *d = NULL;
	int rc = crd_def_parse(obj, &d, &errs);
	if (rc == 0) {
		if (!d || field_errors_any(&errs))
			abort();
		check(d);
	} else if (rc != -1 || d || !field_errors_any(&errs)) {
		abort();
	}
	crd_def_free(d);
	field_errors_release(&errs);
	json_decref(obj);
	return 0;
}
