#!/usr/bin/python3
"""creds_server.py - stand-ins for the AWS credential endpoints, written from
AWS's documented request and response formats, serving temporary
credentials (issued_creds.py) that expire after --ttl seconds:

  STS (POST /, form body, Version 2011-06-15):
    Action=AssumeRoleWithWebIdentity: RoleArn must be --role-arn and
      WebIdentityToken --web-identity-token; unsigned, as the SDKs send it.
    Action=AssumeRole: RoleArn --role-arn; the request must be SigV4-signed
      for service sts with --source-access / --source-secret (the source
      profile's keys), payload hash over the body.
    Answers <AssumeRole[WithWebIdentity]Response> XML, or <ErrorResponse>.
  Container credentials (GET /container/...): the Authorization header must
    equal --container-token; JSON {AccessKeyId, SecretAccessKey, Token,
    Expiration, RoleArn}.
  IMDSv2: PUT /latest/api/token with X-aws-ec2-metadata-token-ttl-seconds
    (1..21600) gives a token; GET /latest/meta-data/iam/security-credentials/
    (the role name) and .../ROLE (JSON with Code Success) need header
    X-aws-ec2-metadata-token; without it 401 (IMDSv2 only).
  GET /_stats: JSON counters (issued_sts, issued_container, issued_imds,
    rejected_*), for tests.

Python 3 standard library only. Every thread is a daemon; SIGTERM exits."""

import argparse
import hashlib
import hmac
import json
import os
import secrets
import signal
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from xml.sax.saxutils import escape as xml_escape

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import issued_creds  # noqa: E402
from sigv4_server import AUTH_RE, aws_encode, canonical_query, signing_key  # noqa: E402

