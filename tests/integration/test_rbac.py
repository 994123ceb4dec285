#!/usr/bin/python3
"""RBAC inside a tenant: default roles, Roles and bindings deciding requests, escalation
prevention, access reviews and `kubectl auth can-i`, against a real ursa-tp-apiserver and etcd
with the kubectl on PATH.

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/integration/test_rbac.py
(URSA_TEST=test_a,test_b runs a subset after setup.)"""

import json
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ursa_harness import (ApiServer, Etcd, check, create_tenant, eq, expect_status, kubectl,  # noqa: E402
                          pod_manifest, pods_path, run, run_cmd, tenant_manifest, uniq, wait_until)

S = {}
RBAC = "/apis/rbac.authorization.k8s.io/v1"


def setup():
    S["etcd"] = Etcd().start()
    S["api"] = ApiServer(S["etcd"]).start()
    S["admin"] = S["api"].admin()
    S["t"] = uniq("rbac")
    S["other"] = uniq("other")
    create_tenant(S["admin"], S["t"])
    create_tenant(S["admin"], S["other"])
    # the tenant's administrator: ursactl's default group, ursa:tenant-admins
    S["boss"] = S["api"].kubeconfig(S["t"], "boss")
    S["bob"] = S["api"].kubeconfig(S["t"], "bob", ("devs",))
    S["other_bob"] = S["api"].kubeconfig(S["other"], "bob", ("devs",))


def k(args, who, input_text=None, ok=True):
    rc, out, err = kubectl(args, S[who], input_text=input_text)
    if ok:
        check(rc == 0, "kubectl %s as %s failed (rc %d): %s %s" % (" ".join(args), who, rc, out, err))
    return rc, out, err


def wait_rbac(pred, what):
    """RBAC objects reach the authorizer through the watch cache: wait briefly for a change."""
    wait_until(pred, 10, what)


def test_new_tenant_has_default_roles():
    r = S["admin"].get("%s/tenants/%s/clusterroles" % (RBAC, S["t"]))
    expect_status(r, 200, "list the tenant's cluster roles")
    names = {i["metadata"]["name"] for i in r.json["items"]}
    for want in ("cluster-admin", "admin", "edit", "view", "system:discovery", "system:basic-user"):
        check(want in names, "default ClusterRole %s missing: %s" % (want, sorted(names)))
    r = S["admin"].get("%s/tenants/%s/clusterrolebindings/ursa:tenant-admins" % (RBAC, S["t"]))
    expect_status(r, 200, "the tenant administrators' binding")
    eq(r.json["roleRef"]["name"], "cluster-admin", "tenant admins' role")
    # another tenant's roles are its own copies, not shared
    r = S["admin"].get("%s/tenants/%s/clusterroles/view" % (RBAC, S["other"]))
    expect_status(r, 200, "the other tenant's view role")


def test_tenant_admin_can_do_everything_in_the_tenant():
    k(["create", "namespace", "team"], "boss")
    k(["create", "role", "reader", "--verb=get,list,watch", "--resource=pods", "-n", "team"], "boss")
    k(["create", "rolebinding", "bob-reads", "--role=reader", "--user=bob", "-n", "team"], "boss")
    _, out, _ = k(["get", "rolebindings", "-n", "team", "-o", "wide"], "boss")
    check("bob-reads" in out and "Role/reader" in out and "bob" in out, "rolebinding listing: %s" % out)
    pod = pod_manifest("p1")
    k(["create", "-n", "team", "-f", "-"], "boss", input_text=json.dumps(pod))


def test_ordinary_user_gets_exactly_the_role():
    wait_rbac(lambda: kubectl(["get", "pods", "-n", "team"], S["bob"])[0] == 0, "bob may list pods in team")
    _, out, _ = k(["get", "pods", "-n", "team"], "bob")
    check("p1" in out, "bob sees pod p1: %s" % out)
    k(["get", "pod", "p1", "-n", "team"], "bob")
    rc, out, err = k(["run", "x", "--image=busybox", "-n", "team"], "bob", ok=False)
    check(rc != 0 and 'User "bob" cannot create resource "pods" in API group "" in the namespace "team"' in err,
          "bob creating a pod: rc %d %s" % (rc, err))
    rc, out, err = k(["get", "pods", "-n", "default"], "bob", ok=False)
    check(rc != 0 and "forbidden" in err.lower() and 'in the namespace "default"' in err,
          "bob listing pods in default: %s" % err)
    # raw: the Status is a 403 Forbidden with details
    c = S["api"].user_client(S["t"], "bob", ("devs",))
    r = c.post(pods_path(S["t"], "team"), pod_manifest("p2"))
    expect_status(r, 403, "bob creates a pod", "Forbidden")
    eq(r.json["details"]["kind"], "pods", "Status details.kind")


