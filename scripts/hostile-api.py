"""The clients of scripts/hostile-api: the attackers, the well-behaved producers and the probe, all in one asyncio
loop, and a sampler of the API's RSS and CPU from /proc. Prints what each saw and one JSON line of figures; exits 1
when a well-behaved client was let down."""
import argparse
import asyncio
import concurrent.futures
import json
import os
import socket
import subprocess
import time

parser = argparse.ArgumentParser()
parser.add_argument("--url", required=True)
parser.add_argument("--pid", type=int, required=True)
parser.add_argument("--key", required=True)
parser.add_argument("--seconds", type=float, default=20)
parser.add_argument("--redis-port", type=int, required=True)
parser.add_argument("--uploads", type=int, default=1000)
parser.add_argument("--silent", type=int, default=1000)
parser.add_argument("--past-the-limit", type=int, default=1500)
parser.add_argument("--half-heads", type=int, default=200)
args = parser.parse_args()
host, port = args.url.split("//")[1].rstrip("/").split(":")
port = int(port)
TOKEN = "ab" * 32
UPLOAD_BYTES = 8 << 20
CHUNK = b"x" * (64 << 10)
TICKS = os.sysconf("SC_CLK_TCK")


def job(n):
    return json.dumps({"app": "shop", "token": TOKEN, "payload": {"aps": {"alert": "job %d" % n}}}).encode()


def request(method, path, body=b"", key=True, close=False):
    head = "%s %s HTTP/1.1\r\nHost: %s:%d\r\n" % (method, path, host, port)
    if key:
        head += "Authorization: Bearer %s\r\n" % args.key
    if body:
        head += "Content-Type: application/json\r\nContent-Length: %d\r\n" % len(body)
    if close:
        head += "Connection: close\r\n"
    return head.encode() + b"\r\n" + body


async def read_answer(reader):
    """The status of one HTTP/1.1 answer, its body read by Content-Length."""
    line = await reader.readline()
    if not line:
        raise ConnectionError("closed before an answer")
    status = int(line.split()[1])
    length = 0
    while True:
        header = await reader.readline()
        if header in (b"\r\n", b""):
            break
        name, _, value = header.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    await reader.readexactly(length)
    return status


class Tally:
    def __init__(self):
        self.counts = {}

    def add(self, what):
        self.counts[what] = self.counts.get(what, 0) + 1


async def keepalive_producer(stop, tally, accepted):
    reader, writer = await asyncio.open_connection(host, port)
    n = 0
    while not stop.is_set():
        n += 1
        try:
            writer.write(request("POST", "/v1/jobs", job(n)))
            status = await asyncio.wait_for(read_answer(reader), 10)
        except Exception as error:  # a lost connection is a let-down too
            tally.add("error: %s" % type(error).__name__)
            reader, writer = await asyncio.open_connection(host, port)
            continue
        tally.add(status)
        if status == 202:
            accepted.append(n)
        await asyncio.sleep(0.02)
    writer.close()


async def one_shot(method, path, body=b"", key=True):
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 10)
    try:
        writer.write(request(method, path, body, key=key, close=True))
        return await asyncio.wait_for(read_answer(reader), 10)
    finally:
        writer.close()


async def fresh_producer(stop, tally, accepted):
    n = 1_000_000
    while not stop.is_set():
        n += 1
        try:
            status = await one_shot("POST", "/v1/jobs", job(n))
        except Exception as error:
            status = "error: %s" % type(error).__name__
        tally.add(status)
        if status == 202:
            accepted.append(n)
        await asyncio.sleep(0.1)


async def prober(stop, tally):
    while not stop.is_set():
        try:
            status = await one_shot("GET", "/healthz", key=False)
        except Exception as error:
            status = "error: %s" % type(error).__name__
        tally.add(status)
        await asyncio.sleep(0.1)


CONNECTORS = concurrent.futures.ThreadPoolExecutor(16)


