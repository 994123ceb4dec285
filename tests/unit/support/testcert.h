/* For unit tests: test_cert_write(prefix, cert_path, key_path), a self-signed EC P-256
 * certificate for IP 127.0.0.1 (also its own CA, so a client may trust it as its CA file),
 * written as PEM to /tmp/<prefix>-<pid>.crt and .key; the paths are written into the two buffers
 * (at least 64 bytes each). The caller unlinks them. */
#ifndef URSA_TESTS_TESTCERT_H
#define URSA_TESTS_TESTCERT_H
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <unistd.h>

static inline void test_cert_write(const char *prefix, char cert_path[64], char key_path[64])
{
	EVP_PKEY *pk = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 7);
	X509_gmtime_adj(X509_getm_notBefore(x), -60);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	X509_set_pubkey(x, pk);
	X509_NAME *name = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"127.0.0.1", -1, -1, 0);
	X509_set_issuer_name(x, name);
	X509V3_CTX v3;
	X509V3_set_ctx_nodb(&v3);
	X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
	X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &v3, NID_subject_alt_name, "IP:127.0.0.1");
	X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	ext = X509V3_EXT_conf_nid(NULL, &v3, NID_basic_constraints, "critical,CA:TRUE");
	X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	X509_sign(x, pk, EVP_sha256());
	snprintf(cert_path, 64, "/tmp/%s-%d.crt", prefix, (int)getpid());
	snprintf(key_path, 64, "/tmp/%s-%d.key", prefix, (int)getpid());
	FILE *f = fopen(cert_path, "w");
	PEM_write_X509(f, x);
	fclose(f);
	f = fopen(key_path, "w");
	PEM_write_PrivateKey(f, pk, NULL, NULL, 0, NULL, NULL);
	fclose(f);
	X509_free(x);
	EVP_PKEY_free(pk);
}

#endif
