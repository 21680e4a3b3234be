"""POST /servers: validate a boot request, write its records, hand it to the conductor.

The request body is checked against Nova's schema for the microversion,
formats included (`server_create_schema`). Then against the records: the flavor
must be visible and enabled, the metadata within the `metadata_items` quota, the image
active and big enough, the key pair, security groups and disk config as
`server_boot_extras` checks them, the zone known, a requested host or node real (a
node alone pins the build to the node's host), the server group real, and
max_count within `max_count_per_request`. Then the quotas (`quota_checks`):
instances, cores and ram for max_count servers, lowered to what fits when
min_count still does (Nova's check_num_instances_quota), and the group's
server_group_members. A request that fails any check writes nothing (403 for
a quota).

The requested networks are checked against the Network service
(`server_networks`) before anything is written, and so is the project's port
quota (`server_port_quota`: 403 PortLimitExceeded, or max_count lowered to the
servers whose ports fit, before the instance quotas count); each server's ports are
recorded with it (`instance_ports`), where a port another server took
meanwhile is refused (409 PortInUse) and the whole request with it.

Only then are the instance rows, request specs, group memberships and
`create` actions written, `_BATCH` instances per transaction so that a
multi-create never holds the database's write lock for long; the checks share
the first batch's transaction. Should a later batch fail, the servers of the
earlier ones are deleted again. With `[quota] recheck_quota`, the quotas are
counted again once every batch is committed: a concurrent request that took
the room meanwhile makes this one 403 and its servers are deleted again
(Nova's recheck). The conductor is cast after the last commit.

Root disk: an image, or a volume (`block_device_mapping_v2` with boot_index 0
and destination_type volume): a volume-backed server may have an empty
imageRef and consumes no DISK_GB for its root.
"""

from __future__ import annotations

import logging
import re
import secrets
import string
import uuid as uuidlib
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Connection

from stowage.compute import actions, instance_ports, quota_checks, server_groups, states
from stowage.compute import cells as cell_records
from stowage.compute import flavors as flv
from stowage.compute import instances as inst
from stowage.compute import tags as tag_records
from stowage.compute.api import server_boot_extras as extras
from stowage.compute.api import server_queries as queries
from stowage.compute.api import server_security_groups
from stowage.compute.api import server_views as views
from stowage.compute.api.common import (
    API_PREFIX,
    allowed,
    at_least,
    authorize,
    read_body,
    validate_body,
)
from stowage.compute.api.quota_common import over_quota, owner
from stowage.compute.api.server_common import conductor
from stowage.compute.api.server_create_schema import (
    DESCRIPTION,
    NAME,
    TRUE_STRINGS,
    access_ips,
    check_formats,
    counts,
    create_schema,
)
from stowage.compute.api.server_networks import port_in_use, requested_networks
from stowage.compute.api.server_port_quota import servers_that_fit
from stowage.compute.conductor import tasks
from stowage.errors import NotFound
from stowage.image import images
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES", "NAME", "DESCRIPTION", "check_name", "check_description",
           "generate_password"]

LOG = logging.getLogger(__name__)

# Instances written per transaction by a multi-create.
_BATCH = 10


def check_name(name: str) -> None:
    if name != name.strip() or not name.isprintable():
        raise HTTPError(400, "An invalid 'name' value was provided. The name must be: "
                             "printable characters. Can not start or end with whitespace.")


def check_description(description: str | None) -> None:
    if description and not all(ch.isprintable() or ch in "\t\n\r" for ch in description):
        raise HTTPError(400, "Invalid input for field/attribute description. Value: "
                             f"{description}. The description must be printable characters.")


def _as_bool(value: Any) -> bool:
    return value is True or str(value) in TRUE_STRINGS


