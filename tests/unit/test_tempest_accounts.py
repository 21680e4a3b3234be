"""The Tempest accounts file: the untyped `alt` credential is never reader-only.

Tempest hands out an untyped credential (`alt`) as the first free non-admin
account in file order; a reader-only `alt` is refused writes a member makes
(image sharing), which made Tempest's image member tests flaky.
"""

from __future__ import annotations

import yaml

from tests.tempest.cloud import Cloud, accounts
from tests.tempest.workspace import _accounts_yaml


def _entries(workers: int) -> list[dict[str, object]]:
    cloud = Cloud("http://127.0.0.1:1", accounts(workers))
    return list(yaml.safe_load(_accounts_yaml(cloud)))


def test_reader_only_accounts_come_after_every_other_untyped_account() -> None:
    for workers in (1, 2, 4):
        untyped = [e for e in _entries(workers) if "types" not in e
                   and "admin" not in e.get("roles", [])]  # type: ignore[operator]
        kinds = [e["roles"] == ["reader"] for e in untyped]
        first_reader = kinds.index(True)
        assert not any(kinds[:first_reader]) and all(kinds[first_reader:])
        # Enough members and managers that every worker's alt finds one free.
        assert first_reader >= 4 * max(2, workers)


def test_every_project_keeps_its_reader_member_and_manager() -> None:
    by_project: dict[str, set[str]] = {}
    for entry in _entries(2):
        for role in entry.get("roles", []):  # type: ignore[attr-defined]
            by_project.setdefault(str(entry["project_name"]), set()).add(role)
    personas = [roles for project, roles in by_project.items()
                if project.startswith("tempest-project-")]
    assert personas and all(roles == {"member", "reader", "manager"} for roles in personas)
