"""GET /servers and /servers/detail: Nova's filters, sorting and paging.

Who may filter on what follows Nova: an admin (`allow_all_filters`) may use
every filter; anybody else's unknown filters are dropped silently, leaving
reservation_id, name, status, image, flavor, ip, ip6 (2.5), changes-since,
changes-before (2.66), tags (2.26), locked (2.73), availability_zone,
config_drive, key_name, created_at, launched_at, terminated_at, power_state,
task_state, vm_state, progress, user_id (2.83) and hostname (2.90). The
instance columns without an exact filter match as regular expressions on
their text (`power_state=^4$`, `launched_at=^2026-11`), as Nova's regex
filters do on MySQL. Without `all_tenants`
(admin only) everybody sees their own project's servers. From 2.75 unknown
query parameters are a 400 instead of being ignored.
"""

from __future__ import annotations

import datetime
from typing import Any

from sqlalchemy.engine import Connection

from stowage.compute.api import down_cells, server_security_groups
from stowage.compute.api import server_queries as queries
from stowage.compute.api import server_views as views
from stowage.compute.api.common import (
    API_PREFIX,
    MAX_LIMIT,
    allowed,
    at_least,
    authorize,
    query_param,
    validate_query,
)
from stowage.compute.cells import CellMapping
from stowage.compute.instances import Instance
from stowage.compute.states import _STATE_MAP, SOFT_DELETED
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES", "parse_time", "bool_from_string"]

TRUE_STRINGS = ("1", "t", "true", "on", "y", "yes")
FALSE_STRINGS = ("0", "f", "false", "off", "n", "no")
# Sort keys Nova accepts but ignores (until 2.75 refuses them).
_IGNORED_SORT_KEYS = (
    "architecture", "cell_name", "cleaned", "default_ephemeral_device",
    "default_swap_device", "deleted", "deleted_at", "disable_terminate", "ephemeral_gb",
    "ephemeral_key_uuid", "id", "key_data", "launched_on", "locked", "memory_mb", "os_type",
    "reservation_id", "root_gb", "shutdown_terminate", "user_data", "vcpus", "vm_mode")
_SORT_KEYS = (
    "access_ip_v4", "access_ip_v6", "auto_disk_config", "availability_zone", "config_drive",
    "created_at", "display_description", "display_name", "host", "hostname", "image_ref",
    "instance_type_id", "kernel_id", "key_name", "launch_index", "launched_at", "locked_by",
    "node", "power_state", "progress", "project_id", "ramdisk_id", "root_device_name",
    "task_state", "terminated_at", "updated_at", "user_id", "uuid", "vm_state")
# Query parameter -> instance column, matched as a regular expression (Nova's regex filters).
_REGEX_FILTERS = {"name": "display_name", "display_name": "display_name",
                  "description": "display_description",
                  "display_description": "display_description", "hostname": "hostname",
                  "key_name": "key_name", "node": "node", "reservation_id": "reservation_id",
                  "availability_zone": "availability_zone", "power_state": "power_state",
                  "config_drive": "config_drive", "progress": "progress",
                  "launch_index": "launch_index", "created_at": "created_at",
                  "launched_at": "launched_at", "terminated_at": "terminated_at"}
# Query parameter -> instance column, matched exactly.
_EXACT_FILTERS = {"image": "image_ref", "image_ref": "image_ref", "host": "host",
                  "uuid": "uuid", "user_id": "user_id", "vm_state": "vm_state",
                  "task_state": "task_state"}
_OTHER = ("project_id", "tenant_id", "flavor", "status", "all_tenants", "deleted",
          "soft_deleted", "changes-since", "ip", "ip6", "limit", "marker", "sort_key",
          "sort_dir", "kernel_id", "ramdisk_id", "locked_by", "root_device_name",
          "access_ip_v4", "access_ip_v6", "auto_disk_config")
# 2.83: filters a non-admin may use from then on (Nova's list, in its order).
_USER_FILTERS_2_83 = ("availability_zone", "config_drive", "key_name", "created_at",
                      "launched_at", "terminated_at", "power_state", "task_state",
                      "vm_state", "progress", "user_id")
USER_FILTERS_MORE = 83
HOSTNAME_FILTER = 90  # with 2.90's settable hostname
_TAG_FILTERS = ("tags", "tags-any", "not-tags", "not-tags-any")
_STRING = {"type": "string"}


