"""What every Networking API handler shares: the caller held to the rules (`guard`,
`authorize`, `readable`; network/policy.py), transactions, creates (one record or
Neutron's bulk body), If-Match, and the collection query parameters (`fields`,
filters, sorting, `limit`/`marker`).

Collections are filtered on the rendered records, as Neutron's filters name
API attributes (`binding:host_id`, `fixed_ips=ip_address=...`): a parameter
that is neither a known filter nor a paging/sorting one is 400
("[foo] is invalid attribute for filtering", extension `filter-validation`).
Several values of one filter match any of them. As in Neutron, a boolean
attribute's filter value must convert to a boolean (400 InvalidInput), and
sorting names one `sort_dir` (asc or desc) per `sort_key`, each key an
attribute the collection filters on (400 otherwise).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import urlencode

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.db.retry import retryable
from stowage.errors import DomainError
from stowage.network import errors as e
from stowage.network import tags
from stowage.network.api.attributes import Attr, bad, boolean, parse_create
from stowage.network.policy import Guard
from stowage.web.http import Request, Response, json_response

__all__ = ["guard", "authorize", "readable", "listing", "created", "write", "read",
           "expected_revision", "stamp", "fields_of", "select_fields", "query_filters",
           "apply_filters", "page", "PAGING_PARAMS", "with_tags", "deleted"]

LOG = logging.getLogger(__name__)
T = TypeVar("T")
# A write that lost a deadlock (or a serialization race) is run again this many times.
WRITE_ATTEMPTS = 4
PAGING_PARAMS = frozenset({"fields", "limit", "marker", "page_reverse", "sort_key",
                           "sort_dir"})
# The attributes Neutron converts to booleans (convert_to_boolean) when they filter.
BOOLEAN_FILTERS = frozenset({"admin_state_up", "shared", "enable_dhcp", "router:external"})
SORT_DIRECTIONS = ("asc", "desc")


def guard(req: Request) -> Guard:
    """The caller held to the service's rules (network/policy.py)."""
    return Guard(req.app.enforcer, req.context)


def authorize(req: Request, action: str, target: Mapping[str, object] | None = None,
              missing: Callable[[], DomainError] | None = None) -> None:
    """403 (or `missing()`, 404, when the caller may not see `target`) unless the rules
    allow `action`; with no target, the caller's own project is the target."""
    guard(req).check(action, target if target is not None else req.context.policy_target(),
                     missing=missing)


def readable(req: Request, action: str, views: Iterable[dict[str, Any]],
             targets: Mapping[str, Mapping[str, object]] | None = None
             ) -> list[dict[str, Any]]:
    """The records whose `get_<resource>` rule (`action`) lets the caller see them, as
    Neutron filters a listing; `targets` (by id) stand in for views that lack what the
    rule reads (a subnet's network owner)."""
    check = guard(req)
    return [v for v in views
            if check.allows(action, (targets or {}).get(v["id"], v))]


def write(req: Request, work: Callable[[Connection], T]) -> T:
    """Run `work` in one write transaction; run it again if the database chose it as a
    deadlock victim (Neutron retries such writes the same way)."""
    for attempt in range(1, WRITE_ATTEMPTS + 1):
        try:
            with req.app.db.write() as conn:
                return work(conn)
        except sa.exc.DBAPIError as exc:
            if attempt == WRITE_ATTEMPTS or not retryable(exc):
                raise
            LOG.info("retrying %s %s after %s", req.method, req.path, exc.orig)
    raise AssertionError("unreachable")  # pragma: no cover


def deleted(req: Request, collection: str, record_id: str,
            work: Callable[[Connection], T]) -> T:
    """Run the delete `work` and drop the record's tags, in one write transaction."""
    def run(conn: Connection) -> T:
        found = work(conn)
        tags.forget(conn, collection, [record_id])
        return found
    return write(req, run)


def created(req: Request, resource: str, attrs: Sequence[Attr], action: str,
            make: Callable[[Connection, dict[str, Any]], dict[str, Any]]) -> Response:
    """A create as Neutron answers it: `make(conn, values)` returns the record's view;
    a bulk body (`{"<resource>s": [...]}`) makes every record in one transaction, all of
    them or (on the first refusal) none, and answers them in order. `make` is the domain
    create, which holds each item to the rules (`create_<resource>` and its attribute
    rules, through a `policy.Guard`) and claims its quota, so a bulk body is checked
    item by item as Neutron checks it."""
    items, bulk = parse_create(req, resource, attrs, action)
    made = with_tags(req, f"{resource}s",
                     write(req, lambda conn: [make(conn, values) for values in items]))
    if bulk:
        return json_response({f"{resource}s": made}, status=201)
    return json_response({resource: made[0]}, status=201)


def read(req: Request, work: Callable[[Connection], T]) -> T:
    with req.app.db.read() as conn:
        return work(conn)


def expected_revision(req: Request) -> int | None:
    """The revision an `If-Match: revision_number=N` header requires, if any."""
    header = req.headers.get("if-match")
    if header is None:
        return None
    name, _, value = header.strip().partition("=")
    value = value.strip()
    # ASCII digits only: str.isdigit() also takes '²', which int() refuses.
    if name.strip() != "revision_number" or not (value.isascii() and value.isdigit()):
        raise bad(f"If-Match header must be 'revision_number=<integer>', not '{header}'")
    return int(value)


def stamp(value: Any) -> str:
    return str(value.strftime("%Y-%m-%dT%H:%M:%SZ"))


