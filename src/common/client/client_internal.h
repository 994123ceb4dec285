/* Internals of the client library shared between its files, its unit tests and its fuzz
 * target: a string-keyed hash map, the watch-stream line splitter and event parser, and the
 * extended REST constructor used by the kubeconfig loader. */
#ifndef URSA_CLIENT_INTERNAL_H
#define URSA_CLIENT_INTERNAL_H
#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ursa/buf.h"
#include "ursa/strmap.h"
#include "ursa/client.h"


/* Watch stream ------------------------------------------------------------------------------ */
#define WATCH_MAX_LINE (16u << 20)  /* one event's JSON; larger ones break the stream */
#define WATCH_MAX_DEPTH 64

/* Splits a byte stream that arrives in arbitrary chunks into '\n'-terminated lines. */
struct watch_lines {
	struct buf partial; /* bytes of the line not yet terminated */
	size_t max_line;    /* 0 means WATCH_MAX_LINE */
};
void watch_lines_init(struct watch_lines *wl);
void watch_lines_release(struct watch_lines *wl);
/* Feeds a chunk; calls on_line(ud, line, len) for every complete line (without the '\n' and
 * a trailing '\r'; empty lines are skipped). Stops and returns on_line's non-zero result, or
 * E_TOO_LARGE if a line grows past the cap (the splitter is then reset). 0 otherwise. */
int watch_lines_feed(struct watch_lines *wl, const char *data, size_t len,
		     int (*on_line)(void *ud, const char *line, size_t len), void *ud);

enum watch_event_type { WEV_ADDED, WEV_MODIFIED, WEV_DELETED, WEV_BOOKMARK, WEV_ERROR };
struct watch_event {
	enum watch_event_type type;
	json_t *object; /* new reference, always a JSON object */
};
/* Parses one line {"type":...,"object":{...}}. 0 on success (ev->object is a new reference),
 * E_BAD_REQUEST if the line is not such an event. */
int watch_event_parse(const char *line, size_t len, struct watch_event *ev);
const char *watch_event_type_name(enum watch_event_type t);
/* True when an ERROR event's Status says the resourceVersion is too old (410 Expired/Gone). */
bool watch_status_expired(const json_t *status);

/* REST ---------------------------------------------------------------------------------------- */
/* Settings beyond struct rest_config (from a kubeconfig). Blobs are copied. */
struct rest_extra {
	const void *ca_blob; /* PEM bundle in memory */
	size_t ca_blob_len;
	const void *cert_blob; /* client certificate PEM */
	size_t cert_blob_len;
	const void *key_blob; /* client key PEM */
	size_t key_blob_len;
	bool insecure; /* skip TLS verification */
};
struct rest_client *rest_new_ext(const struct rest_config *cfg, const struct rest_extra *extra);

/* The REST client's state and the steps of one request, shared by the blocking requests
 * (rest.c) and the asynchronous ones (async.c). */
#define REST_MAX_SERVERS 16
/* Idle handles kept in the pool: as many as a client's concurrent callers (the scheduler runs up
 * to 256 workers), else every burst closes connections and opens new ones (TLS handshakes). */
#define REST_MAX_IDLE 256
#define REST_MAX_RESPONSE (512u << 20)    /* bytes of one non-streaming response */
#define REST_MAX_JSON_DEPTH 128
#define REST_CONNECT_TIMEOUT_MS 3000L
#define REST_STREAM_POLL_MS 50

struct rest_client {
	char **servers;
	size_t nservers;
	atomic_size_t preferred; /* the server that answered last */
	char *auth_header;
	char *ca_file;
	char *user_agent;
	long timeout_ms;
	struct buf ca_blob, cert_blob, key_blob;
	bool insecure;
	pthread_mutex_t lock;
	CURL **idle;
	size_t nidle;
	/* Header lists every request without a body, or with a JSON body, sends: built once. */
	struct curl_slist *hdr_plain, *hdr_json;
};

void rest_setup_handle(struct rest_client *c, CURL *h);
void rest_setup_request(CURL *h, const char *url, struct curl_slist *headers, long timeout_ms,
			curl_write_callback on_data, void *ud);
void rest_set_method(CURL *h, const char *method, const char *body, size_t len);
bool rest_not_delivered(CURL *h, CURLcode rc, bool idempotent);
struct rest_sink {
	struct buf *out;
	size_t total;
	bool overflow;
};

size_t rest_on_body(char *data, size_t size, size_t n, void *ud);
char *rest_make_url(struct rest_client *c, size_t idx, const char *path);
struct curl_slist *rest_make_headers(struct rest_client *c, const char *content_type, bool has_body);
CURL *rest_pool_get(struct rest_client *c);
void rest_pool_put(struct rest_client *c, CURL *h);

/* Informer internals for tests: how many complete lists and watch requests it made. */
void informer_counts(struct informer *inf, unsigned *ret_lists, unsigned *ret_watches);

/* Base64 (standard alphabet, padding optional, whitespace ignored) into out. 0 or -1. */
int base64_decode_buf(const char *s, size_t len, struct buf *out);
/* Converts a YAML document to JSON (mappings → objects, sequences → arrays, scalars →
 * strings). New reference or NULL with a message in ret_err. */
json_t *yaml_doc_to_json(const char *data, size_t len, struct buf *ret_err);

#endif
