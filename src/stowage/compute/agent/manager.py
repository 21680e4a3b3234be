"""The compute agent of one host (CONTRACT stub; to be implemented)."""

from __future__ import annotations

from typing import Any

from stowage.compute.hosts import HostConfig
from stowage.config import ComputeSettings
from stowage.db import Database
from stowage.placement.client import PlacementClient

__all__ = ["ComputeAgent"]


class ComputeAgent:
    def __init__(self, host: HostConfig, settings: ComputeSettings, db: Database,
                 placement: PlacementClient, driver: Any = None) -> None:
        self.host = host
        self.settings = settings
        self.db = db
        self.placement = placement

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        pass

    def heartbeat(self) -> None:
        pass

    def update_available_resource(self) -> None:
        pass