def test_same_name_in_another_tenant_has_no_rights():
    rc, out, err = k(["get", "pods", "-n", "team"], "other_bob", ok=False)
    check(rc != 0, "bob of another tenant lists team: %s" % out)
    _, out, _ = k(["auth", "can-i", "list", "pods", "-n", "team"], "other_bob", ok=False)
    eq(out.strip(), "no", "other tenant's bob can-i list pods")


def test_can_i_and_whoami():
    rc, out, _ = k(["auth", "can-i", "create", "pods", "-n", "team"], "bob", ok=False)
    eq((rc, out.strip()), (1, "no"), "bob can-i create pods")
    rc, out, _ = k(["auth", "can-i", "list", "pods", "-n", "team"], "bob", ok=False)
    eq((rc, out.strip()), (0, "yes"), "bob can-i list pods")
    _, out, _ = k(["auth", "can-i", "--list", "-n", "team"], "bob")
    lines = [l.split() for l in out.splitlines()]
    check(any(l and l[0] == "pods" and "[get" in " ".join(l) for l in lines), "can-i --list shows the reader rule: %s" % out)
    check("selfsubjectaccessreviews.authorization.k8s.io" in out, "can-i --list shows the basic-user rules: %s" % out)
    rc, out, _ = k(["auth", "can-i", "create", "pods", "-n", "team"], "boss", ok=False)
    eq((rc, out.strip()), (0, "yes"), "tenant admin can-i create pods")


def bundled_kubectl(version):
    """The kubectl of that minor version bundled next to the dispatcher on PATH."""
    d = os.path.dirname(os.path.realpath(shutil.which("kubectl") or "/usr/bin/kubectl"))
    path = os.path.join(d, "kubectl." + version)
    check(os.access(path, os.X_OK), "no bundled %s" % path)
    return path


def test_auth_commands_of_every_kubectl():
    """whoami (v1beta1 for 1.27, v1 later) and can-i from the oldest and newest bundled kubectl."""
    for v in ("1.27", "1.28", "1.33"):
        k = bundled_kubectl(v)
        rc, out, err = run_cmd([k, "--kubeconfig", S["bob"], "auth", "whoami"])
        check(rc == 0 and "bob" in out and "devs" in out, "kubectl %s auth whoami: %s %s" % (v, out, err))
        rc, out, err = run_cmd([k, "--kubeconfig", S["bob"], "auth", "can-i", "delete", "pods", "-n", "team"])
        eq(out.strip(), "no", "kubectl %s auth can-i delete pods" % v)


def test_subject_access_reviews():
    admin = S["api"].user_client(S["t"], "boss")
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": "bob", "groups": ["devs"],
                     "resourceAttributes": {"namespace": "team", "verb": "get", "resource": "pods"}}}
    r = admin.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", body)
    expect_status(r, 201, "subject access review")
    eq(r.json["status"]["allowed"], True, "bob may get pods in team")
    check("bob-reads" in r.json["status"].get("reason", ""), "reason names the binding: %r" % r.json["status"])
    body["spec"]["resourceAttributes"]["verb"] = "delete"
    r = admin.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", body)
    eq(r.json["status"]["allowed"], False, "bob may not delete pods")
    body["kind"] = "LocalSubjectAccessReview"
    r = admin.post("/apis/authorization.k8s.io/v1/namespaces/team/localsubjectaccessreviews", body)
    expect_status(r, 201, "local subject access review")
    body["spec"]["resourceAttributes"]["namespace"] = "default"
    r = admin.post("/apis/authorization.k8s.io/v1/namespaces/team/localsubjectaccessreviews", body)
    expect_status(r, 400, "local review of another namespace", "BadRequest")
    # bob himself may not ask about others
    bob = S["api"].user_client(S["t"], "bob", ("devs",))
    r = bob.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", body)
    expect_status(r, 403, "bob asks a subject access review", "Forbidden")
    r = admin.post("/apis/authorization.k8s.io/v1/subjectaccessreviews",
                   {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {"user": "x"}})
    expect_status(r, 422, "review without attributes", "Invalid")


