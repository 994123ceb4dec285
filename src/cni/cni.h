/* ursa-cni: the node's one CNI network, a bridge and address blocks per tenant.
 *
 * containerd's CRI plugin runs exactly one CNI network per sandbox. ursa-cni is that network: it
 * learns the pod's tenant (the sandbox annotation ursa.io/tenant, which containerd hands over in
 * runtimeConfig when the plugin declares the capability io.kubernetes.cri.pod-annotations), gives
 * each tenant of the node a network of its own (index N: bridge <bridgePrefix>-N) holding one or
 * more blocks of the node's range (block B: the B-th /tenantPrefixLength subnet). A tenant's first
 * pod gets the network and the lowest free block; when every block of the tenant is full (its
 * containers fill all the addresses host-local hands out), the next pod's ADD adds the lowest free
 * block of the node to the same bridge; a block whose last container goes is given back, and the
 * network (bridge and all) with the tenant's last container. Each pod's address comes from the
 * `bridge` plugin with `host-local` IPAM for that one block; ursa-cni itself puts each block's
 * gateway (its first address) on the bridge, because the bridge plugin refuses a second IPv4
 * gateway on one bridge. Forwarding between two ursa-cni bridges of the host is dropped (iptables
 * chain URSA-CNI, keyed by bridge names only, so all blocks of a bridge are one tenant's); the node
 * itself reaches every pod and every pod the node. Each bridge's MAC is set once (to the one it
 * took from its first port), so that ports coming and going never change the gateway's MAC.
 *
 * With "frontDoor" (HOST:PORT, the node's way to the region's front door, e.g. 127.0.0.1:6443)
 * in the config, pods reach that front door at IPNET_FRONT_DOOR_IP:443 (10.96.0.1, Kubernetes'
 * `kubernetes` service address): a DNAT rule per bridge in chain URSA-CNI of the nat table
 * (jumped to from PREROUTING for ut-+), and net.ipv4.conf.<bridge>.route_localnet=1 so that a
 * loopback front door may be the target; both go with the bridge.
 *
 * The pure parts live here (config, allocation state, subnets); main.c does the I/O. */
#ifndef URSA_CNI_H
#define URSA_CNI_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CNI_BRIDGE_PREFIX "ut-" /* every ursa-cni bridge name starts so (iptables matches ut-+) */
#define CNI_CHAIN "URSA-CNI"
#define CNI_TENANT_ANNOTATION "ursa.io/tenant"
#define CNI_ANNOTATIONS_CAP "io.kubernetes.cri.pod-annotations"
#define CNI_NO_TENANT "-" /* the network of pods without the annotation (no tenant is named so) */
#define CNI_IFNAMSIZ 16

/* CNI error codes (spec) and ours (>= 100). */
enum {
	CNI_ERR_VERSION = 1,
	CNI_ERR_UNKNOWN_CONTAINER = 3,
	CNI_ERR_ENV = 4,
	CNI_ERR_IO = 5,
	CNI_ERR_DECODE = 6,
	CNI_ERR_CONFIG = 7,
	CNI_ERR_FULL = 100,     /* the node's range has no free block */
	CNI_ERR_DELEGATE = 101, /* the bridge plugin failed without an error of its own */
};

/* An IPv4 block: base address (host order, aligned to the prefix) and prefix length. */
struct cni_block {
	uint32_t base;
	int plen;
};

/* Parses "a.b.c.d/n" (0 <= n <= 32, no host bits set). 0, or -1 on anything else. */
int cni_block_parse(const char *s, struct cni_block *ret_block);
/* How many /tenant_plen subnets the block holds; -1 when tenant_plen is not within plen..30. */
long cni_block_count(const struct cni_block *b, int tenant_plen);
/* The idx-th /tenant_plen subnet of b as "a.b.c.d/n" into out (at least 19 bytes). */
void cni_block_nth(const struct cni_block *b, int tenant_plen, long idx, char *out, size_t max);
/* Its gateway, the subnet's first address, as "a.b.c.d/n" (at least 19 bytes). */
void cni_block_gateway(const struct cni_block *b, int tenant_plen, long idx, char *out, size_t max);
/* The addresses host-local hands out in a /plen (all but network, gateway and broadcast): 61 for a
 * /26. plen within 0..30. */
long cni_block_hosts(int plen);

/* Tenant names and container IDs as the state file stores them: 1..253 of [A-Za-z0-9._-]. */
bool cni_token_valid(const char *s);

/* The network config on stdin (one plugin of the conflist, with the runtime's additions). */
struct cni_conf {
	char *cni_version;   /* "cniVersion" */
	char *name;          /* the conflist's "name" */
	char *bridge_prefix; /* "bridgePrefix": ut-..., the tenants' bridges are <prefix>-<index> */
	char *subnet;        /* "subnet": the node's pod range */
	struct cni_block block;
	int tenant_plen;     /* "tenantPrefixLength" (default 26) */
	char *data_dir;      /* "dataDir": state file, lock and host-local leases (ipam/) */
	bool hairpin;        /* "hairpinMode" (default true) */
	bool ip_masq;        /* "ipMasq" (default false) */
	char *front_door;    /* "frontDoor": "a.b.c.d:port" pods' IPNET_FRONT_DOOR_IP:443 is DNATed to, or NULL */
	char *tenant;        /* runtimeConfig's pod annotation ursa.io/tenant, or NULL */
	json_t *prev_result; /* "prevResult" (CHECK, DEL), or NULL */
};

