"""The version document (`/`), the v2.0 resource list (`/v2.0`) and the extensions this
service implements (`/v2.0/extensions[/{alias}]`).

Only extensions whose behaviour is really served are listed: clients (the
openstack CLI, Nova) switch features on by alias. `port-resource-request-
groups` is listed only while `[network] resource_request_format` is
"groups", since it announces that format.
"""

from __future__ import annotations

from typing import Any

from stowage.network import errors as e
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES", "PUBLIC_PATHS", "EXTENSIONS", "extensions_for"]

# alias -> (name, description, updated): one entry per extension, Neutron's wording.
EXTENSIONS: dict[str, tuple[str, str, str]] = {
    "agent": ("agent", "The agent management extension.", "2013-02-03T10:00:00-00:00"),
    "allowed-address-pairs": ("Allowed Address Pairs", "Provides allowed address pairs",
                              "2013-07-23T10:00:00-00:00"),
    "binding": ("Port Binding", "Expose port bindings of a virtual port to external "
                "application", "2014-02-03T10:00:00-00:00"),
    "binding-extended": ("Port Bindings Extended", "Expose port bindings of a virtual port "
                         "to external application", "2017-07-17T10:00:00-00:00"),
    "external-net": ("Neutron external network", "Adds external network attribute to "
                     "network resource.", "2013-01-14T10:00:00-00:00"),
    "ext-gw-mode": ("Neutron L3 Configurable external gateway mode", "Extension of the "
                    "router abstraction for specifying whether SNAT should occur on the "
                    "external gateway", "2013-03-28T10:00:00-00:00"),
    "extraroute": ("Neutron Extra Route", "Extra routes configuration for L3 router",
                   "2013-02-01T10:00:00-00:00"),
    "extraroute-atomic": ("Atomically add/remove extra routes", "Edit extra routes of a "
                          "router on server side by atomically adding/removing extra routes",
                          "2019-07-10T10:00:00-00:00"),
    "fip-port-details": ("Floating IP Port Details Extension", "Add port_details attribute "
                         "to Floating IP resource", "2018-04-09T10:00:00-00:00"),
    "extra_dhcp_opt": ("Neutron Extra DHCP options", "Extra options configuration for DHCP. "
                       "For example PXE boot options to DHCP clients can be specified (e.g. "
                       "tftp-server, server-ip-address, bootfile-name)",
                       "2013-03-17T12:00:00-00:00"),
    "filter-validation": ("Filter parameters validation", "Provides validation on filter "
                          "parameters.", "2018-03-21T10:00:00-00:00"),
    "network-mtu": ("Network MTU", "Provides MTU attribute for a network resource.",
                    "2015-03-25T10:00:00-00:00"),
    "network-mtu-writable": ("Network MTU (writable)", "Provides a writable MTU attribute "
                             "for a network resource.", "2017-07-12T00:00:00-00:00"),
    "pagination": ("Pagination support", "Extension that indicates that pagination is "
                   "enabled.", "2016-06-12T00:00:00-00:00"),
    "port-resource-request": ("Port Resource Request", "Expose resource request to Port",
                              "2018-05-08T10:00:00-00:00"),
    "port-resource-request-groups": ("Port Resource Request Groups", "Support requesting "
                                     "multiple groups of resources and traits from the same "
                                     "RP subtree in resource_request",
                                     "2021-08-02T10:00:00-00:00"),
    "project-id": ("project_id field enabled", "Extension that indicates that project_id "
                   "field is enabled.", "2016-09-09T09:09:09-09:09"),
    "provider": ("Provider Network", "Expose mapping of virtual networks to physical "
                 "networks", "2012-09-07T10:00:00-00:00"),
    "qos": ("Quality of Service", "The Quality of Service extension.",
            "2015-06-08T10:00:00-00:00"),
    "qos-bw-minimum-ingress": ("Ingress direction for QoS minimum bandwidth rule", "Allow "
                               "to configure QoS minumum bandwidth rule with ingress "
                               "direction.", "2018-07-09T10:00:00-00:00"),
    "qos-port-network-policy": ("QoS port network policy ID", "Adds a the QoS network ID to "
                                "the port definition", "2019-11-01T10:00:00-00:00"),
    "quota_details": ("Quota details management support", "Expose functions for quotas "
                      "usage statistics per project", "2017-02-10T10:00:00-00:00"),
    "quotas": ("Quota management support", "Expose functions for quotas management per "
               "project", "2012-07-29T10:00:00-00:00"),
    "router": ("Neutron L3 Router", "Router abstraction for basic L3 forwarding between L2 "
               "Neutron networks and access to external networks via a NAT gateway.",
               "2012-07-20T10:00:00-00:00"),
    "revision-if-match": ("If-Match constraints based on revision_number", "Extension "
                          "indicating that If-Match based on revision_number is supported.",
                          "2016-12-11T00:00:00-00:00"),
    "security-group": ("security-group", "The security groups extension.",
                       "2012-10-05T10:00:00-00:00"),
    "sorting": ("Sorting support", "Extension that indicates that sorting is enabled.",
                "2016-06-12T00:00:00-00:00"),
    "subnet_allocation": ("Subnet Allocation", "Enables allocation of subnets from a subnet "
                          "pool", "2015-03-30T10:00:00-00:00"),
    "standard-attr-description": ("standard-attr-description", "Extension to add "
                                  "descriptions to standard attributes",
                                  "2016-02-10T10:00:00-00:00"),
    "standard-attr-revisions": ("Resource revision numbers", "This extension will display "
                                "the revision number of neutron resources.",
                                "2016-04-11T10:00:00-00:00"),
    "standard-attr-tag": ("Tag support for resources with standard attribute: network, "
                          "subnet, port, security_group, subnetpool",
                          "Enables to set tag on resources with standard attribute.",
                          "2017-01-01T00:00:00-00:00"),
    "tag-ports-during-bulk-creation": ("Tag Ports During Bulk Creation", "Allow to tag "
                                       "ports during bulk creation",
                                       "2019-12-29T19:00:00-00:00"),
    "standard-attr-timestamp": ("Resource timestamps", "Adds created_at and updated_at "
                                "fields to all Neutron resources that have Neutron standard "
                                "attributes.", "2016-09-12T10:00:00-00:00"),
}
PUBLIC_PATHS = frozenset({"", "/", "/v2.0", "/v2.0/"})
RESOURCES = (("network", "networks"), ("subnet", "subnets"), ("port", "ports"),
             ("policy", "qos/policies"), ("rule_type", "qos/rule-types"),
             ("security_group", "security-groups"),
             ("security_group_rule", "security-group-rules"), ("quota", "quotas"),
             ("router", "routers"), ("floatingip", "floatingips"),
             ("subnetpool", "subnetpools"), ("agent", "agents"),
             ("extension", "extensions"))


