"""Counts a resource manager's Ready nodes for bench/run-region.sh, from a list and a watch of
its nodes (a full list of 10,000 nodes every 5 s cost the RM seconds of CPU on this machine).

usage: region_nodes.py OUT URLS CA TOKEN_FILE STOP_FILE
  Writes "READY TOTAL" to OUT (atomically) every second, then a line "PREFIX READY TOTAL" per
  hollow kubelet process (its nodes' names less the trailing "-N": a killed process has healed
  when all of its own nodes are Ready again); URLS is the RM's API servers,
  comma-separated, tried in turn when a list or watch fails or ends (410 Gone, a server killed).
  Ends when STOP_FILE exists (checked every second) or on SIGTERM.
"""
import http.client
import json
import os
import ssl
import sys
import threading
import time
import urllib.parse

out, urls, ca, token_file, stop = sys.argv[1:6]
urls = urls.split(",")
token = open(token_file).read().strip()
ctx = ssl.create_default_context(cafile=ca)
ready = {}  # node name -> Ready condition is True


def writer():
    while not os.path.exists(stop):
        try:
            items = list(ready.items())
            per = {}
            for name, ok in items:
                c = per.setdefault(name.rsplit("-", 1)[0], [0, 0])
                c[0] += ok
                c[1] += 1
            with open(out + ".tmp", "w") as f:
                f.write("%d %d\n" % (sum(ok for _, ok in items), len(items)))
                for prefix in sorted(per):
                    f.write("%s %d %d\n" % (prefix, per[prefix][0], per[prefix][1]))
            os.replace(out + ".tmp", out)
        except (OSError, RuntimeError):
            pass
        time.sleep(1)
    os._exit(0)


def is_ready(node):
    for c in (node.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


def request(url, path):
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=120)
    conn.request("GET", path, headers={"Authorization": "Bearer " + token})
    resp = conn.getresponse()
    if resp.status != 200:
        conn.close()
        raise OSError("%s%s: HTTP %d" % (url, path, resp.status))
    return conn, resp


threading.Thread(target=writer, daemon=True).start()
i = 0
while True:
    url = urls[i % len(urls)]
    i += 1
    try:
        conn, resp = request(url, "/api/v1/nodes")
        body = json.loads(resp.read())
        conn.close()
        ready = {n["metadata"]["name"]: is_ready(n) for n in body.get("items") or []}
        rv = (body.get("metadata") or {}).get("resourceVersion", "")
        conn, resp = request(url, "/api/v1/nodes?watch=true&allowWatchBookmarks=true&resourceVersion=" + rv)
        conn.sock.settimeout(None)  # a watch may be quiet for minutes
        while True:
            line = resp.readline()
            if not line:
                break
            ev = json.loads(line)
            kind, obj = ev.get("type"), ev.get("object") or {}
            if kind == "ERROR":
                break
            name = (obj.get("metadata") or {}).get("name")
            if kind in ("ADDED", "MODIFIED") and name:
                ready[name] = is_ready(obj)
            elif kind == "DELETED" and name:
                ready.pop(name, None)
        conn.close()
    except (OSError, ValueError, http.client.HTTPException):
        time.sleep(1)
