"""Keystone over TLS: `cafile`, `certfile`/`keyfile` and `insecure`, as keystonemiddleware
reads them.

A DevStack or kolla cloud with TLS serves Keystone with a certificate of a
private CA and writes `cafile = <that CA>` into `[keystone_authtoken]`.
The identity double of test_keystone_validation.py is served here over
HTTPS with a certificate this test issues for 127.0.0.1 from a CA of its
own: with the CA the token is validated, without it (the system's bundle)
Keystone cannot be trusted and the request is a 503, and `insecure`
skips the check.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from stowage.web.errors import HTTPError
from tests.unit.test_keystone_validation import FakeIdentity, _Handler, guard_for, request


class TlsIdentity(FakeIdentity):
    @property
    def base(self) -> str:
        return f"https://127.0.0.1:{self.server_address[1]}"


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _issue(tmp: Path) -> tuple[Path, Path, Path]:
    """(CA certificate, server certificate, server key) files for 127.0.0.1."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(_name("test CA")).issuer_name(_name("test CA"))
          .public_key(ca_key.public_key()).serial_number(1)
          .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    cert = (x509.CertificateBuilder().subject_name(_name("127.0.0.1")).issuer_name(ca.subject)
            .public_key(key.public_key()).serial_number(2)
            .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    files = tmp / "ca.pem", tmp / "keystone.pem", tmp / "keystone.key"
    files[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    files[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    files[2].write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return files


@pytest.fixture
def tls(tmp_path: Path) -> Iterator[tuple[TlsIdentity, Path]]:
    ca, cert, key = _issue(tmp_path)
    server = TlsIdentity(("127.0.0.1", 0), _Handler)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield server, ca
    server.shutdown()
    server.server_close()


def _context(identity: FakeIdentity, **changes: Any) -> Any:
    return guard_for(identity, **changes)(request(x_auth_token="user-token"))


def test_keystone_behind_a_private_ca_is_trusted_with_cafile(
        tls: tuple[TlsIdentity, Path]) -> None:
    identity, ca = tls
    ctx = _context(identity, cafile=str(ca))
    assert ctx is not None and ctx.user_id == "u1"


def test_without_the_ca_keystone_is_not_trusted_a_503(tls: tuple[TlsIdentity, Path]) -> None:
    identity, _ = tls
    with pytest.raises(HTTPError) as refused:
        _context(identity)
    assert refused.value.status == 503
    assert identity.validations == 0  # not even the service's login went through


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_insecure_skips_the_check(tls: tuple[TlsIdentity, Path]) -> None:
    identity, _ = tls
    ctx = _context(identity, insecure=True)
    assert ctx is not None and ctx.roles == ("member", "reader")
