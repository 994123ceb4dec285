/* Helpers for unit tests that serve or call HTTP on loopback. Header-only (static inline), since
 * each test is its own executable linked against its module's library. */
#ifndef URSA_TEST_NET_H
#define URSA_TEST_NET_H
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include "ursa/buf.h"

/* A TCP port on 127.0.0.1 that was free a moment ago. */
static inline int test_free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	bind(fd, (struct sockaddr *)&a, sizeof(a));
	getsockname(fd, (struct sockaddr *)&a, &len);
	close(fd);
	return ntohs(a.sin_port);
}

/* libcurl CURLOPT_WRITEFUNCTION appending to the struct buf in CURLOPT_WRITEDATA. */
static inline size_t test_body_to_buf(char *data, size_t size, size_t n, void *ud)
{
	buf_add(ud, data, size * n);
	return size * n;
}

#endif
