/* CRI client over a unix socket: unary gRPC (ursa/grpc.h) with protobuf-c messages. See
 * ursa/cri.h for the contract. */
#include "ursa/cri.h"
#include "ursa/errors.h"
#include "ursa/grpc.h"
#include "ursa/xalloc.h"
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

struct cri {
	char *socket_path;
	long timeout_ms;
	long pull_timeout_ms;
	struct curl_pool handles;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

const char *cri_socket_path(const char *endpoint)
{
	const char *p;

	if (!endpoint)
		return NULL;
	p = strncmp(endpoint, "unix://", 7) == 0 ? endpoint + 7 : endpoint;
	if (p[0] != '/' || strlen(p) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return NULL;
	return p;
}

/* ---- handles ---- */

/* Idle handles kept: a handle holds a 100 KB receive buffer; bursts (a pool of pod starts, stops
 * on threads of their own) make more, which are cleaned up when given back. */
#define CRI_IDLE_HANDLES 8

static void handle_setup(void *ud, CURL *h)
{
	const struct cri *c = ud;
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, c->socket_path);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http");
	curl_easy_setopt(h, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
	/* one connection per call: see ursa/cri.h */
	curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 1L);
	curl_easy_setopt(h, CURLOPT_FORBID_REUSE, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->timeout_ms);
	curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 102400L);
}

struct cri *cri_open(const char *endpoint, long timeout_ms)
{
	const char *path = cri_socket_path(endpoint);
	struct cri *c;

	if (!path)
		return NULL;
	pthread_once(&curl_once, curl_init_once);
	c = xcalloc(1, sizeof(*c));
	c->socket_path = xstrdup(path);
	c->timeout_ms = timeout_ms > 0 ? timeout_ms : 10000;
	c->pull_timeout_ms = c->timeout_ms > CRI_PULL_TIMEOUT_MS ? c->timeout_ms : CRI_PULL_TIMEOUT_MS;
	curl_pool_init(&c->handles, CRI_IDLE_HANDLES, handle_setup, c);
	return c;
}

void cri_close(struct cri *c)
{
	if (!c)
		return;
	curl_pool_release(&c->handles);
	free(c->socket_path);
	free(c);
}

void cri_free(void *resp)
{
	if (resp)
		protobuf_c_message_free_unpacked(resp, NULL);
}

ProtobufCMessage *cri_unpack(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len)
{
	if (len > CRI_MAX_MESSAGE)
		return NULL;
	return protobuf_c_message_unpack(desc, NULL, len, data);
}

/* ---- calls ---- */

