/* yaml_to_json: manifests, scalar typing, tags, keys, anchors, caps and errors. */
#include "patch_test.h"

struct ycase {
	const char *name;
	const char *yaml;
	const char *want; /* JSON with ' for ", NULL for an error */
};

static void run_yaml(const struct ycase *cases, size_t n, int max_depth)
{
	for (size_t i = 0; i < n; i++) {
		const struct ycase *c = &cases[i];
		json_t *out = NULL;
		struct buf err = BUF_INIT;
		int rc = yaml_to_json(c->yaml, strlen(c->yaml), max_depth, &out, &err);
		if (!c->want) {
			if (rc != E_BAD_REQUEST || out || !err.len) {
				char *g = out ? dump(out) : NULL;
				print_error("case %s: want E_BAD_REQUEST with a message, got %d (%s) %s\n", c->name, rc,
					    buf_cstr(&err), g ? g : "-");
				free(g);
				fail();
			}
		} else {
			if (rc)
				fail_msg("case %s: rc %d: %s", c->name, rc, buf_cstr(&err));
			struct buf what = BUF_INIT;
			buf_addf(&what, "case %s", c->name);
			check_json(what.ptr, out, c->want);
			buf_release(&what);
		}
		json_decref(out);
		buf_release(&err);
	}
}

static const struct ycase manifest_cases[] = {
	{ "pod manifest",
	  "apiVersion: v1\n"
	  "kind: Pod\n"
	  "metadata:\n"
	  "  name: p1\n"
	  "  labels:\n"
	  "    app: web\n"
	  "    version: \"2\"\n"
	  "spec:\n"
	  "  containers:\n"
	  "  - name: c\n"
	  "    image: nginx:1.25\n"
	  "    ports:\n"
	  "    - containerPort: 80\n"
	  "    command: [\"sh\", \"-c\", 'echo hi']\n"
	  "    tty: true\n"
	  "  volumes:\n"
	  "  - name: cfg\n"
	  "    configMap:\n"
	  "      name: cm\n"
	  "      defaultMode: 0644\n",
	  "{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p1','labels':{'app':'web','version':'2'}},"
	  "'spec':{'containers':[{'name':'c','image':'nginx:1.25','ports':[{'containerPort':80}],"
	  "'command':['sh','-c','echo hi'],'tty':true}],'volumes':[{'name':'cfg','configMap':{'name':'cm','defaultMode':420}}]}}" },
	{ "JSON is YAML", "{\"a\": [1, 2.5, {\"b\": null}], \"c\": \"d\", \"e\": true}",
	  "{'a':[1,2.5,{'b':null}],'c':'d','e':true}" },
	{ "explicit document markers", "---\na: 1\n...\n", "{'a':1}" },
	{ "comments", "# top\na: 1 # trailing\n# end\n", "{'a':1}" },
	{ "literal block", "script: |\n  line1\n  line2\n", "{'script':'line1\\nline2\\n'}" },
	{ "folded block", "s: >\n  a\n  b\n", "{'s':'a b\\n'}" },
	{ "multi-line plain", "s: a\n  b\n", "{'s':'a b'}" },
	{ "top-level scalar", "hello", "'hello'" },
	{ "top-level list", "- 1\n- two\n", "[1,'two']" },
	{ "empty map and list", "a: {}\nb: []\n", "{'a':{},'b':[]}" },
	{ "empty value is null", "a:\nb: ~\n", "{'a':null,'b':null}" },
	{ "unicode", "name: \"caf\\u00e9 \\u2603\"\nraw: ünï\n", "{'name':'caf\\u00e9 \\u2603','raw':'\\u00fcn\\u00ef'}" },
	{ "merge key is an ordinary key", "<<: 1\n", "{'<<':1}" },
};

