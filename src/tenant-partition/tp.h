#ifndef URSA_TP_H
#define URSA_TP_H
#include "ursa/api.h"
#include "ursa/apiserver.h"

extern const struct api_resource tp_resources[];
extern const size_t tp_nresources;

/* A new Tenant gets its namespaces default, kube-system and kube-public. */
void tp_on_created(struct apiserver *s, const struct api_resource *r, const json_t *obj);

#endif
