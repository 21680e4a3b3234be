"""One object per distinct value for what many providers hold alike.

At 100,000 providers most of a snapshot's memory was copies: every row
brought its own string for "VCPU", for the one aggregate's uuid, for the
trait name, and every provider its own frozensets of traits and aggregates,
its own `Inventory` objects and its own inventory dict, although a cloud's
hosts mostly have the same hardware, traits, aggregates and (when idle) the
same usage. Interning keeps one object per distinct value: a flat cloud of
identical idle hosts then costs a few hundred bytes per provider (its
`Provider`, uuid and dictionary entries) instead of about three kilobytes.

Sharing is safe because snapshots are never modified once published
(snapshot.py): a change replaces a provider's inventories dict and
`Inventory` objects rather than editing them.

A pool lives for one load (loading.py); objects it handed out stay shared
after it is dropped, so a later load may make a second copy of an equal
value, never a wrong one.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

from stowage.placement.candidates.snapshot import Inventory

__all__ = ["Pool"]



class Pool:
    """Interning tables for names, name sets, inventories and inventory dicts."""

    def __init__(self) -> None:
        self._sets: dict[frozenset[str], frozenset[str]] = {}
        self._invs: dict[tuple[float, int, int, int, int], Inventory] = {}
        self._dicts: dict[tuple[tuple[str, int], ...], dict[str, Inventory]] = {}

    # Class and trait names and aggregate uuids: few, and shared process-wide.
    name = staticmethod(sys.intern)

    def names(self, values: Iterable[str]) -> frozenset[str]:
        """The one frozenset equal to `values` (the strings are already pooled)."""
        key = frozenset(values)
        found = self._sets.get(key)
        if found is None:
            found = self._sets[key] = key
        return found

    def inventory(self, exact: float, used: int, min_unit: int, max_unit: int,
                  step: int) -> Inventory:
        key = (exact, used, min_unit, max_unit, step)
        found = self._invs.get(key)
        if found is None:
            found = self._invs[key] = Inventory(int(exact), used, min_unit, max_unit, step,
                                                exact)
        return found

    def inventories(self, invs: dict[str, Inventory]) -> dict[str, Inventory]:
        """The one dict equal to `invs` in content and order (its Inventories are pooled)."""
        key = tuple((rc, id(inv)) for rc, inv in invs.items())
        found = self._dicts.get(key)
        if found is None:
            found = self._dicts[key] = invs
        return found
