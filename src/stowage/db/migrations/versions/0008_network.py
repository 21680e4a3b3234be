"""The Network service: QoS policies and minimum-bandwidth rules, networks,
subnets, ports, their bindings (one row per host) and their fixed IPs.

The unique constraints are what keeps concurrent writers honest: an address
once per subnet (the primary key of `ip_allocations`), a MAC once per
network, one binding per port and host, one rule per policy and direction,
and one network per flat physnet / VLAN / tunnel id (`segment_key`).

Revision ID: 0008
Revises: 0007
"""

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def _exact(length: int) -> sa.types.TypeEngine[str]:
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb")


def _standard() -> list[sa.Column[Any]]:
    # Microseconds on MySQL too: records list in creation order.
    stamp = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")
    return [sa.Column("revision_number", sa.BigInteger, nullable=False),
            sa.Column("created_at", stamp, nullable=False),
            sa.Column("updated_at", stamp, nullable=False)]


def _owned() -> list[sa.Column[Any]]:
    return [sa.Column("id", _exact(36), primary_key=True),
            sa.Column("project_id", _exact(255), nullable=False),
            sa.Column("name", _exact(255), nullable=False),
            sa.Column("description", sa.String(255), nullable=False)]


def _qos() -> None:
    op.create_table("qos_policies", *_owned(),
                    sa.Column("shared", sa.Boolean, nullable=False), *_standard())
    op.create_table(
        "qos_minimum_bandwidth_rules",
        sa.Column("id", _exact(36), primary_key=True),
        sa.Column("qos_policy_id", _exact(36),
                  sa.ForeignKey("qos_policies.id", ondelete="CASCADE"), nullable=False),
        sa.Column("min_kbps", sa.BigInteger, nullable=False),
        sa.Column("direction", sa.String(16), nullable=False),
        sa.UniqueConstraint("qos_policy_id", "direction",
                            name="uniq_qos_min_bw_policy_direction"))


def _networks() -> None:
    op.create_table(
        "networks", *_owned(),
        sa.Column("admin_state_up", sa.Boolean, nullable=False),
        sa.Column("shared", sa.Boolean, nullable=False),
        sa.Column("mtu", sa.Integer, nullable=False),
        sa.Column("network_type", sa.String(32), nullable=False),
        sa.Column("physical_network", _exact(64), nullable=True),
        sa.Column("segmentation_id", sa.Integer, nullable=True),
        sa.Column("segment_key", _exact(128), nullable=True),
        sa.Column("qos_policy_id", _exact(36), sa.ForeignKey("qos_policies.id"), nullable=True),
        *_standard(),
        sa.UniqueConstraint("segment_key", name="uniq_networks_segment_key"))
    op.create_table(
        "subnets", *_owned(),
        sa.Column("network_id", _exact(36), sa.ForeignKey("networks.id"), nullable=False),
        sa.Column("ip_version", sa.Integer, nullable=False),
        sa.Column("cidr", sa.String(64), nullable=False),
        sa.Column("gateway_ip", sa.String(64), nullable=True),
        sa.Column("allocation_pools", sa.JSON, nullable=False),
        sa.Column("enable_dhcp", sa.Boolean, nullable=False),
        sa.Column("dns_nameservers", sa.JSON, nullable=False),
        sa.Column("host_routes", sa.JSON, nullable=False),
        *_standard())


def _ports() -> None:
    op.create_table(
        "ports", *_owned(),
        sa.Column("network_id", _exact(36), sa.ForeignKey("networks.id"), nullable=False),
        sa.Column("mac_address", _exact(32), nullable=False),
        sa.Column("admin_state_up", sa.Boolean, nullable=False),
        sa.Column("device_id", _exact(255), nullable=False),
        sa.Column("device_owner", _exact(255), nullable=False),
        sa.Column("qos_policy_id", _exact(36), sa.ForeignKey("qos_policies.id"), nullable=True),
        *_standard(),
        sa.UniqueConstraint("network_id", "mac_address", name="uniq_ports_network_mac"))
    op.create_table(
        "port_bindings",
        sa.Column("port_id", _exact(36), sa.ForeignKey("ports.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("host", _exact(255), primary_key=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("vnic_type", sa.String(64), nullable=False),
        sa.Column("profile", sa.JSON, nullable=False),
        sa.Column("vif_type", sa.String(64), nullable=False),
        sa.Column("vif_details", sa.JSON, nullable=False))
    op.create_table(
        "ip_allocations",
        sa.Column("subnet_id", _exact(36), sa.ForeignKey("subnets.id"), primary_key=True),
        sa.Column("ip_address", sa.String(64), primary_key=True),
        sa.Column("port_id", _exact(36), sa.ForeignKey("ports.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("network_id", _exact(36), nullable=False))
    op.create_index("ix_ip_allocations_port", "ip_allocations", ["port_id"])


def upgrade() -> None:
    _qos()
    _networks()
    _ports()


def downgrade() -> None:
    for name in ("ip_allocations", "port_bindings", "ports", "subnets", "networks",
                 "qos_minimum_bandwidth_rules", "qos_policies"):
        op.drop_table(name)
