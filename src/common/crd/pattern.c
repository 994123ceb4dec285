/* Schema patterns: CRDs are written for Go's RE2 / JavaScript syntax, we match with POSIX ERE
 * (regcomp). The common subset passes unchanged; \d \w \s and their negations become bracket
 * classes, escaped punctuation becomes the literal, (?: becomes (, lazy quantifiers become
 * greedy (same answer for "does it match"). What ERE cannot say (lookaround, backreferences,
 * word boundaries, negated class escapes inside []) is refused rather than silently changed.
 * A cost bound (atoms times repetition counts) keeps regcomp's automaton small. */
#include <stdlib.h>
#include <string.h>
#include "crd/schema_internal.h"
#include "ursa/xalloc.h"

#define PATTERN_MAX_COST 20000
#define PATTERN_MAX_REPEAT 1000
#define PATTERN_MAX_GROUPS 64

struct frame {
	long long sum, last;
};

struct tr {
	const char *s;
	size_t i;
	struct buf *out;
	struct frame st[PATTERN_MAX_GROUPS + 1];
	int top;
	const char *why;
};

static long long clamp_mul(long long a, long long b)
{
	if (a > 0 && b > PATTERN_MAX_COST * 10LL / a)
		return PATTERN_MAX_COST * 10LL;
	return a * b;
}

static bool atom(struct tr *t, long long cost)
{
	struct frame *f = &t->st[t->top];
	f->sum += cost;
	f->last = cost;
	if (f->sum > PATTERN_MAX_COST) {
		t->why = "the pattern is too complex";
		return false;
	}
	return true;
}

static int hexval(const char *p, int n)
{
	int v = 0;
	for (int k = 0; k < n; k++) {
		int d = hex_digit(p[k]);
		if (d < 0)
			return -1;
		v = v * 16 + d;
	}
	return v;
}

static void add_utf8(struct buf *b, unsigned cp)
{
	if (cp < 0x80) {
		buf_addch(b, (char)cp);
	} else if (cp < 0x800) {
		buf_addch(b, (char)(0xC0 | (cp >> 6)));
		buf_addch(b, (char)(0x80 | (cp & 0x3F)));
	} else {
		buf_addch(b, (char)(0xE0 | (cp >> 12)));
		buf_addch(b, (char)(0x80 | ((cp >> 6) & 0x3F)));
		buf_addch(b, (char)(0x80 | (cp & 0x3F)));
	}
}

/* \xHH or \uHHHH at s (pointing at 'x' or 'u'): the code point and the escape's length after
 * the backslash, or -1. */
static int hex_escape(const char *s, int *ret_len)
{
	int n = s[0] == 'x' ? 2 : 4;
	if (strnlen(s + 1, (size_t)n) < (size_t)n)
		return -1;
	int v = hexval(s + 1, n);
	if (v <= 0)
		return -1;
	*ret_len = n + 1;
	return v;
}

static char control_escape(char e)
{
	switch (e) {
	case 'n': return '\n';
	case 't': return '\t';
	case 'r': return '\r';
	case 'f': return '\f';
	case 'v': return '\v';
	default: return 0;
	}
}

