/* ursa-cni: a CNI plugin (spec 0.4.0/1.0.0 commands ADD, DEL, CHECK, VERSION) giving each tenant
 * of the node its own bridge and address blocks; see cni.h. It runs the `bridge` plugin found on
 * CNI_PATH with a rewritten config (one block), puts the block's gateway on the bridge and passes
 * the bridge plugin's result through; with "frontDoor" it also DNATs the front door's service
 * address from the bridge (cni.h). The whole command runs under
 * an exclusive lock of <dataDir>/ursa-cni.lock, so concurrent ADDs and DELs of a node see and
 * update <dataDir>/ursa-cni.state one at a time. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/if_ether.h>
#include <netpacket/packet.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cni.h"
#include "ursa/buf.h"
#include "ursa/ipnet.h"
#include "ursa/xalloc.h"

static const char *g_version = "0.4.0";

static void fail(int code, const char *msg, const char *details)
{
	char *s = cni_error_json(g_version, code, msg, details);
	printf("%s\n", s);
	fprintf(stderr, "ursa-cni: %s%s%s\n", msg, details && *details ? ": " : "", details ? details : "");
	free(s);
	exit(1);
}

static char *read_fd(int fd, size_t *ret_len)
{
	struct buf b = BUF_INIT;
	buf_read_fd(&b, fd, SIZE_MAX);
	buf_adds(&b, "");
	return buf_detach(&b, ret_len);
}

/* Runs argv (PATH lookup) with input on stdin; its stdout into *ret_out when asked, else
 * dropped; stderr is ours unless quiet. Returns the exit status, or -1 when it could not run. */