def fields_of(req: Request) -> list[str]:
    return [f for f in req.query_values("fields") if f]


def select_fields(view: dict[str, Any], fields: Sequence[str]) -> dict[str, Any]:
    return {k: v for k, v in view.items() if k in fields} if fields else view


def query_filters(req: Request, allowed: Iterable[str]) -> dict[str, list[str]]:
    """The filters of the query string; 400 for a parameter that filters nothing."""
    allowed = set(allowed)
    found: dict[str, list[str]] = {}
    for key, value in req.query:
        if key in PAGING_PARAMS:
            continue
        if key not in allowed:
            raise bad(f"[{key}] is invalid attribute for filtering")
        if key in BOOLEAN_FILTERS and value:
            try:
                boolean(value)
            except ValueError as exc:
                raise e.invalid_input(str(exc)) from None
        found.setdefault(key, []).append(value)
    _check_sorting(req, allowed)
    return found


def _check_sorting(req: Request, allowed: set[str]) -> None:
    """Neutron's get_sorts: one direction per key, known keys, asc or desc."""
    keys = [k for k in req.query_values("sort_key") if k]
    dirs = [d for d in req.query_values("sort_dir") if d]
    if len(keys) != len(dirs):
        raise bad("The number of sort_keys and sort_dirs must be same")
    unknown = [k for k in keys if k not in allowed]
    if unknown:
        raise bad(f"{unknown} is invalid attribute for sort_keys")
    wrong = [d for d in dirs if d not in SORT_DIRECTIONS]
    if wrong:
        raise bad(f"{wrong} is invalid value for sort_dirs, valid value is 'asc' and 'desc'")


def _matches(actual: Any, wanted: str) -> bool:
    if isinstance(actual, bool):
        try:
            return actual is boolean(wanted)
        except ValueError:
            return False
    if actual is None:
        return wanted in ("", "None")
    if isinstance(actual, list):
        return any(_matches_item(item, wanted) for item in actual)
    return str(actual) == wanted


def _matches_item(item: Any, wanted: str) -> bool:
    """A list attribute matches `key=value` against its dicts (fixed_ips), or a member."""
    if isinstance(item, dict):
        key, _, value = wanted.partition("=")
        return str(item.get(key)) == value
    return str(item) == wanted


def apply_filters(views: Iterable[dict[str, Any]],
                  filters: Mapping[str, Sequence[str]]) -> list[dict[str, Any]]:
    return [v for v in views
            if all(any(_matches(v.get(k), w) for w in wanted) for k, wanted in filters.items())]


def _sort_key(key: str) -> Callable[[dict[str, Any]], tuple[bool, str]]:
    return lambda view: (view.get(key) is None, str(view.get(key)))


def _sorted(req: Request, views: list[dict[str, Any]]) -> list[dict[str, Any]]:
    keys = [k for k in req.query_values("sort_key") if k]
    if not keys:
        return views
    dirs = [d for d in req.query_values("sort_dir") if d]
    for index in reversed(range(len(keys))):
        key = keys[index]
        reverse = dirs[index] == "desc"
        views = sorted(views, key=_sort_key(key), reverse=reverse)
    return views


def page(req: Request, views: list[dict[str, Any]],
         collection: str) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """Sorted views after `marker`, at most `limit` of them, and the `next` link."""
    views = _sorted(req, views)
    markers = req.query_values("marker")
    if markers:
        ids = [v["id"] for v in views]
        if markers[-1] not in ids:
            return [], []
        views = views[ids.index(markers[-1]) + 1:]
    limits = req.query_values("limit")
    if not limits:
        return views, []
    if not limits[-1].isdigit():
        raise bad(f"Invalid input for limit. Reason: '{limits[-1]}' is not an integer.")
    limit = int(limits[-1])
    if limit == 0 or len(views) <= limit:
        return views, []
    shown = views[:limit]
    params = [(k, v) for k, v in req.query if k != "marker"] + [("marker", shown[-1]["id"])]
    return shown, [{"rel": "next",
                    "href": req.url(f"/v2.0/{collection}?{urlencode(params)}")}]


def with_tags(req: Request, collection: str, views: list[dict[str, Any]]
              ) -> list[dict[str, Any]]:
    """The views with their `tags` when `collection` is taggable (network/tags.py)."""
    if tags.taggable(collection) is None or not views:
        return views
    found = read(req, lambda conn: tags.of(conn, collection, [v["id"] for v in views]))
    for view in views:
        view["tags"] = found.get(view["id"], [])
    return views


def listing(req: Request, views: list[dict[str, Any]], filters: Mapping[str, Sequence[str]],
            key: str, collection: str | None = None) -> Response:
    """A list answer as every Neutron collection gives it: filtered (tag filters match
    `tags`, see `tags.matches`), sorted and paged views, cut to `fields`, under `key`,
    with `<key>_links` when there is a next page."""
    views = with_tags(req, key, views)
    by_tag = {k: v for k, v in filters.items() if k in tags.FILTERS}
    if by_tag:
        views = [v for v in views if tags.matches(v.get("tags", []), by_tag)]
    filters = {k: v for k, v in filters.items() if k not in tags.FILTERS}
    shown, links = page(req, apply_filters(views, filters), collection or key)
    fields = fields_of(req)
    body: dict[str, object] = {key: [select_fields(v, fields) for v in shown]}
    if links:
        body[f"{key}_links"] = links
    return json_response(body)
