"""A hostile walk through the Network and Image services under secure-RBAC defaults.

Project A's member (alice) owns a network with a subnet, a port, a security
group with a rule, and images; the admin owns a shared network and QoS
policies. Then everybody else tries to change them::

    caller                      writes on A's records        creates in project A
    alice  member of A          allowed                      allowed
    rita   reader of A          403 (she sees them)          403
    nobody A, no role           404 (he sees nothing)        403
    bob    member of B          404 (hidden) / 403 (shared)  -
    system-scoped admin/member  403                          403
    admin                       allowed                      allowed

After every refused write the admin re-reads everything: nothing changed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from stowage.config import PolicySettings
from tests.conftest import BACKENDS
from tests.functional import networking as nw
from tests.functional.conftest import MEMBER, READER, LiveServer, api_client, reset_cloud, serving

SYSTEM = {"openstack-system-scope": "all"}
PATCH = {"content-type": "application/openstack-images-v2.1-json-patch"}
COLLECTIONS = ("networks", "subnets", "ports", "security-groups", "security-group-rules",
               "qos/policies")


@dataclass
class ProjectA:
    """The records the hostile callers aim at (ids), made by alice and the admin."""

    net: str
    subnet: str
    port: str
    group: str
    rule: str
    shared_net: str
    qos: str


def _client(live: LiveServer, service: str, token: str, roles: tuple[str, ...] | None = None,
            headers: dict[str, str] | None = None) -> httpx.Client:
    return api_client(f"{live.url}/{service}", token=token, roles=roles, headers=headers)


def _world(network: httpx.Client, alice: httpx.Client) -> ProjectA:
    net = nw.network(alice, "alices")
    subnet = nw.subnet(alice, net["id"])
    port = nw.port(alice, net["id"], name="alices-port")
    group = nw.made(alice.post("/v2.0/security-groups", json={"security_group": {
        "name": "web"}}), "security_group")
    rule = nw.made(alice.post("/v2.0/security-group-rules", json={"security_group_rule": {
        "security_group_id": group["id"], "direction": "ingress", "protocol": "tcp",
        "port_range_min": 22, "port_range_max": 22, "remote_ip_prefix": "10.0.0.0/8"}}),
        "security_group_rule")
    shared = nw.network(network, "public", shared=True)
    qos = nw.made(network.post("/v2.0/qos/policies", json={"policy": {
        "name": "alices-qos", "project_id": "proj-a"}}), "policy")
    return ProjectA(net["id"], subnet["id"], port["id"], group["id"], rule["id"],
                    shared["id"], qos["id"])


def _everything(network: httpx.Client) -> dict[str, Any]:
    """Every record of every collection, as the admin reads them."""
    found = {}
    for name in COLLECTIONS:
        resp = network.get(f"/v2.0/{name}")
        assert resp.status_code == 200, resp.text
        found[name] = resp.json()
    return found


@pytest.fixture
def world(live_stowage: LiveServer, network: httpx.Client) -> Iterator[ProjectA]:
    with _client(live_stowage, "network", "alice:proj-a", MEMBER) as alice:
        yield _world(network, alice)


def _hostile_writes(a: ProjectA) -> list[tuple[str, str, dict[str, Any] | None]]:
    """(method, path, body) of the attack on records of project A."""
    return [
        ("PUT", f"/v2.0/networks/{a.net}", {"network": {"name": "pwned"}}),
        ("DELETE", f"/v2.0/networks/{a.net}", None),
        ("PUT", f"/v2.0/subnets/{a.subnet}", {"subnet": {"name": "pwned"}}),
        ("DELETE", f"/v2.0/subnets/{a.subnet}", None),
        ("PUT", f"/v2.0/ports/{a.port}", {"port": {"name": "pwned"}}),
        ("DELETE", f"/v2.0/ports/{a.port}", None),
        ("PUT", f"/v2.0/security-groups/{a.group}", {"security_group": {"name": "pwned"}}),
        ("DELETE", f"/v2.0/security-groups/{a.group}", None),
        ("DELETE", f"/v2.0/security-group-rules/{a.rule}", None),
        ("PUT", f"/v2.0/qos/policies/{a.qos}", {"policy": {"name": "pwned"}}),
        ("DELETE", f"/v2.0/qos/policies/{a.qos}", None),
    ]


def _creates(a: ProjectA) -> list[tuple[str, dict[str, Any], str]]:
    """(path, body, rule) of creates in the caller's project."""
    wide_open = {"security_group_id": a.group, "direction": "ingress", "protocol": "tcp",
                 "port_range_min": 1, "port_range_max": 65535,
                 "remote_ip_prefix": "0.0.0.0/0"}
    return [
        ("/v2.0/networks", {"network": {"name": "mine"}}, "create_network"),
        ("/v2.0/ports", {"port": {"network_id": a.net}}, "create_port"),
        ("/v2.0/subnets", {"subnet": {"network_id": a.net, "cidr": "10.9.0.0/24",
                                      "ip_version": 4}}, "create_subnet"),
        ("/v2.0/security-groups", {"security_group": {"name": "mine"}},
         "create_security_group"),
        ("/v2.0/security-group-rules", {"security_group_rule": wide_open},
         "create_security_group_rule"),
        ("/v2.0/qos/policies", {"policy": {"name": "mine"}}, "create_policy"),
    ]


