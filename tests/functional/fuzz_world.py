"""The small cloud the fuzz test attacks, and the table dump that proves a 4xx changed nothing.

Seeded through the public APIs, as a user would build it, so that ids in
fuzzed paths and bodies hit real records::

      host1 (simulated)                     host2 (simulated)
        fz-active   ACTIVE  (fuzzproj, member of group fz-anti; metadata fz=v,
                    tag fz, key pair fz-key)
        fz-stopped  SHUTOFF (fuzzproj)
        fz-resized  VERIFY_RESIZE fz-small -> fz-big (fuzzproj; on either host)

      provider fz-root  VCPU 8, MEMORY_MB 4096    traits HW_CPU_X86_AVX2, CUSTOM_FUZZ_TRAIT
        └─ fz-child     CUSTOM_FUZZ 10            aggregate AGG on both
      provider fz-empty (nothing)
      consumer A holds VCPU 2 on fz-root and CUSTOM_FUZZ 1 on fz-child

      flavors fz-small 1/512/1 (extra spec hw:cpu_policy), fz-big 2/1024/2,
              fz-private (access: fuzzproj)
      image fz-image (public); fz-shared (shared, queued; member fuzzproj, pending)
      metadef namespace fz-ns (public; OS::Glance::Image; fz-obj, fz-prop, fz-tag)
      key pair fz-key (user fuzzer, an ed25519 ssh key)

      network fz-provider  vlan physnet0/100, shared (fuzzproj)
        ├─ subnet 10.0.1.0/24, pool .10-.200
        ├─ port fz-plain    10.0.1.10, fa:16:3e:00:00:01, QoS fz-qos, unbound
        └─ port fz-compute  compute:nova, host1 ACTIVE (profile: allocation), host2 INACTIVE
      network fz-tenant    vxlan (fuzzproj)
        └─ subnet 10.0.2.0/24
      QoS policy fz-qos    (fuzzproj) minimum bandwidth egress 1000, ingress 2000 kbps
      QoS policy fz-other  (otherproj) no rules, used by nothing
      security groups      default (fuzzproj; fz-plain is in it), fz-web (fuzzproj, in use
                           by nothing) with an ingress rule tcp 22 from 10.0.0.0/8

`refs` names every id (`server.active`, `rp.root`, `gen.rp.root`, `net.provider`,
`port.compute`, `rule.egress`, `rev.port.plain` (an If-Match value), ...); a
request refers to them by name so that a reseeded world (new uuids) still
answers the same generated example the same way.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import sqlalchemy as sa

from stowage.compute import tables as compute_tables
from stowage.compute.hosts import HostConfig
from stowage.image import metadefs
from stowage.image import tables as image_tables
from stowage.network import tables as network_tables
from stowage.placement import changes
from stowage.placement import tables as placement_tables
from tests.functional.conftest import LiveServer, api_client, reset_cloud
from tests.functional.fuzz_values import Ref

__all__ = ["World", "Dump", "dump", "difference", "PROJECT", "TOKENS"]

PROJECT = "fuzzproj"
# who -> (token, X-Roles or None): the callers every request is tried as.
TOKENS: dict[str, tuple[str, str | None]] = {
    "admin": ("admin", None),
    "service": ("nova:service", "service"),
    # A member token carries reader too, as Keystone's implied roles put it in the token.
    "member": (f"fuzzer:{PROJECT}", "member,reader"),
    "reader": (f"fuzzer:{PROJECT}", "reader"),
    "no-role": (f"fuzzer:{PROJECT}", None),
    "other-member": ("intruder:otherproj", "member"),
}
# Fixed ids that exist in no world: creating one succeeds, naming one is a 404.
_FIXED = {
    "uuid.new": "6c1f6b59-3b1e-4f0a-9d8e-000000000001",
    "uuid.other": "6c1f6b59-3b1e-4f0a-9d8e-000000000002",
    "agg.new": "6c1f6b59-3b1e-4f0a-9d8e-000000000003",
    "agg.1": "6c1f6b59-3b1e-4f0a-9d8e-0000000000a1",
    "rc.custom": "CUSTOM_FUZZ", "rc.new": "CUSTOM_FUZZ_NEW", "rc.std": "VCPU",
    "trait.custom": "CUSTOM_FUZZ_TRAIT", "trait.new": "CUSTOM_FUZZ_NEW_TRAIT",
    "trait.std": "HW_CPU_X86_AVX2", "project": PROJECT, "user": "fuzzer",
    "flavor.small": "fz-small", "flavor.big": "fz-big", "flavor.private": "fz-private",
    "flavor.new": "fz-new", "spec.key": "hw:cpu_policy", "spec.new": "hw:mem_page_size",
    "host.1": "host1", "host.2": "host2", "svc.enable": "enable", "svc.disable": "disable",
    "svc.disable-log-reason": "disable-log-reason", "svc.force-down": "force-down",
    "host.new": "host3", "physnet": "physnet0", "ip.plain": "10.0.1.10",
    "mac.plain": "fa:16:3e:00:00:01", "quota.class": "default", "aggregate.missing": "99999",
    "keypair.1": "fz-key", "keypair.new": "fz-new", "meta.key": "fz", "meta.new": "fz-new",
    "tag.1": "fz", "tag.new": "fz-new", "member.1": PROJECT, "member.new": "fz-new-project",
    "mdns.1": "fz-ns", "mdns.new": "fz-ns-new", "md.obj": "fz-obj", "md.prop": "fz-prop",
    "md.tag": "fz-tag", "md.new": "fz-md-new", "rtype.1": "OS::Glance::Image",
    "rtype.new": "OS::Nova::Flavor",
    "ssh.public": "ssh-ed25519 "
                  "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl",
}
# Where each service's routes start, below its mount point.
_ROOTS = {"compute": "/v2.1"}
# The provider change log only grows (snapshots replay it); every other row must hold.
_SKIPPED_TABLES = {"resource_provider_changes"}
# Where the simulated driver persists its guests (read back when an agent starts).
_GUESTS = "simulated_guests"


class World:
    """The seeded cloud on one live server; `refs` resolves names to ids."""

    def __init__(self, live: LiveServer) -> None:
        self.live = live
        self.refs: dict[str, Any] = dict(_FIXED)
        self._rows: Rows = {}

    def resolve(self, ref: Ref) -> Any:
        return self.refs[ref.name]

    def client(self, service: str, who: str = "admin", version: str | None = None
               ) -> httpx.Client:
        token, roles = TOKENS[who]
        headers = {"x-roles": roles} if roles else {}
        if version:
            headers["openstack-api-version"] = version
        return api_client(f"{self.live.url}/{service}{_ROOTS.get(service, '')}", token=token,
                          headers=headers)

    def settle(self) -> None:
        plane = self.live.plane
        assert plane is not None and plane.drain(60), "control plane still busy after 60 s"

    def seed(self) -> None:
        """Empty every table and build the world of the module docstring."""
        plane = reset_cloud(self.live)
        self.refs = dict(_FIXED)
        for name in ("host1", "host2"):
            agent = plane.add_host(HostConfig(name=name, vcpus=16, memory_mb=16384))
            self.refs[f"rp.{name}"] = str(agent.node_uuid)
        with self.client("placement", version="placement latest") as placement:
            self._seed_placement(placement)
        with self.client("compute", version="compute latest") as admin, \
                self.client("compute", "member", "compute latest") as member, \
                self.client("image") as image:
            self._seed_compute(admin, member, image)
            self._seed_metadefs(image)
        with self.client("network") as admin, self.client("network", "member") as member:
            self._seed_network(admin, member)
        self.settle()
        with self.client("placement", version="placement latest") as placement, \
                self.client("compute", version="compute latest") as admin, \
                self.client("network") as network:
            self._read_ids(placement, admin)
            self._read_revisions(network)
        self._rows = _rows(self.live)

    def restore(self) -> None:
        """Put every table back as `seed()` left it, and restart the agents to reread it.

        Much faster than seeding again (no boots, no resize): a request that
        changed something (a 2xx) is followed by a restore, not a reseed.
        Sequences are not rewound, so rows created later get fresh ids.
        """
        plane = self.live.plane
        assert plane is not None
        self.settle()
        # The simulated driver keeps its guests in memory too: restart the agents
        # (they read the guests back) only when a request changed them.
        guests = _GUESTS in self._rows and (sorted(map(repr, _rows(self.live, _GUESTS)[_GUESTS]))
                                            != sorted(map(repr, self._rows[_GUESTS])))
        # An agent killed by an injected fault (docs/faults.md) is started again too.
        guests = guests or any(name not in plane.agents for name in ("host1", "host2"))
        if guests:
            for name in list(plane.agents):
                plane.stop_host(name)
        put_back(self.live, self._rows)
        if guests:
            for name in ("host1", "host2"):
                plane.add_host(HostConfig(name=name, vcpus=16, memory_mb=16384))
            self.settle()
        for agent in list(plane.agents.values()):
            agent.clear_faults()  # armed faults live in the agents, not in the tables

    def _seed_placement(self, placement: httpx.Client) -> None:
        refs = self.refs
        ok(placement.post("/resource_classes", json={"name": refs["rc.custom"]}))
        ok(placement.put(f"/traits/{refs['trait.custom']}"))
        for name, parent in (("root", None), ("child", "root"), ("empty", None)):
            body: dict[str, Any] = {"name": f"fz-{name}"}
            if parent:
                body["parent_provider_uuid"] = refs[f"rp.{parent}"]
            refs[f"rp.{name}"] = ok(placement.post("/resource_providers", json=body))["uuid"]
        inventories = {"root": {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 4096}},
                       "child": {refs["rc.custom"]: {"total": 10}}}
        for name, inventory in inventories.items():
            ok(placement.put(f"/resource_providers/{refs[f'rp.{name}']}/inventories",
                             json={"resource_provider_generation": 0,
                                   "inventories": inventory}))
            ok(placement.put(f"/resource_providers/{refs[f'rp.{name}']}/traits",
                             json={"resource_provider_generation": 1,
                                   "traits": [refs["trait.std"], refs["trait.custom"]]}))
            ok(placement.put(f"/resource_providers/{refs[f'rp.{name}']}/aggregates",
                             json={"resource_provider_generation": 2,
                                   "aggregates": [refs["agg.1"]]}))
        refs["consumer.a"] = str(uuid.uuid4())
        ok(placement.put(f"/allocations/{refs['consumer.a']}", json={
            "allocations": {refs["rp.root"]: {"resources": {"VCPU": 2}},
                            refs["rp.child"]: {"resources": {refs["rc.custom"]: 1}}},
            "project_id": PROJECT, "user_id": "fuzzer", "consumer_generation": None,
            "consumer_type": "INSTANCE"}))

    def _seed_metadefs(self, image: httpx.Client) -> None:
        """Namespace fz-ns (public; OS::Glance::Image; fz-obj, fz-prop, fz-tag), and the
        standard resource types the service seeds when it starts."""
        metadefs.seed_resource_types(self.live.db)
        refs = self.refs
        ok(image.post("/v2/metadefs/namespaces", json={
            "namespace": refs["mdns.1"], "visibility": "public",
            "resource_type_associations": [{"name": refs["rtype.1"]}],
            "objects": [{"name": refs["md.obj"]}], "tags": [{"name": refs["md.tag"]}],
            "properties": {refs["md.prop"]: {"title": "fz", "type": "string"}}}))

    def _seed_compute(self, admin: httpx.Client, member: httpx.Client,
                      image: httpx.Client) -> None:
        refs = self.refs
        for key, (vcpus, ram, disk, public) in {"small": (1, 512, 1, True),
                                                "big": (2, 1024, 2, True),
                                                "private": (1, 256, 1, False)}.items():
            ok(admin.post("/flavors", json={"flavor": {
                "name": refs[f"flavor.{key}"], "id": refs[f"flavor.{key}"], "vcpus": vcpus,
                "ram": ram, "disk": disk, "os-flavor-access:is_public": public}}))
        ok(admin.post(f"/flavors/{refs['flavor.small']}/os-extra_specs",
                      json={"extra_specs": {refs["spec.key"]: "shared"}}))
        ok(admin.post(f"/flavors/{refs['flavor.private']}/action",
                      json={"addTenantAccess": {"tenant": PROJECT}}))
        refs["image.1"] = ok(image.post("/v2/images", json={
            "name": "fz-image", "disk_format": "qcow2", "container_format": "bare",
            "visibility": "public"}))["id"]
        ok(image.put(f"/v2/images/{refs['image.1']}/file", content=b"fz-image-data",
                     headers={"content-type": "application/octet-stream"}))
        refs["image.shared"] = ok(image.post("/v2/images", json={
            "name": "fz-shared", "disk_format": "raw", "container_format": "bare"}))["id"]
        ok(image.post(f"/v2/images/{refs['image.shared']}/members",
                      json={"member": refs["member.1"]}))
        refs["group.anti"] = ok(member.post("/os-server-groups", json={
            "server_group": {"name": "fz-anti", "policy": "anti-affinity"}}))["server_group"]["id"]
        ok(member.post("/os-keypairs", json={"keypair": {
            "name": refs["keypair.1"], "public_key": refs["ssh.public"]}}))
        refs["aggregate.rack"] = ok(admin.post("/os-aggregates", json={"aggregate": {
            "name": "fz-rack", "availability_zone": "fz-az"}}))["aggregate"]["id"]
        ok(admin.post(f"/os-aggregates/{refs['aggregate.rack']}/action",
                      json={"add_host": {"host": refs["host.1"]}}))
        refs["aggregate.empty"] = ok(admin.post("/os-aggregates", json={"aggregate": {
            "name": "fz-empty"}}))["aggregate"]["id"]
        for name in ("active", "stopped", "resized"):
            body: dict[str, Any] = {"server": {
                "name": f"fz-{name}", "flavorRef": refs["flavor.small"],
                "imageRef": refs["image.1"], "networks": "none"}}
            if name == "active":
                body["os:scheduler_hints"] = {"group": refs["group.anti"]}
                body["server"].update(metadata={refs["meta.key"]: "v"}, tags=[refs["tag.1"]],
                                      key_name=refs["keypair.1"])
            refs[f"server.{name}"] = ok(member.post("/servers", json=body))["server"]["id"]
        self.settle()
        ok(member.post(f"/servers/{refs['server.stopped']}/action", json={"os-stop": None}))
        ok(member.post(f"/servers/{refs['server.resized']}/action",
                       json={"resize": {"flavorRef": refs["flavor.big"]}}))

    def _seed_network(self, admin: httpx.Client, member: httpx.Client) -> None:
        refs = self.refs
        refs["net.provider"] = ok(admin.post("/v2.0/networks", json={"network": {
            "name": "fz-provider", "project_id": PROJECT, "shared": True,
            "provider:network_type": "vlan", "provider:physical_network": refs["physnet"],
            "provider:segmentation_id": 100}}))["network"]["id"]
        refs["net.tenant"] = ok(member.post("/v2.0/networks", json={"network": {
            "name": "fz-tenant"}}))["network"]["id"]
        for key, prefix in (("provider", "10.0.1"), ("tenant", "10.0.2")):
            body: dict[str, Any] = {"name": f"fz-{key}", "network_id": refs[f"net.{key}"],
                                    "ip_version": 4, "cidr": f"{prefix}.0/24"}
            if key == "provider":
                body["allocation_pools"] = [{"start": f"{prefix}.10", "end": f"{prefix}.200"}]
            refs[f"subnet.{key}"] = ok(member.post("/v2.0/subnets",
                                                   json={"subnet": body}))["subnet"]["id"]
        refs["qos.policy"] = ok(admin.post("/v2.0/qos/policies", json={"policy": {
            "name": "fz-qos", "project_id": PROJECT}}))["policy"]["id"]
        for direction, kbps in (("egress", 1000), ("ingress", 2000)):
            refs[f"rule.{direction}"] = ok(admin.post(
                f"/v2.0/qos/policies/{refs['qos.policy']}/minimum_bandwidth_rules",
                json={"minimum_bandwidth_rule": {"min_kbps": kbps, "direction": direction}}
            ))["minimum_bandwidth_rule"]["id"]
        refs["qos.other"] = ok(admin.post("/v2.0/qos/policies", json={"policy": {
            "name": "fz-other", "project_id": "otherproj"}}))["policy"]["id"]
        refs["port.plain"] = ok(member.post("/v2.0/ports", json={"port": {
            "name": "fz-plain", "network_id": refs["net.provider"],
            "mac_address": refs["mac.plain"], "qos_policy_id": refs["qos.policy"],
            "fixed_ips": [{"subnet_id": refs["subnet.provider"],
                           "ip_address": refs["ip.plain"]}]}}))["port"]["id"]
        refs["port.compute"] = port = ok(admin.post("/v2.0/ports", json={"port": {
            "name": "fz-compute", "network_id": refs["net.provider"], "project_id": PROJECT,
            "device_owner": "compute:nova", "device_id": str(uuid.uuid4()),
            "binding:host_id": refs["host.1"],
            "binding:profile": {"allocation": refs["rp.host1"]}}}))["port"]["id"]
        ok(admin.post(f"/v2.0/ports/{port}/bindings", json={"binding": {
            "host": refs["host.2"], "profile": {"allocation": refs["rp.host2"]}}}))
        self._seed_security_groups(member)
        self._seed_l3(admin, member)
        self._seed_subnetpools(member)
        self._seed_agents(admin)

    def _seed_l3(self, admin: httpx.Client, member: httpx.Client) -> None:
        """An external network, a router from it to the tenant subnet, a bare router, a
        port on the tenant subnet and a floating IP associated with it."""
        refs = self.refs
        refs["net.public"] = ok(admin.post("/v2.0/networks", json={"network": {
            "name": "fz-public", "router:external": True}}))["network"]["id"]
        refs["subnet.public"] = ok(admin.post("/v2.0/subnets", json={"subnet": {
            "network_id": refs["net.public"], "ip_version": 4,
            "cidr": "172.24.4.0/24"}}))["subnet"]["id"]
        refs["router.1"] = ok(member.post("/v2.0/routers", json={"router": {
            "name": "fz-router", "external_gateway_info": {
                "network_id": refs["net.public"]}}}))["router"]["id"]
        ok(member.put(f"/v2.0/routers/{refs['router.1']}/add_router_interface",
                      json={"subnet_id": refs["subnet.tenant"]}))
        refs["router.bare"] = ok(member.post("/v2.0/routers", json={"router": {
            "name": "fz-bare"}}))["router"]["id"]
        refs["port.tenant"] = ok(member.post("/v2.0/ports", json={"port": {
            "name": "fz-tenant", "network_id": refs["net.tenant"], "fixed_ips": [
                {"subnet_id": refs["subnet.tenant"], "ip_address": "10.0.2.20"}]}}))["port"]["id"]
        fip = ok(member.post("/v2.0/floatingips", json={"floatingip": {
            "floating_network_id": refs["net.public"],
            "port_id": refs["port.tenant"]}}))["floatingip"]
        refs["fip.1"], refs["fip.1.address"] = fip["id"], fip["floating_ip_address"]

    def _seed_agents(self, admin: httpx.Client) -> None:
        """`agent.1`, `agent.2`: L2 agents of the seeded compute hosts (extension agent)."""
        found = ok(admin.get("/v2.0/agents"))["agents"]
        ids = [a["id"] for a in found if a["host"] in (self.refs["host.1"], self.refs["host.2"])]
        assert len(ids) >= 2, found
        self.refs["agent.1"], self.refs["agent.2"] = ids[0], ids[1]

    def _seed_subnetpools(self, member: httpx.Client) -> None:
        """`pool.used` (a subnet of net.tenant was allocated from it) and `pool.free`."""
        refs = self.refs
        for name, prefix in (("used", "10.8.0.0/16"), ("free", "10.9.0.0/16")):
            refs[f"pool.{name}"] = ok(member.post("/v2.0/subnetpools", json={"subnetpool": {
                "name": f"fz-{name}", "prefixes": [prefix], "default_prefixlen": 24}}
            ))["subnetpool"]["id"]
        ok(member.post("/v2.0/subnets", json={"subnet": {
            "network_id": refs["net.tenant"], "ip_version": 4,
            "subnetpool_id": refs["pool.used"]}}))

    def _seed_security_groups(self, member: httpx.Client) -> None:
        refs = self.refs
        refs["sg.default"] = ok(member.get("/v2.0/security-groups", params={
            "name": "default"}))["security_groups"][0]["id"]
        refs["sg.web"] = ok(member.post("/v2.0/security-groups", json={"security_group": {
            "name": "fz-web"}}))["security_group"]["id"]
        rule = {"security_group_id": refs["sg.web"], "direction": "ingress", "protocol": "tcp",
                "port_range_min": 22, "port_range_max": 22, "remote_ip_prefix": "10.0.0.0/8"}
        refs["sgrule.web"] = ok(member.post("/v2.0/security-group-rules", json={
            "security_group_rule": rule}))["security_group_rule"]["id"]

    def _read_revisions(self, network: httpx.Client) -> None:
        """`rev.<name>`: the If-Match header value that names the record's revision."""
        for name, path in (("net.provider", "networks"), ("net.tenant", "networks"),
                           ("subnet.provider", "subnets"), ("subnet.tenant", "subnets"),
                           ("port.plain", "ports"), ("port.compute", "ports"),
                           ("qos.policy", "qos/policies"), ("qos.other", "qos/policies"),
                           ("sg.web", "security-groups"), ("sg.default", "security-groups"),
                           ("router.1", "routers"), ("router.bare", "routers"),
                           ("fip.1", "floatingips"),
                           ("pool.used", "subnetpools"), ("pool.free", "subnetpools")):
            found = ok(network.get(f"/v2.0/{path}/{self.refs[name]}"))
            revision = next(iter(found.values()))["revision_number"]
            self.refs[f"rev.{name}"] = f"revision_number={revision}"

    def _read_ids(self, placement: httpx.Client, admin: httpx.Client) -> None:
        """Generations and service ids, read once the control plane is idle."""
        refs = self.refs
        for key in ("root", "child", "empty", "host1", "host2"):
            found = ok(placement.get(f"/resource_providers/{refs[f'rp.{key}']}"))
            refs[f"gen.rp.{key}"] = found["generation"]
        for key in ("consumer.a", "server.active"):
            refs[f"gen.{key}"] = ok(placement.get(f"/allocations/{refs[key]}")).get(
                "consumer_generation")
        services = ok(admin.get("/os-services", params={"host": "host1"}))["services"]
        refs["service.uuid"] = services[0]["id"]
        old = ok(admin.get("/os-services", params={"host": "host2"},
                           headers={"openstack-api-version": "compute 2.52"}))["services"]
        refs["service.id"] = str(old[0]["id"])
        resize = ok(admin.get("/os-migrations", params={"instance_uuid": refs["server.resized"]}))
        refs["migration.resized"] = str(resize["migrations"][0]["id"])
        for name in ("active", "stopped", "resized"):
            server = ok(admin.get(f"/servers/{refs[f'server.{name}']}"))["server"]
            assert server["status"] == {"active": "ACTIVE", "stopped": "SHUTOFF",
                                        "resized": "VERIFY_RESIZE"}[name], server


