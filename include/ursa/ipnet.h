/* IPv4 addresses and prefixes as the service address allocator and the Network kind use them
 * (src/common/kinds/network.c). Pure functions; nothing allocates but the buf appends. */
#ifndef URSA_IPNET_H
#define URSA_IPNET_H
#include <stdbool.h>
#include <stdint.h>
#include "ursa/buf.h"

/* A service CIDR: prefix lengths 12..28 (4096 to 1,048,576 addresses). */
#define IPNET_MIN_PREFIX 12
#define IPNET_MAX_PREFIX 28
/* Every tenant's network when its Network does not say otherwise (tenants are isolated, so
 * they all may use the same range). */
#define IPNET_DEFAULT_SERVICE_CIDR "10.96.0.0/16"
/* Offsets in the service range: the `kubernetes` service's address (.1) and the DNS
 * service's (.10), as Kubernetes places them. */
#define IPNET_KUBERNETES_OFFSET 1
#define IPNET_DNS_OFFSET 10
/* The region's front door as CRI pods (own network namespace) see it, Kubernetes' `kubernetes`
 * service address: .1 of the default service range. ursa-cni DNATs it (port 443) from the
 * tenants' bridges to the node's front door, the kubelet hands it to such pods as
 * KUBERNETES_SERVICE_HOST, the front door's certificate names it, and the service address
 * allocator never gives it to a Service of any tenant. */
#define IPNET_FRONT_DOOR_IP "10.96.0.1"
#define IPNET_FRONT_DOOR_PORT 443

struct ipv4_net {
	uint32_t base; /* network address, host order */
	int prefix;
};

/* Strict dotted quad ("10.96.0.1": four decimal octets 0..255, no leading zeros, nothing
 * around). 0, or -1. */
int ipv4_parse(const char *s, uint32_t *ret);
/* "a.b.c.d/n" with the address the network's own (no host bits set). 0, or -1 with a reason
 * (static string) in *ret_why when ret_why is not NULL. Any prefix 0..32 parses; callers
 * bound it. */
int ipv4_cidr_parse(const char *s, struct ipv4_net *ret, const char **ret_why);
void ipv4_format(uint32_t ip, struct buf *out);
static inline uint64_t ipv4_net_size(struct ipv4_net n) { return (uint64_t)1 << (32 - n.prefix); }
static inline bool ipv4_net_contains(struct ipv4_net n, uint32_t ip)
{
	return n.prefix == 0 || (ip >> (32 - n.prefix)) == (n.base >> (32 - n.prefix));
}
/* Whether ip can be a service's address in n: inside it, neither its network nor its
 * broadcast address. */
static inline bool ipv4_net_usable(struct ipv4_net n, uint32_t ip)
{
	return ipv4_net_contains(n, ip) && ip != n.base && (uint64_t)(ip - n.base) != ipv4_net_size(n) - 1;
}

/* The next free offset of a range of size addresses (bitmap bits, set = taken; offsets 0 and
 * size-1 are never handed out): dynamic allocations search [band, size-2] from cursor upward,
 * wrapping, then the low band [1, band-1] that chosen addresses (like .1 and .10) live in, as
 * Kubernetes keeps its static band. band = clamp(size/16, 16, 256). Returns the offset, or 0
 * when every address is taken. taken(ud, off) says whether an offset is reserved otherwise. */
uint32_t ipv4_range_next_free(const uint8_t *bits, uint64_t size, uint32_t cursor,
			      bool (*taken)(void *ud, uint32_t off), void *ud);
uint32_t ipv4_range_band(uint64_t size);

#endif
