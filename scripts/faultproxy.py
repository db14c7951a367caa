#!/usr/bin/python3
"""A TCP fault proxy for Herald's fault suite (scripts/chaos): one listening port forwarding to one upstream,
with faults switched at run time over a line protocol on a control port. It works below TLS (bytes pass
unmodified), so a client still verifies the upstream's certificate for 127.0.0.1.

usage: faultproxy.py --upstream HOST:PORT [--listen PORT] [--control PORT] [--ready-file FILE]

Control: connect to the control port, send one command per line, read one JSON line per command.
  latency MS        delay every chunk (each direction) by MS milliseconds; 0 clears
  bandwidth BPS     cap each direction of each connection to BPS bytes/s; 0 clears
  reset             abort every open connection with a TCP RST (SO_LINGER 0), both sides
  blackhole S       for S seconds every open and newly accepted connection is read and its bytes dropped, in
                    both directions; such a connection stays dead (half-open) until the client closes it
  cut               every open connection forwards part of its next chunk, then is closed; answers once all
                    were cut, or after 1 s (a connection that sent nothing by then stays armed)
  refuse S          close the listening socket for S seconds (connections are refused)
  clear             latency 0, bandwidth 0, end the black-hole window, listen again
  stats             counters
Stdlib only (asyncio); stops on SIGTERM/SIGINT.
"""
import argparse
import asyncio
import json
import os
import random
import signal
import socket
import struct
import sys
import time

CHUNK = 16384


class Link:
    """One proxied connection: the client's and the upstream's stream pairs and its fault state."""

    def __init__(self, proxy, client_reader, client_writer):
        self.proxy = proxy
        self.client = (client_reader, client_writer)
        self.upstream = None
        self.dead = False  # black-holed: read and drop everything until the client goes
        self.cut_armed = False
        self.closed = False

    def sockets(self):
        out = [self.client[1]]
        if self.upstream:
            out.append(self.upstream[1])
        return out

    def close(self, abort=False):
        if self.closed:
            return
        self.closed = True
        for writer in self.sockets():
            try:
                if abort:
                    sock = writer.get_extra_info("socket")
                    if sock is not None:
                        # SO_LINGER on, 0 s: close() sends RST instead of FIN.
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    writer.transport.abort()
                else:
                    writer.close()
            except OSError:
                pass
        self.proxy.links.discard(self)


