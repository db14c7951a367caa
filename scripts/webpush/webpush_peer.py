#!/usr/bin/env python3
"""Web Push checked by code nobody at Herald wrote (PyPI: http_ece, py_vapid, cryptography, pywebpush).

Subcommands, each printing one JSON object on stdout:
  subscriber                      a fresh subscriber: private key (PEM), p256dh and auth as a browser gives them
  decrypt PEM AUTH BODY_FILE      http_ece decrypts an aes128gcm body with the subscriber's private key
  verify-vapid HEADER AUDIENCE    py_vapid checks an Authorization header's signature; the claims come back
  vapid-key                       a VAPID key as py_vapid makes it: PEM and the raw base64url private scalar
  send SUBSCRIPTION PAYLOAD KEY SUB   pywebpush sends a message (TLS checked against REQUESTS_CA_BUNDLE)
  post URL HEADERS_JSON BODY_FILE     requests posts bytes Herald prepared: status, headers and body back
  bench SUBSCRIPTION KEY SUB N [MODE] pywebpush sends N messages one after another: the rate and CPU per message
                                      (MODE session: one kept session, the default; webpush: webpush() per message)
"""
import base64
import json
import os
import sys

import http_ece
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from py_vapid import Vapid02, b64urlencode
from py_vapid import jwt as vapid_jwt


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def subscriber():
    key = ec.generate_private_key(ec.SECP256R1())
    point = key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return {"private_pem": pem.decode(), "p256dh": b64url(point), "auth": b64url(os.urandom(16))}


def decrypt(pem, auth, body_file):
    key = serialization.load_pem_private_key(pem.encode(), password=None)
    with open(body_file, "rb") as f:
        body = f.read()
    plain = http_ece.decrypt(body, private_key=key, auth_secret=b64url_decode(auth), version="aes128gcm")
    return {"plaintext": b64url(plain), "record_size": int.from_bytes(body[16:20], "big"), "length": len(body)}


def verify_vapid(header, audience):
    ok = Vapid02.verify(header)
    parts = dict(tok.split("=", 1) for tok in header.split(" ", 1)[1].split(","))
    claims = vapid_jwt.decode(parts["t"], parts["k"])
    header_json = json.loads(b64url_decode(parts["t"].split(".")[0]))
    return {"verified": bool(ok), "claims": claims, "jwt_header": header_json, "k": parts["k"], "audience_matches": claims.get("aud") == audience}


def vapid_key():
    v = Vapid02()
    v.generate_keys()
    raw = v.private_key.private_numbers().private_value.to_bytes(32, "big")
    point = v.public_key.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    return {"private_pem": v.private_pem().decode(), "private_raw": b64url(raw), "public": b64urlencode(point)}


def send(subscription, payload, key, sub):
    from pywebpush import WebPushException, webpush
    try:
        response = webpush(json.loads(subscription), data=payload, vapid_private_key=key, vapid_claims={"sub": sub}, ttl=30)
    except WebPushException as error:
        response = error.response
    return {"status": response.status_code, "location": response.headers.get("location"), "body": response.text}


def post(url, headers, body_file):
    import requests
    with open(body_file, "rb") as f:
        body = f.read()
    response = requests.post(url, data=body, headers=json.loads(headers), timeout=30)
    return {"status": response.status_code, "location": response.headers.get("location"), "body": response.text}


def bench(subscription, key, sub, count, mode):
    """mode "webpush": pywebpush's webpush() per message, as its README shows (a new HTTPS connection each);
    "session": what webpush() does per message (a VAPID header, a fresh encryption) on one kept session."""
    import resource
    import time

    import requests
    from pywebpush import WebPusher, webpush
    from py_vapid import Vapid02

    info = json.loads(subscription)
    vapid = Vapid02.from_string(key)
    session = requests.Session()

    def cpu():
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    started, cpu_started = time.monotonic(), cpu()
    ok = 0
    for i in range(count):
        if mode == "webpush":
            response = webpush(info, data="bench %d" % i, vapid_private_key=key, vapid_claims={"sub": sub}, ttl=60)
        else:
            headers = vapid.sign({"sub": sub, "aud": info["endpoint"].split("/push/")[0], "exp": int(time.time()) + 3600})
            response = WebPusher(info, requests_session=session).send(data="bench %d" % i, headers=headers, ttl=60)
        ok += response.status_code == 201
    seconds, cpu_seconds = time.monotonic() - started, cpu() - cpu_started
    return {"sent": count, "ok": ok, "seconds": seconds, "per_second": count / seconds, "mode": mode,
            "cpu_us_per_message": round(cpu_seconds / count * 1e6)}


def main():
    command = sys.argv[1]
    if command == "subscriber":
        result = subscriber()
    elif command == "decrypt":
        result = decrypt(sys.argv[2], sys.argv[3], sys.argv[4])
    elif command == "verify-vapid":
        result = verify_vapid(sys.argv[2], sys.argv[3])
    elif command == "vapid-key":
        result = vapid_key()
    elif command == "send":
        result = send(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
    elif command == "bench":
        result = bench(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6] if len(sys.argv) > 6 else "session")
    elif command == "post":
        result = post(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        raise SystemExit("unknown command " + command)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
