/* Identity helpers: copies, groups, system admin and tenant access. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "auth/auth_internal.h"
#include "ursa/xalloc.h"
#include <stdlib.h>
#include <string.h>

static struct identity make(const char *user, const char *tenant, const char *group)
{
	struct identity id = { .user = xstrdup(user), .tenant = xstrdup(tenant) };
	if (group)
		identity_add_group(&id, group, strlen(group));
	return id;
}

static void test_system_admin(void **state)
{
	struct identity root = make("root", "system", GROUP_MASTERS);
	struct identity sysuser = make("ops", "system", "ops");
	struct identity tenant_master = make("boss", "acme", GROUP_MASTERS);

	assert_true(identity_is_system_admin(&root));
	assert_false(identity_is_system_admin(&sysuser));
	assert_false(identity_is_system_admin(&tenant_master));
	assert_false(identity_is_system_admin(NULL));

	identity_release(&root);
	identity_release(&sysuser);
	identity_release(&tenant_master);
}

static void test_tenant_access(void **state)
{
	struct identity root = make("root", "system", GROUP_MASTERS);
	struct identity alice = make("alice", "acme", GROUP_MASTERS);
	struct identity ops = make("ops", "system", NULL);

	assert_true(identity_may_access_tenant(&root, "acme"));
	assert_true(identity_may_access_tenant(&root, "system"));
	assert_true(identity_may_access_tenant(&root, TENANT_ALL));

	assert_true(identity_may_access_tenant(&alice, "acme"));
	assert_false(identity_may_access_tenant(&alice, "acme2"));
	assert_false(identity_may_access_tenant(&alice, "system"));
	assert_false(identity_may_access_tenant(&alice, TENANT_ALL));
	assert_false(identity_may_access_tenant(&alice, ""));
	assert_false(identity_may_access_tenant(&alice, NULL));

	assert_true(identity_may_access_tenant(&ops, "system"));
	assert_false(identity_may_access_tenant(&ops, "acme"));
	assert_false(identity_may_access_tenant(&ops, TENANT_ALL));

	identity_release(&root);
	identity_release(&alice);
	identity_release(&ops);
}

static void test_sre(void **state)
{
	struct identity sre = make("sre", "system", GROUP_SRE);
	struct identity tenant_sre = make("eve", "acme", GROUP_SRE);
	struct identity both = make("root", "system", GROUP_SRE);
	identity_add_group(&both, GROUP_MASTERS, strlen(GROUP_MASTERS));

	assert_true(identity_is_sre(&sre));
	assert_false(identity_is_system_admin(&sre));
	assert_true(identity_may_read_tenant(&sre, "acme"));
	assert_true(identity_may_read_tenant(&sre, TENANT_ALL));
	assert_false(identity_may_read_tenant(&sre, ""));
	assert_false(identity_may_read_tenant(&sre, NULL));
	assert_false(identity_may_access_tenant(&sre, "acme"));

	/* The group means nothing outside tenant system. */
	assert_false(identity_is_sre(&tenant_sre));
	assert_false(identity_may_read_tenant(&tenant_sre, "acme2"));
	assert_true(identity_may_read_tenant(&tenant_sre, "acme"));

	/* An admin in the group stays an admin (not read-only). */
	assert_false(identity_is_sre(&both));
	assert_true(identity_is_system_admin(&both));
	assert_false(identity_is_sre(NULL));

	identity_release(&sre);
	identity_release(&tenant_sre);
	identity_release(&both);
}

static void test_copy_is_deep(void **state)
{
	struct identity a = make("alice", "acme", "g1");
	identity_add_group(&a, "g2xx", 2);
	a.uid = xstrdup("u-1");
	struct identity b;
	identity_copy(&a, &b);
	identity_release(&a);
	assert_null(a.user);
	assert_int_equal(a.ngroups, 0);
	assert_string_equal(b.user, "alice");
	assert_string_equal(b.uid, "u-1");
	assert_string_equal(b.tenant, "acme");
	assert_int_equal(b.ngroups, 2);
	assert_string_equal(b.groups[1], "g2");
	assert_true(identity_in_group(&b, "g1"));
	assert_false(identity_in_group(&b, "g"));
	assert_false(identity_in_group(&b, NULL));
	identity_release(&b);
	identity_release(&b); /* released identities may be released again */
}

static void test_tenant_names(void **state)
{
	static const char *good[] = { "system", "acme", "a", "tenant-1", "0abc" };
	static const char *bad[] = { "all", "", "Acme", "-a", "a-", "a_b", "a.b", "a/b",
				     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" };
	for (size_t i = 0; i < ARRAY_SIZE(good); i++)
		if (!auth_tenant_ok(good[i], strlen(good[i])))
			fail_msg("tenant \"%s\" should be accepted", good[i]);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		if (auth_tenant_ok(bad[i], strlen(bad[i])))
			fail_msg("tenant \"%s\" should be rejected", bad[i]);
	assert_true(auth_field_ok("system:serviceaccount:x", 23));
	assert_false(auth_field_ok("a\nb", 3));
	assert_false(auth_field_ok("", 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_system_admin),
		cmocka_unit_test(test_tenant_access),
		cmocka_unit_test(test_sre),
		cmocka_unit_test(test_copy_is_deep),
		cmocka_unit_test(test_tenant_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