class Proxy:
    def __init__(self, upstream_host, upstream_port, listen_port):
        self.upstream_host, self.upstream_port = upstream_host, upstream_port
        self.listen_port = listen_port
        self.server = None
        self.links = set()
        self.latency_s = 0.0
        self.bandwidth = 0
        self.blackhole_until = 0.0
        self.refuse_task = None
        self.counts = {"accepted": 0, "bytes_up": 0, "bytes_down": 0, "reset": 0, "cut": 0, "blackholed": 0,
                       "refused_windows": 0, "upstream_failed": 0}
        self.rng = random.Random(0)

    async def listen(self):
        self.server = await asyncio.start_server(self.accept, "127.0.0.1", self.listen_port, reuse_address=True)
        self.listen_port = self.server.sockets[0].getsockname()[1]

    def blackholing(self):
        return time.monotonic() < self.blackhole_until

    async def accept(self, reader, writer):
        link = Link(self, reader, writer)
        self.links.add(link)
        self.counts["accepted"] += 1
        if self.blackholing():
            link.dead = True
            self.counts["blackholed"] += 1
        else:
            try:
                link.upstream = await asyncio.wait_for(
                    asyncio.open_connection(self.upstream_host, self.upstream_port), timeout=5)
            except (OSError, asyncio.TimeoutError):
                self.counts["upstream_failed"] += 1
                link.close(abort=True)
                return
            if link.closed:  # reset while connecting
                link.upstream[1].transport.abort()
                return
            if self.blackholing():  # the window opened while connecting
                link.dead = True
                self.counts["blackholed"] += 1
        from_client = asyncio.create_task(self.pump(link, link.client[0], link.upstream[1] if link.upstream else None, "bytes_up"))
        pending = {from_client}
        if link.upstream:
            pending.add(asyncio.create_task(self.pump(link, link.upstream[0], link.client[1], "bytes_down")))
        done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        if pending:
            # A dead (black-holed) link outlives its upstream: the client must learn nothing, it only
            # goes when the client closes. Otherwise the other direction gets a moment to finish (half-close).
            wait = None if link.dead and from_client in pending else 2
            await asyncio.wait(pending, timeout=wait)
        link.close()
        for task in pending:
            task.cancel()

    async def pump(self, link, reader, writer, counter):
        """Copies one direction through a delay line: the reader stamps chunks, a sender writes them when due."""
        line = asyncio.Queue(maxsize=64)

        async def send():
            while True:
                item = await line.get()
                if item is None:
                    break
                due, data = item
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                if link.closed or link.dead:
                    continue  # keep taking items, so the reader never blocks on a full line
                # Under a cap, in slices of 1/20 s each followed by its share of time (a chunk read before the
                # cap was set may be large).
                step = max(1, self.bandwidth // 20) if self.bandwidth else len(data)
                for offset in range(0, len(data), step):
                    piece = data[offset:offset + step]
                    try:
                        writer.write(piece)
                        await writer.drain()
                    except (OSError, RuntimeError):
                        link.close(abort=True)
                        break
                    self.counts[counter] += len(piece)
                    if self.bandwidth:
                        await asyncio.sleep(len(piece) / self.bandwidth)
            if not link.closed and not link.dead:
                try:
                    writer.write_eof()
                except (OSError, RuntimeError):
                    pass

        sender = asyncio.create_task(send()) if writer else None
        try:
            while not link.closed:
                size = CHUNK if not self.bandwidth else max(1, min(CHUNK, self.bandwidth // 20))
                data = await reader.read(size)
                if not data:
                    break
                if link.dead or sender is None:
                    continue
                if link.cut_armed:
                    link.cut_armed = False
                    self.counts["cut"] += 1
                    await line.put(None)
                    await sender
                    part = data[: self.rng.randint(1, len(data) - 1)] if len(data) > 1 else b""
                    if part and not link.closed:
                        try:
                            writer.write(part)
                            await writer.drain()
                        except (OSError, RuntimeError):
                            pass
                    link.close()
                    return
                await line.put((time.monotonic() + self.latency_s, data))
        except (OSError, RuntimeError):
            pass
        finally:
            if sender and not sender.done():
                await line.put(None)
                await sender

    # --- faults ---

    def reset(self):
        links = list(self.links)
        for link in links:
            link.close(abort=True)
        self.counts["reset"] += len(links)
        return len(links)

    def blackhole(self, seconds):
        self.blackhole_until = time.monotonic() + seconds
        for link in self.links:
            link.dead = True
        self.counts["blackholed"] += len(self.links)
        return len(self.links)

    async def cut(self, wait_s=1.0):
        """Arms every open connection; answers once each was cut (or closed) or after `wait_s`."""
        armed = list(self.links)
        for link in armed:
            link.cut_armed = True
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and any(l.cut_armed and not l.closed for l in armed):
            await asyncio.sleep(0.005)
        return len(armed), sum(1 for l in armed if not l.cut_armed)

    def stop_listening(self):
        self.counts["refused_windows"] += 1
        if self.server:
            self.server.close()
            self.server = None

    async def refuse(self, seconds):
        try:
            await asyncio.sleep(seconds)
        finally:
            self.refuse_task = None
            await self.listen()

    def clear(self):
        self.latency_s, self.bandwidth, self.blackhole_until = 0.0, 0, 0.0
        if self.refuse_task:
            self.refuse_task.cancel()

    async def command(self, text):
        words = text.split()
        if not words:
            return {"ok": False, "error": "empty command"}
        name, args = words[0], words[1:]
        try:
            if name == "latency":
                self.latency_s = float(args[0]) / 1000
                return {"ok": True}
            if name == "bandwidth":
                self.bandwidth = int(args[0])
                return {"ok": True}
            if name == "reset":
                return {"ok": True, "connections": self.reset()}
            if name == "blackhole":
                return {"ok": True, "connections": self.blackhole(float(args[0]))}
            if name == "cut":
                armed, cut = await self.cut()
                return {"ok": True, "connections": armed, "cut": cut}
            if name == "refuse":
                if self.refuse_task is None:
                    seconds = float(args[0])
                    self.stop_listening()  # before the answer: a connect right after it is refused
                    self.refuse_task = asyncio.create_task(self.refuse(seconds))
                return {"ok": True}
            if name == "clear":
                self.clear()
                return {"ok": True}
            if name == "stats":
                return {"ok": True, "open": len(self.links), "dead": sum(1 for l in self.links if l.dead),
                        "listening": self.server is not None, **self.counts}
        except (IndexError, ValueError) as error:
            return {"ok": False, "error": f"{name}: {error}"}
        return {"ok": False, "error": f"unknown command {name}"}

    async def control(self, reader, writer):
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                reply = await self.command(line.decode("utf-8", "replace").strip())
                writer.write((json.dumps(reply) + "\n").encode())
                await writer.drain()
        except (OSError, ConnectionError):
            pass
        finally:
            writer.close()


async def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--upstream", required=True, help="HOST:PORT to forward to")
    parser.add_argument("--listen", type=int, default=0, help="port on 127.0.0.1 (0: a free one)")
    parser.add_argument("--control", type=int, default=0, help="control port on 127.0.0.1 (0: a free one)")
    parser.add_argument("--ready-file", help="write {port, control_port, pid} here once listening")
    args = parser.parse_args()
    host, _, port = args.upstream.rpartition(":")
    proxy = Proxy(host or "127.0.0.1", int(port), args.listen)
    await proxy.listen()
    control = await asyncio.start_server(proxy.control, "127.0.0.1", args.control, reuse_address=True)
    ready = json.dumps({"port": proxy.listen_port, "control_port": control.sockets[0].getsockname()[1],
                        "pid": os.getpid(), "upstream": args.upstream})
    if args.ready_file:
        with open(args.ready_file + ".tmp", "w") as f:
            f.write(ready + "\n")
        os.rename(args.ready_file + ".tmp", args.ready_file)
    print(ready, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def quiet_cancellations(loop, context):
        # Connections still open at the stop are cancelled; that is the intended end, not an error.
        if not isinstance(context.get("exception"), asyncio.CancelledError):
            loop.default_exception_handler(context)
    loop.set_exception_handler(quiet_cancellations)
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    for link in list(proxy.links):
        link.close(abort=True)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
