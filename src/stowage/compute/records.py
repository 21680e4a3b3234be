"""Whole records through hand-written SQL, converted as SQLAlchemy Core would convert them.

Why: instances and migrations are read and written on every step of every
operation, and `stowage.db.statements.Sql` runs a statement for a fraction of
what building a Core statement costs. But the drivers hand back raw values
(JSON as text and datetimes as text on SQLite, booleans as 0/1), and take
JSON only when serialised. `Columns` resolves, once per dialect, the column
types' own SQLAlchemy result and bind processors, so a record read here
equals one read through Core, and a value written here is stored as Core
stores it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Dialect

__all__ = ["Columns"]

class Columns:
    """Some columns of a table: their SELECT list, and value conversion per dialect."""

    def __init__(self, table: sa.Table, names: Sequence[str]) -> None:
        self.table = table
        self.names = tuple(names)
        self.select_list = ", ".join(names)
        self._loaders: dict[Dialect, list[tuple[int, Callable[[Any], Any]]]] = {}
        self._dumpers: dict[Dialect, dict[str, Callable[[Any], Any]]] = {}
        self._lock = threading.Lock()

    def _resolve(self, dialect: Dialect) -> None:
        loaders: list[tuple[int, Callable[[Any], Any]]] = []
        dumpers: dict[str, Callable[[Any], Any]] = {}
        for column in self.table.c:
            impl = column.type.dialect_impl(dialect)
            bind = impl.bind_processor(dialect)
            if bind is not None:
                dumpers[column.name] = bind
            if column.name in self.names:
                load = _result_processor(impl, dialect)
                if load is not None:
                    loaders.append((self.names.index(column.name), load))
        with self._lock:
            self._loaders[dialect] = loaders
            self._dumpers[dialect] = dumpers

    def load(self, conn: Connection, row: Sequence[Any]) -> dict[str, Any]:
        """One raw row of the SELECT list, as {column: value} with Core's types."""
        loaders = self._loaders.get(conn.dialect)
        if loaders is None:
            self._resolve(conn.dialect)
            loaders = self._loaders[conn.dialect]
        values = list(row)
        for index, load in loaders:
            values[index] = load(values[index])
        return dict(zip(self.names, values, strict=True))

    def dump(self, conn: Connection, values: Mapping[str, Any]) -> dict[str, Any]:
        """Values of any columns of the table, converted for the driver (None too: a JSON
        column stores None as JSON `null`, as Core does)."""
        dumpers = self._dumpers.get(conn.dialect)
        if dumpers is None:
            self._resolve(conn.dialect)
            dumpers = self._dumpers[conn.dialect]
        out = dict(values)
        for name, value in values.items():
            dump = dumpers.get(name)
            if dump is not None:
                out[name] = dump(value)
        return out


def _result_processor(impl: Any, dialect: Dialect) -> Callable[[Any], Any] | None:
    """The type's result processor; None when it wants the driver's type code.

    Only PostgreSQL's numerics ask for it (to tell float from Decimal columns);
    psycopg hands a FLOAT column's value back as a float already.
    """
    try:
        found: Callable[[Any], Any] | None = impl.result_processor(dialect, None)
    except TypeError:
        return None
    return found
