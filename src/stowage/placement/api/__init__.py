"""Placement HTTP handlers, one module per URL noun; each module exports `ROUTES`."""

from __future__ import annotations

from stowage.web.routing import Route, routes_of

__all__ = ["all_routes"]

MODULES = (
    "root", "resource_classes", "providers", "inventories", "aggregates", "traits",
    "usages", "allocations", "reshaper", "allocation_candidates",
)


def all_routes() -> list[Route]:
    return routes_of(__name__, MODULES)
