/* Kubernetes name syntax: DNS-1123 labels and subdomains, qualified label keys, label values,
 * and Arktos's metadata.hashKey. */
#include <stdint.h>
#include <string.h>
#include "ursa/api.h"
#include "selector/names.h"

#define QNAME_FMT "'-', '_' or '.', and must start and end with an alphanumeric character"
#define QNAME_RE "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'"

static const char err_name_chars[] =
	"name part must consist of alphanumeric characters, " QNAME_FMT
	" (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is " QNAME_RE ")";
static const char err_name_empty[] = "name part must be non-empty";
static const char err_name_long[] = "name part must be no more than 63 characters";
static const char err_prefix_empty[] = "prefix part must be non-empty";
static const char err_prefix_long[] = "prefix part must be no more than 253 characters";
static const char err_prefix_chars[] =
	"prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
	"'-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
	"for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
static const char err_qname_parts[] =
	"a qualified name must consist of alphanumeric characters, " QNAME_FMT
	" (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is " QNAME_RE
	") with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')";
static const char err_value_long[] = "must be no more than 63 characters";
static const char err_value_chars[] =
	"a valid label must be an empty string or consist of alphanumeric characters, " QNAME_FMT
	" (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
	"'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

static bool is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(char c)
{
	return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* [a-z0-9]([-a-z0-9]*[a-z0-9])? with no length limit (subdomain labels are only capped overall). */
static bool dns_label_syntax(const char *s, size_t len)
{
	if (len == 0 || !is_lower_alnum(s[0]) || !is_lower_alnum(s[len - 1]))
		return false;
	for (size_t i = 1; i + 1 < len; i++)
		if (!is_lower_alnum(s[i]) && s[i] != '-')
			return false;
	return true;
}

static bool dns_subdomain_n(const char *s, size_t len)
{
	if (len == 0 || len > DNS1123_SUBDOMAIN_MAX)
		return false;
	size_t start = 0;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && s[i] != '.')
			continue;
		if (!dns_label_syntax(s + start, i - start))
			return false;
		start = i + 1;
	}
	return true;
}

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], i.e. non-empty. */
static bool qname_syntax(const char *s, size_t len)
{
	if (len == 0 || !is_alnum(s[0]) || !is_alnum(s[len - 1]))
		return false;
	for (size_t i = 1; i + 1 < len; i++)
		if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return false;
	return true;
}

bool valid_dns1123_label(const char *s)
{
	size_t len = s ? strlen(s) : 0;
	return len <= LABEL_NAME_MAX && dns_label_syntax(s, len);
}

bool valid_dns1123_subdomain(const char *s)
{
	return s && dns_subdomain_n(s, strlen(s));
}

static const char *label_key_error_n(const char *s, size_t len)
{
	const char *slash = memchr(s, '/', len);
	const char *name = s;
	size_t nlen = len;
	if (slash) {
		size_t plen = (size_t)(slash - s);
		name = slash + 1;
		nlen = len - plen - 1;
		if (memchr(name, '/', nlen))
			return err_qname_parts;
		if (plen == 0)
			return err_prefix_empty;
		if (plen > DNS1123_SUBDOMAIN_MAX)
			return err_prefix_long;
		if (!dns_subdomain_n(s, plen))
			return err_prefix_chars;
	}
	if (nlen == 0)
		return err_name_empty;
	if (nlen > LABEL_NAME_MAX)
		return err_name_long;
	if (!qname_syntax(name, nlen))
		return err_name_chars;
	return NULL;
}

static const char *label_value_error_n(const char *s, size_t len)
{
	if (len > LABEL_NAME_MAX)
		return err_value_long;
	if (len && !qname_syntax(s, len))
		return err_value_chars;
	return NULL;
}

const char *label_key_error(const char *s)
{
	return label_key_error_n(s ? s : "", s ? strlen(s) : 0);
}

const char *label_value_error(const char *s)
{
	return label_value_error_n(s ? s : "", s ? strlen(s) : 0);
}

bool valid_label_key_n(const char *s, size_t len)
{
	return label_key_error_n(s, len) == NULL;
}

bool valid_label_value_n(const char *s, size_t len)
{
	return label_value_error_n(s, len) == NULL;
}

bool valid_label_key(const char *s)
{
	return s && label_key_error(s) == NULL;
}

bool valid_label_value(const char *s)
{
	return s && label_value_error(s) == NULL;
}

long long hash_key_of_uid(const char *uid)
{
	uint64_t h = 14695981039346656037ULL; /* FNV-1a 64 offset basis */
	for (const unsigned char *p = (const unsigned char *)(uid ? uid : ""); *p; p++) {
		h ^= *p;
		h *= 1099511628211ULL; /* FNV 64 prime */
	}
	return (long long)(h & (uint64_t)INT64_MAX);
}
