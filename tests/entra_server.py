#!/usr/bin/env python3
"""entra_server.py: a stand-in for Microsoft Entra ID's v2.0 token endpoint
and Azure's instance metadata (IMDS) token endpoint, from their published
formats, for tests/cli_azure_entra.sh. python3 stdlib only.

  POST /{tenant}/oauth2/v2.0/token   (workload identity) checks the form:
      grant_type=client_credentials, client_assertion_type jwt-bearer,
      client_id and the tenant in the path as given, client_assertion equal
      to the federated token file's contents (read at each request, as
      Kubernetes rotates it), scope=https://storage.azure.com/.default;
      else HTTP 400 or 401 with an OAuth error word.
  GET /metadata/identity/oauth2/token?api-version=2018-02-01&resource=...
      (managed identity) needs the header `Metadata: true` and resource
      https://storage.azure.com/ ; else HTTP 400.
  GET /msi/token?api-version=2019-08-01&resource=... (App Service managed
      identity, as App Service, Functions and Container Apps serve it at
      IDENTITY_ENDPOINT) needs `X-IDENTITY-HEADER` equal to --identity-header
      (HTTP 401 otherwise), api-version 2019-08-01 and the storage resource
      (HTTP 400 otherwise), client_id (if any) the --client-id; answers
      access_token, expires_on (Unix seconds as a string), resource,
      token_type and client_id, no expires_in.

  GET /ACCOUNT/CONTAINER/BLOB (a blob endpoint, for the redirect check)
      answers 302 to the same path on a second port (--ports-file's second
      number), which logs the Authorization header of every request it gets
      (--log2) and answers 404; the first port counts blob requests that
      carried a bearer token ("blob_bearer").

Tokens are JWTs that Azurite's `--oauth basic` accepts (aud
https://storage.azure.com, an iss of sts.windows.net, nbf, iat, exp; Azurite
checks no signature) living --expires seconds (exp one second later than
expires_in says, so a client that refreshes in time never sends an expired
one). Counts go to --stats-file as one JSON object after every request."""
import argparse, base64, hashlib, hmac, json, os, sys, threading, time, urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
SCOPE = "https://storage.azure.com/.default"
RESOURCE = "https://storage.azure.com/"

args = None
lock = threading.Lock()
stats = {"workload": 0, "imds": 0, "app": 0, "refused": 0, "tokens": 0, "blob_bearer": 0}
other_port = 0
SIGNING_KEY = os.urandom(32)


def count(name):
    with lock:
        stats[name] += 1
        if args.stats_file:
            tmp = args.stats_file + ".tmp"
            with open(tmp, "w") as f:
                json.dump(stats, f)
            os.replace(tmp, args.stats_file)


