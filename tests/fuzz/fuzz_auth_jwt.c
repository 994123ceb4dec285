/* Feeds arbitrary bytes to the signed-token verifier (with fixed RSA and EC public keys whose
 * private halves signed the seed tokens), to the claims validator (inputs starting with '{'),
 * and checks that base64url decoding is canonical: decode then encode gives the input back. */
#include "auth/auth_internal.h"
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char rsa_pub[] =
	"-----BEGIN PUBLIC KEY-----\n"
	"MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAt+2hR2tLxdX0NqI6VjeD\n"
	"degUZ+2Vc8iJZRIuKTYDBWJ/QX6O5T1yaeDsDaOae54L9bspLnd7nOaG4+9YMHi1\n"
	"fpTtX3pKselPSHirhlXCEzMXjESvVwfjlQuk/dqUHUYHozmcrKv1GNaZxzwvGJMx\n"
	"HyBvPQ1xkJcPezIYEBuplIJAueQ59w68uWFL1V5g/UpxO9LUdTZ+VjaZoewVuchK\n"
	"debphBX7idptXkI9I1AtgcFsuLv5kLum3NjSYZqbo10QiJ26DnWdE5Z7kaJXucWf\n"
	"J4GT2JPVJIiPEjv1jFAPp5c0cFEBIJzsWFOnx5WhPFao6As8owxXXUmj5vgaLrv0\n"
	"HQIDAQAB\n"
	"-----END PUBLIC KEY-----\n";

static const char ec_pub[] =
	"-----BEGIN PUBLIC KEY-----\n"
	"MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAElEmAz4OkgWEbNRf8Y95fGxZuD0/g\n"
	"SoNfIY+gUsVz36oUBfu5bInyM3GEksapnxQP0JknOSU++kf3BdiLSWtjaQ==\n"
	"-----END PUBLIC KEY-----\n";

static EVP_PKEY *load(const char *pem)
{
	BIO *bio = BIO_new_mem_buf(pem, -1);
	EVP_PKEY *k = PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
	BIO_free(bio);
	if (!k || !jwt_alg_for_key(k))
		abort();
	return k;
}

static void check_b64_canonical(const uint8_t *data, size_t size)
{
	struct buf dec = BUF_INIT, enc = BUF_INIT;
	if (b64url_decode((struct sv){ (const char *)data, size }, &dec) == 0) {
		b64url_encode(&enc, dec.ptr, dec.len);
		if (enc.len != size || (size && memcmp(enc.ptr, data, size) != 0))
			abort();
	}
	buf_release(&dec);
	buf_release(&enc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static EVP_PKEY *rsa, *ec;
	struct identity id = { 0 };
	if (!rsa) {
		rsa = load(rsa_pub);
		ec = load(ec_pub);
	}
	/* A fixed "now" between the seeds' nbf and exp values keeps runs reproducible. */
	const time_t now = 1700000000;
	if (size && data[0] == '{') {
		if (jwt_claims_identity((const char *)data, size, now, &id) == 0 && !id.tenant)
			abort();
		identity_release(&id);
		return 0;
	}
	EVP_PKEY *keys[] = { rsa, ec };
	for (size_t i = 0; i < 2; i++) {
		if (jwt_verify(keys[i], (const char *)data, size, now, &id) == 0 &&
		    (!id.user || !id.tenant || !auth_tenant_ok(id.tenant, strlen(id.tenant))))
			abort();
		identity_release(&id);
	}
	if (size <= 4096)
		check_b64_canonical(data, size);
	return 0;
}