def test_bad_roles_are_refused_and_not_stored():
    bad = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "bad"},
           "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "frobnicate"]}]}
    c = S["api"].user_client(S["t"], "boss")
    r = c.post("%s/namespaces/team/roles" % RBAC, bad)
    expect_status(r, 422, "role with an unknown verb", "Invalid")
    causes = r.json["details"]["causes"]
    check(any(x["field"] == "rules[0].verbs[1]" and "frobnicate" in x["message"] for x in causes),
          "cause names the verb: %r" % causes)
    bad["rules"] = [{"verbs": ["get"]}]
    r = c.post("%s/namespaces/team/roles" % RBAC, bad)
    expect_status(r, 422, "rule without resources", "Invalid")
    bad["rules"] = [{"nonResourceURLs": ["/x"], "verbs": ["get"]}]
    r = c.post("%s/namespaces/team/roles" % RBAC, bad)
    expect_status(r, 422, "namespaced rule with a URL", "Invalid")
    r = c.get("%s/namespaces/team/roles/bad" % RBAC)
    expect_status(r, 404, "refused role was not stored", "NotFound")
    b = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "b"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Secret", "name": "x"},
         "subjects": [{"kind": "User", "name": "bob"}]}
    r = c.post("%s/namespaces/team/rolebindings" % RBAC, b)
    expect_status(r, 422, "binding to a Secret", "Invalid")


def test_binding_to_missing_role_grants_nothing():
    k(["create", "rolebinding", "ghost", "--role=does-not-exist", "--user=carol", "-n", "team"], "boss")
    carol = S["api"].user_client(S["t"], "carol", ("x",))
    time.sleep(0.5)
    r = carol.get(pods_path(S["t"], "team"))
    expect_status(r, 403, "carol bound to a missing role", "Forbidden")


def test_escalation_is_refused():
    # dave edits team; edit holds no RBAC rights, so he cannot bind anyone
    k(["create", "rolebinding", "dave-edit", "--clusterrole=edit", "--user=dave", "-n", "team"], "boss")
    dave = S["api"].kubeconfig(S["t"], "dave", ("devs",))
    wait_rbac(lambda: kubectl(["get", "pods", "-n", "team"], dave)[0] == 0, "dave may list pods")
    rc, _, err = kubectl(["create", "rolebinding", "dave-admin", "--clusterrole=admin", "--user=dave", "-n", "team"], dave)
    check(rc != 0 and "forbidden" in err.lower(), "edit user binds admin: rc %d %s" % (rc, err))
    # erin administers team (admin: may create roles and bindings) but is not cluster-admin
    k(["create", "rolebinding", "erin-admin", "--clusterrole=admin", "--user=erin", "-n", "team"], "boss")
    erin = S["api"].kubeconfig(S["t"], "erin", ("devs",))
    wait_rbac(lambda: kubectl(["get", "roles", "-n", "team"], erin)[0] == 0, "erin may list roles")
    rc, _, err = kubectl(["create", "rolebinding", "erin-up", "--clusterrole=cluster-admin", "--user=erin", "-n", "team"],
                         erin)
    check(rc != 0 and "attempting to grant RBAC permissions not currently held" in err,
          "admin binds cluster-admin: rc %d %s" % (rc, err))
    rc, _, err = kubectl(["create", "role", "wild", "--verb=*", "--resource=*", "-n", "team"], erin)
    check(rc != 0 and "not currently held" in err, "admin creates a role beyond her rights: rc %d %s" % (rc, err))
    # within her rights: fine, and a binding of what she holds too
    rc, _, err = kubectl(["create", "role", "podreader", "--verb=get", "--resource=pods", "-n", "team"], erin)
    check(rc == 0, "admin creates a role within her rights: %s" % err)
    rc, _, err = kubectl(["create", "rolebinding", "dave-view", "--clusterrole=view", "--user=dave", "-n", "team"], erin)
    check(rc == 0, "admin binds view: %s" % err)