static bool is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* An escape outside brackets; t->i at the backslash. */
static bool escape(struct tr *t)
{
	char e = t->s[t->i + 1];
	const char *cls = NULL;
	t->i += 2;
	switch (e) {
	case 'd': cls = "[0-9]"; break;
	case 'D': cls = "[^0-9]"; break;
	case 'w': cls = "[A-Za-z0-9_]"; break;
	case 'W': cls = "[^A-Za-z0-9_]"; break;
	case 's': cls = "[[:space:]]"; break;
	case 'S': cls = "[^[:space:]]"; break;
	default: break;
	}
	if (cls) {
		buf_adds(t->out, cls);
		return atom(t, 1);
	}
	if (!e) {
		t->why = "the pattern ends with a backslash";
		return false;
	}
	char c = control_escape(e);
	if (c) {
		buf_addch(t->out, c);
		return atom(t, 1);
	}
	if (e == 'x' || e == 'u') {
		int len, cp = hex_escape(t->s + t->i - 1, &len);
		if (cp < 0) {
			t->why = "a \\x or \\u escape is malformed";
			return false;
		}
		t->i += (size_t)len - 1;
		if (cp < 0x80 && strchr(".[]()*+?{}|^$\\", cp))
			buf_addch(t->out, '\\');
		add_utf8(t->out, (unsigned)cp);
		return atom(t, 1);
	}
	if (is_alnum(e) || (unsigned char)e >= 0x80) {
		t->why = e == 'b' || e == 'B' ? "word boundaries (\\b, \\B) are not supported"
			 : (e >= '0' && e <= '9') ? "backreferences are not supported"
						  : "the pattern has an unsupported escape";
		return false;
	}
	if (strchr(".[]()*+?{}|^$\\", e))
		buf_addch(t->out, '\\');
	buf_addch(t->out, e);
	return atom(t, 1);
}

/* A bracket expression; t->i at '['. ECMA escapes inside become POSIX bracket content; literal
 * '-', ']' and '^' are moved where POSIX reads them literally. */
static bool bracket(struct tr *t)
{
	struct buf content = BUF_INIT;
	bool neg = false, dash = false, rbr = false, ok = false;
	t->i++;
	if (t->s[t->i] == '^') {
		neg = true;
		t->i++;
	}
	if (t->s[t->i] == ']') {
		t->why = "empty character classes are not supported";
		goto out;
	}
	for (bool first = true;; first = false) {
		char c = t->s[t->i];
		if (!c) {
			t->why = "a character class is not terminated";
			goto out;
		}
		if (c == ']')
			break;
		if (c == '\\') {
			char e = t->s[t->i + 1];
			t->i += 2;
			if (e == 'd') {
				buf_adds(&content, "0-9");
			} else if (e == 'w') {
				buf_adds(&content, "A-Za-z0-9_");
			} else if (e == 's') {
				buf_adds(&content, "[:space:]");
			} else if (e == '-') {
				dash = true;
			} else if (e == ']') {
				rbr = true;
			} else if (e == '^') {
				buf_adds(&content, "[.^.]");
			} else if (control_escape(e)) {
				buf_addch(&content, control_escape(e));
			} else if (e == 'x' || e == 'u') {
				int len, cp = hex_escape(t->s + t->i - 1, &len);
				if (cp < 0 || cp >= 0x80) {
					t->why = "a \\x or \\u escape in a character class is malformed or not ASCII";
					goto out;
				}
				t->i += (size_t)len - 1;
				if (cp == '-')
					dash = true;
				else if (cp == ']')
					rbr = true;
				else if (cp == '^')
					buf_adds(&content, "[.^.]");
				else
					buf_addch(&content, (char)cp);
			} else if (!e || is_alnum(e) || (unsigned char)e >= 0x80) {
				t->why = "the pattern has an unsupported escape in a character class";
				goto out;
			} else {
				buf_addch(&content, e);
			}
			continue;
		}
		/* An unescaped '-' first or last is literal in both dialects. */
		if (c == '-' && (first || t->s[t->i + 1] == ']')) {
			dash = true;
			t->i++;
			continue;
		}
		if (c == '^' && first) {
			buf_adds(&content, "[.^.]");
			t->i++;
			continue;
		}
		buf_addch(&content, c);
		t->i++;
	}
	t->i++;
	buf_addch(t->out, '[');
	if (neg)
		buf_addch(t->out, '^');
	if (rbr)
		buf_addch(t->out, ']');
	buf_add(t->out, buf_cstr(&content), content.len);
	if (dash)
		buf_addch(t->out, '-');
	buf_addch(t->out, ']');
	ok = atom(t, 1);
out:
	buf_release(&content);
	return ok;
}

