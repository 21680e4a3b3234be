"""SQLAlchemy Core tables of the Network service.

Who references whom (arrows point at the referenced table)::

    qos_minimum_bandwidth_rules ──► qos_policies ◄── networks ◄── subnets
                                         ▲              ▲            ▲
                                         └──── ports ───┘            │
                                                ▲                    │
                            port_bindings ──────┤                    │
                            ip_allocations ─────┘────────────────────┘

The constraints carry the rules that concurrent writers must not break:

- `networks.segment_key` is unique: no two networks share a flat physnet, a
  VLAN on a physnet, or a tunnel id (NULL for `local` networks).
- `ports (network_id, mac_address)` is unique: a MAC once per network.
- `ip_allocations (subnet_id, ip_address)` is the primary key: an address is
  handed out once per subnet, whoever asks at the same moment.
- `port_bindings (port_id, host)` is the primary key: one binding per host.
- A QoS policy referenced by a network or a port cannot be deleted (RESTRICT).
- `default_security_groups.project_id` is the primary key: one `default`
  security group per project, however many requests create it at once.
- `security_group_rules.rule_key` is unique: a rule (direction, ethertype,
  protocol, ports, remote) once per group.
- A security group that a port uses (`port_security_groups`) cannot be
  deleted (RESTRICT); deleting one removes the rules naming it as their
  remote group (CASCADE), as in Neutron.
- `network_quotas (project_id, resource)` is the primary key: one limit per
  project and resource; `network_quota_holds.project_id` is the row every
  creator of a limited record locks before counting (see quotas.py).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

from stowage.placement.tables import exact_string

__all__ = ["metadata", "qos_policies", "qos_minimum_bandwidth_rules", "networks", "subnets",
           "ports", "port_bindings", "ip_allocations", "security_groups",
           "default_security_groups", "security_group_rules", "port_security_groups",
           "network_quotas", "network_quota_holds", "routers", "floatingips", "network_tags",
           "port_address_pairs", "port_dhcp_options", "subnetpools", "subnetpool_allocations",
           "network_agents"]

metadata = sa.MetaData()


# Microseconds on MySQL too: records list in creation order, and a second is too coarse.
_STAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")


def _standard() -> list[sa.Column[Any]]:
    """Neutron's standard attributes: revision number and timestamps."""
    return [sa.Column("revision_number", sa.BigInteger, nullable=False, default=0),
            sa.Column("created_at", _STAMP, nullable=False),
            sa.Column("updated_at", _STAMP, nullable=False)]


qos_policies = sa.Table(
    "qos_policies", metadata,
    sa.Column("id", exact_string(36), primary_key=True),
    sa.Column("project_id", exact_string(255), nullable=False),
    sa.Column("name", exact_string(255), nullable=False),
    sa.Column("description", sa.String(255), nullable=False),
    sa.Column("shared", sa.Boolean, nullable=False),
    *_standard(),
)

qos_minimum_bandwidth_rules = sa.Table(
    "qos_minimum_bandwidth_rules", metadata,
    sa.Column("id", exact_string(36), primary_key=True),
    sa.Column("qos_policy_id", exact_string(36),
              sa.ForeignKey("qos_policies.id", ondelete="CASCADE"), nullable=False),
    sa.Column("min_kbps", sa.BigInteger, nullable=False),
    sa.Column("direction", sa.String(16), nullable=False),
    sa.UniqueConstraint("qos_policy_id", "direction", name="uniq_qos_min_bw_policy_direction"),
)