static int run_q(char *const argv[], const char *input, char **ret_out, bool quiet)
{
	int in[2], out[2];
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		if (quiet) {
			int null = open("/dev/null", O_WRONLY);
			if (null >= 0)
				dup2(null, 2);
		}
		execvp(argv[0], argv);
		fprintf(stderr, "ursa-cni: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	if (input) {
		size_t len = strlen(input), off = 0;
		while (off < len) {
			ssize_t n = write(in[1], input + off, len - off);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			off += (size_t)n;
		}
	}
	close(in[1]);
	char *o = read_fd(out[0], NULL);
	close(out[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (ret_out)
		*ret_out = o;
	else
		free(o);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int run(char *const argv[], const char *input, char **ret_out)
{
	return run_q(argv, input, ret_out, false);
}

/* ---- iptables: forwarding between two ursa-cni bridges dropped unless it is the same one ---- */

static int ipt(const char *op, const char *chain, const char *in, const char *out, const char *target)
{
	char pos[] = "1";
	const char *argv[16];
	int n = 0;
	argv[n++] = "iptables";
	argv[n++] = "-w";
	argv[n++] = "5";
	argv[n++] = "-t";
	argv[n++] = "filter";
	argv[n++] = op;
	argv[n++] = chain;
	if (strcmp(op, "-I") == 0)
		argv[n++] = pos;
	if (in) {
		argv[n++] = "-i";
		argv[n++] = in;
	}
	if (out) {
		argv[n++] = "-o";
		argv[n++] = out;
	}
	if (target) {
		argv[n++] = "-j";
		argv[n++] = target;
	}
	argv[n] = NULL;
	/* -S and -C ask; their complaints about missing chains and rules are the expected answer */
	return run_q((char *const *)argv, NULL, NULL, strcmp(op, "-S") == 0 || strcmp(op, "-C") == 0);
}

/* Once per host: chain URSA-CNI ending in DROP, jumped to from FORWARD for ut-* to ut-*; then
 * RETURN for the bridge's own traffic (bridged frames pass FORWARD with br_netfilter). */
static void isolate_bridge(const char *br)
{
	const char *any = CNI_BRIDGE_PREFIX "+";
	if (ipt("-S", CNI_CHAIN, NULL, NULL, NULL) != 0)
		ipt("-N", CNI_CHAIN, NULL, NULL, NULL);
	if (ipt("-C", CNI_CHAIN, NULL, NULL, "DROP") != 0 && ipt("-A", CNI_CHAIN, NULL, NULL, "DROP") != 0)
		fail(CNI_ERR_IO, "cannot add the iptables rule dropping traffic between tenant bridges", CNI_CHAIN);
	if (ipt("-C", "FORWARD", any, any, CNI_CHAIN) != 0 && ipt("-I", "FORWARD", any, any, CNI_CHAIN) != 0)
		fail(CNI_ERR_IO, "cannot add the iptables rule sending traffic between tenant bridges to " CNI_CHAIN, br);
	if (ipt("-C", CNI_CHAIN, br, br, "RETURN") != 0 && ipt("-I", CNI_CHAIN, br, br, "RETURN") != 0)
		fail(CNI_ERR_IO, "cannot add the iptables rule for the bridge's own traffic", br);
}

/* ---- the front door: IPNET_FRONT_DOOR_IP:443 from a bridge DNATed to the node's front door ---- */

/* iptables -w 5 -t nat ARGS... (NULL-terminated); quiet for the questions -S and -C. */
static int ipt_nat(const char *const *args)
{
	const char *argv[24] = { "iptables", "-w", "5", "-t", "nat" };
	int n = 5;
	for (const char *const *a = args; *a && n < 23; a++)
		argv[n++] = *a;
	argv[n] = NULL;
	bool quiet = !strcmp(args[0], "-S") || !strcmp(args[0], "-C");
	return run_q((char *const *)argv, NULL, NULL, quiet);
}

static int sysctl_route_localnet(const char *br)
{
	char *path = xasprintf("/proc/sys/net/ipv4/conf/%s/route_localnet", br);
	int fd = open(path, O_WRONLY | O_CLOEXEC), rc = 0;
	if (fd < 0 || write(fd, "1", 1) != 1) {
		fprintf(stderr, "ursa-cni: cannot write 1 to %s: %s\n", path, strerror(errno));
		rc = -1;
	}
	if (fd >= 0)
		close(fd);
	free(path);
	return rc;
}

/* With "frontDoor": chain URSA-CNI of the nat table (once per host, jumped to from PREROUTING for
 * ut-+) gets br's DNAT rule for IPNET_FRONT_DOOR_IP:443; the bridge (existing by now) gets
 * route_localnet. Kept when there. 0, or -1 with the reason told on stderr. */
static int front_door_add(const struct cni_conf *c, const char *br)
{
	if (!c->front_door)
		return 0;
	char port[8];
	snprintf(port, sizeof(port), "%d", IPNET_FRONT_DOOR_PORT);
	const char *any = CNI_BRIDGE_PREFIX "+";
	const char *list[] = { "-S", CNI_CHAIN, NULL }, *mk[] = { "-N", CNI_CHAIN, NULL };
	if (ipt_nat(list) != 0)
		ipt_nat(mk);
	const char *jump_c[] = { "-C", "PREROUTING", "-i", any, "-j", CNI_CHAIN, NULL };
	const char *jump_i[] = { "-I", "PREROUTING", "1", "-i", any, "-j", CNI_CHAIN, NULL };
	if (ipt_nat(jump_c) != 0 && ipt_nat(jump_i) != 0) {
		fprintf(stderr, "ursa-cni: cannot add the nat rule sending %s's traffic to " CNI_CHAIN "\n", br);
		return -1;
	}
	const char *rule[] = { "-C", CNI_CHAIN, "-i", br, "-d", IPNET_FRONT_DOOR_IP "/32", "-p", "tcp", "--dport", port,
			       "-j", "DNAT", "--to-destination", c->front_door, NULL };
	if (ipt_nat(rule) != 0) {
		rule[0] = "-A";
		if (ipt_nat(rule) != 0) {
			fprintf(stderr, "ursa-cni: cannot add the DNAT rule of %s to the front door\n", br);
			return -1;
		}
	}
	return sysctl_route_localnet(br);
}

/* br is gone: its DNAT rules, whatever front door they name (the config may have changed since).
 * Best effort. */
static void front_door_remove(const char *br)
{
	const char *argv[] = { "iptables", "-w", "5", "-t", "nat", "-S", CNI_CHAIN, NULL };
	char *out = NULL;
	if (run_q((char *const *)argv, NULL, &out, true) != 0) {
		free(out);
		return;
	}
	char *want = xasprintf(" -i %s ", br), *save = NULL;
	for (char *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "-A " CNI_CHAIN " ", strlen("-A " CNI_CHAIN " ")) != 0 || !strstr(line, want))
			continue;
		/* "-A URSA-CNI -d ... -i br ... -j DNAT --to-destination a:p": no quoting in our rules */
		const char *del[20];
		size_t n = 0;
		char *wsave = NULL;
		for (char *w = strtok_r(line, " ", &wsave); w && n < 19; w = strtok_r(NULL, " ", &wsave))
			del[n++] = w;
		del[n] = NULL;
		del[0] = "-D";
		if (ipt_nat(del) != 0)
			fprintf(stderr, "ursa-cni: cannot delete the iptables nat rule of %s\n", br);
	}
	free(want);
	free(out);
}

static int ip_quiet(const char *op, const char *addr, const char *br)
{
	char *argv[] = { "ip", "addr", (char *)op, (char *)addr, "dev", (char *)br, NULL };
	return run_q(argv, NULL, NULL, strcmp(op, "del") == 0);
}

/* /sys/class/net/<br>/<attr> without its newline (new string), or NULL. */
static char *bridge_attr(const char *br, const char *attr)
{
	char *path = xasprintf("/sys/class/net/%s/%s", br, attr), *v = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		v = read_fd(fd, NULL);
		v[strcspn(v, "\n")] = '\0';
		close(fd);
	}
	free(path);
	return v;
}

