/* ursa-cni's network config, subnets and the bridge plugin's config. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cni.h"
#include "ursa/xalloc.h"

int cni_block_parse(const char *s, struct cni_block *ret_block)
{
	unsigned a[4];
	int plen, n = -1;
	if (!s || sscanf(s, "%3u.%3u.%3u.%3u/%2d%n", &a[0], &a[1], &a[2], &a[3], &plen, &n) != 5 || n < 0 || s[n])
		return -1;
	for (int i = 0; i < 4; i++)
		if (a[i] > 255)
			return -1;
	if (plen < 0 || plen > 32 || !(s[0] >= '0' && s[0] <= '9'))
		return -1;
	/* sscanf accepts signs and spaces; the text must be exactly digits, dots, a slash */
	for (const char *p = s; *p; p++)
		if (!((*p >= '0' && *p <= '9') || *p == '.' || *p == '/'))
			return -1;
	uint32_t base = (uint32_t)a[0] << 24 | a[1] << 16 | a[2] << 8 | a[3];
	uint32_t host = plen == 32 ? 0 : (plen == 0 ? 0xffffffffu : (0xffffffffu >> plen));
	if (base & host)
		return -1;
	ret_block->base = base;
	ret_block->plen = plen;
	return 0;
}

long cni_block_count(const struct cni_block *b, int tenant_plen)
{
	if (tenant_plen < b->plen || tenant_plen > 30)
		return -1;
	return 1L << (tenant_plen - b->plen);
}

void cni_block_nth(const struct cni_block *b, int tenant_plen, long idx, char *out, size_t max)
{
	uint32_t a = b->base + ((uint32_t)idx << (32 - tenant_plen));
	snprintf(out, max, "%u.%u.%u.%u/%d", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255, tenant_plen);
}

void cni_block_gateway(const struct cni_block *b, int tenant_plen, long idx, char *out, size_t max)
{
	uint32_t a = b->base + ((uint32_t)idx << (32 - tenant_plen)) + 1;
	snprintf(out, max, "%u.%u.%u.%u/%d", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255, tenant_plen);
}

long cni_block_hosts(int plen)
{
	return (1L << (32 - plen)) - 3;
}

bool cni_token_valid(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > 253)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-'))
			return false;
	}
	return true;
}

static bool prefix_valid(const char *p)
{
	size_t n = strlen(p);
	if (strncmp(p, CNI_BRIDGE_PREFIX, strlen(CNI_BRIDGE_PREFIX)) != 0 || n <= strlen(CNI_BRIDGE_PREFIX))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= '0' && p[i] <= '9') || p[i] == '-'))
			return false;
	return true;
}

/* "a.b.c.d:port", a plain dotted quad and a port 1..65535 (iptables' --to-destination). */
static bool front_door_valid(const char *s)
{
	const char *colon = strrchr(s, ':');
	if (!colon || colon == s || colon - s > 15 || !colon[1] || strlen(colon + 1) > 5)
		return false;
	char addr[16];
	memcpy(addr, s, (size_t)(colon - s));
	addr[colon - s] = 0;
	struct cni_block b;
	char cidr[24];
	snprintf(cidr, sizeof(cidr), "%s/32", addr);
	if (cni_block_parse(cidr, &b) < 0)
		return false;
	long port = 0;
	for (const char *p = colon + 1; *p; p++) {
		if (*p < '0' || *p > '9')
			return false;
		port = port * 10 + (*p - '0');
	}
	return colon[1] != '0' && port >= 1 && port <= 65535;
}

static int digits(long v)
{
	int d = 1;
	while (v >= 10) {
		v /= 10;
		d++;
	}
	return d;
}

static const char *str_member(json_t *o, const char *key, bool *ret_bad)
{
	json_t *v = json_object_get(o, key);
	if (v && !json_is_string(v))
		*ret_bad = true;
	return json_string_value(v);
}

static bool bool_member(json_t *o, const char *key, bool dflt, bool *ret_bad)
{
	json_t *v = json_object_get(o, key);
	if (!v)
		return dflt;
	if (!json_is_boolean(v))
		*ret_bad = true;
	return json_is_true(v);
}

