"""The master's TLS identity for one run: a fresh key and a self-signed certificate.

Dial-back agents do not check the certificate against an authority: both
sides bind it into their proofs of the run's secret
(:mod:`taskflow.wire.dialback`), which is what authenticates the master. The
key lives in memory and, for the moment ``ssl`` loads it, in a user-only
temporary directory that is removed at once.
"""
from __future__ import annotations

import datetime
import os
import shutil
import ssl
import tempfile

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def server_context() -> tuple[ssl.SSLContext, bytes]:
    """A TLS 1.3 server context with a new identity, and its certificate (DER)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "taskflow master")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=30))
            .sign(key, hashes.SHA256()))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.num_tickets = 0          # no post-handshake messages on the non-blocking streams
    tmp = tempfile.mkdtemp(prefix="taskflow-tls-")     # 0700
    try:
        cert_path, key_path = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
        with open(cert_path, "wb") as f:
            f.write(cert.public_bytes(serialization.Encoding.PEM))
        fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key.private_bytes(serialization.Encoding.PEM,
                                      serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
        ctx.load_cert_chain(cert_path, key_path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return ctx, cert.public_bytes(serialization.Encoding.DER)
