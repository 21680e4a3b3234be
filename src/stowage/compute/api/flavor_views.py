"""Flavor views, shaped per microversion exactly as Nova's view builder shapes them.

2.55 adds `description` (index and detail alike), 2.61 adds `extra_specs` to
the detailed view when the caller may read extra specs, and 2.75 shows a
zero `swap` as 0 instead of "".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stowage.compute.api.common import MAX_LIMIT, allowed, at_least, links, next_link
from stowage.compute.flavors import Flavor
from stowage.web.http import Request

__all__ = ["basic", "show", "collection"]

DESCRIPTION = 55
EXTRA_SPECS = 61
SWAP_AS_INT = 75


def basic(req: Request, flavor: Flavor) -> dict[str, Any]:
    view: dict[str, Any] = {"id": flavor.flavorid, "name": flavor.name,
                            "links": links(req, "flavors", flavor.flavorid)}
    if at_least(req, DESCRIPTION):
        view["description"] = flavor.description
    return view


def _includes_extra_specs(req: Request) -> bool:
    return at_least(req, EXTRA_SPECS) and allowed(req, "os_compute_api:os-flavor-extra-specs:index")


def show(req: Request, flavor: Flavor, include_extra_specs: bool | None = None) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": flavor.flavorid,
        "name": flavor.name,
        "ram": flavor.memory_mb,
        "disk": flavor.root_gb,
        "swap": flavor.swap if at_least(req, SWAP_AS_INT) else (flavor.swap or ""),
        "OS-FLV-EXT-DATA:ephemeral": flavor.ephemeral_gb,
        "OS-FLV-DISABLED:disabled": flavor.disabled,
        "vcpus": flavor.vcpus,
        "os-flavor-access:is_public": flavor.is_public,
        "rxtx_factor": flavor.rxtx_factor or "",
        "links": links(req, "flavors", flavor.flavorid),
    }
    if at_least(req, DESCRIPTION):
        view["description"] = flavor.description
    if include_extra_specs is None:
        include_extra_specs = _includes_extra_specs(req)
    if include_extra_specs:
        view["extra_specs"] = dict(flavor.extra_specs)
    return view


def collection(req: Request, flavors: Sequence[Flavor], detailed: bool,
               limit: int) -> dict[str, Any]:
    """`{"flavors": [...]}` plus a next link when the page came back full."""
    if detailed:
        with_specs = _includes_extra_specs(req)
        items = [show(req, f, with_specs) for f in flavors]
    else:
        items = [basic(req, f) for f in flavors]
    body: dict[str, Any] = {"flavors": items}
    if flavors and len(flavors) == min(limit, MAX_LIMIT):
        path = "flavors/detail" if detailed else "flavors"
        body["flavors_links"] = next_link(req, path, flavors[-1].flavorid)
    return body
