#!/usr/bin/env python3
"""gcs_keygen.py EMAIL TOKEN_URI KEY.json PUB.pem [KEY.json PUB.pem]...: writes
fresh service account key files as Google's console does (type
service_account, an RSA 2048 private key as PKCS#8 PEM, client_email,
private_key_id, token_uri) and their public halves for tests/gcs_server.py.
Exits 77 when python3-cryptography is missing. A test helper (cli_gcs.sh)."""
import json, sys

try:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
except ImportError:
    print("python3-cryptography is not installed")
    sys.exit(77)

email, uri, files = sys.argv[1], sys.argv[2], sys.argv[3:]
for out, pub in zip(files[0::2], files[1::2]):
    k = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                          serialization.NoEncryption()).decode()
    with open(out, "w") as f:
        json.dump({"type": "service_account", "project_id": "test", "private_key_id": "k1",
                   "private_key": pem, "client_email": email, "client_id": "1",
                   "token_uri": uri}, f)
    with open(pub, "wb") as f:
        f.write(k.public_key().public_bytes(serialization.Encoding.PEM,
                                            serialization.PublicFormat.SubjectPublicKeyInfo))
