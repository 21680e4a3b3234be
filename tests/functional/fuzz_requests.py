"""What the fuzz test sends to each write route: where its ids come from, and valid bodies.

Every write route of the route tables (Placement, Compute, Image, Network) and every
server action needs an entry in `SPECS` (or `ACTIONS`); `targets()` lists
them from the tables themselves, so a new route without an entry fails the
test with a message naming it. A spec is deliberately small: the ids a path
parameter may take in the seeded world (`fuzz_world`), and one or more valid
bodies that `fuzz_values.body_variants` turns hostile. Network routes that
take Neutron's `If-Match: revision_number=N` are sent one now and then: the
seeded record's revision, or a hostile one.
"""

from __future__ import annotations

import base64
import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any
from urllib.parse import quote

from hypothesis import strategies as st

from stowage.compute.api import all_routes as compute_routes
from stowage.compute.versions import VERSIONS as COMPUTE_VERSIONS
from stowage.image.app import ALL_ROUTES as IMAGE_ROUTES
from stowage.network.app import routes as network_routes
from stowage.placement.api import all_routes as placement_routes
from stowage.placement.versions import VERSIONS as PLACEMENT_VERSIONS
from tests.functional.fuzz_values import (
    BodyChoice,
    Ref,
    Resolve,
    body_variants,
    encode,
    hostile_text,
    path_segment,
    query_strings,
    weighted,
)
from tests.functional.fuzz_world import TOKENS

__all__ = ["Spec", "Target", "FuzzRequest", "SPECS", "ACTIONS", "targets", "requests_for"]

WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")
SERVER_ACTION = ("compute", "POST", "/v2.1/servers/{server_id}/action")
JSON = "application/json"
PATCH_JSON = "application/openstack-images-v2.1-json-patch"


@dataclass(frozen=True)
class Spec:
    """Path parameter -> names of real records; valid bodies (none: the route takes none);
    the caller the route's policy admits (others are tried too, less often)."""

    params: Mapping[str, Sequence[str]] = field(default_factory=dict)
    bodies: Sequence[Any] = ()
    content_type: str = JSON
    caller: str = "admin"
    # Whether the route reads If-Match (Neutron's revision_number compare-and-swap).
    if_match: bool = False


@dataclass(frozen=True)
class Target:
    """One write route, or one server action of the action route."""

    service: str
    method: str
    path: str
    action: str | None = None
    # The route's minimum microversion (minor): most requests ask for one it exists at.
    min_version: int = 0

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.service, self.method, self.path)

    def __str__(self) -> str:
        return f"{self.service} {self.method} {self.path}" + (f" {self.action}"
                                                             if self.action else "")


# -- the specs ------------------------------------------------------------------------

_RP = ("rp.root", "rp.child", "rp.empty", "rp.host1", "uuid.new")
_RC = ("rc.custom", "rc.new", "rc.std")
_TRAIT = ("trait.custom", "trait.new", "trait.std")
_CONSUMER = ("consumer.a", "server.active", "uuid.new")
_FLAVOR = ("flavor.small", "flavor.big", "flavor.private", "flavor.new")
_SERVER = ("server.active", "server.stopped", "server.resized", "uuid.new")
_MIGRATION = {"server_id": ("server.resized", "server.active", "uuid.new"),
              "migration_id": ("migration.resized", "uuid.new")}
_SERVICE = ("service.uuid", "service.id", "svc.enable", "svc.disable",
            "svc.disable-log-reason", "svc.force-down")
_AGGREGATE = ("aggregate.rack", "aggregate.empty", "aggregate.missing")
_IMAGE_ID = ("image.1", "uuid.new")
_SHARED = ("image.shared", "image.1", "uuid.new")
_MEMBER = ("member.1", "member.new")
_INVENTORY = {"total": 16, "reserved": 0, "min_unit": 1, "max_unit": 16, "step_size": 1,
              "allocation_ratio": 1.0}
_ALLOCATIONS = {Ref("rp.root"): {"resources": {"VCPU": 1, "MEMORY_MB": 128}},
                Ref("rp.child"): {"resources": {Ref("rc.custom"): 1}}}


def _consumer(generation: Any) -> dict[Any, Any]:
    return {"allocations": _ALLOCATIONS, "project_id": Ref("project"), "user_id": Ref("user"),
            "consumer_generation": generation, "consumer_type": "INSTANCE"}


_PLACEMENT: dict[str, Spec] = {
    "POST /resource_classes": Spec(bodies=[{"name": Ref("rc.new")}]),
    "PUT /resource_classes/{name}": Spec({"name": _RC}, [None, {"name": "CUSTOM_FUZZ_RENAMED"}]),
    "DELETE /resource_classes/{name}": Spec({"name": _RC}),
    "POST /resource_providers": Spec(bodies=[
        {"name": "fz-new", "uuid": Ref("uuid.new"), "parent_provider_uuid": Ref("rp.root")},
        {"name": "fz-new"}]),
    "PUT /resource_providers/{uuid}": Spec({"uuid": _RP}, [
        {"name": "fz-renamed", "parent_provider_uuid": Ref("rp.root")}, {"name": "fz-renamed"},
        {"name": "fz-root", "parent_provider_uuid": None}]),
    "DELETE /resource_providers/{uuid}": Spec({"uuid": _RP}),
    "POST /resource_providers/{uuid}/inventories": Spec({"uuid": _RP}, [
        {"resource_class": "DISK_GB", "total": 100, "reserved": 0, "min_unit": 1,
         "max_unit": 100, "step_size": 1, "allocation_ratio": 1.0}]),
    "PUT /resource_providers/{uuid}/inventories": Spec({"uuid": _RP}, [
        {"resource_provider_generation": Ref("gen.rp.root"),
         "inventories": {"VCPU": _INVENTORY, "MEMORY_MB": {"total": 4096},
                         Ref("rc.custom"): {"total": 5}}}]),
    "DELETE /resource_providers/{uuid}/inventories": Spec({"uuid": _RP}),
    "PUT /resource_providers/{uuid}/inventories/{resource_class}": Spec(
        {"uuid": _RP, "resource_class": _RC},
        [{"resource_provider_generation": Ref("gen.rp.root"), **_INVENTORY}]),
    "DELETE /resource_providers/{uuid}/inventories/{resource_class}": Spec(
        {"uuid": _RP, "resource_class": _RC}),
    "PUT /resource_providers/{uuid}/aggregates": Spec({"uuid": _RP}, [
        {"resource_provider_generation": Ref("gen.rp.root"),
         "aggregates": [Ref("agg.1"), Ref("agg.new")]},
        [Ref("agg.1"), Ref("agg.new")]]),
    "PUT /traits/{name}": Spec({"name": _TRAIT}),
    "DELETE /traits/{name}": Spec({"name": _TRAIT}),
    "PUT /resource_providers/{uuid}/traits": Spec({"uuid": _RP}, [
        {"resource_provider_generation": Ref("gen.rp.root"),
         "traits": [Ref("trait.std"), Ref("trait.custom"), "HW_CPU_X86_SSE"]}]),
    "DELETE /resource_providers/{uuid}/traits": Spec({"uuid": _RP}),
    "PUT /allocations/{consumer_uuid}": Spec({"consumer_uuid": _CONSUMER}, [
        _consumer(Ref("gen.consumer.a")), _consumer(None),
        {"allocations": [{"resource_provider": {"uuid": Ref("rp.root")},
                          "resources": {"VCPU": 1}}],
         "project_id": Ref("project"), "user_id": Ref("user")}]),
    "DELETE /allocations/{consumer_uuid}": Spec({"consumer_uuid": _CONSUMER}),
    "POST /allocations": Spec(bodies=[
        {Ref("consumer.a"): _consumer(Ref("gen.consumer.a")), Ref("uuid.new"): _consumer(None)},
        {Ref("consumer.a"): {**_consumer(Ref("gen.consumer.a")), "allocations": {}}}]),
    "POST /reshaper": Spec(caller="service", bodies=[{
        "inventories": {
            Ref("rp.root"): {"resource_provider_generation": Ref("gen.rp.root"),
                             "inventories": {"VCPU": _INVENTORY, "MEMORY_MB": {"total": 4096}}},
            Ref("rp.child"): {"resource_provider_generation": Ref("gen.rp.child"),
                              "inventories": {Ref("rc.custom"): {"total": 10}}}},
        "allocations": {Ref("consumer.a"): _consumer(Ref("gen.consumer.a"))}}]),
}