def _send(client: httpx.Client, method: str, path: str,
          body: dict[str, Any] | None) -> httpx.Response:
    return client.request(method, path, json=body)


def test_a_reader_sees_but_changes_nothing(live_stowage: LiveServer, network: httpx.Client,
                                           world: ProjectA) -> None:
    before = _everything(network)
    with _client(live_stowage, "network", "rita:proj-a", READER) as rita:
        assert nw.ids(rita.get("/v2.0/networks"), "networks") == [world.net, world.shared_net]
        assert nw.ids(rita.get("/v2.0/ports"), "ports") == [world.port]
        assert world.rule in nw.ids(rita.get("/v2.0/security-group-rules"),
                                    "security_group_rules")
        for method, path, body in _hostile_writes(world):
            message = nw.neutron_error(_send(rita, method, path, body), 403,
                                       "PolicyNotAuthorized")
            assert message.endswith("is disallowed by policy"), message
        for path, body, rule in _creates(world):
            message = nw.neutron_error(rita.post(path, json=body), 403, "PolicyNotAuthorized")
            assert message == f"rule:{rule} is disallowed by policy"
    assert _everything(network) == before


def test_a_token_without_a_role_sees_and_changes_nothing(
        live_stowage: LiveServer, network: httpx.Client, world: ProjectA) -> None:
    """noauth2's `user:project` token carries no role: it is nobody in the project."""
    before = _everything(network)
    with _client(live_stowage, "network", "nobody:proj-a") as nobody:
        # Neutron's `rule:shared` asks for no role: shared networks are seen by anybody.
        assert nw.ids(nobody.get("/v2.0/networks"), "networks") == [world.shared_net]
        for name in ("subnets", "ports", "security-groups", "security-group-rules",
                     "qos/policies"):
            key = name.split("/")[-1].replace("-", "_")
            assert nw.ids(nobody.get(f"/v2.0/{name}"), key) == [], name
        nw.neutron_error(nobody.get(f"/v2.0/networks/{world.net}"), 404, "NetworkNotFound")
        nw.neutron_error(nobody.get(f"/v2.0/ports/{world.port}"), 404, "PortNotFound")
        _writes_find_nothing(nobody, world)
        for path, body, rule in _creates(world):
            message = nw.neutron_error(nobody.post(path, json=body), 403,
                                       "PolicyNotAuthorized")
            assert message == f"rule:{rule} is disallowed by policy"
    assert _everything(network) == before


def _writes_find_nothing(client: httpx.Client, world: ProjectA) -> None:
    """Every write to project A's records is a 404 for `client`: it may not see them."""
    for method, path, body in _hostile_writes(world):
        resp = _send(client, method, path, body)
        assert resp.status_code == 404, (method, path, resp.text)


