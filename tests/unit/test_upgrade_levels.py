"""`[upgrade_levels] compute`, a hosts file's `service_version`, and the VF of one port."""

from __future__ import annotations

from pathlib import Path

import pytest

from stowage import config
from stowage.compute.agent.pci import PciClaimFailed, PciTracker
from stowage.compute.hosts import HostsFileError, load_hosts_file
from stowage.compute.upgrade import parse_rpc


def test_upgrade_levels_compute_is_read_and_checked(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    assert config.load().compute.upgrade_levels_compute == "auto"
    path.write_text('[upgrade_levels]\ncompute = "5.1"\n')
    assert config.load(str(path)).compute.upgrade_levels_compute == "5.1"
    for bad in ('compute = "five"', 'cells = "1.0"'):
        path.write_text(f"[upgrade_levels]\n{bad}\n")
        with pytest.raises(ValueError):
            config.load(str(path))


def test_parse_rpc() -> None:
    assert parse_rpc("auto") is None
    assert parse_rpc("5.2") == (5, 2)
    assert parse_rpc("6") == (6, 0)
    with pytest.raises(ValueError):
        parse_rpc("x.1")


def test_a_hosts_file_declares_an_older_service_version(tmp_path: Path) -> None:
    path = tmp_path / "h.toml"
    path.write_text('[[hosts]]\nname = "old"\nservice_version = 38\n[[hosts]]\nname = "new"\n')
    old, new = load_hosts_file(str(path))
    assert (old.service_version, new.service_version) == (38, None)
    path.write_text('[[hosts]]\nname = "old"\nservice_version = "38"\n')
    with pytest.raises(HostsFileError, match="service_version"):
        load_hosts_file(str(path))


def test_one_port_vf_added_and_dropped_keeps_the_others() -> None:
    pci = PciTracker("h", {}, {"ens5": 2})
    key = ("vm", "")
    assert pci.claim_port_vfs(key, {"p1": "ens5"}) == {"p1": ("ens5", 0)}
    assert pci.add_port_vf(key, "p2", "ens5") == ("ens5", 1)
    assert pci.add_port_vf(key, "p2", "ens5") == ("ens5", 1)  # idempotent
    with pytest.raises(PciClaimFailed):
        pci.add_port_vf(key, "p3", "ens5")
    pci.drop_port_vf(key, "p1")
    pci.drop_port_vf(key, "p1")
    assert pci.port_vfs(key) == {"p2": ("ens5", 1)}
    assert pci.vfs_held(key) == {"ens5": 1}
    pci.drop_port_vf(key, "p2")
    assert pci.vfs_held(key) == {} and pci.instance_key("vm") == ("vm", "")
