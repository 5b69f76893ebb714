#!/usr/bin/env python3
"""gcs_server.py: a Cloud Storage stand-in for tests/cli_gcs.sh (python3 stdlib
and python3-cryptography only). Serves ROOT/BUCKET/NAME as object NAME of
BUCKET through the subset of the JSON API ringfeed uses, written from
Google's published formats:

  GET|HEAD /storage/v1/b/B/o/NAME?alt=media   (Range: bytes=A-B -> 206)
  GET      /storage/v1/b/B/o?prefix=&maxResults=&pageToken=   (paged JSON)
  POST     /token   grant_type jwt-bearer: the assertion's RS256 signature is
           VERIFIED with the service account's public key (--sa-pubkey, for
           --sa-email), its aud must be this URL and it must not be expired;
           grant_type refresh_token: --client-id/--client-secret/--refresh-token
  GET      /computeMetadata/v1/instance/service-accounts/default/token
           (the metadata server: only with Metadata-Flavor: Google)

Every storage request needs "Authorization: Bearer T" with a token this
server issued and that has not expired (tokens live --expires seconds):
else 401. An object whose name starts with --redirect-prefix is answered
with a 302 to the same path on a second server (--port2) that logs the
Authorization header of every request it receives (--log2) and answers 404.
The first read of a name under --revoke-prefix revokes every token issued
so far (a token that stops working before its expiry: the client must fetch
a new one and send the request again). Writes its ports to --ports-file once both listen, and a JSON of counters to
--stats-file on every change (tokens issued, 401s sent, data requests).
"""
import argparse, base64, hashlib, json, os, secrets, threading, time, urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding

ARGS = None
LOCK = threading.Lock()
TOKENS = {}  # token -> expiry (time.time())
STATS = {"tokens": 0, "unauthorized": 0, "data": 0, "lists": 0, "metadata": 0, "refused_grants": 0}
PUBKEY = None


def bump(name):
    with LOCK:
        STATS[name] += 1
        if ARGS.stats_file:
            tmp = ARGS.stats_file + ".tmp"
            with open(tmp, "w") as f:
                json.dump(STATS, f)
            os.replace(tmp, ARGS.stats_file)