/* A bridge takes the lowest MAC of its ports unless one was set: a port's going could change it,
 * and with it every pod's neighbour entry of the gateway would be wrong (and the node's neighbour
 * table of the bridge flushed). The bridge keeps the MAC it has now once it is set explicitly. */
static void pin_bridge_mac(const char *br)
{
	char *type = bridge_attr(br, "addr_assign_type"), *mac = NULL;
	if (type && type[0] != '3' && (mac = bridge_attr(br, "address"))) { /* 3: NET_ADDR_SET */
		char *argv[] = { "ip", "link", "set", "dev", (char *)br, "address", mac, NULL };
		if (run(argv, NULL, NULL) != 0)
			fprintf(stderr, "ursa-cni: cannot pin the MAC of %s\n", br);
	}
	free(type);
	free(mac);
}

/* Block blk's gateway on bridge br (kept when there), and forwarding on: pods of one bridge in
 * different blocks reach each other through it. 0, or -1 with the reason told on stderr. */
static int add_gateway(const struct cni_conf *c, const char *br, long blk)
{
	pin_bridge_mac(br);
	char gw[24];
	cni_block_gateway(&c->block, c->tenant_plen, blk, gw, sizeof(gw));
	if (ip_quiet("replace", gw, br) != 0) {
		fprintf(stderr, "ursa-cni: cannot put the gateway %s on %s\n", gw, br);
		return -1;
	}
	int fd = open("/proc/sys/net/ipv4/ip_forward", O_RDWR | O_CLOEXEC);
	char now = 0;
	if (fd >= 0 && (read(fd, &now, 1) != 1 || now != '1') && pwrite(fd, "1", 1, 0) != 1)
		fprintf(stderr, "ursa-cni: cannot turn on net.ipv4.ip_forward: %s\n", strerror(errno));
	if (fd >= 0)
		close(fd);
	return 0;
}

/* Block blk left network idx: its gateway and leases. Best effort (already gone is fine). */
static void remove_block(const struct cni_conf *c, long idx, long blk)
{
	char br[CNI_IFNAMSIZ], gw[24], dev[64];
	cni_bridge_name(c, idx, br);
	cni_block_gateway(&c->block, c->tenant_plen, blk, gw, sizeof(gw));
	snprintf(dev, sizeof(dev), "/sys/class/net/%s", br);
	if (access(dev, F_OK) == 0)
		ip_quiet("del", gw, br);
	char *name = cni_net_name(c, blk), *dir = xasprintf("%s/ipam/%s", c->data_dir, name);
	char *argv[] = { "rm", "-rf", "--", dir, NULL };
	run(argv, NULL, NULL);
	free(dir);
	free(name);
}

/* The network idx is gone, blk its last block: its bridge, rule and leases. Best effort. */
static void remove_net(const struct cni_conf *c, long idx, long blk)
{
	char br[CNI_IFNAMSIZ];
	cni_bridge_name(c, idx, br);
	while (ipt("-C", CNI_CHAIN, br, br, "RETURN") == 0)
		if (ipt("-D", CNI_CHAIN, br, br, "RETURN") != 0)
			break;
	front_door_remove(br);
	char dev[64];
	snprintf(dev, sizeof(dev), "/sys/class/net/%s", br);
	if (access(dev, F_OK) == 0) {
		char *argv[] = { "ip", "link", "del", br, NULL };
		if (run(argv, NULL, NULL) != 0)
			fprintf(stderr, "ursa-cni: cannot delete bridge %s\n", br);
	}
	remove_block(c, idx, blk);
}

/* After cni_state_leave: gives back what emptied. */
static void released(const struct cni_conf *c, long idx, const struct cni_leave *l)
{
	if (l->net_empty)
		remove_net(c, idx, l->blk);
	else if (l->block_empty)
		remove_block(c, idx, l->blk);
}

