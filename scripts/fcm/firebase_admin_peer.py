#!/usr/bin/env python3
"""Sends FCM messages with Google's firebase-admin SDK to the Herald FCM simulator (herald mock-fcm).

The SDK has no setting for the FCM endpoint, so this redirects it the documented way (docs/mock-fcm.md):
  - OAuth: the service-account JSON's token_uri already points at the simulator (google-auth posts there);
  - FCM:   firebase_admin.messaging._MessagingService.FCM_URL is replaced before the app's messaging
           service is first created (the SDK formats it with the project ID once, in its constructor);
  - TLS:   REQUESTS_CA_BUNDLE (requests: token and send) and SSL_CERT_FILE (httpx, send_each_async)
           name the simulator's CA; both are set here from --ca-file before anything connects.

Modes (one JSON line of results on stdout; exit 0 when every send went as expected):
  check:  one good token -> message name; one unregistered token -> messaging.UnregisteredError; both again
          through send_each_async (HTTP/2)
  rate:   N sends to good tokens, prints messages/s: --batch 1 is one send() at a time (HTTP/1.1, requests),
          larger batches use send_each (a thread per message, HTTP/1.1) or, with --async, send_each_async
          (httpx over HTTP/2, the SDK's fastest path)
"""
import argparse
import asyncio
import warnings
import json
import os
import sys
import time


def main():
    warnings.simplefilter("ignore", DeprecationWarning)  # Message.token: still fully supported (seed 003)
    parser = argparse.ArgumentParser()
    parser.add_argument("--service-account", required=True)
    parser.add_argument("--ca-file", required=True)
    parser.add_argument("--base-url", required=True, help="https://127.0.0.1:PORT, in place of https://fcm.googleapis.com")
    parser.add_argument("--mode", choices=["check", "rate"], default="check")
    parser.add_argument("--good-token", default="good-token-0001")
    parser.add_argument("--unregistered-token", default="dead-token-0001")
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=100, help="rate mode: messages per send_each call (1 = send() each, at most 500)")
    parser.add_argument("--async", dest="use_async", action="store_true", help="rate mode: send_each_async (HTTP/2)")
    args = parser.parse_args()

    os.environ["REQUESTS_CA_BUNDLE"] = args.ca_file
    os.environ["SSL_CERT_FILE"] = args.ca_file

    import firebase_admin
    from firebase_admin import credentials, messaging

    messaging._MessagingService.FCM_URL = args.base_url.rstrip("/") + "/v1/projects/{0}/messages:send"
    app = firebase_admin.initialize_app(credentials.Certificate(args.service_account), name="herald-mock")

    if args.mode == "check":
        result = {}
        name = messaging.send(messaging.Message(token=args.good_token, data={"k": "v"},
                                                notification=messaging.Notification(title="t", body="b")), app=app)
        result["good_name"] = name
        try:
            messaging.send(messaging.Message(token=args.unregistered_token, data={"k": "v"}), app=app)
            result["unregistered"] = "sent"
        except messaging.UnregisteredError as error:
            result["unregistered"] = "UnregisteredError"
            result["unregistered_code"] = error.code
            result["unregistered_status"] = error.http_response.status_code if error.http_response is not None else None
        except Exception as error:  # any other class means the SDK did not recognise the answer
            result["unregistered"] = type(error).__name__
            result["unregistered_message"] = str(error)
        # The same two through send_each_async: httpx over HTTP/2, the SDK's other transport.
        batch = asyncio.run(messaging.send_each_async(
            [messaging.Message(token=args.good_token, data={"k": "v"}), messaging.Message(token=args.unregistered_token)],
            app=app))
        result["async_good_name"] = batch.responses[0].message_id
        result["async_unregistered"] = type(batch.responses[1].exception).__name__
        print(json.dumps(result, sort_keys=True))
        ok = (name.startswith("projects/") and "/messages/" in name and result["unregistered"] == "UnregisteredError"
              and (result["async_good_name"] or "").startswith("projects/") and result["async_unregistered"] == "UnregisteredError")
        return 0 if ok else 1

    sent = failed = 0
    start = time.monotonic()
    if args.batch <= 1:
        for i in range(args.count):
            try:
                messaging.send(messaging.Message(token=f"{args.good_token}-{i}", data={"i": str(i)}), app=app)
                sent += 1
            except Exception:
                failed += 1
    else:
        def batches():
            for i in range(0, args.count, args.batch):
                n = min(args.batch, args.count - i)
                yield [messaging.Message(token=f"{args.good_token}-{i + j}", data={"i": str(i + j)}) for j in range(n)]

        async def send_all_async():
            # One event loop for every batch: the SDK's httpx client stays bound to the loop it first ran on.
            done = [0, 0]
            for batch in batches():
                response = await messaging.send_each_async(batch, app=app)
                done[0] += response.success_count
                done[1] += response.failure_count
            return done

        if args.use_async:
            sent, failed = asyncio.run(send_all_async())
        else:
            for batch in batches():
                response = messaging.send_each(batch, app=app)
                sent += response.success_count
                failed += response.failure_count
    elapsed = time.monotonic() - start
    print(json.dumps({"sent": sent, "failed": failed, "seconds": round(elapsed, 3),
                      "messages_per_second": round(sent / elapsed, 1) if elapsed > 0 else None,
                      "batch": args.batch, "async": args.use_async}, sort_keys=True))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
