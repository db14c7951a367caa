"""Load for the tests that SIGKILL `herald api`: 4 threads POST {"jobs": [good, bad]} until the API is gone.

usage: api_load.py URL ACKED_FILE [APP]
URL is the /v1/jobs endpoint. Good jobs have ids k<thread>-<n> and a distinct 64-hex token each (and "app": APP when
given); bad ones ids bad-<thread>-<n> and the token "nothex", which the API refuses. Each id answered 202 is appended
to ACKED_FILE, one a line, as soon as its answer arrives. A thread stops after 4 failed requests.
"""
import json, sys, threading
import requests

url, out = sys.argv[1], open(sys.argv[2], "a", buffering=1)
app = {"app": sys.argv[3]} if len(sys.argv) > 3 else {}
lock = threading.Lock()

def load(t):
    s = requests.Session()
    failures = 0
    for n in range(100000):
        good = dict(app, id="k%d-%d" % (t, n), token="%064x" % (t * 1000000 + n), payload={"aps": {"alert": "x"}})
        bad = dict(app, id="bad-%d-%d" % (t, n), token="nothex", payload={})
        try:
            r = s.post(url, data=json.dumps({"jobs": [good, bad]}), timeout=5)
        except Exception:
            failures += 1
            if failures > 3:
                return
            continue
        if r.status_code == 202:
            for a in r.json()["accepted"]:
                with lock:
                    out.write(a["id"] + "\n")

threads = [threading.Thread(target=load, args=(t,)) for t in range(4)]
for th in threads:
    th.start()
for th in threads:
    th.join()
