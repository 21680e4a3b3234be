"""Records rendered as Neutron renders them, less what the caller may not see.

Every record carries Neutron's standard attributes (`revision_number`,
`created_at`, `updated_at`, `description`) and both `project_id` and its old
name `tenant_id`. An attribute with a rule of its own (`get_network:provider:network_type`,
`get_port:binding:host_id`, ...; network/policy.py) is left out for a caller the rule
refuses.
"""

from __future__ import annotations

from typing import Any

from stowage.network import ports
from stowage.network.api.common import stamp
from stowage.network.bindings import PortBinding
from stowage.network.floating_ips import FloatingIp
from stowage.network.networks import Network
from stowage.network.policy import Guard
from stowage.network.ports import Port
from stowage.network.qos import RULE_TYPE, Policy, Rule
from stowage.network.routers import Router
from stowage.network.security_group_rules import Rule as GroupRule
from stowage.network.security_groups import Group
from stowage.network.subnetpools import Pool
from stowage.network.subnets import Subnet

__all__ = ["network", "subnet", "port", "binding", "qos_policy", "rule", "security_group",
           "security_group_rule", "router", "floating_ip", "subnetpool"]


def _standard(record: Any) -> dict[str, Any]:
    return {"tenant_id": record.project_id, "project_id": record.project_id,
            "description": record.description, "revision_number": record.revision_number,
            "created_at": stamp(record.created_at), "updated_at": stamp(record.updated_at)}


def network(n: Network, guard: Guard) -> dict[str, Any]:
    view = {"id": n.id, "name": n.name, "status": n.status,
            "admin_state_up": n.admin_state_up, "shared": n.shared, "mtu": n.mtu,
            "subnets": list(n.subnet_ids),
            "provider:network_type": n.segment.network_type,
            "provider:physical_network": n.segment.physical_network,
            "provider:segmentation_id": n.segment.segmentation_id,
            "qos_policy_id": n.qos_policy_id, "router:external": n.external, **_standard(n)}
    return guard.shown("get_network", view)


def subnet(s: Subnet) -> dict[str, Any]:
    return {"id": s.id, "name": s.name, "network_id": s.network_id,
            "ip_version": s.ip_version, "cidr": s.cidr, "gateway_ip": s.gateway_ip,
            "allocation_pools": list(s.allocation_pools), "enable_dhcp": s.enable_dhcp,
            "dns_nameservers": list(s.dns_nameservers), "host_routes": list(s.host_routes),
            "ipv6_ra_mode": None, "ipv6_address_mode": None, "subnetpool_id": s.subnetpool_id,
            **_standard(s)}


def port(p: Port, guard: Guard, resource_request: dict[str, Any] | None) -> dict[str, Any]:
    view = {"id": p.id, "name": p.name, "network_id": p.network_id,
            "mac_address": p.mac_address, "admin_state_up": p.admin_state_up,
            "status": p.status, "device_id": p.device_id, "device_owner": p.device_owner,
            "fixed_ips": [{"subnet_id": ip.subnet_id, "ip_address": ip.ip_address}
                          for ip in p.fixed_ips],
            "allowed_address_pairs": [dict(pair) for pair in p.address_pairs],
            "extra_dhcp_opts": [dict(option) for option in p.dhcp_options],
            "security_groups": list(p.security_groups),
            "binding:vnic_type": p.binding.vnic_type, "binding:host_id": p.binding.host,
            "binding:profile": dict(p.binding.profile),
            "binding:vif_type": p.binding.vif_type,
            "binding:vif_details": dict(p.binding.vif_details),
            "qos_policy_id": p.qos_policy_id,
            "qos_network_policy_id": p.network_qos_policy_id,
            "resource_request": resource_request, **_standard(p)}
    return guard.shown("get_port", view, ports.target(p))


def binding(b: PortBinding) -> dict[str, Any]:
    return {"host": b.host, "status": b.status, "vnic_type": b.vnic_type,
            "profile": dict(b.profile), "vif_type": b.vif_type,
            "vif_details": dict(b.vif_details)}


def rule(r: Rule, with_policy: bool = False) -> dict[str, Any]:
    view: dict[str, Any] = {"id": r.id, "min_kbps": r.min_kbps, "direction": r.direction}
    if with_policy:
        view.update(qos_policy_id=r.qos_policy_id, type=RULE_TYPE)
    return view


def qos_policy(q: Policy) -> dict[str, Any]:
    return {"id": q.id, "name": q.name, "shared": q.shared,
            "rules": [rule(r, with_policy=True) for r in q.rules], **_standard(q)}


def security_group_rule(r: GroupRule) -> dict[str, Any]:
    return {"id": r.id, "security_group_id": r.security_group_id, "direction": r.direction,
            "ethertype": r.ethertype, "protocol": r.protocol,
            "port_range_min": r.port_range_min, "port_range_max": r.port_range_max,
            "remote_ip_prefix": r.remote_ip_prefix, "remote_group_id": r.remote_group_id,
            **_standard(r)}


def security_group(g: Group) -> dict[str, Any]:
    return {"id": g.id, "name": g.name,
            "security_group_rules": [security_group_rule(r) for r in g.rules], **_standard(g)}


def router(r: Router) -> dict[str, Any]:
    gateway = None
    if r.gw_network_id is not None:
        gateway = {"network_id": r.gw_network_id, "enable_snat": r.enable_snat,
                   "external_fixed_ips": [{"subnet_id": ip.subnet_id,
                                           "ip_address": ip.ip_address} for ip in r.gw_ips]}
    return {"id": r.id, "name": r.name, "status": r.status,
            "admin_state_up": r.admin_state_up, "external_gateway_info": gateway,
            "routes": [dict(route) for route in r.routes], **_standard(r)}


def _port_details(p: Port | None) -> dict[str, Any] | None:
    if p is None:
        return None
    return {"name": p.name, "network_id": p.network_id, "mac_address": p.mac_address,
            "admin_state_up": p.admin_state_up, "status": p.status, "device_id": p.device_id,
            "device_owner": p.device_owner}


def floating_ip(f: FloatingIp, attached: Port | None) -> dict[str, Any]:
    return {"id": f.id, "floating_ip_address": f.floating_ip_address,
            "floating_network_id": f.floating_network_id, "router_id": f.router_id,
            "port_id": f.port_id, "fixed_ip_address": f.fixed_ip_address, "status": f.status,
            "port_details": _port_details(attached), **_standard(f)}


def subnetpool(p: Pool) -> dict[str, Any]:
    return {"id": p.id, "name": p.name, "ip_version": p.ip_version,
            "prefixes": list(p.prefixes), "default_prefixlen": p.default_prefixlen,
            "min_prefixlen": p.min_prefixlen, "max_prefixlen": p.max_prefixlen,
            "shared": p.shared, "is_default": p.is_default, "default_quota": p.default_quota,
            "address_scope_id": None, **_standard(p)}