_SERVER_BODY = {"server": {
    "name": "fz-new", "flavorRef": Ref("flavor.small"), "imageRef": Ref("image.1"),
    "networks": "none", "min_count": 1, "max_count": 1, "metadata": {"k": "v"},
    "availability_zone": "nova", "user_data": base64.b64encode(b"#!/bin/sh").decode(),
    "accessIPv4": "192.0.2.1", "accessIPv6": "2001:db8::1", "description": "fuzzed",
    "config_drive": False, "OS-DCF:diskConfig": "AUTO"},
    "os:scheduler_hints": {"group": Ref("group.anti"), "same_host": [Ref("server.active")]}}
_COMPUTE: dict[str, Spec] = {
    "POST /v2.1/flavors/{flavor_id}/os-extra_specs": Spec({"flavor_id": _FLAVOR}, [
        {"extra_specs": {Ref("spec.key"): "dedicated", "quota:cpu_shares": "100",
                         "hw:numa_nodes": 1}}]),
    "PUT /v2.1/flavors/{flavor_id}/os-extra_specs/{key}": Spec(
        {"flavor_id": _FLAVOR, "key": ("spec.key", "spec.new")},
        [{Ref("spec.key"): "dedicated"}, {Ref("spec.new"): "1"}]),
    "DELETE /v2.1/flavors/{flavor_id}/os-extra_specs/{key}": Spec(
        {"flavor_id": _FLAVOR, "key": ("spec.key", "spec.new")}),
    "POST /v2.1/flavors/{flavor_id}/action": Spec({"flavor_id": _FLAVOR}, [
        {"addTenantAccess": {"tenant": "otherproj"}},
        {"removeTenantAccess": {"tenant": Ref("project")}}]),
    "POST /v2.1/flavors": Spec(bodies=[{"flavor": {
        "name": "fz-new", "id": Ref("flavor.new"), "ram": 512, "vcpus": 1, "disk": 1,
        "OS-FLV-EXT-DATA:ephemeral": 0, "swap": 0, "rxtx_factor": 1.0,
        "os-flavor-access:is_public": True, "description": "fuzzed"}},
        {"flavor": {"name": "fz-new", "ram": 512, "vcpus": 1, "disk": 0}}]),
    "PUT /v2.1/flavors/{flavor_id}": Spec({"flavor_id": _FLAVOR},
                                          [{"flavor": {"description": "new words"}}]),
    "DELETE /v2.1/flavors/{flavor_id}": Spec({"flavor_id": _FLAVOR}),
    "POST /v2.1/os-server-groups": Spec(bodies=[
        {"server_group": {"name": "fz-new", "policy": "anti-affinity",
                          "rules": {"max_server_per_host": 2}}},
        {"server_group": {"name": "fz-new", "policies": ["affinity"]}}]),
    "DELETE /v2.1/os-server-groups/{group_id}": Spec({"group_id": ("group.anti", "uuid.new")}),
    "POST /v2.1/servers": Spec(bodies=[
        _SERVER_BODY,
        {"server": {"name": "fz-new", "flavorRef": Ref("flavor.small"),
                    "imageRef": Ref("image.1"), "networks": "none", "host": "host2",
                    "hypervisor_hostname": "host2", "key_name": "nokey"}},
        {"server": {"name": "fz-new", "flavorRef": Ref("flavor.private"), "imageRef": "",
                    "networks": "none", "block_device_mapping_v2": [
                        {"source_type": "image", "destination_type": "local",
                         "uuid": Ref("image.1"), "boot_index": 0}]}}]),
    "PUT /v2.1/servers/{server_id}": Spec({"server_id": _SERVER}, [
        {"server": {"name": "fz-renamed", "description": "d", "accessIPv4": "192.0.2.9",
                    "accessIPv6": "2001:db8::9", "OS-DCF:diskConfig": "MANUAL"}}]),
    "DELETE /v2.1/servers/{server_id}": Spec({"server_id": _SERVER}),
    # abort and force-complete of an in-progress live migration; the seeded one is a resize
    "DELETE /v2.1/servers/{server_id}/migrations/{migration_id}": Spec(_MIGRATION),
    "POST /v2.1/servers/{server_id}/migrations/{migration_id}/action": Spec(
        _MIGRATION, [{"force_complete": None}]),
    "POST /v2.1/servers/{server_id}/os-interface": Spec({"server_id": _SERVER}, [
        {"interfaceAttachment": {"port_id": Ref("port.plain")}},
        {"interfaceAttachment": {"net_id": Ref("net.tenant"),
                                 "fixed_ips": [{"ip_address": "10.0.2.50"}]}},
        {"interfaceAttachment": {}}], caller="member"),
    "DELETE /v2.1/servers/{server_id}/os-interface/{port_id}": Spec(
        {"server_id": _SERVER, "port_id": ("port.plain", "port.compute", "uuid.new")},
        caller="member"),
    "POST /v2.1/os-keypairs": Spec(caller="member", bodies=[
        {"keypair": {"name": "fz-new", "public_key": Ref("ssh.public"), "type": "ssh"}},
        {"keypair": {"name": "fz-new@host.1", "public_key": Ref("ssh.public"),
                     "user_id": "fuzzer"}},
        {"keypair": {"name": "fz-new", "type": "x509"}}]),
    "DELETE /v2.1/os-keypairs/{name}": Spec({"name": ("keypair.1", "keypair.new")},
                                            caller="member"),
    "POST /v2.1/servers/{server_id}/metadata": Spec({"server_id": _SERVER}, [
        {"metadata": {Ref("meta.new"): "v", "b": ""}}], caller="member"),
    "PUT /v2.1/servers/{server_id}/metadata": Spec({"server_id": _SERVER}, [
        {"metadata": {Ref("meta.key"): "v2"}}, {"metadata": {}}], caller="member"),
    "PUT /v2.1/servers/{server_id}/metadata/{key}": Spec(
        {"server_id": _SERVER, "key": ("meta.key", "meta.new")},
        [{"meta": {Ref("meta.key"): "v3"}}, {"meta": {Ref("meta.new"): "v"}}], caller="member"),
    "DELETE /v2.1/servers/{server_id}/metadata/{key}": Spec(
        {"server_id": _SERVER, "key": ("meta.key", "meta.new")}, caller="member"),
    "PUT /v2.1/servers/{server_id}/tags": Spec({"server_id": _SERVER}, [
        {"tags": [Ref("tag.1"), "fz-other"]}, {"tags": []}], caller="member"),
    "DELETE /v2.1/servers/{server_id}/tags": Spec({"server_id": _SERVER}, caller="member"),
    "PUT /v2.1/servers/{server_id}/tags/{tag}": Spec(
        {"server_id": _SERVER, "tag": ("tag.1", "tag.new")}, [None], caller="member"),
    "DELETE /v2.1/servers/{server_id}/tags/{tag}": Spec(
        {"server_id": _SERVER, "tag": ("tag.1", "tag.new")}, caller="member"),
    "PUT /v2.1/os-services/{service_id}": Spec({"service_id": _SERVICE}, [
        {"status": "disabled", "disabled_reason": "fuzz", "forced_down": False},
        {"forced_down": "true"},
        {"host": Ref("host.1"), "binary": "nova-compute", "disabled_reason": "fuzz"},
        {"host": Ref("host.2"), "binary": "nova-compute", "forced_down": True}]),
    "DELETE /v2.1/os-services/{service_id}": Spec({"service_id": _SERVICE}),
    "POST /v2.1/os-server-external-events": Spec(bodies=[
        {"events": [{"name": "network-changed", "server_uuid": Ref("server.active"),
                     "tag": Ref("port.compute")}]},
        {"events": [{"name": "volume-extended", "server_uuid": Ref("server.stopped"),
                     "tag": Ref("uuid.new")},
                    {"name": "network-vif-plugged", "server_uuid": Ref("uuid.new"),
                     "status": "failed"}]}]),
    "PUT /v2.1/os-quota-sets/{project_id}": Spec({"project_id": ("project", "uuid.other")}, [
        {"quota_set": {"instances": 20, "cores": "40", "ram": -1, "force": True}},
        {"quota_set": {"key_pairs": 50, "server_groups": 1, "metadata_items": 0}}]),
    "DELETE /v2.1/os-quota-sets/{project_id}": Spec({"project_id": ("project", "uuid.other")}),
    "PUT /v2.1/os-quota-class-sets/{class_name}": Spec({"class_name": ("quota.class",)}, [
        {"quota_class_set": {"instances": 20, "metadata_items": 64, "server_groups": -1}}]),
    "POST /v2.1/os-aggregates": Spec(bodies=[
        {"aggregate": {"name": "fz-new", "availability_zone": "fz-az2"}},
        {"aggregate": {"name": "fz-new", "availability_zone": None}}]),
    "PUT /v2.1/os-aggregates/{aggregate_id}": Spec({"aggregate_id": _AGGREGATE}, [
        {"aggregate": {"name": "fz-renamed"}}, {"aggregate": {"availability_zone": "fz-az3"}}]),
    "DELETE /v2.1/os-aggregates/{aggregate_id}": Spec({"aggregate_id": _AGGREGATE}),
    "PUT /v2.1/os-hosts/{host_name}": Spec({"host_name": ("host.1", "host.2", "host.new")}, [
        {"status": "disable"}, {"status": "Enable"}, {"maintenance_mode": "enable"}]),
    # stowage's own (docs/faults.md): a simulated host's faults. "agent" (a kill) is left
    # out of the valid bodies: the world's restore() brings killed agents back anyway.
    "POST /v2.1/os-simulator/hosts/{host_name}/faults": Spec(
        {"host_name": ("host.1", "host.2", "host.new")}, [
            {"fault": {"step": "spawn"}},
            {"fault": {"step": "prep_resize", "mode": "times", "times": 2, "error": "fz"}},
            {"fault": {"step": "heartbeat", "mode": "always"}}]),
    "DELETE /v2.1/os-simulator/hosts/{host_name}/faults": Spec(
        {"host_name": ("host.1", "host.2", "host.new")}),
    "DELETE /v2.1/os-simulator/hosts/{host_name}/faults/{fault_id}": Spec(
        {"host_name": ("host.1", "host.new"), "fault_id": ("uuid.new",)}),
    "DELETE /v2.1/servers/{server_id}/os-server-password": Spec({"server_id": _SERVER},
                                                                 caller="member"),
    "POST /v2.1/os-aggregates/{aggregate_id}/action": Spec({"aggregate_id": _AGGREGATE}, [
        {"add_host": {"host": Ref("host.2")}}, {"remove_host": {"host": Ref("host.1")}},
        {"set_metadata": {"metadata": {"availability_zone": "fz-az4", "ssd": "true"}}},
        {"set_metadata": {"metadata": {"ssd": None}}}]),
    # Nova's image proxy (2.1-2.35; metadata to 2.38), over the seeded public image.
    "DELETE /v2.1/images/{image_id}": Spec({"image_id": _IMAGE_ID}),
    "POST /v2.1/images/{image_id}/metadata": Spec({"image_id": _IMAGE_ID}, [
        {"metadata": {Ref("meta.new"): "v", "hw_disk_bus": "scsi"}}]),
    "PUT /v2.1/images/{image_id}/metadata": Spec({"image_id": _IMAGE_ID}, [
        {"metadata": {Ref("meta.key"): "v2"}}, {"metadata": {}}]),
    "PUT /v2.1/images/{image_id}/metadata/{key}": Spec(
        {"image_id": _IMAGE_ID, "key": ("meta.key", "meta.new")},
        [{"meta": {Ref("meta.key"): "v3"}}, {"meta": {Ref("meta.new"): "v"}}]),
    "DELETE /v2.1/images/{image_id}/metadata/{key}": Spec(
        {"image_id": _IMAGE_ID, "key": ("meta.key", "meta.new")}),
    # Nova's proxies to the Network service (2.1-2.35).
    "POST /v2.1/os-security-groups": Spec(caller="member", bodies=[
        {"security_group": {"name": "fz-new", "description": "fuzzed"}}]),
    "PUT /v2.1/os-security-groups/{group_id}": Spec(
        {"group_id": ("sg.web", "sg.default", "uuid.new")}, caller="member",
        bodies=[{"security_group": {"name": "fz-renamed", "description": "d"}}]),
    "DELETE /v2.1/os-security-groups/{group_id}": Spec(
        {"group_id": ("sg.web", "sg.default", "uuid.new")}, caller="member"),
    "POST /v2.1/os-security-group-rules": Spec(caller="member", bodies=[
        {"security_group_rule": {"parent_group_id": Ref("sg.web"), "ip_protocol": "tcp",
                                 "from_port": 80, "to_port": 80, "cidr": "192.0.2.0/24"}},
        {"security_group_rule": {"parent_group_id": Ref("sg.web"), "ip_protocol": "icmp",
                                 "from_port": -1, "to_port": -1,
                                 "group_id": Ref("sg.default")}}]),
    "DELETE /v2.1/os-security-group-rules/{rule_id}": Spec(
        {"rule_id": ("sgrule.web", "uuid.new")}, caller="member"),
    # The floating-IP proxy (2.1-2.35): from the seeded world's pool, if it has one.
    "POST /v2.1/os-floating-ips": Spec(caller="member", bodies=[
        {"pool": "fz-public"}, {"pool": None}, {}]),
    "DELETE /v2.1/os-floating-ips/{floating_ip_id}": Spec(
        {"floating_ip_id": ("fip.1", "uuid.new")}, caller="member"),
    # nova-network's writes: 410 whatever is sent.
    "POST /v2.1/os-networks": Spec(bodies=[{"network": {"label": "fz-new"}}]),
    "POST /v2.1/os-networks/add": Spec(bodies=[{"id": Ref("net.tenant")}]),
    "DELETE /v2.1/os-networks/{network_id}": Spec(
        {"network_id": ("net.tenant", "uuid.new")}),
    "POST /v2.1/os-networks/{network_id}/action": Spec(
        {"network_id": ("net.tenant", "uuid.new")}, bodies=[{"disassociate": None}]),
    "POST /v2.1/os-tenant-networks": Spec(bodies=[
        {"network": {"label": "fz-new", "cidr": "10.9.0.0/24"}}]),
    "DELETE /v2.1/os-tenant-networks/{network_id}": Spec(
        {"network_id": ("net.tenant", "uuid.new")}),
}

