/* A tenant's final backup: a tenant annotated ursa.io/final-backup: "true" holds the finalizer
 * ursa.io/final-backup while it lives (its strategy adds it with the annotation, src/common/kinds/
 * tenant.c, and the tenant controller here too; this one takes it away again when the annotation
 * goes), so deleting it leaves it marked for deletion with everything it holds until
 * this controller manager has written its backup, the file `ursactl tenant backup` writes
 * (ursa/backup.h), to --final-backup-dir as <tenant>-<UTC time>.backup, sealed with
 * --backup-key-file. Then the finalizer goes and the tenant is emptied as any deleted tenant.
 * Without those flags such a tenant stays marked for deletion (logged at each retry) until an
 * operator configures them or removes the finalizer: its backup was asked for. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "tpc.h"
#include "ursa/backup.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/xalloc.h"

static bool asked(const json_t *obj)
{
	return strcmp(json_str(json_path(obj, "metadata.annotations"), BACKUP_ANNOTATION) ?: "", "true") == 0;
}

/* Writes the backup of tenant t (of the partition m's client talks to) into m's directory.
 * 0 or an error (logged). */
static int write_backup(struct tpc *m, const char *t)
{
	if (!m->final_backup_dir || !m->backup_key) {
		log_error("tenant final backup not taken: no --final-backup-dir and --backup-key-file", "tenant=\"%s\"", t);
		return E_UNAVAILABLE;
	}
	char when[32];
	time_t now = time(NULL);
	strftime(when, sizeof(when), "%Y%m%dT%H%M%SZ", gmtime(&now));
	char *path = xasprintf("%s/%s-%s.backup", m->final_backup_dir, t, when);
	char *tmp = xasprintf("%s.partial", path);
	FILE *fp = fopen(tmp, "w");
	struct buf err = BUF_INIT;
	struct backup_stats st = { 0 };
	int rc = 0;
	if (!fp) {
		buf_addf(&err, "cannot write %s: %s", tmp, strerror(errno));
		rc = E_UNAVAILABLE;
	} else {
		if (backup_write(m->rest, t, NULL, m->backup_key, fp, &st, &err) < 0)
			rc = E_UNAVAILABLE;
		else if (fsync(fileno(fp)) != 0)
			rc = E_UNAVAILABLE, buf_addf(&err, "fsync %s: %s", tmp, strerror(errno));
		if (fclose(fp) != 0 && !rc)
			rc = E_UNAVAILABLE, buf_addf(&err, "closing %s: %s", tmp, strerror(errno));
		if (!rc && rename(tmp, path) != 0)
			rc = E_UNAVAILABLE, buf_addf(&err, "rename to %s: %s", path, strerror(errno));
		if (rc)
			unlink(tmp);
	}
	if (rc)
		log_error("tenant final backup failed", "tenant=\"%s\" error=\"%s\"", t, buf_cstr(&err));
	else
		log_info("tenant final backup written", "tenant=\"%s\" file=\"%s\" objects=%zu sealed=%zu revision=%lld", t,
			 path, st.objects, st.sealed, (long long)st.revision);
	buf_release(&err);
	free(tmp);
	free(path);
	return rc;
}

int tpc_final_backup(struct tpc *m, const char *t, const char *path, const json_t *obj)
{
	bool deleting = json_path(obj, "metadata.deletionTimestamp") != NULL;
	bool want = asked(obj), has = json_has_finalizer(obj, BACKUP_FINALIZER);
	if (!deleting) /* the finalizer follows the annotation */
		return want == has ? 0 : tpc_set_finalizer(m, path, obj, BACKUP_FINALIZER, want);
	if (!has)
		return 0;
	int rc = write_backup(m, t);
	if (!rc)
		rc = tpc_set_finalizer(m, path, obj, BACKUP_FINALIZER, false);
	return rc ? rc : 1;
}