def b64url_decode(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def etag_of(path):
    st = os.stat(path)
    return base64.b64encode(hashlib.md5(f"{st.st_size}:{st.st_mtime_ns}".encode()).digest()).decode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def reply(self, code, body=b"", headers=None, ctype="application/json"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def error(self, code, msg):
        self.reply(code, json.dumps({"error": {"code": code, "message": msg}}).encode())

    def issue(self):
        tok = "ya29.standin-" + secrets.token_urlsafe(24)
        with LOCK:
            TOKENS[tok] = time.time() + ARGS.expires
        bump("tokens")
        return json.dumps({"access_token": tok, "expires_in": ARGS.expires,
                           "token_type": "Bearer"}).encode()

    def authorized(self):
        h = self.headers.get("Authorization", "")
        ok = False
        if h.startswith("Bearer "):
            with LOCK:
                exp = TOKENS.get(h[7:])
            ok = exp is not None and time.time() < exp
        if not ok:
            bump("unauthorized")
            self.error(401, "Invalid Credentials")
        return ok

    # ------------------------------------------------------------ token
    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        form = urllib.parse.parse_qs(self.rfile.read(n).decode(), keep_blank_values=True)
        if urllib.parse.urlsplit(self.path).path != "/token":
            return self.error(404, "no such endpoint")
        grant = form.get("grant_type", [""])[0]
        if grant == "urn:ietf:params:oauth:grant-type:jwt-bearer":
            why = self.check_assertion(form.get("assertion", [""])[0])
        elif grant == "refresh_token":
            want = (ARGS.client_id, ARGS.client_secret, ARGS.refresh_token)
            got = tuple(form.get(k, [""])[0] for k in ("client_id", "client_secret", "refresh_token"))
            why = None if ARGS.refresh_token and got == want else "unknown refresh token"
        else:
            why = "unsupported grant"
        if why:
            bump("refused_grants")
            body = json.dumps({"error": "invalid_grant", "error_description": why}).encode()
            return self.reply(400, body)
        self.reply(200, self.issue())

    def check_assertion(self, jwt):
        parts = jwt.split(".")
        if len(parts) != 3 or PUBKEY is None:
            return "malformed assertion"
        try:
            head, claims = json.loads(b64url_decode(parts[0])), json.loads(b64url_decode(parts[1]))
            PUBKEY.verify(b64url_decode(parts[2]), (parts[0] + "." + parts[1]).encode(),
                          padding.PKCS1v15(), hashes.SHA256())
        except (InvalidSignature, ValueError):
            return "invalid signature"
        now = time.time()
        me = [f"http://{h}:{self.server.server_port}/token" for h in ("127.0.0.1", "localhost")]
        if head.get("alg") != "RS256" or claims.get("iss") != ARGS.sa_email:
            return "wrong alg or issuer"
        if claims.get("aud") not in me or "devstorage" not in claims.get("scope", ""):
            return "wrong audience or scope"
        if not (claims.get("iat", 0) - 60 <= now < claims.get("exp", 0)):
            return "expired assertion"
        return None

    # ---------------------------------------------------------- storage
    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(u.query, keep_blank_values=True)
        if u.path == "/computeMetadata/v1/instance/service-accounts/default/token":
            if self.headers.get("Metadata-Flavor") != "Google":
                return self.error(403, "missing Metadata-Flavor")
            bump("metadata")
            return self.reply(200, self.issue())
        parts = u.path.split("/")
        # /storage/v1/b/BUCKET/o[/NAME]
        if len(parts) < 6 or parts[1:4] != ["storage", "v1", "b"] or parts[5] != "o":
            return self.error(404, "not an API path")
        name = urllib.parse.unquote(parts[6]) if len(parts) == 7 else ""
        if ARGS.revoke_prefix and name.startswith(ARGS.revoke_prefix):
            with LOCK:  # once: every token issued so far stops working, early
                if not STATS.get("revoked"):
                    STATS["revoked"] = 1
                    TOKENS.clear()
        if not self.authorized():
            return
        bucket = urllib.parse.unquote(parts[4])
        broot = os.path.join(ARGS.root, bucket)
        if "/" in bucket or bucket in ("", ".", "..") or not os.path.isdir(broot):
            return self.error(404, "no such bucket")
        if len(parts) == 6:
            return self.list(broot, q)
        if len(parts) != 7:  # the name is one encoded segment
            return self.error(400, "object name not encoded")
        if ARGS.redirect_prefix and name.startswith(ARGS.redirect_prefix):
            loc = f"http://127.0.0.1:{ARGS.port2_actual}{self.path}"
            return self.reply(302, b"", {"Location": loc})
        return self.media(broot, name, q)

    def media(self, broot, name, q):
        if q.get("alt") != ["media"]:
            return self.error(400, "only alt=media is served")
        path = os.path.join(broot, name)
        if ".." in name.split("/") or not os.path.isfile(path):
            return self.error(404, "no such object")
        bump("data")
        if ARGS.delay_ms and name.startswith(ARGS.slow_prefix):
            time.sleep(ARGS.delay_ms / 1000)
        size = os.path.getsize(path)
        hdr = {"ETag": etag_of(path), "Accept-Ranges": "bytes"}
        rng = self.headers.get("Range")
        first, last, code = 0, size - 1, 200
        if rng:
            a, b = rng.removeprefix("bytes=").split("-")
            first, last = int(a), min(int(b) if b else size - 1, size - 1)
            if first > last:
                return self.reply(416, b"", {"Content-Range": f"bytes */{size}"})
            code = 206
            hdr["Content-Range"] = f"bytes {first}-{last}/{size}"
        with open(path, "rb") as f:
            f.seek(first)
            body = f.read(last - first + 1) if self.command == "GET" else b""
        self.send_response(code)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(last - first + 1))
        for k, v in hdr.items():
            self.send_header(k, v)
        self.end_headers()
        if self.command == "GET":
            self.wfile.write(body)

    def list(self, broot, q):
        bump("lists")
        prefix = q.get("prefix", [""])[0]
        per = min(int(q.get("maxResults", ["1000"])[0]), ARGS.page_size)
        start = q.get("pageToken", [""])[0]
        names = []
        for d, _, files in os.walk(broot):
            for f in files:
                n = os.path.relpath(os.path.join(d, f), broot)
                if n.startswith(prefix):
                    names.append(n)
        names.sort(key=lambda s: s.encode())
        if start:
            start = b64url_decode(start).decode()
            names = [n for n in names if n.encode() > start.encode()]
        page, rest = names[:per], names[per:]
        out = {"kind": "storage#objects", "items": [
            {"kind": "storage#object", "name": n, "bucket": os.path.basename(broot),
             "size": str(os.path.getsize(os.path.join(broot, n))),
             "etag": etag_of(os.path.join(broot, n)), "generation": "1"} for n in page]}
        if rest:
            out["nextPageToken"] = base64.urlsafe_b64encode(page[-1].encode()).decode().rstrip("=")
        self.reply(200, json.dumps(out).encode())


class Other(BaseHTTPRequestHandler):
    """The other host a read is redirected to: logs what it receives."""
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def do_GET(self):
        with LOCK, open(ARGS.log2, "a") as f:
            f.write(f"{self.command} {self.path} Authorization={self.headers.get('Authorization', '')}\n")
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_HEAD = do_GET


def main():
    global ARGS, PUBKEY
    p = argparse.ArgumentParser()
    p.add_argument("--root", required=True)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port2", type=int, default=0)
    p.add_argument("--ports-file", required=True)
    p.add_argument("--stats-file")
    p.add_argument("--log2", default=os.devnull)
    p.add_argument("--sa-email", default="")
    p.add_argument("--sa-pubkey")
    p.add_argument("--client-id", default="")
    p.add_argument("--client-secret", default="")
    p.add_argument("--refresh-token", default="")
    p.add_argument("--expires", type=int, default=3600)
    p.add_argument("--page-size", type=int, default=1000)
    p.add_argument("--delay-ms", type=int, default=0)  # for each read of a name under:
    p.add_argument("--slow-prefix", default="")
    p.add_argument("--redirect-prefix", default="")
    p.add_argument("--revoke-prefix", default="")
    ARGS = p.parse_args()
    if ARGS.sa_pubkey:
        with open(ARGS.sa_pubkey, "rb") as f:
            PUBKEY = serialization.load_pem_public_key(f.read())
    main_srv = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    other = ThreadingHTTPServer(("127.0.0.1", ARGS.port2), Other)
    main_srv.daemon_threads = other.daemon_threads = True
    ARGS.port2_actual = other.server_port
    threading.Thread(target=other.serve_forever, daemon=True).start()
    with open(ARGS.ports_file + ".tmp", "w") as f:
        f.write(f"{main_srv.server_port} {other.server_port}\n")
    os.replace(ARGS.ports_file + ".tmp", ARGS.ports_file)
    main_srv.serve_forever()


if __name__ == "__main__":
    main()
