"""GET /extensions[/{alias}]: the legacy v2 extension list, for clients that still ask.

Extensions ended with v2.1: every feature is in the API at some microversion.
Nova still answers a frozen list so that old clients that look for an alias
before using a feature keep working. The list is history, not a statement of
what is served: Nova keeps names whose APIs it has removed (`os-consoles`).
stowage answers the part of that list that names the compute features of
v2.1 (not the long-gone nova-network, cells v1 and baremetal entries), each
with Nova's fixed `namespace` (a placeholder from the XML days), `updated`
and empty `links`. Anybody may read it; an alias not listed is 404.
"""

from __future__ import annotations

from typing import Any

from stowage.compute.api.common import API_PREFIX, authorize
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES", "EXTENSIONS"]

_NAMESPACE = "http://docs.openstack.org/compute/ext/fake_xml"
_UPDATED = "2014-12-03T00:00:00Z"

# (alias, name, what it adds), in alias order as Nova lists them.
EXTENSIONS: tuple[tuple[str, str, str], ...] = (
    ("NMN", "Multinic", "Multiple network support."),
    ("OS-DCF", "DiskConfig", "Disk Management Extension."),
    ("os-create-backup", "CreateBackup", "Create a backup of a server."),
    ("OS-EXT-AZ", "ExtendedAvailabilityZone", "Extended Availability Zone support."),
    ("OS-EXT-IPS", "ExtendedIps", "Adds type parameter to the ip list."),
    ("OS-EXT-IPS-MAC", "ExtendedIpsMac", "Adds mac address parameter to the ip list."),
    ("OS-EXT-SRV-ATTR", "ExtendedServerAttributes", "Extended Server Attributes support."),
    ("OS-EXT-STS", "ExtendedStatus", "Extended Status support."),
    ("OS-FLV-DISABLED", "FlavorDisabled", "Support to show the disabled status of a flavor."),
    ("OS-FLV-EXT-DATA", "FlavorExtraData", "Provide additional data for flavors."),
    ("OS-SCH-HNT", "SchedulerHints", "Pass arbitrary key/value pairs to the scheduler."),
    ("OS-SRV-USG", "ServerUsage", "Adds launched_at and terminated_at on Servers."),
    ("os-access-ips", "AccessIPs", "Access IPs support."),
    ("os-admin-actions", "AdminActions", "Enable admin-only server actions."),
    ("os-aggregates", "Aggregates", "Admin-only aggregate administration."),
    ("os-attach-interfaces", "AttachInterfaces", "Attach interface support."),
    ("os-availability-zone", "AvailabilityZone", "1. Add availability_zone to the Create "
                                                 "Server API. 2. Add availability zones "
                                                 "describing."),
    ("os-config-drive", "ConfigDrive", "Config Drive Extension."),
    ("os-console-output", "ConsoleOutput", "Console log output support, with tailing "
                                           "ability."),
    ("os-consoles", "Consoles", "Interactive Console support."),
    ("os-create-server-ext", "Createserverext", "Extended support to the Create Server v1.1 "
                                                "API."),
    ("os-evacuate", "Evacuate", "Enables server evacuation."),
    ("os-extended-evacuate-find-host", "ExtendedEvacuateFindHost",
     "Enables server evacuation without target host. Scheduler will select one to target."),
    ("os-extended-hypervisors", "ExtendedHypervisors", "Extended hypervisors support."),
    ("os-extended-quotas", "ExtendedQuotas", "Adds ability for admins to delete quota and "
                                             "optionally force the update Quota command."),
    ("os-extended-services", "ExtendedServices", "Extended services support."),
    ("os-extended-services-delete", "ExtendedServicesDelete", "Extended services deletion "
                                                              "support."),
    ("os-flavor-access", "FlavorAccess", "Flavor access support."),
    ("os-flavor-extra-specs", "FlavorExtraSpecs", "Flavors extra specs support."),
    ("os-flavor-manage", "FlavorManage", "Flavor create/delete API support."),
    ("os-flavor-rxtx", "FlavorRxtx", "Support to show the rxtx status of a flavor."),
    ("os-flavor-swap", "FlavorSwap", "Support to show the swap status of a flavor."),
    ("os-hide-server-addresses", "HideServerAddresses", "Support hiding server addresses "
                                                        "in certain states."),
    ("os-hosts", "Hosts", "Admin-only host administration."),
    ("os-hypervisor-status", "HypervisorStatus", "Show hypervisor status."),
    ("os-hypervisors", "Hypervisors", "Admin-only hypervisor administration."),
    ("os-instance-actions", "InstanceActions", "View a log of actions and events taken on "
                                               "an instance."),
    ("os-instance_usage_audit_log", "OSInstanceUsageAuditLog", "Admin-only Task Log "
                                                                "Monitoring."),
    ("os-keypairs", "Keypairs", "Keypair Support."),
    ("os-lock-server", "LockServer", "Enable lock/unlock server actions."),
    ("os-migrate-server", "MigrateServer", "Enable migrate and live-migrate server "
                                           "actions."),
    ("os-migrations", "Migrations", "Provide data on migrations."),
    ("os-multiple-create", "MultipleCreate", "Allow multiple create in the Create Server "
                                             "v2.1 API."),
    ("os-pause-server", "PauseServer", "Enable pause/unpause server actions."),
    ("os-quota-class-sets", "QuotaClasses", "Quota classes management support."),
    ("os-quota-sets", "Quotas", "Quotas management support."),
    ("os-rescue", "Rescue", "Instance rescue mode."),
    ("os-server-diagnostics", "ServerDiagnostics", "Allow Admins to view server "
                                                   "diagnostics through server action."),
    ("os-server-external-events", "ServerExternalEvents", "Server External Event Triggers."),
    ("os-server-group-quotas", "ServerGroupQuotas", "Adds quota support to server groups."),
    ("os-server-groups", "ServerGroups", "Server group support."),
    ("os-server-list-multi-status", "ServerListMultiStatus", "Allow to filter the servers by "
                                                             "a set of status values."),
    ("os-server-password", "ServerPassword", "Server password support."),
    ("os-server-sort-keys", "ServerSortKeys", "Add sorting support in get Server v2 API."),
    ("os-server-start-stop", "ServerStartStop", "Start/Stop instance compute API support."),
    ("os-services", "Services", "Services support."),
    ("os-shelve", "Shelve", "Instance shelve mode."),
    ("os-simple-tenant-usage", "SimpleTenantUsage", "Simple tenant usage extension."),
    ("os-suspend-server", "SuspendServer", "Enable suspend/resume server actions."),
    ("os-used-limits", "UsedLimits", "Provide data on limited resources that are being "
                                     "used."),
    ("os-used-limits-for-admin", "UsedLimitsForAdmin", "Provide data to admin on limited "
                                                       "resources used by other tenants."),
    ("os-user-data", "UserData", "Add user_data to the Create Server API."),
    ("os-user-quotas", "UserQuotas", "Project user quota support."),
)


def _view(alias: str, name: str, description: str) -> dict[str, Any]:
    return {"alias": alias, "name": name, "description": description,
            "namespace": _NAMESPACE, "updated": _UPDATED, "links": []}


def list_extensions(req: Request) -> Response:
    authorize(req, "os_compute_api:extensions", {})
    return json_response({"extensions": [_view(*entry) for entry in EXTENSIONS]})


def show_extension(req: Request) -> Response:
    authorize(req, "os_compute_api:extensions", {})
    alias = req.params["alias"]
    for entry in EXTENSIONS:
        if entry[0] == alias:
            return json_response({"extension": _view(*entry)})
    raise HTTPError(404, "The resource could not be found.")


ROUTES = [
    Route("GET", API_PREFIX + "/extensions", list_extensions),
    Route("GET", API_PREFIX + "/extensions/{alias}", show_extension),
]
