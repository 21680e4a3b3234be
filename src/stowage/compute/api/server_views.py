"""Server views, shaped per microversion as Nova's server view builder shapes them.

What each microversion adds (2.1 is the base view):

    2.3   OS-EXT-SRV-ATTR: hostname, kernel_id, ramdisk_id, launch_index,
          reservation_id, root_device_name, user_data (with the admin-only attrs)
    2.9   locked
    2.16  host_status (admin)
    2.19  description
    2.26  tags (the server's, from the `tags` table)
    2.47  flavor inlined {original_name, vcpus, ram, disk, ephemeral, swap,
          extra_specs (if the caller may read them)} instead of {id, links}
    2.63  trusted_image_certificates
    2.71  server_groups (show and update only, never in the detailed list)
    2.73  locked_reason
    2.75  PUT /servers/{id} answers with the whole view
    2.90  OS-EXT-SRV-ATTR:hostname shown to everyone, not only with the extended attrs

`addresses` lists each port's fixed IPs under its network's name, with
`OS-EXT-IPS:type` "fixed" and `OS-EXT-IPS-MAC:mac_addr`, in the order of the
server's `networks` (what compute recorded when it bound the port, as Nova's
network info cache), then the floating IPs mapped to them with type "floating"
(compute/floating_addresses.py).

Policy decisions that do not depend on the server are taken once per request
(`Shown`), and the records a list needs (faults, host services, ports) are
read in one query each, not per server.
"""

from __future__ import annotations

import datetime
import hashlib
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Connection

from stowage.compute import aggregates as aggs
from stowage.compute import instance_ports, states
from stowage.compute import instances as inst
from stowage.compute import tags as tag_records
from stowage.compute.api import server_queries as queries
from stowage.compute.api.common import MAX_LIMIT, allowed, at_least, links, next_link
from stowage.compute.services import Service
from stowage.web.http import Request

__all__ = ["Shown", "isotime", "primitive_time", "host_id", "status", "basic", "show",
           "updated", "collection", "created", "flavor_view", "load_extras", "finish_extras",
           "Extras", "FAULT_STATUSES", "disk_config"]

EXTENDED_ATTRS_2_3 = 3
LOCKED = 9
HOST_STATUS = 16
DESCRIPTION = 19
TAGS = 26
FLAVOR_INLINE = 47
TRUSTED_CERTS = 63
SERVER_GROUPS = 71
LOCKED_REASON = 73
FULL_UPDATE_VIEW = 75
HOSTNAME_FOR_ALL = 90

_PROGRESS_STATUSES = ("ACTIVE", "BUILD", "REBUILD", "RESIZE", "VERIFY_RESIZE", "MIGRATING")
_FAULT_STATUSES = FAULT_STATUSES = ("ERROR", "DELETED")
INSTANCE_NAME = "instance-{:08x}"


def isotime(value: datetime.datetime | None) -> str | None:
    """Nova's utils.isotime: second precision, a 'Z' for UTC."""
    return None if value is None else value.strftime("%Y-%m-%dT%H:%M:%SZ")


def primitive_time(value: datetime.datetime | None) -> str | None:
    """A datetime as Nova's JSON serializer writes object fields (microseconds, no zone)."""
    return None if value is None else value.strftime("%Y-%m-%dT%H:%M:%S.%f")


def host_id(project_id: str | None, host: str | None) -> str:
    """Nova's obfuscated host id: sha224(project + host), "" without a host."""
    if not host:
        return ""
    return hashlib.sha224(((project_id or "") + host).encode()).hexdigest()


def disk_config(instance: inst.Instance) -> str:
    """OS-DCF:diskConfig: AUTO when the server's disk is resized to fit, else MANUAL."""
    return "AUTO" if instance.auto_disk_config else "MANUAL"


def status(instance: inst.Instance) -> str:
    if instance.deleted:
        return "DELETED"
    return states.status_of(instance.vm_state, instance.task_state)