@dataclass
class Boot:
    """A checked boot request, before it meets the records."""

    name: str
    flavorid: str
    image_id: str | None  # the image to check (imageRef, or the root bdm's image)
    volume_backed: bool
    count: tuple[int, int]  # min_count, max_count
    zone: str | None
    destination: dict[str, str | None] | None
    hints: dict[str, Any]
    group: str | None
    networks: Any
    description: str | None
    metadata: dict[str, str]
    key_name: str | None
    config_drive: bool
    security_groups: list[str]
    admin_pass: str
    return_reservation_id: bool
    image_properties: dict[str, Any] = field(default_factory=dict)
    hostname: str | None = None  # 2.90: set by the caller instead of derived from the name
    disk_config: str | None = None  # OS-DCF:diskConfig as given
    access_ips: dict[str, str] = field(default_factory=dict)  # access_ip_v4/_v6 columns
    user_data: str | None = None  # base64, checked by the schema's format
    tags: list[str] = field(default_factory=list)  # 2.52
    # Found while checking the records: the key pair's public key, the disk config.
    key_data: str | None = None
    # The Network service's ids of `security_groups` (None without a Network service).
    security_group_ids: list[str] | None = None
    auto_disk_config: bool = False


def _boot_index(bdm: dict[str, Any]) -> int | None:
    value = bdm.get("boot_index")
    return None if value is None else int(value)


def _root_disk(body: dict[str, Any]) -> tuple[str | None, bool]:
    """(image to check, volume-backed?) from imageRef and block_device_mapping_v2."""
    image_ref = body.get("imageRef") or None
    root = next((b for b in body.get("block_device_mapping_v2") or []
                 if _boot_index(b) == 0), None)
    if root is None:
        if image_ref is None:
            if body.get("block_device_mapping_v2"):
                raise HTTPError(400, "Block Device Mapping is Invalid: Boot sequence for the "
                                     "instance and image/block device mapping combination is "
                                     "not valid.")
            raise HTTPError(400, "Missing imageRef attribute")
        return image_ref, False
    source = root.get("source_type")
    if source != "blank" and not (root.get("uuid") or root.get("image_id")
                                  or root.get("volume_id") or root.get("snapshot_id")):
        raise HTTPError(400, "Block Device Mapping is Invalid: Missing device UUID.")
    volume_backed = root.get("destination_type") == "volume"
    if source == "image":
        return image_ref or root.get("uuid") or root.get("image_id"), volume_backed
    if image_ref is None and not volume_backed:
        raise HTTPError(400, "Block Device Mapping is Invalid: Boot sequence for the "
                             "instance and image/block device mapping combination is "
                             "not valid.")
    return image_ref if not volume_backed else None, volume_backed


def _zone_and_host(req: Request, body: dict[str, Any]) -> tuple[str | None,
                                                                 dict[str, str | None] | None]:
    """The requested zone, and a requested destination (`zone:host:node` or 2.74 host)."""
    zone = body.get("availability_zone") or None
    destination: dict[str, str | None] | None = None
    if zone and ":" in zone:
        zone, _, rest = zone.partition(":")
        host, _, node = rest.partition(":")
        authorize(req, "os_compute_api:servers:create:forced_host", _target(req, zone))
        destination = {"host": host or None, "node": node or None}
        zone = zone or None
    if body.get("host") or body.get("hypervisor_hostname"):
        authorize(req, "compute:servers:create:requested_destination", _target(req, zone))
        if destination is not None:
            raise HTTPError(400, "One mechanism with host and/or hypervisor_hostname and "
                                 "another mechanism with zone:host:node are mutually "
                                 "exclusive.")
        destination = {"host": body.get("host"), "node": body.get("hypervisor_hostname")}
    return zone, destination


def _target(req: Request, zone: str | None) -> dict[str, object]:
    return {"project_id": req.context.project_id, "user_id": req.context.user_id,
            "availability_zone": zone}


