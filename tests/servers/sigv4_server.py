#!/usr/bin/python3
"""sigv4_server.py - an S3-like test server over a directory that checks the
AWS Signature Version 4 of every request (s3rver does not).

It is the judge for ringfeed's S3 signing: each request's canonical request is
rebuilt from what arrived on the wire, following the AWS specification (path
segments and query re-encoded with RFC 3986 unreserved characters, query
sorted, signed headers from the Authorization header, payload hash from
x-amz-content-sha256), signed with the known secret, and compared. A missing,
malformed or wrong signature gets 403 with an S3-style XML error body; like
AWS, a SignatureDoesNotMatch body carries the server's CanonicalRequest and
StringToSign (never the secret) so a failing client can see the difference.

Wrong region, as S3 answers it: a request signed for another region gets 400
AuthorizationHeaderMalformed with the bucket's region in <Region> and in the
x-amz-bucket-region header; with --redirect-unsigned an unsigned request gets
301 PermanentRedirect with x-amz-bucket-region (S3's answer to an anonymous
request sent to another region's endpoint).

Virtual-hosted-style addressing: a Host of BUCKET.localhost[:PORT] (curl
resolves *.localhost to the loopback) names the bucket, the path the key.
Path-style addressing: /BUCKET/KEY maps to ROOT/BUCKET/KEY; keys are opaque
as in S3, so a "." or ".." key segment is a name (stored as "%2E" / "%2E%2E").
  GET (Range: bytes=a-b | a- | -n -> 206 + exact Content-Range), HEAD,
  GET /BUCKET?list-type=2 (prefix, delimiter, continuation-token, start-after,
  max-keys; pages are capped at --max-keys-cap so pagination is exercised),
  PUT /BUCKET/KEY (Content-Length body, payload hash checked when signed).
  GET /_stats (no auth): JSON request counters, for tests.
  --missing-403: a missing key is 403 AccessDenied, as S3 answers a caller
  that may not list the bucket (ringfeed takes it as "absent" for optional
  sidecars such as a tar's index file).

Temporary credentials (--issued-master M): an access key issued by
creds_server.py (issued_creds.py) is accepted too, with its derived secret;
it needs its session token (x-amz-security-token, signed), and a token past
its expiry gets 400 ExpiredToken as S3 answers it (an altered one 400
InvalidToken). --expire-early-s S treats tokens as expired S seconds early
(a clock ahead of the issuer's), so a client meets ExpiredToken before it
would refresh.

Python 3 standard library only. Every thread is a daemon; SIGTERM exits.
"""

import argparse
import os.path as _p
import base64
import datetime
import hashlib
import hmac
import json
import os
import re
import signal
import sys
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from xml.sax.saxutils import escape as xml_escape

sys.path.insert(0, _p.dirname(_p.abspath(__file__)))
import issued_creds  # noqa: E402

PUT_BYTES_MAX = 1 << 32  # bound on one upload
HEADER_BYTES_MAX = 16384
LIST_KEYS_MAX = 1000
SKEW_S_MAX = 15 * 60
UNRESERVED = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~"
AUTH_RE = re.compile(
    r"^AWS4-HMAC-SHA256\s+Credential=([^,\s]+)\s*,\s*SignedHeaders=([^,\s]+)\s*,"
    r"\s*Signature=([0-9a-f]{64})\s*$"
)
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
# key segment -> its name on disk: "." and ".." are names in S3 keys
DOT_SEGMENTS = {b".": b"%2E", b"..": b"%2E%2E"}
DOT_NAMES = {v: k for k, v in DOT_SEGMENTS.items()}


def aws_encode(raw: bytes, keep_slash: bool) -> str:
    """RFC 3986 encoding as the SigV4 spec requires (uppercase hex)."""
    out = []
    for b in raw:
        if b in UNRESERVED or (keep_slash and b == 0x2F):
            out.append(chr(b))
        else:
            out.append("%%%02X" % b)
    return "".join(out)