# Metadata definitions: the seeded namespace fz-ns and what it holds (admins write).
_MDNS = ("mdns.1", "mdns.new")
_MD = "/v2/metadefs/namespaces/{namespace}"
_MD_PROP = {"name": Ref("md.new"), "title": "fz", "type": "string", "enum": ["a"]}
_METADEFS: dict[str, Spec] = {
    "POST /v2/metadefs/namespaces": Spec(bodies=[
        {"namespace": Ref("mdns.new"), "visibility": "public", "protected": False,
         "display_name": "fz", "description": "fz", "tags": [{"name": "t"}],
         "resource_type_associations": [{"name": Ref("rtype.new"), "prefix": "hw_"}],
         "objects": [{"name": "o", "required": ["p"]}],
         "properties": {"p": {"title": "p", "type": "integer", "minimum": 0}}}]),
    f"PUT {_MD}": Spec({"namespace": _MDNS}, [
        {"namespace": Ref("mdns.1"), "visibility": "private", "protected": True}]),
    f"DELETE {_MD}": Spec({"namespace": _MDNS}),
    f"POST {_MD}/resource_types": Spec({"namespace": _MDNS}, [
        {"name": Ref("rtype.new"), "prefix": "fz_", "properties_target": "image"}]),
    f"DELETE {_MD}/resource_types/{{name}}": Spec(
        {"namespace": _MDNS, "name": ("rtype.1", "rtype.new")}),
    f"POST {_MD}/objects": Spec({"namespace": _MDNS}, [
        {"name": Ref("md.new"), "description": "fz", "required": ["p"],
         "properties": {"p": {"title": "p", "type": "string"}}}]),
    f"PUT {_MD}/objects/{{name}}": Spec({"namespace": _MDNS, "name": ("md.obj", "md.new")},
                                        [{"name": Ref("md.new"), "description": "fz"}]),
    f"DELETE {_MD}/objects/{{name}}": Spec({"namespace": _MDNS,
                                            "name": ("md.obj", "md.new")}),
    f"DELETE {_MD}/objects": Spec({"namespace": _MDNS}),
    f"POST {_MD}/properties": Spec({"namespace": _MDNS}, [_MD_PROP]),
    f"PUT {_MD}/properties/{{name}}": Spec({"namespace": _MDNS,
                                            "name": ("md.prop", "md.new")}, [_MD_PROP]),
    f"DELETE {_MD}/properties/{{name}}": Spec({"namespace": _MDNS,
                                               "name": ("md.prop", "md.new")}),
    f"DELETE {_MD}/properties": Spec({"namespace": _MDNS}),
    f"POST {_MD}/tags": Spec({"namespace": _MDNS}, [{"tags": [{"name": Ref("md.new")},
                                                              {"name": "fz-b"}]}]),
    f"POST {_MD}/tags/{{name}}": Spec({"namespace": _MDNS, "name": ("md.new", "md.tag")}),
    f"PUT {_MD}/tags/{{name}}": Spec({"namespace": _MDNS, "name": ("md.tag", "md.new")},
                                     [{"name": Ref("md.new")}]),
    f"DELETE {_MD}/tags/{{name}}": Spec({"namespace": _MDNS, "name": ("md.tag", "md.new")}),
    f"DELETE {_MD}/tags": Spec({"namespace": _MDNS}),
}