def extensions_for(resource_request_format: str) -> list[str]:
    aliases = sorted(EXTENSIONS)
    if resource_request_format != "groups":
        aliases.remove("port-resource-request-groups")
    return aliases


def _extension(alias: str) -> dict[str, Any]:
    name, description, updated = EXTENSIONS[alias]
    return {"alias": alias, "name": name, "description": description, "updated": updated,
            "links": []}


def versions(req: Request) -> Response:
    return json_response({"versions": [{"id": "v2.0", "status": "CURRENT",
                                        "links": [{"rel": "self",
                                                   "href": req.url("/v2.0/")}]}]})


def resources(req: Request) -> Response:
    return json_response({"resources": [
        {"name": name, "collection": collection,
         "links": [{"rel": "self", "href": req.url(f"/v2.0/{collection}")}]}
        for name, collection in RESOURCES]})


def _served(req: Request) -> list[str]:
    return extensions_for(req.app.settings.network.resource_request_format)


def list_extensions(req: Request) -> Response:
    return json_response({"extensions": [_extension(a) for a in _served(req)]})


def show_extension(req: Request) -> Response:
    alias = req.params["alias"]
    if alias not in _served(req):
        raise HTTPError(404, f"Extension with alias {alias} does not exist",
                        e.EXTENSION_NOT_FOUND)
    return json_response({"extension": _extension(alias)})


ROUTES = [
    Route("GET", "/", versions),
    Route("GET", "/v2.0", resources),
    Route("GET", "/v2.0/", resources),
    Route("GET", "/v2.0/extensions", list_extensions),
    Route("GET", "/v2.0/extensions/{alias}", show_extension),
]
