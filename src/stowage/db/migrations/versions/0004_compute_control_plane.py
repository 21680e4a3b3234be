"""Compute control plane: services, compute nodes, instances, migrations, actions, groups.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def _exact(length: int) -> sa.types.TypeEngine[str]:
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb")


TABLES = (
    "services",
    "compute_nodes",
    "instances",
    "instance_faults",
    "request_specs",
    "migrations",
    "instance_actions",
    "instance_action_events",
    "server_groups",
    "server_group_members",
    "operation_steps",
)


def upgrade() -> None:
    # --- the control plane: services, hosts, instances, moves --------------------
    # Services are the workers (nova-compute per host, nova-conductor, nova-scheduler);
    # `last_seen_up` is the heartbeat the "is it up" check reads.
    op.create_table(
        "services",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("uuid", _exact(36), nullable=False, unique=True),
        sa.Column("host", _exact(255), nullable=False),
        sa.Column("binary", _exact(255), nullable=False),
        sa.Column("topic", sa.String(255), nullable=True),
        sa.Column("availability_zone", sa.String(255), nullable=True),
        sa.Column("report_count", sa.Integer, nullable=False, default=0),
        sa.Column("disabled", sa.Boolean, nullable=False, default=False),
        sa.Column("disabled_reason", sa.String(255), nullable=True),
        sa.Column("forced_down", sa.Boolean, nullable=False, default=False),
        sa.Column("last_seen_up", sa.DateTime, nullable=True),
        sa.Column("version", sa.Integer, nullable=False, default=0),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=True),
        sa.Column("deleted", sa.Integer, nullable=False, default=0),
        sa.UniqueConstraint("host", "binary", "deleted", name="uniq_services_host_binary_deleted"),
    )

    # One hypervisor node per simulated host; its uuid is its resource provider's uuid.
    op.create_table(
        "compute_nodes",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("uuid", _exact(36), nullable=False, unique=True),
        sa.Column("service_id", sa.Integer, sa.ForeignKey("services.id"), nullable=True),
        sa.Column("host", _exact(255), nullable=False),
        sa.Column("hypervisor_hostname", _exact(255), nullable=False),
        sa.Column("hypervisor_type", sa.String(255), nullable=False),
        sa.Column("hypervisor_version", sa.Integer, nullable=False),
        sa.Column("host_ip", sa.String(39), nullable=True),
        sa.Column("vcpus", sa.Integer, nullable=False),
        sa.Column("memory_mb", sa.Integer, nullable=False),
        sa.Column("local_gb", sa.Integer, nullable=False),
        sa.Column("vcpus_used", sa.Integer, nullable=False, default=0),
        sa.Column("memory_mb_used", sa.Integer, nullable=False, default=0),
        sa.Column("local_gb_used", sa.Integer, nullable=False, default=0),
        sa.Column("running_vms", sa.Integer, nullable=False, default=0),
        sa.Column("cpu_allocation_ratio", sa.Float, nullable=False),
        sa.Column("ram_allocation_ratio", sa.Float, nullable=False),
        sa.Column("disk_allocation_ratio", sa.Float, nullable=False),
    # PCI devices by alias as the agent last reported them: {alias: {"total": n, "free": n}}
        sa.Column("pci_stats", sa.JSON, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=True),
        sa.Column("deleted", sa.Integer, nullable=False, default=0),
    )

    # Instances are soft-deleted like flavors (`deleted` = id once deleted). The
    # flavor columns hold JSON snapshots: an instance keeps the flavor it was built
    # with even when the flavor is later deleted; old/new are set during a resize.
    op.create_table(
        "instances",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("uuid", _exact(36), nullable=False, unique=True),
        sa.Column("project_id", _exact(255), nullable=False),
        sa.Column("user_id", _exact(255), nullable=False),
        sa.Column("display_name", sa.String(255), nullable=False),
        sa.Column("display_description", sa.Text, nullable=True),
        sa.Column("hostname", sa.String(255), nullable=False),
        sa.Column("host", _exact(255), nullable=True),
        sa.Column("node", _exact(255), nullable=True),
        sa.Column("availability_zone", sa.String(255), nullable=True),
        sa.Column("vm_state", sa.String(255), nullable=False),
        sa.Column("task_state", sa.String(255), nullable=True),
        sa.Column("power_state", sa.Integer, nullable=False, default=0),
        sa.Column("flavor", sa.JSON, nullable=False),
        sa.Column("old_flavor", sa.JSON, nullable=True),
        sa.Column("new_flavor", sa.JSON, nullable=True),
        sa.Column("image_ref", sa.String(255), nullable=True),
        sa.Column("volume_backed", sa.Boolean, nullable=False, default=False),
        sa.Column("key_name", sa.String(255), nullable=True),
        sa.Column("metadata", sa.JSON, nullable=False),
        sa.Column("networks", sa.JSON, nullable=True),
        sa.Column("config_drive", sa.String(255), nullable=True),
        sa.Column("locked", sa.Boolean, nullable=False, default=False),
        sa.Column("progress", sa.Integer, nullable=True),
        sa.Column("reservation_id", sa.String(255), nullable=False),
        sa.Column("launch_index", sa.Integer, nullable=False, default=0),
        sa.Column("launched_at", sa.DateTime, nullable=True),
        sa.Column("terminated_at", sa.DateTime, nullable=True),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=True),
        sa.Column("deleted_at", sa.DateTime, nullable=True),
        sa.Column("deleted", sa.Integer, nullable=False, default=0),
    )

    # Why an instance went to ERROR (the `fault` of a server view).
    op.create_table(
        "instance_faults",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("instance_uuid", _exact(36), nullable=False, index=True),
        sa.Column("code", sa.Integer, nullable=False),
        sa.Column("message", sa.String(255), nullable=False),
        sa.Column("details", sa.Text, nullable=True),
        sa.Column("host", sa.String(255), nullable=True),
        sa.Column("created_at", sa.DateTime, nullable=False),
    )

    # Everything the scheduler needs to place an instance again on a move.
    op.create_table(
        "request_specs",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("instance_uuid", _exact(36), nullable=False, unique=True),
        sa.Column("spec", sa.JSON, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=True),
    )

    # A move: while in progress, its uuid is the placement consumer owning the
    # source allocation.
    op.create_table(
        "migrations",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("uuid", _exact(36), nullable=False, unique=True),
        sa.Column("instance_uuid", _exact(36), nullable=False, index=True),
        sa.Column("migration_type", sa.String(32), nullable=False),
        sa.Column("status", sa.String(255), nullable=False),
        sa.Column("source_compute", _exact(255), nullable=True),
        sa.Column("source_node", _exact(255), nullable=True),
        sa.Column("dest_compute", _exact(255), nullable=True),
        sa.Column("dest_node", _exact(255), nullable=True),
        sa.Column("dest_host", sa.String(255), nullable=True),
        sa.Column("old_flavor_id", sa.Integer, nullable=True),
        sa.Column("new_flavor_id", sa.Integer, nullable=True),
        sa.Column("project_id", _exact(255), nullable=True),
        sa.Column("user_id", _exact(255), nullable=True),
        sa.Column("hidden", sa.Boolean, nullable=False, default=False),
        sa.Column("cross_cell_move", sa.Boolean, nullable=False, default=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=True),
        sa.Column("deleted", sa.Integer, nullable=False, default=0),
    )

    op.create_table(
        "instance_actions",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("action", sa.String(255), nullable=False),
        sa.Column("instance_uuid", _exact(36), nullable=False, index=True),
        sa.Column("request_id", sa.String(255), nullable=False),
        sa.Column("user_id", _exact(255), nullable=True),
        sa.Column("project_id", _exact(255), nullable=True),
        sa.Column("start_time", sa.DateTime, nullable=False),
        sa.Column("finish_time", sa.DateTime, nullable=True),
        sa.Column("message", sa.String(255), nullable=True),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=True),
    )

    op.create_table(
        "instance_action_events",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("action_id", sa.Integer, sa.ForeignKey("instance_actions.id"), nullable=False),
        sa.Column("event", sa.String(255), nullable=False),
        sa.Column("start_time", sa.DateTime, nullable=False),
        sa.Column("finish_time", sa.DateTime, nullable=True),
        sa.Column("result", sa.String(255), nullable=True),
        sa.Column("traceback", sa.Text, nullable=True),
        sa.Column("host", sa.String(255), nullable=True),
        sa.Column("details", sa.Text, nullable=True),
        sa.Column("created_at", sa.DateTime, nullable=False),
    )

    op.create_table(
        "server_groups",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("uuid", _exact(36), nullable=False, unique=True),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("project_id", _exact(255), nullable=False),
        sa.Column("user_id", _exact(255), nullable=False),
        sa.Column("policy", sa.String(255), nullable=False),
        sa.Column("rules", sa.JSON, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
    )

    op.create_table(
        "server_group_members",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("group_id", sa.Integer, sa.ForeignKey("server_groups.id"), nullable=False),
        sa.Column("instance_uuid", _exact(36), nullable=False),
        sa.UniqueConstraint("group_id", "instance_uuid", name="uniq_server_group_members"),
    )

    # The conductor's journal: one row per step of a running operation, so that an
    # operation cut off by a crash can be rolled back when the conductor restarts.
    op.create_table(
        "operation_steps",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("operation_uuid", _exact(36), nullable=False, index=True),
        sa.Column("operation", sa.String(64), nullable=False),
        sa.Column("instance_uuid", _exact(36), nullable=True),
        sa.Column("step", sa.String(64), nullable=False),
        sa.Column("state", sa.String(32), nullable=False),
        sa.Column("detail", sa.Text, nullable=True),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=True),
    )


def downgrade() -> None:
    for name in reversed(TABLES):
        op.drop_table(name)
