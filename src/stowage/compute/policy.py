"""Compute policy: Nova's default rules for the APIs stowage serves.

Reading flavors needs no rule at all (everybody may); managing flavors, their
extra specs and their access lists is for admins. Rules with a deprecated
default keep Nova's legacy meaning unless `enforce_new_defaults` is on.
"""

from __future__ import annotations

__all__ = ["COMPUTE_RULES"]

ADMIN = "rule:context_is_admin"
PROJECT_READER_OR_ADMIN = "rule:project_reader_or_admin"
LEGACY_ADMIN_OR_OWNER = "rule:admin_or_owner"

# name -> (check string, deprecated check string or None)
COMPUTE_RULES: dict[str, tuple[str, str | None]] = {
    "context_is_admin": ("role:admin", None),
    "admin_or_owner": ("is_admin:True or project_id:%(project_id)s", None),
    "admin_api": ("is_admin:True", None),
    "project_reader_api": ("role:reader and project_id:%(project_id)s", None),
    "project_reader_or_admin": ("rule:project_reader_api or rule:context_is_admin", None),
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
}
