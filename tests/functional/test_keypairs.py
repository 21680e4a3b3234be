"""os-keypairs over HTTP: generate, import, list, show, delete, per user and per microversion.

A key pair is its user's: another user neither sees nor deletes it, an admin
may act for anybody from 2.10 (`user_id`). The fingerprints are Nova's (MD5
of the ssh key blob, SHA-1 of an x509 certificate), checked here against
values computed independently of the service.
"""

from __future__ import annotations

import base64
import concurrent.futures
import datetime
import hashlib

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ed25519
from cryptography.x509.oid import NameOID

from stowage.compute import keypairs
from tests.functional.conftest import Cloud
from tests.functional.serverdata import at, member


def _ssh_key() -> tuple[str, str]:
    """A fresh ed25519 public key in OpenSSH form and its MD5 fingerprint."""
    public = ed25519.Ed25519PrivateKey.generate().public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()
    digest = hashlib.md5(base64.b64decode(public.split()[1])).hexdigest()
    return public + " me@host", ":".join(digest[i:i + 2] for i in range(0, 32, 2))


def _certificate() -> tuple[str, str]:
    key = ed25519.Ed25519PrivateKey.generate()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "demo")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(1).not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=1)).sign(key, None))
    digest = cert.fingerprint(hashes.SHA1()).hex()
    return (cert.public_bytes(serialization.Encoding.PEM).decode(),
            ":".join(digest[i:i + 2] for i in range(0, 40, 2)))


def test_generate_list_show_delete(cloud: Cloud) -> None:
    with member(cloud, version="2.91") as alice:
        made = alice.post("/os-keypairs", json={"keypair": {"name": "k1"}})
        assert made.status_code == 201, made.text
        key = made.json()["keypair"]
        assert key["private_key"].startswith("-----BEGIN RSA PRIVATE KEY-----")
        assert key["public_key"].startswith("ssh-rsa ")
        assert (key["type"], key["user_id"], len(key["fingerprint"].split(":"))) == \
            ("ssh", "demo", 16)
        listed = alice.get("/os-keypairs").json()
        assert listed == {"keypairs": [{"keypair": {
            "name": "k1", "public_key": key["public_key"], "fingerprint": key["fingerprint"],
            "type": "ssh"}}]}
        shown = alice.get("/os-keypairs/k1").json()["keypair"]
        assert "private_key" not in shown
        assert (shown["deleted"], shown["deleted_at"], shown["updated_at"]) == \
            (False, None, None)
        assert isinstance(shown["id"], int) and shown["created_at"]
        assert alice.delete("/os-keypairs/k1").status_code == 204
        gone = alice.get("/os-keypairs/k1")
        assert (gone.status_code, gone.json()["itemNotFound"]["message"]) == \
            (404, "Keypair k1 not found for user demo")
        assert alice.delete("/os-keypairs/k1").status_code == 404
    x509_made = cloud.compute.post("/os-keypairs", json={"keypair": {
        "name": "cert", "type": "x509"}}, headers=at("2.91")).json()["keypair"]
    assert x509_made["public_key"].startswith("-----BEGIN CERTIFICATE-----")
    assert len(x509_made["fingerprint"].split(":")) == 20


def test_import_checks_the_key_and_the_name(cloud: Cloud) -> None:
    public, fingerprint = _ssh_key()
    pem, cert_fingerprint = _certificate()
    with member(cloud) as alice:
        made = alice.post("/os-keypairs", json={"keypair": {"name": "mine@laptop.1",
                                                             "public_key": public}})
        assert made.status_code == 201, made.text
        assert made.json()["keypair"] == {"name": "mine@laptop.1", "public_key": public,
                                          "fingerprint": fingerprint, "type": "ssh",
                                          "user_id": "demo"}
        cert = alice.post("/os-keypairs", json={"keypair": {
            "name": "cert", "type": "x509", "public_key": pem}}).json()["keypair"]
        assert cert["fingerprint"] == cert_fingerprint
        again = alice.post("/os-keypairs", json={"keypair": {"name": "mine@laptop.1",
                                                              "public_key": public}})
        assert (again.status_code, again.json()["conflictingRequest"]["message"]) == \
            (409, "Key pair 'mine@laptop.1' already exists.")
        for body, message in (
                ({"name": "bad", "public_key": "ssh-rsa AAAA"},
                 "Keypair data is invalid: failed to generate fingerprint"),
                ({"name": "bad", "type": "x509", "public_key": public},
                 "Keypair data is invalid: failed to generate X509 fingerprint"),
                ({"name": "no/slash", "public_key": public}, "does not match"),
                ({"name": " lead", "public_key": public}, "Can not start or end with whitespace"),
                ({"name": "bad"}, "'public_key' is a required property")):
            refused = alice.post("/os-keypairs", json={"keypair": body})
            assert refused.status_code == 400, body
            assert message in refused.json()["badRequest"]["message"]
    old = cloud.client("demo:p1", version="2.91", roles=("member", "reader"))
    with old:
        refused = old.post("/os-keypairs", json={"keypair": {"name": "a@b", "public_key": public}})
        assert refused.status_code == 400
    with cloud.live.db.read() as conn:
        assert keypairs.count_keypairs(conn, "demo") == 2


