"""GET /v2/images: Glance's listing filters, sorting and pages.

Filters, as Glance takes them: `name`, `id` (`in:a,b`), `status`,
`visibility`, `owner`, `container_format`, `disk_format`, `size`,
`size_min`, `size_max`, `protected`, `os_hidden` (hidden images are left
out unless `os_hidden=true` asks for them alone), `tag` (repeatable: every
one must be on the image), and any other parameter as an extra property
that must equal the value. Sorting: `sort=key[:dir],...` or repeated
`sort_key`/`sort_dir`; newest first by default.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from stowage.errors import NotFound
from stowage.image import images as img
from stowage.image import policy
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, json_response

__all__ = ["list_images", "int_param", "last", "DEFAULT_LIMIT", "MAX_LIMIT", "SORT_KEYS"]

DEFAULT_LIMIT = 25
MAX_LIMIT = 1000
SORT_KEYS = ("name", "status", "container_format", "disk_format", "size", "id",
             "created_at", "updated_at", "min_disk", "min_ram", "owner", "visibility",
             "protected", "os_hidden")
_EXACT = ("owner", "container_format", "disk_format")
# The visibility and member_status filters as Glance takes them (`all`: any; the
# shared images a member lists are those it answered so: image-sharing.md).
VISIBILITY_FILTERS = ("public", "private", "shared", "community", "all")
MEMBER_STATUS_FILTERS = ("pending", "accepted", "rejected", "all")
# Parameters that are not property filters (member_status: image sharing's).
_KNOWN = frozenset({"limit", "marker", "name", "id", "status", "visibility", "size",
                    "size_min", "size_max", "protected", "os_hidden", "tag", "sort",
                    "sort_key", "sort_dir", "member_status", "created_at", "updated_at",
                    *_EXACT})


def int_param(req: Request, name: str, default: int) -> int:
    """A non-negative integer query parameter (the last given), Glance's 400s otherwise."""
    values = req.query_values(name)
    if not values:
        return default
    try:
        value = int(values[-1])
    except ValueError:
        raise HTTPError(400, f"{name} param must be an integer") from None
    if value < 0:
        raise HTTPError(400, f"{name} param must be positive")
    return value


def _in_list(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return value[3:].split(",") if value.startswith("in:") else [value]


def last(req: Request, name: str) -> str | None:
    """A query parameter's value (the last one when repeated), or None."""
    values = req.query_values(name)
    return values[-1] if values else None


def _bool(req: Request, name: str) -> bool | None:
    value = last(req, name)
    if value is None:
        return None
    if value.lower() not in ("true", "false"):
        raise HTTPError(400, f"Invalid value '{value}' for parameter '{name}': Expected "
                             "boolean value")
    return value.lower() == "true"


def _size(req: Request, name: str) -> int | None:
    value = last(req, name)
    if value is None:
        return None
    if not value.isdigit():
        raise HTTPError(400, f"Invalid value '{value}' for parameter '{name}': {name} "
                             "must be a non-negative integer")
    return int(value)


def _sort(req: Request) -> tuple[tuple[str, bool], ...]:
    """(key, descending) pairs from `sort` or from `sort_key`/`sort_dir`; Glance's 400s."""
    sort, keys, dirs = last(req, "sort"), req.query_values("sort_key"), \
        req.query_values("sort_dir")
    if sort is not None and (keys or dirs):
        raise HTTPError(400, "The 'sort' param can not be used with 'sort_key' or "
                             "'sort_dir'.")
    pairs: list[tuple[str, str]] = []
    if sort is not None:
        for part in sort.split(","):
            key, _, direction = part.strip().partition(":")
            pairs.append((key, direction or "desc"))
    else:
        if len(dirs) > 1 and len(dirs) != len(keys):
            raise HTTPError(400, "Number of sort dirs does not match the number of sort "
                                 "keys")
        pairs = [(k, dirs[i] if len(dirs) > 1 else (dirs[0] if dirs else "desc"))
                 for i, k in enumerate(keys)]
    for key, direction in pairs:
        if key not in SORT_KEYS:
            raise HTTPError(400, f"Invalid sort key: {key}. It must be one of the "
                                 f"following: {', '.join(SORT_KEYS)}.")
        if direction not in ("asc", "desc"):
            raise HTTPError(400, f"Invalid sort direction: {direction}")
    return tuple((k, d == "desc") for k, d in pairs)


def _matcher(req: Request) -> Callable[[img.Image], bool]:
    """Every filter that is not a column of the listing's query."""
    exact = {k: v for k in _EXACT if (v := last(req, k)) is not None}
    size, low, high = _size(req, "size"), _size(req, "size_min"), _size(req, "size_max")
    protected, hidden = _bool(req, "protected"), bool(_bool(req, "os_hidden"))
    tags = req.query_values("tag")

    def match(image: img.Image) -> bool:
        if any(getattr(image, k) != v for k, v in exact.items()):
            return False
        if image.os_hidden != hidden or (protected is not None
                                         and image.protected != protected):
            return False
        if size is not None and image.size != size:
            return False
        if (low is not None or high is not None) and image.size is None:
            return False
        if (low is not None and image.size is not None and image.size < low) or \
                (high is not None and image.size is not None and image.size > high):
            return False
        return all(t in image.tags for t in tags)
    return match


def list_images(req: Request) -> Response:
    if not req.app.enforcer.allowed("get_images", req.context, req.context.policy_target()):
        raise policy.denied("get_images")
    limit = min(int_param(req, "limit", DEFAULT_LIMIT), MAX_LIMIT)
    names = _in_list(last(req, "name"))
    properties = {k: v for k, v in req.query if k not in _KNOWN}
    visibility, member_status = last(req, "visibility"), last(req, "member_status")
    if visibility is not None and visibility not in VISIBILITY_FILTERS:
        raise HTTPError(400, f"Invalid visibility value: {visibility}")
    if member_status is not None and member_status not in MEMBER_STATUS_FILTERS:
        raise HTTPError(400, f"Invalid status: {member_status}")
    query = img.ListQuery(name=names[0] if names and len(names) == 1 else None,
                          ids=_in_list(last(req, "id")), status=last(req, "status"),
                          visibility=visibility, member_status=member_status or "accepted",
                          limit=limit, marker=last(req, "marker"),
                          properties=properties or None,
                          match=_matcher(req), sort=_sort(req))
    with req.app.db.read() as conn:
        try:
            found = img.list_images(conn, req.context, query)
        except NotFound as exc:
            raise HTTPError(400, exc.detail) from None
    if names and len(names) > 1:
        found = [i for i in found if i.name in names]
    from stowage.image.api import view  # api.py imports this module: import at call time

    body: dict[str, Any] = {"images": [view(i) for i in found], "first": "/v2/images",
                            "schema": "/v2/schemas/images"}
    if found and len(found) == limit:
        params = [(k, v) for k, v in req.query if k != "marker"] + [("marker", found[-1].id)]
        body["next"] = "/v2/images?" + urlencode(params)
    return json_response(body)