def test_another_projects_member_cannot_touch_project_a(
        live_stowage: LiveServer, network: httpx.Client, world: ProjectA) -> None:
    before = _everything(network)
    with _client(live_stowage, "network", "bob:proj-b", MEMBER) as bob:
        _writes_find_nothing(bob, world)
        wide_open = _creates(world)[4][1]
        nw.neutron_error(bob.post("/v2.0/security-group-rules", json=wide_open), 404,
                         "SecurityGroupNotFound")
        nw.neutron_error(bob.post("/v2.0/ports", json={"port": {"network_id": world.net}}),
                         404, "NetworkNotFound")
        # The shared network is seen, so changing it is a 403, not a 404.
        message = nw.neutron_error(bob.put(f"/v2.0/networks/{world.shared_net}", json={
            "network": {"name": "pwned"}}), 403, "PolicyNotAuthorized")
        assert message == "rule:update_network is disallowed by policy"
        nw.neutron_error(bob.delete(f"/v2.0/networks/{world.shared_net}"), 403,
                         "PolicyNotAuthorized")
        nw.neutron_error(bob.post("/v2.0/subnets", json={"subnet": {
            "network_id": world.shared_net, "cidr": "10.8.0.0/24", "ip_version": 4}}),
            403, "PolicyNotAuthorized")
    assert _everything(network) == before


@pytest.mark.parametrize("roles", [("admin", "member", "reader"), ("member", "reader")])
def test_a_token_without_a_project_creates_nothing(live_stowage: LiveServer,
                                                   network: httpx.Client, world: ProjectA,
                                                   roles: tuple[str, ...]) -> None:
    before = _everything(network)
    with _client(live_stowage, "network", "sys", roles, SYSTEM) as system:
        for path, body, rule in _creates(world):
            message = nw.neutron_error(system.post(path, json=body), 403,
                                       "PolicyNotAuthorized")
            assert message == f"rule:{rule} is disallowed by policy"
    assert _everything(network) == before


def test_members_change_their_project_and_admins_everything(
        live_stowage: LiveServer, network: httpx.Client, world: ProjectA) -> None:
    with _client(live_stowage, "network", "alice:proj-a", MEMBER) as alice:
        assert nw.made(alice.put(f"/v2.0/ports/{world.port}", json={"port": {
            "name": "renamed"}}), "port", 200)["name"] == "renamed"
        assert alice.delete(f"/v2.0/security-group-rules/{world.rule}").status_code == 204
        # Admin-only attributes are rules of their own.
        message = nw.neutron_error(alice.put(f"/v2.0/ports/{world.port}", json={"port": {
            "binding:host_id": "host1"}}), 403, "PolicyNotAuthorized")
        assert message == ("(rule:update_port and rule:update_port:binding:host_id) is "
                           "disallowed by policy")
        assert "binding:host_id" not in nw.made(alice.get(f"/v2.0/ports/{world.port}"),
                                                "port", 200)
    changed = nw.made(network.put(f"/v2.0/ports/{world.port}", json={"port": {
        "binding:host_id": "host1"}}), "port", 200)
    assert changed["binding:host_id"] == "host1"
    assert nw.made(network.put(f"/v2.0/networks/{world.net}", json={"network": {
        "name": "by-admin"}}), "network", 200)["name"] == "by-admin"
    assert network.delete(f"/v2.0/security-groups/{world.group}").status_code == 204


def _bulk(body: dict[str, Any]) -> dict[str, Any]:
    """A create's body as Neutron's bulk body of two items (one bare, one keyed)."""
    ((key, item),) = body.items()
    return {f"{key}s": [item, {key: dict(item)}]}


def test_bulk_creates_are_held_to_the_rules_item_by_item(
        live_stowage: LiveServer, network: httpx.Client, world: ProjectA) -> None:
    """Neutron checks `create_<resource>` and its attribute rules for every item of a bulk
    body; one item refused is a 403 and none of the batch is written."""
    before = _everything(network)
    bulk = [(path, body, rule) for path, body, rule in _creates(world)
            if rule != "create_policy"]
    for token, roles in (("rita:proj-a", READER), ("nobody:proj-a", None)):
        with _client(live_stowage, "network", token, roles) as caller:
            for path, body, rule in bulk:
                message = nw.neutron_error(caller.post(path, json=_bulk(body)), 403,
                                           "PolicyNotAuthorized")
                assert message == f"rule:{rule} is disallowed by policy", (token, path)
    assert _everything(network) == before
    # A member's batch whose last item the rules refuse: the items before it are undone.
    refused = [
        ("/v2.0/networks", {"networks": [{"name": "ok"}, {"name": "wide", "shared": True}]},
         "(rule:create_network and rule:create_network:shared)"),
        ("/v2.0/ports", {"ports": [{"network_id": world.net, "name": "ok"},
                                   {"port": {"network_id": world.net,
                                             "binding:host_id": "host1"}}]},
         "(rule:create_port and rule:create_port:binding:host_id)"),
        ("/v2.0/subnets", {"subnets": [
            {"network_id": world.net, "cidr": "10.9.0.0/24", "ip_version": 4},
            {"network_id": world.shared_net, "cidr": "10.8.0.0/24", "ip_version": 4}]},
         "rule:create_subnet"),
    ]
    with _client(live_stowage, "network", "alice:proj-a", MEMBER) as alice:
        for path, body, rule in refused:
            message = nw.neutron_error(alice.post(path, json=body), 403,
                                       "PolicyNotAuthorized")
            assert message == f"{rule} is disallowed by policy", path
        assert _everything(network) == before
        made = alice.post("/v2.0/networks", json={"networks": [
            {"name": "x"}, {"network": {"name": "y"}}]})
        assert made.status_code == 201, made.text
        assert [(n["name"], n["project_id"]) for n in made.json()["networks"]] == \
            [("x", "proj-a"), ("y", "proj-a")]