@dataclass(frozen=True)
class Shown:
    """Per-request answers: which optional parts of the view the caller may see."""

    extra_specs: bool
    extended_attrs: bool
    host_status: bool
    is_admin: bool

    @classmethod
    def for_request(cls, req: Request) -> Shown:
        return cls(
            extra_specs=at_least(req, FLAVOR_INLINE)
            and allowed(req, "os_compute_api:servers:show:flavor-extra-specs"),
            extended_attrs=allowed(req, "os_compute_api:os-extended-server-attributes"),
            host_status=at_least(req, HOST_STATUS)
            and allowed(req, "os_compute_api:servers:show:host_status"),
            is_admin=req.context.is_admin)


@dataclass
class Extras:
    """Records around the instances of one response, read in one go."""

    faults: dict[str, dict[str, Any]] = field(default_factory=dict)
    services: dict[str, Service] = field(default_factory=dict)
    groups: dict[str, list[str]] = field(default_factory=dict)
    ports: dict[str, list[instance_ports.InstancePort]] = field(default_factory=dict)
    tags: dict[str, list[str]] = field(default_factory=dict)
    # server uuid -> [{"name": ...}] of its ports' groups (server_security_groups.bindings).
    security_groups: dict[str, list[dict[str, str]]] = field(default_factory=dict)

    def merge(self, other: Extras) -> None:
        """Another cell's records of the same response."""
        for name in ("faults", "services", "groups", "ports", "tags", "security_groups"):
            getattr(self, name).update(getattr(other, name))


def load_extras(conn: Connection, instances: Sequence[inst.Instance]) -> Extras:
    """What the views need from the instances' cell (`finish_extras` adds the rest)."""
    failed = [i.uuid for i in instances if status(i) in _FAULT_STATUSES]
    return Extras(faults=inst.latest_faults(conn, failed) if failed else {},
                  services=queries.host_services(conn, (i.host for i in instances)),
                  ports=instance_ports.of_instances(conn, [i.uuid for i in instances]),
                  tags=tag_records.of_instances(conn, [i.uuid for i in instances]))


def finish_extras(req: Request, extras: Extras, instances: Sequence[inst.Instance],
                  with_groups: bool = False) -> Extras:
    """The API database's part: the hosts' zones (aggregates) and, when asked, groups."""
    if not extras.services and not with_groups:
        return extras
    with req.app.db.read() as conn:
        zoned = aggs.with_zones(conn, list(extras.services.values()))
        extras.services = {s.host: s for s in zoned}
        if with_groups:
            extras.groups = {i.uuid: queries.groups_of(conn, i.uuid) for i in instances}
    return extras


def basic(req: Request, instance: inst.Instance) -> dict[str, Any]:
    return {"id": instance.uuid, "name": instance.display_name,
            "links": links(req, "servers", instance.uuid)}


def _image(req: Request, instance: inst.Instance) -> Any:
    if not instance.image_ref or instance.volume_backed:
        return ""
    return {"id": instance.image_ref,
            "links": [{"rel": "bookmark", "href": req.url(f"/images/{instance.image_ref}")}]}


def flavor_view(req: Request, flavor: dict[str, Any], shown: Shown) -> dict[str, Any]:
    if not at_least(req, FLAVOR_INLINE):
        flavorid = str(flavor.get("flavorid", ""))
        return {"id": flavorid,
                "links": [{"rel": "bookmark", "href": req.url(f"/flavors/{flavorid}")}]}
    view = {"vcpus": flavor.get("vcpus"), "ram": flavor.get("memory_mb"),
            "disk": flavor.get("root_gb"), "ephemeral": flavor.get("ephemeral_gb"),
            "swap": flavor.get("swap"), "original_name": flavor.get("name")}
    if shown.extra_specs:
        view["extra_specs"] = dict(flavor.get("extra_specs") or {})
    return view


def _fault(fault: dict[str, Any] | None, shown: Shown) -> dict[str, Any] | None:
    if not fault:
        return None
    view = {"code": fault["code"], "created": isotime(fault["created"]),
            "message": fault["message"]}
    if fault.get("details") and (shown.is_admin or fault["code"] != 500):
        view["details"] = fault["details"]
    return view