networks = sa.Table(
    "networks", metadata,
    sa.Column("id", exact_string(36), primary_key=True),
    sa.Column("project_id", exact_string(255), nullable=False),
    sa.Column("name", exact_string(255), nullable=False),
    sa.Column("description", sa.String(255), nullable=False),
    sa.Column("admin_state_up", sa.Boolean, nullable=False),
    sa.Column("shared", sa.Boolean, nullable=False),
    sa.Column("mtu", sa.Integer, nullable=False),
    sa.Column("network_type", sa.String(32), nullable=False),
    sa.Column("physical_network", exact_string(64), nullable=True),
    sa.Column("segmentation_id", sa.Integer, nullable=True),
    sa.Column("segment_key", exact_string(128), nullable=True),
    sa.Column("qos_policy_id", exact_string(36), sa.ForeignKey("qos_policies.id"),
              nullable=True),
    # Extension external-net: routers may have their gateway here, floating IPs come from it.
    sa.Column("router_external", sa.Boolean, nullable=False, default=False,
              server_default=sa.false()),
    *_standard(),
    sa.UniqueConstraint("segment_key", name="uniq_networks_segment_key"),
)

subnets = sa.Table(
    "subnets", metadata,
    sa.Column("id", exact_string(36), primary_key=True),
    sa.Column("network_id", exact_string(36), sa.ForeignKey("networks.id"), nullable=False),
    sa.Column("project_id", exact_string(255), nullable=False),
    sa.Column("name", exact_string(255), nullable=False),
    sa.Column("description", sa.String(255), nullable=False),
    sa.Column("ip_version", sa.Integer, nullable=False),
    sa.Column("cidr", sa.String(64), nullable=False),
    sa.Column("gateway_ip", sa.String(64), nullable=True),
    sa.Column("allocation_pools", sa.JSON, nullable=False),
    sa.Column("enable_dhcp", sa.Boolean, nullable=False),
    sa.Column("dns_nameservers", sa.JSON, nullable=False),
    sa.Column("host_routes", sa.JSON, nullable=False),
    *_standard(),
)

ports = sa.Table(
    "ports", metadata,
    sa.Column("id", exact_string(36), primary_key=True),
    sa.Column("network_id", exact_string(36), sa.ForeignKey("networks.id"), nullable=False),
    sa.Column("project_id", exact_string(255), nullable=False),
    sa.Column("name", exact_string(255), nullable=False),
    sa.Column("description", sa.String(255), nullable=False),
    sa.Column("mac_address", exact_string(32), nullable=False),
    sa.Column("admin_state_up", sa.Boolean, nullable=False),
    sa.Column("device_id", exact_string(255), nullable=False),
    sa.Column("device_owner", exact_string(255), nullable=False),
    sa.Column("qos_policy_id", exact_string(36), sa.ForeignKey("qos_policies.id"),
              nullable=True),
    *_standard(),
    sa.UniqueConstraint("network_id", "mac_address", name="uniq_ports_network_mac"),
)

port_bindings = sa.Table(
    "port_bindings", metadata,
    sa.Column("port_id", exact_string(36), sa.ForeignKey("ports.id", ondelete="CASCADE"),
              primary_key=True),
    # '' while the port is bound to no host, as Neutron keeps it.
    sa.Column("host", exact_string(255), primary_key=True),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("vnic_type", sa.String(64), nullable=False),
    sa.Column("profile", sa.JSON, nullable=False),
    sa.Column("vif_type", sa.String(64), nullable=False),
    sa.Column("vif_details", sa.JSON, nullable=False),
)

ip_allocations = sa.Table(
    "ip_allocations", metadata,
    sa.Column("subnet_id", exact_string(36), sa.ForeignKey("subnets.id"), primary_key=True),
    sa.Column("ip_address", sa.String(64), primary_key=True),
    sa.Column("port_id", exact_string(36), sa.ForeignKey("ports.id", ondelete="CASCADE"),
              nullable=False),
    sa.Column("network_id", exact_string(36), nullable=False),
    sa.Index("ix_ip_allocations_port", "port_id"),
)

security_groups = sa.Table(
    "security_groups", metadata,
    sa.Column("id", exact_string(36), primary_key=True),
    sa.Column("project_id", exact_string(255), nullable=False),
    sa.Column("name", exact_string(255), nullable=False),
    sa.Column("description", sa.String(255), nullable=False),
    *_standard(),
    sa.Index("ix_security_groups_project", "project_id"),
)