# --- images -----------------------------------------------------------------------------

def _image(client: httpx.Client, name: str, **fields: Any) -> str:
    resp = client.post("/v2/images", json={"name": name, "disk_format": "qcow2",
                                           "container_format": "bare", **fields})
    assert resp.status_code == 201, resp.text
    return str(resp.json()["id"])


def _images(admin: httpx.Client) -> list[dict[str, Any]]:
    resp = admin.get("/v2/images")
    assert resp.status_code == 200, resp.text
    return list(resp.json()["images"])


def _glance_error(resp: httpx.Response, status: int) -> str:
    assert resp.status_code == status, resp.text
    return str(resp.json()["message"])


@dataclass
class Images:
    private: str
    public: str


@pytest.fixture
def images(live_stowage: LiveServer) -> Iterator[Images]:
    reset_cloud(live_stowage)
    with _client(live_stowage, "image", "admin") as admin, \
            _client(live_stowage, "image", "alice:proj-a", MEMBER) as alice:
        private = _image(alice, "alices", visibility="private")
        public = _image(admin, "alices-public", visibility="public", owner="proj-a")
        yield Images(private, public)


def _image_writes(client: httpx.Client, image_id: str) -> list[httpx.Response]:
    """Rename, upload to and delete the image; the answers."""
    path = f"/v2/images/{image_id}"
    return [client.patch(path, json=[{"op": "replace", "path": "/name", "value": "pwned"}],
                         headers=PATCH),
            client.put(path + "/file", content=b"data",
                       headers={"content-type": "application/octet-stream"}),
            client.delete(path)]


def test_image_readers_and_tokens_without_roles_change_nothing(
        live_stowage: LiveServer, images: Images) -> None:
    with _client(live_stowage, "image", "admin") as admin:
        before = _images(admin)
        with _client(live_stowage, "image", "rita:proj-a", READER) as rita:
            assert {i["id"] for i in _images(rita)} == {images.private, images.public}
            assert [_glance_error(r, 403) for r in _image_writes(rita, images.private)] == [
                f"You are not authorized to complete {action} action."
                for action in ("modify_image", "upload_image", "delete_image")]
            assert _glance_error(rita.post("/v2/images", json={"name": "x"}), 403) == \
                "You are not authorized to complete add_image action."
        with _client(live_stowage, "image", "nobody:proj-a") as nobody:
            assert _glance_error(nobody.get("/v2/images"), 403) == \
                "You are not authorized to complete get_images action."
            assert nobody.get(f"/v2/images/{images.private}").status_code == 404
            assert [r.status_code for r in _image_writes(nobody, images.private)] == [404] * 3
            assert nobody.post("/v2/images", json={"name": "x"}).status_code == 403
        with _client(live_stowage, "image", "admin", ("admin", "member", "reader"),
                     SYSTEM) as system:
            assert _glance_error(system.post("/v2/images", json={"name": "x"}), 403) == \
                "You are not authorized to complete add_image action."
        assert _images(admin) == before


