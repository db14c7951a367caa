#!/usr/bin/env python3
"""Sends Push Kit messages with Huawei's own Python admin SDK (PyPI: python-huawei-push-admin) to the Herald
Push Kit simulator (herald mock-hms).

How the SDK is pointed at the simulator (docs/mock-hms.md):
  - import: the package installs as `push_admin` but its modules import `src.push_admin` (the layout of
    Huawei's demo repository), so a package named `src` whose path is the SDK's parent directory is put in
    sys.modules first; `src.push_admin` then loads the installed files unchanged;
  - OAuth: initialize_app(token_server=...) takes the token URL (default Huawei's
    https://oauth-login.cloud.huawei.com/oauth2/v3/token): the simulator's /oauth2/v3/token;
  - Push:  initialize_app(push_open_url=...) takes the push root (default https://push-api.cloud.huawei.com),
    to which the SDK adds /v1/<app id>/messages:send;
  - TLS:   send_message(verify_peer=...) is handed to requests as verify= for the token request and the send
    alike: the simulator's CA file. No environment variable, no patched method.

One JSON line of results on stdout; exit 0 when every send went as expected. --mode check (the default):
  good token    -> code 80000000 and a request id
  good + bad    -> code 80100000, msg naming the bad token as illegal
  bad token     -> the SDK's ApiCallError (the simulator answers HTTP 400, code 80300007)
  wrong secret  -> the SDK's ApiCallError from its token refresh
--mode rate: --count sends of --batch good tokens each, one send_message() at a time (the SDK has no
  concurrency of its own: requests, HTTP/1.1, a new connection per call); prints messages (tokens) per second.
"""
import argparse
import importlib.util
import json
import os
import sys
import time
import types


def load_sdk():
    spec = importlib.util.find_spec("push_admin")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("python-huawei-push-admin is not installed (pip install python-huawei-push-admin)")
    parent = os.path.dirname(list(spec.submodule_search_locations)[0])
    alias = types.ModuleType("src")
    alias.__path__ = [parent]
    sys.modules["src"] = alias
    from src import push_admin
    from src.push_admin import messaging
    return push_admin, messaging


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--app-id", required=True)
    parser.add_argument("--client-secret-file", required=True)
    parser.add_argument("--ca-file", required=True)
    parser.add_argument("--base-url", required=True, help="https://127.0.0.1:PORT, in place of https://push-api.cloud.huawei.com")
    parser.add_argument("--token-url", required=True, help="in place of https://oauth-login.cloud.huawei.com/oauth2/v3/token")
    parser.add_argument("--good-token", default="good-token-0001")
    parser.add_argument("--bad-token", default="dead-token-0001")
    parser.add_argument("--mode", choices=["check", "rate"], default="check")
    parser.add_argument("--count", type=int, default=200, help="rate mode: sends")
    parser.add_argument("--batch", type=int, default=1, help="rate mode: tokens per send (at most 1000)")
    args = parser.parse_args()
    with open(args.client_secret_file) as handle:
        secret = handle.read().strip()

    push_admin, messaging = load_sdk()
    push_admin.initialize_app(args.app_id, secret, token_server=args.token_url, push_open_url=args.base_url.rstrip("/"))
    # A second app with a wrong secret, under another id the simulator also serves, for the refused credential.
    push_admin.initialize_app("99999999", "wrong-secret", token_server=args.token_url, push_open_url=args.base_url.rstrip("/"))

    def message(tokens):
        return messaging.Message(
            data='{"k":"v"}',
            notification=messaging.Notification(title="t", body="b"),
            android=messaging.AndroidConfig(urgency=messaging.AndroidConfig.HIGH_PRIORITY, ttl="86400s", category="IM"),
            token=tokens)

    def send(tokens, app_id=None):
        try:
            response = messaging.send_message(message(tokens), app_id=app_id, verify_peer=args.ca_file)
            return {"code": response.code, "msg": response.reason, "request_id": response.requestId}
        except messaging.ApiCallError as error:
            return {"error": type(error).__name__, "message": str(error)}
        except Exception as error:  # any other class means the SDK did not take the answer as Huawei's
            return {"error": type(error).__name__, "message": str(error)}

    if args.mode == "rate":
        sent = failed = 0
        start = time.monotonic()
        for i in range(args.count):
            answer = send([f"{args.good_token}-{i}-{j}" for j in range(args.batch)])
            if answer.get("code") == "80000000":
                sent += args.batch
            else:
                failed += args.batch
        elapsed = time.monotonic() - start
        print(json.dumps({"sent": sent, "failed": failed, "seconds": round(elapsed, 3), "batch": args.batch,
                          "messages_per_second": round(sent / elapsed, 1) if elapsed > 0 else None}, sort_keys=True))
        return 0 if failed == 0 else 1

    result = {"good": send([args.good_token]), "partial": send([args.good_token, args.bad_token]),
              "bad": send([args.bad_token]), "wrong_secret": send([args.good_token], app_id="99999999")}
    print(json.dumps(result, sort_keys=True))
    try:  # 80100000's msg is a JSON document; any other answer's is text
        partial_msg = json.loads(result["partial"].get("msg") or "{}")
    except ValueError:
        partial_msg = {}
    ok = (result["good"].get("code") == "80000000" and len(result["good"].get("request_id") or "") > 0
          and result["partial"].get("code") == "80100000" and partial_msg.get("illegal_tokens") == [args.bad_token]
          and result["bad"].get("error") == "ApiCallError" and "400" in result["bad"].get("message", "")
          and result["wrong_secret"].get("error") == "ApiCallError")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