def ok(resp: httpx.Response) -> Any:
    """The JSON of a 2xx answer (None when empty); anything else stops the seeding."""
    assert resp.status_code < 300, f"{resp.request.method} {resp.request.url}: {resp.text}"
    return resp.json() if resp.content else None


Dump = dict[str, list[str]]
Rows = dict[str, list[dict[str, Any]]]


def _tables() -> list[sa.Table]:
    """Every table but the change log, parents before children."""
    return [table for metadata in (placement_tables.metadata, compute_tables.metadata,
                                   image_tables.metadata, network_tables.metadata)
            for table in metadata.sorted_tables if table.name not in _SKIPPED_TABLES]


def _engine(live: LiveServer, table: sa.Table) -> sa.Engine:
    """Where `table`'s rows are: the cell's database for a cell table, else the API's."""
    in_cell = table.name in compute_tables.CELL_TABLES and live.cells is not None
    return live.cell_db.engine if in_cell else live.db.engine


def _by_engine(live: LiveServer, tables: list[sa.Table]) -> dict[sa.Engine, list[sa.Table]]:
    """`tables` grouped by the database holding them, each group in the given order."""
    grouped: dict[sa.Engine, list[sa.Table]] = {}
    for table in tables:
        grouped.setdefault(_engine(live, table), []).append(table)
    return grouped


