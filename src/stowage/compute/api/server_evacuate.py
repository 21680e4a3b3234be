"""evacuate: the admin rebuilds the servers of a dead host elsewhere."""

from __future__ import annotations

from stowage.compute.api.action_common import Handler

__all__ = ["ACTIONS"]

# action name -> handler, merged into POST /servers/{id}/action (server_actions.py)
ACTIONS: dict[str, Handler] = {}
