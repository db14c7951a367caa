#!/usr/bin/python3
"""Checks that scripts/faultproxy.py does what its faults say, against a local echo server, so that a fault
round (scripts/chaos) cannot pass because its faults did nothing. Exits 1 naming the first fault that misbehaved.
About 6 s; every wait has a timeout."""
import json
import os
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def echo_server():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)

    def echo(conn):
        with conn:
            try:
                while data := conn.recv(65536):
                    conn.sendall(data)
            except OSError:
                pass

    def serve():
        while True:
            conn, _ = server.accept()
            threading.Thread(target=echo, args=(conn,), daemon=True).start()
    threading.Thread(target=serve, daemon=True).start()
    return server.getsockname()[1]


def main():
    proxy = subprocess.Popen([sys.executable, os.path.join(HERE, "faultproxy.py"), "--upstream", f"127.0.0.1:{echo_server()}"],
                             stdout=subprocess.PIPE)
    try:
        info = json.loads(proxy.stdout.readline())
        control = socket.create_connection(("127.0.0.1", info["control_port"]), timeout=5)
        replies = control.makefile("rb")

        def command(line):
            control.sendall((line + "\n").encode())
            reply = json.loads(replies.readline())
            assert reply.get("ok"), f"{line}: {reply}"
            return reply

        def connect():
            return socket.create_connection(("127.0.0.1", info["port"]), timeout=3)

        def round_trip(sock, data):
            sock.sendall(data)
            got = b""
            while len(got) < len(data):
                chunk = sock.recv(65536)
                assert chunk, "connection closed during a round trip"
                got += chunk
            assert got == data, "bytes changed on the way"

        a = connect()
        round_trip(a, b"hello")

        command("latency 200")
        started = time.monotonic()
        round_trip(a, b"x")
        elapsed = time.monotonic() - started
        assert elapsed >= 0.35, f"latency 200 ms each way: round trip took {elapsed:.2f} s"
        command("latency 0")

        command("bandwidth 20000")
        started = time.monotonic()
        round_trip(a, b"y" * 10000)
        elapsed = time.monotonic() - started
        assert elapsed >= 0.4, f"bandwidth 20 kB/s: 10 kB went through in {elapsed:.2f} s"
        command("bandwidth 0")

        assert command("reset")["connections"] == 1, "reset: the open connection was not counted"
        try:
            data = a.recv(10)
            raise AssertionError(f"reset: connection still readable ({data!r}), no RST")
        except ConnectionResetError:
            pass

        b = connect()
        round_trip(b, b"before")
        command("blackhole 1")
        b.sendall(b"into the hole")
        b.settimeout(1.3)
        try:
            data = b.recv(100)
            raise AssertionError(f"blackhole: got {data!r} back")
        except socket.timeout:
            pass
        c = connect()
        round_trip(c, b"after the window")
        b.settimeout(0.3)
        b.sendall(b"still")
        try:
            data = b.recv(100)
            raise AssertionError(f"blackhole: a black-holed connection came back to life ({data!r})")
        except socket.timeout:
            pass
        b.close()

        command("refuse 1")
        try:
            connect().close()
            raise AssertionError("refuse: a connection was accepted")
        except ConnectionRefusedError:
            pass
        time.sleep(1.2)
        d = connect()
        round_trip(d, b"listening again")

        c.close()
        cut = {}
        waiter = threading.Thread(target=lambda: cut.update(command("cut")))
        waiter.start()
        time.sleep(0.1)
        d.sendall(b"0123456789")
        d.settimeout(2)
        got = b""
        try:
            while chunk := d.recv(100):
                got += chunk
        except ConnectionResetError:
            pass
        waiter.join(5)
        assert cut.get("cut") == 1, f"cut: {cut}"
        assert len(got) < 10, f"cut: the whole chunk came back ({got!r})"
        stats = command("stats")
        assert stats["reset"] >= 1 and stats["cut"] == 1 and stats["refused_windows"] == 1, f"stats: {stats}"
        print("faultproxy check: latency, bandwidth, reset, blackhole, refuse and cut behave as documented")
    except (AssertionError, OSError, ValueError) as error:
        print(f"faultproxy check FAILED: {error}", file=sys.stderr)
        return 1
    finally:
        proxy.terminate()
        proxy.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
