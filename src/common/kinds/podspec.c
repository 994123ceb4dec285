/* The pod spec: defaults (API defaulting plus, for pods, the admission plugins that upstream
 * runs on create), validation and QoS class. Shared by pods and workload pod templates. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "kinds/kinds_common.h"
#include "ursa/jsonutil.h"
#include "ursa/kinds.h"
#include "ursa/xalloc.h"

#define DEFAULT_TOLERATION_SECONDS 300

/* ---- defaults ---- */

/* Upstream's image reference parsing, reduced to the question "is the tag latest?": the tag
 * follows the last ':' after the last '/', a digest ('@') means no tag, no tag means latest. */
static bool image_is_latest(const char *image)
{
	if (strchr(image, '@'))
		return false;
	const char *slash = strrchr(image, '/');
	const char *colon = strrchr(slash ? slash : image, ':');
	return !colon || !strcmp(colon + 1, "latest");
}

static void container_defaults(json_t *c)
{
	const char *image = json_str(c, "image");
	if (!json_is_object(c))
		return;
	default_str(c, "terminationMessagePath", "/dev/termination-log");
	default_str(c, "terminationMessagePolicy", "File");
	if (image)
		default_str(c, "imagePullPolicy", image_is_latest(image) ? "Always" : "IfNotPresent");
	default_obj(c, "resources");
	size_t i;
	json_t *p;
	json_array_foreach(json_object_get(c, "ports"), i, p)
		if (json_is_object(p))
			default_str(p, "protocol", "TCP");
}

static void containers_defaults(json_t *list)
{
	size_t i;
	json_t *c;
	json_array_foreach(list, i, c)
		container_defaults(c);
}

/* SetDefaults_Pod: a limit without a request requests the limit. */
static void requests_from_limits(json_t *c)
{
	json_t *res = json_object_get(c, "resources");
	json_t *limits = json_object_get(res, "limits");
	if (!json_is_object(limits) || json_object_size(limits) == 0)
		return;
	json_t *req = default_obj(res, "requests");
	if (!json_is_object(req))
		return;
	const char *k;
	json_t *v;
	json_object_foreach(limits, k, v)
		if (!json_object_get(req, k))
			json_object_set_new(req, k, json_deep_copy(v));
}

/* DefaultTolerationSeconds admission: does an existing toleration cover key:NoExecute? */
static bool has_toleration_for(const json_t *tols, const char *key)
{
	size_t i;
	json_t *t;
	json_array_foreach(tols, i, t) {
		const char *k = json_str(t, "key"), *eff = json_str(t, "effect");
		if ((!k || !*k || !strcmp(k, key)) && (!eff || !*eff || !strcmp(eff, "NoExecute")))
			return true;
	}
	return false;
}

static void default_tolerations(json_t *spec)
{
	static const char *const keys[] = { TAINT_NOT_READY, TAINT_UNREACHABLE };
	json_t *tols = json_object_get(spec, "tolerations");
	if (tols && !json_is_array(tols) && !json_is_null(tols))
		return; /* validation reports it */
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		if (has_toleration_for(tols, keys[i]))
			continue;
		if (!json_is_array(tols)) {
			tols = json_array();
			json_object_set_new(spec, "tolerations", tols);
		}
		json_t *t = json_object(); /* not json_pack: every pod create comes here twice */
		json_object_set_new(t, "key", json_string(keys[i]));
		json_object_set_new(t, "operator", json_string("Exists"));
		json_object_set_new(t, "effect", json_string("NoExecute"));
		json_object_set_new(t, "tolerationSeconds", json_integer(DEFAULT_TOLERATION_SECONDS));
		json_array_append_new(tols, t);
	}
}

/* Priority admission with the two built-in classes and no global default class. */
static void default_priority(json_t *spec)
{
	const char *pc = json_str(spec, "priorityClassName");
	long long prio = 0;
	if (pc && !strcmp(pc, "system-node-critical"))
		prio = 2000001000;
	else if (pc && !strcmp(pc, "system-cluster-critical"))
		prio = 2000000000;
	default_int(spec, "priority", prio);
	default_str(spec, "preemptionPolicy", "PreemptLowerPriority");
}

/* serviceAccountName and its deprecated alias serviceAccount mirror each other; pods get the
 * namespace's "default" account (ServiceAccount admission). */
