"""The `[identity]` directory of stowage.toml for Tempest's pre-provisioned accounts."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.tempest.cloud import Account

__all__ = ["identity_section"]


def identity_section(accounts: Sequence[Account], password: str) -> list[str]:
    """TOML lines: each account's user, its project, and its roles there."""
    lines = ["[identity]", "token_lifetime = 7200", ""]
    for project in sorted({a.project for a in accounts}):
        lines += ["[[identity.projects]]", f"name = {json.dumps(project)}", ""]
    for account in accounts:
        lines += ["[[identity.users]]", f"name = {json.dumps(account.username)}",
                  f"password = {json.dumps(password)}",
                  f"default_project = {json.dumps(account.project)}", ""]
        for role in account.roles:
            lines += ["[[identity.assignments]]", f"user = {json.dumps(account.username)}",
                      f"role = {json.dumps(role)}", f"project = {json.dumps(account.project)}",
                      ""]
    return lines
