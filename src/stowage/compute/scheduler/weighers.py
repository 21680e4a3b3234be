"""Weighers: order the hosts that passed the filters, best first.

Each weigher gives every host a raw value; as in Nova, the values are scaled
to [0, 1] across the hosts being weighed (all equal -> all 0), multiplied by
the weigher's multiplier and summed. Ties go to the host name, so the same
state always gives the same order.

    RAMWeigher        free MEMORY_MB            spread: +1, pack: -1
    CPUWeigher        free VCPU                 spread: +1, pack: -1
    DiskWeigher       free DISK_GB              spread: +1, pack: -1
    ServerGroupSoftAffinityWeigher       members of a soft-affinity group here: +1
    ServerGroupSoftAntiAffinityWeigher   members of a soft-anti-affinity group here: -1
    CrossCellWeigher  a move that may leave its cell: a host of the server's own cell
                      +cross_cell_move_weight_multiplier (1000000.0), or what the host's
                      aggregates' metadata of that name say (the least), as Nova's

Free amounts come from Placement's provider summaries as reduced by this
request's own claims, so a multi-instance spread really spreads.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol, overload

from stowage.compute.scheduler.host_state import HostState, free_amounts
from stowage.compute.scheduler.request import SchedulingRequest

__all__ = ["Weigher", "WeighedHost", "Ranking", "weigh", "weighers_for", "ResourceWeigher",
           "ServerGroupSoftAffinityWeigher", "ServerGroupSoftAntiAffinityWeigher",
           "CrossCellWeigher", "CROSS_CELL_KEY"]

LOG = logging.getLogger(__name__)
# The aggregate metadata key (and `[compute]` setting) of the CrossCellWeigher.
CROSS_CELL_KEY = "cross_cell_move_weight_multiplier"

SPREAD, PACK = "spread", "pack"


class Weigher(Protocol):
    name: str
    multiplier: float

    def raw(self, host: HostState, req: SchedulingRequest) -> float: ...


@dataclass(slots=True)
class WeighedHost:
    host: HostState
    weight: float = 0.0
    # Every weigher's contributions to the hosts of one weighing, shared by them,
    # and this host's place in them (`parts`).
    table: tuple[tuple[str, Sequence[float]], ...] = ()
    index: int = 0

    @property
    def parts(self) -> dict[str, float]:
        """weigher name -> contribution, for the operator's "why this order" (built
        when asked: a dict per host per decision was a tenth of the weighing)."""
        return {name: column[self.index] for name, column in self.table}


class Ranking(Sequence[WeighedHost]):
    """The weighed hosts, best first; each `WeighedHost` is made when it is read.

    Why lazy: a decision reads the first host that still fits and a few
    alternates, not the 1,000 others; an object per candidate per decision was
    a tenth of the weighing.
    """

    __slots__ = ("_hosts", "_totals", "_table", "_order")

    def __init__(self, hosts: Sequence[HostState], totals: list[float],
                 table: tuple[tuple[str, Sequence[float]], ...], order: list[int]) -> None:
        self._hosts, self._totals, self._table, self._order = hosts, totals, table, order

    def _at(self, i: int) -> WeighedHost:
        return WeighedHost(self._hosts[i], self._totals[i], self._table, i)

    def __len__(self) -> int:
        return len(self._order)

    @overload
    def __getitem__(self, index: int) -> WeighedHost: ...

    @overload
    def __getitem__(self, index: slice) -> list[WeighedHost]: ...

    def __getitem__(self, index: int | slice) -> WeighedHost | list[WeighedHost]:
        if isinstance(index, slice):
            return [self._at(i) for i in self._order[index]]
        return self._at(self._order[index])

    def __iter__(self) -> Iterator[WeighedHost]:
        return map(self._at, self._order)


class _Scaled(Sequence[float]):
    """A weigher's column, `multiplier * (raw - low) / span` per host, worked out when
    read (only `WeighedHost.parts` reads it): the same floats as a list of them."""

    __slots__ = ("_raw", "_low", "_span", "_multiplier")

    def __init__(self, raw: list[float], low: float, span: float, multiplier: float) -> None:
        self._raw, self._low, self._span, self._multiplier = raw, low, span, multiplier

    def __len__(self) -> int:
        return len(self._raw)

    @overload
    def __getitem__(self, index: int) -> float: ...

    @overload
    def __getitem__(self, index: slice) -> list[float]: ...

    def __getitem__(self, index: int | slice) -> float | list[float]:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self._raw))[index]]
        return self._multiplier * ((self._raw[index] - self._low) / self._span)


class ResourceWeigher:
    """Free amount of one resource class; positive multiplier prefers the emptiest."""

    def __init__(self, name: str, rc: str, multiplier: float) -> None:
        self.name = name
        self.rc = rc
        self.multiplier = multiplier

    def raw(self, host: HostState, req: SchedulingRequest) -> float:
        return float(host.free(self.rc))

    def raw_all(self, hosts: Sequence[HostState], req: SchedulingRequest) -> list[float]:
        """`raw` of every host in one pass (1,000 candidates: one call, not 1,000)."""
        return free_amounts(hosts, self.rc)


class ServerGroupSoftAffinityWeigher:
    name = "ServerGroupSoftAffinityWeigher"
    multiplier = 1.0

    def applies(self, req: SchedulingRequest) -> bool:
        """False: every host weighs 0 (no soft-affinity group): nothing to weigh."""
        return req.group is not None and req.group.policy == "soft-affinity"

    def raw(self, host: HostState, req: SchedulingRequest) -> float:
        group = req.group
        if group is None or group.policy != "soft-affinity":
            return 0.0
        return float(group.per_host[host.host])


class ServerGroupSoftAntiAffinityWeigher:
    name = "ServerGroupSoftAntiAffinityWeigher"
    multiplier = -1.0

    def applies(self, req: SchedulingRequest) -> bool:
        """False: every host weighs 0 (no soft-anti-affinity group): nothing to weigh."""
        return req.group is not None and req.group.policy == "soft-anti-affinity"

    def raw(self, host: HostState, req: SchedulingRequest) -> float:
        group = req.group
        if group is None or group.policy != "soft-anti-affinity":
            return 0.0
        return float(group.per_host[host.host])


class CrossCellWeigher:
    """A move allowed to leave its cell stays in it unless told otherwise: hosts of the
    server's cell weigh 1 (scaled by the multiplier), the others 0. An operator drains
    a cell by giving its hosts' aggregates a lower (or negative) multiplier."""

    name = "CrossCellWeigher"

    def __init__(self, multiplier: float = 1000000.0) -> None:
        self.multiplier = multiplier

    def applies(self, req: SchedulingRequest) -> bool:
        """False: not a cross-cell move, every host weighs 0: nothing to weigh."""
        return req.cross_cell_from is not None

    def raw(self, host: HostState, req: SchedulingRequest) -> float:
        if req.cross_cell_from is None:
            return 0.0
        return 1.0 if host.cell == req.cross_cell_from else 0.0

    def multiplier_for(self, host: HostState) -> float:
        """The least of the host's aggregates' values when any parses, else the setting."""
        found = []
        for value in host.record.aggregate_metadata.get(CROSS_CELL_KEY, ()):
            try:
                found.append(float(value))
            except ValueError:
                LOG.warning("aggregate metadata %s=%r of %s is not a number; ignored",
                            CROSS_CELL_KEY, value, host.host)
        return min(found) if found else self.multiplier


