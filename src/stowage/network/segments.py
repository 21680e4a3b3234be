"""A network's one segment: its type, physnet and segmentation id (ML2's type drivers).

Each network has exactly one segment, given by the admin-only provider
attributes or, without them, taken from `[network] tenant_network_type`.
The rules are ML2's:

| type          | physical_network | segmentation_id                              |
|---------------|------------------|----------------------------------------------|
| flat          | required         | prohibited                                   |
| vlan          | required         | 1..4094, the lowest free one when omitted    |
| vxlan, geneve | prohibited       | 1..2^24-1, the lowest free one when omitted  |
| local         | prohibited       | prohibited                                   |

A segment is in use at most once: one network per flat physnet, per VLAN on
a physnet, per tunnel id. `key` names that claim; the unique index on
`networks.segment_key` settles concurrent creators.

ML2 allocates tenant VLANs from `network_vlan_ranges`; stowage has no ranges,
so a VLAN network always names its physnet.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.errors import DomainError
from stowage.network import errors as e
from stowage.network import tables as t

__all__ = ["NETWORK_TYPES", "TUNNEL_OVERHEAD", "Segment", "requested", "free_ids", "mtu",
           "in_use_error"]

NETWORK_TYPES = ("flat", "vlan", "vxlan", "geneve", "local")
MAX_ID = {"vlan": 4094, "vxlan": 2**24 - 1, "geneve": 2**24 - 1}
# Bytes a tunnel's encapsulation takes from the physical MTU (ML2's IPv4 figures).
TUNNEL_OVERHEAD = {"vxlan": 50, "geneve": 58}
PHYSNET_LENGTH = 64


@dataclass(frozen=True)
class Segment:
    network_type: str
    physical_network: str | None = None
    segmentation_id: int | None = None

    @property
    def key(self) -> str | None:
        """What this segment claims exclusively, or None (local networks claim nothing)."""
        if self.network_type == "flat":
            return f"flat:{self.physical_network}"
        if self.network_type == "vlan":
            return f"vlan:{self.physical_network}:{self.segmentation_id}"
        if self.network_type in MAX_ID:
            return f"{self.network_type}:{self.segmentation_id}"
        return None

    @property
    def needs_id(self) -> bool:
        return self.network_type in MAX_ID and self.segmentation_id is None


def _check_physnet(network_type: str, physnet: str | None) -> None:
    if network_type in ("flat", "vlan"):
        if not physnet:
            raise e.invalid_input(f"physical_network required for {network_type} provider "
                                  "network")
        if len(physnet) > PHYSNET_LENGTH:
            raise e.invalid_input(f"physical_network '{physnet}' exceeds the maximum length "
                                  f"of {PHYSNET_LENGTH}")
    elif physnet:
        raise e.invalid_input(f"provider:physical_network specified for {network_type} "
                              "network")


def _check_id(network_type: str, segmentation_id: int | None) -> None:
    if segmentation_id is None:
        return
    if network_type not in MAX_ID:
        raise e.invalid_input(f"segmentation_id prohibited for {network_type} provider "
                              "network")
    if not 1 <= segmentation_id <= MAX_ID[network_type]:
        raise e.invalid_input(f"segmentation_id out of range (1 through "
                              f"{MAX_ID[network_type]})")


def requested(provider: Mapping[str, Any], default_type: str) -> Segment:
    """The segment the provider attributes ask for (already type-checked by the API)."""
    network_type = provider.get("provider:network_type") or default_type
    if network_type not in NETWORK_TYPES:
        raise e.invalid_input(f"network_type value '{network_type}' not supported")
    physnet = provider.get("provider:physical_network") or None
    segmentation_id = provider.get("provider:segmentation_id")
    _check_physnet(network_type, physnet)
    _check_id(network_type, segmentation_id)
    return Segment(network_type, physnet, segmentation_id)


def free_ids(conn: Connection, segment: Segment, count: int) -> list[int]:
    """Up to `count` of the lowest ids of the segment's kind that no network holds."""
    n = t.networks
    # SELECT segmentation_id FROM networks
    #  WHERE network_type = :type [AND physical_network = :physnet]
    query = sa.select(n.c.segmentation_id).where(n.c.network_type == segment.network_type)
    if segment.network_type == "vlan":
        query = query.where(n.c.physical_network == segment.physical_network)
    taken = {row for row in conn.execute(query).scalars() if row is not None}
    found: list[int] = []
    candidate = 1
    while len(found) < count and candidate <= MAX_ID[segment.network_type]:
        if candidate not in taken:
            found.append(candidate)
        candidate += 1
    return found


def in_use_error(segment: Segment) -> DomainError:
    """The 409 Neutron answers when the segment is already some network's."""
    if segment.network_type == "flat":
        return e.in_use(e.FLAT_NETWORK_IN_USE, "Unable to create the flat network. Physical "
                        f"network {segment.physical_network} is in use.")
    if segment.network_type == "vlan":
        return e.in_use(e.VLAN_ID_IN_USE, f"Unable to create the network. The VLAN "
                        f"{segment.segmentation_id} on physical network "
                        f"{segment.physical_network} is in use.")
    return e.in_use(e.TUNNEL_ID_IN_USE, "Unable to create the network. The tunnel ID "
                    f"{segment.segmentation_id} is in use.")


def mtu(segment: Segment, physnet_mtu: int) -> int:
    """The largest MTU the segment carries: the physical one less any tunnel overhead."""
    return physnet_mtu - TUNNEL_OVERHEAD.get(segment.network_type, 0)
