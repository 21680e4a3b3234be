"""Attach a port to a running server, or detach one (os-interface): its resources on the host.

The API records the port's `instance_ports` row (its unique port id makes two
attaches of one port end with one PortInUse), the action and the accepted
journal entry in one transaction, then *calls* the conductor and answers
with the outcome, as Nova's API calls the compute service:

    attach_interface
      create_port      a `net_id` attach: the port compute creates (undo: deleted)
      port_request     the port's resource request read now, recorded on its row
      pick_candidate   a port with one: GET /allocation_candidates with its groups, each
                       `in_tree` the server's compute node (Nova's
                       `_allocate_port_resource_for_instance`); none: 400 "Failed to
                       allocate additional resources to instance X during interface attach"
      claim_port       the candidate's amounts merged into the instance's allocation at
                       its consumer generation (a stale one is read again and retried);
                       undo takes exactly those amounts out again
      bind_port        the agent plugs it (an SR-IOV port takes a VF of the PF its group
                       maps to), then the port is bound: device_id, binding:host_id,
                       binding:profile.allocation (+ the VF); undo: unplugged, unbound

    detach_interface   unplugged (its VF back), unbound -- deleted if compute created it --,
                       its amounts taken out of the instance's allocation, its row gone

A failed attach is undone step by step and its row removed; the caller gets
Nova's error. Recovery undoes an attach a crash cut off and does a detach
again: every step of both is idempotent (taking amounts out checks that the
instance still holds them).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from stowage.compute import instance_ports, services
from stowage.compute.conductor import ports
from stowage.compute.conductor.common import OnServer, Ops
from stowage.compute.conductor.tasks import Interrupted, Journal, Step, StepFailed, roll_back
from stowage.compute.conductor.tasks import run_steps as run
from stowage.compute.instance_ports import InstancePort
from stowage.compute.instances import Instance
from stowage.compute.port_requests import (
    PortRequest,
    from_port,
    placement_groups,
    profile_allocation,
)
from stowage.compute.port_requests import amounts as port_amounts
from stowage.compute.resources import PlacementRequest
from stowage.messaging import RemoteError
from stowage.placement.client import PlacementConflict, PlacementError

__all__ = ["STEPS", "check_attach", "attach_interface", "detach_interface", "recover_attach",
           "recover_detach", "InterfaceAttachFailed", "InterfaceAttachResourceAllocationFailed"]

LOG = logging.getLogger(__name__)
_RETRIES = 5
Amounts = dict[str, dict[str, int]]


class InterfaceAttachFailed(Exception):
    """The port could not be plugged or bound (Nova's 500)."""


class InterfaceAttachResourceAllocationFailed(Exception):
    """The server's host cannot give the port's resources (Nova's 400)."""


@dataclass
class Attach(OnServer):
    ops: Ops
    instance: Instance
    row: InstancePort
    node: str
    request: PortRequest | None = None
    candidate: dict[str, Any] | None = None
    created: bool = False
    group_map: dict[str, str] = field(default_factory=dict)

    def server_ports(self) -> ports.ServerPorts:
        return ports.ServerPorts(self.instance.uuid, [self.row],
                                 [self.request] if self.request is not None else [])

    def amounts(self) -> Amounts:
        return {rp: dict(a["resources"]) for rp, a in
                ((self.candidate or {}).get("allocations") or {}).items()}

    def resource_error(self) -> InterfaceAttachResourceAllocationFailed:
        return InterfaceAttachResourceAllocationFailed(
            f"Failed to allocate additional resources to instance {self.instance.uuid} "
            f"during interface attach")


class _AttachStep(Step):
    def __init__(self, state: Attach) -> None:
        self.s = state


class CreatePort(_AttachStep):
    name = "create_port"

    def execute(self) -> None:
        if self.s.row.port_id is not None:
            return
        # The new port joins the groups the server was booted with, as Nova's does.
        ports.create(self.s.ops, self.s.server_ports(), self.s.instance.project_id,
                     ports.boot_groups(self.s.ops, self.s.instance.uuid))
        self.s.created = True

    def rollback(self) -> None:
        with self.s.ops.db.read() as conn:
            rows = instance_ports.of_instance(conn, self.s.instance.uuid)
        row = next((r for r in rows if r.id == self.s.row.id), self.s.row)
        if row.created and row.port_id and self.s.ops.network is not None:
            self.s.ops.network.delete_port(row.port_id)


class PortRequestStep(_AttachStep):
    name = "port_request"

    def execute(self) -> None:
        found = ports.requests_of(self.s.ops, self.s.server_ports())
        request = found[0] if found else None
        self.s.request = request if request is not None and request.groups else None


def _candidate(ops: Ops, request: PortRequest, node: str) -> dict[str, Any] | None:
    """The first place in the node's tree where the port's groups fit; None: nowhere
    (a trait no provider has is nowhere too: Placement's 400 for it)."""
    query = PlacementRequest(placement_groups([request]),
                             same_subtree=[sorted(request.same_subtree)]
                             if request.same_subtree else [])
    params = query.query()
    params.extend((f"in_tree{g.id}", node) for g in request.groups)
    params.append(("limit", "1"))
    try:
        found = ops.placement.allocation_candidates(params)
    except PlacementError as exc:
        if exc.status == 400:
            return None
        raise
    requests = found.get("allocation_requests") or []
    return dict(requests[0]) if requests else None


class PickCandidate(_AttachStep):
    """Where on the server's host the port's groups fit (nothing is claimed yet)."""

    name = "pick_candidate"

    def execute(self) -> None:
        if self.s.request is None:
            return
        self.s.candidate = _candidate(self.s.ops, self.s.request, self.s.node)
        if self.s.candidate is None:
            raise self.s.resource_error()
        self.s.group_map = ports.mapping(self.s.ops, [self.s.request],
                                         {"allocation_request": self.s.candidate})


class ClaimPort(_AttachStep):
    name = "claim_port"

    def journal_detail(self) -> str | None:
        return json.dumps({"amounts": self.s.amounts()}) if self.s.candidate else None

    def execute(self) -> None:
        amounts = self.s.amounts()
        if amounts:
            put_in(self.s.ops, self.s.instance, amounts, self.s.resource_error)

    def rollback(self) -> None:
        amounts = self.s.amounts()
        if amounts:
            take_out(self.s.ops, self.s.instance, amounts, self.s.row.id)


class BindPort(_AttachStep):
    name = "bind_port"
    event = "compute_attach_interface"

    def event_host(self) -> str | None:
        return self.s.instance.host

    def execute(self) -> None:
        host = self.s.instance.host
        assert host is not None and self.s.row.port_id is not None
        vf = ports.vf_ports([self.s.request], self.s.group_map) if self.s.request else {}
        try:
            pci = self.s.ops.call_agent(host, "attach_interface",
                                        instance_uuid=self.s.instance.uuid,
                                        port_id=self.s.row.port_id,
                                        vf_provider=vf.get(self.s.row.port_id))
        except RemoteError as exc:
            raise InterfaceAttachFailed(
                f"Failed to attach network adapter device to {self.s.instance.uuid}") from exc
        try:
            ports.bind(self.s.ops, self.s.server_ports(), host, self.s.group_map,
                       {self.s.row.port_id: pci or {}}, self.s.gone)
        except Exception:
            self._unplug()
            raise

    def rollback(self) -> None:
        self._unplug()
        if self.s.row.port_id is not None and self.s.ops.network is not None:
            ports.unbind_port(self.s.ops.network, self.s.row.port_id)

    def _unplug(self) -> None:
        host = self.s.instance.host
        if host is not None and self.s.row.port_id is not None:
            self.s.ops.call_agent(host, "detach_interface", instance_uuid=self.s.instance.uuid,
                                  port_id=self.s.row.port_id)


# The attach's journaled steps, in order (the crash tests walk them).
STEPS = ("create_port", "port_request", "pick_candidate", "claim_port", "bind_port")


def _steps(state: Attach) -> list[Step]:
    return [CreatePort(state), PortRequestStep(state), PickCandidate(state), ClaimPort(state),
            BindPort(state)]


def _state(ops: Ops, instance_uuid: str, port_row: int) -> Attach:
    inst = ops.instance(instance_uuid)
    with ops.db.read() as conn:
        row = next(r for r in instance_ports.of_instance(conn, instance_uuid)
                   if r.id == port_row)
        node = services.compute_node_of_host(conn, inst.host or "")
    return Attach(ops, inst, row, node.uuid if node is not None else "")


def check_attach(ops: Ops, instance_uuid: str, port_id: str | None,
                 network_id: str | None) -> None:
    """What the API asks before it records an attach, so that a refusal changes nothing:
    a network whose QoS policy would give compute's port a resource request, or a port
    whose groups fit nowhere on the server's host (read only; the attach checks again)."""
    network = ports.require_network(ops)
    inst = ops.instance(instance_uuid)
    if network_id is not None:
        net = network.show_network(network_id) or {}
        if net.get("qos_policy_id"):
            raise ports.NetworksWithQoSPolicyNotSupported(
                f"Using networks with QoS policy is not supported for instance "
                f"{instance_uuid}. (Network ID is {network_id})")
        return
    port = network.show_port(port_id) if port_id is not None else None
    if port is None:
        return
    net = network.show_network(str(port["network_id"])) or {}
    request = from_port(port, net.get("provider:physical_network"))
    if not request.groups:
        return
    with ops.db.read() as conn:
        node = services.compute_node_of_host(conn, inst.host or "")
    if node is None or _candidate(ops, request, node.uuid) is None:
        raise InterfaceAttachResourceAllocationFailed(
            f"Failed to allocate additional resources to instance {instance_uuid} "
            f"during interface attach")


def attach_interface(ops: Ops, instance_uuid: str, port_row: int, journal: Journal) -> str:
    """Run the attach of the row `port_row`; its port id. A failure undoes every step,
    forgets the row and raises the cause (its type is what the API answers by)."""
    state = _state(ops, instance_uuid, port_row)
    try:
        run(_steps(state), journal, ops.finishing(instance_uuid))
    except StepFailed as exc:
        _forget_row(ops, state.row)
        ops.finish_action(instance_uuid, "Error")
        journal.close()
        cause = exc.cause
        if isinstance(cause, RemoteError) and cause.exc_type == "PortBindingFailed":
            raise InterfaceAttachFailed(cause.message) from cause
        raise cause from None
    assert state.row.port_id is not None
    return state.row.port_id


def recover_attach(ops: Ops, op: Interrupted, journal: Journal) -> None:
    """An attach a crash cut off is undone: the claim's recorded amounts taken out again."""
    assert op.instance_uuid is not None
    row_id = int(op.args["port_row"])
    with ops.db.read() as conn:
        rows = instance_ports.of_instance(conn, op.instance_uuid)
    row = next((r for r in rows if r.id == row_id), None)
    if row is None:
        return
    state = Attach(ops, ops.instance(op.instance_uuid), row, "")
    detail = op.detail("claim_port") or {}
    state.candidate = {"allocations": {rp: {"resources": res} for rp, res in
                                       (detail.get("amounts") or {}).items()}}
    roll_back(_steps(state), {s: st for s, (st, _) in op.steps.items()}, journal)
    _forget_row(ops, row)
    ops.finish_action(op.instance_uuid, "Error")


def _forget_row(ops: Ops, row: InstancePort) -> None:
    with ops.db.write() as conn:
        instance_ports.forget_port(conn, row.id)


# --- detach -------------------------------------------------------------------------
def detach_interface(ops: Ops, instance_uuid: str, port_id: str, journal: Journal) -> None:
    """Unplug, unbind (or delete), take the port's amounts out, forget the row (idempotent)."""
    inst = ops.instance_any(instance_uuid)
    with ops.db.read() as conn:
        row = next((r for r in instance_ports.of_instance(conn, instance_uuid)
                    if r.port_id == port_id), None)
    with ops.event(instance_uuid, "compute_detach_interface", inst.host):
        if inst.host:
            ops.call_agent(inst.host, "detach_interface", instance_uuid=instance_uuid,
                           port_id=port_id)
        amounts = _port_amounts(ops, inst, row, port_id)
        if ops.network is not None:
            if row is not None and row.created:
                ops.network.delete_port(port_id)
            else:
                ports.unbind_port(ops.network, port_id)
        if amounts:
            take_out(ops, inst, amounts, row.id if row is not None else None)
        if row is not None:
            _forget_row(ops, row)
    with journal.batch() as batch:
        ops.finishing(instance_uuid)(batch)


def recover_detach(ops: Ops, op: Interrupted, journal: Journal) -> None:
    """A detach a crash cut off is done again."""
    assert op.instance_uuid is not None
    detach_interface(ops, op.instance_uuid, str(op.args["port_id"]), journal)


def _port_amounts(ops: Ops, inst: Instance, row: InstancePort | None,
                  port_id: str) -> Amounts:
    """What the port holds of the instance's allocation, per provider: its request's
    groups on the providers its binding names (found in the allocation if it names none)."""
    if row is None or not row.request:
        return {}
    request = PortRequest.from_json(row.request)
    if not request.groups:
        return {}
    port = ops.network.show_port(port_id) if ops.network is not None else None
    group_map = _bound_map(request, (port or {}).get("binding:profile") or {})
    if group_map is None:
        try:
            group_map = ports.from_holding(ops, [request],
                                           ops.placement.holding(inst.uuid).allocations)
        except Exception:  # noqa: BLE001 - nothing of it is held: nothing to take out
            LOG.info("port %s of %s holds nothing to take out", port_id, inst.uuid)
            return {}
    found: Amounts = {}
    for group in request.groups:
        rp = found.setdefault(group_map[group.id], {})
        for rc, n in group.resources.items():
            rp[rc] = rp.get(rc, 0) + n
    return found


def _bound_map(request: PortRequest, profile: Mapping[str, Any]) -> dict[str, str] | None:
    """group id -> provider, as the port's `binding:profile.allocation` says (None: it
    says nothing usable)."""
    allocation = profile.get("allocation")
    if request.fmt == "legacy" and isinstance(allocation, str):
        return {g.id: allocation for g in request.groups}
    if isinstance(allocation, dict) and all(g.id in allocation for g in request.groups):
        found = {g.id: str(allocation[g.id]) for g in request.groups}
        return found if profile_allocation(request, found) == allocation else None
    return None


# --- the instance's allocation, a port's share in or out ---------------------------------
def port_amounts_of(amounts: Amounts) -> dict[str, int]:
    total: dict[str, int] = {}
    for res in amounts.values():
        for rc, n in res.items():
            total[rc] = total.get(rc, 0) + n
    return total


def put_in(ops: Ops, inst: Instance, amounts: Amounts,
           refused: Any = None) -> None:
    """Add `amounts` to what the instance holds, at its consumer generation; a stale
    generation is read again (Placement's way to retry). Too little room: `refused()`."""
    for _ in range(_RETRIES):
        held = ops.placement.holding(inst.uuid)
        merged = {rp: dict(res) for rp, res in held.allocations.items()}
        for rp, res in amounts.items():
            into = merged.setdefault(rp, {})
            for rc, n in res.items():
                into[rc] = into.get(rc, 0) + n
        try:
            ops.placement.claim(inst.uuid, merged, inst.project_id, inst.user_id,
                                held.generation)
            return
        except PlacementConflict as exc:
            if not exc.stale:
                raise (refused() if refused is not None else exc) from exc
    raise RemoteError("AllocationUpdateFailed",
                      f"Failed to update allocations for consumer {inst.uuid}: "
                      "its generation kept changing")


def _others(ops: Ops, instance_uuid: str, row_id: int | None) -> dict[str, int]:
    """What the server's other ports ask for in all, by class (their rows' requests)."""
    with ops.db.read() as conn:
        rows = instance_ports.of_instance(conn, instance_uuid)
    return port_amounts(PortRequest.from_json(r.request) for r in rows
                        if r.request and r.id != row_id)


def take_out(ops: Ops, inst: Instance, amounts: Amounts, row_id: int | None) -> None:
    """Take one port's `amounts` out of what the instance holds, but only what the
    server's other ports (all but row `row_id`) do not need: nothing when the claim
    never landed or was taken out already, so an undo done twice takes it once."""
    others = _others(ops, inst.uuid, row_id)
    for _ in range(_RETRIES):
        held = ops.placement.holding(inst.uuid)
        totals: dict[str, int] = {}
        for res in held.allocations.values():
            for rc, n in res.items():
                totals[rc] = totals.get(rc, 0) + n
        wanted = port_amounts_of(amounts)
        if any(totals.get(rc, 0) - n < others.get(rc, 0) for rc, n in wanted.items()):
            return
        left = {rp: dict(res) for rp, res in held.allocations.items()}
        for rp, res in amounts.items():
            for rc, n in res.items():
                if left.get(rp, {}).get(rc, 0) < n:
                    return
                left[rp][rc] -= n
        left = {rp: {rc: n for rc, n in res.items() if n > 0} for rp, res in left.items()}
        left = {rp: res for rp, res in left.items() if res}
        try:
            if left:
                ops.placement.claim(inst.uuid, left, inst.project_id, inst.user_id,
                                    held.generation)
            else:
                ops.placement.delete_allocations(inst.uuid)
            return
        except PlacementConflict as exc:
            if not exc.stale:
                raise
    raise RemoteError("AllocationUpdateFailed",
                      f"Failed to update allocations for consumer {inst.uuid}: "
                      "its generation kept changing")
