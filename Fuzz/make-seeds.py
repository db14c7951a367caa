#!/usr/bin/env python3
"""Writes the seed corpora Fuzz/Corpus/<target>/ from the inputs the unit tests already use, so fuzzing starts
from shapes the code is known to handle (and to refuse). Rerun after changing the tests; `scripts/fuzz --merge`
then minimises seeds plus findings. Seeds are named by content hash, so reruns do not duplicate them."""
import glob
import hashlib
import json
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RAW = re.compile(r'#"(.*?)"#')  # one-line Swift raw strings: no escapes to undo


def raw_literals(*patterns):
    """Single-line raw string literals of the given test files, without interpolations."""
    found = []
    for pattern in patterns:
        for path in sorted(glob.glob(os.path.join(ROOT, pattern))):
            for line in open(path, encoding="utf-8"):
                found += [s for s in RAW.findall(line) if "\\#(" not in s]
    return found


def multiline_raw_literals(path):
    """Multi-line raw literals (#, three quotes, newline ... three quotes, #); indentation kept, JSON does not mind."""
    text = open(os.path.join(ROOT, path), encoding="utf-8").read()
    return [s for s in re.findall(r'#"""\n(.*?)\n\s*"""#', text, re.S) if "\\#(" not in s]


def swift_literals(path):
    """Ordinary "..." literals of a test file with the escapes RESP tests use (\\r \\n \\t \\\\ \\")."""
    text = open(os.path.join(ROOT, path), encoding="utf-8").read()
    out = []
    for s in re.findall(r'(?<!#)"((?:[^"\\\n]|\\.)*)"', text):
        if "\\(" in s:
            continue
        out.append(s.replace("\\r", "\r").replace("\\n", "\n").replace("\\t", "\t").replace('\\"', '"').replace("\\\\", "\\"))
    return out


def write(target, seeds):
    directory = os.path.join(ROOT, "Fuzz", "Corpus", target)
    os.makedirs(directory, exist_ok=True)
    for seed in seeds:
        data = seed if isinstance(seed, bytes) else seed.encode("utf-8")
        if len(data) > 8192:
            continue
        name = hashlib.sha1(data).hexdigest()[:16]
        with open(os.path.join(directory, name), "wb") as f:
            f.write(data)
    print(f"{target}: {len(os.listdir(directory))} seeds")