async def connect_sending(first_bytes):
    """A connection whose first bytes go out right behind the handshake, as a real client's do (from a thread: this
    one loop runs thousands of sockets, and bytes it sent later would make the socket look silent to the API)."""
    def connect():
        sock = socket.create_connection((host, port), timeout=30)
        if first_bytes:
            sock.sendall(first_bytes)
        sock.setblocking(False)
        return sock
    sock = await asyncio.get_running_loop().run_in_executor(CONNECTORS, connect)
    return await asyncio.open_connection(sock=sock)


async def keyless_upload(tally, sent):
    """A head declaring 8 MiB, then the body as fast as the API reads it, then the answer."""
    head = ("POST /v1/jobs HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
            % (host, port, UPLOAD_BYTES)).encode()
    try:
        reader, writer = await connect_sending(head)
    except Exception as error:
        return tally.add("connect error: %s" % type(error).__name__)
    answer = asyncio.ensure_future(read_answer(reader))
    try:
        for _ in range(UPLOAD_BYTES // len(CHUNK)):
            if answer.done():
                break
            writer.write(CHUNK)
            await writer.drain()
            sent[0] += len(CHUNK)
    except Exception:
        pass  # the API closed after its answer: the rest of the body goes nowhere
    try:
        tally.add(await asyncio.wait_for(answer, 30))
    except Exception as error:
        tally.add("no answer: %s" % type(error).__name__)
    writer.close()


async def hold(stop, first_bytes, tally):
    """One hostile socket: open, send `first_bytes` (or nothing), and hold it until the API closes it (at the request
    timeout, or to make room) or the attack ends."""
    if not stop.is_set():
        try:
            if first_bytes:
                reader, writer = await connect_sending(first_bytes)
            else:
                reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 5)
        except Exception as error:
            tally.add("connect error: %s" % type(error).__name__)
            return
        tally.add("opened")
        try:
            closed = asyncio.ensure_future(reader.read(65536))
            await asyncio.wait([closed, asyncio.ensure_future(stop.wait())], return_when=asyncio.FIRST_COMPLETED)
            if closed.done():
                tally.add("closed by the API")
            else:
                closed.cancel()
        except Exception:
            tally.add("closed by the API")
        writer.close()


def proc_sample(pid):
    with open("/proc/%d/status" % pid) as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS"))
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return rss, (int(fields[11]) + int(fields[12])) / TICKS


async def sampler(stop, samples):
    while not stop.is_set():
        samples.append((time.monotonic(),) + proc_sample(args.pid))
        await asyncio.sleep(0.1)


def metric(name):
    out = subprocess.run(["curl", "-s", "--max-time", "10", "-H", "Authorization: Bearer " + args.key, args.url + "metrics"],
                         capture_output=True, text=True).stdout
    return sum(float(line.split()[-1]) for line in out.splitlines() if line.startswith(name + " ") or line.startswith(name + "{"))


def metric_where(name, label):
    out = subprocess.run(["curl", "-s", "--max-time", "10", "-H", "Authorization: Bearer " + args.key, args.url + "metrics"],
                         capture_output=True, text=True).stdout
    return sum(float(line.split()[-1]) for line in out.splitlines() if line.startswith(name + "{") and label in line)