int cni_conf_parse(const char *text, size_t len, struct cni_conf *ret_conf, char **ret_err)
{
	struct cni_conf *c = ret_conf;
	memset(c, 0, sizeof(*c));
	json_error_t jerr;
	json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!o || !json_is_object(o)) {
		*ret_err = xasprintf("network config is not a JSON object: %s", o ? "" : jerr.text);
		json_decref(o);
		return -1;
	}
	bool bad = false;
	const char *version = str_member(o, "cniVersion", &bad), *name = str_member(o, "name", &bad);
	const char *prefix = str_member(o, "bridgePrefix", &bad), *subnet = str_member(o, "subnet", &bad);
	const char *dir = str_member(o, "dataDir", &bad), *front = str_member(o, "frontDoor", &bad);
	json_t *tp = json_object_get(o, "tenantPrefixLength");
	c->hairpin = bool_member(o, "hairpinMode", true, &bad);
	c->ip_masq = bool_member(o, "ipMasq", false, &bad);
	if (bad || (tp && !json_is_integer(tp))) {
		*ret_err = xasprintf("network config: a field has the wrong type");
		goto fail;
	}
	if (!version || !*version || !name || !*name || !prefix || !subnet || !dir) {
		*ret_err = xasprintf("network config needs cniVersion, name, bridgePrefix, subnet and dataDir");
		goto fail;
	}
	if (!cni_token_valid(name)) {
		*ret_err = xasprintf("network name \"%s\" is not [A-Za-z0-9._-]", name);
		goto fail;
	}
	if (!prefix_valid(prefix)) {
		*ret_err = xasprintf("bridgePrefix \"%s\" must be " CNI_BRIDGE_PREFIX "[a-z0-9-]+", prefix);
		goto fail;
	}
	if (dir[0] != '/') {
		*ret_err = xasprintf("dataDir \"%s\" is not an absolute path", dir);
		goto fail;
	}
	if (cni_block_parse(subnet, &c->block) < 0) {
		*ret_err = xasprintf("subnet \"%s\" is not an IPv4 CIDR block", subnet);
		goto fail;
	}
	long long plen = tp ? json_integer_value(tp) : 26;
	long n = plen >= 0 && plen <= 32 ? cni_block_count(&c->block, (int)plen) : -1;
	if (n < 0) {
		*ret_err = xasprintf("tenantPrefixLength %lld must be within %d..30 (the subnet's length)", plen, c->block.plen);
		goto fail;
	}
	c->tenant_plen = (int)plen;
	if (strlen(prefix) + 1 + (size_t)digits(n - 1) >= CNI_IFNAMSIZ) {
		*ret_err = xasprintf("bridge %s-%ld would be longer than 15 characters", prefix, n - 1);
		goto fail;
	}
	if (front && !front_door_valid(front)) {
		*ret_err = xasprintf("frontDoor \"%s\" must be IPV4ADDRESS:PORT", front);
		goto fail;
	}
	json_t *ann = json_object_get(json_object_get(json_object_get(o, "runtimeConfig"), CNI_ANNOTATIONS_CAP),
				      CNI_TENANT_ANNOTATION);
	if (ann) {
		if (!json_is_string(ann) || !cni_token_valid(json_string_value(ann))) {
			*ret_err = xasprintf("annotation " CNI_TENANT_ANNOTATION " is not a tenant name");
			goto fail;
		}
		c->tenant = xstrdup(json_string_value(ann));
	}
	c->cni_version = xstrdup(version);
	c->name = xstrdup(name);
	c->bridge_prefix = xstrdup(prefix);
	c->subnet = xstrdup(subnet);
	c->data_dir = xstrdup(dir);
	c->front_door = front ? xstrdup(front) : NULL;
	c->prev_result = json_incref(json_object_get(o, "prevResult"));
	json_decref(o);
	return 0;
fail:
	json_decref(o);
	cni_conf_release(c);
	return -1;
}

void cni_conf_release(struct cni_conf *c)
{
	free(c->cni_version);
	free(c->name);
	free(c->bridge_prefix);
	free(c->subnet);
	free(c->data_dir);
	free(c->tenant);
	free(c->front_door);
	json_decref(c->prev_result);
	memset(c, 0, sizeof(*c));
}

long cni_conf_capacity(const struct cni_conf *c)
{
	return cni_block_count(&c->block, c->tenant_plen);
}