_IMAGE: dict[str, Spec] = {
    "POST /v2/images": Spec(bodies=[
        {"name": "fz-new", "id": Ref("uuid.new"), "disk_format": "qcow2",
         "container_format": "bare", "visibility": "private", "min_ram": 0, "min_disk": 1,
         "protected": False, "tags": ["a"], "hw_disk_bus": "virtio"}]),
    "PATCH /v2/images/{image_id}": Spec({"image_id": ("image.1", "uuid.new")}, [
        [{"op": "replace", "path": "/name", "value": "fz-renamed"},
         {"op": "add", "path": "/hw_disk_bus", "value": "scsi"},
         {"op": "add", "path": "/tags", "value": ["b"]}],
        [{"op": "remove", "path": "/hw_disk_bus"}]], content_type=PATCH_JSON),
    "DELETE /v2/images/{image_id}": Spec({"image_id": ("image.1", "uuid.new")}),
    "PUT /v2/images/{image_id}/file": Spec({"image_id": ("image.1", "uuid.new")},
                                           content_type="application/octet-stream"),
    "POST /v2/images/{image_id}/actions/deactivate": Spec(
        {"image_id": ("image.1", "uuid.new")}),
    "POST /v2/images/{image_id}/actions/reactivate": Spec(
        {"image_id": ("image.1", "uuid.new")}),
    "PUT /v2/images/{image_id}/tags/{tag}": Spec(
        {"image_id": ("image.1", "uuid.new"), "tag": ("tag.1", "tag.new")}),
    "DELETE /v2/images/{image_id}/tags/{tag}": Spec(
        {"image_id": ("image.1", "uuid.new"), "tag": ("tag.1", "tag.new")}),
    # Members of the seeded shared image (fuzzproj is one, pending); import and tasks.
    "POST /v2/images/{image_id}/members": Spec({"image_id": _SHARED},
                                               [{"member": Ref("member.new")}]),
    "PUT /v2/images/{image_id}/members/{member_id}": Spec(
        {"image_id": _SHARED, "member_id": _MEMBER},
        [{"status": "accepted"}, {"status": "rejected"}], caller="member"),
    "DELETE /v2/images/{image_id}/members/{member_id}": Spec(
        {"image_id": _SHARED, "member_id": _MEMBER}),
    "PUT /v2/images/{image_id}/stage": Spec({"image_id": _SHARED},
                                            content_type="application/octet-stream"),
    "POST /v2/images/{image_id}/import": Spec({"image_id": _SHARED},
                                              [{"method": {"name": "glance-direct"}}]),
    "POST /v2/tasks": Spec(bodies=[{"type": "import", "input": {
        "import_from": "http://example.com/fz.qcow2", "import_from_format": "qcow2",
        "image_properties": {"name": "fz-task"}}}]),
    **_METADEFS,
}

