#!/usr/bin/python3
"""Debian's python3-kubernetes (22.6) with a kubeconfig from `ursactl kubeconfig`: list, create,
strategic-merge patch, watch and delete pods.

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/e2e/test_python_client.py"""

import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ursa_harness import ApiServer, Etcd, check, create_tenant, eq, run, uniq  # noqa: E402

try:
    import kubernetes
    from kubernetes import client, config, watch
    from kubernetes.client.rest import ApiException
except ImportError as e:  # reported as a setup failure by the runner
    kubernetes = None
    IMPORT_ERROR = e

S = {}


def setup():
    if kubernetes is None:
        raise RuntimeError("cannot import kubernetes (install python3-kubernetes): %s" % IMPORT_ERROR)
    S["etcd"] = Etcd().start()
    S["api"] = ApiServer(S["etcd"]).start()
    S["t"] = uniq("py")
    create_tenant(S["api"].admin(), S["t"])
    kc = S["api"].kubeconfig(S["t"], "carol")
    S["v1"] = client.CoreV1Api(config.new_client_from_config(config_file=kc))


def v1():
    return S["v1"]


def pod(name, labels):
    return client.V1Pod(
        api_version="v1", kind="Pod",
        metadata=client.V1ObjectMeta(name=name, labels=labels),
        spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="nginx:1.25")]))


def pod_names():
    return sorted(p.metadata.name for p in v1().list_namespaced_pod("default").items)


def test_list_empty_tenant():
    lst = v1().list_namespaced_pod("default")
    eq(lst.items, [], "pods of a new tenant")
    check(lst.metadata.resource_version, "PodList without metadata.resourceVersion")


def test_create():
    p = v1().create_namespaced_pod("default", pod("py-1", {"app": "py"}))
    eq(p.metadata.name, "py-1", "created pod's name")
    check(p.metadata.uid, "created pod without uid")
    eq(p.status.phase, "Pending", "created pod's phase")
    eq(pod_names(), ["py-1"], "pods after create")
    try:
        v1().create_namespaced_pod("default", pod("py-1", {"app": "py"}))
        raise AssertionError("creating py-1 twice did not fail")
    except ApiException as e:
        eq(e.status, 409, "status of a duplicate create")


def test_strategic_merge_patch_adds_label():
    p = v1().patch_namespaced_pod("py-1", "default", {"metadata": {"labels": {"patched": "yes"}}})
    eq(p.metadata.labels, {"app": "py", "patched": "yes"}, "labels after patch")
    eq(v1().read_namespaced_pod("py-1", "default").metadata.labels, {"app": "py", "patched": "yes"},
       "labels read back")


def test_watch_sees_added_and_modified():
    events = []
    seen_existing = threading.Event()
    errors = []

    def watcher():
        try:
            w = watch.Watch()
            for ev in w.stream(v1().list_namespaced_pod, "default", timeout_seconds=5):
                obj = ev["object"]
                events.append((ev["type"], obj.metadata.name, dict(obj.metadata.labels or {})))
                if obj.metadata.name == "py-1":
                    seen_existing.set()
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)
        seen_existing.set()

    t = threading.Thread(target=watcher, daemon=True)
    start = time.monotonic()
    t.start()
    check(seen_existing.wait(10), "watch did not deliver the synthetic ADDED of py-1 within 10 s")
    check(not errors, "watch failed: %r" % errors)
    v1().create_namespaced_pod("default", pod("py-2", {"app": "py"}))
    v1().patch_namespaced_pod("py-2", "default", {"metadata": {"labels": {"stage": "two"}}})
    t.join(20)
    check(not t.is_alive(), "watch with timeout_seconds=5 still running after %.0fs" % (time.monotonic() - start))
    check(not errors, "watch failed: %r" % errors)
    eq(events[0][:2], ("ADDED", "py-1"), "first event (synthetic ADDED of the existing pod)")
    py2 = [(typ, labels) for typ, name, labels in events if name == "py-2"]
    eq([typ for typ, _ in py2], ["ADDED", "MODIFIED"], "events of py-2 (all events: %r)" % events)
    eq(py2[1][1], {"app": "py", "stage": "two"}, "labels in the MODIFIED event")


def test_delete():
    for name in ("py-1", "py-2"):
        v1().delete_namespaced_pod(name, "default")
        try:
            v1().read_namespaced_pod(name, "default")
            raise AssertionError("%s still readable after delete" % name)
        except ApiException as e:
            eq(e.status, 404, "status of reading a deleted pod")
    eq(pod_names(), [], "pods after delete")


if __name__ == "__main__":
    run(globals())