static void default_service_account(json_t *spec, bool is_pod)
{
	const char *sa = json_str(spec, "serviceAccountName");
	if (!sa || !*sa)
		sa = json_str(spec, "serviceAccount");
	if ((!sa || !*sa) && is_pod)
		sa = "default";
	if (!sa || !*sa)
		return;
	char *copy = xstrdup(sa);
	default_str(spec, "serviceAccountName", copy);
	default_str(spec, "serviceAccount", copy);
	free(copy);
}

void pod_spec_defaults(json_t *spec, enum pod_spec_owner owner)
{
	bool is_pod = owner == PODSPEC_POD;
	if (!json_is_object(spec))
		return;
	default_str(spec, "restartPolicy", "Always");
	default_str(spec, "dnsPolicy", "ClusterFirst");
	default_int(spec, "terminationGracePeriodSeconds", 30);
	default_str(spec, "schedulerName", "default-scheduler");
	default_obj(spec, "securityContext");
	containers_defaults(json_object_get(spec, "initContainers"));
	containers_defaults(json_object_get(spec, "containers"));
	default_service_account(spec, is_pod);
	if (!is_pod)
		return;
	default_bool(spec, "enableServiceLinks", true);
	size_t i;
	json_t *c;
	json_array_foreach(json_object_get(spec, "containers"), i, c)
		if (json_is_object(c))
			requests_from_limits(c);
	json_array_foreach(json_object_get(spec, "initContainers"), i, c)
		if (json_is_object(c))
			requests_from_limits(c);
	default_tolerations(spec);
	default_priority(spec);
}

/* ---- quantities ---- */

#define SAT ((__int128)INT64_MAX)
#define BIG ((__int128)1e36)

static __int128 sat_mul(__int128 v, __int128 m)
{
	if (v == 0)
		return 0;
	return v > SAT / m ? SAT : v * m;
}

/* Suffix -> (power of ten, power of two); false if not a known suffix. */
static bool parse_suffix(const char *s, int *ret_e10, int *ret_e2)
{
	static const struct { const char *s; int e10, e2; } tab[] = {
		{ "", 0, 0 },    { "n", -9, 0 },  { "u", -6, 0 },  { "m", -3, 0 },  { "k", 3, 0 },
		{ "M", 6, 0 },   { "G", 9, 0 },   { "T", 12, 0 },  { "P", 15, 0 },  { "E", 18, 0 },
		{ "Ki", 0, 10 }, { "Mi", 0, 20 }, { "Gi", 0, 30 }, { "Ti", 0, 40 }, { "Pi", 0, 50 },
		{ "Ei", 0, 60 },
	};
	for (size_t i = 0; i < ARRAY_SIZE(tab); i++) {
		if (!strcmp(s, tab[i].s)) {
			*ret_e10 = tab[i].e10;
			*ret_e2 = tab[i].e2;
			return true;
		}
	}
	if ((s[0] == 'e' || s[0] == 'E') && s[1]) {
		long long e;
		if (parse_int64(s + 1, &e) != 0 || e < -30 || e > 30)
			return false;
		*ret_e10 = (int)e;
		*ret_e2 = 0;
		return true;
	}
	return false;
}

int quantity_parse_milli(const char *s, long long *ret_milli)
{
	const char *p = s;
	bool neg = false, dot = false;
	__int128 mant = 0;
	int digits = 0, scale = 0; /* value = mant * 10^scale * 2^e2 * 10^e10 */
	int e10, e2;
	if (!s || strlen(s) > 64)
		return -1;
	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	for (; (*p >= '0' && *p <= '9') || (*p == '.' && !dot); p++) {
		if (*p == '.') {
			dot = true;
			continue;
		}
		digits++;
		if (mant < (__int128)1e30) {
			mant = mant * 10 + (*p - '0');
			scale -= dot;
		} else if (!dot) {
			scale++; /* too many digits: keep the magnitude, drop the precision */
		}
	}
	if (digits == 0 || !parse_suffix(p, &e10, &e2))
		return -1;
	int exp = scale + e10 + 3;
	__int128 v = mant;
	for (int i = 0; i < e2; i++)
		v = v > BIG ? BIG : v * 2;
	for (; exp > 0; exp--)
		v = sat_mul(v, 10);
	if (exp < 0) {
		__int128 div = 1;
		for (; exp < 0 && div < BIG; exp++)
			div *= 10;
		v = exp < 0 ? (v ? 1 : 0) : (v + div - 1) / div; /* round up, as MilliValue does */
	}
	if (v > SAT)
		v = SAT;
	*ret_milli = neg ? -(long long)v : (long long)v;
	return 0;
}

