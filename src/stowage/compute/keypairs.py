"""Key pair records (os-keypairs): each user's named public keys.

A key pair belongs to a user, not a project: the name is unique per user
(`uniq_key_pairs_user_id_name`), so of two creates racing for one name the
database lets exactly one in and the other is Nova's KeyPairExists (409).
Listing pages by name, in Python (as flavors do), so that the order does not
depend on a backend's collation. `count_keypairs` is what the key_pairs quota
counts. Deleting removes the row; a server booted with the key keeps its own
copy (`instances.key_data`).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.compute import tables as t
from stowage.errors import Conflict, Invalid, NotFound
from stowage.timeutil import utcnow

__all__ = ["KeyPair", "create", "get", "list_keypairs", "delete", "count_keypairs",
           "exists_message", "not_found_message"]

_K = t.key_pairs


@dataclass(frozen=True)
class KeyPair:
    name: str
    user_id: str
    fingerprint: str
    public_key: str
    type: str
    id: int | None = None
    created_at: datetime.datetime | None = None
    updated_at: datetime.datetime | None = None


def exists_message(name: str) -> str:
    return f"Key pair '{name}' already exists."


def not_found_message(name: str, user_id: str) -> str:
    return f"Keypair {name} not found for user {user_id}"


def _from_row(row: sa.Row[tuple[object, ...]]) -> KeyPair:
    return KeyPair(name=row.name, user_id=row.user_id, fingerprint=row.fingerprint,
                   public_key=row.public_key, type=row.type, id=row.id,
                   created_at=row.created_at, updated_at=row.updated_at)


def create(conn: Connection, new: KeyPair) -> KeyPair:
    """Insert the key pair; Conflict (KeyPairExists) when the user has one of that name."""
    values = {"name": new.name, "user_id": new.user_id, "fingerprint": new.fingerprint,
              "public_key": new.public_key, "type": new.type, "created_at": utcnow()}
    try:
        with conn.begin_nested():
            conn.execute(_K.insert().values(**values))
    except sa.exc.IntegrityError:
        raise Conflict(exists_message(new.name)) from None
    return get(conn, new.user_id, new.name)


def get(conn: Connection, user_id: str, name: str) -> KeyPair:
    # SELECT * FROM key_pairs WHERE user_id = :user_id AND name = :name
    row = conn.execute(sa.select(_K).where(_K.c.user_id == user_id, _K.c.name == name)).first()
    if row is None:
        raise NotFound(not_found_message(name, user_id))
    return _from_row(row)


def list_keypairs(conn: Connection, user_id: str, limit: int | None = None,
                  marker: str | None = None) -> list[KeyPair]:
    """The user's key pairs by name, after the `marker` name; Invalid for an unknown marker."""
    found = sorted((_from_row(row) for row in
                    conn.execute(sa.select(_K).where(_K.c.user_id == user_id))),
                   key=lambda k: k.name)
    if marker is not None:
        names = [k.name for k in found]
        if marker not in names:
            raise Invalid(f"Marker {marker} could not be found.")
        found = found[names.index(marker) + 1:]
    return found if limit is None else found[:limit]


def delete(conn: Connection, user_id: str, name: str) -> None:
    # DELETE FROM key_pairs WHERE user_id = :user_id AND name = :name
    done = conn.execute(_K.delete().where(_K.c.user_id == user_id, _K.c.name == name))
    if done.rowcount != 1:
        raise NotFound(not_found_message(name, user_id))


def count_keypairs(conn: Connection, user_id: str) -> int:
    """How many key pairs the user has (what Nova's key_pairs quota counts)."""
    # SELECT COUNT(*) FROM key_pairs WHERE user_id = :user_id
    query = sa.select(sa.func.count()).select_from(_K).where(_K.c.user_id == user_id)
    return int(conn.execute(query).scalar() or 0)