BODY_BYTES_MAX = 65536
STS_NS = "https://sts.amazonaws.com/doc/2011-06-15/"
ROLE = "rf-test-role"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "rf-creds"

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("creds: " + (fmt % args) + "\n")

    def count(self, name):
        with self.server.lock:
            self.server.stats[name] = self.server.stats.get(name, 0) + 1

    def send(self, status, body, ctype="application/json", headers=None):
        if isinstance(body, str):
            body = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def read_body(self):
        n = self.headers.get("Content-Length", "0")
        if not n.isdigit() or int(n) > BODY_BYTES_MAX:
            self.close_connection = True
            return None
        return self.rfile.read(int(n))

    def issue(self):
        return issued_creds.issue(self.server.master, self.server.ttl)

    # ---- STS -------------------------------------------------------------
    def sts_error(self, status, code, message):
        self.count("rejected_sts")
        body = ('<ErrorResponse xmlns="%s"><Error><Type>Sender</Type><Code>%s</Code>'
                "<Message>%s</Message></Error><RequestId>%s</RequestId></ErrorResponse>"
                % (STS_NS, code, xml_escape(message), secrets.token_hex(8)))
        self.send(status, body, "text/xml")

    def sts_signature_ok(self, body):
        m = AUTH_RE.match(self.headers.get("Authorization", "").strip())
        if not m:
            return "no or malformed Authorization"
        credential, signed_headers, signature = m.groups()
        cred = credential.split("/")
        if len(cred) != 5 or cred[0] != self.server.source_access or cred[3] != "sts":
            return "credential scope is not the source profile's key for sts"
        amz_date = self.headers.get("x-amz-date", "")
        canon_headers = ""
        for n in signed_headers.split(";"):
            v = self.headers.get_all(n)
            if v is None:
                return "signed header %s missing" % n
            canon_headers += "%s:%s\n" % (n, ",".join(" ".join(x.strip().split()) for x in v))
        payload = hashlib.sha256(body).hexdigest()
        declared = self.headers.get("x-amz-content-sha256")
        if declared is not None and declared != payload:
            return "x-amz-content-sha256 is not the body's hash"
        raw_path, _, raw_query = self.path.partition("?")
        canonical = "\n".join([self.command, aws_encode(urllib.parse.unquote_to_bytes(raw_path), True),
                               canonical_query(raw_query), canon_headers, signed_headers, payload])
        scope = "/".join(cred[1:])
        to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                             hashlib.sha256(canonical.encode()).hexdigest()])
        key = signing_key(self.server.source_secret, cred[1], cred[2], "sts")
        want = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
        return None if hmac.compare_digest(want, signature) else "signature does not match"

    def sts(self, body):
        form = dict(urllib.parse.parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
        action = form.get("Action")
        if form.get("Version") != "2011-06-15":
            return self.sts_error(400, "InvalidParameterValue", "Version must be 2011-06-15")
        if form.get("RoleArn") != self.server.role_arn or not form.get("RoleSessionName"):
            return self.sts_error(403, "AccessDenied", "not authorized to assume this role")
        if action == "AssumeRoleWithWebIdentity":
            if form.get("WebIdentityToken") != self.server.web_identity_token:
                return self.sts_error(400, "InvalidIdentityToken", "the web identity token is not valid")
        elif action == "AssumeRole":
            why = self.sts_signature_ok(body)
            if why:
                return self.sts_error(403, "SignatureDoesNotMatch", why)
        else:
            return self.sts_error(400, "InvalidAction", "unknown Action")
        ak, sk, tok, exp = self.issue()
        self.count("issued_sts")
        self.count("issued_" + action)
        xml = ('<%sResponse xmlns="%s"><%sResult>'
               "<AssumedRoleUser><Arn>%s/%s</Arn><AssumedRoleId>AROARF:%s</AssumedRoleId></AssumedRoleUser>"
               "<Credentials><SessionToken>%s</SessionToken><SecretAccessKey>%s</SecretAccessKey>"
               "<Expiration>%s</Expiration><AccessKeyId>%s</AccessKeyId></Credentials>"
               "</%sResult><ResponseMetadata><RequestId>%s</RequestId></ResponseMetadata></%sResponse>"
               % (action, STS_NS, action, xml_escape(self.server.role_arn), xml_escape(form["RoleSessionName"]),
                  xml_escape(form["RoleSessionName"]), tok, xml_escape(sk), issued_creds.iso(exp), ak, action,
                  secrets.token_hex(8), action))
        self.send(200, xml, "text/xml")

    # ---- container and IMDS ----------------------------------------------
    def creds_json(self, imds):
        ak, sk, tok, exp = self.issue()
        d = {"AccessKeyId": ak, "SecretAccessKey": sk, "Token": tok, "Expiration": issued_creds.iso(exp)}
        if imds:
            d.update({"Code": "Success", "LastUpdated": issued_creds.iso(exp - self.server.ttl),
                      "Type": "AWS-HMAC"})
        else:
            d["RoleArn"] = self.server.role_arn
        self.count("issued_imds" if imds else "issued_container")
        self.send(200, json.dumps(d))

    def container(self):
        if self.headers.get("Authorization") != self.server.container_token:
            self.count("rejected_container")
            return self.send(403, json.dumps({"message": "bad Authorization"}))
        self.creds_json(False)

    def imds_put_token(self):
        ttl = self.headers.get("X-aws-ec2-metadata-token-ttl-seconds", "")
        if not ttl.isdigit() or not 1 <= int(ttl) <= 21600 or self.headers.get("X-Forwarded-For"):
            self.count("rejected_imds_token")
            return self.send(400, "", "text/plain")
        tok = secrets.token_urlsafe(32)
        with self.server.lock:
            self.server.imds_tokens.add(tok)
        self.count("imds_tokens")
        self.send(200, tok, "text/plain", {"X-aws-ec2-metadata-token-ttl-seconds": ttl})

    def imds_get(self, path):
        tok = self.headers.get("X-aws-ec2-metadata-token")
        with self.server.lock:
            known = tok in self.server.imds_tokens
        if not known:
            self.count("rejected_imds_get")
            return self.send(401, "", "text/plain")
        base = "/latest/meta-data/iam/security-credentials/"
        if path == base:
            return self.send(200, ROLE, "text/plain")
        if path == base + ROLE:
            return self.creds_json(True)
        self.send(404, "", "text/plain")

    # ---- dispatch ----------------------------------------------------------
    def do_GET(self):
        path = self.path.partition("?")[0]
        self.count("requests")
        if path == "/_stats":
            with self.server.lock:
                return self.send(200, json.dumps(self.server.stats, sort_keys=True))
        if path.startswith("/container/"):
            return self.container()
        if path.startswith("/latest/meta-data/"):
            return self.imds_get(path)
        self.send(404, "", "text/plain")

    def do_PUT(self):
        self.count("requests")
        body = self.read_body()
        if body is None:
            return self.send(413, "", "text/plain")
        if self.path == "/latest/api/token":
            return self.imds_put_token()
        self.send(404, "", "text/plain")

    def do_POST(self):
        self.count("requests")
        body = self.read_body()
        if body is None:
            return self.send(413, "", "text/plain")
        if self.path == "/" and self.headers.get("Content-Type", "").startswith(
                "application/x-www-form-urlencoded"):
            return self.sts(body)
        self.send(404, "", "text/plain")


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bind", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--master", required=True, help="master secret of the issued credentials")
    ap.add_argument("--ttl", type=int, default=4, help="seconds each issued credential lives")
    ap.add_argument("--role-arn", default="arn:aws:iam::123456789012:role/rf-test-role")
    ap.add_argument("--web-identity-token", default="")
    ap.add_argument("--source-access", default="")
    ap.add_argument("--source-secret", default="")
    ap.add_argument("--container-token", default="")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    srv = Server((a.bind, a.port), Handler)
    srv.master, srv.ttl, srv.role_arn = a.master, a.ttl, a.role_arn
    srv.web_identity_token, srv.source_access, srv.source_secret = a.web_identity_token, a.source_access, a.source_secret
    srv.container_token, srv.verbose = a.container_token, a.verbose
    srv.lock, srv.stats, srv.imds_tokens = threading.Lock(), {}, set()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    if a.port_file:
        with open(a.port_file + ".tmp", "w") as f:
            f.write("%d\n" % srv.server_address[1])
        os.replace(a.port_file + ".tmp", a.port_file)
    try:
        srv.serve_forever(poll_interval=0.2)
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        srv.server_close()


if __name__ == "__main__":
    main()
