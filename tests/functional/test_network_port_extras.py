"""A port's allowed address pairs and extra DHCP options over HTTP: create, list,
update semantics (pairs replaced, options merged, null removes), Neutron's validation
errors (which change nothing), and the records going with their port."""

from __future__ import annotations

from typing import Any

import httpx

from tests.functional import networking as nw


def _net(client: httpx.Client) -> str:
    net = nw.network(client)
    nw.subnet(client, net["id"], "10.0.0.0/24")
    return str(net["id"])


def _update(client: httpx.Client, port_id: str, **fields: Any) -> httpx.Response:
    return client.put(f"/v2.0/ports/{port_id}", json={"port": fields})


def test_address_pairs_create_update_list(network: httpx.Client) -> None:
    net_id = _net(network)
    other = nw.port(network, net_id)
    pair = {"ip_address": other["fixed_ips"][0]["ip_address"],
            "mac_address": other["mac_address"]}
    port = nw.port(network, net_id, allowed_address_pairs=[pair])
    assert port["allowed_address_pairs"] == [pair]
    listed = network.get("/v2.0/ports", params={"id": port["id"]}).json()["ports"]
    assert listed[0]["allowed_address_pairs"] == [pair]
    # Replaced as a whole; no MAC means the port's own; a CIDR is kept as a CIDR.
    changed = nw.made(_update(network, port["id"], allowed_address_pairs=[
        {"ip_address": "10.0.1.0/24"}, {"ip_address": "10.0.0.99/32", "mac_address":
                                        "FA:16:3E:00:00:01"}]), "port", 200)
    assert changed["allowed_address_pairs"] == [
        {"ip_address": "10.0.1.0/24", "mac_address": port["mac_address"]},
        {"ip_address": "10.0.0.99", "mac_address": "fa:16:3e:00:00:01"}]
    assert changed["revision_number"] == port["revision_number"] + 1
    cleared = nw.made(_update(network, port["id"], allowed_address_pairs=[]), "port", 200)
    assert cleared["allowed_address_pairs"] == []


def test_address_pair_errors_change_nothing(network: httpx.Client) -> None:
    net_id = _net(network)
    port = nw.port(network, net_id, allowed_address_pairs=[{"ip_address": "10.0.0.200"}])
    kept = port["allowed_address_pairs"]
    too_many = [{"ip_address": f"10.0.1.{i}"} for i in range(11)]
    cases = [
        (too_many, "AllowedAddressPairExhausted",
         "The number of allowed address pair exceeds the maximum 10."),
        ([{"mac_address": "fa:16:3e:00:00:01"}], "AllowedAddressPairsMissingIP",
         "AllowedAddressPair must contain ip_address"),
        ([{"ip_address": "10.0.0.5"}, {"ip_address": "10.0.0.5"}],
         "DuplicateAddressPairInRequest",
         "Request contains duplicate address pair: mac_address None ip_address 10.0.0.5."),
        ([{"ip_address": "nonsense"}], "HTTPBadRequest", "'nonsense' is not a valid IP address"),
        ([{"ip_address": "10.0.0.0/33"}], "HTTPBadRequest",
         "'10.0.0.0/33' is not a valid IP subnet"),
        ([{"ip_address": "10.0.0.5", "mac_address": "xx"}], "HTTPBadRequest",
         "'xx' is not a valid MAC address"),
        ([{"ip_address": "10.0.0.5", "color": "red"}], "HTTPBadRequest",
         "Unrecognized attribute(s) 'color'"),
        ([{"ip_address": port["fixed_ips"][0]["ip_address"]}],
         "AddressPairMatchesPortFixedIPAndMac",
         "Port's Fixed IP and Mac Address match an address pair entry."),
        ("10.0.0.5", "HTTPBadRequest", "Allowed address pairs must be a list."),
    ]
    for pairs, error_type, message in cases:
        got = nw.neutron_error(_update(network, port["id"], allowed_address_pairs=pairs),
                               400, error_type)
        assert got == message
    assert nw.made(network.get(f"/v2.0/ports/{port['id']}"), "port", 200)[
        "allowed_address_pairs"] == kept
    ten = [{"ip_address": f"10.0.1.{i}"} for i in range(10)]
    assert len(nw.made(_update(network, port["id"], allowed_address_pairs=ten), "port",
                       200)["allowed_address_pairs"]) == 10


def test_extra_dhcp_options(network: httpx.Client) -> None:
    net_id = _net(network)
    opts = [{"opt_name": "bootfile-name", "opt_value": "pxelinux.0"},
            {"opt_name": "tftp-server", "opt_value": "123.123.123.123"},
            {"opt_name": "dns-server", "opt_value": "2001:db8::1", "ip_version": 6},
            {"opt_name": "skipped", "opt_value": None}]
    port = nw.port(network, net_id, extra_dhcp_opts=opts)

    def shown(view: dict[str, Any]) -> set[tuple[str, str, int]]:
        return {(o["opt_name"], o["opt_value"], o["ip_version"])
                for o in view["extra_dhcp_opts"]}

    assert shown(port) == {("bootfile-name", "pxelinux.0", 4),
                           ("tftp-server", "123.123.123.123", 4),
                           ("dns-server", "2001:db8::1", 6)}
    changed = nw.made(_update(network, port["id"], extra_dhcp_opts=[
        {"opt_name": "bootfile-name", "opt_value": "other.0"},
        {"opt_name": "tftp-server", "opt_value": None},
        {"opt_name": "server-ip-address", "opt_value": "10.0.0.1", "ip_version": "4"}]),
        "port", 200)
    assert shown(changed) == {("bootfile-name", "other.0", 4),
                              ("server-ip-address", "10.0.0.1", 4),
                              ("dns-server", "2001:db8::1", 6)}
    for bad in ([{"opt_name": "x"}], [{"opt_name": "", "opt_value": "v"}],
                [{"opt_name": "x", "opt_value": "v", "ip_version": 5}], "x",
                [{"opt_name": "x", "opt_value": ""}]):
        message = nw.neutron_error(_update(network, port["id"], extra_dhcp_opts=bad), 400,
                                   "HTTPBadRequest")
        assert message.startswith("Invalid input for extra_dhcp_opts. Reason: ")
    again = nw.made(network.get(f"/v2.0/ports/{port['id']}"), "port", 200)
    assert shown(again) == shown(changed)


def test_extras_go_with_the_port(network: httpx.Client) -> None:
    net_id = _net(network)
    port = nw.port(network, net_id, allowed_address_pairs=[{"ip_address": "10.0.0.9"}],
                   extra_dhcp_opts=[{"opt_name": "a", "opt_value": "b"}])
    assert network.delete(f"/v2.0/ports/{port['id']}").status_code == 204
    again = nw.port(network, net_id)
    assert (again["allowed_address_pairs"], again["extra_dhcp_opts"]) == ([], [])


def test_extensions_advertised(network: httpx.Client) -> None:
    aliases = {e["alias"] for e in network.get("/v2.0/extensions").json()["extensions"]}
    assert {"allowed-address-pairs", "extra_dhcp_opt", "standard-attr-tag",
            "subnet_allocation", "tag-ports-during-bulk-creation"} <= aliases
    assert "port-security" not in aliases
