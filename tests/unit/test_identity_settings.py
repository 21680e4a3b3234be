"""The `[identity]` settings, the directory built from them, and password hashes."""

from __future__ import annotations

from pathlib import Path

import pytest

from stowage import config
from stowage.identity.directory import Directory, expand
from stowage.identity.passwords import hash_password, is_password_hash, verify_password

TOML = """
[api]
auth_strategy = "builtin-identity"

[identity]
token_lifetime = 600
public_url = "https://cloud.example"

[[identity.projects]]
name = "alpha"
description = "Team alpha"

[[identity.users]]
name = "alice"
password = "s3cret"
email = "alice@example.org"
default_project = "alpha"

[[identity.users]]
name = "bob"
password_hash = "{bob_hash}"

[[identity.assignments]]
user = "alice"
project = "alpha"
role = "member"

[[identity.assignments]]
user = "bob"
domain = "default"
role = "reader"
"""


def _load(tmp_path: Path, text: str) -> config.Settings:
    path = tmp_path / "stowage.toml"
    path.write_text(text)
    return config.load(str(path))


def test_directory_from_a_settings_file(tmp_path: Path) -> None:
    bob_hash = hash_password("b0b")
    settings = _load(tmp_path, TOML.format(bob_hash=bob_hash))
    assert settings.api.auth_strategy == "builtin-identity"
    identity = settings.identity
    assert identity.token_lifetime == 600 and identity.public_url == "https://cloud.example"
    alice, bob = identity.users
    # The plain password is hashed as the file is read and not kept anywhere.
    assert "s3cret" not in repr(settings)
    assert verify_password("s3cret", alice.password_hash)
    assert bob.password_hash == bob_hash
    directory = Directory.from_settings(identity)
    user = directory.user(name="alice", domain_id="default")
    project = directory.project(name="alpha")
    assert user is not None and project is not None
    assert user.default_project_id == project.id and user.email == "alice@example.org"
    assert [r.name for r in directory.roles_on(user.id, project_id=project.id)] == [
        "member", "reader"]
    bob_user = directory.user(name="bob")
    assert bob_user is not None
    assert [r.name for r in directory.roles_on(bob_user.id, domain_id="default")] == ["reader"]
    # Ids come from names: the same file gives the same ids in every worker.
    again = Directory.from_settings(_load(tmp_path, TOML.format(bob_hash=bob_hash)).identity)
    assert (again.user(name="alice") or user).id == user.id
    assert again.projects == directory.projects and again.roles == directory.roles


def test_default_directory_when_no_users_are_configured() -> None:
    directory = Directory.from_settings(config.IdentitySettings())
    admin, demo = directory.user(name="admin"), directory.user(name="demo")
    assert admin is not None and demo is not None
    assert verify_password("admin", admin.password_hash)
    project = directory.project(name="admin")
    assert project is not None
    assert [r.name for r in directory.roles_on(admin.id, project_id=project.id)] == [
        "admin", "manager", "member", "reader"]


def test_implied_roles_follow_keystone() -> None:
    assert expand(["admin"]) == ("admin", "manager", "member", "reader")
    assert expand(["manager"]) == ("manager", "member", "reader")
    assert expand(["reader"]) == ("reader",)
    # Roles made through the API imply nothing and follow the bootstrap roles.
    assert expand(["zeta", "member", "alpha"]) == ("member", "reader", "alpha", "zeta")


@pytest.mark.parametrize(("snippet", "error"), [
    ("[identity]\ntoken_lifetime = 5\n", "token_lifetime"),
    ("[identity]\npublic_url = \"ftp://x\"\n", "public_url"),
    ("[identity]\nbogus = 1\n", "unknown setting"),
    ("[[identity.users]]\nname = \"a\"\n", "needs a password"),
    ("[[identity.users]]\nname = \"a\"\npassword_hash = \"plain\"\n", "needs a password"),
    ("[[identity.users]]\nname = \"a\"\npassword = \"x\"\npassword_hash = \"y\"\n", "not both"),
    ("[[identity.users]]\nname = \"a\"\npassword = \"\"\n", "non-empty"),
    ("[identity]\nusers = 3\n", "list of tables"),
])
def test_bad_identity_settings_are_refused(tmp_path: Path, snippet: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        _load(tmp_path, snippet)


@pytest.mark.parametrize(("extra", "error"), [
    ('[[identity.assignments]]\nuser = "zed"\nproject = "p"\nrole = "member"\n', "no known user"),
    ('[[identity.assignments]]\nuser = "u"\nproject = "q"\nrole = "member"\n', "no known project"),
    ('[[identity.assignments]]\nuser = "u"\nproject = "p"\nrole = "boss"\n', "is not one of"),
    ('[[identity.assignments]]\nuser = "u"\nrole = "member"\n', "needs a project or a domain"),
    ('[[identity.assignments]]\nuser = "u"\ndomain = "other"\nrole = "member"\n', "'default'"),
    ('[[identity.users]]\nname = "u"\npassword = "x"\n', "two users have the name 'u'"),
])
def test_directory_references_are_checked(tmp_path: Path, extra: str, error: str) -> None:
    base = ('[[identity.projects]]\nname = "p"\n'
            '[[identity.users]]\nname = "u"\npassword = "x"\n')
    settings = _load(tmp_path, base + extra)
    with pytest.raises(ValueError, match=error):
        Directory.from_settings(settings.identity)


def test_password_hashes_are_salted_and_checked_in_full() -> None:
    first, second = hash_password("pw"), hash_password("pw")
    assert first != second and first.startswith("scrypt$16384$8$1$")
    assert verify_password("pw", first) and verify_password("pw", second)
    assert not verify_password("pW", first)
    assert not verify_password("pw", first[:-2] + ("00" if first[-2:] != "00" else "11"))
    for broken in ("", "scrypt$", "md5$1$2$3$aa$bb", first.replace("$16384$", "$3$"),
                   first.replace("$16384$", "$2097152$"), first[:-1] + "z"):
        assert not is_password_hash(broken) and not verify_password("pw", broken)
