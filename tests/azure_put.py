#!/usr/bin/env python3
"""azure_put.py ENDPOINT ACCOUNT KEY CONTAINER [NAME FILE]...: creates the
container (if new) and uploads each FILE as blob NAME, signed with Shared Key
(Microsoft's spec: canonicalized headers and resource), python3 stdlib only.
azure_put.py --sas ACCOUNT KEY prints an account SAS (read, list).
A test helper for tests/cli_azure.sh against Azurite."""
import base64, hashlib, hmac, sys, urllib.parse, urllib.request
from email.utils import formatdate

VERSION = "2021-08-06"


def request(endpoint, account, key, method, path, query, headers, body=b""):
    url = endpoint + urllib.parse.quote(path, safe="/")
    if query:
        url += "?" + "&".join(f"{k}={urllib.parse.quote(v, safe='')}" for k, v in query.items())
    headers = dict(headers)
    headers.setdefault("Content-Type", "application/octet-stream")  # else urllib adds its own
    headers["x-ms-date"] = formatdate(usegmt=True)
    headers["x-ms-version"] = VERSION
    canon_h = "".join(f"{k}:{headers[k]}\n" for k in sorted(headers) if k.startswith("x-ms-"))
    res_path = urllib.parse.urlsplit(url).path
    canon_r = f"/{account}{res_path}" + "".join(
        f"\n{k.lower()}:{query[k]}" for k in sorted(query, key=str.lower))
    length = str(len(body)) if body else ""
    sts = "\n".join([method, "", "", length, "", headers.get("Content-Type", ""), "", "", "",
                     "", "", ""]) + "\n" + canon_h + canon_r
    sig = base64.b64encode(hmac.new(base64.b64decode(key), sts.encode(), hashlib.sha256).digest())
    headers["Authorization"] = f"SharedKey {account}:{sig.decode()}"
    req = urllib.request.Request(url, data=body if method == "PUT" else None, method=method,
                                 headers=headers)
    try:
        with urllib.request.urlopen(req) as r:
            return r.status
    except urllib.error.HTTPError as e:
        if e.code == 409:  # the container exists
            return e.code
        sys.exit(f"azure_put: {method} {path}: HTTP {e.code} {e.read()[:300]!r}")


def account_sas(account, key):
    """An account SAS (read, list; blob service; container and object; an hour)."""
    import datetime
    exp = (datetime.datetime.utcnow() + datetime.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    f = {"sv": VERSION, "ss": "b", "srt": "co", "sp": "rl", "se": exp, "spr": "http,https"}
    sts = "\n".join([account, f["sp"], f["ss"], f["srt"], "", f["se"], "", f["spr"], f["sv"], "", ""])
    sig = base64.b64encode(hmac.new(base64.b64decode(key), sts.encode(), hashlib.sha256).digest())
    f["sig"] = sig.decode()
    return "&".join(f"{k}={urllib.parse.quote(v, safe='')}" for k, v in f.items())


def main():
    if sys.argv[1] == "--sas":
        print(account_sas(sys.argv[2], sys.argv[3]))
        return
    endpoint, account, key, container = sys.argv[1:5]
    request(endpoint, account, key, "PUT", f"/{container}", {"restype": "container"}, {})
    args = sys.argv[5:]
    for name, path in zip(args[0::2], args[1::2]):
        with open(path, "rb") as f:
            data = f.read()
        request(endpoint, account, key, "PUT", f"/{container}/{name}", {},
                {"x-ms-blob-type": "BlockBlob", "Content-Type": "application/octet-stream"},
                data)


main()