def _hints(body: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    hints = dict(body.get("os:scheduler_hints") or body.get("OS-SCH-HNT:scheduler_hints")
                 or {})
    group = hints.get("group")
    if isinstance(group, list):
        group = group[0] if group else None
    return hints, group


def _parse(req: Request, data: dict[str, Any]) -> Boot:
    body = data["server"]
    check_name(body["name"])
    description = body.get("description") if at_least(req, 19) else body["name"]
    check_description(description)
    min_count, max_count = counts(body)
    if body.get("hostname") and max_count > 1:
        raise HTTPError(400, "Unable to allocate a single hostname to multiple instances")
    zone, destination = _zone_and_host(req, body)
    authorize(req, "os_compute_api:servers:create", _target(req, zone))
    image_id, volume_backed = _root_disk(body)
    if body.get("block_device_mapping_v2"):
        authorize(req, "os_compute_api:servers:create:attach_volume", _target(req, zone))
    networks = body.get("networks")
    if isinstance(networks, list) and networks:
        authorize(req, "os_compute_api:servers:create:attach_network", _target(req, zone))
    hints, group = _hints(data)
    groups = [g["name"] for g in body.get("security_groups") or [] if g.get("name")]
    return Boot(
        name=body["name"], flavorid=str(body["flavorRef"]).rstrip("/").split("/")[-1],
        image_id=image_id, volume_backed=volume_backed, count=(min_count, max_count),
        zone=zone, destination=destination, hints=hints, group=group, networks=networks,
        description=description, metadata=dict(body.get("metadata") or {}),
        key_name=body.get("key_name"), config_drive=_as_bool(body.get("config_drive")),
        security_groups=sorted(set(groups)) or ["default"],
        admin_pass=body.get("adminPass") or generate_password(),
        return_reservation_id=_as_bool(body.get("return_reservation_id")),
        hostname=body.get("hostname"), disk_config=body.get("OS-DCF:diskConfig"),
        access_ips=access_ips(body), tags=sorted(set(body.get("tags") or ())),
        user_data=body.get("user_data"))


def generate_password(length: int = 12) -> str:
    """A generated admin password, as Nova makes one when none is given (create, rebuild,
    evacuate, rescue)."""
    alphabet = string.ascii_letters + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(length))


def _flavor(req: Request, conn: Connection, boot: Boot) -> flv.Flavor:
    try:
        flavor = flv.get(conn, boot.flavorid, req.context)
    except NotFound:
        raise HTTPError(400, f"Flavor {boot.flavorid} could not be found.") from None
    if flavor.disabled:
        raise HTTPError(400, f"Flavor {boot.flavorid} could not be found.")
    return flavor


def _check_image(req: Request, conn: Connection, boot: Boot, flavor: flv.Flavor) -> None:
    """The image exists, is active, and fits the flavor (disk only when image-backed)."""
    if boot.image_id is None:
        return
    try:
        image = images.get(conn, boot.image_id, req.context)
    except NotFound:
        raise HTTPError(400, "Can not find requested image") from None
    if image.status != "active":
        raise HTTPError(400, f"Image {image.id} is not active.")
    boot.image_id = image.id
    boot.image_properties = dict(image.properties)
    if flavor.memory_mb < (image.min_ram or 0):
        raise HTTPError(400, "Flavor's memory is too small for requested image.")
    if boot.volume_backed or flavor.root_gb == 0:
        return
    if (image.min_disk or 0) > flavor.root_gb:
        gib = 1024 ** 3
        raise HTTPError(400, "Flavor's disk is smaller than the minimum size specified in "
                             f"image metadata. Flavor disk is {flavor.root_gb * gib} bytes, "
                             f"minimum size is {image.min_disk * gib} bytes.")


def _check_placement_hints(req: Request, conn: Connection, boot: Boot,
                           flavor: flv.Flavor) -> None:
    """Zone, destination host, server group and zero-disk rules."""
    if flavor.root_gb == 0 and not boot.volume_backed and not allowed(
            req, "os_compute_api:servers:create:zero_disk_flavor"):
        raise HTTPError(403, "Only volume-backed servers are allowed for flavors with zero "
                             "disk.")
    default_zone = req.app.settings.compute.default_availability_zone
    zones: set[str] = set()
    for db in req.app.cell_dbs() if boot.zone else ():  # any cell's hosts
        with db.using(conn) as cell:
            zones |= queries.known_zones(cell, req.app.db, default_zone)
    if boot.zone and boot.destination is None and boot.zone not in zones:
        raise HTTPError(400, "The requested availability zone is not available")
    if boot.destination is not None:
        _check_destination(req, conn, boot.destination)
    if boot.group is not None:
        project = None if req.context.is_admin else req.context.project_id
        try:
            with req.app.db.using(conn) as api:
                server_groups.get(api, boot.group, project, cell_db=req.app.cell_dbs())
        except NotFound:
            raise HTTPError(400, f"Instance group {boot.group} could not be found.") from None


