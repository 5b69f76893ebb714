#!/usr/bin/env python3
"""hf_server.py ROOT PORTFILE [--token T] [--page N] [--move-main-to SHA] [--grant-uses N]:
a stand-in for the Hugging Face Hub serving ROOT as model, dataset and space
repositories, on two ports written to PORTFILE ("HUB CDN"), python3 stdlib
only.

ROOT/TYPE/ORG/NAME (TYPE: models, datasets or spaces) is a repository:
refs.json maps branches and tags to commits ({"main": SHA}); SHA/ holds that
commit's files. The Hub port answers, as the Hub's published API does
(huggingface_hub's hf_api.py and file_download.py):
  GET /api/TYPE/ORG/NAME/revision/REV    {"id":..., "sha": SHA}
  GET /api/TYPE/ORG/NAME/tree/REV[/PATH]?recursive=true
      a JSON list of {"type": "file"|"directory", "path", "size", "oid"},
      in reverse name order (the Hub promises no order), at most N entries
      a page, the next page in `Link: <URL>; rel="next"`
  GET|HEAD /ORG/NAME/resolve/REV/PATH (a model: no prefix),
           /datasets/ORG/NAME/resolve/REV/PATH, /spaces/ORG/NAME/resolve/...
      302 to the CDN port (a signed-looking URL), X-Repo-Commit, X-Linked-Etag
With --token every Hub request must carry `Authorization: Bearer T` (401
otherwise, as for a private repository). --move-main-to SHA points a dataset's
"main" at SHA once a revision request for it has been answered: a reader that does
not pin the commit it was given reads another version after that.
Each redirect carries a new grant; with --grant-uses N the CDN refuses a
grant's requests after its first N (403, as an expired signed URL is).
The CDN port serves GET/HEAD with one byte range and appends every request
line and every header it receives to ROOT/cdn.log (the test greps it: the
token must never be there). ROOT/hub.log records the Hub's requests.
"""
import hashlib
import json
import os
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

root, portfile = sys.argv[1], sys.argv[2]
opts = sys.argv[3:]
token = opts[opts.index("--token") + 1] if "--token" in opts else None
page = int(opts[opts.index("--page") + 1]) if "--page" in opts else 1000
move_main = opts[opts.index("--move-main-to") + 1] if "--move-main-to" in opts else None
grant_uses = int(opts[opts.index("--grant-uses") + 1]) if "--grant-uses" in opts else 0
grants = {}  # grant number -> requests it served
lock = threading.Lock()
ports = {}


