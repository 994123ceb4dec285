/* Fuzzes the docker-registry secret parser and the credential lookup. The first byte picks the
 * secret's form: bit 0 dockerconfigjson or dockercfg, bit 1 whether the rest is the config
 * document (base64-encoded here, to reach the entry logic) or the raw data string (to reach the
 * base64 decoder). Every entry reported carries strings; a lookup that finds one returns them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "images.h"
#include "ursa/buf.h"
#include "ursa/xalloc.h"

static char *b64(const uint8_t *s, size_t n)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	struct buf b = BUF_INIT;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16 | (i + 1 < n ? (uint32_t)s[i + 1] << 8 : 0) | (i + 2 < n ? s[i + 2] : 0);
		buf_addch(&b, tab[(v >> 18) & 63]);
		buf_addch(&b, tab[(v >> 12) & 63]);
		buf_addch(&b, i + 1 < n ? tab[(v >> 6) & 63] : '=');
		buf_addch(&b, i + 2 < n ? tab[v & 63] : '=');
	}
	return buf_detach(&b, NULL);
}

static void on_entry(void *ud, const char *key, const char *user, const char *pass)
{
	if (!key || !user || !pass)
		abort();
	(*(int *)ud)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 65536)
		return 0;
	bool json_form = data[0] & 1;
	char *val = data[0] & 2 ? xstrndup((const char *)data + 1, size - 1) : b64(data + 1, size - 1);
	json_t *secret = json_pack("{s:s,s:{s:s}}", "type",
				   json_form ? "kubernetes.io/dockerconfigjson" : "kubernetes.io/dockercfg", "data",
				   json_form ? ".dockerconfigjson" : ".dockercfg", val);
	free(val);
	if (!secret) /* not UTF-8 */
		return 0;
	int seen = 0;
	int n = pull_secret_entries(secret, on_entry, &seen);
	if (n != (n < 0 ? -1 : seen))
		abort();
	static const char *const images[] = { "busybox", "registry.example:5000/team/app", "a.corp.example/x" };
	for (size_t i = 0; i < sizeof(images) / sizeof(images[0]); i++) {
		struct image_ref r;
		if (image_ref_parse(images[i], &r, NULL) < 0)
			abort();
		struct pull_auth a = { 0 };
		const json_t *secrets[2] = { secret, secret };
		int rc = pull_auth_lookup(secrets, 2, &r, &a);
		if (rc == 1 ? !a.server || !a.username || !a.password || n <= 0 : rc != 0 || a.server)
			abort();
		pull_auth_release(&a);
		image_ref_release(&r);
	}
	json_decref(secret);
	return 0;
}