/* A quantity given as a JSON string or number. */
static int quantity_json_milli(const json_t *v, long long *ret_milli)
{
	if (json_is_string(v))
		return quantity_parse_milli(json_string_value(v), ret_milli);
	if (json_is_integer(v)) {
		long long i = (long long)json_integer_value(v);
		*ret_milli = i > INT64_MAX / 1000 ? INT64_MAX : i < -(INT64_MAX / 1000) ? -INT64_MAX : i * 1000;
		return 0;
	}
	return -1;
}

/* ---- QoS ---- */

struct qos_sum {
	long long req[2], lim[2]; /* cpu, memory in milli-units, saturating */
	bool has_req[2], has_lim[2];
	bool guaranteed;
};

static int qos_index(const char *name)
{
	return !strcmp(name, "cpu") ? 0 : !strcmp(name, "memory") ? 1 : -1;
}

static void qos_add(long long *sum, long long v)
{
	*sum = *sum > INT64_MAX - v ? INT64_MAX : *sum + v;
}

static void qos_container(struct qos_sum *q, const json_t *c)
{
	const json_t *res = json_object_get(c, "resources");
	bool lim_found[2] = { false, false };
	const char *k;
	json_t *v;
	long long m;
	json_object_foreach(json_object_get(res, "requests"), k, v) {
		int i = qos_index(k);
		if (i >= 0 && quantity_json_milli(v, &m) == 0 && m > 0) {
			qos_add(&q->req[i], m);
			q->has_req[i] = true;
		}
	}
	json_object_foreach(json_object_get(res, "limits"), k, v) {
		int i = qos_index(k);
		if (i >= 0 && quantity_json_milli(v, &m) == 0 && m > 0) {
			qos_add(&q->lim[i], m);
			q->has_lim[i] = lim_found[i] = true;
		}
	}
	if (!lim_found[0] || !lim_found[1])
		q->guaranteed = false;
}

const char *pod_spec_qos_class(const json_t *spec)
{
	struct qos_sum q = { .guaranteed = true };
	static const char *const lists[] = { "initContainers", "containers" };
	for (size_t l = 0; l < ARRAY_SIZE(lists); l++) {
		size_t i;
		json_t *c;
		json_array_foreach(json_object_get(spec, lists[l]), i, c)
			qos_container(&q, c);
	}
	if (!q.has_req[0] && !q.has_req[1] && !q.has_lim[0] && !q.has_lim[1])
		return "BestEffort";
	for (int i = 0; i < 2 && q.guaranteed; i++)
		if (q.has_req[i] && (!q.has_lim[i] || q.req[i] != q.lim[i]))
			q.guaranteed = false;
	if (q.guaranteed && q.has_req[0] == q.has_lim[0] && q.has_req[1] == q.has_lim[1])
		return "Guaranteed";
	return "Burstable";
}

/* ---- validation ---- */

struct names {
	const char **v;
	size_t n, cap;
};

static bool names_has(const struct names *ns, const char *s)
{
	for (size_t i = 0; i < ns->n; i++)
		if (!strcmp(ns->v[i], s))
			return true;
	return false;
}

static void names_add(struct names *ns, const char *s)
{
	if (ns->n == ns->cap) {
		ns->cap = ns->cap ? ns->cap * 2 : 8;
		ns->v = xrealloc(ns->v, ns->cap * sizeof(*ns->v));
	}
	ns->v[ns->n++] = s;
}

struct spec_ctx {
	const char *path;
	enum pod_spec_owner owner;
	struct field_errors *errs;
	struct names containers; /* names across initContainers and containers */
	struct names volumes;
};

static const char *const pull_policies[] = { "Always", "IfNotPresent", "Never", NULL };
static const char *const protocols[] = { "SCTP", "TCP", "UDP", NULL };

