"""Which database a statement may touch: the check behind a cells split.

A cells deployment keeps the API tables (flavors, request specs, groups,
quotas, aggregates, key pairs -- and Placement, Network, Image, Identity) in
one database and each cell's tables (services, nodes, instances, migrations,
actions, the journal, ...) in its own. Until every transaction says which it
is for, the split cannot be made; `enforce()` makes a wrong one visible on a
single database: a statement on a connection opened through a handle of one
role that names a table of the other is reported (and, when `strict`,
refused). Tests turn it on; production never pays for it.
"""

from __future__ import annotations

import re
import traceback
from collections.abc import Callable, Collection
from collections.abc import Set as AbstractSet
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine

from stowage.db.engine import _ROLE, API, CELL, Database

__all__ = ["RoleViolation", "enforce"]

# A table name where SQL names one: after FROM, JOIN, INTO, UPDATE (quoted or not).
_TABLE = re.compile(r"\b(?:FROM|JOIN|INTO|UPDATE)\s+[`\"]?(\w+)", re.IGNORECASE)


class RoleViolation(AssertionError):
    """A statement crossed from one database's tables into the other's."""


def crossing(statement: str, role: str | None, cell_tables: AbstractSet[str],
             api_tables: AbstractSet[str]) -> set[str]:
    """The tables `statement` names that a connection of `role` must not touch."""
    if role not in (API, CELL):
        return set()
    named: set[str] = set(_TABLE.findall(statement))
    return named & (api_tables if role == CELL else cell_tables)


def enforce(engine: Engine, cell_tables: Collection[str], api_tables: Collection[str], *,
            strict: bool = True, report: Callable[[str], None] | None = None) -> None:
    """Check every statement `engine` runs from now on against its connection's role
    (and, when `strict`, every process's write transactions for their lock order)."""
    cells, apis = frozenset(cell_tables), frozenset(api_tables)
    if strict:
        Database.check_order = True

    @event.listens_for(engine, "before_cursor_execute")
    def _check(conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        role = conn.get_execution_options().get(_ROLE)
        wrong = crossing(statement, role, cells, apis)
        if not wrong:
            return
        where = "".join(f for f in traceback.format_stack(limit=120) if "stowage" in f)
        message = (f"a {role} connection touched {sorted(wrong)}: "
                   f"{statement[:200]}\n{where}")
        if report is not None:
            report(message)
        if strict:
            raise RoleViolation(message)