def _check_destination(req: Request, conn: Connection,
                       destination: dict[str, str | None]) -> None:
    """The requested host and/or node exist (in any cell); a node named alone pins its
    host.

    As Nova's `_validate_host_or_node`: a host needs a compute service, a host
    and a node need that node on that host, a node alone needs a node of that
    name (Nova asks Placement for a provider so named); each miss is a 400.
    """
    host, node = destination.get("host"), destination.get("node")
    if host:
        with req.app.host_db(host).using(conn) as cell:
            if not queries.compute_host_exists(cell, host):
                raise HTTPError(400, f"Compute host {host} could not be found.")
    if not node:
        return
    hosts: list[str] = []
    for db in req.app.cell_dbs():
        with db.using(conn) as cell:
            hosts += queries.hosts_of_node(cell, node)
    if host and host not in hosts:
        raise HTTPError(400, f"Compute host {host} could not be found.")
    if not hosts:
        raise HTTPError(400, f"Compute host {node} could not be found.")
    # The scheduler places on a host (and a node of it): name the node's host.
    destination["host"] = host or hosts[0]


def _check_limits(req: Request, boot: Boot) -> None:
    """Servers per request within `max_count_per_request` (403, as Nova's quota would)."""
    min_count, max_count = boot.count
    limit = req.app.settings.compute.max_count_per_request
    if max_count > limit:
        wanted = str(min_count) if min_count == max_count else f"{min_count}-{max_count}"
        raise HTTPError(403, f"Quota exceeded for instances: Requested {wanted}, but at most "
                             f"{limit} instances may be created in one request")


def _check_extras(req: Request, conn: Connection, boot: Boot) -> None:
    """Key pair, security groups and disk config (`server_boot_extras`)."""
    boot.key_data = extras.key_data(conn, req, boot.key_name)
    if boot.security_group_ids is None:
        extras.check_security_groups(boot.security_groups)
    boot.auto_disk_config = extras.auto_disk_config(boot.disk_config, boot.image_id,
                                                    boot.image_properties)


def _check_quotas(req: Request, conn: Connection, boot: Boot, flavor: flv.Flavor) -> None:
    """Metadata items, then instances/cores/ram (lowering max_count to what fits), then
    the group's members; each refusal is Nova's 403."""
    who = owner(req)
    snapshot = {"vcpus": flavor.vcpus, "memory_mb": flavor.memory_mb}
    try:
        quota_checks.check_metadata_items(conn, who, len(boot.metadata))
        fits = quota_checks.instances_that_fit(conn, who, snapshot, *boot.count)
        boot.count = (boot.count[0], fits)
        if boot.group is not None:
            quota_checks.check_group_members(conn, who, boot.group, fits)
    except quota_checks.OverQuota as exc:
        raise over_quota(exc) from None


def _recheck_quotas(req: Request, build: _Build) -> None:
    """Count again with every server written; over the limit, this request loses: its
    servers are deleted again and its journal entry ended (nothing was cast yet)."""
    if not req.app.settings.quota.recheck_quota:
        return
    who, boot = owner(req), build.boot
    try:
        with req.app.cell_db.read() as conn:
            quota_checks.recheck_instances(conn, who, build.snapshot, len(build.made))
            if boot.group is not None:
                quota_checks.check_group_members(conn, who, boot.group, 0)
    except quota_checks.OverQuota as exc:
        _undo(req, build.made)
        if build.operation is not None:
            with req.app.cell_db.write() as conn:
                tasks.end_accepted(conn, build.operation, "build")
        raise over_quota(exc) from None