def _read(live: LiveServer, tables: list[sa.Table]) -> dict[str, list[Any]]:
    """Every row of `tables`, one connection (and transaction) per database."""
    found: dict[str, list[Any]] = {}
    for engine, grouped in _by_engine(live, tables).items():
        with engine.connect() as conn:
            for table in grouped:
                found[table.name] = list(conn.execute(sa.select(table)))
    return found


def _rows(live: LiveServer, only: str | None = None) -> Rows:
    tables = [table for table in _tables() if only in (None, table.name)]
    return {name: [dict(row._mapping) for row in found]
            for name, found in _read(live, tables).items()}


def put_back(live: LiveServer, rows: Rows) -> None:
    """Replace every row by `rows`: the cell's tables in the cell's database, the rest
    in the API database (the same one when cell1 shares it)."""
    cell = [t for t in _tables() if t.name in compute_tables.CELL_TABLES]
    with live.cell_db.view(None).write() as conn:
        _replace(conn, cell, rows)
    with live.db.write() as conn:
        _put_back(conn, [t for t in _tables() if t not in cell], rows)


def _replace(conn: sa.Connection, tables: list[sa.Table], rows: Rows) -> None:
    for table in reversed(tables):
        conn.execute(table.delete())
    for table in tables:
        if rows[table.name]:
            conn.execute(table.insert(), rows[table.name])