static void set_err(struct cri_err *err, int64_t code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_err(struct cri_err *err, int64_t code, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return;
	err->grpc_code = code;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
}

/* One exchange on h; 0 with the message viewed in x->body, or E_*. */
static int exchange(CURL *h, struct grpc_exchange *x, const char *method, struct cri_err *err)
{
	const uint8_t *msg;
	size_t len;
	int rc;

	grpc_exchange_perform(h, x);
	if (x->cc != CURLE_OK && !(x->status.has_code && x->status.code != 0)) {
		if (x->too_big) {
			set_err(err, -1, "%s: response over %zu bytes", method, x->max_body);
			return E_INTERNAL;
		}
		set_err(err, -1, "%s: %s", method, curl_easy_strerror(x->cc));
		return x->cc == CURLE_OPERATION_TIMEDOUT ? E_TIMEOUT : E_UNAVAILABLE;
	}
	rc = grpc_exchange_outcome(x, NULL, &msg, &len);
	if (rc < 0) {
		if (x->status.has_code)
			set_err(err, x->status.code, "%s", buf_cstr(&x->status.message));
		else
			set_err(err, -1, "%s: HTTP status %ld without a gRPC status", method, x->http_status);
	}
	return rc;
}

int cri_call(struct cri *c, const char *method, const ProtobufCMessage *req, const ProtobufCMessageDescriptor *resp_desc,
	     long timeout_ms, ProtobufCMessage **ret_resp, struct cri_err *err)
{
	struct grpc_exchange x = { .max_body = CRI_MAX_MESSAGE + GRPC_PREFIX };
	struct buf framed = BUF_INIT;
	struct curl_slist *headers;
	char *url = xasprintf("http://localhost%s", method);
	size_t n = protobuf_c_message_get_packed_size(req);
	ProtobufCMessage *resp = NULL;
	const uint8_t *msg;
	size_t len;
	CURL *h;
	int rc;

	if (ret_resp)
		*ret_resp = NULL;
	if (err) {
		err->grpc_code = -1;
		err->message[0] = '\0';
	}
	if (timeout_ms <= 0)
		timeout_ms = c->timeout_ms;
	/* pack straight behind the 5-byte prefix */
	grpc_frame(&framed, "", 0);
	buf_grow(&framed, n);
	protobuf_c_message_pack(req, (uint8_t *)framed.ptr + GRPC_PREFIX);
	framed.len += n;
	framed.ptr[framed.len] = '\0';
	framed.ptr[1] = (char)(n >> 24);
	framed.ptr[2] = (char)(n >> 16);
	framed.ptr[3] = (char)(n >> 8);
	framed.ptr[4] = (char)n;
	headers = grpc_headers(NULL, timeout_ms);
	x.url = url;
	x.framed = &framed;
	h = curl_pool_take(&c->handles);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
	rc = exchange(h, &x, method, err);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
	curl_pool_give(&c->handles, h);
	if (rc == 0) {
		grpc_unframe(x.body.ptr, x.body.len, CRI_MAX_MESSAGE, &msg, &len);
		resp = cri_unpack(resp_desc, msg, len);
		if (!resp) {
			set_err(err, -1, "%s: malformed %s", method, resp_desc->name);
			rc = E_INTERNAL;
		}
	}
	if (ret_resp)
		*ret_resp = resp;
	else
		cri_free(resp);
	grpc_exchange_release(&x);
	curl_slist_free_all(headers);
	buf_release(&framed);
	free(url);
	return rc;
}

#define CRI_DEFINE(fn, svc, method, Req, Resp, resp_lc, timeout)                                            \
	CRI_DECLARE(fn, Req, Resp)                                                                          \
	{                                                                                                   \
		return cri_call(c, "/runtime.v1." svc "/" method, &req->base,                             \
				&runtime__v1__##resp_lc##__descriptor, (timeout), (ProtobufCMessage **)ret, err); \
	}

#define RT "RuntimeService"
#define IMG "ImageService"
CRI_DEFINE(cri_version, RT, "Version", VersionRequest, VersionResponse, version_response, 0)
CRI_DEFINE(cri_status, RT, "Status", StatusRequest, StatusResponse, status_response, 0)
CRI_DEFINE(cri_run_pod_sandbox, RT, "RunPodSandbox", RunPodSandboxRequest, RunPodSandboxResponse,
	   run_pod_sandbox_response, 0)
CRI_DEFINE(cri_stop_pod_sandbox, RT, "StopPodSandbox", StopPodSandboxRequest, StopPodSandboxResponse,
	   stop_pod_sandbox_response, 0)
CRI_DEFINE(cri_remove_pod_sandbox, RT, "RemovePodSandbox", RemovePodSandboxRequest, RemovePodSandboxResponse,
	   remove_pod_sandbox_response, 0)
CRI_DEFINE(cri_pod_sandbox_status, RT, "PodSandboxStatus", PodSandboxStatusRequest, PodSandboxStatusResponse,
	   pod_sandbox_status_response, 0)
CRI_DEFINE(cri_list_pod_sandbox, RT, "ListPodSandbox", ListPodSandboxRequest, ListPodSandboxResponse,
	   list_pod_sandbox_response, 0)
CRI_DEFINE(cri_create_container, RT, "CreateContainer", CreateContainerRequest, CreateContainerResponse,
	   create_container_response, 0)
CRI_DEFINE(cri_start_container, RT, "StartContainer", StartContainerRequest, StartContainerResponse,
	   start_container_response, 0)
/* StopContainer waits up to req->timeout seconds for the container: the call gets that long on top */
CRI_DEFINE(cri_stop_container, RT, "StopContainer", StopContainerRequest, StopContainerResponse,
	   stop_container_response, req->timeout > 0 && req->timeout < 86400 ? c->timeout_ms + req->timeout * 1000 : 0)
CRI_DEFINE(cri_remove_container, RT, "RemoveContainer", RemoveContainerRequest, RemoveContainerResponse,
	   remove_container_response, 0)
CRI_DEFINE(cri_list_containers, RT, "ListContainers", ListContainersRequest, ListContainersResponse,
	   list_containers_response, 0)
CRI_DEFINE(cri_container_status, RT, "ContainerStatus", ContainerStatusRequest, ContainerStatusResponse,
	   container_status_response, 0)
/* ExecSync waits up to req->timeout seconds for the command: the call gets that long on top */
CRI_DEFINE(cri_exec_sync, RT, "ExecSync", ExecSyncRequest, ExecSyncResponse, exec_sync_response,
	   req->timeout > 0 && req->timeout < 86400 ? c->timeout_ms + req->timeout * 1000 : 0)
CRI_DEFINE(cri_exec, RT, "Exec", ExecRequest, ExecResponse, exec_response, 0)
CRI_DEFINE(cri_attach, RT, "Attach", AttachRequest, AttachResponse, attach_response, 0)
CRI_DEFINE(cri_port_forward, RT, "PortForward", PortForwardRequest, PortForwardResponse, port_forward_response, 0)
CRI_DEFINE(cri_list_images, IMG, "ListImages", ListImagesRequest, ListImagesResponse, list_images_response, 0)
CRI_DEFINE(cri_image_status, IMG, "ImageStatus", ImageStatusRequest, ImageStatusResponse, image_status_response, 0)
CRI_DEFINE(cri_pull_image, IMG, "PullImage", PullImageRequest, PullImageResponse, pull_image_response,
	   c->pull_timeout_ms)
CRI_DEFINE(cri_remove_image, IMG, "RemoveImage", RemoveImageRequest, RemoveImageResponse, remove_image_response, 0)
CRI_DEFINE(cri_image_fs_info, IMG, "ImageFsInfo", ImageFsInfoRequest, ImageFsInfoResponse, image_fs_info_response, 0)