/* Announces the pod's new addresses from inside its network namespace (cni.h: a reused address
 * may sit in neighbour tables with the MAC of the pod that had it). Best effort: a failure is
 * told on stderr, the ADD stands. */
static void announce(const char *result)
{
	struct cni_pod_addr a[8];
	size_t n = cni_result_pod_addrs(result, a, 8);
	const char *netns = getenv("CNI_NETNS");
	if (!n || !netns || !*netns)
		return;
	int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC), pod = open(netns, O_RDONLY | O_CLOEXEC);
	if (self < 0 || pod < 0 || setns(pod, CLONE_NEWNET) < 0) {
		fprintf(stderr, "ursa-cni: cannot enter %s to announce the pod's address: %s\n", netns, strerror(errno));
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		uint8_t arp[CNI_ARP_LEN];
		cni_garp_payload(&a[i], arp);
		struct sockaddr_ll to = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ARP),
					  .sll_ifindex = (int)if_nametoindex(a[i].ifname), .sll_halen = 6 };
		memset(to.sll_addr, 0xff, 6);
		int fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC, htons(ETH_P_ARP));
		if (fd < 0 || !to.sll_ifindex ||
		    sendto(fd, arp, sizeof(arp), 0, (struct sockaddr *)&to, sizeof(to)) != (ssize_t)sizeof(arp))
			fprintf(stderr, "ursa-cni: gratuitous ARP on %s: %s\n", a[i].ifname, strerror(errno));
		if (fd >= 0)
			close(fd);
	}
	if (setns(self, CLONE_NEWNET) < 0)
		fprintf(stderr, "ursa-cni: cannot return to the host's network namespace: %s\n", strerror(errno));
out:
	if (self >= 0)
		close(self);
	if (pod >= 0)
		close(pod);
}

/* ---- state ---- */

static void mkdirs(const char *path)
{
	char *p = xstrdup(path);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		mkdir(p, 0755);
		*s = '/';
	}
	mkdir(p, 0755);
	free(p);
}

static void state_load(const struct cni_conf *c, struct cni_state *s)
{
	char *path = xasprintf("%s/ursa-cni.state", c->data_dir), *err = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *text = fd >= 0 ? read_fd(fd, NULL) : xstrdup("");
	if (fd >= 0)
		close(fd);
	else if (errno != ENOENT)
		fail(CNI_ERR_IO, "cannot read the state file", path);
	if (cni_state_parse(text, s, &err) < 0)
		fail(CNI_ERR_IO, err, path);
	free(text);
	free(path);
}

static void state_save(const struct cni_conf *c, const struct cni_state *s)
{
	char *path = xasprintf("%s/ursa-cni.state", c->data_dir), *tmp = xasprintf("%s.tmp", path);
	char *text = cni_state_format(s);
	FILE *f = fopen(tmp, "we");
	if (!f || fputs(text, f) < 0 || fflush(f) != 0 || fsync(fileno(f)) != 0 || fclose(f) != 0 ||
	    rename(tmp, path) != 0)
		fail(CNI_ERR_IO, "cannot write the state file", path);
	free(text);
	free(tmp);
	free(path);
}

/* ---- commands ---- */

/* Runs the bridge plugin (command cmd) for block blk of network idx. 0 with its result in *ret_out
 * (when not NULL), or its status with its error result printed. */
static int delegate(const struct cni_conf *c, const char *cmd, long idx, long blk, char **ret_out)
{
	const char *paths = getenv("CNI_PATH");
	if (!paths || !*paths)
		fail(CNI_ERR_ENV, "CNI_PATH is not set", NULL);
	char *exe = NULL, *copy = xstrdup(paths), *save = NULL;
	for (char *d = strtok_r(copy, ":", &save); d && !exe; d = strtok_r(NULL, ":", &save)) {
		char *p = xasprintf("%s/bridge", d);
		if (access(p, X_OK) == 0)
			exe = p;
		else
			free(p);
	}
	free(copy);
	if (!exe)
		fail(CNI_ERR_ENV, "the bridge plugin is not on CNI_PATH", paths);
	setenv("CNI_COMMAND", cmd, 1);
	char *conf = cni_delegate_conf(c, idx, blk), *out = NULL;
	char *argv[] = { exe, NULL };
	int rc = run(argv, conf, &out);
	if (rc != 0) {
		if (out && *out)
			fputs(out, stdout);
		else {
			char *msg = xasprintf("the bridge plugin failed (status %d)", rc);
			char *e = cni_error_json(g_version, CNI_ERR_DELEGATE, msg, exe);
			printf("%s\n", e);
			free(e);
			free(msg);
		}
		fprintf(stderr, "ursa-cni: %s %s failed (status %d): %s\n", exe, cmd, rc, out ? out : "");
	}
	if (rc == 0 && ret_out)
		*ret_out = out;
	else
		free(out);
	free(conf);
	free(exe);
	return rc;
}