# The seeded records a path names, and one that does not exist. Hypothesis draws the first
# most often: for a delete, the *_FREE one that nothing holds; for bindings, the server's port.
_NET = ("net.provider", "net.tenant", "uuid.new")
_NET_FREE = ("net.tenant", "net.provider", "uuid.new")
_SUBNET = ("subnet.provider", "subnet.tenant", "uuid.new")
_SUBNET_FREE = ("subnet.tenant", "subnet.provider", "uuid.new")
_PORT = ("port.plain", "port.compute", "uuid.new")
_QOS = ("qos.policy", "qos.other", "uuid.new")
_QOS_FREE = ("qos.other", "qos.policy", "uuid.new")
_BINDING = {"port_id": ("port.compute", "port.plain", "uuid.new"),
            "host": ("host.2", "host.1", "host.new")}
_RULE = {"policy_id": _QOS, "rule_id": ("rule.egress", "rule.ingress", "uuid.new")}
_SG = ("sg.web", "sg.default", "uuid.new")
_SG_RULE = ("sgrule.web", "uuid.new")
_ROUTER = ("router.1", "router.bare", "uuid.new")
_ROUTER_FREE = ("router.bare", "router.1", "uuid.new")
_FIP = ("fip.1", "uuid.new")
_ROUTE = {"destination": "192.0.2.0/24", "nexthop": "10.0.2.50"}
# Routers and floating IPs (extensions router, ext-gw-mode, extraroute(-atomic), external-net).
_L3: dict[str, Spec] = {
    "POST /v2.0/routers": Spec(caller="member", bodies=[
        {"router": {"name": "fz-new", "description": "fuzzed", "admin_state_up": True,
                    "external_gateway_info": {"network_id": Ref("net.public")},
                    "project_id": Ref("project")}},
        {"router": {"name": "fz-new", "external_gateway_info": {
            "network_id": Ref("net.public"), "enable_snat": False,
            "external_fixed_ips": [{"subnet_id": Ref("subnet.public")}]}}},
        {"routers": [{"name": "fz-bulk-1"}, {"router": {"name": "fz-bulk-2"}}]}]),
    "PUT /v2.0/routers/{router_id}": Spec({"router_id": _ROUTER}, caller="member", bodies=[
        {"router": {"name": "fz-renamed", "description": "d", "admin_state_up": False,
                    "routes": [_ROUTE]}},
        {"router": {"external_gateway_info": None, "routes": []}},
        {"router": {"external_gateway_info": {"network_id": Ref("net.public")}}}],
        if_match=True),
    "DELETE /v2.0/routers/{router_id}": Spec({"router_id": _ROUTER_FREE}, caller="member",
                                             if_match=True),
    "PUT /v2.0/routers/{router_id}/add_router_interface": Spec(
        {"router_id": _ROUTER_FREE}, caller="member", bodies=[
            {"subnet_id": Ref("subnet.tenant")}, {"port_id": Ref("port.plain")}]),
    "PUT /v2.0/routers/{router_id}/remove_router_interface": Spec(
        {"router_id": _ROUTER}, caller="member", bodies=[
            {"subnet_id": Ref("subnet.tenant")}, {"port_id": Ref("port.plain")}]),
    "PUT /v2.0/routers/{router_id}/add_extraroutes": Spec(
        {"router_id": _ROUTER}, caller="member", bodies=[{"router": {"routes": [_ROUTE]}}]),
    "PUT /v2.0/routers/{router_id}/remove_extraroutes": Spec(
        {"router_id": _ROUTER}, caller="member", bodies=[{"router": {"routes": [_ROUTE]}}]),
    "POST /v2.0/floatingips": Spec(caller="member", bodies=[
        {"floatingip": {"floating_network_id": Ref("net.public"), "description": "fuzzed",
                        "port_id": Ref("port.tenant"), "project_id": Ref("project")}},
        {"floatingip": {"floating_network_id": Ref("net.public"),
                        "subnet_id": Ref("subnet.public"),
                        "floating_ip_address": "172.24.4.99"}},
        {"floatingips": [{"floating_network_id": Ref("net.public")}]}]),
    "PUT /v2.0/floatingips/{floatingip_id}": Spec({"floatingip_id": _FIP}, caller="member",
                                                  if_match=True, bodies=[
        {"floatingip": {"port_id": Ref("port.tenant"), "fixed_ip_address": "10.0.2.20",
                        "description": "d"}},
        {"floatingip": {"port_id": None}}]),
    "DELETE /v2.0/floatingips/{floatingip_id}": Spec({"floatingip_id": _FIP},
                                                     caller="member", if_match=True),
}


_POOL = ("pool.used", "pool.free", "uuid.new")
_AGENT = ("agent.1", "agent.2", "uuid.new")


def _tag_specs(collection: str, ids: Sequence[str]) -> dict[str, Spec]:
    """The five tag write routes of one collection (standard-attr-tag)."""
    base = f"/v2.0/{collection}/{{id}}/tags"
    one = {"id": ids, "tag": ("tag.1", "tag.new")}
    bodies = [{"tags": [Ref("tag.1"), "fz-other"]}, {"tags": []}]
    return {f"PUT {base}": Spec({"id": ids}, bodies, caller="member"),
            f"POST {base}": Spec({"id": ids}, bodies, caller="member"),
            f"DELETE {base}": Spec({"id": ids}, caller="member"),
            f"PUT {base}/{{tag}}": Spec(one, caller="member"),
            f"DELETE {base}/{{tag}}": Spec(one, caller="member")}


_PROVIDER = {"provider:network_type": "vlan", "provider:physical_network": Ref("physnet"),
             "provider:segmentation_id": 100}
