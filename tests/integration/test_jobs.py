"""Jobs and CronJobs (batch/v1) against real etcd + ursa-tp-apiserver + ursa-tp-controller-manager.

No kubelet runs here: the test plays the kubelet by setting pod phases (Running, Succeeded,
Failed) through the pods/status subresource as the partition's admin. The controller manager runs
with --job-backoff-base-ms=200 (the 10 s back-off scaled down) and --cronjob-now-offset=90 (its
cronjob clock 90 s ahead, so a "* * * * *" CronJob has a missed run at once)."""
import json
import re
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ursa_harness import *  # noqa: F401,F403
import ursa_harness as H

S = {}
JOBS = "/apis/batch/v1/tenants/acme/namespaces/default/jobs"
CRONJOBS = "/apis/batch/v1/tenants/acme/namespaces/default/cronjobs"
NOW_OFFSET = 90


def setup():
    S.update(H.start_tp_with_controllers(identity="cm-a", cm_args=["--job-backoff-base-ms", "200",
                                                                  "--cronjob-now-offset", str(NOW_OFFSET)]))


def kc(*args, ok=True):
    rc, out, err = kubectl(list(args), S["kc"])
    if ok:
        check(rc == 0, "kubectl %s: rc=%s out=%s err=%s" % (" ".join(args), rc, out, err))
    return out


def job(name):
    r = S["admin"].get(JOBS + "/" + name)
    return r.json if r.status == 200 else None


