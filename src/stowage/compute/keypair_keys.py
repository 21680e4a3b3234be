"""Key material for os-keypairs: Nova's fingerprints, and the key pairs Nova generates.

Two kinds of key pair, as Nova has them (`type`, from 2.2):

    ssh    an OpenSSH public key ("ssh-rsa AAAA... comment"); its fingerprint is
           the MD5 of the base64-decoded key blob, as colon-separated hex
    x509   a PEM certificate; its fingerprint is the SHA-1 of the certificate,
           colon-separated hex

A public key that does not parse is Nova's InvalidKeypair, a 400 whose
message says which fingerprint failed. Generation (before 2.92) makes an
RSA-2048 key: for ssh the private key is returned in PEM and the public key
is its OpenSSH form tagged "Generated-by-Nova"; for x509 the public key is a
self-signed certificate whose subject is the user.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

__all__ = ["SSH", "X509", "TYPES", "InvalidKeypair", "Generated", "fingerprint", "generate"]

SSH = "ssh"
X509 = "x509"
TYPES = (SSH, X509)
_BITS = 2048
# How long a generated x509 certificate is valid (Nova: ten years).
_CERT_DAYS = 3650


class InvalidKeypair(ValueError):
    """Nova's InvalidKeypair: the message is the whole 400 answer."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"Keypair data is invalid: {reason}")


@dataclass(frozen=True)
class Generated:
    private_key: str
    public_key: str
    fingerprint: str


def _colons(digest: str) -> str:
    return ":".join(digest[i:i + 2] for i in range(0, len(digest), 2))


def _ssh_fingerprint(public_key: str) -> str:
    try:
        serialization.load_ssh_public_key(public_key.encode("utf-8"))
        blob = base64.b64decode(public_key.split(" ")[1])
    except Exception:  # noqa: BLE001 - as Nova: whatever the parser refuses is invalid
        raise InvalidKeypair("failed to generate fingerprint") from None
    return _colons(hashlib.md5(blob, usedforsecurity=False).hexdigest())


def _x509_fingerprint(pem: str) -> str:
    try:
        cert = x509.load_pem_x509_certificate(pem.encode("utf-8"))
        digest = cert.fingerprint(hashes.SHA1())  # noqa: S303 - Nova's fingerprint
    except Exception as exc:  # noqa: BLE001 - the parser's reason is the message
        raise InvalidKeypair("failed to generate X509 fingerprint. Error message: "
                             f"{exc}") from None
    return _colons(digest.hex())


def fingerprint(public_key: str, key_type: str = SSH) -> str:
    """The fingerprint Nova shows for an imported key; InvalidKeypair if it does not parse."""
    return _x509_fingerprint(public_key) if key_type == X509 else _ssh_fingerprint(public_key)


def _private_pem(key: rsa.RSAPrivateKey) -> str:
    return key.private_bytes(serialization.Encoding.PEM,
                             serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption()).decode("ascii")


def _certificate(key: rsa.RSAPrivateKey, user_id: str) -> str:
    """A self-signed certificate for `user_id`, as Nova's x509 key pairs carry."""
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, user_id[:64] or "nova")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=_CERT_DAYS))
            .sign(key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM).decode("ascii")


def generate(user_id: str, key_type: str = SSH) -> Generated:
    """A new key pair of `key_type`: its private key (returned once), public key, fingerprint."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=_BITS)
    if key_type == X509:
        public = _certificate(key, user_id)
    else:
        openssh = key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                                serialization.PublicFormat.OpenSSH)
        public = openssh.decode("ascii") + " Generated-by-Nova"
    return Generated(_private_pem(key), public, fingerprint(public, key_type))
