"""The operators' dashboard at `/` of `stowage serve` (docs/dashboard.md).

Hosts as provider trees with capacity and usage, servers, moves in progress
with who owns what where, and the accounting audit; refreshed live, for
administrators only. `world` says what it reads, `access` who may see it,
`app` its routes, `render` its HTML; `hosts`, `servers`, `moves` and
`audit_view` gather each section's data; `static/` holds its script and
style sheet.
"""

from __future__ import annotations

from stowage.web.dashboard.app import DashboardApp
from stowage.web.dashboard.world import World

__all__ = ["DashboardApp", "World"]