/* {n}, {n,} or {n,m} at t->i; false (and nothing consumed) when it is not one (a literal '{'). */
static bool brace_quantifier(struct tr *t, long long *ret_max)
{
	const char *p = t->s + t->i + 1;
	long long n = 0, m = -1;
	if (*p < '0' || *p > '9')
		return false;
	while (*p >= '0' && *p <= '9' && n <= PATTERN_MAX_REPEAT)
		n = n * 10 + (*p++ - '0');
	if (*p == ',') {
		p++;
		if (*p >= '0' && *p <= '9') {
			m = 0;
			while (*p >= '0' && *p <= '9' && m <= PATTERN_MAX_REPEAT)
				m = m * 10 + (*p++ - '0');
		} else {
			m = n + 1;
		}
	} else {
		m = n;
	}
	if (*p != '}')
		return false;
	*ret_max = m > n ? m : n;
	if (*ret_max < 1)
		*ret_max = 1;
	size_t len = (size_t)(p + 1 - (t->s + t->i));
	buf_add(t->out, t->s + t->i, len);
	t->i += len;
	return true;
}

static bool translate(struct tr *t)
{
	while (t->s[t->i]) {
		char c = t->s[t->i];
		struct frame *f = &t->st[t->top];
		long long rep;
		switch (c) {
		case '\\':
			if (!escape(t))
				return false;
			break;
		case '[':
			if (!bracket(t))
				return false;
			break;
		case '(':
			if (t->s[t->i + 1] == '?') {
				if (t->s[t->i + 2] != ':') {
					t->why = "lookaround and named groups are not supported";
					return false;
				}
				t->i += 2;
			}
			if (t->top == PATTERN_MAX_GROUPS) {
				t->why = "groups are nested too deeply";
				return false;
			}
			t->st[++t->top] = (struct frame){ 0, 0 };
			buf_addch(t->out, '(');
			t->i++;
			break;
		case ')':
			if (t->top == 0) {
				t->why = "parentheses are not balanced";
				return false;
			}
			t->top--;
			buf_addch(t->out, ')');
			t->i++;
			if (!atom(t, f->sum ? f->sum : 1))
				return false;
			break;
		case '{':
			if (brace_quantifier(t, &rep)) {
				if (rep > PATTERN_MAX_REPEAT) {
					t->why = "a repetition count is larger than 1000";
					return false;
				}
				f->sum += clamp_mul(f->last, rep - 1);
				f->last = clamp_mul(f->last, rep);
				if (f->sum > PATTERN_MAX_COST) {
					t->why = "the pattern is too complex";
					return false;
				}
				if (t->s[t->i] == '?')
					t->i++; /* lazy: same match/no-match answer */
				break;
			}
			buf_adds(t->out, "\\{");
			t->i++;
			if (!atom(t, 1))
				return false;
			break;
		case '}':
			buf_adds(t->out, "\\}");
			t->i++;
			if (!atom(t, 1))
				return false;
			break;
		case '*':
		case '+':
		case '?':
			buf_addch(t->out, c);
			t->i++;
			if (t->s[t->i] == '?')
				t->i++; /* lazy */
			if (c != '?') {
				f->sum += clamp_mul(f->last, 2);
				f->last = clamp_mul(f->last, 3);
			}
			break;
		default:
			buf_addch(t->out, c);
			t->i++;
			if (c != '|' && c != '^' && c != '$' && !atom(t, 1))
				return false;
			break;
		}
	}
	if (t->top != 0) {
		t->why = "parentheses are not balanced";
		return false;
	}
	return true;
}

int crd_pattern_compile(const char *src, regex_t **ret, const char **ret_why)
{
	struct buf out = BUF_INIT;
	struct tr t = { .s = src, .out = &out };
	regex_t *re = NULL;
	int rc = -1;
	if (!translate(&t)) {
		*ret_why = t.why;
		goto out;
	}
	re = xmalloc(sizeof(*re));
	if (regcomp(re, buf_cstr(&out), REG_EXTENDED | REG_NOSUB) != 0) {
		free(re);
		re = NULL;
		*ret_why = "the pattern is not a valid (POSIX extended) regular expression";
		goto out;
	}
	*ret = re;
	rc = 0;
out:
	buf_release(&out);
	return rc;
}
