"""The scheduling request: the conductor's request spec, read once, and its Placement query.

`SchedulingRequest.from_spec` turns the JSON spec that crosses the RPC seam
into typed fields with defaults, so that filters and weighers never poke at
dict keys. `candidate_query` is the `GET /allocation_candidates` query string:
the flavor's (and image's) request groups, the forbidden
`COMPUTE_STATUS_DISABLED` trait that Nova's disabled-compute pre-filter adds,
`in_tree` when a destination was requested, `member_of` the aggregates of a
requested zone and of the project (the pre-filters), and the result limit. The
server's ports add their request groups (`port_requests`: one suffixed group
per port group, and their `same_subtree` lists).
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from stowage.compute import port_requests, resources

__all__ = ["SchedulingRequest", "RequestedDestination", "GroupState", "MoveSource",
           "candidate_query", "DISABLED_TRAIT"]

# Set by the agent on its compute node provider while its service is disabled.
DISABLED_TRAIT = "COMPUTE_STATUS_DISABLED"


@dataclass(frozen=True)
class RequestedDestination:
    host: str
    node: str | None = None


@dataclass(frozen=True)
class MoveSource:
    """A resize or migration: what the instance holds now, which its migration takes over
    in the same write that claims the destination (`generation`: the instance's, as read)."""

    migration_uuid: str
    allocations: dict[str, dict[str, int]]
    generation: int | None

    @classmethod
    def from_spec(cls, raw: Mapping[str, Any] | None) -> MoveSource | None:
        if not raw:
            return None
        allocations = {str(rp): {str(rc): int(n) for rc, n in res.items()}
                       for rp, res in (raw.get("allocations") or {}).items()}
        generation = raw.get("generation")
        return cls(str(raw["migration_uuid"]), allocations,
                   None if generation is None else int(generation))


@dataclass
class GroupState:
    """The request's server group: its policy and how many members each host runs.

    `per_host` excludes the instances being scheduled (on a move the instance
    must not count against itself) and grows as this request places them.
    """

    uuid: str
    policy: str
    max_server_per_host: int = 1
    per_host: Counter[str] = field(default_factory=Counter)

    def place(self, host: str) -> None:
        self.per_host[host] += 1

    def hosts(self) -> list[str]:
        return sorted(h for h, n in self.per_host.items() if n > 0)


@dataclass
class SchedulingRequest:
    instance_uuids: list[str]
    project_id: str
    user_id: str
    flavor: dict[str, Any]
    placement: resources.PlacementRequest
    # alias -> count of PCI devices each instance needs (claimed by the agent, not Placement).
    pci_requests: dict[str, int] = field(default_factory=dict)
    availability_zone: str | None = None
    ignore_hosts: frozenset[str] = frozenset()
    destination: RequestedDestination | None = None
    group_uuid: str | None = None
    # Loaded by the scheduler from the server_groups table when group_uuid is set.
    group: GroupState | None = None
    # A resize or migration: the moving instance does not count against its own group.
    move: bool = False
    # The source its migration takes over when the destination is claimed (a move).
    move_source: MoveSource | None = None
    # Only hosts of this cell (a cell uuid), as a cell's conductor asks for its moves;
    # None: any cell's (a build).
    cell: str | None = None
    # A move that may leave its cell: the uuid of the cell it starts in (CrossCellWeigher).
    cross_cell_from: str | None = None

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any], instance_uuids: list[str]
                  ) -> SchedulingRequest:
        flavor = dict(spec["flavor"])
        image = spec.get("image") or {}
        hints = spec.get("scheduler_hints") or {}
        dest = spec.get("requested_destination") or None
        placement = resources.placement_request(
            flavor, bool(spec.get("is_volume_backed")), image.get("properties") or {})
        _add_ports(placement, spec.get("port_requests") or ())
        return cls(
            instance_uuids=list(instance_uuids) or [str(spec["instance_uuid"])],
            project_id=str(spec["project_id"]),
            user_id=str(spec["user_id"]),
            flavor=flavor,
            placement=placement,
            pci_requests=resources.pci_requests(flavor),
            availability_zone=spec.get("availability_zone") or None,
            ignore_hosts=frozenset(spec.get("ignore_hosts") or ()),
            destination=(RequestedDestination(str(dest["host"]), dest.get("node") or None)
                         if dest and dest.get("host") else None),
            group_uuid=spec.get("instance_group") or _hint(hints.get("group")),
            move=bool(spec.get("move")),
            move_source=MoveSource.from_spec(spec.get("move_source")),
            cell=spec.get("cell") or None,
            cross_cell_from=spec.get("cross_cell_from") or None,
        )

    def amounts(self) -> dict[str, int]:
        return self.placement.amounts()


def _add_ports(placement: resources.PlacementRequest, raw: Any) -> None:
    """The ports' groups join the flavor's, suffixed by their requester ids (Nova's
    "groups from outside"); with two suffixed groups or more and no policy in the
    flavor, `query()` sends group_policy=none, as Nova defaults it for port groups."""
    requests = [port_requests.PortRequest.from_json(r) for r in raw]
    placement.groups.update(port_requests.placement_groups(requests))
    placement.same_subtree.extend(port_requests.same_subtrees(requests))


def _hint(value: Any) -> str | None:
    """Scheduler hints arrive as a string or (from the API's multi-value form) a list."""
    if isinstance(value, list):
        value = value[0] if value else None
    return str(value) if value else None


def candidate_query(req: SchedulingRequest, limit: int, in_tree: str | None = None,
                    member_of: Sequence[Sequence[str]] = ()) -> list[tuple[str, str]]:
    """Query parameters of `GET /allocation_candidates` for one instance of `req`;
    `member_of`: lists of aggregates (the requested zone's, the project's) the
    unnumbered group's providers (the compute node) must be in one of, each."""
    placement = copy.deepcopy(req.placement)
    placement.groups.setdefault("", resources.RequestGroup()).forbidden.add(DISABLED_TRAIT)
    params = placement.query()
    if in_tree:
        # Every request group must land in the requested host's tree (Placement 1.31).
        params.extend((f"in_tree{suffix}", in_tree) for suffix in sorted(placement.groups))
    params.extend(("member_of", "in:" + ",".join(sorted(uuids))) for uuids in member_of)
    params.append(("limit", str(limit)))
    return params
