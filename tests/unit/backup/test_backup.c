/* Backup files (src/common/backup): a key file read and named; a secret sealed opens with its
 * key only, and only as the item it was sealed for; a file parsed into the order a restore
 * writes it, and every damaged file refused with a message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "backup/internal.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

static void key_file(const char *path, const char *line)
{
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	fputs(line, fp);
	fclose(fp);
}

static void test_key(void **state)
{
	(void)state;
	char path[] = "/tmp/ursa-test-key-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	struct backup_key k;
	struct buf err = BUF_INIT;
	key_file(path, "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n"); /* bytes 0..31 */
	assert_int_equal(backup_key_load(path, &k, &err), 0);
	assert_int_equal(k.k[0], 0);
	assert_int_equal(k.k[31], 31);
	assert_int_equal(strlen(k.id), 16);
	static const char *const bad[] = { "", "AAEC\n", "not base64 at all!\n",
					   "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gIQ==\n" /* 34 bytes */ };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		key_file(path, bad[i]);
		buf_reset(&err);
		assert_int_equal(backup_key_load(path, &k, &err), -1);
		assert_non_null(strstr(buf_cstr(&err), "not a backup key"));
	}
	unlink(path);
	buf_reset(&err);
	assert_int_equal(backup_key_load(path, &k, &err), -1); /* no file */
	buf_release(&err);
}

static json_t *secret_item(const char *name)
{
	char *s = xasprintf("{\"resource\":\"secrets\",\"path\":\"default/%s\",\"object\":{\"metadata\":{\"name\":\"%s\","
			    "\"namespace\":\"default\"},\"type\":\"Opaque\",\"data\":{\"password\":\"aHVudGVyMg==\"}}}",
			    name, name);
	json_t *j = json_loads(s, 0, NULL);
	free(s);
	return j;
}

static void test_seal(void **state)
{
	(void)state;
	struct backup_key k = { .id = "k1" }, other = { .id = "k2" };
	memset(k.k, 1, sizeof(k.k));
	memset(other.k, 2, sizeof(other.k));
	json_t *a = secret_item("a");
	assert_true(backup_seal_item(&k, a));
	char *text = json_dumps(a, JSON_COMPACT);
	assert_null(strstr(text, "aHVudGVyMg")); /* not in the sealed item */
	free(text);
	assert_null(json_path(a, "object.data"));
	json_t *copy = json_deep_copy(a);
	assert_int_equal(backup_unseal_item(&k, a), 0);
	assert_string_equal(json_path_str(a, "object.data.password"), "aHVudGVyMg==");
	assert_null(json_object_get(a, "sealed"));
	assert_int_equal(backup_unseal_item(&other, copy), -1); /* another key */
	/* the sealed value moved to another secret does not open: the path is in the seal */
	json_t *b = secret_item("b");
	backup_seal_item(&k, b);
	json_object_set(b, "sealed", json_object_get(copy, "sealed"));
	assert_int_equal(backup_unseal_item(&k, b), -1);
	/* nothing to seal, nothing sealed */
	json_t *plain = json_loads("{\"resource\":\"secrets\",\"path\":\"default/c\",\"object\":{}}", 0, NULL);
	assert_false(backup_seal_item(&k, plain));
	assert_int_equal(backup_unseal_item(&k, plain), 0);
	json_decref(a);
	json_decref(b);
	json_decref(copy);
	json_decref(plain);
}

#define HEADER "{\"kind\":\"TenantBackup\",\"apiVersion\":\"ursa.io/v1\",\"tenant\":\"acme\",\"keyId\":\"k1\"}\n"
#define TENANT "{\"resource\":\"tenants\",\"path\":\"acme\",\"object\":{\"metadata\":{\"name\":\"acme\"}}}\n"
#define NS "{\"resource\":\"namespaces\",\"path\":\"default\",\"object\":{\"metadata\":{\"name\":\"default\"}}}\n"
#define RS "{\"resource\":\"replicasets\",\"path\":\"default/r\",\"object\":{\"metadata\":{\"name\":\"r\",\"ownerReferences\":[{\"uid\":\"d\"}]}}}\n"
#define DEP "{\"resource\":\"deployments\",\"path\":\"default/d\",\"object\":{\"metadata\":{\"name\":\"d\",\"uid\":\"d\"}}}\n"
/* a chain: C owned by B owned by A, in the file as C, B, A; X owned by something not in the file */
#define CHAIN_C "{\"resource\":\"widgets\",\"path\":\"default/c\",\"object\":{\"metadata\":{\"name\":\"c\",\"uid\":\"c\",\"ownerReferences\":[{\"uid\":\"b\"}]}}}\n"
#define CHAIN_B "{\"resource\":\"widgets\",\"path\":\"default/b\",\"object\":{\"metadata\":{\"name\":\"b\",\"uid\":\"b\",\"ownerReferences\":[{\"uid\":\"a\"}]}}}\n"
#define CHAIN_A "{\"resource\":\"widgets\",\"path\":\"default/a\",\"object\":{\"metadata\":{\"name\":\"a\",\"uid\":\"a\"}}}\n"
#define ORPHAN "{\"resource\":\"widgets\",\"path\":\"default/x\",\"object\":{\"metadata\":{\"name\":\"x\",\"uid\":\"x\",\"ownerReferences\":[{\"uid\":\"gone\"}]}}}\n"
/* a cycle: p owns q, q owns p */
#define CYCLE_P "{\"resource\":\"widgets\",\"path\":\"default/p\",\"object\":{\"metadata\":{\"name\":\"p\",\"uid\":\"p\",\"ownerReferences\":[{\"uid\":\"q\"}]}}}\n"
#define CYCLE_Q "{\"resource\":\"widgets\",\"path\":\"default/q\",\"object\":{\"metadata\":{\"name\":\"q\",\"uid\":\"q\",\"ownerReferences\":[{\"uid\":\"p\"}]}}}\n"