static void check_enum(const json_t *obj, const char *key, const char *field, const char *const *allowed,
		       struct field_errors *errs)
{
	const json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		return;
	const char *s = json_string_value(v);
	if (!s) {
		field_error_type(errs, field, "a string");
		return;
	}
	for (size_t i = 0; allowed[i]; i++)
		if (!strcmp(s, allowed[i]))
			return;
	field_error_not_supported(errs, field, s, allowed);
}

static void check_port_number(const json_t *v, const char *field, bool required, bool zero_ok,
			      struct field_errors *errs)
{
	if (!v || json_is_null(v)) {
		if (required)
			field_error_required(errs, field);
		return;
	}
	if (!json_is_integer(v)) {
		field_error_type(errs, field, "an integer");
		return;
	}
	long long p = (long long)json_integer_value(v);
	if ((p == 0 && !zero_ok) || p < 0 || p > 65535)
		field_error_invalid_int(errs, field, p, "must be between 1 and 65535, inclusive");
}

static void validate_ports(const json_t *ports, const char *path, struct field_errors *errs)
{
	struct names seen = { 0 };
	size_t i;
	json_t *p;
	json_array_foreach(ports, i, p) {
		char *base = xasprintf("%s[%zu]", path, i);
		char *f = xasprintf("%s.containerPort", base);
		check_port_number(json_object_get(p, "containerPort"), f, true, false, errs);
		free(f);
		f = xasprintf("%s.hostPort", base);
		check_port_number(json_object_get(p, "hostPort"), f, false, true, errs);
		free(f);
		f = xasprintf("%s.protocol", base);
		check_enum(p, "protocol", f, protocols, errs);
		free(f);
		const char *name = json_str(p, "name");
		if (name && *name) {
			f = xasprintf("%s.name", base);
			if (iana_svc_name_error(name))
				field_error_invalid(errs, f, name, "%s", iana_svc_name_error(name));
			else if (names_has(&seen, name))
				field_error_duplicate(errs, f, name);
			else
				names_add(&seen, name);
			free(f);
		}
		free(base);
	}
	free(seen.v);
}

static bool valid_env_name(const char *s)
{
	if (!*s || (*s >= '0' && *s <= '9'))
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      *s == '_' || *s == '-' || *s == '.'))
			return false;
	return true;
}

static void validate_env(const json_t *env, const char *path, struct field_errors *errs)
{
	size_t i;
	json_t *e;
	json_array_foreach(env, i, e) {
		const char *name = json_str(e, "name");
		if (name && *name && valid_env_name(name))
			continue; /* the path only for an error: a pod may have dozens of variables */
		char *f = xasprintf("%s[%zu].name", path, i);
		if (!name || !*name)
			field_error_required(errs, f);
		else
			field_error_invalid(errs, f, name,
					    "a valid environment variable name must consist of alphabetic characters, "
					    "digits, '_', '-', or '.', and must not start with a digit (e.g. "
					    "'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for "
					    "validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')");
		free(f);
	}
}

static void validate_quantity_map(const json_t *map, const char *path, struct field_errors *errs)
{
	const char *k;
	json_t *v;
	if (map && !json_is_null(map) && !json_is_object(map)) {
		field_error_type(errs, path, "an object");
		return;
	}
	json_object_foreach((json_t *)map, k, v) {
		long long m;
		char *f = xasprintf("%s[%s]", path, k);
		const char *shown = json_is_string(v) ? json_string_value(v) : "";
		if (quantity_json_milli(v, &m) != 0)
			field_error_invalid(errs, f, shown,
					    "quantities must match the regular expression "
					    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
		else if (m < 0)
			field_error_invalid(errs, f, shown, "must be greater than or equal to 0");
		free(f);
	}
}

static void validate_resources(const json_t *res, const char *path, struct field_errors *errs)
{
	if (!res || json_is_null(res))
		return;
	if (!json_is_object(res)) {
		field_error_type(errs, path, "an object");
		return;
	}
	const json_t *req = json_object_get(res, "requests"), *lim = json_object_get(res, "limits");
	char *f = xasprintf("%s.requests", path);
	validate_quantity_map(req, f, errs);
	char *fl = xasprintf("%s.limits", path);
	validate_quantity_map(lim, fl, errs);
	free(fl);
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)(json_is_object(req) ? req : NULL), k, v) {
		long long r, l;
		json_t *lv = json_object_get(lim, k);
		if (!lv || quantity_json_milli(v, &r) || quantity_json_milli(lv, &l) || r <= l)
			continue;
		char *fk = xasprintf("%s[%s]", f, k);
		field_error_invalid(errs, fk, json_is_string(v) ? json_string_value(v) : "",
				    "must be less than or equal to %s limit of %s", k,
				    json_is_string(lv) ? json_string_value(lv) : "the limit");
		free(fk);
	}
	free(f);
}

