"""Quota limits: what each project (or user of a project) may use, and where that is written.

A limit is looked up in this order, the first found wins (Nova's DbQuotaDriver):

    user's own row (quotas, user_id = the user)      only for a per-user lookup
    project's own row (quotas, user_id = "")
    the `default` quota class (quota_classes)
    the `[quota]` settings (QuotaSettings)

-1 means unlimited. The resources are Nova's: the countable ones (instances,
cores, ram, server_groups, server_group_members, key_pairs), the absolute ones
(metadata_items, injected_file*) and the deprecated nova-network ones that
old microversions still show (fixed_ips, floating_ips, security_groups,
security_group_rules: unlimited unless set).
"""

from __future__ import annotations

from collections.abc import Mapping

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.compute import tables as t
from stowage.config import QuotaSettings
from stowage.db.statements import Sql
from stowage.timeutil import utcnow

__all__ = ["RESOURCES", "NETWORK_RESOURCES", "INJECTED_FILE_RESOURCES", "DEFAULT_CLASS",
           "UNLIMITED", "defaults", "class_limits", "project_limits", "user_limits",
           "user_rows_sum", "set_project_limit", "set_class_limit", "delete_limits"]

UNLIMITED = -1
DEFAULT_CLASS = "default"

# The order Nova's QUOTAS.resources lists them in (the order of answers).
RESOURCES = ("instances", "cores", "ram", "metadata_items", "injected_files",
             "injected_file_content_bytes", "injected_file_path_bytes", "key_pairs",
             "server_groups", "server_group_members", "fixed_ips", "floating_ips",
             "security_groups", "security_group_rules")
# Dropped from answers (and refused in updates) from 2.36 on.
NETWORK_RESOURCES = ("fixed_ips", "floating_ips", "security_groups", "security_group_rules")
# Dropped from 2.57 on, with personality files.
INJECTED_FILE_RESOURCES = ("injected_files", "injected_file_content_bytes",
                           "injected_file_path_bytes")

_Q = t.quotas
_QC = t.quota_classes
_PROJECT_ROW = ""  # user_id of a project's own limits
# Read by every quota check (boot, resize, unshelve): as SQL text, which skips Core's
# statement building (db/statements.py).
_CLASS_ROWS = Sql("SELECT resource, hard_limit FROM quota_classes WHERE class_name = :name")
_LIMIT_ROWS = Sql("SELECT resource, hard_limit FROM quotas "
                  "WHERE project_id = :project AND user_id = :user")


def defaults(settings: QuotaSettings) -> dict[str, int]:
    """The `[quota]` settings per resource; the nova-network ones are unlimited."""
    return {name: (UNLIMITED if name in NETWORK_RESOURCES else int(getattr(settings, name)))
            for name in RESOURCES}


def class_limits(conn: Connection, settings: QuotaSettings,
                 class_name: str = DEFAULT_CLASS) -> dict[str, int]:
    """The settings' defaults overridden by the quota class's rows."""
    rows = _CLASS_ROWS.rows(conn, name=class_name)
    limits = defaults(settings)
    limits.update({r: int(v) for r, v in rows if r in limits})
    return limits


def _rows(conn: Connection, project_id: str, user_id: str) -> dict[str, int]:
    rows = _LIMIT_ROWS.rows(conn, project=project_id, user=user_id)
    return {r: int(v) for r, v in rows if r in RESOURCES}


def project_limits(conn: Connection, settings: QuotaSettings,
                   project_id: str) -> dict[str, int]:
    limits = class_limits(conn, settings)
    limits.update(_rows(conn, project_id, _PROJECT_ROW))
    return limits


def user_limits(conn: Connection, settings: QuotaSettings, project_id: str,
                user_id: str, project: dict[str, int] | None = None) -> dict[str, int]:
    """A user's limits: the project's (`project` when the caller read them), where the
    user has no row of their own."""
    limits = dict(project) if project is not None else project_limits(conn, settings,
                                                                        project_id)
    limits.update(_rows(conn, project_id, user_id))
    return limits


def user_rows_sum(conn: Connection, project_id: str,
                  except_user: str | None = None) -> dict[str, int]:
    """Per resource, the sum of the limits set for the project's users (Nova's part of a
    project's limit already handed out to users, when its `remains` are computed)."""
    # SELECT resource, SUM(hard_limit) FROM quotas
    #  WHERE project_id = :p AND user_id != '' [AND user_id != :except] GROUP BY resource
    query = (sa.select(_Q.c.resource, sa.func.sum(_Q.c.hard_limit))
             .where(_Q.c.project_id == project_id, _Q.c.user_id != _PROJECT_ROW))
    if except_user is not None:
        query = query.where(_Q.c.user_id != except_user)
    return {r: int(v) for r, v in conn.execute(query.group_by(_Q.c.resource))}


def _upsert(conn: Connection, table: sa.Table, key: Mapping[str, str], resource: str,
            limit: int) -> None:
    """Update the row, or insert it; a concurrent insert of the same row wins and is updated.

    The insert runs in a savepoint so that losing the race leaves the
    surrounding transaction usable (PostgreSQL aborts it otherwise).
    """
    where = [table.c[name] == value for name, value in key.items()]
    where.append(table.c.resource == resource)
    update = table.update().where(*where).values(hard_limit=limit, updated_at=utcnow())
    if conn.execute(update).rowcount:
        return
    try:
        with conn.begin_nested():
            conn.execute(table.insert().values(**key, resource=resource, hard_limit=limit,
                                               created_at=utcnow()))
    except sa.exc.IntegrityError:
        conn.execute(update)


def set_project_limit(conn: Connection, project_id: str, user_id: str | None, resource: str,
                      limit: int) -> None:
    """Set a project's limit, or (with `user_id`) one of its users'."""
    _upsert(conn, _Q, {"project_id": project_id, "user_id": user_id or _PROJECT_ROW},
            resource, limit)


def set_class_limit(conn: Connection, class_name: str, resource: str, limit: int) -> None:
    _upsert(conn, _QC, {"class_name": class_name}, resource, limit)


def delete_limits(conn: Connection, project_id: str, user_id: str | None = None) -> None:
    """Back to the defaults: the user's rows, or the project's and all its users' rows."""
    query = _Q.delete().where(_Q.c.project_id == project_id)
    if user_id:
        query = query.where(_Q.c.user_id == user_id)
    conn.execute(query)