def _zone(req: Request, instance: inst.Instance, extras: Extras) -> str:
    """The host's zone once the server has one, else the zone it asked for."""
    if instance.host:
        service = extras.services.get(instance.host)
        zone = service.availability_zone if service else None
        return str(zone or req.app.settings.compute.default_availability_zone)
    return instance.availability_zone or ""


def addresses(ports: Sequence[instance_ports.InstancePort]) -> dict[str, list[dict[str, Any]]]:
    """network name -> the fixed IPs of the server's ports on it, in request order, then
    the floating IPs mapped to them (Nova's `get_networks_for_instance_from_nw_info`)."""
    fixed: dict[str, list[dict[str, Any]]] = {}
    floating: dict[str, list[dict[str, Any]]] = {}
    for port in ports:
        vif = port.vif or {}
        label, mac = str(vif.get("network", "")), vif.get("mac")
        for ip in vif.get("ips") or ():
            fixed.setdefault(label, []).append(
                {"version": ip["version"], "addr": ip["address"], "OS-EXT-IPS:type": "fixed",
                 "OS-EXT-IPS-MAC:mac_addr": mac})
            for addr in ip.get("floating") or ():
                floating.setdefault(label, []).append(
                    {"version": ipaddress.ip_address(addr).version, "addr": addr,
                     "OS-EXT-IPS:type": "floating", "OS-EXT-IPS-MAC:mac_addr": mac})
    return {label: ips + floating.get(label, []) for label, ips in fixed.items()}


def _extended(req: Request, instance: inst.Instance) -> dict[str, Any]:
    view: dict[str, Any] = {"OS-EXT-SRV-ATTR:host": instance.host,
            "OS-EXT-SRV-ATTR:instance_name": INSTANCE_NAME.format(instance.id or 0),
            "OS-EXT-SRV-ATTR:hypervisor_hostname": instance.node}
    if at_least(req, EXTENDED_ATTRS_2_3):
        view.update({"OS-EXT-SRV-ATTR:hostname": instance.hostname,
                     "OS-EXT-SRV-ATTR:kernel_id": "", "OS-EXT-SRV-ATTR:ramdisk_id": "",
                     "OS-EXT-SRV-ATTR:launch_index": instance.launch_index,
                     "OS-EXT-SRV-ATTR:reservation_id": instance.reservation_id,
                     "OS-EXT-SRV-ATTR:root_device_name": None,
                     "OS-EXT-SRV-ATTR:user_data": instance.user_data})
    return view


def _base(req: Request, instance: inst.Instance, shown: Shown,
          extras: Extras) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": instance.uuid,
        "name": instance.display_name,
        "status": status(instance),
        "tenant_id": instance.project_id,
        "user_id": instance.user_id,
        "metadata": dict(instance.metadata or {}),
        "hostId": host_id(instance.project_id, instance.host),
        "image": _image(req, instance),
        "flavor": flavor_view(req, instance.flavor, shown),
        "created": isotime(instance.created_at),
        "updated": isotime(instance.updated_at or instance.created_at),
        "addresses": addresses(extras.ports.get(instance.uuid, ())),
        "accessIPv4": instance.access_ip_v4 or "",
        "accessIPv6": instance.access_ip_v6 or "",
        "links": links(req, "servers", instance.uuid),
        "OS-DCF:diskConfig": disk_config(instance),
    }
    if view["status"] in _FAULT_STATUSES:
        fault = _fault(extras.faults.get(instance.uuid), shown)
        if fault:
            view["fault"] = fault
    if view["status"] in _PROGRESS_STATUSES:
        view["progress"] = instance.progress or 0
    return view


