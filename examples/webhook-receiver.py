#!/usr/bin/env python3
"""A receiver for `herald forward` (docs/operations.md): checks the signature, deduplicates, answers 2xx.

    python3 examples/webhook-receiver.py --port 8080 --hmac-key-file /etc/herald/webhook.key

Each POST body is {"stream": "<key>", "entries": [{"stream_id": "...", <fields>}]}. Herald delivers every entry at
least once: after a forwarder dies between the POST and its acknowledgement, another posts the batch again, so
an entry is identified by (stream, stream_id). Answer 2xx only once the entries are stored: anything else (or no
answer) makes Herald send the batch again later.

Testing options: --port 0 prints the chosen port on the first line of stdout; --fail-first N answers 503 to the
first N POSTs (a receiver that is down, then recovers); --record FILE appends one line "<stream> <stream_id>" per
received entry, duplicates included.
"""
import argparse
import hashlib
import hmac
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main():
    parser = argparse.ArgumentParser(description="Receive herald forward batches")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--bind", default="127.0.0.1")
    parser.add_argument("--hmac-key-file", help="verify X-Herald-Signature with this key")
    parser.add_argument("--fail-first", type=int, default=0, help="answer 503 to the first N POSTs")
    parser.add_argument("--record", help="append '<stream> <stream_id>' per entry to this file")
    args = parser.parse_args()

    key = None
    if args.hmac_key_file:
        with open(args.hmac_key_file, "rb") as f:
            key = f.read().rstrip(b"\n")
    lock = threading.Lock()
    state = {"posts": 0}
    seen = set()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with lock:
                state["posts"] += 1
                failing = state["posts"] <= args.fail_first
            if failing:
                return self.answer(503, b"down for the test\n")
            if key is not None:
                expected = "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest()
                if not hmac.compare_digest(expected, self.headers.get("X-Herald-Signature", "")):
                    return self.answer(401, b"bad signature\n")
            try:
                batch = json.loads(body)
                stream, entries = batch["stream"], batch["entries"]
            except (ValueError, KeyError, TypeError):
                return self.answer(400, b"not a herald batch\n")
            with lock:
                fresh = [e for e in entries if (stream, e["stream_id"]) not in seen]
                seen.update((stream, e["stream_id"]) for e in entries)
                if args.record:
                    with open(args.record, "a") as f:
                        for e in entries:
                            f.write(f"{stream} {e['stream_id']}\n")
            # Store `fresh` here (a database, a queue) before answering.
            self.answer(200, json.dumps({"received": len(entries), "new": len(fresh)}).encode())

        def answer(self, status, body):
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_):
            pass

    server = ThreadingHTTPServer((args.bind, args.port), Handler)
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
