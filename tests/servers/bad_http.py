#!/usr/bin/python3
"""bad_http.py - one HTTP server that misbehaves on purpose, for the error-path
tests of ringfeed's HTTP source. The first path segment picks the behaviour;
the rest names a file under --root:

  /ok/F              correct: 206 + exact Content-Range for a Range, else 200
  /404/F, /403/F     that status, always
  /500-once/F        500 the first time for each (path, Range), then correct
  /503-retry-after/F 503 with Retry-After: 1 once per (path, Range), then correct
  /429-once/F        429 with Retry-After: 1 once per (path, Range), then correct
  /reset-mid-body/F  headers + half the body, then a TCP RST (SO_LINGER 0),
                     once per (path, Range), then correct
  /reset-always/F    the same, every time
  /reset-once-versioned/F  every answer with an ETag and a Last-Modified;
                     a GET whose last byte (path, end of its Range) is asked
                     for the first time gets headers + half the body, then a
                     TCP RST: a client that resumes asks for the rest (the
                     same last byte) and gets it
  /reset-always-versioned/F  the same, every time
  /short-once-versioned/F, /short-always-versioned/F  the same two, but
                     the half body ends with an orderly close (FIN), so the
                     client gets exactly half of what it asked
  /version-change-once/F  as reset-once-versioned, but the cut answer has
                     ETag "v1" and every other answer ETag "v2" (the object
                     changed between the cut and the rest: the rest must not
                     be joined to the cut part)
  /flip-once-versioned/F  as flip-once, every answer with an ETag and a
                     Last-Modified (a cache keeps the object: the damaged
                     answer must not stay in it)
  /flip-once/F       correct status and length, but the body's middle byte
                     flipped, once per (path, Range); then correct (damage
                     in transit: the loader's re-reads)
  /ignore-range/F    200 with the whole object, whatever the Range
  /wrong-range/F     206 whose Content-Range is not the one asked for (body
                     consistent with the wrong header)
  /short/F           Content-Length of the full answer, half the body, close
                     (always); /short-once/F once per (path, Range)
  /stall/F           headers + half the body, then silence for --stall-s
                     seconds and close, once per (path, Range); then correct
  /trickle/F         one body byte per second, always (gives up after
                     --trickle-max-s seconds)
  /redirect-loop/F   302 to /redirect-loop/F?hop=N+1, endlessly
  /huge-length/F     Content-Length: 10^15 (HEAD and GET); a GET sends at most
                     1 MiB of the object, then closes
  /redirect-host/F   307 to --redirect-to BASE + /ok/F (another host: the
                     credential tests)
  /503-for-N/F       503 (no Retry-After) for N seconds after the first
                     request of F, then correct; /429-for-N/F the same with 429
                     (throttling bursts); N = 0..3600
  /503-always/F      503 (no Retry-After), always
  /slow-nth-N-MS/F   correct, but the Nth request of F (counting from 1, any
                     range) waits MS ms before answering (the hedging test:
                     a duplicate of that range is answered at once)
  /etag-long/F       correct, with an ETag of 300 bytes (and a Last-Modified)
  /etag-binary/F     correct, with an ETag holding control and 8-bit bytes
                     (and a Last-Modified)
  /last-modified/F   correct, with a Last-Modified and no ETag
                     (the validator tests: an unusable ETag is "unknown")
  /slow-every-K-MS/F correct, but every Kth request to this server (all paths
                     together) waits MS ms first: K=100 delays 1% of requests,
                     deterministically (the hedging benchmark); MS <= 60000

--log-requests FILE appends every request line and its headers to FILE (the
credential tests look for secrets there); --tls-cert/--tls-key serve HTTPS.

GET /_stats returns JSON {path: {"requests": n, "faults": m}} (faults = the
misbehaviours actually sent; a path of the slow modes also has "inflight_max",
the most of its requests waiting out their delay at once), so tests can
assert retry counts and how far a client's reads of one object overlap; GET /_reset
clears the counters. Use a file name of your own per test: the "once"
counters are shared by every client of the server. GET /_inflight returns
{"inflight_max": n}: the most requests of the slow modes waiting out their
delay at once since the start or the last /_reset (how far a client's
requests overlap; counted before any byte of the answer is sent).

Python 3 standard library only; threads are daemons, every sleep is bounded,
SIGTERM exits.
"""

