#!/usr/bin/python3
"""Herald's fault suite: the scenario runner behind scripts/chaos (see docs/operations.md, "Fault suite").

Starts its own redis-server (AOF, appendfsync always), the APNs simulator, two fault proxies
(scripts/faultproxy.py: worker -> Redis, worker -> simulator) and K worker processes; pushes jobs of known fates
at a steady pace while injecting faults chosen by a seeded RNG; then stops injecting, waits (with a deadline)
for everything to settle and checks the contract:
  - every job exactly one terminal outcome, last, of the expected kind (lost 0, wrong 0);
  - every dead letter and every dropped token exactly once;
  - duplicates (notifications the simulator accepted more than once) counted and bounded by what was in flight
    at the faults that can cause them;
  - queue, retry set and lease hashes empty; no worker exited by itself;
  - the observed worker's (never killed) RSS and open fds flat between the end of the warm-up and the end.
Prints a summary; the last line is one JSON object. Exit status 1 on any breach, 2 when the world itself could
not be set up or did not settle in time.
"""
import argparse
import collections
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PY = sys.executable or "/usr/bin/python3"
TOPIC = "com.example.chaos"
KEY_ID, TEAM_ID = "CHAOSKEY01", "CHAOSTEAM1"

# Fates by token prefix: the simulator's rule, and what Herald must record as the job's one terminal outcome.
FATES = [
    # name, weight, token prefix, outcome, reason check
    ("delivered", 55, "0c", "delivered", None),
    ("unregistered_410", 8, "dead", "token_dropped", "Unregistered"),
    ("bad_token_400", 6, "5a", "token_dropped", "BadDeviceToken"),
    ("not_for_topic_400", 5, "bad0", "failed", "DeviceTokenNotForTopic"),
    ("error_500_then_delivered", 8, "e5", "delivered", None),
    ("throttled_429_then_delivered", 8, "77", "delivered", None),
    ("always_503", 2, "e6", "failed", "MaxAttempts:"),
    ("malformed", 8, None, "rejected", None),
]
SIMULATOR_RULES = [
    {"tokenPrefix": "dead", "fate": "unregistered"},
    {"tokenPrefix": "5a", "fate": "otherEnvironment"},
    {"tokenPrefix": "bad0", "fate": "otherTopic"},
    {"tokenPrefix": "e5", "fate": "failFirst", "count": 1, "status": 500, "reason": "InternalServerError"},
    {"tokenPrefix": "77", "fate": "failFirst", "count": 1, "status": 429, "reason": "TooManyRequests"},
    {"tokenPrefix": "e6", "fate": "error", "status": 503, "reason": "ServiceUnavailable"},
]

MAX_IN_FLIGHT = 200
CLAIM_BATCH = 10
LEASE_SECONDS = 10


def log(message):
    print(f"chaos: {message}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisError(Exception):
    pass


class Redis:
    """A minimal blocking RESP client (the runner's own view of Redis, never through a proxy)."""

    def __init__(self, port, timeout=5.0):
        self.port, self.timeout = port, timeout
        self.sock, self.buf = None, b""

    def close(self):
        if self.sock:
            self.sock.close()
        self.sock, self.buf = None, b""

    def command(self, *args):
        if self.sock is None:
            self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=self.timeout)
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            b = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(b), b))
        try:
            self.sock.sendall(b"".join(out))
            return self._read()
        except OSError:
            self.close()
            raise

    def _line(self):
        while b"\r\n" not in self.buf:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("redis closed the connection")
            self.buf += data
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            data = self.sock.recv(max(65536, n + 2 - len(self.buf)))
            if not data:
                raise ConnectionError("redis closed the connection")
            self.buf += data
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def _read(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RedisError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._read() for _ in range(n)]
        raise RedisError(f"unexpected reply {line[:40]!r}")


