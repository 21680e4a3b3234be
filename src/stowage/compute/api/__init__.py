"""Compute HTTP handlers, one module per URL noun; each module exports `ROUTES`."""

from __future__ import annotations

from stowage.web.routing import Route, routes_of

__all__ = ["all_routes"]

# flavor_access and flavor_extra_specs before flavors: their paths are longer,
# and the table is matched in order.
# Server routes: /servers/{id}/<noun> before /servers/detail before /servers/{id}.
MODULES = ("root", "flavor_extra_specs", "flavor_access", "flavors", "server_groups",
           "server_migrations", "instance_actions", "server_interfaces", "server_metadata",
           "server_tags", "server_ips", "server_password", "server_diagnostics",
           "server_security_groups", "server_actions",
           "server_list", "server_create", "servers", "migrations", "hypervisors", "services",
           "keypairs", "quota_sets", "quota_classes", "limits", "simple_tenant_usage",
           "aggregates", "availability_zones", "image_metadata", "images", "hosts",
           "usage_audit_log", "extensions", "security_groups", "networks",
           "floating_ips",
           "server_external_events", "simulator_faults", "drain")


def all_routes() -> list[Route]:
    return routes_of(__name__, MODULES)
