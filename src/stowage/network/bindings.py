"""Port bindings (extensions `binding` and `binding-extended`): where a port is plugged.

Each port has exactly one ACTIVE binding, whose host is '' while the port
is bound nowhere; the port's `binding:*` attributes are that binding's. A
server's port (device_owner compute:*) may also have INACTIVE bindings, one
per other host, which is how a live migration prepares its destination::

    POST   /ports/P/bindings {"binding": {"host": "dest", ...}}  dest: INACTIVE
    PUT    /ports/P/bindings/dest/activate                       dest: ACTIVE, src: INACTIVE
    DELETE /ports/P/bindings/src                                 src: gone

Rules, as Neutron's ML2 plugin has them:

- the sub-resource serves compute ports only (400 otherwise);
- a second binding for a host is 409 PortBindingAlreadyExists;
- activating the active host is 409 PortBindingAlreadyActive; a host
  without an inactive binding is 404 PortBindingNotFound;
- a binding that no driver can bind (see `mechanism`) is not stored: 500
  PortBindingError;
- deleting the active binding leaves the port unbound (its active binding
  becomes the host-less one), so that a port never lacks an active binding.
  An unbound active binding that an activation replaces is dropped.

All changes here run inside the port's locked write (see `ports.locked`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.errors import DomainError
from stowage.network import errors as e
from stowage.network import mechanism
from stowage.network import tables as t
from stowage.network.segments import Segment

__all__ = ["PortBinding", "ACTIVE", "INACTIVE", "COMPUTE_OWNER", "of_ports", "for_port",
           "add_active", "rebind_active", "add_inactive", "update_host", "activate",
           "remove", "find", "require_compute_port"]

ACTIVE = "ACTIVE"
INACTIVE = "INACTIVE"
COMPUTE_OWNER = "compute:"
_B = t.port_bindings


@dataclass
class PortBinding:
    port_id: str
    host: str
    status: str
    vnic_type: str
    profile: dict[str, Any] = field(default_factory=dict)
    vif_type: str = mechanism.VIF_UNBOUND
    vif_details: dict[str, Any] = field(default_factory=dict)

    @property
    def bound(self) -> bool:
        return self.vif_type not in (mechanism.VIF_UNBOUND, mechanism.VIF_BINDING_FAILED)


def _to_binding(row: Any) -> PortBinding:
    return PortBinding(row.port_id, row.host, row.status, row.vnic_type, dict(row.profile),
                       row.vif_type, dict(row.vif_details))


def of_ports(conn: Connection, port_ids: Sequence[str]) -> dict[str, list[PortBinding]]:
    """Every binding of each port, the active one first, then by host."""
    found: dict[str, list[PortBinding]] = {pid: [] for pid in port_ids}
    if not port_ids:
        return found
    rows = conn.execute(sa.select(_B).where(_B.c.port_id.in_(list(port_ids))))
    for row in rows:
        found[row.port_id].append(_to_binding(row))
    for bindings in found.values():
        bindings.sort(key=lambda b: (b.status != ACTIVE, b.host))
    return found


def for_port(conn: Connection, port_id: str) -> list[PortBinding]:
    return of_ports(conn, [port_id])[port_id]


def _bound(port_id: str, host: str, status: str, vnic_type: str, profile: Mapping[str, Any],
           segment: Segment) -> PortBinding:
    outcome = mechanism.bind(host, vnic_type, segment.network_type, segment.segmentation_id)
    return PortBinding(port_id, host, status, vnic_type, dict(profile), outcome.vif_type,
                       outcome.vif_details)


def _row(binding: PortBinding) -> dict[str, Any]:
    return {"port_id": binding.port_id, "host": binding.host, "status": binding.status,
            "vnic_type": binding.vnic_type, "profile": binding.profile,
            "vif_type": binding.vif_type, "vif_details": binding.vif_details}


def _exists(port_id: str, host: str) -> DomainError:
    return e.in_use(e.PORT_BINDING_EXISTS,
                    f"Binding for port {port_id} on host {host} already exists.")


def _not_found(port_id: str, host: str) -> DomainError:
    return e.not_found(e.PORT_BINDING_NOT_FOUND,
                       f"Binding for port {port_id} for host {host} could not be found.")


def find(bindings: Sequence[PortBinding], host: str, port_id: str) -> PortBinding:
    for binding in bindings:
        if binding.host == host:
            return binding
    raise _not_found(port_id, host)


def require_compute_port(port_id: str, device_owner: str) -> None:
    if not device_owner.startswith(COMPUTE_OWNER):
        raise e.bad_request("port", f"Invalid port {port_id}. Operation only valid on "
                                    "compute ports")


def add_active(conn: Connection, port_id: str, host: str, vnic_type: str,
               profile: Mapping[str, Any], segment: Segment) -> None:
    """A new port's binding: bound when it names a host, unbound ('') otherwise."""
    conn.execute(_B.insert().values(**_row(_bound(port_id, host, ACTIVE, vnic_type, profile,
                                                  segment))))