/* Parses and checks the config; on failure returns -1 with *ret_err (free) saying why. The
 * bridge name of the last index must fit in 15 characters. */
int cni_conf_parse(const char *text, size_t len, struct cni_conf *ret_conf, char **ret_err);
void cni_conf_release(struct cni_conf *c);
/* The blocks of the node's range (and so the most tenant networks it can hold). */
long cni_conf_capacity(const struct cni_conf *c);
/* "<bridgePrefix>-<idx>" into out (CNI_IFNAMSIZ bytes). */
void cni_bridge_name(const struct cni_conf *c, long idx, char *out);
/* The delegate's network name for block blk, "<name>-<blk>" (host-local keeps the block's leases
 * in dataDir/ipam/<it>). */
char *cni_net_name(const struct cni_conf *c, long blk);
/* The bridge plugin's config for block blk on network idx's bridge: host-local for that block
 * only, isGateway false (main.c puts the block's gateway on the bridge), a default route via the
 * gateway (with prevResult when there is one). */
char *cni_delegate_conf(const struct cni_conf *c, long idx, long blk);
/* A CNI error result. */
char *cni_error_json(const char *version, int code, const char *msg, const char *details);

/* The allocation state: which tenant has which network index, the blocks of each network and the
 * containers in each block. Text form (version 2), a line "v2" and then one network a line:
 * "<index> <tenant> <block>:[<container id>[,<container id>...]] [<block>:...]". The form of the
 * first version, still read: no "v2" line and one network a line, "<index> <tenant> [<container
 * id>...]", the network's one block being its index. */
struct cni_use {
	long blk;
	char **cids;
	size_t ncids;
};
struct cni_net {
	long idx;
	char *tenant;
	struct cni_use *blocks; /* in block order, at least one */
	size_t nblocks;
};
struct cni_state {
	struct cni_net *nets;
	size_t n;
};

/* Parses either text form (empty text: no networks). -1 with *ret_err (free) on a malformed line,
 * a duplicate index, tenant, block or container. */
int cni_state_parse(const char *text, struct cni_state *ret_state, char **ret_err);
/* The text form (version 2), networks in index order. */
char *cni_state_format(const struct cni_state *s);
void cni_state_release(struct cni_state *s);
/* The network holding container cid (and the block in *ret_blk when not NULL), or NULL. */
const struct cni_net *cni_state_find(const struct cni_state *s, const char *cid, long *ret_blk);

/* What cni_state_join did. */
struct cni_join {
	long blk;       /* the container's block */
	bool new_net;   /* the tenant had no network: the index is new */
	bool new_block; /* the block is new to the network */
};
/* Puts cid into tenant's network: into its first block (in block order, below capacity) holding
 * fewer than hosts containers; when all are full (or the tenant has no network) into the lowest
 * block of the node no network holds, below capacity; a new network takes the lowest free index.
 * Returns the network's index (the existing one and block when cid is there already), or -1 (s
 * unchanged) when a block is needed and the node has none free. */
long cni_state_join(struct cni_state *s, const char *tenant, const char *cid, long capacity, long hosts,
		    struct cni_join *ret);
/* What cni_state_leave did. */
struct cni_leave {
	long blk;         /* the block cid was in */
	bool block_empty; /* that was its last container: the block is dropped from the network */
	bool net_empty;   /* and the network's last block: the network is dropped */
};
/* Takes cid out; returns its network's index, or -1 when no network holds it. */
long cni_state_leave(struct cni_state *s, const char *cid, struct cni_leave *ret);

/* A pod's addresses are handed out again soon after its pod goes; the node and the tenant's other
 * pods may still hold the old pod's MAC for one in their neighbour tables (REACHABLE for up to
 * 45 s: a fetch from the node failed for that long in a test). After an ADD, ursa-cni announces
 * each new address with a gratuitous ARP from the pod's interface, which every one of them takes.
 *
 * The pod's IPv4 addresses in a CNI result (0.4.0 or 1.0.0): those of "ips" whose "interface"
 * names an interface with a "sandbox" (the pod's side), with that interface's name and MAC.
 * Returns how many were found (at most max); entries without a parsable MAC or address are
 * skipped. */
struct cni_pod_addr {
	char ifname[CNI_IFNAMSIZ];
	uint8_t mac[6];
	uint32_t ip; /* host order */
};
size_t cni_result_pod_addrs(const char *result, struct cni_pod_addr *ret, size_t max);
/* The 28-byte ARP payload announcing a: a request for its own address (sender and target both
 * a->ip, target MAC zero), to be broadcast. */
#define CNI_ARP_LEN 28
void cni_garp_payload(const struct cni_pod_addr *a, uint8_t out[CNI_ARP_LEN]);

#endif
