"""Expo's Python server SDK (exponent-server-sdk) as its users send: publish_multiple() of N messages (100 a
request, as the SDK chunks them), then check_receipts_multiple() of their tickets (1,000 a request), against
herald mock-expo. Prints one JSON object: messages per second over both phases and the process's CPU per message.
usage: expo_sdk_bench.py BASE_URL CA_FILE ACCESS_TOKEN_FILE COUNT"""
import json
import resource
import sys
import time

import requests
from exponent_server_sdk import PushClient, PushMessage

base, ca, token_file, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
session = requests.Session()
session.verify = ca
session.headers.update({"accept": "application/json", "accept-encoding": "gzip, deflate", "content-type": "application/json",
                        "authorization": "Bearer " + open(token_file).read().strip()})
client = PushClient(host=base, session=session)
messages = [PushMessage(to="ExponentPushToken[ok-sdk-%d]" % i, title="Order shipped", body="Your order %d has shipped and arrives on Tuesday." % i,
                        data={"order": i}, sound="default", priority="high") for i in range(count)]
cpu = lambda: sum(resource.getrusage(resource.RUSAGE_SELF)[:2])
start, cpu0 = time.monotonic(), cpu()
tickets = client.publish_multiple(messages)
ok = [t for t in tickets if t.is_success()]
receipts = client.check_receipts_multiple(ok)
elapsed, used = time.monotonic() - start, cpu() - cpu0
print(json.dumps({"messages": count, "tickets_ok": len(ok), "receipts": len(receipts), "seconds": round(elapsed, 3),
                  "messages_per_second": round(count / elapsed, 1), "cpu_us_per_message": round(used * 1e6 / count, 1)}))
