"""Hosts files: TOML and YAML, every host validated, errors naming the host and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from stowage.compute.hosts import HostConfig, HostsFileError, load_hosts_file, sim_hosts

AGG = "0f5c5a0e-43f0-4bb4-9d1e-2ba1c1b35a11"

TOML = f"""
[[hosts]]
name = "gpu1"
vcpus = 32
memory_mb = 131072
disk_gb = 2000
reserved = {{ MEMORY_MB = 2048, DISK_GB = 20 }}
cpu_allocation_ratio = 4
traits = ["HW_CPU_X86_AVX2", "CUSTOM_FAST_NIC"]
aggregates = ["{AGG}"]
availability_zone = "az1"
pci = {{ gpu = 2 }}
shared_storage = "ceph1"

[[hosts]]
name = "plain"
"""


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_sim_hosts_are_numbered() -> None:
    assert [h.name for h in sim_hosts(3)] == ["host1", "host2", "host3"]
    assert sim_hosts(0) == []


def test_toml_file(tmp_path: Path) -> None:
    gpu, plain = load_hosts_file(write(tmp_path, "hosts.toml", TOML))
    assert gpu == HostConfig(
        name="gpu1", vcpus=32, memory_mb=131072, disk_gb=2000,
        reserved={"MEMORY_MB": 2048, "DISK_GB": 20}, cpu_allocation_ratio=4.0,
        traits=("HW_CPU_X86_AVX2", "CUSTOM_FAST_NIC"), aggregates=(AGG,),
        availability_zone="az1", pci={"gpu": 2}, shared_storage="ceph1")
    assert plain == HostConfig(name="plain")


def test_yaml_list_or_mapping(tmp_path: Path) -> None:
    listed = load_hosts_file(write(tmp_path, "a.yaml", "- name: h1\n  vcpus: 4\n"))
    mapped = load_hosts_file(write(tmp_path, "b.yml", "hosts:\n  - name: h1\n    vcpus: 4\n"))
    assert listed == mapped == [HostConfig(name="h1", vcpus=4)]


@pytest.mark.parametrize(("text", "message"), [
    ("- name: h1\n  vcpu: 4\n", r"host 'h1': unknown key\(s\) \['vcpu'\]"),
    ("- name: h1\n  vcpus: 0\n", r"host 'h1': 'vcpus' must be an integer >= 1, got 0"),
    ("- name: h1\n  memory_mb: 'lots'\n", r"host 'h1': 'memory_mb' must be an integer"),
    ("- name: h1\n  cpu_allocation_ratio: -1\n", r"'cpu_allocation_ratio' must be a number > 0"),
    ("- name: h1\n  traits: [HW_NOPE]\n", r"host 'h1': 'traits': 'HW_NOPE' is neither"),
    ("- name: h1\n  traits: [CUSTOM_lower]\n", r"'CUSTOM_lower' is neither"),
    ("- name: h1\n  aggregates: [x]\n", r"host 'h1': 'aggregates': 'x' is not a uuid"),
    ("- name: h1\n  reserved: {PCPU: 1}\n", r"'reserved': bad name 'PCPU'"),
    ("- name: h1\n  vcpus: 2\n  reserved: {VCPU: 3}\n", r"'reserved'\['VCPU'\] = 3 exceeds"),
    ("- name: h1\n  pci: {gpu: -1}\n", r"'pci'\['gpu'\] must be an integer >= 0"),
    ("- name: h1\n- name: h1\n", r"host 'h1' is listed twice"),
    ("- vcpus: 4\n", r"host #1: 'name' must be a host name"),
    ("- just-a-string\n", r"host #1: expected a table/mapping"),
    ("[]\n", r"expected a non-empty list of hosts"),
    ("servers: []\n", r"unknown top-level key\(s\) \['servers'\]"),
    ("- name: a\n  shared_storage: s\n- name: b\n  shared_storage: s\n  disk_gb: 5\n",
     r"host 'b' and host 'a' share storage 's' but disagree"),
    ("- name: [\n", r"cannot parse"),
])
def test_bad_files_name_host_and_key(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, "hosts.yaml", text)
    with pytest.raises(HostsFileError, match=message):
        load_hosts_file(path)


def test_bad_toml_is_refused(tmp_path: Path) -> None:
    with pytest.raises(HostsFileError, match="cannot parse"):
        load_hosts_file(write(tmp_path, "hosts.toml", "[[hosts]\n"))
