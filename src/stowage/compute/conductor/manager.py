"""The conductor endpoint (stub; being implemented by the lead)."""

from __future__ import annotations

from typing import Any

from stowage.config import ComputeSettings
from stowage.db import Database
from stowage.messaging import Transport
from stowage.placement.client import PlacementClient

__all__ = ["Conductor"]


class Conductor:
    def __init__(self, settings: ComputeSettings, db: Database, placement: PlacementClient,
                 transport: Transport) -> None:
        self.settings = settings
        self.db = db
        self.placement = placement
        self.transport = transport

    def start(self) -> None:
        pass

    def confirm_expired_resizes(self) -> None:
        pass

    def build_instances(self, **kwargs: Any) -> None:
        raise NotImplementedError