def _index_query(req: Request) -> dict[str, Any]:
    names = [*_REGEX_FILTERS, *_EXACT_FILTERS, *_OTHER]
    if at_least(req, 26):
        names += _TAG_FILTERS
    if at_least(req, 66):
        names.append("changes-before")
    if at_least(req, 73):
        names.append("locked")
    props: dict[str, Any] = {name: _STRING for name in names}
    props["limit"] = {"type": "string", "pattern": "^[0-9]*$"}
    keys = [*_SORT_KEYS, "locked"] if at_least(req, 73) else [*_SORT_KEYS]
    if not at_least(req, 75):
        keys += [k for k in _IGNORED_SORT_KEYS if k not in keys]
    props["sort_key"] = {"type": "string", "enum": keys}
    return {"type": "object", "properties": props,
            "additionalProperties": not at_least(req, 75)}


def _user_filters(req: Request) -> tuple[str, ...]:
    names: tuple[str, ...] = ("reservation_id", "name", "status", "image", "flavor", "ip",
                              "changes-since", "all_tenants")
    if at_least(req, 5):
        names += ("ip6",)
    if at_least(req, 26):
        names += _TAG_FILTERS
    if at_least(req, 66):
        names += ("changes-before",)
    if at_least(req, 73):
        names += ("locked",)
    if at_least(req, USER_FILTERS_MORE):
        names += _USER_FILTERS_2_83
    if at_least(req, HOSTNAME_FILTER):
        names += ("hostname",)
    return names


def bool_from_string(value: str, strict: bool = False, default: bool = False) -> bool:
    lowered = value.strip().lower()
    if lowered in TRUE_STRINGS:
        return True
    if lowered in FALSE_STRINGS:
        return False
    if strict:
        accepted = ", ".join(f"'{v}'" for v in (*TRUE_STRINGS, *FALSE_STRINGS))
        raise HTTPError(400, f"Unrecognized value '{value}', acceptable values are: "
                             f"{accepted}")
    return default


def parse_time(value: str, name: str) -> datetime.datetime:
    """An ISO 8601 time as a naive UTC datetime (how every table stores time)."""
    try:
        parsed = datetime.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise HTTPError(400, f"Invalid filter field: {name}.") from None
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(datetime.UTC).replace(tzinfo=None)
    return parsed


def _options(req: Request) -> dict[str, list[str]]:
    """The filters the caller may use, unknown ones dropped (as Nova drops them)."""
    options = req.query_dict()
    for name in ("limit", "marker", "sort_key", "sort_dir"):
        options.pop(name, None)
    if not allowed(req, "os_compute_api:servers:allow_all_filters"):
        keep = _user_filters(req)
        options = {k: v for k, v in options.items() if k in keep}
    return options


def _status_filter(req: Request, query: queries.ServerQuery,
                   statuses: list[str]) -> bool:
    """vm/task states for `status=`; False when no server can match."""
    wanted = {s.lower() for s in statuses}
    vm_states: set[str] = set()
    task_states: set[str | None] = set()
    for vm_state, by_task in _STATE_MAP.items():
        for task_state, shown in by_task.items():
            if shown.lower() in wanted:
                vm_states.add(vm_state)
                task_states.add(task_state)
    if not vm_states:
        if at_least(req, 38):
            raise HTTPError(400, "Invalid status value")
        return False
    query.exact["vm_state"] = sorted(vm_states)
    if "default" not in task_states:
        query.exact["task_state"] = list(task_states)
    return True


def _tenancy(req: Request, query: queries.ServerQuery, options: dict[str, list[str]],
             detailed: bool) -> None:
    raw = options.get("all_tenants")
    everyone = "all_tenants" in options
    if raw is not None and raw[-1]:
        everyone = bool_from_string(raw[-1], strict=True)
    if everyone:
        noun = "detail" if detailed else "index"
        authorize(req, f"os_compute_api:servers:{noun}:get_all_tenants")
        project = options.get("project_id") or options.get("tenant_id")
        query.project_id = project[-1] if project else None
    elif req.context.project_id:
        query.project_id = req.context.project_id
    else:
        query.user_id = req.context.user_id


def _deleted(req: Request, query: queries.ServerQuery, options: dict[str, list[str]]) -> None:
    if "deleted" in options:
        query.deleted = bool_from_string(options["deleted"][-1])
    elif "changes-since" in options or "changes-before" in options:
        query.deleted = None  # recently deleted servers are changes too
    if SOFT_DELETED in (query.exact.get("vm_state") or ()):
        query.soft_deleted = True  # status=SOFT_DELETED
    if query.exact.get("vm_state") == ["deleted"]:
        if not req.context.is_admin:
            raise HTTPError(403, "Only administrators may list deleted instances")
        query.deleted = True


def _changes(query: queries.ServerQuery, options: dict[str, list[str]]) -> None:
    if "changes-since" in options:
        query.changes_since = parse_time(options["changes-since"][-1], "changes-since")
    if "changes-before" in options:
        query.changes_before = parse_time(options["changes-before"][-1], "changes-before")
        if query.changes_since and query.changes_before < query.changes_since:
            raise HTTPError(400, "The value of changes-since must be less than or equal "
                                 "to changes-before.")


