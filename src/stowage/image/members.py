"""Image members: the projects a `shared` image is offered to, and each one's answer.

As Glance's: the owner (or an admin) offers a shared image to a project, which
becomes a member with status `pending`; the member alone answers `accepted`
or `rejected` (and may change its mind). What a member's answer changes is
the listing (images.list_images shows accepted images unless asked for
another `member_status`); any member, whatever its answer, may read and boot
the image (images.get). Only `shared` images have members: asking about the
members of any other image is refused. An image holds at most
`IMAGE_MEMBER_QUOTA` members (Glance's `image_member_quota`).

Who sees which memberships, as Glance's database layer decides: an admin and
the image's owner see all of them, a member only its own.
Policy (policy.py: add_member, get_member(s), modify_member, delete_member)
is the API's to check; these functions hold the records.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.context import RequestContext
from stowage.errors import Conflict, DomainError, Forbidden, NotFound
from stowage.image import images as img
from stowage.image import tables as t
from stowage.timeutil import utcnow

__all__ = ["Member", "STATUSES", "IMAGE_MEMBER_QUOTA", "MemberLimit", "NOT_SHARED",
           "require_shared", "membership", "list_members", "get", "add", "set_status",
           "remove"]

_M = t.image_members
STATUSES = ("pending", "accepted", "rejected")
# Glance's `image_member_quota` default: the most members one image may have.
IMAGE_MEMBER_QUOTA = 128
NOT_SHARED = "Only shared images have members."


class MemberLimit(DomainError):
    """The image already has IMAGE_MEMBER_QUOTA members (Glance: 413)."""

    kind = "too_large"


@dataclass
class Member:
    image_id: str
    member_id: str
    status: str
    created_at: datetime.datetime
    updated_at: datetime.datetime


def _to_member(row: Any) -> Member:
    return Member(image_id=row.image_id, member_id=row.member, status=row.status,
                  created_at=row.created_at, updated_at=row.updated_at)


def require_shared(image: img.Image) -> None:
    if image.visibility != "shared":
        raise Forbidden(NOT_SHARED)


def membership(conn: Connection, image_id: str, project_id: str | None) -> Member | None:
    """`project_id`'s membership of the image, if it has one (whatever its status)."""
    if not project_id:
        return None
    row = conn.execute(sa.select(_M).where(_M.c.image_id == image_id,
                                           _M.c.member == project_id)).first()
    return None if row is None else _to_member(row)


def _sees_all(image: img.Image, ctx: RequestContext) -> bool:
    return ctx.is_admin or (ctx.project_id is not None and ctx.project_id == image.owner)


def list_members(conn: Connection, image: img.Image, ctx: RequestContext) -> list[Member]:
    """The image's members the caller may see, oldest first."""
    # SELECT * FROM image_members WHERE image_id = :id [AND member = :project]
    query = sa.select(_M).where(_M.c.image_id == image.id)
    if not _sees_all(image, ctx):
        query = query.where(_M.c.member == (ctx.project_id or ""))
    rows = conn.execute(query.order_by(_M.c.created_at, _M.c.member))
    return [_to_member(r) for r in rows]


def get(conn: Connection, image: img.Image, member_id: str, ctx: RequestContext) -> Member:
    found = membership(conn, image.id, member_id)
    if found is None or not (_sees_all(image, ctx) or member_id == ctx.project_id):
        raise NotFound(f"{member_id} not found in the member list of the image {image.id}.")
    return found


def add(conn: Connection, image: img.Image, member_id: str) -> Member:
    """Offer the image to `member_id` (pending). The image's row is held to the commit,
    so two concurrent adds count each other against the quota."""
    img.lock(conn, image.id)
    if membership(conn, image.id, member_id) is not None:
        raise Conflict(f"Member {member_id} is duplicated for image {image.id}")
    # SELECT count(*) FROM image_members WHERE image_id = :id
    held = conn.execute(sa.select(sa.func.count()).select_from(_M)
                        .where(_M.c.image_id == image.id)).scalar_one()
    if held >= IMAGE_MEMBER_QUOTA:
        raise MemberLimit(
            f"Image member limit exceeded for image {image.id}: The limit has been exceeded "
            "on the number of allowed image members for this image. Attempted: "
            f"{held + 1}, Maximum: {IMAGE_MEMBER_QUOTA}:")
    now = utcnow()
    conn.execute(_M.insert().values(image_id=image.id, member=member_id, status="pending",
                                    created_at=now, updated_at=now))
    return Member(image.id, member_id, "pending", now, now)


def set_status(conn: Connection, image: img.Image, member_id: str, status: str,
               ctx: RequestContext) -> Member:
    """The member's answer; `status` must be one of STATUSES (ValueError otherwise)."""
    if status not in STATUSES:
        raise ValueError('Status must be "pending", "accepted" or "rejected".')
    found = get(conn, image, member_id, ctx)
    now = utcnow()
    conn.execute(_M.update().where(_M.c.image_id == image.id, _M.c.member == member_id)
                 .values(status=status, updated_at=now))
    found.status, found.updated_at = status, now
    return found


def remove(conn: Connection, image: img.Image, member_id: str, ctx: RequestContext) -> None:
    get(conn, image, member_id, ctx)
    conn.execute(_M.delete().where(_M.c.image_id == image.id, _M.c.member == member_id))