class World:
    """Every process of the run, started and stopped by pid; the work directory."""

    def __init__(self, args):
        self.args = args
        self.work = tempfile.mkdtemp(prefix="herald-chaos.")
        self.procs = {}  # name -> Popen
        self.expected_exit = set()  # names whose exit we caused
        self.redis_port = free_port()
        self.redis_dir = os.path.join(self.work, "redis")
        os.makedirs(self.redis_dir)
        self.redis = Redis(self.redis_port)

    # --- processes ---

    def spawn(self, name, argv, log_name=None, **kw):
        out = open(os.path.join(self.work, log_name or name + ".log"), "ab")
        self.procs[name] = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, **kw)
        out.close()
        self.expected_exit.discard(name)
        return self.procs[name]

    def signal(self, name, sig):
        proc = self.procs.get(name)
        if proc and proc.poll() is None:
            self.expected_exit.add(name)
            proc.send_signal(sig)

    def wait_exit(self, name, seconds):
        proc = self.procs.get(name)
        if not proc:
            return None
        try:
            return proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            log(f"{name} (pid {proc.pid}) did not exit in {seconds} s; killing it")
            proc.kill()
            return proc.wait(timeout=10)

    def stop_all(self):
        """SIGTERM to everything still running, up to 10 s, then SIGKILL. Every exit path goes through here."""
        for name, proc in self.procs.items():
            if proc.poll() is None:
                self.expected_exit.add(name)
                proc.terminate()
        deadline = time.monotonic() + 10
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)

    def wait_for(self, what, predicate, seconds, proc_name=None):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if predicate():
                return
            if proc_name and self.procs[proc_name].poll() is not None:
                raise SetupError(f"{what}: {proc_name} exited with {self.procs[proc_name].returncode}; see {self.work}/{proc_name}.log")
            time.sleep(0.05)
        raise SetupError(f"{what}: not within {seconds} s")

    # --- Redis ---

    def start_redis(self):
        self.spawn("redis", ["redis-server", "--port", str(self.redis_port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "yes", "--appendfsync", "always", "--dir", self.redis_dir,
                             "--daemonize", "no", "--maxmemory-policy", "noeviction"])

        def up():
            try:
                return self.redis.command("PING") == "PONG"
            except (OSError, RedisError):
                self.redis.close()
                return False
        self.wait_for("redis-server ready", up, 30, "redis")

    def redis_up(self):
        return self.procs["redis"].poll() is None

    # --- the simulator and the proxies ---

    def start_simulator(self):
        tls = os.path.join(self.work, "tls")
        faults = os.path.join(self.work, "faults.json")
        with open(faults, "w") as f:
            json.dump({"seed": self.args.seed, "latencyMs": [0, 3], "rules": SIMULATOR_RULES}, f)
        ready = os.path.join(self.work, "simulator-ready.json")
        self.accepted_log = os.path.join(self.work, "accepted.jsonl")
        self.spawn("simulator", [self.args.herald, "mock-apns", "--port", "0", "--generate-tls", tls, "--generate-key", tls,
                                 "--key-id", KEY_ID, "--team-id", TEAM_ID, "--config", faults,
                                 "--log-file", self.accepted_log, "--ready-file", ready])
        self.wait_for("simulator ready", lambda: os.path.exists(ready) and os.path.getsize(ready) > 0, 60, "simulator")
        self.simulator = json.load(open(ready))

    def start_proxy(self, name, upstream_port):
        ready = os.path.join(self.work, name + "-ready.json")
        self.spawn(name, [PY, os.path.join(HERE, "faultproxy.py"), "--upstream", f"127.0.0.1:{upstream_port}",
                          "--ready-file", ready])
        self.wait_for(f"{name} ready", lambda: os.path.exists(ready), 20, name)
        info = json.load(open(ready))
        return Proxy(name, info["port"], info["control_port"])

    def simulator_stats(self):
        try:
            out = subprocess.run(["curl", "-s", "--http2", "--cacert", self.simulator["ca_file"], "--max-time", "10",
                                  f"https://127.0.0.1:{self.simulator['port']}/_mock/stats"],
                                 capture_output=True, timeout=20).stdout
            return json.loads(out or b"{}")
        except (subprocess.TimeoutExpired, ValueError):
            return {}


class SetupError(Exception):
    pass


class Proxy:
    """The control channel of one faultproxy.py."""

    def __init__(self, name, port, control_port):
        self.name, self.port, self.control_port = name, port, control_port
        self.sock = None

    def send(self, line):
        for attempt in range(3):
            try:
                if self.sock is None:
                    self.sock = socket.create_connection(("127.0.0.1", self.control_port), timeout=10)
                    self.file = self.sock.makefile("rb")
                self.sock.sendall((line + "\n").encode())
                reply = json.loads(self.file.readline() or b"{}")
                if not reply.get("ok"):
                    raise SetupError(f"{self.name}: {line}: {reply}")
                return reply
            except OSError:
                if self.sock:
                    self.sock.close()
                self.sock = None
        raise SetupError(f"{self.name}: control channel on port {self.control_port} does not answer")


class Jobs:
    """Jobs of known fates: bytes to push, and what each must end as."""

    def __init__(self, seed):
        self.rng = random.Random(f"jobs-{seed}")
        self.seed = seed
        self.n = 0
        self.expected = {}  # id -> (fate name, outcome, reason check)
        self.token_of = {}  # id -> token
        self.anonymous = set()  # bytes of malformed jobs without an id (not JSON): matched by dead letter only
        self.malformed = {}  # bytes -> id or None
        self.by_fate = collections.Counter()

    def make(self):
        names = [f[0] for f in FATES]
        weights = [f[1] for f in FATES]
        name = self.rng.choices(names, weights)[0]
        fate = next(f for f in FATES if f[0] == name)
        i = self.n
        self.n += 1
        job_id = f"chaos-{self.seed}-{i}"
        self.by_fate[name] += 1
        if name == "malformed":
            kind = i % 4
            token = "0c" + format(i, "x").rjust(62, "0")
            # Not JSON: no id to echo, so Herald makes one; matched by its dead letter and counted by the
            # rejected entries under ids that are not ours.
            if kind == 0:
                data = f"chaos {job_id}: this is not JSON {{".encode()
                self.anonymous.add(data)
                self.malformed[data] = None
                return data
            data = [json.dumps({"id": job_id, "payload": {"aps": {"alert": "no token"}}}),
                    json.dumps({"id": job_id, "token": f"zz-not-hex-{i}", "payload": {"aps": {}}}),
                    json.dumps({"id": job_id, "token": token, "payload": {"aps": {"alert": "x" * 5000}}})][kind - 1].encode()
            self.malformed[data] = job_id
            self.expected[job_id] = (name, "rejected", None)
            return data
        prefix = fate[2]
        token = prefix + format(i, "x").rjust(64 - len(prefix), "0")
        self.expected[job_id] = (name, fate[3], fate[4])
        self.token_of[job_id] = token
        return json.dumps({"id": job_id, "token": token, "topic": TOPIC,
                           "payload": {"aps": {"alert": f"chaos job {i}"}}}, separators=(",", ":")).encode()


FAULT_KINDS = [f"{path}.{kind}" for path in ("redis", "apns")
               for kind in ("latency", "bandwidth", "reset", "cut", "blackhole", "refuse")] \
    + ["worker.sigkill", "worker.sigterm", "redis.sigkill"]


def fault_name(path, kind):
    """The name a choice is counted under in the summary."""
    if path == "worker":
        return "worker.sig" + kind
    if path == "redis-server":
        return "redis.sigkill"
    return f"{path}.{kind}"


class Chaos:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(f"faults-{args.seed}")
        self.world = World(args)
        self.jobs = Jobs(args.seed)
        self.faults = collections.Counter()
        self.episodes = []  # (t, kind, detail, duplicate bound), written to episodes.json in the work directory
        self.duplicate_bound = 0
        self.timers = []  # (due, description, action)
        self.busy_until = collections.defaultdict(float)
        self.worker_ids = {}
        self.worker_generation = collections.Counter()
        self.unexpected_exits = []
        self.pending_term = {}  # worker index -> when SIGTERM was sent
        self.worker_started = {}  # worker index -> when its process was spawned
        self.leased_when_redis_died = None
        self.t0 = time.monotonic()

    # --- setup ---

    def worker_config(self):
        w = self.world
        config = {
            "redis": {"url": f"redis://127.0.0.1:{self.redis_proxy.port}/0", "connect_timeout_ms": 2000,
                      "command_timeout_ms": 3000},
            "apns": {"production_url": f"https://127.0.0.1:{self.apns_proxy.port}",
                     "sandbox_url": f"https://127.0.0.1:{self.apns_proxy.port}",
                     "ca_file": w.simulator["ca_file"], "connections_per_pool": 2, "request_timeout_ms": 5000,
                     "connect_timeout_ms": 3000, "ping_idle_seconds": self.args.ping_idle, "ping_timeout_seconds": 2},
            "apps": [{"name": "chaos", "bundle_id": TOPIC, "environments": ["production"],
                      "token": {"team_id": TEAM_ID, "key_id": KEY_ID, "key_file": w.simulator["key_file"]}}],
            # Short schedules so a one-minute round settles: 1 s doubling to 2 s; 8 attempts.
            "retry": {"server_error_base_seconds": 1, "server_error_cap_seconds": 2, "throttle_base_seconds": 1,
                      "throttle_cap_seconds": 2, "jitter_fraction": 0.2, "max_attempts": 8,
                      "configuration_pause_seconds": 2, "outage_pause_seconds": 1, "outage_pause_cap_seconds": 2},
            "worker": {"max_in_flight": MAX_IN_FLIGHT, "claim_batch": CLAIM_BATCH, "lease_seconds": LEASE_SECONDS,
                       "shutdown_deadline_seconds": 5, "log_level": "info"},
        }
        path = os.path.join(w.work, "worker.json")
        with open(path, "w") as f:
            json.dump(config, f, indent=1)
        check = subprocess.run([self.args.herald, "check-config", "--config", path], capture_output=True, timeout=60)
        if check.returncode != 0:
            raise SetupError(f"check-config refused the worker configuration: {check.stdout.decode()} {check.stderr.decode()}")
        return path

    def setup(self):
        w = self.world
        w.start_redis()
        w.start_simulator()
        self.redis_proxy = w.start_proxy("redis-proxy", w.redis_port)
        self.apns_proxy = w.start_proxy("apns-proxy", w.simulator["port"])
        self.config = self.worker_config()
        for i in range(self.args.workers):
            self.start_worker(i, new_id=True)
        log(f"work dir {w.work}; redis {w.redis_port} (via proxy {self.redis_proxy.port}), simulator "
            f"{w.simulator['port']} (via proxy {self.apns_proxy.port}), {self.args.workers} workers, seed {self.args.seed}")

    def start_worker(self, i, new_id):
        if new_id or i not in self.worker_ids:
            self.worker_generation[i] += 1
            self.worker_ids[i] = f"chaos-w{i}-g{self.worker_generation[i]}"
        self.worker_started[i] = time.monotonic()
        self.world.spawn(f"worker{i}", [self.args.herald, "worker", "--config", self.config, "--id", self.worker_ids[i]],
                         log_name=f"worker{i}.log")

    # --- observation ---

    def leases(self, worker_id=None):
        """Jobs leased (claimed, not recorded): by one worker, or by all; None when Redis cannot say."""
        try:
            if worker_id:
                return self.world.redis.command("HLEN", f"herald:leases:{worker_id}")
            keys = self.world.redis.command("KEYS", "herald:leases:*") or []
            return sum(self.world.redis.command("HLEN", k) for k in keys)
        except (OSError, RedisError):
            self.world.redis.close()
            return None

    def process_sample(self, name):
        pid = self.world.procs[name].pid
        rss = 0
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
        return rss, len(os.listdir(f"/proc/{pid}/fd"))

    def now(self):
        return time.monotonic() - self.t0

    # --- faults ---

    def record(self, kind, detail="", bound=0):
        self.faults[kind] += 1
        self.duplicate_bound += bound
        self.episodes.append((round(self.now(), 1), kind, detail, bound))
        log(f"t={self.now():5.1f}s fault {kind} {detail}" + (f" (duplicates allowed: {bound})" if bound else ""))

    def later(self, seconds, description, action):
        self.timers.append((time.monotonic() + seconds, description, action))

    def leased_now(self):
        n = self.leases()
        if n is not None:
            self.leased_when_redis_died = None
            return n
        # Redis is down (or loading): nothing can claim or complete, so what was leased when it died still holds.
        if self.leased_when_redis_died is not None:
            return self.leased_when_redis_died
        return MAX_IN_FLIGHT * self.args.workers

    def around(self, fault):
        """Runs `fault` and returns (its result, what it could make the simulator see twice): the jobs leased
        just before and just after it (a job whose answer was lost is still leased until it was sent again on a
        new connection), plus one claim batch per worker for claims that landed in between."""
        before = self.leased_now()
        result = fault()
        return result, before + self.leased_now() + CLAIM_BATCH * self.args.workers

    def inject(self):
        """Picks one fault whose target is free, from the seeded RNG, and injects it."""
        now = time.monotonic()
        choices = []
        for path, proxy in (("redis", self.redis_proxy), ("apns", self.apns_proxy)):
            if self.busy_until[path] <= now:
                for kind in ("latency", "bandwidth", "reset", "cut", "blackhole", "refuse"):
                    choices.append((path, kind, proxy))
        # Workers 1... (the first is observed, never killed), not one already draining after a SIGTERM, nor one
        # spawned under 2 s ago: a SIGTERM before its first instructions block the signal kills it by default
        # (exit -15), which says nothing about the drain.
        victims = [i for i in range(1, self.args.workers)
                   if i not in self.pending_term and now - self.worker_started.get(i, 0) >= 2]
        if victims and self.busy_until["workers"] <= now:
            choices += [("worker", "kill", None), ("worker", "term", None)]
        if self.busy_until["redis-server"] <= now and self.busy_until["redis"] <= now:
            choices.append(("redis-server", "kill", None))
        if self.args.only:
            choices = [c for c in choices if fault_name(c[0], c[1]) in self.args.only]
        if not choices:
            return
        path, kind, proxy = self.rng.choice(choices)
        r = self.rng
        if proxy:
            name = f"{path}.{kind}"
            spacing = self.args.apns_spacing if path == "apns" else 1
            if kind == "latency":
                ms, secs = r.randint(20, 250), r.uniform(2, 5)
                proxy.send(f"latency {ms}")
                self.later(secs, name + " end", lambda: proxy.send("latency 0"))
                self.busy_until[path] = now + secs + 1
                self.record(name, f"{ms} ms for {secs:.1f} s")
            elif kind == "bandwidth":
                bps, secs = r.randint(30_000, 200_000), r.uniform(2, 5)
                proxy.send(f"bandwidth {bps}")
                self.later(secs, name + " end", lambda: proxy.send("bandwidth 0"))
                self.busy_until[path] = now + secs + 1
                self.record(name, f"{bps} B/s for {secs:.1f} s")
            # On the APNs path a lost answer means a resend; on the Redis path only an outage long enough to
            # expire leases does (the reaped jobs are sent again), but it is counted all the same.
            elif kind == "reset":
                reply, bound = self.around(lambda: proxy.send("reset"))
                self.busy_until[path] = now + spacing
                self.record(name, f"{reply['connections']} connections", bound)
            elif kind == "cut":
                reply, bound = self.around(lambda: proxy.send("cut"))
                self.busy_until[path] = now + spacing
                self.record(name, f"{reply['cut']} of {reply['connections']} connections", bound)
            elif kind == "blackhole":
                secs = r.uniform(1, self.args.outage)  # beyond the retry schedule: outages spend no attempts
                reply, bound = self.around(lambda: proxy.send(f"blackhole {secs:.2f}"))
                self.busy_until[path] = now + secs + spacing
                self.record(name, f"{secs:.1f} s, {reply['connections']} connections", bound)
            elif kind == "refuse":
                secs = r.uniform(1, self.args.outage)
                reply, bound = self.around(lambda: (proxy.send(f"refuse {secs:.2f}"), proxy.send("reset"))[1])
                self.busy_until[path] = now + secs + spacing
                self.record(name, f"{secs:.1f} s after resetting {reply['connections']} connections", bound)
            return
        if path == "worker":
            i = r.choice(victims)
            name = f"worker{i}"
            if self.world.procs[name].poll() is not None:
                return
            if kind == "kill":
                same_id = r.random() < 0.5
                down = r.uniform(0.5, 3)
                self.world.signal(name, signal.SIGKILL)
                self.world.wait_exit(name, 10)
                # Read after the kill: exactly what it held (a dead process claims nothing more).
                held = self.leases(self.worker_ids[i])
                held = held if held is not None else self.leased_now()
                self.later(down, f"restart {name}", lambda: self.start_worker(i, new_id=not same_id))
                self.busy_until["workers"] = now + down + 2
                self.record("worker.sigkill", f"{self.worker_ids[i]} holding {held} jobs, back in {down:.1f} s "
                            f"({'same id' if same_id else 'new id'})", held)
            else:
                # A drain should send nothing twice; a claim on the wire at the signal is allowed for.
                self.world.signal(name, signal.SIGTERM)
                held = self.leases(self.worker_ids[i])
                held = held if held is not None else self.leased_now()
                self.record("worker.sigterm", f"{self.worker_ids[i]} holding {held} jobs", held + CLAIM_BATCH)
                # Drains on its own; the main loop restarts it once it has exited.
                self.pending_term[i] = time.monotonic()
                self.busy_until["workers"] = now + 3
            return
        # Redis SIGKILL and restart from its AOF (appendfsync always: nothing acknowledged is lost).
        down = r.uniform(0.3, 2)
        bound = self.leased_now() + CLAIM_BATCH * self.args.workers
        self.world.signal("redis", signal.SIGKILL)
        self.leased_when_redis_died = bound
        self.world.wait_exit("redis", 10)
        self.world.redis.close()
        self.later(down, "restart redis", self.world.start_redis)
        self.busy_until["redis-server"] = now + down + 3
        self.record("redis.sigkill", f"back in {down:.1f} s", bound)

    def run_timers(self, everything=False):
        now = time.monotonic()
        due = [t for t in self.timers if everything or t[0] <= now]
        self.timers = [t for t in self.timers if not (everything or t[0] <= now)]
        for _, _, action in sorted(due, key=lambda t: t[0]):
            action()

    def watch_processes(self):
        w = self.world
        for name in ("redis", "simulator", "redis-proxy", "apns-proxy"):
            proc = w.procs[name]
            if proc.poll() is not None and name not in w.expected_exit:
                raise SetupError(f"{name} exited by itself with status {proc.returncode}; see {w.work}/{name}.log")
        for i in range(self.args.workers):
            name = f"worker{i}"
            proc = w.procs[name]
            if proc.poll() is None:
                if i in self.pending_term and time.monotonic() - self.pending_term[i] > 30:
                    self.unexpected_exits.append(f"{self.worker_ids[i]} still running 30 s after SIGTERM")
                    proc.kill()
                    proc.wait(timeout=10)
                continue
            if name not in w.expected_exit:
                self.unexpected_exits.append(f"{self.worker_ids[i]} exited by itself with status {proc.returncode}")
                log(f"BREACH: {self.unexpected_exits[-1]}; restarting it")
                self.start_worker(i, new_id=False)
            elif i in self.pending_term:
                del self.pending_term[i]
                if proc.returncode != 0:
                    self.unexpected_exits.append(f"{self.worker_ids[i]} exited with {proc.returncode} after SIGTERM")
                self.start_worker(i, new_id=self.rng.random() < 0.5)

    # --- the round ---

    def push(self):
        """Pushes the pending jobs. A failed push was not applied (the runner never kills Redis while one is on
        the wire: a refused connection or a LOADING error), so the same bytes are pushed again later."""
        if self.pending:
            self.world.redis.command("LPUSH", "herald:queue", *self.pending)
            self.pending = []

    def run(self):
        args = self.args
        self.setup()
        duration = args.seconds
        warmup = min(8.0, duration / 6)
        self.t0 = time.monotonic()
        next_push = self.t0
        next_fault = self.t0 + warmup
        self.pending = []
        self.start_sample = None
        while self.now() < duration:
            now = time.monotonic()
            self.run_timers()
            self.watch_processes()
            if self.start_sample is None and self.now() >= warmup:
                self.start_sample = self.process_sample("worker0")
                log(f"t={self.now():5.1f}s warm-up over: observed worker RSS {self.start_sample[0]} kB, "
                    f"{self.start_sample[1]} fds")
            while next_push <= now:
                self.pending.append(self.jobs.make())
                next_push += 1.0 / args.rate
            if self.pending and self.world.redis_up():
                try:
                    self.push()
                except (OSError, RedisError) as error:
                    self.world.redis.close()
                    log(f"push failed ({error}); will push again")
            if now >= next_fault and self.now() < duration - 2:
                self.inject()
                next_fault = now + self.rng.uniform(args.gap * 0.5, args.gap * 1.5)
            time.sleep(0.02)
        return self.settle()

    def settle(self):
        w = self.world
        log(f"t={self.now():5.1f}s injecting stopped after {sum(self.faults.values())} faults and {self.jobs.n} jobs; settling")
        self.run_timers(everything=True)
        if not w.redis_up():
            w.start_redis()
        for attempt in range(100):
            try:
                self.push()
                break
            except (OSError, RedisError):
                w.redis.close()
                time.sleep(0.2)
        for proxy in (self.redis_proxy, self.apns_proxy):
            proxy.send("clear")
        if not w.redis_up():
            w.start_redis()
        deadline = time.monotonic() + self.args.settle_timeout
        ledger = Ledger(w.redis)
        while True:
            self.watch_processes()
            ledger.read()
            state = self.leftovers()
            done = ledger.terminal_ids() >= set(self.jobs.expected) and state == (0, 0, 0) \
                and ledger.anonymous_rejected() >= len(self.jobs.anonymous) and not self.pending_term
            if done:
                break
            if time.monotonic() > deadline:
                missing = set(self.jobs.expected) - ledger.terminal_ids()
                log(f"did not settle in {self.args.settle_timeout} s: {len(missing)} jobs without an outcome, "
                    f"queue/retry/leases {state}")
                break
            time.sleep(0.5)
        settled_at = self.now()
        time.sleep(3)  # anything recorded twice would show up now
        ledger.read()
        end_sample = self.process_sample("worker0")
        return self.check(ledger, end_sample, settled_at)

    def leftovers(self):
        r = self.world.redis
        try:
            queue = r.command("LLEN", "herald:queue")
            retry = r.command("ZCARD", "herald:retry")
            leases = self.leases()
            return (queue, retry, leases if leases is not None else -1)
        except (OSError, RedisError):
            r.close()
            return (-1, -1, -1)

    # --- the contract ---

    def check(self, ledger, end_sample, settled_at):
        jobs, w = self.jobs, self.world
        problems = []
        per_job = ledger.by_id
        outcome_counts = collections.Counter()
        lost = wrong = 0
        for job_id, (fate, outcome, reason) in jobs.expected.items():
            entries = per_job.get(job_id, [])
            terminals = [e for e in entries if e.get("outcome") != "retrying"]
            if not terminals:
                lost += 1
                problems.append(f"lost: {job_id} ({fate}) has no terminal outcome; entries {[e.get('outcome') for e in entries]}")
                continue
            t = terminals[0]
            outcome_counts[t.get("outcome")] += 1
            bad = None
            if len(terminals) > 1:
                bad = f"{len(terminals)} terminal entries {[e.get('outcome') for e in entries]}"
            elif entries[-1] is not t:
                bad = f"entries after the terminal one {[e.get('outcome') for e in entries]}"
            elif t.get("outcome") != outcome:
                bad = f"expected {outcome}, got {t.get('outcome')} ({t.get('reason', '')})"
            elif reason and not t.get("reason", "").startswith(reason):
                bad = f"expected reason {reason}, got {t.get('reason', '')}"
            elif outcome == "delivered" and t.get("status") != "200":
                bad = f"delivered with status {t.get('status')}"
            if bad:
                wrong += 1
                problems.append(f"wrong: {job_id} ({fate}): {bad}")
        # Malformed jobs without an id: one rejected entry each under an id Herald made.
        anonymous = ledger.anonymous_rejected()
        foreign = ledger.foreign(set(jobs.expected))
        if anonymous != len(jobs.anonymous) or len(foreign) != anonymous:
            problems.append(f"wrong: {len(jobs.anonymous)} malformed jobs without an id, {anonymous} rejected entries "
                            f"under other ids, {len(foreign)} entries of unknown jobs in all")
            wrong += abs(len(foreign) - len(jobs.anonymous))
        outcome_counts["rejected"] += anonymous
        # Dead letters: each malformed job exactly once, with its bytes.
        dead = collections.Counter()
        for item in w.redis.command("LRANGE", "herald:dead", 0, -1) or []:
            entry = json.loads(item)
            dead[entry.get("job", "").encode()] += 1
        for data in jobs.malformed:
            if dead[data] != 1:
                problems.append(f"dead letters: {dead[data]} for {data[:60]!r}")
                wrong += 1
        if sum(dead.values()) != len(jobs.malformed):
            problems.append(f"dead letters: {sum(dead.values())} for {len(jobs.malformed)} malformed jobs")
        # Dropped tokens: one entry per token_dropped job.
        dropped = collections.Counter(e.get("token") for e in ledger.read_stream("herald:dropped-tokens")[0])
        for job_id, (fate, outcome, _) in jobs.expected.items():
            if outcome == "token_dropped" and dropped[jobs.token_of[job_id]] != 1:
                problems.append(f"dropped tokens: {dropped[jobs.token_of[job_id]]} entries for {job_id} ({fate})")
        # What the simulator accepted: delivered jobs at least once, nothing else ever; repeats are duplicates.
        accepted = collections.Counter()
        with open(w.accepted_log) as f:
            for line in f:
                if line.strip():
                    accepted[json.loads(line).get("token")] += 1
        duplicates = 0
        for job_id, (fate, outcome, _) in jobs.expected.items():
            n = accepted[jobs.token_of.get(job_id)] if job_id in jobs.token_of else 0
            if outcome == "delivered" and n == 0:
                problems.append(f"wrong: {job_id} ({fate}) recorded delivered but the simulator never accepted it")
                wrong += 1
            elif outcome != "delivered" and n:
                problems.append(f"wrong: {job_id} ({fate}) accepted {n} times by the simulator")
                wrong += 1
            duplicates += max(0, n - 1)
        if duplicates > self.duplicate_bound:
            problems.append(f"duplicates {duplicates} above the bound {self.duplicate_bound} (jobs in flight at the faults)")
        queue, retry, leases = self.leftovers()
        if (queue, retry, leases) != (0, 0, 0):
            problems.append(f"left behind: queue {queue}, retry set {retry}, leases {leases}")
        problems += [f"worker exit: {e}" for e in self.unexpected_exits]
        rss0, fds0 = self.start_sample or end_sample
        rss1, fds1 = end_sample
        # Flat: allocator noise and a connection being re-made are allowed, a leak per fault is not.
        if rss1 > rss0 * 1.25 + 8192:
            problems.append(f"observed worker RSS grew from {rss0} kB to {rss1} kB")
        if fds1 > fds0 + 4:
            problems.append(f"observed worker open fds grew from {fds0} to {fds1}")
        stats = w.simulator_stats()
        with open(os.path.join(w.work, "episodes.json"), "w") as f:
            json.dump(self.episodes, f, indent=0)
        # Connections each proxy accepted: each one past the first few is a reconnect after a fault.
        proxied = {p.name.split("-")[0]: p.send("stats")["accepted"] for p in (self.redis_proxy, self.apns_proxy)}
        summary = {
            "seed": self.args.seed, "seconds": self.args.seconds, "workers": self.args.workers, "rate_per_s": self.args.rate,
            "scenarios": len(self.faults), "faults_injected": sum(self.faults.values()), "faults": dict(sorted(self.faults.items())),
            "jobs": jobs.n, "jobs_by_fate": dict(sorted(jobs.by_fate.items())),
            "delivered": outcome_counts["delivered"], "dropped": outcome_counts["token_dropped"],
            "failed": outcome_counts["failed"], "rejected": outcome_counts["rejected"],
            "lost": lost, "wrong": wrong, "duplicates": duplicates, "duplicate_bound": self.duplicate_bound,
            "retrying_entries": ledger.retrying, "simulator_requests": stats.get("requests"),
            "simulator_accepted": stats.get("accepted"), "proxy_connections": proxied, "settle_seconds": round(settled_at - self.args.seconds, 1),
            "queue_left": queue, "retry_left": retry, "leases_left": leases,
            "rss_kb_start": rss0, "rss_kb_end": rss1, "fds_start": fds0, "fds_end": fds1,
            "breaches": len(problems), "ok": not problems,
        }
        return summary, problems


class Ledger:
    """The results stream, read incrementally with XRANGE (the runner's own connection, never proxied)."""

    def __init__(self, redis):
        self.redis = redis
        self.last = "0-0"
        self.by_id = collections.defaultdict(list)
        self.retrying = 0
        self._terminal = set()

    def read_stream(self, key, start="0-0"):
        out, last = [], start
        while True:
            items = self.redis.command("XRANGE", key, "(" + last, "+", "COUNT", 5000) or []
            if not items:
                return out, last
            for stream_id, flat in items:
                fields = {flat[k].decode(): flat[k + 1].decode("utf-8", "replace") for k in range(0, len(flat) - 1, 2)}
                out.append(fields)
                last = stream_id.decode()

    def read(self):
        try:
            entries, self.last = self.read_stream("herald:results", self.last)
        except (OSError, RedisError):
            self.redis.close()
            return
        for e in entries:
            self.by_id[e.get("id", "")].append(e)
            if e.get("outcome") == "retrying":
                self.retrying += 1
            else:
                self._terminal.add(e.get("id", ""))

    def terminal_ids(self):
        return self._terminal

    def foreign(self, known):
        return [e for i, entries in self.by_id.items() if i not in known for e in entries]

    def anonymous_rejected(self):
        """Rejected entries under ids Herald made (malformed jobs without an id of their own)."""
        return sum(1 for i, entries in self.by_id.items() if not i.startswith("chaos-")
                   for e in entries if e.get("outcome") == "rejected")


def reproduction(args):
    """The command-line options of this round, for the failure message."""
    out = ["--seconds", f"{args.seconds:g}", "--seed", str(args.seed)]
    defaults = {"workers": 2, "rate": 40, "gap": 3, "outage": 15, "apns_spacing": 6, "ping_idle": 3600}
    for key, default in defaults.items():
        if getattr(args, key) != default:
            out += ["--" + key.replace("_", "-"), f"{getattr(args, key):g}"]
    if args.only:
        out += ["--only", ",".join(sorted(args.only))]
    return out


def main():
    parser = argparse.ArgumentParser(description="Herald's fault suite (see docs/operations.md)")
    parser.add_argument("--herald", required=True, help="the herald binary")
    parser.add_argument("--seconds", type=float, default=60, help="length of the injecting phase")
    parser.add_argument("--seed", type=int, default=None, help="seed of the fault and job choices (default: random, printed)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes; all but the first are killed now and then")
    parser.add_argument("--rate", type=float, default=40, help="jobs pushed per second")
    parser.add_argument("--gap", type=float, default=3, help="mean seconds between faults")
    parser.add_argument("--outage", type=float, default=15,
                        help="longest black hole or refused-connect window in seconds (default 15: longer than "
                             "the whole retry schedule, about 13 s, which an outage must not spend)")
    parser.add_argument("--apns-spacing", type=float, default=6,
                        help="seconds between disruptions of the APNs path, after the end of the previous one (default 6)")
    parser.add_argument("--ping-idle", type=int, default=3600,
                        help="the workers' apns.ping_idle_seconds (default 3600, Herald's own: a half-open APNs connection "
                             "must be noticed through the PING a timed-out request sends, not an idle PING)")
    parser.add_argument("--only", type=lambda t: set(t.split(",")), default=None,
                        help="inject only these fault kinds, comma-separated (e.g. apns.blackhole,worker.sigkill)")
    parser.add_argument("--settle-timeout", type=float, default=180, help="seconds to wait for every outcome at the end")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs, AOF) even when all is well")
    args = parser.parse_args()
    unknown = (args.only or set()) - set(FAULT_KINDS)
    if unknown:
        parser.error(f"--only: unknown fault kinds {sorted(unknown)}; known: {', '.join(FAULT_KINDS)}")
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1, 1_000_000)
    if args.workers < 1 or args.seconds <= 0 or args.rate <= 0 or args.gap <= 0 or args.outage < 1:
        parser.error("--workers, --seconds, --rate and --gap must be positive, --outage at least 1")
    chaos = Chaos(args)

    def stop(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, stop)
    status = 2
    try:
        summary, problems = chaos.run()
        status = 1 if problems else 0
        for p in problems[:30]:
            print(f"chaos: BREACH {p}", file=sys.stderr)
        if len(problems) > 30:
            print(f"chaos: ... {len(problems) - 30} more breaches", file=sys.stderr)
        print(f"faults: {summary['faults_injected']} in {summary['scenarios']} scenarios: "
              + ", ".join(f"{k} {v}" for k, v in summary["faults"].items()))
        print(f"jobs: {summary['jobs']}: delivered {summary['delivered']}, dropped {summary['dropped']}, failed "
              f"{summary['failed']}, rejected {summary['rejected']}; lost {summary['lost']}, wrong {summary['wrong']}, "
              f"duplicates {summary['duplicates']} (bound {summary['duplicate_bound']})")
        print(f"observed worker: RSS {summary['rss_kb_start']} -> {summary['rss_kb_end']} kB, fds "
              f"{summary['fds_start']} -> {summary['fds_end']}; settled {summary['settle_seconds']} s after injecting stopped")
        if problems:
            print(f"chaos: FAILED with seed {args.seed} (reproduce: scripts/chaos {' '.join(reproduction(args))}); "
                  f"logs kept in {chaos.world.work}", file=sys.stderr)
        print(json.dumps(summary, sort_keys=True), flush=True)
    except SetupError as error:
        log(f"could not run: {error} (seed {args.seed}); logs kept in {chaos.world.work}")
    except KeyboardInterrupt:
        log("interrupted")
        status = 130
    finally:
        chaos.world.stop_all()
        if status == 0 and not args.keep:
            shutil.rmtree(chaos.world.work, ignore_errors=True)
    sys.exit(status)


if __name__ == "__main__":
    main()
