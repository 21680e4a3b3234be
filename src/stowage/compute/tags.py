"""Server tag records (2.26): Nova's `tags` table, one row per (server uuid, tag).

A server holds at most `MAX_TAGS` tags. Writes that change a server's tags
run with the instance row locked (`lock_instance`, the same lock the
metadata writes take), so two requests adding tags at once cannot together
pass the limit. The list filters of GET /servers (`tags`, `tags-any`,
`not-tags`, `not-tags-any`) become the SQL clauses of `filter_clauses`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.compute import tables as t

__all__ = ["MAX_TAGS", "MAX_TAG_LENGTH", "tags_of", "of_instances", "add", "replace",
           "remove", "remove_all", "filter_clauses"]

_T = t.tags
# Nova's objects.instance.MAX_TAG_COUNT and tag.MAX_TAG_LENGTH.
MAX_TAGS = 50
MAX_TAG_LENGTH = 60


def tags_of(conn: Connection, instance_uuid: str) -> list[str]:
    return of_instances(conn, [instance_uuid]).get(instance_uuid, [])


def of_instances(conn: Connection, uuids: Sequence[str]) -> dict[str, list[str]]:
    """server uuid -> its tags, sorted (one query for a whole listing)."""
    if not uuids:
        return {}
    # SELECT resource_id, tag FROM tags WHERE resource_id IN (:uuids)
    rows = conn.execute(sa.select(_T.c.resource_id, _T.c.tag)
                        .where(_T.c.resource_id.in_(list(uuids)))).all()
    found: dict[str, list[str]] = {}
    for resource_id, tag in rows:
        found.setdefault(str(resource_id), []).append(str(tag))
    return {uuid: sorted(tags) for uuid, tags in found.items()}


def add(conn: Connection, instance_uuid: str, tag: str) -> None:
    conn.execute(_T.insert().values(resource_id=instance_uuid, tag=tag))


def replace(conn: Connection, instance_uuid: str, tags: Iterable[str]) -> list[str]:
    """Make `tags` the server's tags (duplicates once); returns them sorted."""
    wanted = sorted(set(tags))
    remove_all(conn, instance_uuid)
    if wanted:
        conn.execute(_T.insert(), [{"resource_id": instance_uuid, "tag": tag}
                                   for tag in wanted])
    return wanted


def remove(conn: Connection, instance_uuid: str, tag: str) -> bool:
    """Whether the server had the tag (and now has not)."""
    done = conn.execute(_T.delete().where(_T.c.resource_id == instance_uuid,
                                          _T.c.tag == tag))
    return bool(done.rowcount)


def remove_all(conn: Connection, instance_uuid: str) -> None:
    conn.execute(_T.delete().where(_T.c.resource_id == instance_uuid))


def _holding(tag: str, instance_uuid: Any) -> Any:
    # EXISTS (SELECT 1 FROM tags WHERE resource_id = instances.uuid AND tag = :tag)
    return sa.exists().where(_T.c.resource_id == instance_uuid, _T.c.tag == tag)


def filter_clauses(instance_uuid: Any, all_of: Sequence[str] = (),
                   any_of: Sequence[str] = (), not_all_of: Sequence[str] = (),
                   none_of: Sequence[str] = ()) -> list[Any]:
    """WHERE clauses on `instance_uuid` (a column) for Nova's four tag filters:
    has all of `all_of`, has one of `any_of`, lacks one of `not_all_of`, has none
    of `none_of`."""
    clauses = [_holding(tag, instance_uuid) for tag in all_of]
    if any_of:
        clauses.append(sa.or_(*(_holding(tag, instance_uuid) for tag in any_of)))
    if not_all_of:
        clauses.append(sa.not_(sa.and_(*(_holding(tag, instance_uuid)
                                         for tag in not_all_of))))
    clauses.extend(sa.not_(_holding(tag, instance_uuid)) for tag in none_of)
    return clauses