def rebind_active(conn: Connection, active: PortBinding, others: Sequence[PortBinding],
                  changes: Mapping[str, Any], segment: Segment) -> None:
    """Rewrite the active binding after `binding:host_id/vnic_type/profile` changed."""
    host = changes.get("host", active.host)
    if host != active.host and any(b.host == host for b in others if b is not active):
        raise _exists(active.port_id, host)
    new = _bound(active.port_id, host, ACTIVE, changes.get("vnic_type", active.vnic_type),
                 changes.get("profile", active.profile), segment)
    conn.execute(_B.update().where(_B.c.port_id == active.port_id, _B.c.host == active.host)
                 .values(**_row(new)))


def _failed(port_id: str, host: str) -> DomainError:
    return e.StatusError(500, f"Binding for port {port_id} on host {host} could not be "
                              "created or updated.", e.PORT_BINDING_ERROR)


def add_inactive(conn: Connection, port_id: str, bindings: Sequence[PortBinding], host: str,
                 vnic_type: str, profile: Mapping[str, Any], segment: Segment) -> PortBinding:
    if any(b.host == host for b in bindings):
        raise _exists(port_id, host)
    new = _bound(port_id, host, INACTIVE, vnic_type, profile, segment)
    if not new.bound:
        raise _failed(port_id, host)
    conn.execute(_B.insert().values(**_row(new)))
    return new


def update_host(conn: Connection, binding: PortBinding, changes: Mapping[str, Any],
                segment: Segment) -> PortBinding:
    """Change one binding's vnic type or profile; an inactive one must still bind."""
    new = _bound(binding.port_id, binding.host, binding.status,
                 changes.get("vnic_type", binding.vnic_type),
                 changes.get("profile", binding.profile), segment)
    if binding.status == INACTIVE and not new.bound:
        raise _failed(binding.port_id, binding.host)
    conn.execute(_B.update().where(_B.c.port_id == binding.port_id, _B.c.host == binding.host)
                 .values(**_row(new)))
    return new


def activate(conn: Connection, port_id: str, bindings: Sequence[PortBinding],
             host: str) -> PortBinding:
    """Make the host's inactive binding the active one; the old one becomes inactive."""
    active = next(b for b in bindings if b.status == ACTIVE)
    if active.host == host:
        raise e.in_use(e.PORT_BINDING_ACTIVE,
                       f"Binding for port {port_id} on host {host} is already active.")
    target = next((b for b in bindings if b.host == host and b.status == INACTIVE), None)
    if target is None:
        raise _not_found(port_id, host)
    if active.host:
        conn.execute(_B.update().where(_B.c.port_id == port_id, _B.c.host == active.host)
                     .values(status=INACTIVE))
    else:
        conn.execute(_B.delete().where(_B.c.port_id == port_id, _B.c.host == ""))
    conn.execute(_B.update().where(_B.c.port_id == port_id, _B.c.host == host)
                 .values(status=ACTIVE))
    target.status = ACTIVE
    return target


def remove(conn: Connection, port_id: str, bindings: Sequence[PortBinding],
           host: str) -> None:
    """Delete the host's binding; the active one gives way to an unbound active binding."""
    binding = find(bindings, host, port_id)
    conn.execute(_B.delete().where(_B.c.port_id == port_id, _B.c.host == host))
    if binding.status == ACTIVE and host:
        conn.execute(_B.insert().values(**_row(PortBinding(
            port_id, "", ACTIVE, binding.vnic_type))))
