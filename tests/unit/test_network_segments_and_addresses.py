"""Pure parts of the Network service: provider segments, subnet arithmetic, binding outcomes."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest

from stowage.errors import DomainError
from stowage.network import addresses as a
from stowage.network import mechanism, segments
from stowage.network.segments import Segment


def _ip(text: str) -> a.Addr:
    return ipaddress.ip_address(text)


@pytest.mark.parametrize(("provider", "segment"), [
    ({}, Segment("vxlan")),
    ({"provider:network_type": "flat", "provider:physical_network": "p"},
     Segment("flat", "p")),
    ({"provider:network_type": "vlan", "provider:physical_network": "p",
      "provider:segmentation_id": 4094}, Segment("vlan", "p", 4094)),
    ({"provider:network_type": "geneve", "provider:segmentation_id": 2**24 - 1},
     Segment("geneve", None, 2**24 - 1)),
    ({"provider:network_type": "local"}, Segment("local")),
])
def test_requested_segments(provider: dict[str, Any], segment: Segment) -> None:
    assert segments.requested(provider, "vxlan") == segment


@pytest.mark.parametrize(("provider", "reason"), [
    ({"provider:network_type": "vlan"}, "physical_network required for vlan"),
    ({"provider:network_type": "vlan", "provider:physical_network": "p",
      "provider:segmentation_id": 0}, "out of range (1 through 4094)"),
    ({"provider:network_type": "local", "provider:physical_network": "p"},
     "specified for local network"),
    ({"provider:network_type": "local", "provider:segmentation_id": 1},
     "segmentation_id prohibited for local"),
    ({"provider:network_type": "flat", "provider:physical_network": "p" * 65},
     "exceeds the maximum length of 64"),
])
def test_refused_segments(provider: dict[str, Any], reason: str) -> None:
    with pytest.raises(DomainError, match="Invalid input for operation") as caught:
        segments.requested(provider, "vxlan")
    assert reason in caught.value.detail


def test_segment_claims_and_mtu() -> None:
    assert Segment("flat", "p").key == "flat:p"
    assert Segment("vlan", "p", 7).key == "vlan:p:7"
    assert Segment("vxlan", None, 7).key == "vxlan:7"
    assert Segment("local").key is None
    assert Segment("vxlan").needs_id and not Segment("vlan", "p", 3).needs_id
    assert segments.mtu(Segment("vxlan"), 1500) == 1450
    assert segments.mtu(Segment("geneve"), 9000) == 8942
    assert segments.mtu(Segment("vlan", "p", 1), 1500) == 1500


def test_default_layouts() -> None:
    v4 = a.parse_cidr("10.0.0.0/24", 4)
    assert a.default_gateway(v4) == _ip("10.0.0.1")
    assert [str(p) for p in a.default_pools(v4, _ip("10.0.0.1"))] == ["10.0.0.2-10.0.0.254"]
    assert [str(p) for p in a.default_pools(v4, _ip("10.0.0.100"))] == \
        ["10.0.0.1-10.0.0.99", "10.0.0.101-10.0.0.254"]
    assert [str(p) for p in a.default_pools(v4, None)] == ["10.0.0.1-10.0.0.254"]
    v6 = a.parse_cidr("2001:db8::/126", 6)
    assert [str(p) for p in a.default_pools(v6, a.default_gateway(v6))] == \
        ["2001:db8::2-2001:db8::3"]
    assert a.default_gateway(a.parse_cidr("10.0.0.7/32", 4)) is None


@pytest.mark.parametrize(("cidr", "version", "reason"), [
    ("10.0.0.0", 4, "isn't a recommended CIDR, use '10.0.0.0/32' instead"),
    ("10.0.0.5/24", 4, "use '10.0.0.0/24' instead"),
    ("2001:db8::1/64", 6, "use '2001:db8::/64' instead"),
    ("300.0.0.0/8", 4, "is not a valid IP subnet"),
    ("2001:db8::/64", 4, "does not match IP version 4"),
])
def test_refused_cidrs(cidr: str, version: int, reason: str) -> None:
    with pytest.raises(DomainError) as caught:
        a.parse_cidr(cidr, version)
    assert reason in caught.value.detail


def test_pools_are_checked() -> None:
    net = a.parse_cidr("10.0.0.0/24", 4)
    pools = a.check_pools(net, [{"start": "10.0.0.50", "end": "10.0.0.60"},
                                {"start": "10.0.0.10", "end": "10.0.0.20"}], _ip("10.0.0.1"))
    assert [str(p) for p in pools] == ["10.0.0.50-10.0.0.60", "10.0.0.10-10.0.0.20"]
    refusals = [
        ([{"start": "10.0.0.20", "end": "10.0.0.10"}], "is greater than end IP"),
        ([{"start": "10.0.0.0", "end": "10.0.0.10"}], "spans beyond the subnet cidr"),
        ([{"start": "10.0.0.2", "end": "10.0.0.255"}], "spans beyond the subnet cidr"),
        ([{"start": "10.0.0.2", "end": "10.0.0.9"}, {"start": "10.0.0.9", "end": "10.0.0.12"}],
         "overlapping allocation pools"),
        ([{"start": "::1", "end": "::2"}], "Invalid allocation pool"),
    ]
    for raw, reason in refusals:
        with pytest.raises(DomainError) as caught:
            a.check_pools(net, raw, None)
        assert reason in caught.value.detail
    with pytest.raises(DomainError, match="conflicts with allocation pool"):
        a.check_pools(net, [{"start": "10.0.0.1", "end": "10.0.0.9"}], _ip("10.0.0.5"))


def test_candidates_skip_taken_addresses_in_pool_order() -> None:
    pools = [a.Pool(_ip("10.0.0.8"), _ip("10.0.0.9")), a.Pool(_ip("10.0.0.2"), _ip("10.0.0.3"))]
    free = a.candidates(pools, {_ip("10.0.0.8"), _ip("10.0.0.2")})
    assert [str(x) for x in free] == ["10.0.0.9", "10.0.0.3"]
    assert list(a.candidates([a.Pool(_ip("10.0.0.5"), _ip("10.0.0.5"))], set())) == \
        [_ip("10.0.0.5")]


def test_usable_addresses() -> None:
    net = a.parse_cidr("10.0.0.0/30", 4)
    assert [a.usable(net, _ip(f"10.0.0.{n}")) for n in range(4)] == [False, True, True, False]
    assert not a.usable(net, _ip("::1"))
    assert a.usable(a.parse_cidr("10.0.0.0/31", 4), _ip("10.0.0.0"))


@pytest.mark.parametrize(("host", "vnic", "network_type", "vif"), [
    ("", "normal", "vlan", "unbound"),
    ("h", "normal", "vxlan", "ovs"),
    ("h", "direct", "vlan", "hw_veb"),
    ("h", "macvtap", "flat", "hw_veb"),
    ("h", "direct-physical", "vlan", "hostdev_physical"),
    ("h", "direct", "vxlan", "binding_failed"),
    ("h", "vdpa", "vlan", "binding_failed"),
])
def test_binding_outcomes(host: str, vnic: str, network_type: str, vif: str) -> None:
    outcome = mechanism.bind(host, vnic, network_type, 100)
    assert outcome.vif_type == vif
    assert outcome.bound == (vif not in ("unbound", "binding_failed"))
    if vif == "hw_veb":
        assert outcome.vif_details["vlan"] == "100"
