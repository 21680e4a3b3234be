"""Placement HTTP handlers, one module per URL noun; each module exports `ROUTES`."""

from __future__ import annotations

import importlib

from stowage.web.routing import Route

__all__ = ["all_routes"]

MODULES = (
    "root", "resource_classes", "providers", "inventories", "aggregates", "traits",
    "usages", "allocations", "reshaper", "allocation_candidates",
)


def all_routes() -> list[Route]:
    routes: list[Route] = []
    for name in MODULES:
        module = importlib.import_module(f"stowage.placement.api.{name}")
        routes.extend(module.ROUTES)
    return routes
