"""A self-signed certificate for the test servers' TLS (openssl req), made once per folder.

    cert, key = self_signed(folder)        # folder/server.crt, folder/server.key (mode 0600)
"""
import os
import subprocess


def self_signed(folder, owner=None):
    """Writes a self-signed RSA certificate for 127.0.0.1 and its key into folder; returns their paths. The
    key is mode 0600 (PostgreSQL refuses a key others can read), owned by owner (uid, gid) when given."""
    cert, key = os.path.join(folder, "server.crt"), os.path.join(folder, "server.key")
    if not os.path.exists(cert):
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                        "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                       check=True, capture_output=True, timeout=60)
        os.chmod(key, 0o600)
        os.chmod(cert, 0o644)
        if owner is not None:
            for f in (cert, key):
                os.chown(f, *owner)
    return cert, key
