/* The backup key and secrets sealed with it (ursa/backup.h): AES-256-GCM from OpenSSL, a fresh
 * 12-byte nonce per value, the item's "<resource>/<path>" as associated data. */
#include "ursa/backup.h"
#include "internal.h"
#include "ursa/base64.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>

#define NONCE_LEN 12
#define TAG_LEN 16

int backup_key_load(const char *path, struct backup_key *ret, struct buf *err)
{
	FILE *fp = fopen(path, "r");
	char line[256] = "";
	bool ok = fp && fgets(line, sizeof(line), fp);
	if (fp)
		fclose(fp);
	line[strcspn(line, "\r\n")] = '\0';
	struct buf raw = BUF_INIT;
	if (!ok || base64_decode(&raw, line, strlen(line), 0) < 0 || raw.len != sizeof(ret->k)) {
		buf_addf(err, "%s: not a backup key (one line: base64 of %zu bytes)", path, sizeof(ret->k));
		OPENSSL_cleanse(raw.ptr ? raw.ptr : line, raw.ptr ? raw.len : 0);
		buf_release(&raw);
		OPENSSL_cleanse(line, sizeof(line));
		return -1;
	}
	memcpy(ret->k, raw.ptr, sizeof(ret->k));
	OPENSSL_cleanse(raw.ptr, raw.len);
	buf_release(&raw);
	OPENSSL_cleanse(line, sizeof(line));
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen;
	if (EVP_Digest(ret->k, sizeof(ret->k), md, &mdlen, EVP_sha256(), NULL) != 1)
		abort();
	for (int i = 0; i < 8; i++)
		snprintf(ret->id + 2 * i, 3, "%02x", md[i]);
	return 0;
}

void backup_key_forget(struct backup_key *key)
{
	OPENSSL_cleanse(key, sizeof(*key));
}

/* plain sealed under key with aad: base64 of nonce | ciphertext | tag. New string. */
static char *seal(const struct backup_key *key, const char *aad, const char *plain, size_t n)
{
	unsigned char *out = xmalloc(NONCE_LEN + n + TAG_LEN);
	if (RAND_bytes(out, NONCE_LEN) != 1)
		abort();
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	int len = 0, fin = 0;
	if (!c || EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), NULL, key->k, out) != 1 ||
	    EVP_EncryptUpdate(c, NULL, &len, (const unsigned char *)aad, (int)strlen(aad)) != 1 ||
	    EVP_EncryptUpdate(c, out + NONCE_LEN, &len, (const unsigned char *)plain, (int)n) != 1 ||
	    EVP_EncryptFinal_ex(c, out + NONCE_LEN + len, &fin) != 1 ||
	    EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, TAG_LEN, out + NONCE_LEN + n) != 1)
		abort(); /* AES-GCM in memory does not fail */
	EVP_CIPHER_CTX_free(c);
	struct buf b64 = BUF_INIT;
	base64_encode(&b64, out, NONCE_LEN + n + TAG_LEN, 0);
	free(out);
	return buf_detach(&b64, NULL);
}

/* The plaintext of sealed (new string, *ret_n bytes), or NULL when it is not sealed under key
 * with aad. */
static char *unseal(const struct backup_key *key, const char *aad, const char *b64, size_t *ret_n)
{
	struct buf raw = BUF_INIT;
	if (base64_decode(&raw, b64, strlen(b64), 0) < 0 || raw.len < NONCE_LEN + TAG_LEN) {
		buf_release(&raw);
		return NULL;
	}
	const unsigned char *r = (const unsigned char *)raw.ptr;
	size_t clen = raw.len - NONCE_LEN - TAG_LEN;
	char *plain = xmalloc(clen + 1);
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	int l = 0, fin = 0;
	bool ok = c && EVP_DecryptInit_ex(c, EVP_aes_256_gcm(), NULL, key->k, r) == 1 &&
		  EVP_DecryptUpdate(c, NULL, &l, (const unsigned char *)aad, (int)strlen(aad)) == 1 &&
		  EVP_DecryptUpdate(c, (unsigned char *)plain, &l, r + NONCE_LEN, (int)clen) == 1 &&
		  EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, TAG_LEN, (void *)(r + NONCE_LEN + clen)) == 1 &&
		  EVP_DecryptFinal_ex(c, (unsigned char *)plain + l, &fin) == 1;
	EVP_CIPHER_CTX_free(c);
	buf_release(&raw);
	if (!ok) {
		OPENSSL_cleanse(plain, clen);
		free(plain);
		return NULL;
	}
	plain[clen] = '\0';
	*ret_n = clen;
	return plain;
}

static char *item_aad(const json_t *item)
{
	return xasprintf("%s/%s", json_str(item, "resource"), json_str(item, "path"));
}

bool backup_seal_item(const struct backup_key *key, json_t *item)
{
	json_t *obj = json_object_get(item, "object");
	json_t *secret = json_object();
	static const char *const fields[] = { "data", "stringData" };
	for (int i = 0; i < 2; i++)
		if (json_object_get(obj, fields[i])) {
			json_object_set(secret, fields[i], json_object_get(obj, fields[i]));
			json_object_del(obj, fields[i]);
		}
	bool any = json_object_size(secret) > 0;
	if (any) {
		char *plain = json_dumps(secret, JSON_COMPACT);
		char *aad = item_aad(item);
		char *sealed = seal(key, aad, plain, strlen(plain));
		json_object_set_new(item, "sealed", json_string(sealed));
		free(sealed);
		OPENSSL_cleanse(plain, strlen(plain));
		free(plain);
		free(aad);
	}
	json_decref(secret);
	return any;
}

int backup_unseal_item(const struct backup_key *key, json_t *item)
{
	const char *sealed = json_str(item, "sealed");
	if (!sealed)
		return 0;
	char *aad = item_aad(item);
	size_t n;
	char *plain = unseal(key, aad, sealed, &n);
	free(aad);
	json_t *secret = plain ? json_loadb(plain, n, 0, NULL) : NULL;
	if (plain)
		OPENSSL_cleanse(plain, n);
	free(plain);
	if (!json_is_object(secret) || !json_is_object(json_object_get(item, "object"))) {
		json_decref(secret);
		return -1;
	}
	json_object_update(json_object_get(item, "object"), secret);
	json_object_del(item, "sealed");
	json_decref(secret);
	return 0;
}
