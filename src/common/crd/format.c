/* The OpenAPI formats Kubernetes checks on custom resources, each done strictly and simply.
 * Number formats (int32, int64, float, double) look at numbers; the others at strings. */
#include <arpa/inet.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "crd/schema_internal.h"
#include "ursa/base64.h"

static bool digits(const char *s, int n)
{
	for (int i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

static int num(const char *s, int n)
{
	int v = 0;
	for (int i = 0; i < n; i++)
		v = v * 10 + (s[i] - '0');
	return v;
}

static bool leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* YYYY-MM-DD, a real calendar day; the length consumed, or 0. */
static size_t date_prefix(const char *s)
{
	static const int mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	if (strnlen(s, 10) < 10 || !digits(s, 4) || s[4] != '-' || !digits(s + 5, 2) || s[7] != '-' ||
	    !digits(s + 8, 2))
		return 0;
	int y = num(s, 4), m = num(s + 5, 2), d = num(s + 8, 2);
	if (m < 1 || m > 12 || d < 1)
		return 0;
	int max = mdays[m - 1] + (m == 2 && leap(y));
	return d <= max ? 10 : 0;
}

static bool date_ok(const char *s)
{
	return date_prefix(s) == 10 && !s[10];
}

/* RFC 3339: date "T" hh:mm:ss [.frac] ("Z" / +hh:mm / -hh:mm); 't' and 'z' too. */
static bool date_time_ok(const char *s)
{
	if (!date_prefix(s) || (s[10] != 'T' && s[10] != 't'))
		return false;
	const char *p = s + 11;
	if (strnlen(p, 8) < 8 || !digits(p, 2) || p[2] != ':' || !digits(p + 3, 2) || p[5] != ':' || !digits(p + 6, 2))
		return false;
	if (num(p, 2) > 23 || num(p + 3, 2) > 59 || num(p + 6, 2) > 60)
		return false;
	p += 8;
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return false;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if (*p == 'Z' || *p == 'z')
		return !p[1];
	if (*p != '+' && *p != '-')
		return false;
	p++;
	return strlen(p) == 5 && digits(p, 2) && p[2] == ':' && digits(p + 3, 2) && num(p, 2) <= 23 &&
	       num(p + 3, 2) <= 59;
}

static bool is_hex(char c)
{
	return hex_digit(c) >= 0;
}

static bool uuid_ok(const char *s)
{
	static const int groups[] = { 8, 4, 4, 4, 12 };
	for (size_t g = 0; g < 5; g++) {
		for (int i = 0; i < groups[g]; i++)
			if (!is_hex(*s++))
				return false;
		if (g < 4 && *s++ != '-')
			return false;
	}
	return !*s;
}

static bool alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* RFC 1123 host name: dot-separated labels of letters, digits and inner '-', 1..63 each,
 * at most 253 in all. */
static bool hostname_ok(const char *s)
{
	size_t len = strlen(s), label = 0;
	if (!len || len > 253)
		return false;
	for (size_t i = 0; i <= len; i++) {
		char c = s[i];
		if (c == '.' || !c) {
			if (!label || label > 63 || s[i - 1] == '-')
				return false;
			label = 0;
		} else if (alnum(c) || (c == '-' && label > 0)) {
			label++;
		} else {
			return false;
		}
	}
	return true;
}

static bool ip_ok(int af, const char *s)
{
	unsigned char tmp[16];
	return inet_pton(af, s, tmp) == 1;
}

static bool cidr_ok(const char *s)
{
	const char *slash = strchr(s, '/');
	if (!slash || slash - s > 45)
		return false;
	char addr[46];
	memcpy(addr, s, (size_t)(slash - s));
	addr[slash - s] = '\0';
	int af = strchr(addr, ':') ? AF_INET6 : AF_INET;
	const char *p = slash + 1;
	size_t n = strlen(p);
	if (!n || n > 3 || !digits(p, (int)n) || (n > 1 && p[0] == '0'))
		return false;
	int prefix = num(p, (int)n);
	return ip_ok(af, addr) && prefix <= (af == AF_INET ? 32 : 128);
}

static bool email_ok(const char *s)
{
	const char *at = strchr(s, '@');
	if (!at || at == s || strchr(at + 1, '@'))
		return false;
	for (const char *p = s; p < at; p++)
		if ((unsigned char)*p <= ' ' || strchr("()<>,;:\\\"[]", *p))
			return false;
	return hostname_ok(at + 1);
}

/* An absolute URI (scheme ":" rest) or an absolute path, with no spaces or controls. */
static bool uri_ok(const char *s)
{
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return false;
	if (s[0] == '/')
		return true;
	if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')))
		return false;
	const char *p = s + 1;
	while (alnum(*p) || *p == '+' || *p == '-' || *p == '.')
		p++;
	return *p == ':' && p[1];
}

static bool ipv4_ok(const char *s)
{
	return ip_ok(AF_INET, s);
}

static bool ipv6_ok(const char *s)
{
	return ip_ok(AF_INET6, s);
}

static bool byte_ok(const char *s)
{
	return base64_decoded_len(s, strlen(s), 0) >= 0;
}

bool crd_format_ok(const char *format, const json_t *v)
{
	if (json_is_number(v)) {
		double d = json_number_value(v);
		bool integral = json_is_integer(v) || (isfinite(d) && d == floor(d));
		if (!strcmp(format, "int32"))
			return integral && d >= -2147483648.0 && d <= 2147483647.0;
		if (!strcmp(format, "int64"))
			return integral && d >= -9223372036854775808.0 && d < 9223372036854775808.0;
		return true;
	}
	if (!json_is_string(v))
		return true;
	static const struct {
		const char *name;
		bool (*ok)(const char *s);
	} formats[] = {
		{ "byte", byte_ok },         { "date", date_ok },   { "date-time", date_time_ok },
		{ "uuid", uuid_ok },         { "hostname", hostname_ok }, { "ipv4", ipv4_ok },
		{ "ipv6", ipv6_ok },         { "cidr", cidr_ok },   { "email", email_ok },
		{ "uri", uri_ok },
	};
	const char *s = json_string_value(v);
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (!strcmp(format, formats[i].name))
			return strlen(s) == json_string_length(v) && formats[i].ok(s);
	return true;
}
