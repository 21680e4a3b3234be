"""What the quota handlers share: whose quota a request spends, and which keys a version shows.

    2.36  the nova-network keys (fixed_ips, floating_ips, security_groups,
          security_group_rules, networks) leave os-quota-sets and /limits
    2.50  ... and os-quota-class-sets, which from then on shows server_groups and
          server_group_members (hidden before)
    2.57  the injected_file* keys (personality files) leave all three
"""

from __future__ import annotations

from stowage.compute import keypairs
from stowage.compute import quota_limits as limits
from stowage.compute.quota_checks import OverQuota, Owner
from stowage.web.errors import HTTPError
from stowage.web.http import Request

__all__ = ["owner", "over_quota", "hidden_keys", "NO_NETWORK", "NO_INJECTED_FILES"]

NO_NETWORK = 36
NO_INJECTED_FILES = 57


def owner(req: Request, project_id: str | None = None, user_id: str | None = None) -> Owner:
    """The quota owner (the caller's project and user unless named), with this process's
    way of counting cores and ram (its Placement client, when it serves servers)."""
    plane = req.app.plane
    return Owner(project_id=project_id or req.context.project_id or "",
                 user_id=user_id or req.context.user_id or "",
                 settings=req.app.settings.quota,
                 placement=None if plane is None else plane.placement,
                 count_keypairs=keypairs.count_keypairs,
                 api_db=req.app.db, cell_db=req.app.cell_db,
                 other_cells=req.app.other_cell_dbs(req.app.cell_db))


def over_quota(exc: OverQuota) -> HTTPError:
    """Nova answers every quota refusal with 403 and the exception's message."""
    return HTTPError(403, exc.message)


def hidden_keys(minor: int, network_from: int = NO_NETWORK) -> tuple[str, ...]:
    """The resources an answer at 2.`minor` leaves out."""
    hidden: tuple[str, ...] = ()
    if minor >= network_from:
        hidden += limits.NETWORK_RESOURCES
    if minor >= NO_INJECTED_FILES:
        hidden += limits.INJECTED_FILE_RESOURCES
    return hidden
