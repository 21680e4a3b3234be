"""What the dashboard reads from: the deployment's databases and clients, gathered once.

The dashboard is an operators' view over the same records the APIs serve;
it sits beside `cli` at the top of the layering (it reads compute and
placement, nothing below imports it). `World` is built by `cli.build_asgi`
from the services this process serves; a part it lacks (Placement served
elsewhere, no Compute) is None and its section says so instead of failing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stowage.config import Settings
from stowage.db import Database

__all__ = ["World", "world_of"]


@dataclass
class World:
    settings: Settings
    # The API database (aggregates, mappings, flavors); Placement's tables are in
    # `placement_db`, None when Placement is not served by this process.
    api_db: Database | None
    placement_db: Database | None
    # compute.cells.Cells, the deployment's cells; None without Compute.
    cells: Any = None
    # compute.runtime.ControlPlane: its Placement and Network clients run the audit.
    plane: Any = None
    # The identity service mounted here (builtin-identity): logins are asked of it.
    identity_app: Any = None
    # How the APIs authenticate a request (identity.middleware.authenticator_for).
    authenticate: Any = None

    def cell_dbs(self) -> list[tuple[str, Database]]:
        """Each cell database once, named by the cells keeping their records there."""
        if self.cells is None:
            return []
        return [(", ".join(c.name for c in cells), db)
                for cells, db in self.cells.distinct(self.cells.compute_cells())]


def world_of(settings: Settings, db: Database, apps: dict[str, Any],
             identity_app: Any = None) -> World:
    """The World of the services `cli.build_asgi` built (`apps`: name -> ServiceApp)."""
    from stowage.identity.middleware import authenticator_for

    compute, placement = apps.get("compute"), apps.get("placement")
    api_db = compute.state.db if compute is not None else None
    return World(settings=settings, api_db=api_db,
                 placement_db=placement.state.db if placement is not None else None,
                 cells=compute.state.cells if compute is not None else None,
                 plane=compute.state.plane if compute is not None else None,
                 identity_app=identity_app if settings.api.auth_strategy == "builtin-identity"
                 else None,
                 authenticate=authenticator_for(settings, db))
