"""Issued tokens: create, look up, revoke, and prune the expired ones.

A token's text is `secrets.token_urlsafe(32)`; only its SHA-256 is stored, so
a database dump hands out no usable token. A token grants what it granted
when issued (Keystone's tokens carry their roles too): the user, the scope
(a project, the domain, or nothing), and the effective role names. Expired
tokens are refused as if they never existed, and deleted whenever a new
token is issued (one `DELETE ... WHERE expires_at <= now`, indexed).
"""

from __future__ import annotations

import datetime
import hashlib
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from stowage.db import Database
from stowage.identity.tables import identity_tokens as t

__all__ = ["Grant", "Token", "issue", "lookup", "revoke", "revoke_matching",
           "revoke_carrying", "prune",
           "utcnow"]


def utcnow() -> datetime.datetime:
    """Naive UTC, as every stowage timestamp column stores it (to the second: MySQL)."""
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None, microsecond=0)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Grant:
    """What a new token will grant; `parent` is the token it was exchanged for, if any."""

    user_id: str
    roles: tuple[str, ...]
    methods: tuple[str, ...]
    project_id: str | None = None
    domain_id: str | None = None
    expires_at: datetime.datetime | None = None
    parent_audit_id: str | None = None


@dataclass(frozen=True)
class Token:
    user_id: str
    project_id: str | None
    domain_id: str | None
    roles: tuple[str, ...]
    methods: tuple[str, ...]
    audit_ids: tuple[str, ...]
    issued_at: datetime.datetime
    expires_at: datetime.datetime

    @property
    def scoped(self) -> bool:
        return self.project_id is not None or self.domain_id is not None


def _split(text: str | None) -> tuple[str, ...]:
    return tuple(p for p in (text or "").split(",") if p)


def _token(row: Mapping[str, Any] | sa.RowMapping) -> Token:
    audit = (row["audit_id"],) + ((row["parent_audit_id"],) if row["parent_audit_id"] else ())
    return Token(row["user_id"], row["project_id"], row["domain_id"], _split(row["roles"]),
                 _split(row["methods"]), audit, row["issued_at"], row["expires_at"])


def issue(db: Database, grant: Grant, lifetime: int) -> tuple[str, Token]:
    """A new token's text and what it grants; expired tokens are pruned on the way."""
    now = utcnow()
    expires = grant.expires_at or now + datetime.timedelta(seconds=lifetime)
    text = secrets.token_urlsafe(32)
    row = {"token_hash": _digest(text), "user_id": grant.user_id,
           "project_id": grant.project_id, "domain_id": grant.domain_id,
           "roles": ",".join(grant.roles), "methods": ",".join(grant.methods),
           "audit_id": secrets.token_urlsafe(16), "parent_audit_id": grant.parent_audit_id,
           "issued_at": now, "expires_at": expires}
    with db.write() as conn:
        prune(conn, now)
        conn.execute(t.insert().values(**row))
    return text, _token(row)


def lookup(db: Database, text: str) -> Token | None:
    """The live token `text` names; None when unknown, revoked or expired."""
    if not text or len(text) > 1024:
        return None
    # SELECT * FROM identity_tokens WHERE token_hash = :digest AND expires_at > :now
    query = sa.select(t).where(t.c.token_hash == _digest(text), t.c.expires_at > utcnow())
    with db.read() as conn:
        row = conn.execute(query).mappings().first()
    return None if row is None else _token(row)


def revoke(db: Database, text: str) -> bool:
    """Delete the token; False when there was no live one to delete."""
    with db.write() as conn:
        deleted = conn.execute(t.delete().where(t.c.token_hash == _digest(text),
                                                t.c.expires_at > utcnow())).rowcount
    return bool(deleted)


def revoke_matching(conn: sa.Connection, user_id: str | None = None,
                    project_id: str | None = None, domain_id: str | None = None) -> int:
    """Delete every token of the user and/or scoped to the project or domain named.

    The directory write that makes them wrong (a user or project deleted or
    disabled, a password changed, a grant removed) runs in the same transaction.
    """
    clauses = [column == value for column, value in ((t.c.user_id, user_id),
               (t.c.project_id, project_id), (t.c.domain_id, domain_id)) if value is not None]
    if not clauses:
        return 0
    # DELETE FROM identity_tokens WHERE user_id = :u [AND project_id = :p] [AND domain_id = :d]
    return int(conn.execute(t.delete().where(*clauses)).rowcount)


def revoke_carrying(conn: sa.Connection, user_ids: Sequence[str], role: str) -> int:
    """Delete the tokens of these users that carry the role (it is being deleted)."""
    if not user_ids:
        return 0
    # SELECT token_hash, roles FROM identity_tokens WHERE user_id IN (:user_ids)
    rows = conn.execute(sa.select(t.c.token_hash, t.c.roles)
                        .where(t.c.user_id.in_(user_ids))).all()
    doomed = [r.token_hash for r in rows if role in _split(r.roles)]
    if doomed:
        conn.execute(t.delete().where(t.c.token_hash.in_(doomed)))
    return len(doomed)


def prune(conn: sa.Connection, now: datetime.datetime) -> int:
    """Delete every expired token; how many went."""
    return int(conn.execute(t.delete().where(t.c.expires_at <= now)).rowcount)
