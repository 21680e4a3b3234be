"""SQLAlchemy Core tables of the Compute service.

Flavors are soft-deleted: `deleted` is 0 while a flavor lives and its own id
once deleted, so that name and flavorid stay unique among live flavors while
a deleted flavor's row remains for instances that were built from it.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

from stowage.placement.tables import exact_string

__all__ = ["metadata", "flavors", "flavor_extra_specs", "flavor_projects", "services",
           "compute_nodes", "instances", "instance_faults", "request_specs", "migrations",
           "instance_actions", "instance_action_events", "server_groups",
           "server_group_members", "operation_steps", "simulated_guests", "instance_ports",
           "key_pairs", "tags", "quotas", "quota_classes", "aggregates", "aggregate_hosts",
           "aggregate_metadata", "cell_mappings", "host_mappings",
           "instance_mappings", "CELL_TABLES"]

metadata = sa.MetaData()

flavors = sa.Table(
    "flavors", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("flavorid", exact_string(255), nullable=False),
    sa.Column("name", exact_string(255), nullable=False),
    sa.Column("memory_mb", sa.Integer, nullable=False),
    sa.Column("vcpus", sa.Integer, nullable=False),
    sa.Column("root_gb", sa.Integer, nullable=False),
    sa.Column("ephemeral_gb", sa.Integer, nullable=False, default=0),
    sa.Column("swap", sa.Integer, nullable=False, default=0),
    sa.Column("rxtx_factor", sa.Float, nullable=False, default=1.0),
    sa.Column("is_public", sa.Boolean, nullable=False, default=True),
    sa.Column("disabled", sa.Boolean, nullable=False, default=False),
    sa.Column("description", sa.Text, nullable=True),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("updated_at", sa.DateTime, nullable=True),
    sa.Column("deleted", sa.Integer, nullable=False, default=0),
    sa.UniqueConstraint("flavorid", "deleted", name="uniq_flavors_flavorid_deleted"),
    sa.UniqueConstraint("name", "deleted", name="uniq_flavors_name_deleted"),
)

flavor_extra_specs = sa.Table(
    "flavor_extra_specs", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("flavor_id", sa.Integer, sa.ForeignKey("flavors.id"), nullable=False),
    sa.Column("key", exact_string(255), nullable=False),
    sa.Column("value", sa.String(255), nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("updated_at", sa.DateTime, nullable=True),
    sa.UniqueConstraint("flavor_id", "key", name="uniq_flavor_extra_specs_flavor_key"),
)

# Which projects may see and use a private flavor.
flavor_projects = sa.Table(
    "flavor_projects", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("flavor_id", sa.Integer, sa.ForeignKey("flavors.id"), nullable=False),
    sa.Column("project_id", exact_string(255), nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.UniqueConstraint("flavor_id", "project_id", name="uniq_flavor_projects_flavor_project"),
)

# --- the control plane: services, hosts, instances, moves --------------------
# Services are the workers (nova-compute per host, nova-conductor, nova-scheduler);
# `last_seen_up` is the heartbeat the "is it up" check reads.
services = sa.Table(
    "services", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uuid", exact_string(36), nullable=False, unique=True),
    sa.Column("host", exact_string(255), nullable=False),
    sa.Column("binary", exact_string(255), nullable=False),
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
compute_nodes = sa.Table(
    "compute_nodes", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uuid", exact_string(36), nullable=False, unique=True),
    sa.Column("service_id", sa.Integer, sa.ForeignKey("services.id"), nullable=True),
    sa.Column("host", exact_string(255), nullable=False),
    sa.Column("hypervisor_hostname", exact_string(255), nullable=False),
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
instances = sa.Table(
    "instances", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uuid", exact_string(36), nullable=False, unique=True),
    sa.Column("project_id", exact_string(255), nullable=False),
    sa.Column("user_id", exact_string(255), nullable=False),
    sa.Column("display_name", sa.String(255), nullable=False),
    sa.Column("display_description", sa.Text, nullable=True),
    sa.Column("hostname", sa.String(255), nullable=False),
    sa.Column("host", exact_string(255), nullable=True),
    sa.Column("node", exact_string(255), nullable=True),
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
    # The public key of the key pair booted with: the instance keeps it when the pair goes.
    sa.Column("key_data", sa.Text, nullable=True),
    # accessIPv4/v6 as the user set them, and OS-DCF:diskConfig (AUTO: true).
    sa.Column("access_ip_v4", sa.String(39), nullable=True),
    sa.Column("access_ip_v6", sa.String(39), nullable=True),
    sa.Column("auto_disk_config", sa.Boolean, nullable=False, default=False,
              server_default=sa.false()),
    # The user data given at create (or rebuild from 2.57), base64 as sent.
    sa.Column("user_data", sa.Text, nullable=True),
    sa.Column("metadata", sa.JSON, nullable=False),
    sa.Column("networks", sa.JSON, nullable=True),
    sa.Column("config_drive", sa.String(255), nullable=True),
    sa.Column("locked", sa.Boolean, nullable=False, default=False),
    # 'owner' or 'admin' while locked (Nova's locked_by), and the 2.73 reason.
    sa.Column("locked_by", sa.String(5), nullable=True),
    sa.Column("locked_reason", sa.String(255), nullable=True),
    sa.Column("progress", sa.Integer, nullable=True),
    # Internal facts never shown as metadata (shelve: shelved_at/_image_id/_host).
    sa.Column("system_metadata", sa.JSON, nullable=True),
    sa.Column("reservation_id", sa.String(255), nullable=False),
    sa.Column("launch_index", sa.Integer, nullable=False, default=0),
    sa.Column("launched_at", sa.DateTime, nullable=True),
    sa.Column("terminated_at", sa.DateTime, nullable=True),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("updated_at", sa.DateTime, nullable=True),
    sa.Column("deleted_at", sa.DateTime, nullable=True),
    sa.Column("deleted", sa.Integer, nullable=False, default=0),
    # A cross-cell move's copy of the server, kept out of listings and quota counts
    # (compute/cell_copy.py; Nova's Instance.hidden).
    sa.Column("hidden", sa.Boolean, nullable=False, server_default=sa.false()),
)

# Why an instance went to ERROR (the `fault` of a server view).
instance_faults = sa.Table(
    "instance_faults", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("instance_uuid", exact_string(36), nullable=False, index=True),
    sa.Column("code", sa.Integer, nullable=False),
    sa.Column("message", sa.String(255), nullable=False),
    sa.Column("details", sa.Text, nullable=True),
    sa.Column("host", sa.String(255), nullable=True),
    sa.Column("created_at", sa.DateTime, nullable=False),
)

# Everything the scheduler needs to place an instance again on a move.
request_specs = sa.Table(
    "request_specs", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("instance_uuid", exact_string(36), nullable=False, unique=True),
    sa.Column("spec", sa.JSON, nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("updated_at", sa.DateTime, nullable=True),
)

# A move: while in progress, its uuid is the placement consumer owning the
# source allocation.
migrations = sa.Table(
    "migrations", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uuid", exact_string(36), nullable=False, unique=True),
    sa.Column("instance_uuid", exact_string(36), nullable=False, index=True),
    sa.Column("migration_type", sa.String(32), nullable=False),
    sa.Column("status", sa.String(255), nullable=False),
    sa.Column("source_compute", exact_string(255), nullable=True),
    sa.Column("source_node", exact_string(255), nullable=True),
    sa.Column("dest_compute", exact_string(255), nullable=True),
    sa.Column("dest_node", exact_string(255), nullable=True),
    sa.Column("dest_host", sa.String(255), nullable=True),
    sa.Column("old_flavor_id", sa.Integer, nullable=True),
    sa.Column("new_flavor_id", sa.Integer, nullable=True),
    sa.Column("project_id", exact_string(255), nullable=True),
    sa.Column("user_id", exact_string(255), nullable=True),
    sa.Column("hidden", sa.Boolean, nullable=False, default=False),
    sa.Column("cross_cell_move", sa.Boolean, nullable=False, default=False),
    # A live migration's progress in bytes (shown from microversion 2.23).
    sa.Column("memory_total", sa.BigInteger, nullable=True),
    sa.Column("memory_processed", sa.BigInteger, nullable=True),
    sa.Column("memory_remaining", sa.BigInteger, nullable=True),
    sa.Column("disk_total", sa.BigInteger, nullable=True),
    sa.Column("disk_processed", sa.BigInteger, nullable=True),
    sa.Column("disk_remaining", sa.BigInteger, nullable=True),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("updated_at", sa.DateTime, nullable=True),
    sa.Column("deleted", sa.Integer, nullable=False, default=0),
)

instance_actions = sa.Table(
    "instance_actions", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("action", sa.String(255), nullable=False),
    sa.Column("instance_uuid", exact_string(36), nullable=False, index=True),
    sa.Column("request_id", sa.String(255), nullable=False),
    sa.Column("user_id", exact_string(255), nullable=True),
    sa.Column("project_id", exact_string(255), nullable=True),
    sa.Column("start_time", sa.DateTime, nullable=False),
    sa.Column("finish_time", sa.DateTime, nullable=True),
    sa.Column("message", sa.String(255), nullable=True),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("updated_at", sa.DateTime, nullable=True),
)

instance_action_events = sa.Table(
    "instance_action_events", metadata,
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

server_groups = sa.Table(
    "server_groups", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uuid", exact_string(36), nullable=False, unique=True),
    sa.Column("name", sa.String(255), nullable=False),
    sa.Column("project_id", exact_string(255), nullable=False),
    sa.Column("user_id", exact_string(255), nullable=False),
    sa.Column("policy", sa.String(255), nullable=False),
    sa.Column("rules", sa.JSON, nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
)

server_group_members = sa.Table(
    "server_group_members", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("group_id", sa.Integer, sa.ForeignKey("server_groups.id"), nullable=False),
    sa.Column("instance_uuid", exact_string(36), nullable=False),
    sa.UniqueConstraint("group_id", "instance_uuid", name="uniq_server_group_members"),
)

# The conductor's journal: one row per step of a running operation, so that an
# operation cut off by a crash can be rolled back when the conductor restarts.
# The `accepted` row (the operation's head) holds the lease of the conductor
# running it: `owner` until `lease_expires` (NULL once the operation ended;
# the accepted time while no conductor claimed it). See conductor/leases.py.
operation_steps = sa.Table(
    "operation_steps", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("operation_uuid", exact_string(36), nullable=False, index=True),
    sa.Column("operation", sa.String(64), nullable=False),
    sa.Column("instance_uuid", exact_string(36), nullable=True),
    sa.Column("step", sa.String(64), nullable=False),
    sa.Column("state", sa.String(32), nullable=False),
    sa.Column("detail", sa.Text, nullable=True),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("updated_at", sa.DateTime, nullable=True),
    sa.Column("owner", sa.String(255), nullable=True),
    sa.Column("lease_expires",
              sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb"),
              nullable=True, index=True),
)

# What each simulated hypervisor holds, so that restarting the service is not a
# reboot of its hosts: an instance's guest (migration_uuid '') and the guest a
# move set aside on its source (keyed by the migration). `incoming` names the
# move that brought a guest here, until it is confirmed or reverted.
simulated_guests = sa.Table(
    "simulated_guests", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("host", exact_string(255), nullable=False),
    sa.Column("instance_uuid", exact_string(36), nullable=False),
    sa.Column("migration_uuid", exact_string(36), nullable=False),
    sa.Column("flavor", sa.JSON, nullable=False),
    sa.Column("power_state", sa.Integer, nullable=False),
    sa.Column("incoming", exact_string(36), nullable=True),
    # The guest's serial console, its last lines (agent/sim_console.py), and when it
    # last booted (NULL while off): what os-getConsoleOutput and diagnostics read.
    sa.Column("console", sa.JSON, nullable=True),
    sa.Column("booted_at", sa.DateTime, nullable=True),
    sa.UniqueConstraint("host", "instance_uuid", "migration_uuid",
                        name="uniq_simulated_guests"),
)

# The ports of each server, one row per entry of its `networks` request, in order
# (Nova's requested networks and info cache): a port the user passed, or one Nova
# creates on a network (`port_id` NULL until created; `created` tells delete to
# delete it rather than unbind it). `port_id` is unique: two servers booted with
# one port at once cannot both have it. `request` is the port's resource request
# as last scheduled (its groups, in `compute/port_requests.py`'s form); `vif` the
# addresses the server view shows (network name, MAC, fixed IPs).
instance_ports = sa.Table(
    "instance_ports", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("instance_uuid", exact_string(36), nullable=False, index=True),
    sa.Column("position", sa.Integer, nullable=False),
    sa.Column("port_id", exact_string(36), nullable=True),
    sa.Column("network_id", exact_string(36), nullable=True),
    sa.Column("fixed_ip", sa.String(64), nullable=True),
    sa.Column("created", sa.Boolean, nullable=False),
    sa.Column("request", sa.JSON, nullable=True),
    sa.Column("vif", sa.JSON, nullable=True),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("updated_at", sa.DateTime, nullable=True),
    sa.UniqueConstraint("port_id", name="uniq_instance_ports_port"),
    sa.UniqueConstraint("instance_uuid", "position", name="uniq_instance_ports_position"),
)

# Each user's key pairs (os-keypairs): a name is unique per user, which is what
# turns the second of two racing creates into Nova's 409 KeyPairExists.
key_pairs = sa.Table(
    "key_pairs", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", exact_string(255), nullable=False),
    sa.Column("user_id", exact_string(255), nullable=False),
    sa.Column("fingerprint", sa.String(255), nullable=False),
    sa.Column("public_key", sa.Text, nullable=False),
    sa.Column("type", sa.String(16), nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("updated_at", sa.DateTime, nullable=True),
    sa.UniqueConstraint("user_id", "name", name="uniq_key_pairs_user_id_name"),
)

# Server tags (2.26), as Nova's `tags` table: one row per (server uuid, tag).
tags = sa.Table(
    "tags", metadata,
    sa.Column("resource_id", exact_string(36), primary_key=True),
    sa.Column("tag", exact_string(80), primary_key=True),
    sa.Index("tags_tag_idx", "tag"),
)

# Quota limits set by an admin (os-quota-sets): a project's (user_id "") or one
# of its users'. Unset resources fall back to the `default` quota class, then to
# the `[quota]` settings.
quotas = sa.Table(
    "quotas", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("project_id", exact_string(255), nullable=False),
    sa.Column("user_id", exact_string(255), nullable=False),
    sa.Column("resource", exact_string(255), nullable=False),
    sa.Column("hard_limit", sa.Integer, nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("updated_at", sa.DateTime, nullable=True),
    sa.UniqueConstraint("project_id", "user_id", "resource", name="uniq_quotas_owner_resource"),
)

# Limits of a quota class (os-quota-class-sets); only `default` is ever applied.
quota_classes = sa.Table(
    "quota_classes", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("class_name", exact_string(255), nullable=False),
    sa.Column("resource", exact_string(255), nullable=False),
    sa.Column("hard_limit", sa.Integer, nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("updated_at", sa.DateTime, nullable=True),
    sa.UniqueConstraint("class_name", "resource", name="uniq_quota_classes_class_resource"),
)

# Host aggregates (Nova's os-aggregates): named groups of compute hosts with
# key/value metadata. The `availability_zone` key makes the aggregate an AZ: its
# hosts' zone. `uuid` is also the Placement aggregate that the hosts' compute node
# providers carry. Names are unique; deleted aggregates are gone (Nova's API
# database keeps no deleted rows either).
aggregates = sa.Table(
    "aggregates", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uuid", exact_string(36), nullable=False, unique=True),
    sa.Column("name", exact_string(255), nullable=False, unique=True),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("updated_at", sa.DateTime, nullable=True),
)

aggregate_hosts = sa.Table(
    "aggregate_hosts", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("aggregate_id", sa.Integer, sa.ForeignKey("aggregates.id"), nullable=False),
    sa.Column("host", exact_string(255), nullable=False, index=True),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.UniqueConstraint("aggregate_id", "host", name="uniq_aggregate_hosts_aggregate_host"),
)

aggregate_metadata = sa.Table(
    "aggregate_metadata", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("aggregate_id", sa.Integer, sa.ForeignKey("aggregates.id"), nullable=False),
    sa.Column("key", exact_string(255), nullable=False, index=True),
    sa.Column("value", sa.String(255), nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.UniqueConstraint("aggregate_id", "key", name="uniq_aggregate_metadata_aggregate_key"),
)

# Cells v2 (API database): which database each cell's records live in ("@api": this
# one), and which cell holds each compute host and each server. compute/cells.py.
cell_mappings = sa.Table(
    "cell_mappings", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uuid", exact_string(36), nullable=False, unique=True),
    sa.Column("name", exact_string(255), nullable=False, unique=True),
    sa.Column("database_connection", sa.Text, nullable=False),
    sa.Column("disabled", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("updated_at", sa.DateTime, nullable=True),
)

host_mappings = sa.Table(
    "host_mappings", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("host", exact_string(255), nullable=False, unique=True),
    sa.Column("cell_id", sa.Integer, sa.ForeignKey("cell_mappings.id"), nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
)

instance_mappings = sa.Table(
    "instance_mappings", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("instance_uuid", exact_string(36), nullable=False, unique=True),
    sa.Column("cell_id", sa.Integer, sa.ForeignKey("cell_mappings.id"), nullable=True),
    sa.Column("project_id", sa.String(255), nullable=False, index=True),
    sa.Column("user_id", sa.String(255), nullable=True),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("updated_at", sa.DateTime, nullable=True),
    # A delete was accepted: a down cell's minimal listing leaves it out (0022).
    sa.Column("queued_for_delete", sa.Boolean, nullable=False, server_default=sa.false()),
)

# The tables a cell database holds (Nova's "main" database); every other table,
# Compute's and the other services', is the API database's. docs/cells.md.
CELL_TABLES = frozenset({
    "services", "compute_nodes", "instances", "instance_faults", "migrations",
    "instance_actions", "instance_action_events", "operation_steps", "simulated_guests",
    "instance_ports", "tags"})
