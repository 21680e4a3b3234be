"""Compute policy: Nova's default rules for the APIs stowage serves.

Reading flavors needs no rule at all (everybody may); managing flavors, their
extra specs and their access lists is for admins. By default (as Nova ships,
`enforce_new_defaults = true`) a project's servers are changed by its members
and seen by its readers; a rule's deprecated default (Nova's legacy
`admin_or_owner`: any token of the project) is ORed in only when an operator
turns `enforce_new_defaults` off.
"""

from __future__ import annotations

__all__ = ["COMPUTE_RULES"]

ADMIN = "rule:context_is_admin"
PROJECT_READER_OR_ADMIN = "rule:project_reader_or_admin"
LEGACY_ADMIN_OR_OWNER = "rule:admin_or_owner"
PROJECT_MEMBER_OR_ADMIN = "rule:project_member_or_admin"
_SERVERS = "os_compute_api:servers:"

# name -> (check string, deprecated check string or None)
COMPUTE_RULES: dict[str, tuple[str, str | None]] = {
    "context_is_admin": ("role:admin", None),
    "admin_or_owner": ("is_admin:True or project_id:%(project_id)s", None),
    "admin_api": ("is_admin:True", None),
    "project_reader_api": ("role:reader and project_id:%(project_id)s", None),
    "project_reader_or_admin": ("rule:project_reader_api or rule:context_is_admin", None),
    "project_member_api": ("role:member and project_id:%(project_id)s", None),
    "project_member_or_admin": ("rule:project_member_api or rule:context_is_admin", None),
    "os_compute_api:os-flavor-manage:create": (ADMIN, None),
    "os_compute_api:os-flavor-manage:update": (ADMIN, None),
    "os_compute_api:os-flavor-manage:delete": (ADMIN, None),
    "os_compute_api:os-flavor-extra-specs:index": (PROJECT_READER_OR_ADMIN,
                                                   LEGACY_ADMIN_OR_OWNER),
    "os_compute_api:os-flavor-extra-specs:show": (PROJECT_READER_OR_ADMIN,
                                                  LEGACY_ADMIN_OR_OWNER),
    "os_compute_api:os-flavor-extra-specs:create": (ADMIN, None),
    "os_compute_api:os-flavor-extra-specs:update": (ADMIN, None),
    "os_compute_api:os-flavor-extra-specs:delete": (ADMIN, None),
    "os_compute_api:os-flavor-access": (ADMIN, LEGACY_ADMIN_OR_OWNER),
    "os_compute_api:os-flavor-access:add_tenant_access": (ADMIN, None),
    "os_compute_api:os-flavor-access:remove_tenant_access": (ADMIN, None),
    # Servers (servers.py, server_actions.py): readers and members of the owning
    # project, or admins; listing other projects and migrating are admin-only.
    **{_SERVERS + name: (PROJECT_READER_OR_ADMIN, LEGACY_ADMIN_OR_OWNER)
       for name in ("index", "detail", "show", "show:flavor-extra-specs")},
    **{_SERVERS + name: (PROJECT_MEMBER_OR_ADMIN, LEGACY_ADMIN_OR_OWNER)
       for name in ("create", "create:attach_volume", "create:attach_network",
                    "create:trusted_certs", "delete", "update", "resize",
                    "confirm_resize", "revert_resize", "start", "stop", "reboot",
                    "rebuild", "rebuild:trusted_certs", "create_image",
                    "create_image:allow_volume_backed")},
    **{_SERVERS + name: (ADMIN, None)
       for name in ("index:get_all_tenants", "detail:get_all_tenants", "allow_all_filters",
                    "show:host_status", "create:forced_host", "create:zero_disk_flavor",
                    "migrations:index", "migrations:show")},
    "compute:servers:create:requested_destination": (ADMIN, None),
    # Resize and cold migration may choose a host of another cell (docs/cells.md):
    # nobody by default, as Nova ships it.
    "compute:servers:resize:cross_cell": ("!", None),
    "os_compute_api:os-extended-server-attributes": (ADMIN, None),
    "os_compute_api:os-migrate-server:migrate": (ADMIN, None),
    "os_compute_api:os-migrate-server:migrate:host": (ADMIN, None),
    "os_compute_api:os-migrate-server:migrate_live": (ADMIN, None),
    "os_compute_api:os-migrate-server:migrate_live:host": (ADMIN, None),
    "os_compute_api:servers:migrations:force_complete": (ADMIN, None),
    "os_compute_api:servers:migrations:delete": (ADMIN, None),
    "os_compute_api:os-migrations:index": (ADMIN, None),
    # Shelve (server_shelve.py): Nova 34's defaults, with no deprecated rule.
    "os_compute_api:os-shelve:shelve": (PROJECT_MEMBER_OR_ADMIN, None),
    "os_compute_api:os-shelve:unshelve": (PROJECT_MEMBER_OR_ADMIN, None),
    "os_compute_api:os-shelve:unshelve_to_host": (ADMIN, None),
    "os_compute_api:os-shelve:shelve_offload": (ADMIN, None),
    "os_compute_api:os-admin-actions:reset_state": (ADMIN, "rule:admin_api"),
    # Guest actions and the lock (server_guest_actions.py): members, or admins.
    **{f"os_compute_api:{name}": (PROJECT_MEMBER_OR_ADMIN, LEGACY_ADMIN_OR_OWNER)
       for name in ("os-pause-server:pause", "os-pause-server:unpause",
                    "os-suspend-server:suspend", "os-suspend-server:resume",
                    "os-lock-server:lock", "os-lock-server:unlock",
                    "os-deferred-delete:restore", "os-deferred-delete:force",
                    "os-rescue", "os-unrescue", "os-create-backup")},
    "os_compute_api:os-lock-server:unlock:unlock_override": (ADMIN, "rule:admin_api"),
    "os_compute_api:os-evacuate": (ADMIN, "rule:admin_api"),
    "os_compute_api:os-instance-actions:list": (PROJECT_READER_OR_ADMIN, LEGACY_ADMIN_OR_OWNER),
    "os_compute_api:os-attach-interfaces:list": (PROJECT_READER_OR_ADMIN,
                                                 LEGACY_ADMIN_OR_OWNER),
    "os_compute_api:os-attach-interfaces:show": (PROJECT_READER_OR_ADMIN,
                                                 LEGACY_ADMIN_OR_OWNER),
    "os_compute_api:os-attach-interfaces:create": (PROJECT_MEMBER_OR_ADMIN,
                                                   LEGACY_ADMIN_OR_OWNER),
    "os_compute_api:os-attach-interfaces:delete": (PROJECT_MEMBER_OR_ADMIN,
                                                   LEGACY_ADMIN_OR_OWNER),
    "os_compute_api:os-instance-actions:show": (PROJECT_READER_OR_ADMIN, LEGACY_ADMIN_OR_OWNER),
    "os_compute_api:os-instance-actions:events": (ADMIN, None),
    "os_compute_api:os-instance-actions:events:details": (ADMIN, None),
    # Server groups: members of the owning project (or admins); all_projects is admin-only.
    "os_compute_api:os-server-groups:create": ("rule:project_member_api",
                                               LEGACY_ADMIN_OR_OWNER),
    "os_compute_api:os-server-groups:delete": (PROJECT_MEMBER_OR_ADMIN, LEGACY_ADMIN_OR_OWNER),
    "os_compute_api:os-server-groups:index": (PROJECT_READER_OR_ADMIN, LEGACY_ADMIN_OR_OWNER),
    "os_compute_api:os-server-groups:index:all_projects": (ADMIN, "rule:admin_api"),
    "os_compute_api:os-server-groups:show": (PROJECT_READER_OR_ADMIN, LEGACY_ADMIN_OR_OWNER),
    # Key pairs (keypairs.py): admins, or the key pair's own user.
    **{"os_compute_api:os-keypairs:" + name: (f"({ADMIN}) or user_id:%(user_id)s",
                                              "rule:admin_api or user_id:%(user_id)s")
       for name in ("index", "create", "delete", "show")},
    # Server metadata and tags (server_metadata.py, server_tags.py): readers see them,
    # members change them.
    **{"os_compute_api:server-metadata:" + name: (PROJECT_READER_OR_ADMIN,
                                                  LEGACY_ADMIN_OR_OWNER)
       for name in ("index", "show")},
    **{"os_compute_api:server-metadata:" + name: (PROJECT_MEMBER_OR_ADMIN,
                                                  LEGACY_ADMIN_OR_OWNER)
       for name in ("create", "update", "update_all", "delete")},
    **{"os_compute_api:os-server-tags:" + name: (PROJECT_READER_OR_ADMIN,
                                                 LEGACY_ADMIN_OR_OWNER)
       for name in ("index", "show")},
    **{"os_compute_api:os-server-tags:" + name: (PROJECT_MEMBER_OR_ADMIN,
                                                 LEGACY_ADMIN_OR_OWNER)
       for name in ("update", "update_all", "delete", "delete_all")},
    # Security groups and the network proxies (security_groups.py,
    # server_security_groups.py, networks.py): readers see, members change.
    **{"os_compute_api:os-security-groups:" + name: (PROJECT_READER_OR_ADMIN,
                                                     LEGACY_ADMIN_OR_OWNER)
       for name in ("get", "show", "list")},
    **{"os_compute_api:os-security-groups:" + name: (PROJECT_MEMBER_OR_ADMIN,
                                                     LEGACY_ADMIN_OR_OWNER)
       for name in ("create", "update", "delete", "rule:create", "rule:delete", "add",
                    "remove")},
    **{name: (PROJECT_READER_OR_ADMIN, LEGACY_ADMIN_OR_OWNER)
       for name in ("os_compute_api:os-networks:list", "os_compute_api:os-networks:show",
                    "os_compute_api:os-tenant-networks:list",
                    "os_compute_api:os-tenant-networks:show")},
    # The floating-IP proxies (floating_ips.py, server_floating_ips.py): readers see the
    # project's floating IPs, members allocate, release, add and remove them; anybody
    # lists the pools.
    **{"os_compute_api:os-floating-ips:" + name: (PROJECT_READER_OR_ADMIN,
                                                  LEGACY_ADMIN_OR_OWNER)
       for name in ("list", "show")},
    **{"os_compute_api:os-floating-ips:" + name: (PROJECT_MEMBER_OR_ADMIN,
                                                  LEGACY_ADMIN_OR_OWNER)
       for name in ("create", "delete", "add", "remove")},
    "os_compute_api:os-floating-ip-pools": ("@", None),
    # Quotas, limits and usage (quota_sets.py, quota_classes.py, limits.py,
    # simple_tenant_usage.py): a project's readers see its own, admins change them.
    "os_compute_api:os-quota-sets:show": (PROJECT_READER_OR_ADMIN, LEGACY_ADMIN_OR_OWNER),
    "os_compute_api:os-quota-sets:detail": (PROJECT_READER_OR_ADMIN, LEGACY_ADMIN_OR_OWNER),
    "os_compute_api:os-quota-sets:defaults": ("@", None),
    "os_compute_api:os-quota-sets:update": (ADMIN, "rule:admin_api"),
    "os_compute_api:os-quota-sets:delete": (ADMIN, "rule:admin_api"),
    "os_compute_api:os-quota-class-sets:show": (ADMIN, "rule:admin_api"),
    "os_compute_api:os-quota-class-sets:update": (ADMIN, "rule:admin_api"),
    "os_compute_api:limits": ("@", None),
    "os_compute_api:limits:other_project": (ADMIN, "rule:admin_api"),
    "os_compute_api:os-simple-tenant-usage:show": (PROJECT_READER_OR_ADMIN,
                                                   LEGACY_ADMIN_OR_OWNER),
    "os_compute_api:os-simple-tenant-usage:list": (ADMIN, "rule:admin_api"),
    # Hypervisors and services (hypervisors.py, services.py): admin only.
    **{"os_compute_api:os-hypervisors:" + name: (ADMIN, None)
       for name in ("list", "list-detail", "show", "statistics", "uptime", "search",
                    "servers")},
    **{"os_compute_api:os-services:" + name: (ADMIN, None)
       for name in ("list", "update", "delete")},
    # Host aggregates (aggregates.py): admin only. Availability zones
    # (availability_zones.py): anybody lists them, admins see their hosts.
    **{"os_compute_api:os-aggregates:" + name: (ADMIN, None)
       for name in ("index", "create", "show", "update", "delete", "add_host", "remove_host",
                    "set_metadata")},
    "os_compute_api:os-availability-zone:list": ("@", None),
    # Other services' events about servers (server_external_events.py): admin only.
    "os_compute_api:os-server-external-events:create": (ADMIN, None),
    "os_compute_api:os-availability-zone:detail": (ADMIN, None),
    # The deprecated per-host API and the usage audit log (hosts.py,
    # usage_audit_log.py): admin only. The legacy extension list: anybody.
    **{"os_compute_api:os-hosts:" + name: (ADMIN, "rule:admin_api")
       for name in ("list", "show", "update", "reboot", "shutdown", "start")},
    **{"os_compute_api:os-instance-usage-audit-log:" + name: (ADMIN, "rule:admin_api")
       for name in ("list", "show")},
    "os_compute_api:extensions": ("@", None),
    # A server's addresses and its guest's password (server_ips.py,
    # server_password.py): its readers see them, its members clear the password.
    "os_compute_api:ips:index": (PROJECT_READER_OR_ADMIN, LEGACY_ADMIN_OR_OWNER),
    "os_compute_api:ips:show": (PROJECT_READER_OR_ADMIN, LEGACY_ADMIN_OR_OWNER),
    "os_compute_api:os-server-password:show": (PROJECT_READER_OR_ADMIN,
                                               LEGACY_ADMIN_OR_OWNER),
    "os_compute_api:os-server-password:clear": (PROJECT_MEMBER_OR_ADMIN,
                                                LEGACY_ADMIN_OR_OWNER),
    # What the guest shows (server_guest.py, server_diagnostics.py): its console to
    # the project's members, its diagnostics and network injection to admins.
    "os_compute_api:os-console-output": (PROJECT_MEMBER_OR_ADMIN, LEGACY_ADMIN_OR_OWNER),
    "os_compute_api:os-server-diagnostics": (ADMIN, "rule:admin_api"),
    "os_compute_api:os-admin-actions:inject_network_info": (ADMIN, "rule:admin_api"),
    # stowage's own: a simulated host's injected faults (simulator_faults.py,
    # docs/faults.md): admin only.
    **{"os_compute_api:os-simulator:faults:" + name: (ADMIN, None)
       for name in ("create", "index", "delete")},
    # stowage's own: drain plans and capacity (api/drain.py, docs/drain.md): admin only.
    "os_compute_api:os-stowage-drain": (ADMIN, None),
    "os_compute_api:os-stowage-capacity": (ADMIN, None),
}