def canonical_query(raw_query: str) -> str:
    pairs = []
    for piece in raw_query.split("&"):
        if piece == "":
            continue
        name, _, value = piece.partition("=")
        pairs.append(
            (
                aws_encode(urllib.parse.unquote_to_bytes(name), False),
                aws_encode(urllib.parse.unquote_to_bytes(value), False),
            )
        )
    pairs.sort()
    return "&".join("%s=%s" % p for p in pairs)


def hmac_sha256(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode("utf-8"), hashlib.sha256).digest()


def signing_key(secret: str, date: str, region: str, service: str) -> bytes:
    k = hmac_sha256(("AWS4" + secret).encode("utf-8"), date)
    k = hmac_sha256(k, region)
    k = hmac_sha256(k, service)
    return hmac_sha256(k, "aws4_request")


class AuthError(Exception):
    def __init__(self, status, code, message, extra=None, headers=None):
        super().__init__(message)
        self.status, self.code, self.message, self.extra = status, code, message, extra or {}
        self.headers = headers or {}


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {}

    def add(self, name):
        with self.lock:
            self.counts[name] = self.counts.get(name, 0) + 1

    def snapshot(self):
        with self.lock:
            return dict(self.counts)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive; every response has a length
    server_version = "rf-sigv4"

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("sigv4: " + (fmt % args) + "\n")

    # ---- responses -------------------------------------------------------
    def send_bytes(self, status, body, ctype="application/xml", headers=None, head=False):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("x-amz-request-id", uuid.uuid4().hex[:16])
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def send_error_xml(self, status, code, message, resource, extra=None, head=False, headers=None):
        self.server.stats.add("error_" + code)
        parts = [
            '<?xml version="1.0" encoding="UTF-8"?>\n<Error>',
            "<Code>%s</Code>" % xml_escape(code),
            "<Message>%s</Message>" % xml_escape(message),
            "<Resource>%s</Resource>" % xml_escape(resource),
        ]
        for k, v in (extra or {}).items():
            parts.append("<%s>%s</%s>" % (k, xml_escape(v), k))
        parts.append("<RequestId>%s</RequestId></Error>\n" % uuid.uuid4().hex[:16])
        body = "".join(parts).encode("utf-8")
        if status >= 400 and self.server.verbose:
            sys.stderr.write("sigv4: %s %s -> %d %s %s\n" % (self.command, resource, status, code, message))
        hdrs = dict(headers or {})
        if status == 400:
            hdrs["Connection"] = "close"
        self.send_bytes(status, body, headers=hdrs, head=head)

    # ---- signature -------------------------------------------------------
    def header_value(self, name):
        values = self.headers.get_all(name)
        if values is None:
            return None
        return ",".join(" ".join(v.strip().split()) for v in values)

    def verify_signature(self, raw_path, raw_query):
        auth = self.headers.get("Authorization")
        if auth is None and self.server.redirect_unsigned:
            self.server.stats.add("wrong_region")
            raise AuthError(301, "PermanentRedirect",
                            "The bucket you are attempting to access must be addressed using the specified endpoint.",
                            {"Endpoint": "s3.%s.amazonaws.com" % self.server.region},
                            {"x-amz-bucket-region": self.server.region})
        if auth is None:
            raise AuthError(403, "AccessDenied", "Access Denied (no Authorization header)")
        m = AUTH_RE.match(auth.strip())
        if not m:
            raise AuthError(400, "AuthorizationHeaderMalformed", "malformed AWS4-HMAC-SHA256 Authorization header")
        credential, signed_headers, signature = m.groups()
        cred = credential.split("/")
        if len(cred) != 5 or cred[4] != "aws4_request":
            raise AuthError(400, "AuthorizationHeaderMalformed", "bad Credential scope '%s'" % "/".join(cred[1:]))
        access, date, region, service = cred[:4]
        secret = self.secret_of(access)
        if secret is None:
            raise AuthError(403, "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records.")
        if region != self.server.region and service == "s3":
            self.server.stats.add("wrong_region")
            raise AuthError(400, "AuthorizationHeaderMalformed",
                            "The authorization header is malformed; the region '%s' is wrong; expecting '%s'"
                            % (region, self.server.region),
                            {"Region": self.server.region},
                            {"x-amz-bucket-region": self.server.region})
        if service != "s3":
            raise AuthError(400, "AuthorizationHeaderMalformed",
                            "scope region/service '%s/%s' (expected '%s/s3')" % (region, service, self.server.region))
        amz_date = self.headers.get("x-amz-date")
        if amz_date is None or not re.fullmatch(r"\d{8}T\d{6}Z", amz_date):
            raise AuthError(403, "AccessDenied", "missing or malformed x-amz-date")
        if amz_date[:8] != date:
            raise AuthError(403, "SignatureDoesNotMatch", "x-amz-date day differs from the credential scope date")
        when = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.timezone.utc)
        skew = abs((datetime.datetime.now(datetime.timezone.utc) - when).total_seconds())
        if skew > SKEW_S_MAX:
            raise AuthError(403, "RequestTimeTooSkewed", "request time differs from server time by %ds" % skew)
        names = signed_headers.split(";")
        if names != sorted(names) or "host" not in names:
            raise AuthError(403, "SignatureDoesNotMatch", "SignedHeaders must be sorted, lowercase and include host")
        if self.headers.get("x-amz-security-token") is not None and "x-amz-security-token" not in names:
            raise AuthError(403, "AccessDenied", "x-amz-security-token present but not signed")
        if self.server.session_token is not None and self.headers.get("x-amz-security-token") != self.server.session_token:
            raise AuthError(403, "InvalidToken", "The provided token is malformed or otherwise invalid.")
        canon_headers = ""
        for n in names:
            v = self.header_value(n)
            if v is None:
                raise AuthError(403, "SignatureDoesNotMatch", "signed header '%s' is missing from the request" % n)
            canon_headers += "%s:%s\n" % (n, v)
        payload_hash = self.headers.get("x-amz-content-sha256")
        if payload_hash is None:
            raise AuthError(400, "InvalidRequest", "missing x-amz-content-sha256 (required by S3 for SigV4)")
        canon_uri = aws_encode(urllib.parse.unquote_to_bytes(raw_path), True)
        canonical = "\n".join(
            [self.command, canon_uri, canonical_query(raw_query), canon_headers, signed_headers, payload_hash]
        )
        scope = "%s/%s/s3/aws4_request" % (date, region)
        to_sign = "\n".join(
            ["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode("utf-8")).hexdigest()]
        )
        key = signing_key(secret, date, region, "s3")
        expected = hmac.new(key, to_sign.encode("utf-8"), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, signature):
            raise AuthError(
                403, "SignatureDoesNotMatch",
                "The request signature we calculated does not match the signature you provided. "
                "Check your key and signing method.",
                {"StringToSign": to_sign, "CanonicalRequest": canonical},
            )
        self.check_issued_token(access)
        return payload_hash

    # ---- temporary credentials (--issued-master) -------------------------
    def secret_of(self, access):
        if access == self.server.access_key:
            return self.server.secret_key
        if self.server.issued_master and access.startswith("ASIARF"):
            return issued_creds.secret_for(self.server.issued_master, access)
        return None

    def check_issued_token(self, access):
        if access == self.server.access_key or not self.server.issued_master:
            return
        verdict = issued_creds.check_token(self.server.issued_master, access,
                                           self.headers.get("x-amz-security-token"),
                                           time.time() + self.server.expire_early_s)
        self.server.stats.add("issued_" + verdict)
        if verdict == "expired":
            raise AuthError(400, "ExpiredToken", "The provided token has expired.")
        if verdict != "ok":
            raise AuthError(400, "InvalidToken", "The provided token is malformed or otherwise invalid.")

    # ---- dispatch --------------------------------------------------------
    def handle_any(self, head=False):
        raw_path, _, raw_query = self.path.partition("?")
        self.server.stats.add("requests")
        if raw_path == "/_stats" and self.command == "GET":
            body = json.dumps(self.server.stats.snapshot(), sort_keys=True).encode()
            return self.send_bytes(200, body, "application/json")
        try:
            payload_hash = self.verify_signature(raw_path, raw_query)
        except AuthError as e:
            self.server.stats.add("rejected")
            self.discard_body()
            return self.send_error_xml(e.status, e.code, e.message, raw_path, e.extra, head, e.headers)
        self.server.stats.add("accepted")
        self.server.stats.add(self.command)
        bucket, key = self.bucket_and_key(raw_path)
        if not re.fullmatch(r"[a-z0-9][a-z0-9.-]{1,62}", bucket) or not os.path.isdir(self.bucket_dir(bucket)):
            self.discard_body()
            return self.send_error_xml(404, "NoSuchBucket", "The specified bucket does not exist", raw_path, head=head)
        if self.command == "PUT":
            return self.put_object(bucket, key, raw_path, payload_hash)
        if key == b"":
            if self.command == "GET":
                return self.list_objects(bucket, raw_query)
            return self.send_bytes(200, b"", head=head)
        return self.get_object(bucket, key, raw_path, head)

    def virtual_bucket(self):
        """The bucket of a virtual-hosted-style Host (BUCKET.localhost[:PORT]), or None."""
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0].lower()
        suffix = "." + self.server.virtual_suffix
        if host.endswith(suffix) and len(host) > len(suffix):
            return host[: -len(suffix)]
        return None

    def bucket_and_key(self, raw_path):
        path = urllib.parse.unquote_to_bytes(raw_path)
        vb = self.virtual_bucket()
        if vb is not None:
            self.server.stats.add("virtual_hosted")
            return vb, path[1:] if path.startswith(b"/") else path
        self.server.stats.add("path_style")
        parts = path.lstrip(b"/").split(b"/", 1)
        return parts[0].decode("utf-8", "surrogateescape"), parts[1] if len(parts) > 1 else b""

    def do_GET(self):
        self.handle_any()

    def do_HEAD(self):
        self.handle_any(head=True)

    def do_PUT(self):
        self.handle_any()

    def discard_body(self):
        n = self.headers.get("Content-Length")
        if n is not None and n.isdigit() and int(n) <= HEADER_BYTES_MAX:
            self.rfile.read(int(n))
        elif n is not None:
            self.close_connection = True

    # ---- objects ---------------------------------------------------------
    def bucket_dir(self, bucket):
        return os.path.join(self.server.root, bucket)

    def object_path(self, bucket, key):
        """ROOT/BUCKET/KEY, or None when the key cannot be stored. Keys are
        opaque, as in S3: a "." or ".." segment is a name, stored on disk as
        DOT_SEGMENTS says (so it never leaves the bucket)."""
        segs = key.split(b"/")
        if any(s == b"" or s in DOT_SEGMENTS.values() for s in segs) or b"\0" in key or len(key) > 1024:
            return None
        segs = [DOT_SEGMENTS.get(s, s) for s in segs]
        return os.path.join(self.bucket_dir(bucket).encode(), *segs)

    def get_object(self, bucket, key, raw_path, head):
        p = self.object_path(bucket, key)
        if (p is None or not os.path.isfile(p)) and self.server.missing_403:
            # S3's answer to a missing key when the caller lacks s3:ListBucket
            return self.send_error_xml(403, "AccessDenied", "Access Denied", raw_path, head=head)
        if p is None or not os.path.isfile(p):
            return self.send_error_xml(404, "NoSuchKey", "The specified key does not exist.", raw_path, head=head)
        size = os.path.getsize(p)
        st = os.stat(p)
        common = {
            "Accept-Ranges": "bytes",
            "ETag": '"%x-%x"' % (st.st_mtime_ns, size),
            "Last-Modified": self.date_time_string(st.st_mtime),
        }
        rng = self.headers.get("Range")
        start, end, status = 0, size - 1, 200
        if rng is not None:
            m = re.fullmatch(r"bytes=(\d*)-(\d*)", rng.strip())
            if m and (m.group(1) or m.group(2)):
                a, b = m.group(1), m.group(2)
                if a == "":
                    start, end = max(0, size - int(b)), size - 1
                else:
                    start, end = int(a), min(int(b) if b else size - 1, size - 1)
                if start >= size or start > end:
                    common["Content-Range"] = "bytes */%d" % size
                    return self.send_error_xml(416, "InvalidRange", "The requested range is not satisfiable",
                                               raw_path, head=head)
                status = 206
                common["Content-Range"] = "bytes %d-%d/%d" % (start, end, size)
        length = max(0, end - start + 1)
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(length))
        for k, v in common.items():
            self.send_header(k, v)
        self.end_headers()
        if head:
            return
        with open(p, "rb") as f:
            f.seek(start)
            left = length
            while left > 0:
                chunk = f.read(min(left, 1 << 20))
                if not chunk:
                    break
                self.wfile.write(chunk)
                left -= len(chunk)

    def put_object(self, bucket, key, raw_path, payload_hash):
        p = self.object_path(bucket, key)
        n = self.headers.get("Content-Length")
        if p is None:
            self.discard_body()
            return self.send_error_xml(400, "InvalidArgument", "bad object key", raw_path)
        if n is None or not n.isdigit() or int(n) > PUT_BYTES_MAX:
            self.close_connection = True
            return self.send_error_xml(411, "MissingContentLength", "PUT needs a Content-Length <= 4 GiB", raw_path)
        if payload_hash.startswith("STREAMING-"):
            self.close_connection = True
            return self.send_error_xml(501, "NotImplemented", "aws-chunked uploads are not supported", raw_path)
        tmpdir = os.path.join(self.server.root, ".uploads")
        os.makedirs(tmpdir, exist_ok=True)
        tmp = os.path.join(tmpdir, uuid.uuid4().hex)
        h = hashlib.sha256()
        left = int(n)
        with open(tmp, "wb") as f:
            while left > 0:
                chunk = self.rfile.read(min(left, 1 << 20))
                if not chunk:
                    break
                h.update(chunk)
                f.write(chunk)
                left -= len(chunk)
        if left:
            os.unlink(tmp)
            self.close_connection = True
            return
        if payload_hash != "UNSIGNED-PAYLOAD" and payload_hash != h.hexdigest():
            os.unlink(tmp)
            return self.send_error_xml(400, "XAmzContentSHA256Mismatch",
                                       "The provided 'x-amz-content-sha256' header does not match what was computed.",
                                       raw_path)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        os.replace(tmp, p)
        self.send_bytes(200, b"", headers={"ETag": '"%s"' % h.hexdigest()[:32]})

    # ---- listing ---------------------------------------------------------
    def all_keys(self, bucket):
        base = self.bucket_dir(bucket).encode()
        keys = []
        for dirpath, _, files in os.walk(base):
            for f in files:
                full = os.path.join(dirpath, f)
                segs = os.path.relpath(full, base).split(os.sep.encode())
                segs = [DOT_NAMES.get(s, s) for s in segs]
                keys.append((b"/".join(segs), full))
        keys.sort()
        return keys

    def list_objects(self, bucket, raw_query):
        q = {}
        for piece in raw_query.split("&"):
            if piece:
                k, _, v = piece.partition("=")
                q[urllib.parse.unquote(k)] = urllib.parse.unquote_to_bytes(v)
        if q.get("list-type") != b"2":
            return self.send_error_xml(400, "InvalidArgument", "only ListObjectsV2 (list-type=2) is served", "/" + bucket)
        prefix = q.get("prefix", b"")
        delim = q.get("delimiter", b"")
        try:
            max_keys = int(q.get("max-keys", b"1000"))
            after = q.get("start-after", b"")
            token = q.get("continuation-token")
            if token is not None:
                after = base64.urlsafe_b64decode(token)
        except ValueError:
            return self.send_error_xml(400, "InvalidArgument", "bad max-keys or continuation-token", "/" + bucket)
        if max_keys < 0:
            return self.send_error_xml(400, "InvalidArgument", "negative max-keys", "/" + bucket)
        page = min(max_keys, self.server.max_keys_cap, LIST_KEYS_MAX)
        entries, prefixes, truncated, last = [], [], False, None
        for key, full in self.all_keys(bucket):
            if not key.startswith(prefix) or key <= after:
                continue
            cp = None
            if delim:
                i = key.find(delim, len(prefix))
                if i >= 0:
                    cp = key[: i + len(delim)]
                    if cp in prefixes or (after and cp <= after):
                        continue
            if len(entries) + len(prefixes) >= page:
                truncated = True
                break
            if cp is not None:
                prefixes.append(cp)
                last = cp + b"\xff"  # resume after every key under this prefix
            else:
                entries.append((key, os.stat(full)))
                last = key
        out = ['<?xml version="1.0" encoding="UTF-8"?>\n',
               '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">']
        dec = lambda b: xml_escape(b.decode("utf-8", "replace"))
        out.append("<Name>%s</Name><Prefix>%s</Prefix>" % (xml_escape(bucket), dec(prefix)))
        if delim:
            out.append("<Delimiter>%s</Delimiter>" % dec(delim))
        out.append("<MaxKeys>%d</MaxKeys><KeyCount>%d</KeyCount>" % (max_keys, len(entries) + len(prefixes)))
        out.append("<IsTruncated>%s</IsTruncated>" % ("true" if truncated else "false"))
        if token is not None:
            out.append("<ContinuationToken>%s</ContinuationToken>" % xml_escape(q["continuation-token"].decode()))
        if truncated and last is not None:
            out.append("<NextContinuationToken>%s</NextContinuationToken>"
                       % base64.urlsafe_b64encode(last).decode())
        for key, st in entries:
            when = datetime.datetime.fromtimestamp(st.st_mtime, datetime.timezone.utc)
            out.append("<Contents><Key>%s</Key><LastModified>%s</LastModified><ETag>&quot;%x-%x&quot;</ETag>"
                       "<Size>%d</Size><StorageClass>STANDARD</StorageClass></Contents>"
                       % (dec(key), when.strftime("%Y-%m-%dT%H:%M:%S.000Z"), st.st_mtime_ns, st.st_size,
                          st.st_size))
        for cp in prefixes:
            out.append("<CommonPrefixes><Prefix>%s</Prefix></CommonPrefixes>" % dec(cp))
        out.append("</ListBucketResult>\n")
        self.send_bytes(200, "".join(out).encode("utf-8"))


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", required=True, help="directory of bucket folders")
    ap.add_argument("--bind", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0 = any free port")
    ap.add_argument("--port-file", help="write the bound port here once listening")
    ap.add_argument("--access-key", default="RFTESTACCESS")
    ap.add_argument("--secret-key", default="rf-test-secret/0123456789")
    ap.add_argument("--session-token", default=None, help="if set, x-amz-security-token must equal it")
    ap.add_argument("--region", default="us-east-1")
    ap.add_argument("--issued-master", default=None,
                    help="also accept temporary credentials issued under this master secret")
    ap.add_argument("--expire-early-s", type=float, default=0.0,
                    help="issued tokens count as expired this many seconds early")
    ap.add_argument("--bucket", action="append", default=[], help="create this bucket folder")
    ap.add_argument("--max-keys-cap", type=int, default=LIST_KEYS_MAX, help="largest listing page")
    ap.add_argument("--redirect-unsigned", action="store_true",
                    help="answer unsigned requests 301 PermanentRedirect with x-amz-bucket-region")
    ap.add_argument("--virtual-suffix", default="localhost",
                    help="a Host of BUCKET.SUFFIX[:PORT] is a virtual-hosted-style request")
    ap.add_argument("--missing-403", action="store_true",
                    help="answer a missing key 403 AccessDenied (S3, to a caller without ListBucket)")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    for b in a.bucket:
        os.makedirs(os.path.join(a.root, b), exist_ok=True)
    srv = Server((a.bind, a.port), Handler)
    srv.root, srv.access_key, srv.secret_key = os.path.abspath(a.root), a.access_key, a.secret_key
    srv.session_token, srv.region, srv.verbose = a.session_token, a.region, a.verbose
    srv.issued_master, srv.expire_early_s = a.issued_master, a.expire_early_s
    srv.max_keys_cap = max(1, a.max_keys_cap)
    srv.redirect_unsigned, srv.virtual_suffix = a.redirect_unsigned, a.virtual_suffix.lower()
    srv.missing_403 = a.missing_403
    srv.stats = Stats()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
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
        srv.server_close()


if __name__ == "__main__":
    main()
