/* arktos.futurewei.com/v1 Network: a tenant's network (tenant-scoped; the tenant controller
 * makes `default` in every tenant). spec.type ("flat"), spec.serviceCIDR (the range services'
 * cluster IPs come from, immutable), status.phase and status.dnsServiceIP (its controller's).
 * Also the IPv4 helpers of ursa/ipnet.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kinds/kinds_common.h"
#include "ursa/ipnet.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

int ipv4_parse(const char *s, uint32_t *ret)
{
	uint32_t ip = 0;
	if (!s)
		return -1;
	for (int i = 0; i < 4; i++) {
		if (*s < '0' || *s > '9')
			return -1;
		unsigned v = 0;
		const char *start = s;
		while (*s >= '0' && *s <= '9' && s - start < 4)
			v = v * 10 + (unsigned)(*s++ - '0');
		if (s - start > 3 || v > 255 || (s - start > 1 && *start == '0'))
			return -1;
		ip = ip << 8 | v;
		if (i < 3 && *s++ != '.')
			return -1;
	}
	if (*s)
		return -1;
	*ret = ip;
	return 0;
}

int ipv4_cidr_parse(const char *s, struct ipv4_net *ret, const char **ret_why)
{
	const char *why = NULL;
	const char *slash = s ? strchr(s, '/') : NULL;
	char addr[16];
	uint32_t ip = 0;
	int prefix = 0;
	if (!slash || slash - s >= (long)sizeof(addr)) {
		why = "must be an IPv4 CIDR like 10.96.0.0/16";
		goto out;
	}
	memcpy(addr, s, (size_t)(slash - s));
	addr[slash - s] = 0;
	const char *p = slash + 1;
	if (!*p || strlen(p) > 2 || (p[0] == '0' && p[1]) || strspn(p, "0123456789") != strlen(p) ||
	    (prefix = atoi(p)) > 32 || ipv4_parse(addr, &ip) < 0) {
		why = "must be an IPv4 CIDR like 10.96.0.0/16";
		goto out;
	}
	if (prefix < 32 && (ip & (prefix ? (0xffffffffu >> prefix) : 0xffffffffu))) {
		why = "must be the network's address (no host bits set)";
		goto out;
	}
	ret->base = ip;
	ret->prefix = prefix;
out:
	if (ret_why)
		*ret_why = why;
	return why ? -1 : 0;
}

void ipv4_format(uint32_t ip, struct buf *out)
{
	buf_addf(out, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
}

uint32_t ipv4_range_band(uint64_t size)
{
	uint64_t band = size / 16;
	if (band < 16)
		band = 16;
	if (band > 256)
		band = 256;
	if (band > size - 2)
		band = size > 2 ? size - 2 : 1;
	return (uint32_t)band;
}

static bool free_at(const uint8_t *bits, uint32_t off, bool (*taken)(void *, uint32_t), void *ud)
{
	return !(bits[off / 8] & (1u << (off % 8))) && !(taken && taken(ud, off));
}

uint32_t ipv4_range_next_free(const uint8_t *bits, uint64_t size, uint32_t cursor,
			      bool (*taken)(void *ud, uint32_t off), void *ud)
{
	if (size < 4)
		return 0;
	uint32_t band = ipv4_range_band(size), last = (uint32_t)(size - 2);
	if (cursor < band || cursor > last)
		cursor = band;
	for (uint32_t off = cursor; off <= last; off++)
		if (free_at(bits, off, taken, ud))
			return off;
	for (uint32_t off = band; off < cursor; off++)
		if (free_at(bits, off, taken, ud))
			return off;
	for (uint32_t off = 1; off < band; off++)
		if (free_at(bits, off, taken, ud))
			return off;
	return 0;
}

/* ---- the kind ---- */

static void network_defaults(json_t *obj)
{
	json_t *spec = default_obj(obj, "spec");
	if (!json_is_object(spec))
		return;
	default_str(spec, "type", "flat");
	default_str(spec, "serviceCIDR", IPNET_DEFAULT_SERVICE_CIDR);
}

static void network_validate(const json_t *obj, const json_t *old, struct field_errors *errs)
{
	static const char *const types[] = { "flat", NULL };
	const json_t *spec = json_object_get(obj, "spec");
	if (!json_is_object(spec)) {
		field_error_required(errs, "spec");
		return;
	}
	const char *type = json_str(spec, "type"), *cidr = json_str(spec, "serviceCIDR"), *why = NULL;
	if (type && strcmp(type, "flat"))
		field_error_not_supported(errs, "spec.type", type, types);
	struct ipv4_net n;
	if (!cidr) {
		field_error_required(errs, "spec.serviceCIDR");
	} else if (ipv4_cidr_parse(cidr, &n, &why) < 0) {
		field_error_invalid(errs, "spec.serviceCIDR", cidr, "%s", why);
	} else if (n.prefix < IPNET_MIN_PREFIX || n.prefix > IPNET_MAX_PREFIX) {
		field_error_invalid(errs, "spec.serviceCIDR", cidr, "the prefix length must be between %d and %d",
				    IPNET_MIN_PREFIX, IPNET_MAX_PREFIX);
	}
	const char *old_cidr = json_path_str(old, "spec.serviceCIDR");
	if (old && old_cidr && cidr && strcmp(cidr, old_cidr))
		field_error_invalid(errs, "spec.serviceCIDR", cidr, "field is immutable");
	const char *dns = json_path_str(obj, "status.dnsServiceIP");
	uint32_t ip;
	if (dns && *dns && ipv4_parse(dns, &ip) < 0)
		field_error_invalid(errs, "status.dnsServiceIP", dns, "must be a valid IPv4 address");
}

static void network_cells(const json_t *obj, time_t now, json_t *cells)
{
	cell_name(obj, cells);
	cell_str(cells, json_path_str(obj, "spec.type"));
	cell_str_or(cells, json_path_str(obj, "spec.serviceCIDR"), "<none>");
	cell_str_or(cells, json_path_str(obj, "status.dnsServiceIP"), "<none>");
	cell_str_or(cells, json_path_str(obj, "status.phase"), "<none>");
	cell_age(obj, now, cells);
}

static const struct api_column network_columns[] = {
	COLUMN_NAME,
	{ "Type", "string", "", "type of the network: flat (every pod of the tenant reaches every other).", 0 },
	{ "Service-CIDR", "string", "", "serviceCIDR is the range the tenant's services' cluster IPs come from.", 0 },
	{ "DNS-IP", "string", "", "dnsServiceIP is the cluster IP of the network's DNS service (kube-dns).", 0 },
	{ "Phase", "string", "", "phase: Pending until the network's DNS service exists, then Ready.", 0 },
	COLUMN_AGE,
};

const struct api_strategy strategy_network = {
	.defaults = network_defaults,
	.validate = network_validate,
	.columns = network_columns,
	.ncolumns = ARRAY_SIZE(network_columns),
	.cells = network_cells,
};