def job_pods(name, active_only=False):
    items = S["admin"].get(pods_path("acme") + q(labelSelector="job-name=" + name)).json.get("items") or []
    items = [p for p in items if not p["metadata"].get("deletionTimestamp")]
    if active_only:
        items = [p for p in items if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
    return items


def set_phase(pod, phase, at=None, code=None):
    """Plays the kubelet: the pod ends in phase (its container terminated with exit code, by default
    0 or 1) at time at (default now). The real-node kubelet reports a process's exit status the
    same way (sh -c 'exit 42' gives exitCode 42)."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))
    st = pod.get("status") or {}
    st["phase"] = phase
    if code is None:
        code = 0 if phase == "Succeeded" else 1
    st["containerStatuses"] = [{"name": c["name"], "image": c["image"], "imageID": "", "ready": False,
                                "restartCount": 0,
                                "state": {"terminated": {"exitCode": code, "startedAt": now, "finishedAt": now,
                                                         "reason": "Completed" if code == 0 else "Error"}}}
                               for c in pod["spec"]["containers"]]
    pod["status"] = st
    r = S["admin"].put(pods_path("acme", "default", pod["metadata"]["name"]) + "/status", pod)
    eq(r.status, 200, "pod status update")


def condition(obj, type_):
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == type_ and c.get("status") == "True":
            return c
    return None


def create(path, body, code=201):
    r = S["admin"].post(path, body)
    eq(r.status, code, "create %s: %r" % (body["metadata"]["name"], r))
    return r.json


def job_manifest(name, **spec):
    s = {"template": {"spec": {"restartPolicy": "Never",
                               "containers": [{"name": "c", "image": "busybox", "command": ["sh", "-c", "true"]}]}}}
    s.update(spec)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": s}


def test_job_completes_and_kubectl():
    kc("create", "job", "once", "--image=busybox", "--", "sh", "-c", "echo done")
    j = job("once")
    spec = j["spec"]
    eq((spec["completions"], spec["parallelism"], spec["backoffLimit"], spec["completionMode"], spec["suspend"]),
       (1, 1, 6, "NonIndexed", False), "defaults")
    uid = j["metadata"]["uid"]
    eq(spec["selector"], {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}, "generated selector")
    labels = spec["template"]["metadata"]["labels"]
    eq((labels["controller-uid"], labels["job-name"], labels["batch.kubernetes.io/job-name"]),
       (uid, "once", "once"), "template labels")
    pods = wait_until(lambda: job_pods("once"), 20, "a pod of job once")
    eq(len(pods), 1, "pods")
    ref = pods[0]["metadata"]["ownerReferences"][0]
    eq((ref["kind"], ref["name"], ref["uid"], ref["controller"], ref["blockOwnerDeletion"]),
       ("Job", "once", uid, True, True), "owner reference")
    wait_until(lambda: (job("once").get("status") or {}).get("active") == 1, 20, "status.active 1")
    out = kc("get", "jobs")
    check(out.splitlines()[0].split() == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"], out)
    check(out.splitlines()[1].split()[:3] == ["once", "Running", "0/1"], out)
    set_phase(pods[0], "Succeeded")
    kc("wait", "--for=condition=Complete", "job/once", "--timeout=30s")
    st = job("once")["status"]
    eq((st.get("succeeded"), st.get("active"), st.get("failed")), (1, 0, 0), "counts")
    check(st.get("startTime") and st.get("completionTime"), "times: %r" % st)
    c = condition(job("once"), "Complete")
    eq(c["reason"], "CompletionsReached", "reason")
    check(c.get("lastTransitionTime") and c.get("message"), "condition fields %r" % c)
    out = kc("get", "jobs")
    check(out.splitlines()[1].split()[:3] == ["once", "Complete", "1/1"], out)
    out = kc("describe", "job", "once")
    check("Pods Statuses:" in out and "1 Succeeded" in out and "Completions:" in out, out)
    time.sleep(1)
    eq(len(job_pods("once")), 1, "no pod created after completion")


def test_restart_policy_always_refused():
    m = job_manifest("always")
    m["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    r = S["admin"].post(JOBS, m)
    expect_status(r, 422, "restartPolicy Always", "Invalid")
    check("spec.template.spec.restartPolicy" in json.dumps(r.json), r.json)
    m = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "bad"},
         "spec": {"schedule": "61 * * * *", "jobTemplate": {"spec": job_manifest("x")["spec"]}}}
    expect_status(S["admin"].post(CRONJOBS, m), 422, "bad schedule", "Invalid")
    m["spec"]["schedule"] = "@hourly"
    m["spec"]["timeZone"] = "Mars/Olympus"
    expect_status(S["admin"].post(CRONJOBS, m), 422, "bad timeZone", "Invalid")


def test_failing_job_backs_off_and_fails():
    create(JOBS, job_manifest("flaky", backoffLimit=2))
    seen, fail_times, create_times = set(), {}, []
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline and not condition(job("flaky"), "Failed"):
        for p in job_pods("flaky", active_only=True):
            n = p["metadata"]["name"]
            if n not in seen:
                seen.add(n)
                create_times.append(time.monotonic())
                # finishedAt has whole seconds: round up, so the back-off counts from no earlier
                # than the real failure
                set_phase(p, "Failed", at=int(time.time()) + 1)
        time.sleep(0.05)
    c = condition(job("flaky"), "Failed")
    check(c, "job flaky Failed: %r" % job("flaky"))
    eq(c["reason"], "BackoffLimitExceeded", "reason")
    eq(len(seen), 3, "pods created (backoffLimit 2 = 3 tries)")
    st = job("flaky")["status"]
    eq((st.get("failed"), st.get("active")), (3, 0), "counts")
    # back-off after the 1st failure 200 ms, after the 2nd 400 ms
    check(create_times[1] - create_times[0] >= 0.2 and create_times[2] - create_times[1] >= 0.4,
          "retries back off: %r" % create_times)
    time.sleep(1.5)
    eq(len(job_pods("flaky")), 3, "no pod after Failed")


def test_indexed_job_runs_each_index_once():
    create(JOBS, job_manifest("idx", completions=5, parallelism=2, completionMode="Indexed"))
    seen = []
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline and not condition(job("idx"), "Complete"):
        act = job_pods("idx", active_only=True)
        check(len(act) <= 2, "parallelism 2: %d active" % len(act))
        for p in act:
            ix = p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]
            env = {e["name"]: e.get("value") for e in p["spec"]["containers"][0].get("env") or []}
            eq(env.get("JOB_COMPLETION_INDEX"), ix, "env of index " + ix)
            eq(p["metadata"]["labels"].get("batch.kubernetes.io/job-completion-index"), ix, "index label")
            seen.append(int(ix))
            set_phase(p, "Succeeded")
        time.sleep(0.1)
    check(condition(job("idx"), "Complete"), "indexed job complete: %r" % job("idx"))
    eq(sorted(seen), [0, 1, 2, 3, 4], "each index ran once")
    st = job("idx")["status"]
    eq((st.get("succeeded"), st.get("completedIndexes")), (5, "0-4"), "status")


def test_deadline_and_suspend_and_ttl():
    create(JOBS, job_manifest("slow", activeDeadlineSeconds=2))
    wait_until(lambda: job_pods("slow"), 20, "pod of slow")
    wait_until(lambda: condition(job("slow"), "Failed"), 20, "deadline")
    eq(condition(job("slow"), "Failed")["reason"], "DeadlineExceeded", "reason")
    wait_until(lambda: not job_pods("slow", active_only=True), 20, "active pod deleted")

    create(JOBS, job_manifest("later", suspend=True))
    time.sleep(2)
    eq(job_pods("later"), [], "suspended job has no pods")
    wait_until(lambda: condition(job("later"), "Suspended"), 10, "Suspended condition")
    kc("patch", "job", "later", "--type=merge", "-p", '{"spec":{"suspend":false}}')
    p = wait_until(lambda: job_pods("later"), 20, "resumed job runs")

    create(JOBS, job_manifest("brief", ttlSecondsAfterFinished=1))
    p = wait_until(lambda: job_pods("brief"), 20, "pod of brief")[0]
    set_phase(p, "Succeeded")
    wait_until(lambda: job("brief") is None, 20, "job deleted after its ttl")
    wait_until(lambda: not job_pods("brief"), 20, "its pods collected")


def pfp_job(name, rules, **spec):
    m = job_manifest(name, podFailurePolicy={"rules": rules}, **spec)
    return m


def exit_rule(action, op, values, **extra):
    r = {"action": action, "onExitCodes": dict({"operator": op, "values": values}, **extra)}
    return r


def causes(r):
    return {(c.get("field"), c.get("message")) for c in ((r.json or {}).get("details") or {}).get("causes") or []}


def refused(m, field, message, what):
    r = S["admin"].post(JOBS, m)
    expect_status(r, 422, what, "Invalid")
    check((field, message) in causes(r), "%s: want %s: %s in %r" % (what, field, message, r.json))
    return r


def put_job(name, change):
    """PUTs job name after change(job); retried on 409 (the controller may write its status meanwhile)."""
    for _ in range(10):
        j = job(name)
        change(j)
        r = S["admin"].put(JOBS + "/" + name, j)
        if r.status != 409:
            break
    return r


def fail_next_pod(name, code, seen):
    """Waits for an active pod of job name not failed yet and fails it with exit code."""
    def fresh():
        return [p for p in job_pods(name, active_only=True) if p["metadata"]["name"] not in seen]
    p = wait_until(fresh, 20, "a new pod of job " + name)[0]
    seen.add(p["metadata"]["name"])
    set_phase(p, "Failed", code=code)
    return p


def test_pod_failure_policy_fail_job():
    create(JOBS, pfp_job("pfp-fail", [exit_rule("FailJob", "In", [42]),
                                      {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}],
                         backoffLimit=6))
    j = job("pfp-fail")
    eq(j["spec"]["podReplacementPolicy"], "Failed", "podReplacementPolicy default with a podFailurePolicy")
    eq(j["spec"]["podFailurePolicy"]["rules"][1]["onPodConditions"][0].get("status"), "True",
       "onPodConditions status default")
    seen = set()
    p = fail_next_pod("pfp-fail", 42, seen)
    c = wait_until(lambda: condition(job("pfp-fail"), "Failed"), 20, "job pfp-fail Failed")
    eq(c["reason"], "PodFailurePolicy", "reason")
    eq(c["message"], "Container c for pod default/%s failed with exit code 42 matching FailJob rule at index 0"
       % p["metadata"]["name"], "message")
    ft = condition(job("pfp-fail"), "FailureTarget")
    check(ft and ft["reason"] == "PodFailurePolicy", "FailureTarget condition: %r" % job("pfp-fail"))
    st = job("pfp-fail")["status"]
    eq((st.get("failed"), st.get("active")), (1, 0), "counts")
    time.sleep(1)
    eq(len(job_pods("pfp-fail")), 1, "no retry after FailJob (backoffLimit 6 unused)")


def test_pod_failure_policy_ignore_and_count():
    # backoffLimit 0: one counted failure fails the job; exit code 3 is ignored
    create(JOBS, pfp_job("pfp-ign", [exit_rule("Ignore", "In", [3]), exit_rule("Count", "In", [1, 2])],
                         backoffLimit=0))
    seen = set()
    fail_next_pod("pfp-ign", 3, seen)
    fail_next_pod("pfp-ign", 3, seen)  # a replacement came although backoffLimit is 0
    time.sleep(0.5)
    check(not condition(job("pfp-ign"), "Failed"), "ignored failures do not fail the job: %r" % job("pfp-ign"))
    eq(job("pfp-ign")["status"].get("failed"), 0, "ignored failures are not counted")
    p = wait_until(lambda: [q for q in job_pods("pfp-ign", active_only=True) if q["metadata"]["name"] not in seen],
                   20, "a third pod")[0]
    set_phase(p, "Succeeded")
    wait_until(lambda: condition(job("pfp-ign"), "Complete"), 20, "job pfp-ign Complete")
    eq(job("pfp-ign")["status"].get("failed"), 0, "failed after completion")
    # Count acts as without a policy: the backoff limit decides
    create(JOBS, pfp_job("pfp-cnt", [exit_rule("Ignore", "In", [3]), exit_rule("Count", "In", [1, 2])],
                         backoffLimit=0))
    fail_next_pod("pfp-cnt", 2, set())
    c = wait_until(lambda: condition(job("pfp-cnt"), "Failed"), 20, "job pfp-cnt Failed")
    eq(c["reason"], "BackoffLimitExceeded", "reason of a counted failure")


def test_pod_failure_policy_refused():
    m = pfp_job("bad", [exit_rule("FailJob", "In", [42])])
    m["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    r = refused(m, "spec.template.spec.restartPolicy",
                'Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified',
                "OnFailure with a podFailurePolicy")
    check('spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported when '
          'podFailurePolicy is specified' in r.json["message"], r.json["message"])
    R = "spec.podFailurePolicy.rules[0]"
    refused(pfp_job("bad", [exit_rule("FailJob", "In", [0, 5])]), R + ".onExitCodes.values[0]",
            "Invalid value: 0: must not be 0 for the In operator", "exit code 0 with In")
    refused(pfp_job("bad", [exit_rule("FailJob", "NotIn", [5, 1])]), R + ".onExitCodes.values",
            "Invalid value: []int32{5, 1}: must be ordered", "unordered values")
    refused(pfp_job("bad", [exit_rule("FailJob", "In", [1, 1])]), R + ".onExitCodes.values[1]",
            "Duplicate value: 1", "duplicate values")
    refused(pfp_job("bad", [exit_rule("FailJob", "In", [])]), R + ".onExitCodes.values",
            "Invalid value: []int32{}: at least one value is required", "no values")
    refused(pfp_job("bad", [exit_rule("FailJob", "Is", [1])]), R + ".onExitCodes.operator",
            'Unsupported value: "Is": supported values: "In", "NotIn"', "bad operator")
    refused(pfp_job("bad", [exit_rule("FailJob", "In", [1], containerName="nope")]),
            R + ".onExitCodes.containerName",
            'Invalid value: "nope": must be one of the container or initContainer names in the pod template',
            "unknown containerName")
    refused(pfp_job("bad", [exit_rule("Restart", "In", [1])]), R + ".action",
            'Unsupported value: "Restart": supported values: "Count", "FailIndex", "FailJob", "Ignore"',
            "bad action")
    refused(pfp_job("bad", [exit_rule("FailIndex", "In", [1])], completions=2, completionMode="Indexed"),
            R + ".action", 'Invalid value: "FailIndex": requires the backoffLimitPerIndex to be set',
            "FailIndex without backoffLimitPerIndex")
    r = refused(pfp_job("bad", [exit_rule("FailIndex", "In", [1])], completions=2, completionMode="Indexed",
                        backoffLimitPerIndex=1), "spec.backoffLimitPerIndex",
                "Invalid value: 1: not supported by this server (per-index back-off is not implemented)",
                "backoffLimitPerIndex")
    check(any(f == R + ".action" and "not supported by this server" in msg for f, msg in causes(r)), r.json)
    both = exit_rule("Ignore", "In", [1])
    both["onPodConditions"] = [{"type": "DisruptionTarget", "status": "True"}]
    refused(pfp_job("bad", [both]), R,
            "Invalid value: specifying both OnExitCodes and OnPodConditions is not supported", "both matchers")
    refused(pfp_job("bad", [{"action": "Ignore"}]), R,
            "Invalid value: specifying one of OnExitCodes and OnPodConditions is required", "no matcher")
    refused(pfp_job("bad", [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget",
                                                                       "status": "Maybe"}]}]),
            R + ".onPodConditions[0].status",
            'Unsupported value: "Maybe": supported values: "False", "True", "Unknown"', "bad condition status")
    refused(pfp_job("bad", [exit_rule("Ignore", "In", [i + 1]) for i in range(21)]),
            "spec.podFailurePolicy.rules", "Too many: 21: must have at most 20 items", "21 rules")
    refused(pfp_job("bad", [exit_rule("Ignore", "In", list(range(1, 257)))]), R + ".onExitCodes.values",
            "Too many: 256: must have at most 255 items", "256 values")
    refused(pfp_job("bad", [exit_rule("Ignore", "In", [1])], podReplacementPolicy="TerminatingOrFailed"),
            "spec.podReplacementPolicy", 'Unsupported value: "TerminatingOrFailed": supported values: "Failed"',
            "podReplacementPolicy with a podFailurePolicy")
    # immutable once created
    create(JOBS, pfp_job("pfp-imm", [exit_rule("Ignore", "In", [1])], suspend=True))
    r = put_job("pfp-imm", lambda j: j["spec"]["podFailurePolicy"]["rules"][0]["onExitCodes"].update(values=[2]))
    expect_status(r, 422, "podFailurePolicy changed", "Invalid")
    check(any(f == "spec.podFailurePolicy" and "field is immutable" in msg for f, msg in causes(r)), r.json)


def test_selector_without_manual_selector():
    m = job_manifest("sel", selector={"matchLabels": {"app": "x"}})
    m["spec"]["template"]["metadata"] = {"labels": {"app": "x"}}
    r = S["admin"].post(JOBS, m)
    expect_status(r, 422, "selector without manualSelector", "Invalid")
    got = [msg for f, msg in causes(r) if f == "spec.selector"]
    eq(len(got), 1, "spec.selector causes: %r" % r.json)
    check(re.fullmatch(r'Invalid value: v1\.LabelSelector\{MatchLabels:map\[string\]string\{"app":"x", '
                       r'"batch\.kubernetes\.io/controller-uid":"[0-9a-f-]{36}"\}, '
                       r'MatchExpressions:\[\]v1\.LabelSelectorRequirement\(nil\)\}: `selector` not auto-generated',
                       got[0]), got[0])
    check('"sel" is invalid: spec.selector: Invalid value: v1.LabelSelector{' in r.json["message"], r.json["message"])
    # a conflicting job-name label on the template is kept and refused
    m = job_manifest("sel2")
    m["spec"]["template"]["metadata"] = {"labels": {"job-name": "other"}}
    r = S["admin"].post(JOBS, m)
    expect_status(r, 422, "conflicting job-name label", "Invalid")
    got = [msg for f, msg in causes(r) if f == "spec.template.metadata.labels[job-name]"]
    check(len(got) == 1 and got[0].startswith('Invalid value: map[string]string{') and got[0].endswith(
        ": must be 'sel2'") and '"job-name":"other"' in got[0], r.json)
    # with manualSelector the selector is the user's and no label is generated
    m = job_manifest("sel", selector={"matchLabels": {"app": "x"}}, manualSelector=True, suspend=True)
    m["spec"]["template"]["metadata"] = {"labels": {"app": "x"}}
    j = create(JOBS, m)
    eq(j["spec"]["selector"], {"matchLabels": {"app": "x"}}, "manual selector kept")
    eq(j["spec"]["template"]["metadata"]["labels"], {"app": "x"}, "no generated labels")
    # a plain job: the generated selector and the four generated template labels
    j = create(JOBS, job_manifest("sel3", suspend=True))
    uid = j["metadata"]["uid"]
    eq(j["spec"]["selector"], {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}, "generated selector")
    eq(j["spec"]["template"]["metadata"]["labels"],
       {"controller-uid": uid, "batch.kubernetes.io/controller-uid": uid, "job-name": "sel3",
        "batch.kubernetes.io/job-name": "sel3"}, "generated labels")
    # updates keep passing the generated-selector check
    r = put_job("sel3", lambda j: j["metadata"].setdefault("labels", {}).update(touched="yes"))
    eq(r.status, 200, "update of a job with a generated selector: %r" % r)


def test_cronjob_runs_and_kubectl():
    kc("create", "cronjob", "tick", "--image=busybox", "--schedule=* * * * *", "--", "sh", "-c", "echo hi")
    cj = S["admin"].get(CRONJOBS + "/tick").json
    eq((cj["spec"]["concurrencyPolicy"], cj["spec"]["suspend"], cj["spec"]["successfulJobsHistoryLimit"],
        cj["spec"]["failedJobsHistoryLimit"]), ("Allow", False, 3, 1), "defaults")

    def first_job():
        items = [j for j in S["admin"].get(JOBS).json.get("items") or []
                 if j["metadata"]["name"].startswith("tick-")]
        return items
    jobs = wait_until(first_job, 20, "the cronjob's first (catch-up) job")
    eq(len(jobs), 1, "one catch-up job only")
    j = jobs[0]
    ts = j["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"]
    sched = int(time.mktime(time.strptime(ts, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone)
    eq(j["metadata"]["name"], "tick-%d" % (sched // 60), "job name = minutes since epoch")
    eq(j["metadata"]["ownerReferences"][0]["kind"], "CronJob", "owner")
    cj = wait_until(lambda: (lambda c: c if (c.get("status") or {}).get("active") else None)(
        S["admin"].get(CRONJOBS + "/tick").json), 20, "status.active")
    eq(cj["status"]["active"][0]["name"], j["metadata"]["name"], "active ref")
    eq(cj["status"]["lastScheduleTime"], ts, "lastScheduleTime")
    out = kc("get", "cronjobs")
    eq(out.splitlines()[0].split(), ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE", "AGE"],
       "cronjob columns")
    check(out.splitlines()[1].split()[:6] == ["tick", "*", "*", "*", "*", "*"], out)
    check(out.splitlines()[1].split()[6:9] == ["<none>", "False", "1"], out)
    eq(kc("get", "cj", "tick", "-o", "jsonpath={.metadata.name}"), "tick", "short name cj")
    out = kc("describe", "cronjob", "tick")
    check("Schedule:" in out and re.search(r"Concurrency Policy: +Allow", out), out)
    p = wait_until(lambda: job_pods(j["metadata"]["name"]), 20, "pod of the cron job")[0]
    set_phase(p, "Succeeded")
    wait_until(lambda: (lambda s: not s.get("active") and s.get("lastSuccessfulTime"))(
        S["admin"].get(CRONJOBS + "/tick").json.get("status") or {}), 20, "active cleared, lastSuccessfulTime")
    # kubectl builds the job from the CronJob client-side
    kc("create", "job", "manual", "--from=cronjob/tick")
    mj = job("manual")
    eq(mj["metadata"]["annotations"].get("cronjob.kubernetes.io/instantiate"), "manual", "manual annotation")
    eq(mj["metadata"]["ownerReferences"][0]["name"], "tick", "owned by the cronjob")
    wait_until(lambda: job_pods("manual"), 20, "pod of the manual job")
    # the next minute (of the controller's clock) brings the next job: waits up to a minute, once
    wait_until(lambda: len(first_job()) >= 2, 70, "a second scheduled job", interval=1)
    kc("patch", "cronjob", "tick", "--type=merge", "-p", '{"spec":{"suspend":true}}')


def test_cronjob_concurrency_policies():
    cj = create(CRONJOBS, {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "cc"},
                           "spec": {"schedule": "* * * * *", "suspend": True, "concurrencyPolicy": "Forbid",
                                    "jobTemplate": {"spec": job_manifest("x")["spec"]}}})
    owner = {"apiVersion": "batch/v1", "kind": "CronJob", "name": "cc", "uid": cj["metadata"]["uid"],
             "controller": True, "blockOwnerDeletion": True}
    m = job_manifest("cc-running")
    m["metadata"]["ownerReferences"] = [owner]
    create(JOBS, m)
    wait_until(lambda: job_pods("cc-running"), 20, "the running job's pod")

    def cc_jobs():
        return sorted(j["metadata"]["name"] for j in S["admin"].get(JOBS).json.get("items") or []
                      if j["metadata"]["name"].startswith("cc-") and not j["metadata"].get("deletionTimestamp"))
    kc("patch", "cronjob", "cc", "--type=merge", "-p", '{"spec":{"suspend":false}}')
    wait_until(lambda: (S["admin"].get(CRONJOBS + "/cc").json.get("status") or {}).get("active"), 20,
               "the running job is active")
    time.sleep(2)
    eq(cc_jobs(), ["cc-running"], "Forbid: no new job while one runs")
    kc("patch", "cronjob", "cc", "--type=merge", "-p", '{"spec":{"concurrencyPolicy":"Replace"}}')
    jobs = wait_until(lambda: (lambda l: l if "cc-running" not in l and len(l) == 1 else None)(cc_jobs()), 20,
                      "Replace: the running job replaced by a scheduled one")
    check(jobs[0] != "cc-running" and jobs[0].startswith("cc-2"), jobs)
    kc("patch", "cronjob", "cc", "--type=merge", "-p", '{"spec":{"suspend":true}}')


def test_cronjob_history_limits():
    cj = create(CRONJOBS, {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "hist"},
                           "spec": {"schedule": "@yearly", "suspend": True, "successfulJobsHistoryLimit": 2,
                                    "failedJobsHistoryLimit": 1,
                                    "jobTemplate": {"spec": job_manifest("x")["spec"]}}})
    owner = {"apiVersion": "batch/v1", "kind": "CronJob", "name": "hist", "uid": cj["metadata"]["uid"],
             "controller": True, "blockOwnerDeletion": True}
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    made = []
    for i, kind in enumerate(["Complete"] * 4 + ["Failed"] * 2):
        m = job_manifest("hist-%d" % (1000 + i), suspend=True)
        m["metadata"]["ownerReferences"] = [owner]
        m["metadata"]["annotations"] = {"batch.kubernetes.io/cronjob-scheduled-timestamp":
                                        "2026-01-01T00:%02d:00Z" % i}
        j = create(JOBS, m)
        name = j["metadata"]["name"]

        def finish():  # the job controller writes status too (Suspended): retry on conflicts
            j = S["admin"].get(JOBS + "/" + name).json
            j["status"] = {"conditions": [{"type": kind, "status": "True", "reason": "Test", "message": "t",
                                           "lastTransitionTime": now}]}
            if kind == "Complete":
                j["status"]["completionTime"] = now
            return S["admin"].put(JOBS + "/" + name + "/status", j).status == 200
        wait_until(finish, 10, "job status of " + name)
        made.append(name)
    S["admin"].patch(CRONJOBS + "/hist", {"metadata": {"labels": {"poke": "1"}}})

    def left():
        return sorted(j["metadata"]["name"] for j in S["admin"].get(JOBS).json.get("items") or []
                      if j["metadata"]["name"].startswith("hist-") and not j["metadata"].get("deletionTimestamp"))
    wait_until(lambda: left() == ["hist-1002", "hist-1003", "hist-1005"], 30, "history limits kept")


def test_cronjob_too_many_missed():
    cj = create(CRONJOBS, {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "late"},
                           "spec": {"schedule": "* * * * *", "suspend": True,
                                    "jobTemplate": {"spec": job_manifest("x")["spec"]}}})
    cj["status"] = {"lastScheduleTime": time.strftime("%Y-%m-%dT%H:%M:00Z", time.gmtime(time.time() - 3 * 3600))}
    eq(S["admin"].put(CRONJOBS + "/late/status", cj).status, 200, "set lastScheduleTime")
    kc("patch", "cronjob", "late", "--type=merge", "-p", '{"spec":{"suspend":false}}')

    def late_jobs():
        return [j for j in S["admin"].get(JOBS).json.get("items") or [] if j["metadata"]["name"].startswith("late-")]
    js = wait_until(late_jobs, 20, "one catch-up job")
    time.sleep(1)
    js = late_jobs()
    eq(len(js), 1, "only one catch-up run")
    want = (int(time.time()) + NOW_OFFSET) // 60
    jn = js[0]["metadata"]["name"]
    check(abs(int(jn.split("-")[1]) - want) <= 1, "the most recent run: %s" % jn)
    evs = S["admin"].get("/api/v1/tenants/acme/namespaces/default/events").json.get("items") or []
    check(any(e.get("reason") == "TooManyMissedTimes" and e["involvedObject"]["name"] == "late" for e in evs),
          "TooManyMissedTimes event")
    kc("patch", "cronjob", "late", "--type=merge", "-p", '{"spec":{"suspend":true}}')


def test_cronjob_deleted_takes_jobs_and_namespace_deletion():
    jobs_of_tick = [j["metadata"]["name"] for j in S["admin"].get(JOBS).json.get("items") or []
                    if j["metadata"]["name"].startswith("tick-")]
    check(jobs_of_tick, "tick has jobs")
    kc("delete", "cronjob", "tick")
    wait_until(lambda: not [j for j in S["admin"].get(JOBS).json.get("items") or []
                            if j["metadata"]["name"] in jobs_of_tick + ["manual"]], 30,
               "the cronjob's jobs are collected")
    kc("create", "namespace", "batchns")
    kc("create", "job", "inns", "-n", "batchns", "--image=busybox", "--", "true")
    kc("create", "cronjob", "cjns", "-n", "batchns", "--image=busybox", "--schedule=@daily", "--", "true")
    kc("delete", "namespace", "batchns", "--wait=false")
    wait_until(lambda: S["admin"].get("/api/v1/tenants/acme/namespaces/batchns").status == 404, 60,
               "namespace with jobs and cronjobs deleted")


run(globals())
