/* A client of the Kubernetes Container Runtime Interface (CRI, gRPC package runtime.v1) over a
 * unix socket, as containerd's CRI plugin serves it: unary calls of RuntimeService and
 * ImageService with the protobuf-c messages generated from src/common/cri/cri.proto (types
 * Runtime__V1__*, see the generated cri/cri.pb-c.h in the build tree).
 *
 * Threads: a struct cri may be used by any number of threads at once (each call takes an idle
 * curl handle from a locked pool, or makes one); each call blocks its thread for at most the
 * timeout. cri_close must not run concurrently with calls on the same struct cri.
 *
 * Connections: each call opens its own HTTP/2 connection to the socket (prior knowledge) and
 * closes it afterwards. A unix socket connection costs little, and it avoids libcurl 7.88's
 * trouble with reusing prior-knowledge connections (see src/common/etcd/grpc.c).
 *
 * Errors: every call returns 0 or an E_* code (ursa/errors.h): the runtime's grpc-status mapped
 * by grpc_code_error (NOT_FOUND E_NOT_FOUND, UNAVAILABLE E_UNAVAILABLE, DEADLINE_EXCEEDED
 * E_TIMEOUT, UNIMPLEMENTED E_METHOD, ...); E_UNAVAILABLE when the socket cannot be reached or the
 * connection broke; E_TIMEOUT when the call ran out of time; E_INTERNAL for an answer that is not
 * a well-formed response message. When err is not NULL it receives the details. */
#ifndef URSA_CRI_H
#define URSA_CRI_H
#include <stdint.h>
/* GNU C predefines "linux" as 1; the CRI has fields of that name. The build also passes
 * -Ulinux to every user of ursa_cri. */
#undef linux
#include "cri/cri.pb-c.h"

#define CRI_MAX_MESSAGE ((size_t)16 << 20) /* cap on one response message, as the kubelet's */
#define CRI_PULL_TIMEOUT_MS 600000L         /* PullImage's time limit unless the open one is longer */

struct cri;

/* Details of a failed call. */
struct cri_err {
	int64_t grpc_code; /* the runtime's grpc-status, or -1 when none arrived */
	char message[512]; /* grpc-message, or a description of the transport failure; "" if none */
};

/* endpoint is "unix:///path/to/socket" (or just the absolute path); timeout_ms (> 0, else 10 s)
 * limits each call but PullImage. NULL for a malformed endpoint. Does not connect: the first
 * call finds out whether the runtime is there. */
struct cri *cri_open(const char *endpoint, long timeout_ms);
void cri_close(struct cri *c);

/* Frees a response a call returned (any Runtime__V1__* message from this API); NULL is fine. */
void cri_free(void *resp);

/* The general call: method is "/runtime.v1.<Service>/<Method>", req a packed-able message,
 * resp_desc the response's descriptor. 0 with *ret_resp (free with cri_free; ret_resp may be NULL
 * to drop it), or an E_* code with *ret_resp NULL. timeout_ms 0 means the open timeout. */
int cri_call(struct cri *c, const char *method, const ProtobufCMessage *req, const ProtobufCMessageDescriptor *resp_desc,
	     long timeout_ms, ProtobufCMessage **ret_resp, struct cri_err *err);

/* One function per call, as cri_call: 0 with *ret (free with cri_free; ret may be NULL), or E_*. */
#define CRI_DECLARE(fn, Req, Resp)                                                                          \
	int fn(struct cri *c, const Runtime__V1__##Req *req, Runtime__V1__##Resp **ret, struct cri_err *err)
/* RuntimeService */
CRI_DECLARE(cri_version, VersionRequest, VersionResponse);
CRI_DECLARE(cri_status, StatusRequest, StatusResponse);
CRI_DECLARE(cri_run_pod_sandbox, RunPodSandboxRequest, RunPodSandboxResponse);
CRI_DECLARE(cri_stop_pod_sandbox, StopPodSandboxRequest, StopPodSandboxResponse);
CRI_DECLARE(cri_remove_pod_sandbox, RemovePodSandboxRequest, RemovePodSandboxResponse);
CRI_DECLARE(cri_pod_sandbox_status, PodSandboxStatusRequest, PodSandboxStatusResponse);
CRI_DECLARE(cri_list_pod_sandbox, ListPodSandboxRequest, ListPodSandboxResponse);
CRI_DECLARE(cri_create_container, CreateContainerRequest, CreateContainerResponse);
CRI_DECLARE(cri_start_container, StartContainerRequest, StartContainerResponse);
CRI_DECLARE(cri_stop_container, StopContainerRequest, StopContainerResponse);
CRI_DECLARE(cri_remove_container, RemoveContainerRequest, RemoveContainerResponse);
CRI_DECLARE(cri_list_containers, ListContainersRequest, ListContainersResponse);
CRI_DECLARE(cri_container_status, ContainerStatusRequest, ContainerStatusResponse);
/* ExecSync's limit: the open timeout plus req->timeout seconds */
CRI_DECLARE(cri_exec_sync, ExecSyncRequest, ExecSyncResponse);
/* Streaming URLs of the runtime's streaming server (valid for a short while, used once) */
CRI_DECLARE(cri_exec, ExecRequest, ExecResponse);
CRI_DECLARE(cri_attach, AttachRequest, AttachResponse);
CRI_DECLARE(cri_port_forward, PortForwardRequest, PortForwardResponse);
/* ImageService (cri_pull_image's limit: the longer of the open timeout and CRI_PULL_TIMEOUT_MS) */
CRI_DECLARE(cri_list_images, ListImagesRequest, ListImagesResponse);
CRI_DECLARE(cri_image_status, ImageStatusRequest, ImageStatusResponse);
CRI_DECLARE(cri_pull_image, PullImageRequest, PullImageResponse);
CRI_DECLARE(cri_remove_image, RemoveImageRequest, RemoveImageResponse);
CRI_DECLARE(cri_image_fs_info, ImageFsInfoRequest, ImageFsInfoResponse);

/* ---- pure helpers (unit-tested) ---- */

/* The socket path of an endpoint ("unix:///p" or "/p"), borrowed from endpoint; NULL otherwise
 * (another scheme, a relative or empty path, a path too long for a sockaddr_un). */
const char *cri_socket_path(const char *endpoint);

/* Unpacks a response message of type desc from untrusted bytes: the message (free with
 * cri_free) or NULL when the bytes are not a valid encoding of it. */
ProtobufCMessage *cri_unpack(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len);

#endif
