"""The scheduler endpoint (CONTRACT stub; to be implemented)."""

from __future__ import annotations

from typing import Any

from stowage.config import ComputeSettings
from stowage.db import Database
from stowage.placement.client import PlacementClient

__all__ = ["Scheduler"]


class Scheduler:
    def __init__(self, settings: ComputeSettings, db: Database,
                 placement: PlacementClient) -> None:
        self.settings = settings
        self.db = db
        self.placement = placement

    def select_destinations(self, spec: dict[str, Any],
                            instance_uuids: list[str]) -> list[list[dict[str, Any]]]:
        raise NotImplementedError
