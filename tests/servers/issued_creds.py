"""issued_creds.py - temporary test credentials that any stand-in can check
without shared state: creds_server.py issues them, sigv4_server.py
(--issued-master) accepts them until they expire.

An access key "ASIARF" + 10 digits; its secret is derived from a master
secret and the key; the session token carries its expiry (Unix seconds) and
a MAC of key and expiry under the master, so a token that was altered, or
belongs to another key, is invalid, and one past its expiry has expired.
As a program, `issued_creds.py process MASTER TTL [COUNT_FILE]` is a
credential_process: it prints one issued credential as the SDKs' process
JSON (Version 1) and appends a line to COUNT_FILE. Python 3 standard library
only."""

import hashlib
import hmac
import itertools
import threading
import time

_counter = itertools.count(1)
_lock = threading.Lock()


def _mac(master: str, msg: str) -> str:
    return hmac.new(master.encode(), msg.encode(), hashlib.sha256).hexdigest()


def secret_for(master: str, access_key: str) -> str:
    return "rfsec/" + _mac(master, "secret:" + access_key)[:34]


def issue(master: str, ttl_s: int, now=None):
    """-> (access_key, secret, token, expiry_unix_s)"""
    with _lock:
        n = next(_counter)
    ak = "ASIARF%010d" % (int(time.time() * 1000) % 10**7 * 1000 + n % 1000)
    expiry = int(now if now is not None else time.time()) + ttl_s
    token = "rftok%d.%s" % (expiry, _mac(master, "token:%s:%d" % (ak, expiry)))
    return ak, secret_for(master, ak), token, expiry


def check_token(master: str, access_key: str, token: str, now=None) -> str:
    """'ok', 'expired' or 'invalid'."""
    if not token or not token.startswith("rftok") or "." not in token:
        return "invalid"
    exp_s, _, mac = token[5:].partition(".")
    if not exp_s.isdigit() or not hmac.compare_digest(mac, _mac(master, "token:%s:%s" % (access_key, exp_s))):
        return "invalid"
    return "expired" if (now if now is not None else time.time()) >= int(exp_s) else "ok"


def iso(expiry: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(expiry))


def main(argv):
    import json
    import sys
    if len(argv) < 4 or argv[1] != "process":
        sys.stderr.write("usage: issued_creds.py process MASTER TTL [COUNT_FILE]\n")
        return 2
    ak, sk, tok, exp = issue(argv[2], int(argv[3]))
    if len(argv) > 4:
        with open(argv[4], "a") as f:
            f.write("run\n")
    print(json.dumps({"Version": 1, "AccessKeyId": ak, "SecretAccessKey": sk, "SessionToken": tok,
                      "Expiration": iso(exp)}))
    return 0


if __name__ == "__main__":
    import sys
    sys.exit(main(sys.argv))
