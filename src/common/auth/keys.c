/* PEM key loading and key-pair generation for signed tokens. */
#include "auth/auth_internal.h"
#include "ursa/xalloc.h"
#include <errno.h>
#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KEY_FILE_MAX (1024 * 1024)

/* Never prompt on a terminal for a passphrase: encrypted keys are simply refused. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	return -1;
}

const char *jwt_alg_for_key(EVP_PKEY *key)
{
	if (!key)
		return NULL;
	if (EVP_PKEY_is_a(key, "RSA"))
		return EVP_PKEY_get_bits(key) >= 2048 ? "RS256" : NULL;
	if (EVP_PKEY_is_a(key, "EC")) {
		char group[64];
		size_t n = 0;
		if (EVP_PKEY_get_group_name(key, group, sizeof(group), &n) == 1 &&
		    (strcmp(group, "prime256v1") == 0 || strcmp(group, "P-256") == 0))
			return "ES256";
	}
	return NULL;
}

static int check_key(const char *path, EVP_PKEY *key, EVP_PKEY **ret, char **ret_err)
{
	if (!jwt_alg_for_key(key)) {
		EVP_PKEY_free(key);
		*ret_err = xasprintf("%s: unsupported key (need RSA of 2048 bits or more, or EC P-256)", path);
		return -1;
	}
	*ret = key;
	return 0;
}

static EVP_PKEY *pem_public(const struct buf *pem)
{
	BIO *bio = BIO_new_mem_buf(pem->ptr, (int)pem->len);
	EVP_PKEY *key = bio ? PEM_read_bio_PUBKEY(bio, NULL, no_passphrase, NULL) : NULL;
	if (!key && bio) {
		(void)BIO_reset(bio);
		X509 *cert = PEM_read_bio_X509(bio, NULL, no_passphrase, NULL);
		if (cert)
			key = X509_get_pubkey(cert);
		X509_free(cert);
	}
	if (!key && bio) {
		(void)BIO_reset(bio);
		key = PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL);
	}
	BIO_free(bio);
	return key;
}

int auth_load_public_key(const char *path, EVP_PKEY **ret, char **ret_err)
{
	struct buf pem = BUF_INIT;
	if (auth_read_file(path, KEY_FILE_MAX, &pem, ret_err) < 0) {
		buf_release(&pem);
		return -1;
	}
	EVP_PKEY *key = pem.len ? pem_public(&pem) : NULL;
	buf_release(&pem);
	ERR_clear_error();
	if (!key) {
		*ret_err = xasprintf("%s: no PEM public key, certificate or private key found", path);
		return -1;
	}
	return check_key(path, key, ret, ret_err);
}

int auth_load_private_key(const char *path, EVP_PKEY **ret, char **ret_err)
{
	struct buf pem = BUF_INIT;
	if (auth_read_file(path, KEY_FILE_MAX, &pem, ret_err) < 0) {
		buf_release(&pem);
		return -1;
	}
	EVP_PKEY *key = NULL;
	BIO *bio = pem.len ? BIO_new_mem_buf(pem.ptr, (int)pem.len) : NULL;
	if (bio)
		key = PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL);
	BIO_free(bio);
	buf_release(&pem);
	ERR_clear_error();
	if (!key) {
		*ret_err = xasprintf("%s: no unencrypted PEM private key found", path);
		return -1;
	}
	return check_key(path, key, ret, ret_err);
}

/* Creates path with mode and writes the key as PEM; the mode is forced with fchmod in case the
 * file already existed with a looser one. */
static int write_pem(const char *path, mode_t mode, EVP_PKEY *key, bool private_key)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0)
		return -1;
	if (fchmod(fd, mode) < 0) {
		close(fd);
		return -1;
	}
	FILE *f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		return -1;
	}
	int ok = private_key ? PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL)
			     : PEM_write_PUBKEY(f, key);
	if (fclose(f) != 0)
		ok = 0;
	return ok == 1 ? 0 : -1;
}

int keypair_generate(const char *private_path, const char *public_path)
{
	EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
	int r = -1;
	if (!key)
		goto out;
	if (write_pem(private_path, 0600, key, true) < 0)
		goto out;
	if (write_pem(public_path, 0644, key, false) < 0)
		goto out;
	r = 0;
out:
	EVP_PKEY_free(key);
	ERR_clear_error();
	return r;
}