default_security_groups = sa.Table(
    "default_security_groups", metadata,
    sa.Column("project_id", exact_string(255), primary_key=True),
    sa.Column("security_group_id", exact_string(36),
              sa.ForeignKey("security_groups.id", ondelete="CASCADE"), nullable=False),
)

security_group_rules = sa.Table(
    "security_group_rules", metadata,
    sa.Column("id", exact_string(36), primary_key=True),
    sa.Column("security_group_id", exact_string(36),
              sa.ForeignKey("security_groups.id", ondelete="CASCADE"), nullable=False),
    sa.Column("project_id", exact_string(255), nullable=False),
    sa.Column("description", sa.String(255), nullable=False),
    sa.Column("direction", sa.String(16), nullable=False),
    sa.Column("ethertype", sa.String(8), nullable=False),
    sa.Column("protocol", sa.String(40), nullable=True),
    sa.Column("port_range_min", sa.Integer, nullable=True),
    sa.Column("port_range_max", sa.Integer, nullable=True),
    sa.Column("remote_ip_prefix", sa.String(64), nullable=True),
    sa.Column("remote_group_id", exact_string(36),
              sa.ForeignKey("security_groups.id", ondelete="CASCADE"), nullable=True),
    # Every matching attribute of the rule in one string: the duplicate check.
    sa.Column("rule_key", exact_string(255), nullable=False),
    *_standard(),
    sa.UniqueConstraint("rule_key", name="uniq_security_group_rules_key"),
    sa.Index("ix_security_group_rules_group", "security_group_id"),
)