def _attributes(req: Request, instance: inst.Instance, shown: Shown,
                extras: Extras) -> dict[str, Any]:
    """Everything after the base part: zone, usage, states, and the versioned keys."""
    view: dict[str, Any] = {
        "OS-EXT-AZ:availability_zone": _zone(req, instance, extras),
        "config_drive": instance.config_drive or "",
        "key_name": instance.key_name,
        "OS-SRV-USG:launched_at": primitive_time(instance.launched_at),
        "OS-SRV-USG:terminated_at": primitive_time(instance.terminated_at),
    }
    # As Nova with Neutron: the ports' groups, and no key for a server in none.
    if extras.security_groups.get(instance.uuid):
        view["security_groups"] = list(extras.security_groups[instance.uuid])
    if shown.extended_attrs:
        view.update(_extended(req, instance))
    if at_least(req, HOSTNAME_FOR_ALL):
        view["OS-EXT-SRV-ATTR:hostname"] = instance.hostname
    view.update({"OS-EXT-STS:task_state": instance.task_state,
                 "OS-EXT-STS:vm_state": instance.vm_state,
                 "OS-EXT-STS:power_state": instance.power_state,
                 "os-extended-volumes:volumes_attached": []})
    return view


def _versioned(req: Request, instance: inst.Instance, shown: Shown,
               extras: Extras) -> dict[str, Any]:
    view: dict[str, Any] = {}
    if at_least(req, LOCKED):
        view["locked"] = bool(instance.locked)
    if shown.host_status:
        service = extras.services.get(instance.host or "")
        view["host_status"] = queries.host_status(service, instance.host,
                                                  req.app.settings.compute)
    if at_least(req, DESCRIPTION):
        view["description"] = instance.display_description
    if at_least(req, TAGS):
        view["tags"] = extras.tags.get(instance.uuid, [])
    if at_least(req, TRUSTED_CERTS):
        view["trusted_image_certificates"] = None
    if at_least(req, LOCKED_REASON):
        view["locked_reason"] = instance.locked_reason if instance.locked else None
    return view


def show(req: Request, instance: inst.Instance, shown: Shown, extras: Extras,
         with_groups: bool = False) -> dict[str, Any]:
    """The detailed view (GET /servers/{id}, /servers/detail items)."""
    view = _base(req, instance, shown, extras)
    view.update(_attributes(req, instance, shown, extras))
    view.update(_versioned(req, instance, shown, extras))
    if with_groups and at_least(req, SERVER_GROUPS):
        view["server_groups"] = extras.groups.get(instance.uuid, [])
    return view


def updated(req: Request, instance: inst.Instance, shown: Shown,
            extras: Extras) -> dict[str, Any]:
    """PUT /servers/{id} and rebuild: the base view, and from 2.75 the whole view.

    Before 2.75 Nova builds it with `extend_address=False`: addresses carry only
    version and addr, without the OS-EXT-IPS keys."""
    if at_least(req, FULL_UPDATE_VIEW):
        return show(req, instance, shown, extras, with_groups=True)
    view = _base(req, instance, shown, extras)
    view["addresses"] = {name: [{"version": ip["version"], "addr": ip["addr"]} for ip in ips]
                         for name, ips in view["addresses"].items()}
    view.update({k: v for k, v in _versioned(req, instance, shown, extras).items()
                 if k != "host_status"})
    if at_least(req, SERVER_GROUPS):
        view["server_groups"] = extras.groups.get(instance.uuid, [])
    return view


def collection(req: Request, instances: Sequence[inst.Instance], detailed: bool,
               limit: int, shown: Shown | None = None,
               extras: Extras | None = None) -> dict[str, Any]:
    """`{"servers": [...]}` plus a next link when the page came back full."""
    if detailed:
        assert shown is not None and extras is not None
        items = [show(req, i, shown, extras) for i in instances]
    else:
        items = [basic(req, i) for i in instances]
    body: dict[str, Any] = {"servers": items}
    if instances and len(instances) == min(limit, MAX_LIMIT):
        path = "servers/detail" if detailed else "servers"
        body["servers_links"] = next_link(req, path, instances[-1].uuid)
    return body


def created(req: Request, instance: inst.Instance, admin_pass: str,
            security_groups: Sequence[str]) -> dict[str, Any]:
    """POST /servers: the new server's id and links (the rest comes with GET)."""
    return {"id": instance.uuid, "links": links(req, "servers", instance.uuid),
            "OS-DCF:diskConfig": disk_config(instance),
            "security_groups": [{"name": name} for name in security_groups],
            "adminPass": admin_pass}