static int cmd_add(struct cni_conf *c, struct cni_state *s, const char *cid)
{
	const char *tenant = c->tenant ? c->tenant : CNI_NO_TENANT;
	long cap = cni_conf_capacity(c);
	struct cni_join j;
	long idx = cni_state_join(s, tenant, cid, cap, cni_block_hosts(c->tenant_plen), &j);
	if (idx < 0) {
		char *msg = xasprintf("no free /%d of the node's pod range %s for tenant %s: all %ld blocks in use",
				      c->tenant_plen, c->subnet, tenant, cap);
		fail(CNI_ERR_FULL, msg, NULL);
	}
	char br[CNI_IFNAMSIZ];
	cni_bridge_name(c, idx, br);
	isolate_bridge(br);
	state_save(c, s);
	char *out = NULL;
	int rc = delegate(c, "ADD", idx, j.blk, &out);
	if (rc == 0 && (add_gateway(c, br, j.blk) != 0 || front_door_add(c, br) != 0)) {
		char *e = cni_error_json(g_version, CNI_ERR_IO,
					 "cannot put the block's gateway on the bridge or the front door's DNAT", br);
		delegate(c, "DEL", idx, j.blk, NULL);
		printf("%s\n", e);
		free(e);
		rc = -1;
	}
	if (rc != 0) {
		struct cni_leave l;
		cni_state_leave(s, cid, &l);
		released(c, idx, &l);
		state_save(c, s);
		free(out);
		return 1;
	}
	announce(out);
	fputs(out, stdout);
	free(out);
	return 0;
}

static int cmd_del(struct cni_conf *c, struct cni_state *s, const char *cid)
{
	long blk;
	const struct cni_net *n = cni_state_find(s, cid, &blk);
	if (!n)
		return 0; /* never added, or deleted already */
	long idx = n->idx;
	if (delegate(c, "DEL", idx, blk, NULL) != 0)
		return 1;
	struct cni_leave l;
	cni_state_leave(s, cid, &l);
	released(c, idx, &l);
	state_save(c, s);
	return 0;
}

static int cmd_check(struct cni_conf *c, struct cni_state *s, const char *cid)
{
	long blk;
	const struct cni_net *n = cni_state_find(s, cid, &blk);
	if (!n)
		fail(CNI_ERR_UNKNOWN_CONTAINER, "container unknown to ursa-cni", cid);
	return delegate(c, "CHECK", n->idx, blk, NULL) != 0;
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const char *cmd = getenv("CNI_COMMAND");
	if (cmd && strcmp(cmd, "VERSION") == 0) {
		printf("{\"cniVersion\":\"1.0.0\",\"supportedVersions\":[\"0.3.0\",\"0.3.1\",\"0.4.0\",\"1.0.0\"]}\n");
		return 0;
	}
	size_t len;
	char *text = read_fd(0, &len), *err = NULL;
	struct cni_conf c;
	if (cni_conf_parse(text, len, &c, &err) < 0)
		fail(CNI_ERR_CONFIG, err, NULL);
	free(text);
	g_version = c.cni_version;
	if (!cmd || (strcmp(cmd, "ADD") && strcmp(cmd, "DEL") && strcmp(cmd, "CHECK")))
		fail(CNI_ERR_ENV, "CNI_COMMAND must be ADD, DEL, CHECK or VERSION", cmd);
	const char *cid = getenv("CNI_CONTAINERID");
	if (!cni_token_valid(cid))
		fail(CNI_ERR_ENV, "CNI_CONTAINERID is missing or not [A-Za-z0-9._-]", cid);

	mkdirs(c.data_dir);
	char *lock = xasprintf("%s/ursa-cni.lock", c.data_dir);
	int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || flock(fd, LOCK_EX) < 0)
		fail(CNI_ERR_IO, "cannot lock", lock);
	struct cni_state s;
	state_load(&c, &s);
	int rc = strcmp(cmd, "ADD") == 0 ? cmd_add(&c, &s, cid)
		 : strcmp(cmd, "DEL") == 0 ? cmd_del(&c, &s, cid)
					    : cmd_check(&c, &s, cid);
	fflush(stdout);
	close(fd);
	free(lock);
	cni_state_release(&s);
	cni_conf_release(&c);
	return rc;
}