port_security_groups = sa.Table(
    "port_security_groups", metadata,
    sa.Column("port_id", exact_string(36), sa.ForeignKey("ports.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("security_group_id", exact_string(36), sa.ForeignKey("security_groups.id"),
              primary_key=True),
    sa.Index("ix_port_security_groups_group", "security_group_id"),
)

network_quotas = sa.Table(
    "network_quotas", metadata,
    sa.Column("project_id", exact_string(255), primary_key=True),
    sa.Column("resource", exact_string(255), primary_key=True),
    sa.Column("hard_limit", sa.Integer, nullable=False),
)

network_quota_holds = sa.Table(
    "network_quota_holds", metadata,
    sa.Column("project_id", exact_string(255), primary_key=True),
    # Bumped by every hold, so the UPDATE that takes the row lock always changes it.
    sa.Column("holds", sa.BigInteger, nullable=False),
)

routers = sa.Table(
    "routers", metadata,
    sa.Column("id", exact_string(36), primary_key=True),
    sa.Column("project_id", exact_string(255), nullable=False),
    sa.Column("name", exact_string(255), nullable=False),
    sa.Column("description", sa.String(255), nullable=False),
    sa.Column("admin_state_up", sa.Boolean, nullable=False),
    # The gateway: a port (device_owner network:router_gateway) on an external network.
    sa.Column("gw_port_id", exact_string(36), sa.ForeignKey("ports.id"), nullable=True),
    sa.Column("gw_network_id", exact_string(36), nullable=True),
    sa.Column("enable_snat", sa.Boolean, nullable=False),
    # Extension extraroute: [{"destination", "nexthop"}].
    sa.Column("routes", sa.JSON, nullable=False),
    *_standard(),
    sa.Index("ix_routers_project", "project_id"),
)

floatingips = sa.Table(
    "floatingips", metadata,
    sa.Column("id", exact_string(36), primary_key=True),
    sa.Column("project_id", exact_string(255), nullable=False),
    sa.Column("description", sa.String(255), nullable=False),
    sa.Column("floating_network_id", exact_string(36), sa.ForeignKey("networks.id"),
              nullable=False),
    # The port holding the address (device_owner network:floatingip); deleted with it.
    sa.Column("floating_port_id", exact_string(36),
              sa.ForeignKey("ports.id", ondelete="CASCADE"), nullable=False),
    sa.Column("floating_ip_address", sa.String(64), nullable=False),
    # The association: a fixed IP of a port, reached through router_id.
    sa.Column("fixed_port_id", exact_string(36),
              sa.ForeignKey("ports.id", ondelete="SET NULL"), nullable=True),
    sa.Column("fixed_ip_address", sa.String(64), nullable=True),
    sa.Column("router_id", exact_string(36), sa.ForeignKey("routers.id"), nullable=True),
    *_standard(),
    # One floating IP per fixed IP of a port and external network, whoever associates at
    # the same moment.
    sa.UniqueConstraint("floating_network_id", "fixed_port_id", "fixed_ip_address",
                        name="uniq_floatingips_fixed_port_ip"),
    sa.Index("ix_floatingips_project", "project_id"),
    sa.Index("ix_floatingips_router", "router_id"),
)

network_tags = sa.Table(
    "network_tags", metadata,
    # The collection's name in the API: networks, subnets, ports, security_groups, ...
    sa.Column("resource", exact_string(32), primary_key=True),
    sa.Column("resource_id", exact_string(36), primary_key=True),
    sa.Column("tag", exact_string(255), primary_key=True),
)

port_address_pairs = sa.Table(
    "port_address_pairs", metadata,
    sa.Column("port_id", exact_string(36), sa.ForeignKey("ports.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("ip_address", exact_string(64), primary_key=True),
    sa.Column("mac_address", exact_string(32), primary_key=True),
    # The pair's place in the list the client sent: shown in that order.
    sa.Column("position", sa.Integer, nullable=False),
)

port_dhcp_options = sa.Table(
    "port_dhcp_options", metadata,
    sa.Column("port_id", exact_string(36), sa.ForeignKey("ports.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("opt_name", exact_string(64), primary_key=True),
    sa.Column("ip_version", sa.Integer, primary_key=True),
    sa.Column("opt_value", sa.String(255), nullable=False),
)

subnetpools = sa.Table(
    "subnetpools", metadata,
    sa.Column("id", exact_string(36), primary_key=True),
    sa.Column("project_id", exact_string(255), nullable=False),
    sa.Column("name", exact_string(255), nullable=False),
    sa.Column("description", sa.String(255), nullable=False),
    sa.Column("ip_version", sa.Integer, nullable=False),
    sa.Column("prefixes", sa.JSON, nullable=False),
    sa.Column("default_prefixlen", sa.Integer, nullable=False),
    sa.Column("min_prefixlen", sa.Integer, nullable=False),
    sa.Column("max_prefixlen", sa.Integer, nullable=False),
    sa.Column("shared", sa.Boolean, nullable=False),
    sa.Column("default_quota", sa.Integer, nullable=True),
    # The IP version while the pool is the default one, else NULL.
    sa.Column("default_key", sa.Integer, nullable=True),
    *_standard(),
    sa.UniqueConstraint("default_key", name="uniq_subnetpools_default_key"),
)

subnetpool_allocations = sa.Table(
    "subnetpool_allocations", metadata,
    sa.Column("subnet_id", exact_string(36), sa.ForeignKey("subnets.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("subnetpool_id", exact_string(36), sa.ForeignKey("subnetpools.id"),
              nullable=False),
    sa.Index("ix_subnetpool_allocations_pool", "subnetpool_id"),
)

# The L2 agents of the compute hosts (agents.py): one row per agent registration.
network_agents = sa.Table(
    "network_agents", metadata,
    sa.Column("id", exact_string(36), primary_key=True),
    sa.Column("agent_type", sa.String(64), nullable=False),
    sa.Column("host", exact_string(255), nullable=False),
    # `host` while the agent is registered, NULL once deleted: one live agent of a type
    # per host, however many readers register it at once (NULLs never collide).
    sa.Column("live_host", exact_string(255), nullable=True),
    sa.Column("admin_state_up", sa.Boolean, nullable=False),
    sa.Column("description", sa.String(255), nullable=True),
    sa.Column("created_at", _STAMP, nullable=False),
    sa.Column("deleted_at", _STAMP, nullable=True),
    sa.UniqueConstraint("agent_type", "live_host", name="uniq_network_agents_live"),
    sa.Index("ix_network_agents_host", "host"),
)