_NETWORK: dict[str, Spec] = {
    "POST /v2.0/networks": Spec(bodies=[
        {"network": {"name": "fz-new", "description": "fuzzed", "admin_state_up": True,
                     "shared": False, "mtu": 1400, "qos_policy_id": Ref("qos.policy"),
                     "project_id": Ref("project"), **_PROVIDER,
                     "provider:segmentation_id": 101}},
        {"network": {"name": "fz-new", **_PROVIDER}},
        {"network": {"name": "fz-new", "provider:network_type": "flat",
                     "provider:physical_network": "physnet1"}},
        {"network": {"name": "fz-new", "provider:network_type": "vxlan",
                     "provider:segmentation_id": 5000}},
        {"network": {"name": "fz-new", "mtu": 1400}},
        {"network": {"name": "fz-new", "router:external": True}},
        # Neutron's bulk create: both item forms, one transaction.
        {"networks": [{"name": "fz-bulk-1"}, {"network": {"name": "fz-bulk-2"}}]}]),
    "PUT /v2.0/networks/{network_id}": Spec({"network_id": _NET}, [
        {"network": {"name": "fz-renamed", "description": "d", "admin_state_up": False,
                     "mtu": 1400, "qos_policy_id": Ref("qos.policy")}},
        {"network": {"shared": False, "qos_policy_id": None, **_PROVIDER}},
        {"network": {"router:external": False}}], if_match=True),
    "DELETE /v2.0/networks/{network_id}": Spec({"network_id": _NET_FREE}, caller="member",
                                               if_match=True),
    "POST /v2.0/subnets": Spec(caller="member", bodies=[
        {"subnet": {"name": "fz-new", "description": "fuzzed", "network_id": Ref("net.tenant"),
                    "ip_version": 4, "cidr": "10.0.3.0/24", "gateway_ip": "10.0.3.1",
                    "allocation_pools": [{"start": "10.0.3.10", "end": "10.0.3.100"}],
                    "enable_dhcp": True, "dns_nameservers": ["192.0.2.53"],
                    "host_routes": [{"destination": "192.0.2.0/24", "nexthop": "10.0.3.254"}],
                    "ipv6_ra_mode": None, "segment_id": None, "project_id": Ref("project")}},
        {"subnet": {"network_id": Ref("net.provider"), "ip_version": 6,
                    "cidr": "2001:db8::/64"}},
        {"subnet": {"network_id": Ref("net.provider"), "ip_version": 4,
                    "cidr": "10.0.1.128/25"}},
        {"subnet": {"network_id": Ref("net.tenant"), "ip_version": 4,
                    "subnetpool_id": Ref("pool.used"), "prefixlen": 26}},
        {"subnet": {"network_id": Ref("net.tenant"), "ip_version": 4,
                    "subnetpool_id": Ref("pool.free"), "cidr": "10.9.3.0/24"}}]),
    "PUT /v2.0/subnets/{subnet_id}": Spec({"subnet_id": _SUBNET}, caller="member", bodies=[
        {"subnet": {"name": "fz-renamed", "description": "d", "enable_dhcp": False,
                    "gateway_ip": None, "dns_nameservers": ["192.0.2.53", "2001:db8::53"],
                    "allocation_pools": [{"start": "10.0.1.5", "end": "10.0.1.250"}],
                    "host_routes": []}},
        {"subnet": {"gateway_ip": "10.0.2.254"}}], if_match=True),
    "DELETE /v2.0/subnets/{subnet_id}": Spec({"subnet_id": _SUBNET_FREE}, caller="member",
                                             if_match=True),
    "POST /v2.0/ports": Spec(bodies=[
        {"port": {"network_id": Ref("net.provider"), "name": "fz-new", "description": "fuzzed",
                  "admin_state_up": True, "mac_address": "fa:16:3e:00:00:99",
                  "fixed_ips": [{"subnet_id": Ref("subnet.provider"),
                                 "ip_address": "10.0.1.20"}],
                  "device_id": Ref("uuid.other"), "device_owner": "compute:nova",
                  "binding:vnic_type": "direct", "binding:host_id": Ref("host.1"),
                  "binding:profile": {"allocation": Ref("rp.host1")},
                  "qos_policy_id": Ref("qos.policy"), "security_groups": [],
                  "allowed_address_pairs": [{"ip_address": "10.0.1.0/28"},
                                            {"ip_address": "10.0.1.9",
                                             "mac_address": "fa:16:3e:00:00:98"}],
                  "extra_dhcp_opts": [{"opt_name": "bootfile-name", "opt_value": "pxe.0"},
                                      {"opt_name": "dns-server", "opt_value": "2001:db8::1",
                                       "ip_version": 6}],
                  "project_id": Ref("project")}},
        {"port": {"network_id": Ref("net.tenant"), "binding:vnic_type": "macvtap",
                  "tags": [Ref("tag.1"), "fz-other"],
                  "fixed_ips": [{"subnet_id": Ref("subnet.tenant")}]}},
        {"port": {"network_id": Ref("net.provider"), "mac_address": Ref("mac.plain"),
                  "fixed_ips": [{"ip_address": Ref("ip.plain")}]}},
        {"ports": [{"network_id": Ref("net.tenant")},
                   {"port": {"network_id": Ref("net.provider"), "name": "fz-bulk"}}]}]),
    "PUT /v2.0/ports/{port_id}": Spec({"port_id": _PORT}, [
        {"port": {"name": "fz-renamed", "description": "d", "admin_state_up": False,
                  "device_id": "d", "device_owner": "compute:nova", "qos_policy_id": None,
                  "fixed_ips": [{"subnet_id": Ref("subnet.provider"),
                                 "ip_address": "10.0.1.30"}, {"ip_address": Ref("ip.plain")}],
                  "binding:host_id": Ref("host.2"), "binding:vnic_type": "direct",
                  "binding:profile": {"allocation": Ref("rp.host2")}}},
        {"port": {"qos_policy_id": Ref("qos.policy"), "binding:host_id": None,
                  "binding:profile": None, "fixed_ips": []}},
        {"port": {"allowed_address_pairs": [{"ip_address": "10.0.2.0/24"}],
                  "extra_dhcp_opts": [{"opt_name": "tftp-server", "opt_value": None},
                                      {"opt_name": "a", "opt_value": "b"}]}},
        {"port": {"name": "fz-renamed", "fixed_ips": [{"subnet_id": Ref("subnet.provider")}],
                  "binding:vnic_type": "normal"}},
        # port.compute's bandwidth is allocated: 501, as Neutron
        {"port": {"qos_policy_id": Ref("qos.policy")}}], if_match=True),
    "DELETE /v2.0/ports/{port_id}": Spec({"port_id": _PORT}, caller="member", if_match=True),
    "POST /v2.0/ports/{port_id}/bindings": Spec({"port_id": _BINDING["port_id"]}, [
        {"binding": {"host": Ref("host.new"), "vnic_type": "normal",
                     "profile": {"allocation": Ref("rp.host2")}, "project_id": Ref("project")}},
        {"binding": {"host": Ref("host.2"), "vnic_type": "direct"}}]),
    "PUT /v2.0/ports/{port_id}/bindings/{host}": Spec(_BINDING, [
        {"binding": {"vnic_type": "direct", "profile": {"allocation": Ref("rp.host2")}}},
        {"binding": {"profile": None}},
        # no driver binds it: 500 PortBindingError on the inactive binding, as Neutron
        {"binding": {"vnic_type": "baremetal"}}]),
    "DELETE /v2.0/ports/{port_id}/bindings/{host}": Spec(_BINDING),
    "PUT /v2.0/ports/{port_id}/bindings/{host}/activate": Spec(_BINDING),
    "POST /v2.0/qos/policies": Spec(bodies=[
        {"policy": {"name": "fz-new", "description": "fuzzed", "shared": True,
                    "project_id": Ref("project")}}]),
    "PUT /v2.0/qos/policies/{policy_id}": Spec({"policy_id": _QOS}, [
        {"policy": {"name": "fz-renamed", "description": "d", "shared": False}}],
        if_match=True),
    "DELETE /v2.0/qos/policies/{policy_id}": Spec({"policy_id": _QOS_FREE}, if_match=True),
    "POST /v2.0/qos/policies/{policy_id}/minimum_bandwidth_rules": Spec(
        {"policy_id": _QOS}, [{"minimum_bandwidth_rule": {"min_kbps": 1000,
                                                          "direction": "egress"}},
                              {"minimum_bandwidth_rule": {"min_kbps": 10}}]),
    "PUT /v2.0/qos/policies/{policy_id}/minimum_bandwidth_rules/{rule_id}": Spec(_RULE, [
        {"minimum_bandwidth_rule": {"min_kbps": 3000, "direction": "ingress"}},
        {"minimum_bandwidth_rule": {"min_kbps": 0}}]),
    "DELETE /v2.0/qos/policies/{policy_id}/minimum_bandwidth_rules/{rule_id}": Spec(_RULE),
    "POST /v2.0/security-groups": Spec(caller="member", bodies=[
        {"security_group": {"name": "fz-new", "description": "fuzzed",
                            "project_id": Ref("project")}},
        {"security_group": {"name": "default"}}]),
    "PUT /v2.0/security-groups/{security_group_id}": Spec(
        {"security_group_id": _SG}, caller="member", if_match=True, bodies=[
            {"security_group": {"name": "fz-renamed", "description": "d"}},
            {"security_group": {"name": "default"}}]),
    "DELETE /v2.0/security-groups/{security_group_id}": Spec(
        {"security_group_id": _SG}, caller="member", if_match=True),
    "POST /v2.0/security-group-rules": Spec(caller="member", bodies=[
        {"security_group_rule": {"security_group_id": Ref("sg.web"), "direction": "ingress",
                                 "ethertype": "IPv6", "protocol": "icmpv6",
                                 "port_range_min": 128, "port_range_max": 0,
                                 "remote_ip_prefix": "2001:db8::/64", "description": "f"}},
        {"security_group_rule": {"security_group_id": Ref("sg.default"),
                                 "direction": "egress", "protocol": "udp",
                                 "port_range_min": 53, "port_range_max": 53,
                                 "remote_group_id": Ref("sg.web")}},
        {"security_group_rule": {"security_group_id": Ref("sg.web"), "direction": "ingress",
                                 "protocol": "tcp", "port_range_min": 22,
                                 "port_range_max": 22, "remote_ip_prefix": "10.0.0.0/8"}}]),
    "DELETE /v2.0/security-group-rules/{rule_id}": Spec({"rule_id": _SG_RULE},
                                                        caller="member"),
    "PUT /v2.0/quotas/{project_id}": Spec({"project_id": ("project", "uuid.new")}, [
        {"quota": {"network": 50, "subnet": -1, "port": 0, "router": 10, "floatingip": 5,
                   "security_group": 3, "security_group_rule": 2**31 - 1}},
        {"quota": {"network": 1, "check_limit": True}},
        {"quota": {"port": 7, "force": True}}]),
    "DELETE /v2.0/quotas/{project_id}": Spec({"project_id": ("project", "uuid.new")}),
    **_L3,
    "POST /v2.0/subnetpools": Spec(caller="member", bodies=[
        {"subnetpool": {"name": "fz-new", "description": "fuzzed", "prefixes": ["10.7.0.0/16"],
                        "default_prefixlen": 24, "min_prefixlen": 16, "max_prefixlen": 28,
                        "default_quota": None, "address_scope_id": None,
                        "project_id": Ref("project")}},
        {"subnetpool": {"prefixes": ["2001:db8:7::/48"], "is_default": True,
                        "shared": True}}]),
    "PUT /v2.0/subnetpools/{subnetpool_id}": Spec(
        {"subnetpool_id": _POOL}, caller="member", if_match=True, bodies=[
            {"subnetpool": {"name": "fz-renamed", "description": "d",
                            "prefixes": ["10.8.0.0/15"], "default_prefixlen": 26}},
            {"subnetpool": {"is_default": True, "min_prefixlen": 20}}]),
    "DELETE /v2.0/subnetpools/{subnetpool_id}": Spec({"subnetpool_id": _POOL},
                                                     caller="member", if_match=True),
    # Agents (extension agent): admins only.
    "PUT /v2.0/agents/{agent_id}": Spec({"agent_id": _AGENT}, bodies=[
        {"agent": {"admin_state_up": False, "description": "fuzzed"}},
        {"agent": {"admin_state_up": True, "description": None}}]),
    "DELETE /v2.0/agents/{agent_id}": Spec({"agent_id": _AGENT}),
    **{key: spec for collection, ids in (
        ("networks", _NET), ("subnets", _SUBNET), ("ports", _PORT),
        ("security-groups", _SG), ("routers", _ROUTER), ("floatingips", _FIP),
        ("subnetpools", _POOL))
       for key, spec in _tag_specs(collection, ids).items()},
}

