#!/usr/bin/python3
"""Scripted HTTP/2-over-TLS peer for the HTTP2 client tests (python3-h2, Debian).

Modes:
  silent   completes TLS (ALPN h2) and sends its SETTINGS, then never reads or answers anything.
  goaway   answers nothing until --count requests have arrived, then sends GOAWAY (last-stream-id
           --last-stream, debug data {"reason":"Shutdown"}), answers the streams at or below it with 200,
           and closes the connection a moment later.
  refuse   resets every stream whose id % 4 == 3 with REFUSED_STREAM, answers the others with 200.
  limits   starts with MAX_CONCURRENT_STREAMS 1, raises it to --raise after the first answer (and, with
           --lower-after N, back to 1 after N answers), answers everything with 200 and records in --report
           the most streams it saw open at once before lowering.
  hangup   answers nothing until --count requests have arrived, then waits half a second and answers them all
           (each with a header of about 600 bytes: the answers span several reads and all fit in the socket buffers) and closes the TCP connection
           in the same breath: no GOAWAY, no close_notify.
  burst    like hangup, but the answers have headers of about 3 KB (several hundred KB in all) and the
           connection stays open: every later request is answered at once.
  http11   offers only ALPN http/1.1 (a server that does not speak HTTP/2).
  proxy    a plain HTTP CONNECT proxy (no TLS of its own): answers 200 and relays bytes both ways;
           writes each CONNECT target it served, one per line, to --report.
Prints "PORT <n>" once listening on 127.0.0.1. Stopped by the test with SIGTERM.
"""
import argparse, json, socket, ssl, sys, threading, time
import h2.config, h2.connection, h2.errors, h2.events, h2.settings
from hyperframe.frame import GoAwayFrame

p = argparse.ArgumentParser()
p.add_argument("--cert", required=True)
p.add_argument("--key", required=True)
p.add_argument("--mode", required=True)
p.add_argument("--count", type=int, default=10)
p.add_argument("--last-stream", type=int, default=9)
p.add_argument("--raise", dest="raise_to", type=int, default=5)
p.add_argument("--report", default=None)
p.add_argument("--lower-after", type=int, default=0)
args = p.parse_args()

def relay(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except Exception:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except Exception:
            pass


def proxy(client):
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = client.recv(4096)
        if not chunk:
            client.close()
            return
        head += chunk
    line = head.split(b"\r\n")[0].decode()
    method, target, _ = line.split(" ", 2)
    if method != "CONNECT":
        client.sendall(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
        client.close()
        return
    host, port = target.rsplit(":", 1)
    if args.report:
        with open(args.report, "a") as f:
            f.write(target + "\n")
    upstream = socket.create_connection((host.strip("[]"), int(port)))
    client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
    threading.Thread(target=relay, args=(client, upstream), daemon=True).start()
    relay(upstream, client)


ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(args.cert, args.key)
ctx.set_alpn_protocols(["http/1.1"] if args.mode == "http11" else ["h2"])

listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", 0))
listener.listen(64)
print("PORT %d" % listener.getsockname()[1], flush=True)


def answer(conn, stream_id):
    conn.send_headers(stream_id, [(":status", "200"), ("apns-id", "id-%d" % stream_id)], end_stream=True)


def serve(raw):
    if args.mode == "proxy":
        proxy(raw)
        return
    try:
        tls = ctx.wrap_socket(raw, server_side=True)
    except Exception:
        raw.close()
        return
    if args.mode == "http11":
        time.sleep(2)
        tls.close()
        return
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=False))
    conn.initiate_connection()
    first_limit = 1 if args.mode == "limits" else 100
    conn.update_settings({h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: first_limit})
    tls.sendall(conn.data_to_send())
    if args.mode == "silent":
        while True:
            try:
                if not tls.recv(65536):
                    break
            except Exception:
                break
        tls.close()
        return
    ended = []
    open_streams = set()
    most_open = 0
    raised = False
    lowered = False
    burst_done = False
    answered = 0
    while True:
        try:
            data = tls.recv(65536)
        except Exception:
            break
        if not data:
            break
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.RequestReceived):
                open_streams.add(event.stream_id)
                if not lowered:
                    most_open = max(most_open, len(open_streams))
            elif isinstance(event, h2.events.DataReceived):
                conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded):
                ended.append(event.stream_id)
                if args.mode == "refuse":
                    if event.stream_id % 4 == 3:
                        conn.reset_stream(event.stream_id, error_code=h2.errors.ErrorCodes.REFUSED_STREAM)
                    else:
                        answer(conn, event.stream_id)
                    open_streams.discard(event.stream_id)
                elif args.mode == "limits":
                    answer(conn, event.stream_id)
                    open_streams.discard(event.stream_id)
                    if not raised:
                        raised = True
                        conn.update_settings({h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: args.raise_to})
                    if args.lower_after and len(ended) == args.lower_after:
                        conn.update_settings({h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 1})
                        lowered = True
            elif isinstance(event, h2.events.StreamReset):
                open_streams.discard(event.stream_id)
        if args.report:
            with open(args.report, "w") as f:
                f.write(str(most_open))
        if args.mode == "burst" and burst_done:
            for stream_id in ended[answered:]:
                answer(conn, stream_id)
            answered = len(ended)
        elif args.mode == "burst" and len(ended) >= args.count:
            time.sleep(0.5)
            for stream_id in sorted(ended):
                conn.send_headers(stream_id, [(":status", "200"), ("x-pad", "%d-" % stream_id + "p" * 3000)], end_stream=True)
            answered = len(ended)
            burst_done = True
        if args.mode == "hangup" and len(ended) >= args.count:
            time.sleep(0.5)
            for stream_id in sorted(ended):
                conn.send_headers(stream_id, [(":status", "200"), ("x-pad", "%d-" % stream_id + "p" * 600)], end_stream=True)
            tls.sendall(conn.data_to_send())
            tls.shutdown(socket.SHUT_WR)  # FIN after the answers; what the client still sends is read and dropped
            try:
                while tls.recv(65536):
                    pass
            except Exception:
                pass
            tls.close()
            return
        if args.mode == "goaway" and len(ended) >= args.count:
            frame = GoAwayFrame(0)
            frame.last_stream_id = args.last_stream
            frame.error_code = 0
            frame.additional_data = json.dumps({"reason": "Shutdown"}).encode()
            tls.sendall(conn.data_to_send() + frame.serialize())
            for stream_id in sorted(ended):
                if stream_id <= args.last_stream:
                    answer(conn, stream_id)
            tls.sendall(conn.data_to_send())
            time.sleep(0.5)
            break
        out = conn.data_to_send()
        if out:
            tls.sendall(out)
    try:
        tls.close()
    except Exception:
        pass


while True:
    client, _ = listener.accept()
    threading.Thread(target=serve, args=(client,), daemon=True).start()