def test_version_2_1_answers_200_and_202_without_type(cloud: Cloud) -> None:
    public, _ = _ssh_key()
    made = cloud.compute.post("/os-keypairs", json={"keypair": {"name": "k", "public_key": public}},
                              headers=at("2.1"))
    assert made.status_code == 200 and "type" not in made.json()["keypair"]
    typed = cloud.compute.post("/os-keypairs", json={"keypair": {
        "name": "k2", "public_key": public, "type": "ssh"}}, headers=at("2.1"))
    assert typed.status_code == 400
    assert "type" not in cloud.compute.get("/os-keypairs/k", headers=at("2.1")).json()["keypair"]
    assert cloud.compute.delete("/os-keypairs/k", headers=at("2.1")).status_code == 202


def test_users_see_their_own_and_admins_act_for_anyone(cloud: Cloud) -> None:
    public, _ = _ssh_key()
    with member(cloud) as alice, member(cloud, "bob:p1") as bob:
        assert alice.post("/os-keypairs", json={"keypair": {
            "name": "shared-name", "public_key": public}}).status_code == 201
        # Names are unique per user only.
        assert bob.post("/os-keypairs", json={"keypair": {
            "name": "shared-name", "public_key": public}}).status_code == 201
        assert bob.delete("/os-keypairs/shared-name").status_code == 204
        assert bob.get("/os-keypairs/shared-name").status_code == 404
        assert bob.get("/os-keypairs", params={"user_id": "demo"}).status_code == 403
        assert bob.post("/os-keypairs", json={"keypair": {
            "name": "for-alice", "public_key": public, "user_id": "demo"}}).status_code == 403
    admin = cloud.compute
    assert admin.get("/os-keypairs/shared-name", params={"user_id": "demo"}).status_code == 200
    made = admin.post("/os-keypairs", json={"keypair": {
        "name": "given", "public_key": public, "user_id": "bob"}})
    assert made.status_code == 201 and made.json()["keypair"]["user_id"] == "bob"
    names = [k["keypair"]["name"] for k in
             admin.get("/os-keypairs", params={"user_id": "bob"}).json()["keypairs"]]
    assert names == ["given"]
    # Before 2.10 the user_id parameter is not one: the admin's own (none) are listed.
    assert admin.get("/os-keypairs", params={"user_id": "bob"},
                     headers=at("2.9")).json() == {"keypairs": []}
    assert admin.delete("/os-keypairs/given", params={"user_id": "bob"}).status_code == 204
    strict = admin.get("/os-keypairs", params={"foo": "1"})
    assert strict.status_code == 400  # 2.75: unknown query parameters


def test_paging_by_name_from_2_35(cloud: Cloud) -> None:
    public, _ = _ssh_key()
    for name in ("c", "a", "b"):
        assert cloud.compute.post("/os-keypairs", json={"keypair": {
            "name": name, "public_key": public}}).status_code == 201
    page = cloud.compute.get("/os-keypairs", params={"limit": "2"}).json()
    assert [k["keypair"]["name"] for k in page["keypairs"]] == ["a", "b"]
    assert "marker=b" in page["keypairs_links"][0]["href"]
    rest = cloud.compute.get("/os-keypairs", params={"limit": "2", "marker": "b"}).json()
    assert [k["keypair"]["name"] for k in rest["keypairs"]] == ["c"]
    assert "keypairs_links" not in rest
    unknown = cloud.compute.get("/os-keypairs", params={"marker": "zzz"})
    assert (unknown.status_code, unknown.json()["badRequest"]["message"]) == \
        (400, "Marker zzz could not be found.")
    assert cloud.compute.get("/os-keypairs", params={"limit": "-1"}).status_code == 400
    old = cloud.compute.get("/os-keypairs", params={"limit": "1"}, headers=at("2.34")).json()
    assert len(old["keypairs"]) == 3  # no paging before 2.35


def test_racing_creates_of_one_name_let_one_in(cloud: Cloud) -> None:
    public, _ = _ssh_key()

    def create(_: int) -> int:
        with cloud.client("admin") as client:
            return client.post("/os-keypairs", json={"keypair": {
                "name": "race", "public_key": public}}).status_code

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        statuses = sorted(pool.map(create, range(4)))
    assert statuses == [201, 409, 409, 409]
    with cloud.live.db.read() as conn:
        assert keypairs.count_keypairs(conn, "admin") == 1