SPECS: dict[tuple[str, str, str], Spec] = {
    (service, *key.split(" ", 1)): spec  # type: ignore[misc]
    for service, table in (("placement", _PLACEMENT), ("compute", _COMPUTE),
                           ("image", _IMAGE), ("network", _NETWORK))
    for key, spec in table.items()}

_ACTION_SERVERS = {"server_id": _SERVER}
# Server action name -> valid bodies; the server is any of the seeded ones.
_ACTION_BODIES: dict[str, list[Any]] = {
    "resize": [{"resize": {"flavorRef": Ref("flavor.big")}},
               {"resize": {"flavorRef": Ref("flavor.small"), "OS-DCF:diskConfig": "AUTO"}}],
    "migrate": [{"migrate": None}, {"migrate": {"host": Ref("host.2")}}],
    "confirmResize": [{"confirmResize": None}],
    "revertResize": [{"revertResize": None}],
    "os-stop": [{"os-stop": None}],
    "os-start": [{"os-start": None}],
    "os-resetState": [{"os-resetState": {"state": "active"}},
                      {"os-resetState": {"state": "error"}}],
    "os-migrateLive": [{"os-migrateLive": {"host": None, "block_migration": "auto"}},
                       {"os-migrateLive": {"host": Ref("host.2"), "block_migration": False,
                                           "disk_over_commit": False}}],
    "evacuate": [{"evacuate": {}}, {"evacuate": {"host": Ref("host.2")}}],
    "os-getConsoleOutput": [{"os-getConsoleOutput": {"length": 3}},
                            {"os-getConsoleOutput": {"length": "-1"}},
                            {"os-getConsoleOutput": {}}],
    "injectNetworkInfo": [{"injectNetworkInfo": None}],
    "shelve": [{"shelve": None}],
    "shelveOffload": [{"shelveOffload": None}],
    "unshelve": [{"unshelve": None}, {"unshelve": {"availability_zone": "nova"}}],
    "reboot": [{"reboot": {"type": "SOFT"}}, {"reboot": {"type": "HARD"}}],
    "pause": [{"pause": None}],
    "unpause": [{"unpause": None}],
    "suspend": [{"suspend": None}],
    "resume": [{"resume": None}],
    "lock": [{"lock": None}, {"lock": {"locked_reason": "maintenance"}}],
    "unlock": [{"unlock": None}],
    "restore": [{"restore": None}],
    "forceDelete": [{"forceDelete": None}],
    "rebuild": [{"rebuild": {"imageRef": Ref("image.1")}},
                {"rebuild": {"imageRef": Ref("image.1"), "name": "fz-rebuilt",
                             "metadata": {"k": "v"}, "preserve_ephemeral": False,
                             "adminPass": "secret"}}],
    "addSecurityGroup": [{"addSecurityGroup": {"name": "fz-web"}},
                         {"addSecurityGroup": {"name": Ref("sg.web")}}],
    "removeSecurityGroup": [{"removeSecurityGroup": {"name": "default"}}],
    "addFloatingIp": [{"addFloatingIp": {"address": Ref("fip.1.address")}},
                      {"addFloatingIp": {"address": Ref("fip.1.address"),
                                         "fixed_address": "10.0.0.3"}}],
    "removeFloatingIp": [{"removeFloatingIp": {"address": Ref("fip.1.address")}}],
    "rescue": [{"rescue": None}, {"rescue": {"adminPass": "secret",
                                             "rescue_image_ref": Ref("image.1")}}],
    "unrescue": [{"unrescue": None}],
    "createImage": [{"createImage": {"name": "fz-snap"}},
                    {"createImage": {"name": "fz-snap", "metadata": {"k": "v"}}}],
    "createBackup": [{"createBackup": {"name": "fz-backup", "backup_type": "daily",
                                       "rotation": 1}},
                     {"createBackup": {"name": "fz-backup", "backup_type": "weekly",
                                       "rotation": "0", "metadata": {"k": "v"}}}],
}
ACTIONS = {name: Spec(_ACTION_SERVERS, bodies) for name, bodies in _ACTION_BODIES.items()}


