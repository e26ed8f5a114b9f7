#!/usr/bin/python3
# Slow HTTP clients against cprof serve on this machine (127.0.0.1 only), for
# bench/slowloris.sh and tests/cli/test-hostile-conn.sh.  Standard library only.
#
#   slowloris.py loris PORT N INTERVAL SECONDS [--reconnect] [--probes K] [--ready FILE]
#                [--header-bytes B]
#       N connections each send a request line (and B bytes of headers at
#       once with --header-bytes), then one header line every
#       INTERVAL s, never the blank line that ends the headers.  With
#       --reconnect a connection the server closes is opened again (an
#       attacker would).  With --probes, K /healthz requests one second apart
#       (each on a new connection, 10 s timeout) once the N are open.  Stops
#       after SECONDS, or earlier when the server has closed every connection
#       (without --reconnect) or at SIGTERM.  --ready FILE is written once the
#       N are open.
#       Prints one JSON object: opened, closed_by_server, open_at_end, and the
#       probes' statuses and latencies (seconds).
#   slowloris.py slowpost PORT PATH BODYFILE CHUNK DELAY [--ready FILE]
#       POST the file in CHUNK-byte pieces DELAY s apart; --ready FILE is
#       written after the headers and the first piece.  Prints the status
#       line's code (000: no answer) and the body.
#   slowloris.py twostep PORT PATH BODYFILE READY GO
#       POST with its request line sent first, READY written, then the rest
#       of the headers and the body once the file GO exists (30 s at most).
#       Prints as slowpost.
import json
import os
import selectors
import signal
import socket
import statistics
import sys
import time


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.setblocking(False)
    return s


def probe(port):
    t0 = time.monotonic()
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.settimeout(max(0.1, 10 - (time.monotonic() - t0)))
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            b = s.recv(4096)
            if not b:
                break
            data += b
        s.close()
        code = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") else 0
    except (OSError, ValueError, IndexError):
        code = 0
    return code, time.monotonic() - t0


def loris(argv):
    port, n, interval, seconds = int(argv[0]), int(argv[1]), float(argv[2]), float(argv[3])
    reconnect = "--reconnect" in argv
    nprobes = int(argv[argv.index("--probes") + 1]) if "--probes" in argv else 0
    ready = argv[argv.index("--ready") + 1] if "--ready" in argv else None
    fat = int(argv[argv.index("--header-bytes") + 1]) if "--header-bytes" in argv else 0
    sel = selectors.DefaultSelector()
    conns = {}  # socket -> next send time
    opened = closed = 0

    def open_one():
        nonlocal opened
        s = connect(port)
        s.send(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        if fat:  # the headers' bulk at once (the server's memory per connection), then slowly
            s.setblocking(True)
            try:
                for k in range(0, fat, 8000):
                    s.sendall(b"X-Fat-%d: %s\r\n" % (k, b"y" * 8000))
            finally:
                s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
        conns[s] = time.monotonic() + interval
        opened += 1

    t_end = time.monotonic() + seconds
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))  # stop early, still report
    for _ in range(n):
        try:
            open_one()
        except OSError:
            pass
    if ready:
        with open(ready, "w") as f:
            f.write("%d\n" % len(conns))
    probes = []
    next_probe = time.monotonic() + 1 if nprobes else None
    while time.monotonic() < t_end and not stop:
        if not conns and not reconnect:
            break
        now = time.monotonic()
        for key, _ in sel.select(timeout=0.1):
            s = key.fileobj
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if not data:  # closed by the server (an answer would also end here)
                sel.unregister(s)
                s.close()
                del conns[s]
                closed += 1
                if reconnect:
                    try:
                        open_one()
                    except OSError:
                        pass
        now = time.monotonic()
        for s, t in list(conns.items()):
            if now >= t:
                try:
                    s.send(b"X-Slow: 1\r\n")
                except OSError:
                    pass
                conns[s] = now + interval
        if next_probe is not None and now >= next_probe and len(probes) < nprobes:
            probes.append(probe(port))
            next_probe = time.monotonic() + 1
        if nprobes and len(probes) >= nprobes and reconnect:
            break
    lat = [p[1] for p in probes]
    print(json.dumps({
        "opened": opened, "closed_by_server": closed, "open_at_end": len(conns),
        "probe_codes": [p[0] for p in probes], "probe_seconds": [round(x, 4) for x in lat],
        "probe_max": round(max(lat), 4) if lat else None,
        "probe_median": round(statistics.median(lat), 4) if lat else None,
    }))
    for s in conns:
        s.close()


def slowpost(argv):
    port, path, bodyfile, chunk, delay = int(argv[0]), argv[1], argv[2], int(argv[3]), float(argv[4])
    ready = argv[argv.index("--ready") + 1] if "--ready" in argv else None
    body = open(bodyfile, "rb").read()
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    s.sendall(("POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\n"
               "Content-Length: %d\r\n\r\n" % (path, len(body))).encode())
    data = b""
    try:
        for i in range(0, len(body), chunk):
            s.sendall(body[i:i + chunk])
            if i == 0 and ready:
                with open(ready, "w") as f:
                    f.write("sending\n")
            if i + chunk < len(body):
                time.sleep(delay)
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
            head, sep, rest = data.partition(b"\r\n\r\n")
            if sep and b"content-length:" in head.lower():
                n = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                if len(rest) >= n:
                    break
    except OSError:
        pass
    s.close()
    show(data)


def show(data):
    if data.startswith(b"HTTP/"):
        head, _, rest = data.partition(b"\r\n\r\n")
        print(head.split(b" ", 2)[1].decode())
        print(rest.decode(errors="replace"))
    else:
        print("000")


def twostep(argv):
    port, path, bodyfile, ready, go = int(argv[0]), argv[1], argv[2], argv[3], argv[4]
    body = open(bodyfile, "rb").read()
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    data = b""
    try:
        s.sendall(("POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\n" % path).encode())
        with open(ready, "w") as f:
            f.write("sent\n")
        t_end = time.monotonic() + 30
        while not os.path.exists(go) and time.monotonic() < t_end:
            time.sleep(0.05)
        s.sendall(("Content-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n" % len(body)).encode()
                  + body)
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
    except OSError:
        pass
    s.close()
    show(data)


if __name__ == "__main__":
    {"loris": loris, "slowpost": slowpost, "twostep": twostep}[sys.argv[1]](sys.argv[2:])