def test_aggregated_roles_follow_labels():
    # a tenant extends `view` by labelling its own ClusterRole
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "widgets-view", "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
            "rules": [{"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["public"], "verbs": ["get"]}]}
    k(["create", "-f", "-"], "boss", input_text=json.dumps(role))
    k(["create", "rolebinding", "frank-view", "--clusterrole=view", "--user=frank", "-n", "team"], "boss")
    frank = S["api"].kubeconfig(S["t"], "frank", ("devs",))
    wait_rbac(lambda: kubectl(["auth", "can-i", "get", "secrets/public", "-n", "team"], frank)[1].strip() == "yes",
              "view aggregates widgets-view")
    _, out, _ = kubectl(["auth", "can-i", "get", "secrets/private", "-n", "team"], frank)
    eq(out.strip(), "no", "frank can-i get another secret")
    # the aggregated roles' stored rules follow, as Kubernetes' aggregation controller writes them

    def stored_rules_name(role, name):
        r = S["admin"].get("%s/tenants/%s/clusterroles/%s" % (RBAC, S["t"], role))
        return any(name in (x.get("resourceNames") or []) for x in r.json.get("rules") or [])
    wait_rbac(lambda: stored_rules_name("view", "public") and stored_rules_name("edit", "public")
              and stored_rules_name("admin", "public"), "view, edit and admin store the new rule")
    _, out, _ = k(["describe", "clusterrole", "view"], "boss")
    check("pods/log" in out and "public" in out, "kubectl describe clusterrole view: %s" % out[:2000])
    k(["delete", "clusterrole", "widgets-view"], "boss")
    wait_rbac(lambda: not stored_rules_name("admin", "public"), "the rule leaves admin with widgets-view")


def test_cluster_role_binding_reaches_every_namespace():
    k(["create", "clusterrolebinding", "gina-view", "--clusterrole=view", "--group=auditors"], "boss")
    gina = S["api"].kubeconfig(S["t"], "gina", ("auditors",))
    wait_rbac(lambda: kubectl(["get", "pods", "-n", "default"], gina)[0] == 0, "gina lists pods in default")
    rc, _, _ = kubectl(["get", "pods", "-n", "team"], gina)
    eq(rc, 0, "gina lists pods in team")
    rc, _, _ = kubectl(["get", "namespaces"], gina)
    eq(rc, 0, "gina lists namespaces")
    rc, _, err = kubectl(["delete", "pod", "p1", "-n", "team"], gina)
    check(rc != 0 and "forbidden" in err.lower(), "gina deletes a pod: %s" % err)
    # deleting the binding takes the rights away
    k(["delete", "clusterrolebinding", "gina-view"], "boss")
    wait_rbac(lambda: kubectl(["get", "pods", "-n", "default"], gina)[0] != 0, "gina loses her rights")


def test_tenant_admins_keep_cluster_scope_rules_to_their_tenant():
    boss = S["api"].user_client(S["t"], "boss")
    r = boss.get("%s/tenants/%s/clusterroles" % (RBAC, S["other"]))
    expect_status(r, 403, "a tenant admin lists another tenant's roles", "Forbidden")
    r = boss.get("/api/v1/nodes")
    check(r.status in (403, 404), "a tenant admin reads the region's scope: %d" % r.status)


def test_rules_survive_an_api_server_restart():
    S["api"].restart()
    wait_rbac(lambda: kubectl(["get", "pods", "-n", "team"], S["bob"])[0] == 0, "bob's rights after a restart")
    rc, _, _ = kubectl(["run", "y", "--image=busybox", "-n", "team"], S["bob"])
    check(rc != 0, "bob still may not create pods after a restart")


def test_a_burst_of_tenants_lets_each_admin_in_at_once():
    """Each new tenant's administrator acts at once, also in a burst of tenants: the write-back of
    aggregated roles (admin, edit, view), which each new tenant's roles set off, must not hold the
    authorizer's feed (it did: after 100 tenants, 5-7 s of 403s)."""
    import threading
    etcd = Etcd(members=3).start()  # writes of a replicated etcd, as in a region
    api = ApiServer(etcd, partition_id="tp-burst").start()
    admin = api.admin()
    names = [uniq("burst") for _ in range(100)]
    clients = {n: api.user_client(n, "boss") for n in names}
    refused = []

    def create(batch):
        for n in batch:
            expect_status(admin.post("/api/v1/tenants", tenant_manifest(n)), 201, "create tenant %s" % n)

    def first_request(n):
        r = clients[n].get("/api/v1/namespaces")
        if r.status != 200:
            refused.append((n, r.status))

    for threads in ([threading.Thread(target=create, args=(names[i::8],)) for i in range(8)],
                    [threading.Thread(target=first_request, args=(n,)) for n in names]):
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    check(not refused, "%d of 100 new tenants' administrators refused at first: %s" % (len(refused), refused[:5]))
    # the aggregated roles are still written back, a moment later
    for n in names[:3]:
        wait_rbac(lambda n=n: any("rolebindings" in (rule.get("resources") or [])
                                  for rule in admin.get("%s/tenants/%s/clusterroles/admin" % (RBAC, n)).json
                                  .get("rules") or []), "%s's admin role's rules written back" % n)
    api.stop()
    etcd.stop()


if __name__ == "__main__":
    run(globals())