def hostname_of(name: str) -> str:
    """Nova's sanitize_hostname: lower case, [a-z0-9.-], at most 63 characters."""
    hostname = re.sub(r"[ _]", "-", name)
    hostname = re.sub(r"[^\w.-]+", "", hostname, flags=re.ASCII).lower().strip(".-")
    return hostname[:63] or "server"


def _reservation_id() -> str:
    alphabet = string.ascii_lowercase + string.digits
    return "r-" + "".join(secrets.choice(alphabet) for _ in range(8))


def _spec(req: Request, boot: Boot, uuid: str, snapshot: dict[str, Any]) -> dict[str, Any]:
    """The request spec the scheduler reads for this instance (and later moves)."""
    return {"instance_uuid": uuid, "project_id": req.context.project_id,
            "user_id": req.context.user_id, "flavor": snapshot,
            "is_volume_backed": boot.volume_backed,
            "image": {"id": boot.image_id, "properties": boot.image_properties},
            "availability_zone": boot.zone, "scheduler_hints": boot.hints,
            "instance_group": boot.group, "ignore_hosts": [],
            "requested_destination": boot.destination, "num_instances": boot.count[1],
            "move": False, **({} if boot.security_group_ids is None else
                              {"security_groups": boot.security_group_ids})}


@dataclass
class _Build:
    """What one POST /servers writes: its servers, with one flavor and reservation id."""

    boot: Boot
    snapshot: dict[str, Any]
    reservation: str = field(default_factory=_reservation_id)
    made: list[inst.Instance] = field(default_factory=list)
    # Each server's `networks` entries, checked (recorded in `instance_ports`).
    requested: list[instance_ports.Requested] = field(default_factory=list)
    # The conductor's journal entry for the build, written with the last batch.
    operation: str | None = None
    # Servers whose API records (mapping, request spec, membership) were written: with
    # the cell in a database of its own they commit apart from the servers themselves.
    api_written: list[str] = field(default_factory=list)

    def left(self) -> int:
        return self.boot.count[1] - len(self.made)

    def unmade(self) -> list[str]:
        """Servers with API records whose own transaction rolled back."""
        made = {i.uuid for i in self.made}
        return [uuid for uuid in self.api_written if uuid not in made]


def _write_batch(req: Request, conn: Connection, build: _Build) -> None:
    """The build's next `_BATCH` instances (fewer the last time), in `conn`'s transaction."""
    ctx, boot = req.context, build.boot
    count = boot.count[1]
    written: list[inst.Instance] = []
    for index in range(len(build.made), len(build.made) + min(_BATCH, build.left())):
        name = f"{boot.name}-{index + 1}" if count > 1 else boot.name
        instance = inst.create(conn, inst.Instance(
            uuid=str(uuidlib.uuid4()), project_id=ctx.project_id or "",
            user_id=ctx.user_id or "", display_name=name, flavor=build.snapshot,
            vm_state=states.BUILDING, task_state=states.TASK.SCHEDULING,
            hostname=boot.hostname or hostname_of(name), availability_zone=boot.zone,
            image_ref="" if boot.volume_backed else boot.image_id,
            volume_backed=boot.volume_backed, key_name=boot.key_name, key_data=boot.key_data,
            auto_disk_config=boot.auto_disk_config,
            access_ip_v4=boot.access_ips.get("access_ip_v4"),
            access_ip_v6=boot.access_ips.get("access_ip_v6"), user_data=boot.user_data,
            metadata=boot.metadata, networks=boot.networks,
            config_drive="True" if boot.config_drive else "",
            display_description=boot.description, progress=0,
            reservation_id=build.reservation, launch_index=index))
        with req.app.db.using(conn, write=True) as api:
            cell_records.map_instance(api, instance.uuid, req.app.cells.default(),
                                      instance.project_id, instance.user_id)
            inst.save_request_spec(api, instance.uuid,
                                   _spec(req, boot, instance.uuid, build.snapshot))
            if boot.group is not None:
                server_groups.add_member(api, boot.group, instance.uuid)
        build.api_written.append(instance.uuid)
        _crash_point(req, "build", "api_records", "done")  # crash tests only
        try:
            instance_ports.record_requested(conn, instance.uuid, build.requested)
        except instance_ports.PortTaken as exc:
            raise port_in_use(exc.port_id) from None
        if boot.tags:
            tag_records.replace(conn, instance.uuid, boot.tags)
        actions.start_action(conn, instance.uuid, "create", ctx.request_id, ctx.user_id,
                             ctx.project_id)
        written.append(instance)
    build.made.extend(written)
    if build.left() == 0:
        # The intent, durable with the last servers: a cast lost in a crash is found again.
        build.operation = tasks.accept(conn, "build", build.made[0].uuid, ctx.request_id,
                                       instance_uuids=[i.uuid for i in build.made])


