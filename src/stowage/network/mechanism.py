"""How a port binds on a host: the vif type and details that ML2's drivers would report.

stowage runs no L2 agents. Binding is decided as if every host ran the two
agents Nova's bandwidth and SR-IOV features are exercised with:

| vnic type                        | bound by       | on network types | vif type           |
|----------------------------------|----------------|------------------|--------------------|
| normal                           | Open vSwitch   | any              | `ovs`              |
| direct, macvtap                  | SR-IOV NIC     | flat, vlan       | `hw_veb`           |
| direct-physical                  | SR-IOV NIC     | flat, vlan       | `hostdev_physical` |
| anything else, or a tunnel net   | nobody         |                  | `binding_failed`   |

A binding without a host is `unbound`. Which host really has which device is
Placement's business (the device providers and their traits), not this
module's: a binding never fails because of the host name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["VNIC_TYPES", "VIF_UNBOUND", "VIF_BINDING_FAILED", "Binding", "bind"]

# neutron-lib's portbindings.VNIC_TYPES, in its order.
VNIC_TYPES = ("normal", "direct", "macvtap", "baremetal", "direct-physical",
              "virtio-forwarder", "smart-nic", "vdpa", "accelerator-direct",
              "accelerator-direct-physical", "remote-managed")
VIF_UNBOUND = "unbound"
VIF_BINDING_FAILED = "binding_failed"
_SRIOV_VIF = {"direct": "hw_veb", "macvtap": "hw_veb", "direct-physical": "hostdev_physical"}
_SRIOV_NETWORK_TYPES = ("flat", "vlan")


@dataclass(frozen=True)
class Binding:
    vif_type: str
    vif_details: dict[str, Any]

    @property
    def bound(self) -> bool:
        return self.vif_type not in (VIF_UNBOUND, VIF_BINDING_FAILED)


def _ovs() -> Binding:
    return Binding("ovs", {"port_filter": True, "connectivity": "l2", "bridge_name": "br-int",
                           "datapath_type": "system", "ovs_hybrid_plug": False})


def bind(host: str, vnic_type: str, network_type: str,
         segmentation_id: int | None) -> Binding:
    """The outcome of binding a port of `vnic_type` on `host` to a network segment."""
    if not host:
        return Binding(VIF_UNBOUND, {})
    if vnic_type == "normal":
        return _ovs()
    if vnic_type in _SRIOV_VIF and network_type in _SRIOV_NETWORK_TYPES:
        return Binding(_SRIOV_VIF[vnic_type], {"port_filter": False, "connectivity": "l2",
                                               "vlan": str(segmentation_id or 0)})
    return Binding(VIF_BINDING_FAILED, {})
