#!/usr/bin/python3
"""redirect_server.py - a stand-in endpoint for the redirect tests of the
credential requests (STS, container, IMDS) and of signed S3 requests.

  --redirect-to BASE   answer every request (any method: GET, HEAD, POST,
                       PUT) with --status (default 307) and
                       Location: BASE + the request's path and query
  (no --redirect-to)   answer every request 404 ("the other host")

--log FILE appends every request received: the request line, the headers
and the body (the tests grep it for tokens and Authorization headers; a
host that received nothing has no log file). --port 0 and --port-file as
the other servers. Python 3 standard library only; bodies are read up to
1 MiB; SIGTERM exits.
"""

import argparse
import http.server
import os
import signal
import socketserver
import sys
import threading

BODY_BYTES_MAX = 1 << 20


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("redirect_server: " + (fmt % args) + "\n")

    def answer(self):
        n = self.headers.get("Content-Length")
        body = b""
        if n is not None and n.isdigit():
            body = self.rfile.read(min(int(n), BODY_BYTES_MAX))
        if self.server.log:
            with self.server.lock, open(self.server.log, "ab") as f:
                f.write(self.requestline.encode("latin-1") + b"\n")
                f.write(str(self.headers).encode("latin-1"))
                f.write(body + b"\n--\n")
        if self.server.redirect_to:
            status, text = self.server.status, b"moved\n"
            extra = {"Location": self.server.redirect_to + self.path}
        else:
            status, text, extra = 404, b"not here\n", {}
        self.send_response(status)
        for k, v in extra.items():
            self.send_header(k, v)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(text)

    do_GET = do_HEAD = do_POST = do_PUT = answer


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bind", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--redirect-to", default="")
    ap.add_argument("--status", type=int, default=307, choices=[301, 302, 303, 307, 308])
    ap.add_argument("--log")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    srv = Server((a.bind, a.port), Handler)
    srv.redirect_to = a.redirect_to.rstrip("/")
    srv.status, srv.log, srv.verbose = a.status, a.log, a.verbose
    srv.lock = threading.Lock()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    if a.port_file:
        tmp = a.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % srv.server_address[1])
        os.rename(tmp, a.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()