void cni_bridge_name(const struct cni_conf *c, long idx, char *out)
{
	snprintf(out, CNI_IFNAMSIZ, "%s-%ld", c->bridge_prefix, idx);
}

char *cni_net_name(const struct cni_conf *c, long blk)
{
	return xasprintf("%s-%ld", c->name, blk);
}

char *cni_delegate_conf(const struct cni_conf *c, long idx, long blk)
{
	char br[CNI_IFNAMSIZ], subnet[24];
	cni_bridge_name(c, idx, br);
	cni_block_nth(&c->block, c->tenant_plen, blk, subnet, sizeof(subnet));
	char *name = cni_net_name(c, blk), *ipam_dir = xasprintf("%s/ipam", c->data_dir);
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:b, s:b, s:b, s:{s:s, s:[[{s:s}]], s:[{s:s}], s:s}}",
			      "cniVersion", c->cni_version, "name", name, "type", "bridge", "bridge", br,
			      "isGateway", 0, "ipMasq", c->ip_masq, "hairpinMode", c->hairpin, "ipam", "type",
			      "host-local", "ranges", "subnet", subnet, "routes", "dst", "0.0.0.0/0", "dataDir", ipam_dir);
	if (c->prev_result)
		json_object_set(o, "prevResult", c->prev_result);
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	free(name);
	free(ipam_dir);
	return s;
}

char *cni_error_json(const char *version, int code, const char *msg, const char *details)
{
	json_t *o = json_pack("{s:s, s:i, s:s}", "cniVersion", version && *version ? version : "0.4.0", "code", code,
			      "msg", msg ? msg : "");
	if (!o)
		return xasprintf("{\"cniVersion\":\"0.4.0\",\"code\":%d,\"msg\":\"(message not UTF-8)\"}", code);
	if (details && *details)
		json_object_set_new(o, "details", json_string(details));
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

static int parse_mac(const char *s, uint8_t mac[6])
{
	unsigned v[6];
	char tail;
	if (!s || sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &tail) != 6)
		return -1;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)v[i];
	return 0;
}

size_t cni_result_pod_addrs(const char *result, struct cni_pod_addr *ret, size_t max)
{
	json_t *r = json_loads(result ? result : "", 0, NULL);
	json_t *ifs = json_object_get(r, "interfaces"), *ips = json_object_get(r, "ips"), *ip;
	size_t i, n = 0;
	json_array_foreach(ips, i, ip) {
		json_t *idx = json_object_get(ip, "interface");
		const char *addr = json_string_value(json_object_get(ip, "address"));
		json_t *iface = json_is_integer(idx) ? json_array_get(ifs, (size_t)json_integer_value(idx)) : NULL;
		const char *name = json_string_value(json_object_get(iface, "name"));
		const char *sandbox = json_string_value(json_object_get(iface, "sandbox"));
		if (n == max || !addr || !name || !sandbox || !*sandbox || strlen(name) >= CNI_IFNAMSIZ)
			continue;
		char a[16];
		const char *slash = strchr(addr, '/');
		size_t len = slash ? (size_t)(slash - addr) : strlen(addr);
		struct in_addr in;
		if (len >= sizeof(a))
			continue;
		memcpy(a, addr, len);
		a[len] = '\0';
		if (inet_pton(AF_INET, a, &in) != 1 ||
		    parse_mac(json_string_value(json_object_get(iface, "mac")), ret[n].mac) < 0)
			continue;
		ret[n].ip = ntohl(in.s_addr);
		strcpy(ret[n].ifname, name);
		n++;
	}
	json_decref(r);
	return n;
}

void cni_garp_payload(const struct cni_pod_addr *a, uint8_t out[CNI_ARP_LEN])
{
	static const uint8_t head[8] = { 0, 1, 8, 0, 6, 4, 0, 1 }; /* Ethernet, IPv4, 6, 4, request */
	uint8_t ip[4] = { (uint8_t)(a->ip >> 24), (uint8_t)(a->ip >> 16), (uint8_t)(a->ip >> 8), (uint8_t)a->ip };
	memcpy(out, head, 8);
	memcpy(out + 8, a->mac, 6);
	memcpy(out + 14, ip, 4);
	memset(out + 18, 0, 6);
	memcpy(out + 24, ip, 4);
}