static int parse(const char *text, json_t **h, json_t **items, struct buf *err)
{
	buf_reset(err);
	return backup_parse(text, strlen(text), h, items, err);
}

static void test_parse(void **state)
{
	(void)state;
	json_t *h, *items;
	struct buf err = BUF_INIT;
	assert_int_equal(parse(HEADER NS RS TENANT DEP "{\"end\":true,\"objects\":4}\n", &h, &items, &err), 0);
	assert_string_equal(json_str(h, "tenant"), "acme");
	assert_int_equal(json_array_size(items), 4);
	/* the tenant, then the file's order but owners before what they own */
	static const char *const order[] = { "tenants", "namespaces", "deployments", "replicasets" };
	for (size_t i = 0; i < 4; i++)
		assert_string_equal(json_str(json_array_get(items, i), "resource"), order[i]);
	json_decref(h);
	json_decref(items);
	assert_int_equal(parse(HEADER TENANT CYCLE_P CHAIN_C ORPHAN CHAIN_B CYCLE_Q CHAIN_A "{\"end\":true,\"objects\":7}\n",
			       &h, &items, &err),
			 0);
	static const char *const names[] = { "acme", "x", "a", "b", "c", "p", "q" };
	assert_int_equal(json_array_size(items), 7);
	for (size_t i = 0; i < 7; i++)
		assert_string_equal(json_path_str(json_object_get(json_array_get(items, i), "object"), "metadata.name"),
				    names[i]);
	json_decref(h);
	json_decref(items);
	static const char *const bad[][2] = {
		{ "", "incomplete" },
		{ HEADER TENANT NS, "cut short" },
		{ HEADER TENANT "{\"end\":true,\"objects\":2}\n", "the trailer counts 2" },
		{ HEADER NS "{\"end\":true,\"objects\":1}\n", "no tenant object" },
		{ HEADER TENANT TENANT "{\"end\":true,\"objects\":2}\n", "a second tenant" },
		{ TENANT HEADER, "not a tenant backup" },
		{ HEADER TENANT "{\"resource\":\"pods\"}\n{\"end\":true,\"objects\":2}\n", "line 3: not a backup item" },
		{ HEADER TENANT "[1]\n", "line 3: not a JSON object" },
		{ HEADER TENANT "{\"end\":true,\"objects\":1}\n" NS, "after the end" },
		{ "{\"kind\":\"TenantBackup\",\"apiVersion\":\"ursa.io/v1\",\"tenant\":\"Bad_Name\"}\n", "not a tenant backup" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i][0], &h, &items, &err), -1);
		assert_null(h);
		assert_null(items);
		if (!strstr(buf_cstr(&err), bad[i][1]))
			fail_msg("case %zu: \"%s\" does not say \"%s\"", i, buf_cstr(&err), bad[i][1]);
	}
	buf_release(&err);
}

static void test_unseal_key_id(void **state)
{
	(void)state;
	struct backup_key k = { .id = "k1" }, other = { .id = "k2" };
	memset(k.k, 1, sizeof(k.k));
	memset(other.k, 2, sizeof(other.k));
	json_t *header = json_pack("{s:s}", "keyId", "k1"), *items = json_array();
	json_t *a = secret_item("a");
	backup_seal_item(&k, a);
	json_array_append_new(items, a);
	struct buf err = BUF_INIT;
	assert_int_equal(backup_unseal(&other, header, items, &err), -1);
	assert_non_null(strstr(buf_cstr(&err), "sealed with backup key k1; this key is k2"));
	buf_reset(&err);
	assert_int_equal(backup_unseal(&k, header, items, &err), 0);
	assert_string_equal(json_path_str(a, "object.data.password"), "aHVudGVyMg==");
	buf_release(&err);
	json_decref(header);
	json_decref(items);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key),
		cmocka_unit_test(test_seal),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_unseal_key_id),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
