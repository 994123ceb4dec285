/* One error table: negative codes that map to an HTTP status and a Kubernetes Status reason.
 * Functions that can fail return 0 or one of these. */
#ifndef URSA_ERRORS_H
#define URSA_ERRORS_H

#define URSA_ERRORS(X)                                                 \
	X(E_BAD_REQUEST,    400, "BadRequest")                         \
	X(E_UNAUTHORIZED,   401, "Unauthorized")                       \
	X(E_FORBIDDEN,      403, "Forbidden")                          \
	X(E_NOT_FOUND,      404, "NotFound")                           \
	X(E_METHOD,         405, "MethodNotAllowed")                   \
	X(E_NOT_ACCEPTABLE, 406, "NotAcceptable")                      \
	X(E_ALREADY_EXISTS, 409, "AlreadyExists")                      \
	X(E_CONFLICT,       409, "Conflict")                           \
	X(E_GONE,           410, "Expired")                            \
	X(E_TOO_LARGE,      413, "RequestEntityTooLarge")              \
	X(E_MEDIA_TYPE,     415, "UnsupportedMediaType")               \
	X(E_INVALID,        422, "Invalid")                            \
	X(E_TOO_MANY,       429, "TooManyRequests")                    \
	X(E_INTERNAL,       500, "InternalError")                      \
	X(E_UNAVAILABLE,    503, "ServiceUnavailable")                 \
	X(E_TIMEOUT,        504, "Timeout")

enum ursa_err {
	E_OK = 0,
#define X(name, code, reason) name,
	E__FIRST_PLACEHOLDER = -1000,
	URSA_ERRORS(X)
#undef X
};

int err_http_code(int err);          /* 500 for unknown codes */
const char *err_reason(int err);     /* "InternalError" for unknown codes */

#endif