def _put_back(conn: sa.Connection, tables: list[sa.Table], rows: Rows) -> None:
    """Replace every row by `rows`; providers go in unlinked, then get their tree back."""
    providers = placement_tables.resource_providers
    conn.execute(providers.update().values(parent_provider_id=None, root_provider_id=None))
    for table in reversed(tables):
        conn.execute(table.delete())
    for table in tables:
        saved = rows[table.name]
        if table is providers:
            saved = [{**row, "parent_provider_id": None, "root_provider_id": None}
                     for row in saved]
        if saved:
            conn.execute(table.insert(), saved)
    for row in rows[providers.name]:
        conn.execute(providers.update().where(providers.c.id == row["id"]).values(
            parent_provider_id=row["parent_provider_id"],
            root_provider_id=row["root_provider_id"]))
    changes.record_all(conn)


def dump(live: LiveServer) -> Dump:
    """Every row of every table (but the change log), as sorted text, per table.

    Read through the driver, one transaction per database: a dump follows every
    fuzzed request, and a SQLAlchemy connection and SELECT per table made it over
    half of the fuzz test's time. The rows are the driver's values (dates as text on
    SQLite), compared only with another dump's.
    """
    found: Dump = {}
    for engine, tables in _by_engine(live, _tables()).items():
        quote = engine.dialect.identifier_preparer.quote
        raw = engine.raw_connection()
        try:
            cursor = raw.cursor()
            for table in tables:
                cursor.execute(f"SELECT * FROM {quote(table.name)}")
                found[table.name] = sorted(repr(tuple(row)) for row in cursor.fetchall())
            cursor.close()
            raw.rollback()
        finally:
            raw.close()
    return found


def difference(before: Dump, after: Dump, limit: int = 6) -> str:
    """Rows gone and rows new, per table, for a failure message ('' when equal)."""
    lines: list[str] = []
    for name in sorted(set(before) | set(after)):
        old, new = set(before.get(name, ())), set(after.get(name, ()))
        for sign, rows in (("-", sorted(old - new)), ("+", sorted(new - old))):
            lines.extend(f"  {name} {sign} {row[:300]}" for row in rows[:limit])
    return "\n".join(lines)