import argparse
import json
import os
import re
import signal
import socket
import ssl
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HUGE_LENGTH = 10**15
HUGE_SEND_BYTES_MAX = 1 << 20
LAST_MODIFIED = "Tue, 01 Dec 2026 12:00:00 GMT"
VALIDATOR_HEADERS = {  # the validator modes: correct answers with these headers
    "etag-long": {"ETag": '"' + "a" * 298 + '"', "Last-Modified": LAST_MODIFIED},
    "etag-binary": {"ETag": '"ab\x01\x7f\xffcd"', "Last-Modified": LAST_MODIFIED},
    "last-modified": {"Last-Modified": LAST_MODIFIED},
}
VERSIONED = {"ETag": '"flip-once-v1"', "Last-Modified": LAST_MODIFIED}
RESUMABLE = {"ETag": '"resume-v1"', "Last-Modified": LAST_MODIFIED}
CHANGED = {"ETag": '"resume-v2"', "Last-Modified": "Wed, 02 Dec 2026 12:00:00 GMT"}


class Counters:
    def __init__(self):
        self.lock = threading.Lock()
        self.seen = {}  # (path, range) -> times asked
        self.ends = set()  # (path, last byte asked): the resume modes
        self.per_path = {}
        self.first_at = {}  # path -> time of its first request (the -for-N modes)
        self.total = 0  # every counted request (the slow-every mode)
        self.inflight = 0  # slow-mode requests in their delay now
        self.inflight_max = 0

    def count(self, path, rng):
        """Counts a request: (first time (path, rng) is asked, its ordinal
        among the requests of path, its ordinal among all requests)."""
        with self.lock:
            k = (path, rng)
            self.seen[k] = self.seen.get(k, 0) + 1
            st = self.per_path.setdefault(path, {"requests": 0, "faults": 0})
            st["requests"] += 1
            self.total += 1
            return self.seen[k] == 1, st["requests"], self.total

    def first_end(self, path, end):
        """True the first time a range ending at byte end of path is asked."""
        with self.lock:
            if (path, end) in self.ends:
                return False
            self.ends.add((path, end))
            return True

    def first_time(self, path, rng):
        """Counts a request; True the first time (path, rng) is asked."""
        return self.count(path, rng)[0]

    def since_first(self, path):
        """Seconds since the first request of path (0 for the first)."""
        with self.lock:
            now = time.monotonic()
            return now - self.first_at.setdefault(path, now)

    def enter(self, path):
        with self.lock:
            self.inflight += 1
            self.inflight_max = max(self.inflight_max, self.inflight)
            st = self.per_path.setdefault(path, {"requests": 0, "faults": 0})
            st["inflight"] = st.get("inflight", 0) + 1
            st["inflight_max"] = max(st.get("inflight_max", 0), st["inflight"])

    def leave(self, path):
        with self.lock:
            self.inflight -= 1
            st = self.per_path.get(path)
            if st and st.get("inflight", 0) > 0:  # a reset may have cleared it
                st["inflight"] -= 1

    def fault(self, path):
        with self.lock:
            self.per_path.setdefault(path, {"requests": 0, "faults": 0})["faults"] += 1

    def snapshot(self):
        with self.lock:
            return json.loads(json.dumps(self.per_path))

    def reset(self):
        with self.lock:
            self.seen.clear()
            self.ends.clear()
            self.per_path.clear()
            self.first_at.clear()
            self.total = 0
            self.inflight_max = self.inflight


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "rf-bad-http"

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("bad_http: " + (fmt % args) + "\n")

    def do_HEAD(self):
        self.dispatch(head=True)

    def do_GET(self):
        self.dispatch(head=False)

    # ---- helpers ---------------------------------------------------------
    def plain(self, status, text, headers=None, head=False):
        body = (text + "\n").encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def file_for(self, rest):
        segs = rest.split("/")
        if not rest or any(s in ("", ".", "..") for s in segs) or "\0" in rest:
            return None
        p = os.path.join(self.server.root, *segs)
        return p if os.path.isfile(p) else None

    def wanted_range(self, size):
        """(status, start, end) for the request's Range, or None if unsatisfiable."""
        rng = self.headers.get("Range")
        if rng is None:
            return 200, 0, size - 1
        m = re.fullmatch(r"bytes=(\d*)-(\d*)", rng.strip())
        if not m or not (m.group(1) or m.group(2)):
            return 200, 0, size - 1
        a, b = m.group(1), m.group(2)
        if a == "":
            start, end = max(0, size - int(b)), size - 1
        else:
            start, end = int(a), min(int(b) if b else size - 1, size - 1)
        if start >= size or start > end:
            return None
        return 206, start, end

    def send_head(self, status, start, end, size, length=None, extra=None):
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Accept-Ranges", "bytes")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(end - start + 1 if length is None else length))
        if status == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, size))
        self.end_headers()

    def send_body(self, path, start, nbytes):
        with open(path, "rb") as f:
            f.seek(start)
            while nbytes > 0:
                chunk = f.read(min(nbytes, 1 << 20))
                if not chunk:
                    return
                self.wfile.write(chunk)
                nbytes -= len(chunk)

    def hang_up(self, reset):
        """Ends the connection now: RST when reset, else an orderly close."""
        self.wfile.flush()
        if reset:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        else:
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.connection.close()
        self.close_connection = True

    def correct(self, path, size, head, extra=None):
        r = self.wanted_range(size)
        if r is None:
            return self.plain(416, "range not satisfiable", {"Content-Range": "bytes */%d" % size}, head)
        status, start, end = r
        self.send_head(status, start, end, size, extra=extra)
        if not head:
            self.send_body(path, start, end - start + 1)

    def log_request_headers(self):
        if not self.server.log_requests:
            return
        with self.server.log_lock, open(self.server.log_requests, "a") as f:
            f.write("%s\n%s\n" % (self.requestline, str(self.headers).rstrip("\n")))

    # ---- the behaviours --------------------------------------------------
    def dispatch(self, head):
        self.log_request_headers()
        raw, _, query = self.path.partition("?")
        if raw == "/_stats":
            return self.plain(200, json.dumps(self.server.counters.snapshot(), sort_keys=True))
        if raw == "/_reset":
            self.server.counters.reset()
            return self.plain(200, "reset")
        if raw == "/_inflight":
            return self.plain(200, json.dumps({"inflight_max": self.server.counters.inflight_max}))
        m = re.fullmatch(r"/([a-z0-9-]+)/(.+)", raw)
        mode = m.group(1) if m else ""
        first, n_path, n_all = self.server.counters.count(raw, self.headers.get("Range"))
        first_n = (n_path, n_all)
        if mode == "404":
            return self.fault_status(raw, 404, "not found (bad_http /404/)", None, head)
        if mode == "403":
            return self.fault_status(raw, 403, "forbidden (bad_http /403/)", None, head)
        if mode == "redirect-loop":
            hop = int(query[4:]) if re.fullmatch(r"hop=\d{1,9}", query) else 0
            self.server.counters.fault(raw)
            return self.plain(302, "redirect", {"Location": "%s?hop=%d" % (raw, hop + 1)}, head)
        if mode == "redirect-host" and self.server.redirect_to:
            self.server.counters.fault(raw)
            return self.plain(307, "elsewhere", {"Location": self.server.redirect_to + "/ok/" + m.group(2)}, head)
        path = self.file_for(m.group(2)) if m else None
        if path is None:
            return self.plain(404, "no such file under the bad_http root: %s" % raw, None, head)
        size = os.path.getsize(path)
        burst = re.fullmatch(r"(503|429)-for-(\d{1,4})", mode)
        if mode == "503-always" or burst and self.server.counters.since_first(raw) < int(burst.group(2)):
            code = int(burst.group(1)) if burst else 503
            return self.fault_status(raw, code, "throttled (bad_http /%s/)" % mode, None, head)
        if burst:
            return self.correct(path, size, head)
        slow = re.fullmatch(r"slow-(nth|every)-(\d{1,7})-(\d{1,5})", mode)
        if slow:
            return self.slow(raw, path, size, head, first_n, slow)
        once = {"500-once": (500, None), "503-retry-after": (503, "1"), "429-once": (429, "1")}
        if mode in once:
            if first:
                code, after = once[mode]
                return self.fault_status(raw, code, "injected %d" % code, after, head)
            return self.correct(path, size, head)
        if mode in VALIDATOR_HEADERS:
            return self.correct(path, size, head, VALIDATOR_HEADERS[mode])
        if mode == "flip-once-versioned" and head:
            return self.correct(path, size, head, VERSIONED)
        if mode in (
            "reset-once-versioned",
            "reset-always-versioned",
            "short-once-versioned",
            "short-always-versioned",
            "version-change-once",
        ):
            return self.resumable(raw, path, size, head, mode)
        if mode == "ok" or head and mode != "huge-length":
            return self.correct(path, size, head)
        body_modes = {
            "reset-mid-body": lambda: self.partial(raw, path, size, "reset", first),
            "reset-always": lambda: self.partial(raw, path, size, "reset", True),
            "short": lambda: self.partial(raw, path, size, "short", True),
            "short-once": lambda: self.partial(raw, path, size, "short", first),
            "flip-once": lambda: self.flipped(raw, path, size, first),
            "flip-once-versioned": lambda: self.flipped(raw, path, size, first, VERSIONED),
            "stall": lambda: self.partial(raw, path, size, "stall", first),
            "trickle": lambda: self.trickle(raw, path, size),
            "ignore-range": lambda: self.ignore_range(raw, path, size),
            "wrong-range": lambda: self.wrong_range(raw, path, size),
            "huge-length": lambda: self.huge_length(raw, path, size, head),
        }
        if mode not in body_modes:
            return self.plain(404, "unknown bad_http mode '%s'" % mode, None, head)
        return body_modes[mode]()

    def slow(self, raw, path, size, head, ordinals, m):
        """The slow-nth / slow-every modes: a delay, then the correct answer."""
        n_path, n_all = ordinals
        k, ms = int(m.group(2)), min(int(m.group(3)), 60000)
        hit = (n_path == k) if m.group(1) == "nth" else (k > 0 and n_all % k == 0)
        if hit and not head:
            self.server.counters.fault(raw)
            self.server.counters.enter(raw)
            try:
                time.sleep(ms / 1000.0)
            finally:
                self.server.counters.leave(raw)
        return self.correct(path, size, head)

    def fault_status(self, raw, code, text, retry_after, head):
        self.server.counters.fault(raw)
        self.plain(code, text, {"Retry-After": retry_after} if retry_after else None, head)

    def partial(self, raw, path, size, how, misbehave):
        r = self.wanted_range(size)
        if not misbehave or r is None:
            return self.correct(path, size, False)
        self.server.counters.fault(raw)
        status, start, end = r
        n = end - start + 1
        self.send_head(status, start, end, size)
        self.send_body(path, start, n // 2)
        if how == "stall":
            self.wfile.flush()
            self.server.stop.wait(self.server.stall_s)
        self.hang_up(reset=(how == "reset"))

    def resumable(self, raw, path, size, head, mode):
        """The resume modes: a versioned object whose answers are cut."""
        changes = mode == "version-change-once"
        r = None if head else self.wanted_range(size)
        cut = r is not None and r[2] > r[1]
        always = mode.endswith("-always-versioned")
        cut = cut and (always or self.server.counters.first_end(raw, r[2]))
        if not cut:
            return self.correct(path, size, head, CHANGED if changes else RESUMABLE)
        self.server.counters.fault(raw)
        status, start, end = r
        self.send_head(status, start, end, size, extra=RESUMABLE)
        self.send_body(path, start, (end - start + 1) // 2)
        self.hang_up(reset=not mode.startswith("short-"))

    def flipped(self, raw, path, size, misbehave, extra=None):
        r = self.wanted_range(size)
        if not misbehave or r is None:
            return self.correct(path, size, False, extra)
        self.server.counters.fault(raw)
        status, start, end = r
        with open(path, "rb") as f:
            f.seek(start)
            body = bytearray(f.read(end - start + 1))
        if body:
            body[len(body) // 2] ^= 0x20
        self.send_head(status, start, end, size, extra=extra)
        self.wfile.write(bytes(body))

    def trickle(self, raw, path, size):
        r = self.wanted_range(size)
        if r is None:
            return self.correct(path, size, False)
        self.server.counters.fault(raw)
        status, start, end = r
        self.send_head(status, start, end, size)
        with open(path, "rb") as f:
            f.seek(start)
            for _ in range(min(end - start + 1, self.server.trickle_max_s)):
                self.wfile.write(f.read(1))
                self.wfile.flush()
                if self.server.stop.wait(1.0):
                    break
        self.hang_up(reset=False)

    def ignore_range(self, raw, path, size):
        if self.headers.get("Range") is not None:
            self.server.counters.fault(raw)
        self.send_head(200, 0, size - 1, size)
        self.send_body(path, 0, size)

    def wrong_range(self, raw, path, size):
        r = self.wanted_range(size)
        if r is None or size < 2:
            return self.correct(path, size, False)
        self.server.counters.fault(raw)
        _, start, end = r
        shift = 1 if end + 1 < size else -1
        if start + shift < 0:
            end -= 1  # a one-byte-short range still differs from the one asked
            shift = 0
        start, end = start + shift, end + shift
        self.send_head(206, start, end, size)
        self.send_body(path, start, end - start + 1)

    def huge_length(self, raw, path, size, head):
        self.server.counters.fault(raw)
        r = self.wanted_range(size) or (200, 0, size - 1)
        status, start, end = r
        self.send_head(status, start, end, size, length=HUGE_LENGTH)
        if head:
            return
        self.send_body(path, start, min(end - start + 1, HUGE_SEND_BYTES_MAX))
        self.hang_up(reset=False)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024  # a client opening hundreds of connections at once


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", required=True, help="directory whose files are served")
    ap.add_argument("--bind", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0 = any free port")
    ap.add_argument("--port-file", help="write the bound port here once listening")
    ap.add_argument("--stall-s", type=float, default=5.0, help="silence of /stall/ (<= 60)")
    ap.add_argument("--trickle-max-s", type=int, default=30, help="bound on a /trickle/ response (<= 300)")
    ap.add_argument("--redirect-to", default="", help="base URL /redirect-host/ sends clients to")
    ap.add_argument("--log-requests", help="append every request line and its headers here")
    ap.add_argument("--tls-cert", help="serve HTTPS with this certificate (PEM)")
    ap.add_argument("--tls-key", help="and this key (PEM)")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.root, exist_ok=True)
    srv = Server((a.bind, a.port), Handler)
    srv.root = os.path.abspath(a.root)
    srv.stall_s = min(max(a.stall_s, 0.0), 60.0)
    srv.trickle_max_s = min(max(a.trickle_max_s, 1), 300)
    srv.verbose = a.verbose
    srv.redirect_to = a.redirect_to.rstrip("/")
    srv.log_requests = a.log_requests
    srv.log_lock = threading.Lock()
    if a.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.tls_cert, a.tls_key)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    srv.counters = Counters()
    srv.stop = threading.Event()

    def on_term(*_):
        srv.stop.set()
        sys.exit(0)

    signal.signal(signal.SIGTERM, on_term)
    if a.port_file:
        tmp = a.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % srv.server_address[1])
        os.replace(tmp, a.port_file)
    try:
        srv.serve_forever(poll_interval=0.2)
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        srv.stop.set()
        srv.server_close()


if __name__ == "__main__":
    main()