def _server_actions() -> list[str]:
    module = importlib.import_module("stowage.compute.api.server_actions")
    return sorted(module._ACTIONS)


def targets() -> list[Target]:
    """Every write route of the route tables, the action route once per server action."""
    found: list[Target] = []
    for service, routes in (("placement", placement_routes()), ("compute", compute_routes()),
                            ("image", IMAGE_ROUTES), ("network", network_routes())):
        for route in routes:
            if route.method not in WRITE_METHODS:
                continue
            target = Target(service, route.method, route.path, min_version=route.min_version)
            if target.key == SERVER_ACTION:
                found.extend(Target(*target.key, action=a, min_version=route.min_version)
                             for a in _server_actions())
            else:
                found.append(target)
    return found


def spec_of(target: Target) -> Spec | None:
    if target.action is not None:
        return ACTIONS.get(target.action)
    return SPECS.get(target.key)


# -- requests -------------------------------------------------------------------------

_VERSIONS = {"placement": PLACEMENT_VERSIONS, "compute": COMPUTE_VERSIONS}


@cache
def _callers(privileged: str) -> st.SearchStrategy[str]:
    """Who tries: the caller the policy admits half the time, so that requests get past
    policy to the handler; then members, and everyone else."""
    others = tuple(who for who in TOKENS if who not in (privileged, "member"))
    return weighted((5, st.just(privileged)), (3, st.just("member")),
                    (2, st.sampled_from(others)))


@dataclass(frozen=True)
class FuzzRequest:
    """One request, world-independent: path ids and body ids are Refs until sent."""

    target: Target
    params: tuple[tuple[str, str | Ref], ...]
    who: str
    version: str | None
    content_type: str | None
    query: str
    body: BodyChoice | None
    ascii_only: bool = True
    # Neutron's If-Match header: text, or the Ref of a seeded record's revision.
    if_match: str | Ref | None = None

    def __repr__(self) -> str:
        """Everything that was sent, long values cut (hypothesis prints this on a failure)."""
        fields = (f"target={str(self.target)!r}", f"params={_cut(self.params)}",
                  f"who={self.who!r}", f"version={self.version!r}",
                  f"content_type={self.content_type!r}", f"query={_cut(self.query)}",
                  f"body={_cut(self.body)}", f"ascii_only={self.ascii_only}",
                  f"if_match={_cut(self.if_match)}")
        return "FuzzRequest(" + ", ".join(fields) + ")"

    def url_path(self, resolve: Resolve) -> str:
        path = self.target.path
        for name, value in self.params:
            text = quote(str(resolve(value)), safe="") if isinstance(value, Ref) else value
            path = path.replace("{" + name + "}", text)
        return path + (f"?{self.query}" if self.query else "")

    def headers(self, resolve: Resolve) -> dict[str, str]:
        token, roles = TOKENS[self.who]
        headers = {"x-auth-token": token, "accept": "application/json"}
        if roles:
            headers["x-roles"] = roles
        if self.version is not None:
            headers["openstack-api-version"] = f"{self.target.service} {self.version}"
        if self.content_type is not None:
            headers["content-type"] = self.content_type
        if self.if_match is not None:
            headers["if-match"] = str(resolve(self.if_match) if isinstance(self.if_match, Ref)
                                      else self.if_match)
        return headers

    def content(self, resolve: Resolve) -> bytes:
        if self.body is None:
            return b""
        kind, value = self.body
        if kind == "bytes":
            return bytes(value)
        return encode(value, resolve, self.ascii_only).encode("utf-8", "surrogatepass")


def _cut(value: Any, limit: int = 1500) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def _versions(target: Target) -> st.SearchStrategy[str | None]:
    known = _VERSIONS.get(target.service)
    if known is None:
        return st.none()
    major = known[0].split(".")[0]
    served = [v for v in known if int(v.split(".")[1]) >= target.min_version]
    invalid = st.sampled_from((f"{major}.999", "bogus", f"{major}.", "latest latest",
                               f"{major}.-1", f"{major}.0x1", "\u00e9"))
    return weighted((5, st.sampled_from(("latest", known[-1]))), (3, st.sampled_from(served)),
                    (1, st.sampled_from((None, known[0]))), (1, invalid))


def _content_types(usual: str) -> st.SearchStrategy[str | None]:
    odd = st.sampled_from((None, "text/plain", JSON + "; charset=latin-1", "application/json-patch",
                           PATCH_JSON, "application/octet-stream", "APPLICATION/JSON"))
    return weighted((9, st.just(usual)), (1, odd))


# If-Match values Neutron refuses (400) or that match no revision (412), and some that
# parse oddly: digits that are not ASCII, numbers no BIGINT holds.
_IF_MATCH = ("revision_number=0", "revision_number=999", "revision_number=-1",
             "revision_number=", "revision_number=1.5", "revision_number= 0",
             "revision_number=\u00b2", "revision_number=\u0663", "revision_number=0x1",
             "revision_number=9223372036854775808", "revision_number=" + "9" * 30,
             "revision_number=1=1", "REVISION_NUMBER=0", "revision=0", "*", "", "etag")


def _header_text(text: str) -> bool:
    """Whether an HTTP client sends `text` as a header value (no controls, not padded)."""
    return text == text.strip(" \t") and all(" " <= ch != "\x7f" or ch == "\t"
                                              for ch in text)


def _if_matches(target: Target, spec: Spec) -> st.SearchStrategy[str | Ref | None]:
    """Usually no If-Match; else the revision of a seeded record named in the path."""
    if not spec.if_match:
        return st.none()
    names = [part[1:-1] for part in target.path.split("/") if part.startswith("{")]
    seeded = sorted({f"rev.{ref}" for name in names for ref in spec.params.get(name, ())
                     if not ref.startswith("uuid.")})
    hostile = st.one_of(st.sampled_from(_IF_MATCH), hostile_text().filter(_header_text))
    return weighted((6, st.none()), (2, st.sampled_from(seeded).map(Ref)), (2, hostile))


def requests_for(target: Target, spec: Spec) -> st.SearchStrategy[FuzzRequest]:
    names = [part[1:-1] for part in target.path.split("/") if part.startswith("{")]
    params = st.tuples(*(st.tuples(st.just(name), path_segment(spec.params.get(name, ())))
                         for name in names))
    if spec.bodies:
        body: st.SearchStrategy[BodyChoice | None] = body_variants(spec.bodies)
    else:
        body = weighted((8, st.none()), (2, body_variants([{}])))
    return st.builds(FuzzRequest, st.just(target), params, _callers(spec.caller),
                     _versions(target), _content_types(spec.content_type),
                     query_strings(), body, st.booleans(), _if_matches(target, spec))