def _sort(req: Request) -> list[tuple[str, str]]:
    keys = [k for k in req.query_values("sort_key") if k not in _IGNORED_SORT_KEYS
            or (k == "locked" and at_least(req, 73))]
    dirs = req.query_values("sort_dir")
    for direction in dirs:
        if direction not in ("asc", "desc"):
            raise HTTPError(400, "Unknown sort direction, must be 'desc' or 'asc'")
    for key in keys:
        if key in ("host", "node") and not req.context.is_admin:
            raise HTTPError(403, f"Only administrators can sort servers by {key}")
    if len(dirs) > len(keys) and keys:
        raise HTTPError(400, "Sort key and direction mismatch")
    if not keys:
        keys = ["created_at"]
    dirs = dirs or ["desc"]
    dirs += [dirs[0]] * (len(keys) - len(dirs))
    return [(_column(k), d) for k, d in zip(keys, dirs, strict=False)]


def _column(key: str) -> str:
    return {"locked_by": "locked"}.get(key, key)


def _limit(req: Request) -> int:
    value = query_param(req, "limit")
    return MAX_LIMIT if value in (None, "") else min(int(value or 0), MAX_LIMIT)


def _build_query(req: Request, detailed: bool) -> queries.ServerQuery | None:
    """The listing asked for; None when Nova answers with an empty list outright."""
    options = _options(req)
    for name in options:
        if name.startswith("_"):
            raise HTTPError(400, f"Invalid filter field: {name}.")
    query = queries.ServerQuery(sort=_sort(req))
    if "status" in options and not _status_filter(req, query, options["status"]):
        return None
    for name, column in _EXACT_FILTERS.items():
        if name in options and name != "status":
            query.exact.setdefault(column, options[name][-1])
    for name, column in _REGEX_FILTERS.items():
        if name in options:
            query.regex[column] = options[name][-1]
    if "flavor" in options:
        query.flavorid = options["flavor"][-1]
    if "locked" in options:
        query.exact["locked"] = bool_from_string(options["locked"][-1], strict=True)
    _changes(query, options)
    _deleted(req, query, options)
    _tenancy(req, query, options, detailed)
    query.ips = {version: options[name][-1] for version, name in ((4, "ip"), (6, "ip6"))
                 if name in options}
    query.tags = {name: options[name][-1].split(",") for name in _TAG_FILTERS
                  if name in options and at_least(req, 26)}
    query.limit = _limit(req)
    query.marker = query_param(req, "marker")
    return query


def _list(req: Request, detailed: bool) -> Response:
    authorize(req, "os_compute_api:servers:" + ("detail" if detailed else "index"))
    validate_query(req, _index_query(req))
    query = _build_query(req, detailed)
    limit = _limit(req)
    if query is None or limit == 0:
        return json_response({"servers": []})
    found, extras, down = _gather(req, query, detailed)
    if extras is not None:
        views.finish_extras(req, extras, found)
        server_security_groups.fill(req, extras)
    shown = views.Shown.for_request(req) if detailed else None
    body = views.collection(req, found, detailed, limit, shown, extras)
    if down and down_cells.listing_allows(req):
        body["servers"][:0] = down_cells.minimal_servers(req, down, query.project_id,
                                                         detailed)
    return json_response(body)


def _gather(req: Request, query: queries.ServerQuery, detailed: bool
            ) -> tuple[list[Instance], views.Extras | None, list[CellMapping]]:
    """Every cell's page, merged by the sort keys and cut at the limit (Nova's
    multi-cell list), and the cells whose database did not answer (down_cells.py)."""
    databases = req.app.cells.distinct()
    marker = None
    if query.marker is not None and len(databases) > 1:
        with req.app.server_db(query.marker).read() as conn:
            marker = queries.find_marker(conn, query)

    def read(conn: Connection) -> tuple[list[Instance], views.Extras]:
        part = queries.list_servers(conn, query, marker)
        return part, views.load_extras(conn, part) if detailed else views.Extras()
    found, down = req.app.gather(read)
    extras = views.Extras() if detailed else None
    if extras is not None:
        for _, more in found:
            extras.merge(more)
    return queries.merge_sorted([part for part, _ in found], query), extras, down


def list_servers(req: Request) -> Response:
    return _list(req, detailed=False)


def list_servers_detail(req: Request) -> Response:
    return _list(req, detailed=True)


ROUTES = [
    Route("GET", API_PREFIX + "/servers", list_servers),
    Route("GET", API_PREFIX + "/servers/detail", list_servers_detail),
]