def log(name, lines):
    with lock, open(os.path.join(root, name), "a", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n\n")


TYPES = ("models", "datasets", "spaces")


def repo_dir(kind, org, name):
    d = os.path.join(root, kind, org, name)
    return d if kind in TYPES and os.path.isdir(d) and "." not in (org, name) else None


def commit_of(repo, rev):
    with open(os.path.join(repo, "refs.json"), encoding="utf-8") as f:
        refs = json.load(f)
    if rev in refs:
        return refs[rev]
    return rev if len(rev) == 40 and os.path.isdir(os.path.join(repo, rev)) else None


etags = {}


def etag_of(full):
    """The file's sha256, as the Hub's X-Linked-Etag of an LFS file (once per file)."""
    with lock:
        if full not in etags:
            with open(full, "rb") as f:
                etags[full] = '"' + hashlib.sha256(f.read()).hexdigest() + '"'
        return etags[full]


def safe_join(base, path):
    full = os.path.realpath(os.path.join(base, path))
    return full if full == base or full.startswith(base + os.sep) else None


class Common(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def answer(self, code, body=b"", ctype="application/json", headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def error(self, code, msg):
        self.answer(code, json.dumps({"error": msg}).encode(), headers=[("X-Error-Message", msg)])


class Hub(Common):
    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        log("hub.log", [self.requestline] + [f"{k}: {v}" for k, v in self.headers.items()])
        if token is not None and self.headers.get("Authorization") != f"Bearer {token}":
            return self.error(401, "Invalid username or password.")
        u = urllib.parse.urlsplit(self.path)
        parts = [urllib.parse.unquote(p) for p in u.path.split("/")]
        q = urllib.parse.parse_qs(u.query)
        if parts[1] == "api" and len(parts) >= 7 and parts[2] in TYPES:
            kind, org, name, what, rev = parts[2], parts[3], parts[4], parts[5], parts[6]
            repo = repo_dir(kind, org, name)
            sha = commit_of(repo, rev) if repo else None
            if not sha:
                return self.error(404, "Repository or revision not found")
            if what == "revision":
                self.answer(200, json.dumps({"id": f"{org}/{name}", "sha": sha}).encode())
                if rev == "main" and move_main and kind == "datasets":
                    refs = os.path.join(repo, "refs.json")
                    with lock, open(refs, encoding="utf-8") as f:
                        r = json.load(f)
                    r["main"] = move_main
                    with lock, open(refs, "w", encoding="utf-8") as f:
                        json.dump(r, f)
                return None
            if what == "tree":
                return self.tree(repo, org, name, rev, sha, "/".join(parts[7:]), q)
        # resolve: a model's URL has no type prefix (REPO_TYPES_URL_PREFIXES)
        kind, rest = (parts[1], parts[2:]) if parts[1] in ("datasets", "spaces") else \
            ("models", parts[1:])
        if parts[1] != "api" and len(rest) >= 5 and rest[2] == "resolve":
            org, name, rev = rest[0], rest[1], rest[3]
            repo = repo_dir(kind, org, name)
            sha = commit_of(repo, rev) if repo else None
            base = os.path.realpath(os.path.join(repo, sha)) if sha else None
            path = "/".join(rest[4:])
            full = safe_join(base, path) if base else None
            if not full or not os.path.isfile(full):
                return self.error(404, "Entry not found")
            with lock:
                grant = len(grants)
                grants[grant] = 0
            loc = (f"http://127.0.0.1:{ports['cdn']}/blobs/{kind}/{sha}/"
                   + urllib.parse.quote(f"{org}/{name}/{path}")
                   + f"?Expires=9999999999&Signature=cdn-grant-{grant}")
            etag = etag_of(full)
            return self.answer(302, headers=[("Location", loc), ("X-Repo-Commit", sha),
                                             ("X-Linked-Etag", etag)])
        return self.error(404, "no such API")

    def tree(self, repo, org, name, rev, sha, path, q):
        base = os.path.realpath(os.path.join(repo, sha))
        start = safe_join(base, path)
        if not start or not os.path.isdir(start):
            return self.error(404, f"{path} is not a folder of {org}/{name}@{rev}")
        entries = []
        for d, dirs, files in os.walk(start):
            dirs.sort()
            for n in dirs:
                entries.append({"type": "directory", "oid": "0" * 40,
                                "path": os.path.relpath(os.path.join(d, n), base), "size": 0})
            for n in sorted(files):
                full = os.path.join(d, n)
                entries.append({"type": "file", "oid": "1" * 40, "size": os.path.getsize(full),
                                "path": os.path.relpath(full, base)})
        # newest-name first: a reader must order the listing itself
        entries.sort(key=lambda e: e["path"], reverse=True)
        cursor = int(q.get("cursor", ["0"])[0])
        chunk = entries[cursor:cursor + page]
        headers = []
        if cursor + page < len(entries):
            nq = urllib.parse.urlencode({"recursive": "true", "expand": "false",
                                         "cursor": str(cursor + page)})
            nxt = (f"http://127.0.0.1:{ports['hub']}"
                   + urllib.parse.urlsplit(self.path).path + "?" + nq)
            headers.append(("Link", f'<{nxt}>; rel="next"'))
        self.answer(200, json.dumps(chunk).encode(), headers=headers)


class Cdn(Common):
    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        log("cdn.log", [self.requestline] + [f"{k}: {v}" for k, v in self.headers.items()])
        u = urllib.parse.urlsplit(self.path)
        parts = u.path.split("/")
        q = urllib.parse.parse_qs(u.query)
        sig = q.get("Signature", [""])[0]
        grant = int(sig[len("cdn-grant-"):]) if sig.startswith("cdn-grant-") else -1
        used = None
        with lock:
            if grant in grants:
                grants[grant] += 1
                used = grants[grant]
        if len(parts) < 7 or parts[1] != "blobs" or used is None:
            return self.error(403, "no grant")
        if grant_uses and used > grant_uses:
            return self.error(403, "Request has expired")
        kind, sha = parts[2], parts[3]
        org, name = urllib.parse.unquote(parts[4]), urllib.parse.unquote(parts[5])
        path = urllib.parse.unquote("/".join(parts[6:]))
        repo = repo_dir(kind, org, name)
        full = safe_join(os.path.realpath(os.path.join(repo, sha)), path) if repo else None
        if not full or not os.path.isfile(full):
            return self.error(404, "no such blob")
        etag, size = etag_of(full), os.path.getsize(full)
        rng = self.headers.get("Range")
        first, last = 0, size - 1
        if rng:
            a, b = rng.removeprefix("bytes=").split("-")
            first, last = int(a), min(int(b), size - 1)
            if first >= size:
                return self.error(416, "range not satisfiable")
        with open(full, "rb") as f:
            f.seek(first)
            data = f.read(last + 1 - first)
        if not rng:
            return self.answer(200, data, "application/octet-stream", [("ETag", etag)])
        self.answer(206, data, "application/octet-stream",
                    [("ETag", etag), ("Content-Range", f"bytes {first}-{last}/{size}")])


def main():
    hub = ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    cdn = ThreadingHTTPServer(("127.0.0.1", 0), Cdn)
    ports["hub"], ports["cdn"] = hub.server_address[1], cdn.server_address[1]
    threading.Thread(target=cdn.serve_forever, daemon=True).start()
    with open(portfile + ".tmp", "w", encoding="utf-8") as f:
        f.write(f"{ports['hub']} {ports['cdn']}\n")
    os.rename(portfile + ".tmp", portfile)
    hub.serve_forever()


if __name__ == "__main__":
    main()