def _crash_point(req: Request, operation: str, step: str, state: str) -> None:
    """Testing only (`[compute] crash_at`): end the process here, as kill -9 would -- with
    a cell database of its own, right after the API records committed (unbuilt.py)."""
    hook = tasks.crash_hook(req.app.settings.compute.crash_at)
    if hook is not None:
        hook(operation, step, state)


def _write_rest(req: Request, build: _Build) -> None:
    """The batches after the first, each its own transaction; a failure undoes them all."""
    committed = len(build.made)
    try:
        while build.left() > 0:
            committed = len(build.made)
            with req.app.cell_db.write() as conn:
                _write_batch(req, conn, build)
    except Exception:
        del build.made[committed:]  # written in the transaction that rolled back
        _undo(req, build.made)
        _forget_api_records(req, build.unmade())
        raise


def _forget_api_records(req: Request, uuids: list[str]) -> None:
    """The API records of servers whose cell transaction rolled back (none while one
    database holds both: they rolled back with it)."""
    if not uuids:
        return
    try:
        with req.app.db.write() as conn:
            for uuid in uuids:
                queries.forget_api_records(conn, uuid)
    except Exception:  # logged, never raised over the error that brought us here
        LOG.exception("could not remove the API records of %d unbuilt servers", len(uuids))


def _undo(req: Request, made: list[inst.Instance]) -> None:
    """Delete the servers of the committed batches (nothing was cast for them yet)."""
    try:
        with req.app.cell_db.write() as conn:
            for instance in made:
                inst.soft_delete(conn, instance.uuid)
                queries.forget_instance(conn, req.app.db, instance.uuid)
    except Exception:  # logged, never raised over the error that brought us here
        LOG.exception("could not delete the %d servers of a failed multi-create", len(made))


def create_server(req: Request) -> Response:
    data = validate_body(read_body(req), create_schema(req.version.minor))
    check_formats(data)
    boot = _parse(req, data)
    requested = requested_networks(req, boot.networks, boot.count[1])
    port_fit = servers_that_fit(req, requested, *boot.count)
    boot.security_group_ids = server_security_groups.resolve(req, boot.security_groups)
    build: _Build | None = None
    try:
        with req.app.cell_db.write() as conn:
            with req.app.db.using(conn) as api:
                flavor = _flavor(req, api, boot)
                _check_image(req, api, boot, flavor)
                _check_extras(req, api, boot)
            _check_placement_hints(req, conn, boot, flavor)
            _check_limits(req, boot)
            boot.count = (boot.count[0], port_fit)
            _check_quotas(req, conn, boot, flavor)
            build = _Build(boot, flv.snapshot(flavor), requested=requested)
            _write_batch(req, conn, build)
    except Exception:
        if build is not None:
            _forget_api_records(req, build.unmade())
        raise
    _write_rest(req, build)
    _recheck_quotas(req, build)
    conductor(req).build_instances([i.uuid for i in build.made], req.context.request_id,
                                   build.operation)
    if boot.return_reservation_id:
        return json_response({"reservation_id": build.reservation}, status=202)
    view = views.created(req, build.made[0], boot.admin_pass, boot.security_groups)
    return json_response({"server": view}, status=202,
                         headers=[("location", view["links"][0]["href"])])


ROUTES = [Route("POST", API_PREFIX + "/servers", create_server, json_body=True)]
