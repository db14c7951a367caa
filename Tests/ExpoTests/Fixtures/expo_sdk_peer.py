"""Expo's own Python server SDK (exponent-server-sdk) against herald mock-expo: every fate's ticket, then the
receipts of the ok tickets, printed as one JSON object. Arguments: base URL, CA file, access token file."""
import json
import sys
import time

import requests
from exponent_server_sdk import PushClient, PushMessage, PushServerError

base, ca, token_file = sys.argv[1:4]
session = requests.Session()
session.verify = ca
session.headers.update({"accept": "application/json", "accept-encoding": "gzip, deflate", "content-type": "application/json",
                        "authorization": "Bearer " + open(token_file).read().strip()})
client = PushClient(host=base, session=session)
fates = ["ok", "gone", "rate", "big", "rgone", "rerr", "late", "never"]
messages = [PushMessage(to="ExponentPushToken[%s-1]" % fate, title="Herald", body="fate " + fate, data={"fate": fate}, sound="default",
                        ttl=60, priority="high", channel_id="peer", badge=1) for fate in fates]
tickets = client.publish_multiple(messages)
out = {"tickets": {}, "receipts": {}}
ok = []
for fate, ticket in zip(fates, tickets):
    out["tickets"][fate] = ticket.status if ticket.is_success() else (ticket.details or {}).get("error")
    if ticket.is_success():
        ok.append((fate, ticket))
time.sleep(float(sys.argv[4]) if len(sys.argv) > 4 else 1.0)
receipts = client.check_receipts_multiple([t for _, t in ok])
by_id = {r.id: r for r in receipts}
for fate, ticket in ok:
    receipt = by_id.get(ticket.id)
    out["receipts"][fate] = None if receipt is None else (receipt.status if receipt.is_success() else (receipt.details or {}).get("error"))
# A wrong access token: the whole request is refused, which the SDK raises as a server error.
session.headers["authorization"] = "Bearer wrong"
try:
    client.publish(PushMessage(to="ExponentPushToken[ok-2]", body="x"))
    out["wrong_token"] = "accepted"
except (PushServerError, requests.HTTPError) as error:
    out["wrong_token"] = type(error).__name__
print(json.dumps(out, sort_keys=True))
