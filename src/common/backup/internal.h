/* Between the backup module's files. */
#ifndef URSA_BACKUP_INTERNAL_H
#define URSA_BACKUP_INTERNAL_H
#include <jansson.h>
#include <stdbool.h>
#include "ursa/backup.h"

/* seal.c: a secret item's data and stringData moved into "sealed" (false: it had neither);
 * and back: 0, 0 for an item with nothing sealed, -1 when it does not open with key. */
bool backup_seal_item(const struct backup_key *key, json_t *item);
int backup_unseal_item(const struct backup_key *key, json_t *item);

#endif