static const struct ycase scalar_cases[] = {
	{ "quoted stay strings", "[\"1\", '2', \"true\", 'null', \"\", '1.5']", "['1','2','true','null','','1.5']" },
	{ "null forms", "[~, null, Null, NULL, nULL]", "[null,null,null,null,'nULL']" },
	{ "bool forms", "[true, True, TRUE, false, False, FALSE, tRUE]", "[true,true,true,false,false,false,'tRUE']" },
	{ "yes/no/on/off stay strings", "[yes, no, on, off, y, n, Yes, OFF]", "['yes','no','on','off','y','n','Yes','OFF']" },
	{ "decimal ints", "[0, 7, -7, +7, 1_000, 123456789012]", "[0,7,-7,7,1000,123456789012]" },
	{ "int64 bounds", "[9223372036854775807, -9223372036854775808]", "[9223372036854775807,-9223372036854775808]" },
	{ "beyond int64 becomes real", "[9223372036854775808]", "[9.223372036854775808e18]" },
	{ "octal, hex, binary", "[0644, 0o17, 0x1F, -0x10, 0b101, 00]", "[420,15,31,-16,5,0]" },
	{ "invalid octal reads as decimal", "[08, 09.5]", "[8,9.5]" },
	{ "floats", "[1.5, -0.25, .5, 1e3, 1.0, 2.5e-1, 1.]", "[1.5,-0.25,0.5,1000,1,0.25,1]" },
	{ "non-finite stay strings", "[.inf, -.Inf, .nan, 1e999]", "['.inf','-.Inf','.nan','1e999']" },
	{ "not numbers", "[1.2.3, v1, 0x, 1e, '-', -, +, 1_, 0xZZ, 12abc, 1:20, 2024-01-01]",
	  "['1.2.3','v1','0x','1e','-','-','+',1,'0xZZ','12abc','1:20','2024-01-01']" },
	{ "tag !!str", "[!!str 123, !!str true, !!str null, !!str ]", "['123','true','null','']" },
	{ "tag !!int", "[!!int '12', !!int \"0x10\"]", "[12,16]" },
	{ "tag !!float", "[!!float 1, !!float '2.5']", "[1.0,2.5]" },
	{ "tag !!bool", "[!!bool yes, !!bool 'off', !!bool True]", "[true,false,true]" },
	{ "tag !!null", "[!!null '', !!null ~]", "[null,null]" },
	{ "non-specific tag", "[! 12, ! true]", "['12','true']" },
	{ "other tags give strings", "[!!binary aGk=, !!timestamp 2001-12-14, !custom 5]", "['aGk=','2001-12-14','5']" },
	{ "tags on containers", "!!map {a: !!seq [1]}", "{'a':[1]}" },
};

static const struct ycase key_cases[] = {
	{ "keys are strings", "1: a\ntrue: b\nnull: c\n1.5: d\n~: e\n", "{'1':'a','true':'b','null':'c','1.5':'d','~':'e'}" },
	{ "quoted keys", "\"a b\": 1\n'c': 2\n", "{'a b':1,'c':2}" },
	{ "key with NUL", "\"a\\0b\": 1\n", NULL },
	{ "value with NUL", "a: \"x\\0y\"\n", "{'a':'x\\u0000y'}" },
	{ "duplicate keys", "a: 1\na: 2\n", NULL },
	{ "duplicate keys in flow", "{a: 1, a: 2}", NULL },
	{ "sequence key", "? [a]\n: b\n", NULL },
	{ "mapping key", "? {a: 1}\n: b\n", NULL },
};

static const struct ycase anchor_cases[] = {
	{ "alias of a map", "base: &b {image: nginx, tty: true}\ncopy: *b\n",
	  "{'base':{'image':'nginx','tty':true},'copy':{'image':'nginx','tty':true}}" },
	{ "alias of a scalar", "a: &x 5\nb: *x\nc: [*x, *x]\n", "{'a':5,'b':5,'c':[5,5]}" },
	{ "anchor on a key", "&k name: 1\nother: *k\n", "{'name':1,'other':'name'}" },
	{ "redefined anchor", "a: &x 1\nb: &x 2\nc: *x\n", "{'a':1,'b':2,'c':2}" },
	{ "unknown alias", "a: *nope\n", NULL },
	{ "alias inside its own anchor", "a: &x [1, *x]\n", NULL },
	{ "alias as a key", "a: &x k\n*x : 1\n", NULL },
	{ "billion laughs",
	  "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	  "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
	  "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
	  "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
	  "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
	  "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
	  "g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n"
	  "h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]\n"
	  "i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h, *h]\n",
	  NULL },
};

