/* Tenant backup files (docs/operations.md "Backing up and restoring a tenant"), written by
 * `ursactl tenant backup` and by a tenant partition's controller manager when a tenant that asks
 * for it (annotation ursa.io/final-backup) is deleted, and read by `ursactl tenant restore`.
 *
 * A file is JSON lines: a header {"kind":"TenantBackup","apiVersion":"ursa.io/v1","tenant",
 * "partition","revision","time","keyId"}, one line per object as the partition's backup pages
 * (TENANT_BACKUP_PATH, src/common/apiserver/backup.c) give it, {"resource","path","object"},
 * and a trailer {"end":true,"objects":N}, so a file cut short is refused. Secrets' data and
 * stringData are sealed with AES-256-GCM under the region's backup key into "sealed" (base64 of
 * nonce, ciphertext and tag; the item's resource and path are the associated data, so a sealed
 * value cannot be moved to another secret); keyId names the key (the first 8 bytes of its
 * SHA-256, hex). */
#ifndef URSA_BACKUP_H
#define URSA_BACKUP_H
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include "ursa/api.h"
#include "ursa/buf.h"

struct rest_client;

#define BACKUP_ANNOTATION TENANT_FINAL_BACKUP /* a tenant's: "true" takes a backup when deleted */
#define BACKUP_FINALIZER TENANT_FINAL_BACKUP  /* held by such a tenant until the backup is written */

struct backup_key {
	unsigned char k[32];
	char id[17]; /* hex of the first 8 bytes of SHA-256(k) */
};
/* Reads a key file (one line: base64 of 32 bytes). 0, or -1 with why appended to err. */
int backup_key_load(const char *path, struct backup_key *ret, struct buf *err);
void backup_key_forget(struct backup_key *key); /* wipes it */

struct backup_stats {
	size_t objects, sealed;
	int64_t revision;
};
/* Writes tenant's backup to fp: the pages of c's partition (partition: its name, for the
 * header; NULL: the name the partition gives), secrets sealed under key. 0, or -1 with why appended to err (fp then holds part of
 * a file: the caller writes to a temporary name and renames it on success). */
int backup_write(struct rest_client *c, const char *tenant, const char *partition, const struct backup_key *key,
		 FILE *fp, struct backup_stats *ret, struct buf *err);

/* Parses a backup file's text: 0 with *ret_header and *ret_items (new references), the items in
 * the order a restore writes them: the tenant, then the file's order (namespaces and CRDs come
 * first) except that every item comes after the items that own it (ownerReferences by uid), so
 * that no owner is missing when a garbage collector looks. -1 with why (the line's number) appended to err. */
int backup_parse(const char *text, size_t len, json_t **ret_header, json_t **ret_items, struct buf *err);
/* Opens every sealed item of items with key (after checking the header's keyId): 0, or -1 with
 * why appended to err (nothing is trusted then). */
int backup_unseal(const struct backup_key *key, const json_t *header, json_t *items, struct buf *err);

#endif