def b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def mint(tenant):
    now = int(time.time())
    head = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = b64url(json.dumps({
        "aud": "https://storage.azure.com", "iss": f"https://sts.windows.net/{tenant}/",
        "iat": now, "nbf": now - 1, "exp": now + args.expires + 1, "tid": tenant,
        "oid": "00000000-0000-0000-0000-00000000cafe", "n": stats["tokens"]}).encode())
    sig = b64url(hmac.new(SIGNING_KEY, f"{head}.{body}".encode(), hashlib.sha256).digest())
    count("tokens")
    return f"{head}.{body}.{sig}"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):  # the path only: never a form or a token
        sys.stderr.write("%s %s\n" % (self.command, self.path.split("?")[0]))

    def answer(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def refuse(self, code, word, why):
        count("refused")
        sys.stderr.write(f"refused: {word}: {why}\n")
        self.answer(code, {"error": word, "error_description": f"AADSTS00000: {why}"})

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        form = urllib.parse.parse_qs(self.rfile.read(n).decode(), keep_blank_values=True)
        parts = self.path.split("?")[0].strip("/").split("/")
        if len(parts) != 4 or parts[1:] != ["oauth2", "v2.0", "token"]:
            return self.refuse(404, "invalid_request", "no such endpoint")
        if self.headers.get("Content-Type", "") != "application/x-www-form-urlencoded":
            return self.refuse(400, "invalid_request", "not a form")
        one = {k: v[0] for k, v in form.items() if len(v) == 1}
        if len(one) != len(form):
            return self.refuse(400, "invalid_request", "a field given twice")
        if parts[0] != args.tenant:
            return self.refuse(400, "invalid_tenant", "unknown tenant")
        if one.get("grant_type") != "client_credentials":
            return self.refuse(400, "unsupported_grant_type", "not client_credentials")
        if one.get("client_assertion_type") != ASSERTION_TYPE:
            return self.refuse(400, "invalid_request", "bad client_assertion_type")
        if one.get("client_id") != args.client_id:
            return self.refuse(400, "unauthorized_client", "unknown client")
        if one.get("scope") != SCOPE:
            return self.refuse(400, "invalid_scope", "not the storage scope")
        with open(args.federated_token_file) as f:
            want = f.read().strip()
        if not hmac.compare_digest(one.get("client_assertion", "").encode(), want.encode()):
            return self.refuse(401, "invalid_client", "the assertion does not match")
        count("workload")
        self.answer(200, {"token_type": "Bearer", "expires_in": args.expires,
                          "ext_expires_in": args.expires, "access_token": mint(args.tenant)})

    def blob(self):  # elsewhere
        if self.headers.get("Authorization", "").startswith("Bearer ey"):
            count("blob_bearer")
        self.send_response(302)
        self.send_header("Location", f"http://127.0.0.1:{other_port}{self.path}")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_HEAD(self):
        if self.path.startswith("/devstoreaccount1/"):
            return self.blob()
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(u.query)
        if u.path.startswith("/devstoreaccount1/"):
            return self.blob()
        if u.path == "/msi/token":
            return self.app_service(q)
        if u.path != "/metadata/identity/oauth2/token":
            return self.refuse(404, "invalid_request", "no such endpoint")
        if self.headers.get("Metadata") != "true":
            return self.refuse(400, "invalid_request", "Required metadata header not specified")
        if q.get("api-version") != ["2018-02-01"] or q.get("resource") != [RESOURCE]:
            return self.refuse(400, "invalid_request", "bad api-version or resource")
        if args.client_id and q.get("client_id") not in (None, [args.client_id]):
            return self.refuse(400, "invalid_request", "unknown identity")
        count("imds")
        now = int(time.time())
        # IMDS writes its numbers as strings
        self.answer(200, {"access_token": mint(args.tenant), "expires_in": str(args.expires),
                          "expires_on": str(now + args.expires), "not_before": str(now),
                          "resource": RESOURCE, "token_type": "Bearer"})


    def app_service(self, q):
        got = self.headers.get("X-IDENTITY-HEADER", "")
        if not args.identity_header or not hmac.compare_digest(got.encode(),
                                                               args.identity_header.encode()):
            count("refused")
            sys.stderr.write("refused: app service: the identity header does not match\n")
            return self.answer(401, {"statusCode": 401, "message": "Unauthorized request"})
        if q.get("api-version") != ["2019-08-01"] or q.get("resource") != [RESOURCE]:
            return self.refuse(400, "invalid_request", "bad api-version or resource")
        if q.get("client_id") not in (None, [args.client_id]):
            return self.refuse(400, "invalid_request", "unknown identity")
        count("app")
        now = int(time.time())
        self.answer(200, {"access_token": mint(args.tenant), "expires_on": str(now + args.expires),
                          "resource": RESOURCE, "token_type": "Bearer",
                          "client_id": args.client_id})


class Other(BaseHTTPRequestHandler):
    """The other host a blob read is redirected to: logs what it receives."""
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):
        pass

    def do_GET(self):
        with lock, open(args.log2, "a") as f:
            f.write(f"{self.command} {self.path} "
                    f"Authorization={self.headers.get('Authorization', '')}\n")
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_HEAD = do_GET


def main():
    global args, other_port
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--ports-file", required=True)
    p.add_argument("--stats-file")
    p.add_argument("--tenant", required=True)
    p.add_argument("--client-id", required=True)
    p.add_argument("--federated-token-file", required=True)
    p.add_argument("--expires", type=int, default=3600)
    p.add_argument("--log2", default=os.devnull)
    p.add_argument("--identity-header", help="App Service's IDENTITY_HEADER (a secret)")
    args = p.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    other = ThreadingHTTPServer(("127.0.0.1", 0), Other)
    srv.daemon_threads = other.daemon_threads = True
    other_port = other.server_address[1]
    threading.Thread(target=other.serve_forever, daemon=True).start()
    with open(args.ports_file + ".tmp", "w") as f:
        f.write(f"{srv.server_address[1]} {other_port}\n")
    os.replace(args.ports_file + ".tmp", args.ports_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()