static const struct ycase error_cases[] = {
	{ "two documents", "a: 1\n---\nb: 2\n", NULL },
	{ "trailing document marker", "a: 1\n---\n", NULL },
	{ "empty input", "", NULL },
	{ "only a comment", "# nothing\n", NULL },
	{ "unclosed flow", "a: [1, 2\n", NULL },
	{ "bad indentation", "a:\n  b: 1\n c: 2\n", NULL },
	{ "tab indentation", "a:\n\tb: 1\n", NULL },
	{ "bad !!int", "!!int abc", NULL },
	{ "bad !!bool", "!!bool maybe", NULL },
	{ "bad !!float", "!!float .inf", NULL },
	{ "invalid UTF-8", "a: \"\xff\xfe\"\n", NULL },
	{ "undefined tag handle", "!x!y 1", NULL },
};

static void test_manifests(void **state)
{
	(void)state;
	run_yaml(manifest_cases, sizeof(manifest_cases) / sizeof(manifest_cases[0]), 64);
}

static void test_scalars(void **state)
{
	(void)state;
	run_yaml(scalar_cases, sizeof(scalar_cases) / sizeof(scalar_cases[0]), 64);
}

static void test_keys(void **state)
{
	(void)state;
	run_yaml(key_cases, sizeof(key_cases) / sizeof(key_cases[0]), 64);
}

static void test_anchors(void **state)
{
	(void)state;
	run_yaml(anchor_cases, sizeof(anchor_cases) / sizeof(anchor_cases[0]), 64);
}

static void test_errors(void **state)
{
	(void)state;
	run_yaml(error_cases, sizeof(error_cases) / sizeof(error_cases[0]), 64);
}

/* Depth counts containers as json_depth does: {a: {b: 1}} is 2. */
static void test_depth_cap(void **state)
{
	(void)state;
	static const struct ycase at3[] = {
		{ "depth 3 ok", "a: {b: {c: 1}}", "{'a':{'b':{'c':1}}}" },
		{ "depth 4 rejected", "a: {b: {c: {d: 1}}}", NULL },
		{ "flow lists", "[[[[1]]]]", NULL },
		{ "block lists", "- - - - 1\n", NULL },
		{ "alias adds its depth", "a: &x {b: {c: 1}}\nd: [*x]\n", NULL },
		{ "alias within the cap", "a: &x {b: 1}\nd: [*x]\n", "{'a':{'b':1},'d':[{'b':1}]}" },
	};
	run_yaml(at3, sizeof(at3) / sizeof(at3[0]), 3);

	/* a very deep document fails fast on the cap, not in the parser */
	struct buf b = BUF_INIT;
	for (int i = 0; i < 200000; i++)
		buf_addch(&b, '[');
	json_t *out = NULL;
	struct buf err = BUF_INIT;
	assert_int_equal(yaml_to_json(b.ptr, b.len, 100, &out, &err), E_BAD_REQUEST);
	assert_non_null(strstr(buf_cstr(&err), "deeper than 100"));
	buf_release(&b);
	buf_release(&err);
}

static void test_error_position(void **state)
{
	(void)state;
	json_t *out = NULL;
	struct buf err = BUF_INIT;
	const char *y = "a: 1\nb: 2\na: 3\n";
	assert_int_equal(yaml_to_json(y, strlen(y), 10, &out, &err), E_BAD_REQUEST);
	assert_string_equal(buf_cstr(&err), "YAML: duplicate mapping key \"a\" at line 3 column 4");
	buf_release(&err);
}

/* Input need not be NUL-terminated: only len bytes are read. */
static void test_length_bounded(void **state)
{
	(void)state;
	json_t *out = NULL;
	struct buf err = BUF_INIT;
	const char *y = "a: 1\nb: [unterminated";
	assert_int_equal(yaml_to_json(y, 5, 10, &out, &err), 0);
	check_json("prefix", out, "{'a':1}");
	json_decref(out);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_manifests),
		cmocka_unit_test(test_scalars),
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_anchors),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_depth_cap),
		cmocka_unit_test(test_error_position),
		cmocka_unit_test(test_length_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