def main():
    jobs = raw_literals("Tests/PushCoreTests/JobParserTests.swift", "Tests/RedisQueueTests/EnvelopeTests.swift")
    jobs += open(os.path.join(ROOT, "examples", "sample-jobs.jsonl"), encoding="utf-8").read().splitlines()[:3]
    write("FuzzJobParser", [j for j in jobs if j.lstrip().startswith(("{", "["))])

    json_docs = raw_literals("Tests/PushCoreTests/*.swift", "Tests/APNsTests/*.swift", "Tests/FCMTests/*.swift",
                             "Tests/WorkerTests/ConfigurationTests.swift")
    json_docs += ['"x"', "-0.5e+3", "[true,false,null]", '{"a":"\\ud83d\\ude00"}', "[[[[]]]]", " 12 "]
    write("FuzzJSONScanner", json_docs)

    bodies = [b for b in raw_literals("Tests/APNsTests/ResponseTests.swift") if b.lstrip().startswith("{")]
    statuses = [400, 403, 410, 429, 500, 503]
    # The target reads a status from the first two bytes: (status - 100) big-endian.
    write("FuzzAPNsResponse", [bytes([(s - 100) >> 8, (s - 100) & 0xFF]) + b.encode() for s in statuses for b in bodies[:3]]
          + [bytes([0, 100]) + b"", bytes([1, 54]) + b'{"reason":"BadEnvironmentKeyInToken"}'])

    resp = [s for s in swift_literals("Tests/RedisQueueTests/RESPTests.swift") if "\r\n" in s]
    resp += ["*2\r\n$4\r\nLPOP\r\n:3\r\n", "*3\r\n$13\r\n1700000000-0\r\n*2\r\n$4\r\njob1\r\n$2\r\n{}\r\n:-1\r\n",
             "-NOSCRIPT No matching script\r\n", "$-1\r\n*-1\r\n"]
    write("FuzzRESPReader", resp)

    configs = [c for c in raw_literals("Tests/WorkerTests/ConfigurationTests.swift") if c.lstrip().startswith("{")]
    configs += multiline_raw_literals("Tests/WorkerTests/ConfigurationTests.swift")
    for name in ("herald.json", "compose.json"):
        configs.append(open(os.path.join(ROOT, "examples", name), encoding="utf-8").read())
    # After a NUL byte, NAME=value lines become the environment.
    configs.append(configs[0] + "\0HERALD_QUEUES=a, b\nHERALD_MAX_IN_FLIGHT=99\nHERALD_APNS_CONNECTIONS=x\n")
    write("FuzzConfiguration", configs)

    # The simulator's header/payload table in CurlAgreementTests, as "name: value" lines, a blank line, the body.
    table = open(os.path.join(ROOT, "Tests/SimulatorsTests/CurlAgreementTests.swift"), encoding="utf-8").read()
    requests = []
    token = "/3/device/" + "ab" * 32
    for headers, body in re.findall(r'\(\[((?:"[^"]*",?\s*)*)\],\s*(#"(?:.*?)"#|"[^"]*")', table):
        lines = re.findall(r'"([^"]*)"', headers)
        body = body[2:-2] if body.startswith("#") else body[1:-1]
        if "\\#(" in body:
            body = '{"aps":{"alert":"' + "x" * 4100 + '"}}'
        requests.append("\n".join([":method: POST", ":path: " + token] + lines) + "\n\n" + body)
    requests.append(":method: GET\n:path: /3/device/abc?x=1\napns-priority: 10\napns-push-type: background\n\n{}")
    requests.append(":method: POST\n:path: /3/device/ab\napns-topic: t\napns-id: 123e4567-e89b-12d3-a456-426614174000\n"
                    "apns-expiration: 0\napns-collapse-id: c\n\n" + json.dumps({"aps": {"alert": "hi"}}))
    write("FuzzRequestRules", requests)

    # FCM's answers: the error bodies the unit tests decode, behind a status (as FuzzAPNsResponse) and an
    # optional Retry-After header ended by a NUL byte.
    fcm_bodies = [b for b in raw_literals("Tests/FCMTests/FCMOutcomeTests.swift", "Tests/APNsTests/ResponseTests.swift")
                  if b.lstrip().startswith("{")]
    fcm_statuses = [200, 400, 401, 403, 404, 429, 500, 503]
    write("FuzzFCMResponse", [bytes([(s - 100) >> 8, (s - 100) & 0xFF]) + b.encode() for s in fcm_statuses for b in fcm_bodies[:4]]
          + [bytes([1, 73]) + b"30\0" + b'{"error":{"code":429,"status":"RESOURCE_EXHAUSTED"}}',
             bytes([1, 44]) + b"<html><body>404</body></html>", bytes([0, 100]) + b'{"name":"projects/p/messages/1"}'])

    # Requests as `herald api` meets them, behind the byte that picks the limits: bodies by length and chunked,
    # pipelined pairs, the smuggling shapes the parser refuses, oversized heads.
    job = json.dumps({"token": "ab" * 32, "payload": {"aps": {"alert": "hi"}}})
    api = ["POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(job), job),
           "POST /v1/jobs HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;e=1\r\n{\"a\":\r\n2\r\n1}\r\n0\r\nT: 1\r\n\r\n",
           "GET /healthz HTTP/1.1\r\n\r\nGET /readyz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
           "POST /v1/jobs HTTP/1.1\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}",
           "POST / HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
           "POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n",
           "GET / HTTP/1.1\r\nX: a\r\n folded\r\n\r\n", "GET / HTTP/2.0\r\n\r\n",
           "GET / HTTP/1.1\r\nX: " + "a" * 600 + "\r\n\r\n"]
    # And as the metrics listener meets them (the same parser): good heads, bare line feeds, oversized and garbage.
    api += ["GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "HEAD /healthz?x=1 HTTP/1.0\n\n",
            "GET /readyz HTTP/1.1\r\nConnection: close\r\n\r\nextra", "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
            "GET nopath HTTP/1.1\r\n\r\n", "\x01\x02 nonsense\r\n\r\n", "GET / HTTP/1.1\n\r\n", "GET /\x7f HTTP/1.1\r\n\r\n"]
    api += [s + "\r\n\r\n" for s in raw_literals("Tests/WorkerTests/MetricsListenerTests.swift") if "HTTP/" in s]
    write("FuzzHTTP1Parser", [bytes([c]) + r.encode() for c in (0x20, 0x7F, 0xFF) for r in api])


if __name__ == "__main__":
    main()
