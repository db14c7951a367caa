#!/usr/bin/python3
"""The peer in scripts/bench: Debian's python3-aioapns sending the benchmark's notifications to the simulator.

Usage: bench-aioapns.py PORT CA_FILE KEY_FILE KEY_ID TEAM_ID TOPIC TOKEN PAYLOAD_FILE COUNT CONCURRENCY CONNECTIONS
Prints one JSON line: count, ok, seconds, per_s (after a warm-up that opens the connections).
"""
import asyncio
import json
import ssl
import sys
import time

import aioapns.connection as connection
from aioapns import APNs, NotificationRequest, PushType


def main():
    port, ca, key, key_id, team_id, topic, token, payload_file = sys.argv[1:9]
    count, concurrency, connections = (int(x) for x in sys.argv[9:12])
    for cls in (connection.APNsTLSClientProtocol, connection.APNsProductionClientProtocol):
        cls.APNS_SERVER, cls.APNS_PORT = "127.0.0.1", int(port)
    with open(payload_file) as f:
        message = json.load(f)
    context = ssl.create_default_context(cafile=ca)
    context.set_alpn_protocols(["h2"])

    async def run():
        apns = APNs(key=key, key_id=key_id, team_id=team_id, topic=topic, max_connections=connections,
                    ssl_context=context)
        statuses = {}

        async def sender(n):
            for _ in range(n):
                r = await apns.send_notification(NotificationRequest(
                    device_token=token, message=message, push_type=PushType.ALERT))
                statuses[r.status] = statuses.get(r.status, 0) + 1

        def split(total):
            base, extra = divmod(total, concurrency)
            return [base + (1 if i < extra else 0) for i in range(concurrency)]

        await asyncio.gather(*(sender(n) for n in split(min(count, 2 * concurrency))))  # warm-up
        statuses.clear()
        started = time.monotonic()
        await asyncio.gather(*(sender(n) for n in split(count)))
        seconds = time.monotonic() - started
        apns.pool.close()
        return statuses, seconds

    statuses, seconds = asyncio.run(run())
    ok = statuses.get("200", 0) + statuses.get(200, 0)
    print(json.dumps({"count": count, "ok": ok, "statuses": {str(k): v for k, v in statuses.items()},
                      "seconds": round(seconds, 3), "per_s": round(count / seconds), "concurrency": concurrency,
                      "connections": connections}))


main()