def test_image_members_of_other_projects_and_publicizing(
        live_stowage: LiveServer, images: Images) -> None:
    with _client(live_stowage, "image", "admin") as admin:
        before = _images(admin)
        with _client(live_stowage, "image", "bob:proj-b", MEMBER) as bob:
            assert [r.status_code for r in _image_writes(bob, images.private)] == [404] * 3
            # The public image is seen: refusing to change it is a 403.
            assert [r.status_code for r in _image_writes(bob, images.public)] == [403] * 3
        with _client(live_stowage, "image", "alice:proj-a", MEMBER) as alice:
            go_public = [{"op": "replace", "path": "/visibility", "value": "public"}]
            assert _glance_error(alice.patch(f"/v2/images/{images.private}", json=go_public,
                                             headers=PATCH), 403) == \
                "You are not authorized to complete publicize_image action."
            assert _images(admin) == before
            community = [{"op": "replace", "path": "/visibility", "value": "community"}]
            resp = alice.patch(f"/v2/images/{images.private}", json=community, headers=PATCH)
            assert resp.status_code == 200, resp.text
            assert alice.delete(f"/v2/images/{images.private}").status_code == 204
        assert admin.delete(f"/v2/images/{images.public}").status_code == 204
        assert _images(admin) == []


def test_nova_image_proxy_is_held_to_glance_rules(live_stowage: LiveServer,
                                                  images: Images) -> None:
    """Nova passes its caller's token to Glance: the same rules answer through it."""
    version = {"openstack-api-version": "compute 2.35"}
    url = images.private
    with _client(live_stowage, "compute/v2.1", "rita:proj-a", READER, version) as rita:
        assert rita.get(f"/images/{url}").status_code == 200
        assert rita.delete(f"/images/{url}").status_code == 403
        assert rita.put(f"/images/{url}/metadata", json={"metadata": {"k": "v"}}) \
            .status_code == 403
    with _client(live_stowage, "compute/v2.1", "nobody:proj-a", None, version) as nobody:
        assert nobody.delete(f"/images/{url}").status_code == 404
    with _client(live_stowage, "image", "admin") as admin:
        shown = admin.get(f"/v2/images/{images.private}")
        assert shown.status_code == 200 and "k" not in shown.json()


# --- an operator's policy file -------------------------------------------------------------

OVERRIDES = {"create_network": "rule:admin_only",
             # A rule Neutron does not define: an operator's attribute rule is held too.
             "update_network:mtu": "rule:admin_only",
             "get_network:provider:network_type": "role:reader",
             # Quota rules are in the same table: a reader may read every project's.
             "get_quota": "role:reader",
             "delete_image": "role:admin",
             "publicize_image": "role:member and project_id:%(project_id)s"}


@pytest.fixture(scope="module", params=BACKENDS)
def overridden(request: pytest.FixtureRequest) -> Iterator[LiveServer]:
    with serving(request.param, policy=PolicySettings(overrides=OVERRIDES)) as live:
        yield live


def test_policy_overrides_change_network_and_image_rules(overridden: LiveServer) -> None:
    with _client(overridden, "network", "alice:proj-a", MEMBER) as alice, \
            _client(overridden, "network", "admin") as network:
        nw.neutron_error(alice.post("/v2.0/networks", json={"network": {"name": "x"}}), 403,
                         "PolicyNotAuthorized")
        net = nw.network(network, "for-alice", project_id="proj-a")
        shown = nw.made(alice.get(f"/v2.0/networks/{net['id']}"), "network", 200)
        assert shown["provider:network_type"] == net["provider:network_type"]
        assert "provider:segmentation_id" not in shown
        message = nw.neutron_error(alice.put(f"/v2.0/networks/{net['id']}", json={
            "network": {"mtu": 1400}}), 403, "PolicyNotAuthorized")
        assert message == ("(rule:update_network and rule:update_network:mtu) is disallowed "
                           "by policy")
        assert nw.made(alice.put(f"/v2.0/networks/{net['id']}", json={
            "network": {"name": "renamed"}}), "network", 200)["mtu"] == net["mtu"]
        assert alice.get("/v2.0/quotas/proj-b").status_code == 200
        assert alice.get("/v2.0/quotas").status_code == 200
        message = nw.neutron_error(alice.put("/v2.0/quotas/proj-a", json={
            "quota": {"network": 50}}), 403, "PolicyNotAuthorized")
        assert message == "rule:update_quota is disallowed by policy"
    with _client(overridden, "image", "alice:proj-a", MEMBER) as alice:
        made = _image(alice, "alices", visibility="public")
        assert _glance_error(alice.delete(f"/v2/images/{made}"), 403) == \
            "You are not authorized to complete delete_image action."
        assert alice.get(f"/v2/images/{made}").status_code == 200