static void validate_mounts(struct spec_ctx *cx, const json_t *mounts, const char *path)
{
	size_t i;
	json_t *m;
	json_array_foreach(mounts, i, m) {
		const char *name = json_str(m, "name"), *mp = json_str(m, "mountPath");
		char *f = xasprintf("%s[%zu].name", path, i);
		if (!name || !*name)
			field_error_required(cx->errs, f);
		else if (!names_has(&cx->volumes, name))
			field_error_not_found(cx->errs, f, name);
		free(f);
		if (!mp || !*mp) {
			f = xasprintf("%s[%zu].mountPath", path, i);
			field_error_required(cx->errs, f);
			free(f);
		}
	}
}

static void validate_container(struct spec_ctx *cx, const json_t *c, const char *base)
{
	static const char *const msg_policies[] = { "File", "FallbackToLogsOnError", NULL };
	struct field_errors *errs = cx->errs;
	char *f = xasprintf("%s.name", base);
	const char *name = json_str(c, "name");
	if (!name || !*name)
		field_error_required(errs, f);
	else if (dns1123_label_error(name))
		field_error_invalid(errs, f, name, "%s", dns1123_label_error(name));
	else if (names_has(&cx->containers, name))
		field_error_duplicate(errs, f, name);
	else
		names_add(&cx->containers, name);
	free(f);

	const json_t *image = json_object_get(c, "image");
	f = xasprintf("%s.image", base);
	if (image && !json_is_null(image) && !json_is_string(image))
		field_error_type(errs, f, "a string");
	else if (cx->owner == PODSPEC_POD && (!image || json_string_length(image) == 0))
		field_error_required(errs, f);
	free(f);

	f = xasprintf("%s.imagePullPolicy", base);
	check_enum(c, "imagePullPolicy", f, pull_policies, errs);
	free(f);
	f = xasprintf("%s.terminationMessagePolicy", base);
	check_enum(c, "terminationMessagePolicy", f, msg_policies, errs);
	free(f);
	f = xasprintf("%s.ports", base);
	validate_ports(json_object_get(c, "ports"), f, errs);
	free(f);
	f = xasprintf("%s.env", base);
	validate_env(json_object_get(c, "env"), f, errs);
	free(f);
	f = xasprintf("%s.resources", base);
	validate_resources(json_object_get(c, "resources"), f, errs);
	free(f);
	f = xasprintf("%s.volumeMounts", base);
	validate_mounts(cx, json_object_get(c, "volumeMounts"), f);
	free(f);
}

static void validate_container_list(struct spec_ctx *cx, const json_t *spec, const char *key, bool required)
{
	const json_t *list = json_object_get(spec, key);
	char *path = xasprintf("%s.%s", cx->path, key);
	if (list && !json_is_null(list) && !json_is_array(list)) {
		field_error_type(cx->errs, path, "an array");
	} else if (json_array_size(list) == 0) {
		if (required)
			field_error_required(cx->errs, path);
	} else {
		size_t i;
		json_t *c;
		json_array_foreach(list, i, c) {
			char *base = xasprintf("%s[%zu]", path, i);
			if (!json_is_object(c))
				field_error_type(cx->errs, base, "an object");
			else
				validate_container(cx, c, base);
			free(base);
		}
	}
	free(path);
}

static void validate_volumes(struct spec_ctx *cx, const json_t *vols)
{
	size_t i;
	json_t *v;
	json_array_foreach(vols, i, v) {
		const char *name = json_str(v, "name");
		char *f = xasprintf("%s.volumes[%zu].name", cx->path, i);
		if (!name || !*name)
			field_error_required(cx->errs, f);
		else if (dns1123_label_error(name))
			field_error_invalid(cx->errs, f, name, "%s", dns1123_label_error(name));
		else if (names_has(&cx->volumes, name))
			field_error_duplicate(cx->errs, f, name);
		else
			names_add(&cx->volumes, name);
		free(f);
	}
}

