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


# --- SR-IOV VFs, counted per PF --------------------------------------------------------
def test_vfs_are_claimed_on_the_named_pf() -> None:
    pci = PciTracker("host1", {"gpu": 1}, vfs={"ens5": 2, "ens6": 1})
    assert pci.claim_vfs(("a", ""), {"ens5": 1}) is True
    assert pci.vfs_held(("a", "")) == {"ens5": 1}
    assert pci.vf_stats() == {"ens5": {"total": 2, "free": 1}, "ens6": {"total": 1, "free": 1}}
    with pytest.raises(PciClaimFailed, match="VF request ens6:2 failed on host host1: 1 of 1"):
        pci.claim_vfs(("b", ""), {"ens6": 2})
    with pytest.raises(PciClaimFailed, match="VF request ens7:1 failed on host host1: 0 of 0"):
        pci.claim_vfs(("b", ""), {"ens7": 1})
    # VFs are not aliases: the flavor's devices are counted apart.
    assert pci.stats() == {"gpu": {"total": 1, "free": 1}}


def test_one_key_holds_devices_and_vfs_and_dropping_it_frees_both() -> None:
    pci = PciTracker("host1", {"gpu": 1}, vfs={"ens5": 2})
    pci.claim(("a", "m1"), {"gpu": 1})
    assert pci.claim_vfs(("a", "m1"), {"ens5": 1}) is True
    pci.claim_vfs(("a", ""), {"ens5": 1})
    pci.drop(("a", "m1"))
    assert not pci.holds(("a", "m1")) and pci.holds(("a", ""))
    assert pci.vf_stats()["ens5"]["free"] == 1 and pci.stats()["gpu"]["free"] == 1
    pci.drop_instance("a")
    assert pci.vf_stats()["ens5"]["free"] == 2


def test_claiming_vfs_again_under_a_key_replaces_them() -> None:
    pci = PciTracker("host1", {}, vfs={"ens5": 1, "ens6": 1})
    pci.claim_vfs(("a", ""), {"ens5": 1})
    assert pci.claim_vfs(("a", ""), {"ens6": 1}) is False
    assert pci.vfs_held(("a", "")) == {"ens6": 1}
    assert pci.vf_stats()["ens5"]["free"] == 1


def test_each_port_gets_a_numbered_vf_of_its_pf_and_keeps_it() -> None:
    pci = PciTracker("h", {}, vfs={"ens5": 2, "ens6": 1})
    assert pci.claim_port_vfs(("a", ""), {"p1": "ens5", "p2": "ens6"}) == {
        "p1": ("ens5", 0), "p2": ("ens6", 0)}
    assert pci.claim_port_vfs(("a", "m"), {"p1": "ens5"}) == {"p1": ("ens5", 1)}
    with pytest.raises(PciClaimFailed):
        pci.claim_port_vfs(("b", ""), {"p3": "ens5"})
    # Claimed again (a step done twice): the same VFs, nothing more held.
    assert pci.claim_port_vfs(("a", ""), {"p1": "ens5", "p2": "ens6"})["p1"] == ("ens5", 0)
    assert pci.vf_stats()["ens5"] == {"total": 2, "free": 0}
    pci.drop_instance("a", keep=("a", "m"))
    assert pci.port_vfs(("a", "m")) == {"p1": ("ens5", 1)}
    # Rebuilt from counts after a restart, then named by its port again.
    assert pci.claim_vfs(("c", ""), {"ens5": 1}) is True
    assert pci.claim_port_vfs(("c", ""), {"p4": "ens5"}) == {"p4": ("ens5", 0)}