def weighers_for(strategy: str, cross_cell_multiplier: float = 1000000.0) -> list[Weigher]:
    """The weigher stack of `[scheduler] weigher` = spread | pack."""
    if strategy not in (SPREAD, PACK):
        raise ValueError(f"unknown weigher strategy {strategy!r}; use spread or pack")
    sign = 1.0 if strategy == SPREAD else -1.0
    return [ResourceWeigher("RAMWeigher", "MEMORY_MB", sign),
            ResourceWeigher("CPUWeigher", "VCPU", sign),
            ResourceWeigher("DiskWeigher", "DISK_GB", sign),
            ServerGroupSoftAffinityWeigher(), ServerGroupSoftAntiAffinityWeigher(),
            CrossCellWeigher(cross_cell_multiplier)]


def weigh(hosts: Sequence[HostState], req: SchedulingRequest,
          weighers: Sequence[Weigher]) -> Ranking:
    """Hosts best first: highest total weight, then host and node name.

    Column by column: each weigher's raw values over the hosts, scaled to
    [0, 1] and multiplied, are added to the totals list by list (in weigher
    order, the same floats as a per-host sum), and no per-host object is made
    (`Ranking` makes them when read).
    """
    count = len(hosts)
    if not count:
        return Ranking(hosts, [], (), [])
    totals = [0.0] * count
    table: list[tuple[str, Sequence[float]]] = []
    for weigher in weighers:
        applies = getattr(weigher, "applies", None)
        raw: list[float] | None = None
        if applies is None or applies(req):
            raw_all = getattr(weigher, "raw_all", None)
            raw = (raw_all(hosts, req) if raw_all is not None
                   else [weigher.raw(h, req) for h in hosts])
        if raw is None or (low := min(raw)) == (high := max(raw)):
            # All equal scale to 0: the weigher adds nothing (most requests have no
            # group); only its part is recorded.
            table.append((weigher.name, [weigher.multiplier * 0.0] * count))
            continue
        span = high - low
        per_host = getattr(weigher, "multiplier_for", None)  # a multiplier per host
        if per_host is None:
            m = weigher.multiplier
            totals = [total + m * ((value - low) / span)
                      for total, value in zip(totals, raw, strict=True)]
            table.append((weigher.name, _Scaled(raw, low, span, m)))
            continue
        column = [per_host(h) * ((value - low) / span)
                  for h, value in zip(hosts, raw, strict=True)]
        totals = [total + part for total, part in zip(totals, column, strict=True)]
        table.append((weigher.name, column))
    return Ranking(hosts, totals, tuple(table), _best_first(hosts, totals))


def _best_first(hosts: Sequence[HostState], totals: list[float]) -> list[int]:
    """Indexes of `hosts` by total weight, highest first, ties by host and node name.

    Two stable sorts, the second on the weight alone: the hosts usually come in
    name order already (`build_host_states`), and then only the second runs.
    """
    order = list(range(len(hosts)))
    names = [h.record.order for h in hosts]
    if any(a > b for a, b in itertools.pairwise(names)):
        order.sort(key=names.__getitem__)
    lowest_first = [-total for total in totals]
    order.sort(key=lowest_first.__getitem__)
    return order