static void validate_toleration(const json_t *t, const char *base, struct field_errors *errs)
{
	static const char *const ops[] = { "Equal", "Exists", NULL };
	static const char *const effects[] = { "NoSchedule", "PreferNoSchedule", "NoExecute", NULL };
	const char *key = json_str(t, "key"), *op = json_str(t, "operator"), *value = json_str(t, "value");
	const char *effect = json_str(t, "effect");
	char *f;
	if (!op || !*op)
		op = "Equal";
	if (key && *key && label_key_why(key)) {
		f = xasprintf("%s.key", base);
		field_error_invalid(errs, f, key, "%s", label_key_why(key));
		free(f);
	}
	f = xasprintf("%s.operator", base);
	if (strcmp(op, "Equal") && strcmp(op, "Exists"))
		field_error_not_supported(errs, f, op, ops);
	else if ((!key || !*key) && strcmp(op, "Exists"))
		field_error_invalid(errs, f, op,
				    "operator must be Exists when `key` is empty, which means \"match all values "
				    "and all keys\"");
	else if (!strcmp(op, "Exists") && value && *value)
		field_error_invalid(errs, f, value, "value must be empty when `operator` is 'Exists'");
	free(f);
	f = xasprintf("%s.effect", base);
	if (effect && *effect)
		check_enum(t, "effect", f, effects, errs);
	if (json_object_get(t, "tolerationSeconds") && (!effect || strcmp(effect, "NoExecute")))
		field_error_invalid(errs, f, effect ? effect : "",
				    "effect must be 'NoExecute' when `tolerationSeconds` is set");
	free(f);
}

static void validate_spec_scalars(struct spec_ctx *cx, const json_t *spec)
{
	static const char *const restart[] = { "Always", "OnFailure", "Never", NULL };
	static const char *const dns[] = { "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None", NULL };
	struct field_errors *errs = cx->errs;
	char *f = xasprintf("%s.restartPolicy", cx->path);
	check_enum(spec, "restartPolicy", f, restart, errs);
	free(f);
	f = xasprintf("%s.dnsPolicy", cx->path);
	check_enum(spec, "dnsPolicy", f, dns, errs);
	free(f);
	f = xasprintf("%s.terminationGracePeriodSeconds", cx->path);
	validate_nonnegative(json_object_get(spec, "terminationGracePeriodSeconds"), f, errs);
	free(f);
	f = xasprintf("%s.activeDeadlineSeconds", cx->path);
	validate_positive(json_object_get(spec, "activeDeadlineSeconds"), f, errs);
	free(f);
	f = xasprintf("%s.nodeSelector", cx->path);
	validate_labels(json_object_get(spec, "nodeSelector"), f, errs);
	free(f);
	const json_t *hn = json_object_get(spec, "hostNetwork");
	if (hn && !json_is_null(hn) && !json_is_boolean(hn)) {
		f = xasprintf("%s.hostNetwork", cx->path);
		field_error_type(errs, f, "a boolean");
		free(f);
	}
	const char *node = json_str(spec, "nodeName");
	if (node && *node && dns1123_subdomain_error(node)) {
		f = xasprintf("%s.nodeName", cx->path);
		field_error_invalid(errs, f, node, "%s", dns1123_subdomain_error(node));
		free(f);
	}
}

void pod_spec_validate(const json_t *spec, const char *path, enum pod_spec_owner owner, struct field_errors *errs)
{
	struct spec_ctx cx = { .path = path, .owner = owner, .errs = errs };
	if (!json_is_object(spec)) {
		field_error_required(errs, path);
		return;
	}
	validate_volumes(&cx, json_object_get(spec, "volumes"));
	validate_container_list(&cx, spec, "initContainers", false);
	validate_container_list(&cx, spec, "containers", true);
	validate_spec_scalars(&cx, spec);
	size_t i;
	json_t *t;
	json_array_foreach(json_object_get(spec, "tolerations"), i, t) {
		char *base = xasprintf("%s.tolerations[%zu]", path, i);
		validate_toleration(t, base, errs);
		free(base);
	}
	free(cx.containers.v);
	free(cx.volumes.v);
}

const char *pod_qos_class(const json_t *pod)
{
	return pod_spec_qos_class(json_object_get(pod, "spec"));
}
