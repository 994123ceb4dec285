#ifndef URSA_RM_H
#define URSA_RM_H
#include "ursa/api.h"
#include "ursa/apiserver.h"

extern const struct api_resource rm_resources[];
extern const size_t rm_nresources;


#endif