async def main():
    stop = asyncio.Event()
    tallies = {name: Tally() for name in ("keepalive", "fresh", "probe", "uploads", "silent", "past_the_limit", "half_heads")}
    accepted = []
    samples = []
    sent = [0]
    rss_before, cpu_before = proc_sample(args.pid)
    calm = [asyncio.ensure_future(c) for c in (
        keepalive_producer(stop, tallies["keepalive"], accepted), fresh_producer(stop, tallies["fresh"], accepted),
        prober(stop, tallies["probe"]), sampler(stop, samples))]
    await asyncio.sleep(1)
    started = time.monotonic()
    attack = [asyncio.ensure_future(keyless_upload(tallies["uploads"], sent)) for _ in range(args.uploads)]
    attack += [asyncio.ensure_future(hold(stop, b"", tallies["silent"])) for _ in range(args.silent)]
    attack += [asyncio.ensure_future(hold(stop, b"", tallies["past_the_limit"])) for _ in range(args.past_the_limit)]
    half = ("POST /v1/jobs HTTP/1.1\r\nHost: %s:%d\r\nContent-" % (host, port)).encode()
    attack += [asyncio.ensure_future(hold(stop, half, tallies["half_heads"])) for _ in range(args.half_heads)]
    await asyncio.sleep(args.seconds)
    attack_seconds = time.monotonic() - started
    open_during = metric("herald_api_open_connections")
    stop.set()
    await asyncio.gather(*calm)
    await asyncio.wait_for(asyncio.gather(*attack, return_exceptions=True), 120)
    await asyncio.sleep(1.5)
    open_after = metric("herald_api_open_connections")
    rejected = metric("herald_api_requests_rejected_total")
    answered_401 = metric_where("herald_api_requests_total", 'status="401"')
    in_redis = int(subprocess.run(["redis-cli", "-p", str(args.redis_port), "LLEN", "herald:queue"],
                                  capture_output=True, text=True).stdout.strip() or 0)

    during = [s for s in samples if s[0] >= started]
    peak_rss = max(s[1] for s in during)
    cpu = during[-1][2] - during[0][2]
    span = during[-1][0] - during[0][0]
    peak_cpu = max(((b[2] - a[2]) / (b[0] - a[0]) for a, b in zip(during, during[10:])), default=0)
    for name, tally in tallies.items():
        print("%s: %s" % (name, dict(sorted(tally.counts.items(), key=str))))
    print("API RSS %d KiB before, peak %d KiB during the attack; CPU %.2f s in %.1f s (%.0f %% of a core), peak %.0f %% "
          "over a second; %d MiB of keyless body sent; open connections %d during, %d after; %d jobs in Redis"
          % (rss_before, peak_rss, cpu, span, 100 * cpu / span, 100 * peak_cpu, sent[0] >> 20, open_during, open_after, in_redis))

    problems = []
    for name in ("keepalive", "fresh", "probe"):
        good = 200 if name == "probe" else 202
        bad = {k: v for k, v in tallies[name].counts.items() if k != good}
        if bad:
            problems.append("%s: answers other than %d: %s" % (name, good, bad))
        if not tallies[name].counts.get(good):
            problems.append("%s: no %d at all" % (name, good))
    # The API answers 401 from the head and closes; a client still writing its body may get the reset before it
    # reads the answer (TCP drops what it had received), so the API's own count of its 401s is the check.
    # Past every slot an upload may be answered 503 before its head is read (refused all the same).
    uploads_bad = {k: v for k, v in tallies["uploads"].counts.items() if k not in (401, 503) and not str(k).startswith("no answer")}
    if uploads_bad:
        problems.append("keyless uploads answered other than 401 or 503: %s" % uploads_bad)
    if answered_401 + tallies["uploads"].counts.get(503, 0) < args.uploads:
        problems.append("the API answered %d keyless uploads 401 and %d 503, of %d"
                        % (answered_401, tallies["uploads"].counts.get(503, 0), args.uploads))
    if in_redis != len(accepted):
        problems.append("%d jobs answered 202, %d in Redis" % (len(accepted), in_redis))
    if open_after > 5:
        problems.append("%d connections still open after the attack" % open_after)
    print(json.dumps({"hostile_seconds": round(attack_seconds, 1), "hostile_rss_kb_before": rss_before,
                      "hostile_peak_rss_kb": peak_rss, "hostile_cpu_percent": round(100 * cpu / span),
                      "hostile_peak_cpu_percent": round(100 * peak_cpu), "hostile_keyless_mib_sent": sent[0] >> 20,
                      "hostile_jobs_accepted": len(accepted), "hostile_rejected": rejected, "hostile_keyless_401": answered_401,
                      "hostile_open_during": open_during, "hostile_problems": len(problems)}))
    for problem in problems:
        print("hostile-api: " + problem)
    return 1 if problems else 0


raise SystemExit(asyncio.run(main()))
