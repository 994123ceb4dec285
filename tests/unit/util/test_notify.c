/* notify_ready: "READY=1" reaches the socket $NOTIFY_SOCKET names (a path or an abstract name);
 * nothing is sent without it, and a bad name is an error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "ursa/notify.h"

/* A datagram socket bound to name (path, or "@x" abstract). */
static int bound(const char *name)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t n = strlen(name);
	memcpy(sa.sun_path, name, n);
	if (name[0] == '@')
		sa.sun_path[0] = '\0';
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	assert_true(fd >= 0);
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (name[0] == '/'));
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, len), 0);
	return fd;
}

static void expect_ready(int fd)
{
	char got[64] = { 0 };
	ssize_t n = recv(fd, got, sizeof(got) - 1, MSG_DONTWAIT);
	assert_int_equal(n, 7);
	assert_string_equal(got, "READY=1");
}

static void test_path_socket(void **state)
{
	(void)state;
	char dir[] = "/tmp/ursa-notify-XXXXXX", path[128];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/notify", dir);
	int fd = bound(path);
	setenv("NOTIFY_SOCKET", path, 1);
	assert_int_equal(notify_ready(), 1);
	expect_ready(fd);
	close(fd);
	unlink(path);
	rmdir(dir);
}

static void test_abstract_socket(void **state)
{
	(void)state;
	char name[64];
	snprintf(name, sizeof(name), "@ursa-notify-test-%d", (int)getpid());
	int fd = bound(name);
	setenv("NOTIFY_SOCKET", name, 1);
	assert_int_equal(notify_ready(), 1);
	expect_ready(fd);
	close(fd);
}

static void test_absent_and_bad(void **state)
{
	(void)state;
	unsetenv("NOTIFY_SOCKET");
	assert_int_equal(notify_ready(), 0);
	setenv("NOTIFY_SOCKET", "relative/path", 1);
	assert_int_equal(notify_ready(), -1);
	setenv("NOTIFY_SOCKET", "/nonexistent/dir/notify", 1);
	assert_int_equal(notify_ready(), -1);
	unsetenv("NOTIFY_SOCKET");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_socket),
		cmocka_unit_test(test_abstract_socket),
		cmocka_unit_test(test_absent_and_bad),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
