"""shelve, shelveOffload, unshelve: park a server, free its host, bring it back."""

from __future__ import annotations

from stowage.compute.api.action_common import Handler

__all__ = ["ACTIONS"]

# action name -> handler, merged into POST /servers/{id}/action (server_actions.py)
ACTIONS: dict[str, Handler] = {}
