/* The spec of an authentication.k8s.io/v1 TokenRequest (POST serviceaccounts/<name>/token):
 * parsed and validated here, signed by the API server (apiserver/tokens.c). */
#ifndef URSA_TOKENREQ_H
#define URSA_TOKENREQ_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define TOKENREQ_DEFAULT_S 3600          /* spec.expirationSeconds when absent */
#define TOKENREQ_MIN_S 600               /* less is refused (as Kubernetes: 10 minutes) */
#define TOKENREQ_MAX_S (48 * 3600)       /* more is cut to this (Kubernetes' max-token-expiration) */
#define TOKENREQ_AUDIENCES_MAX 32

struct tokenreq {
	char **audiences;     /* owned; none asked: one, API_AUDIENCE */
	size_t naudiences;
	int64_t expiration_s; /* defaulted and cut to TOKENREQ_MAX_S */
	/* spec.boundObjectRef: kind "Pod" or "Secret" (apiVersion v1) and name, or all NULL; uid
	 * NULL when not given (any object of that name). Owned. */
	char *bound_kind, *bound_name, *bound_uid;
};

/* Parses spec (borrowed; NULL or absent fields take their defaults) into *ret (written only on
 * success). 0, or E_INVALID with a new message in *ret_err in Kubernetes' form "<field>: <why>"
 * (e.g. "spec.expirationSeconds: Invalid value: 10: may not specify a duration less than 10
 * minutes"). */
int tokenreq_parse(const json_t *spec, struct tokenreq *ret, char **ret_err);
void tokenreq_release(struct tokenreq *r);

#endif
