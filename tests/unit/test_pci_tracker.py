"""The agent's PCI tracker: claims by (instance, migration) key, never above the devices."""

from __future__ import annotations

import pytest

from stowage.compute.agent.pci import PciClaimFailed, PciTracker


def test_claims_count_against_devices() -> None:
    pci = PciTracker("host1", {"gpu": 2, "nic": 1})
    assert pci.claim(("a", ""), {"gpu": 1}) is True
    assert pci.stats() == {"gpu": {"total": 2, "free": 1}, "nic": {"total": 1, "free": 1}}
    with pytest.raises(PciClaimFailed, match="gpu:2 failed on host host1: 1 of 2 free"):
        pci.claim(("b", ""), {"gpu": 2})
    assert pci.stats()["gpu"]["free"] == 1


def test_claiming_the_same_key_again_replaces_it() -> None:
    pci = PciTracker("host1", {"gpu": 2})
    pci.claim(("a", ""), {"gpu": 2})
    assert pci.claim(("a", ""), {"gpu": 2}) is False
    assert pci.stats()["gpu"]["free"] == 0


def test_unknown_alias_cannot_be_claimed() -> None:
    with pytest.raises(PciClaimFailed):
        PciTracker("host1", {}).claim(("a", ""), {"fpga": 1})


def test_no_devices_wanted_is_no_claim() -> None:
    pci = PciTracker("host1", {})
    assert pci.claim(("a", ""), {}) is False
    assert not pci.holds(("a", ""))


def test_a_failed_multi_alias_claim_takes_nothing() -> None:
    pci = PciTracker("host1", {"gpu": 2, "nic": 1})
    with pytest.raises(PciClaimFailed):
        pci.claim(("a", ""), {"gpu": 1, "nic": 2})
    assert pci.stats() == {"gpu": {"total": 2, "free": 2}, "nic": {"total": 1, "free": 1}}


def test_same_host_resize_holds_both_then_confirm_keeps_the_new() -> None:
    pci = PciTracker("host1", {"gpu": 3})
    pci.claim(("a", ""), {"gpu": 1})
    pci.claim(("a", "m1"), {"gpu": 2})
    assert pci.stats()["gpu"]["free"] == 0
    for _ in range(2):
        pci.drop_instance("a", keep=("a", "m1"))
    assert pci.holds(("a", "m1")) and not pci.holds(("a", ""))
    assert pci.stats()["gpu"]["free"] == 1


def test_drop_is_idempotent() -> None:
    pci = PciTracker("host1", {"gpu": 1})
    pci.claim(("a", "m1"), {"gpu": 1})
    pci.drop(("a", "m1"))
    pci.drop(("a", "m1"))
    pci.drop_instance("a")
    assert pci.stats()["gpu"]["free"] == 1
