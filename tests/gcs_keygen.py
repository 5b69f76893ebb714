#!/usr/bin/env python3
"""gcs_keygen.py KEY.json PUB.pem EMAIL TOKEN_URI: writes a fresh service
account key file as Google's console does (type service_account, an RSA
2048 private key as PKCS#8 PEM, client_email, private_key_id, token_uri)
and its public half for tests/gcs_server.py. A test helper (cli_gcs.sh)."""
import json, sys

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

out, pub, email, uri = sys.argv[1:5]
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
