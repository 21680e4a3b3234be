"""Allocation candidates: parse the request, search the provider graph, render.

`provider_filter` also serves GET /resource_providers, whose `resources`,
`required` and `member_of` filters share semantics and messages with
/allocation_candidates.
"""

from __future__ import annotations

from sqlalchemy.engine import Connection

from stowage.errors import Invalid
from stowage.placement.candidates import params, snapshot
from stowage.web.http import Request

__all__ = ["provider_filter"]


def _parse(req: Request) -> tuple[list[set[str]], set[str], list[frozenset[str]], set[str],
                                  dict[str, int]]:
    """Upstream's order: member_of, then required, then resources."""
    minor = req.version.minor
    member_of: list[set[str]] = []
    bad_aggs: set[str] = set()
    if req.query_values("member_of"):
        member_of, bad_aggs = params.parse_member_of_values(
            req.query_values("member_of"), "", minor)
    required: list[frozenset[str]] = []
    forbidden: set[str] = set()
    if req.query_values("required"):
        required, forbidden = params.parse_traits_values(req.query_values("required"), minor)
    resources: dict[str, int] = {}
    if req.query_values("resources"):
        resources = params.parse_resources(req.query_values("resources")[-1])
    return member_of, bad_aggs, required, forbidden, resources


def _check_traits(snap: snapshot.Snapshot, names: list[str]) -> None:
    for name in names:
        if name not in snap.known_traits:
            raise Invalid('Invalid trait(s) in "required" parameter: '
                          f"No such trait(s): {name}.")


def provider_filter(req: Request, conn: Connection) -> set[int] | None:
    """Ids of providers matching `resources`/`required`/`member_of`; None if none given.

    Call it after validating the query schema and after resolving `in_tree`
    (upstream answers an unknown in_tree with an empty list before checking
    trait names).
    """
    present = {k for k, _ in req.query} & {"member_of", "required", "resources"}
    if not present:
        return None
    member_of, bad_aggs, required, forbidden, resources = _parse(req)
    traits = {t for any_of in required for t in any_of} | forbidden
    snap: snapshot.Snapshot = req.app.candidates.view(conn, set(resources), traits)
    ids = set(snap.providers)
    if required:
        _check_traits(snap, [t for any_of in required for t in sorted(any_of)])
        ids = {p for p in ids if all(a & snap.providers[p].traits for a in required)}
        if not ids:
            return set()
    if forbidden:
        _check_traits(snap, sorted(forbidden))
        ids = {p for p in ids if not forbidden & snap.providers[p].traits}
    for any_of in member_of:
        ids &= snap.in_aggregates(any_of)
    if member_of and not ids:
        return set()
    ids -= snap.in_aggregates(bad_aggs)
    for rc, amount in resources.items():
        if rc not in snap.known_classes:
            raise Invalid("Invalid resource class in resources parameter: "
                          f"No such resource class {rc}.")
        ids &= {p for p in snap.by_class.get(rc, ())
                if snap.providers[p].inventories[rc].fits(amount)}
    return ids
