"""Hosts files: TOML and YAML, every host validated, errors naming the host and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from stowage.compute.agent.faults import FaultSpec
from stowage.compute.hosts import (
    OVS,
    SIM_BRIDGE,
    SRIOV,
    HostConfig,
    HostsFileError,
    NetworkDevice,
    load_hosts_file,
    sim_hosts,
)

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


# --- network devices ------------------------------------------------------------------
DEVICES_TOML = """
[[hosts]]
name = "net1"

[[hosts.network_devices]]
name = "br-physnet0"
kind = "ovs"
physnet = "physnet0"
egress_kbps = 10000000
ingress_kbps = 10000000
vnic_types = ["normal"]

[[hosts.network_devices]]
name = "ens5"
kind = "sriov"
physnet = "physnet1"
egress_kbps = 25000000
vfs = 8

[[hosts]]
name = "plain"
"""

DEVICES_YAML = """
- name: net1
  network_devices:
    - {name: br-physnet0, kind: ovs, physnet: physnet0, egress_kbps: 10000000,
       ingress_kbps: 10000000, vnic_types: [normal]}
    - {name: ens5, kind: sriov, physnet: physnet1, egress_kbps: 25000000, vfs: 8}
- name: plain
"""

BRIDGE = NetworkDevice("br-physnet0", OVS, "physnet0", egress_kbps=10_000_000,
                       ingress_kbps=10_000_000, vnic_types=("normal",))
PF = NetworkDevice("ens5", SRIOV, "physnet1", egress_kbps=25_000_000, vfs=8,
                   vnic_types=("direct", "macvtap", "direct-physical"))


@pytest.mark.parametrize(("name", "text"), [("hosts.toml", DEVICES_TOML),
                                            ("hosts.yaml", DEVICES_YAML)])
def test_network_devices_in_toml_and_yaml(tmp_path: Path, name: str, text: str) -> None:
    net1, plain = load_hosts_file(write(tmp_path, name, text))
    assert net1 == HostConfig(name="net1", network_devices=(BRIDGE, PF))
    assert plain.network_devices == ()


def test_a_device_without_vnic_types_gets_its_agents_default() -> None:
    assert NetworkDevice("br0", OVS, "p").vnic_types == ("normal",)
    assert NetworkDevice("ens5", SRIOV, "p").vnic_types == (
        "direct", "macvtap", "direct-physical")


def test_sim_hosts_get_a_bridge_only_when_asked() -> None:
    assert all(h.network_devices == () for h in sim_hosts(2))
    assert [h.network_devices for h in sim_hosts(2, network_devices=True)] == [
        (SIM_BRIDGE,), (SIM_BRIDGE,)]
    assert (SIM_BRIDGE.kind, SIM_BRIDGE.physnet, SIM_BRIDGE.vnic_types) == (
        OVS, "physnet0", ("normal",))


def device_file(*devices: str, host: str = "h1") -> str:
    items = "".join(f"\n    - {d}" for d in devices)
    return f"- name: {host}\n  network_devices:{items}\n"


OK_BR = "{name: br0, kind: ovs, physnet: p0}"
WHERE = r"host 'h1': 'network_devices'"


@pytest.mark.parametrize(("text", "message"), [
    ("- name: h1\n  network_devices: {name: br0}\n",
     WHERE + r" must be a list of devices \(in TOML, \[\[hosts.network_devices\]\] tables\)"),
    (device_file("br0"), WHERE + r"\[#1\]: expected a table/mapping, got str"),
    (device_file("{kind: ovs, physnet: p0}"), WHERE + r"\[#1\]: 'name' must be a network "
                                                      r"interface name"),
    (device_file("{name: 'br:0', kind: ovs, physnet: p0}"), WHERE + r"\[#1\]: 'name' must"),
    (device_file("{name: a-very-long-bridge, kind: ovs, physnet: p0}"),
     r"\[#1\]: 'name' must be a network interface name \(up to 15"),
    (device_file(OK_BR, "{name: ens5, kind: sriov}"),
     WHERE + r"\['ens5'\]: 'physnet' must be a physical network name"),
    (device_file("{name: br0, kind: linuxbridge, physnet: p0}"),
     WHERE + r"\['br0'\]: 'kind' must be one of \['ovs', 'sriov'\], got 'linuxbridge'"),
    (device_file("{name: br0, kind: ovs, physnet: p0, bandwidth: 5}"),
     WHERE + r"\['br0'\]: unknown key\(s\) \['bandwidth'\]; known keys are"),
    (device_file("{name: br0, kind: ovs, physnet: p0, egress_kbps: -1}"),
     WHERE + r"\['br0'\]: 'egress_kbps' must be an integer >= 0, got -1"),
    (device_file("{name: br0, kind: ovs, physnet: p0, ingress_kbps: 10.5}"),
     WHERE + r"\['br0'\]: 'ingress_kbps' must be an integer >= 0, got 10.5"),
    (device_file("{name: br0, kind: ovs, physnet: p0, egress_kbps: 2147483648}"),
     WHERE + r"\['br0'\]: 'egress_kbps' must be at most 2147483647"),
    (device_file("{name: br0, kind: ovs, physnet: p0, vfs: 4}"),
     WHERE + r"\['br0'\]: 'vfs' is for kind 'sriov' only"),
    (device_file("{name: ens5, kind: sriov, physnet: p0, vfs: -4}"),
     WHERE + r"\['ens5'\]: 'vfs' must be an integer >= 0"),
    (device_file("{name: ens5, kind: sriov, physnet: p0, vnic_types: [normal]}"),
     WHERE + r"\['ens5'\]: 'vnic_types': 'normal' is not a vnic type the NIC Switch agent "
             r"binds"),
    (device_file("{name: br0, kind: ovs, physnet: p0, vnic_types: normal}"),
     WHERE + r"\['br0'\]: 'vnic_types' must be a list of vnic types"),
    (device_file("{name: br0, kind: ovs, physnet: p0, vnic_types: [normal, normal]}"),
     WHERE + r"\['br0'\]: 'vnic_types' lists a vnic type twice"),
    (device_file(OK_BR, "{name: br0, kind: sriov, physnet: p1}"),
     WHERE + r": device 'br0' is listed twice"),
    (device_file(OK_BR, "{name: br1, kind: ovs, physnet: p0}"),
     WHERE + r": bridges 'br0' and 'br1' both serve physnet 'p0'"),
    (device_file(OK_BR, host="h" * 190),
     r"the provider name 'h+:Open vSwitch agent:br0' of network device 'br0' is longer "
     r"than Placement's 200 characters"),
])
def test_bad_network_devices_name_host_device_and_key(tmp_path: Path, text: str,
                                                      message: str) -> None:
    with pytest.raises(HostsFileError, match=message):
        load_hosts_file(write(tmp_path, "hosts.yaml", text))


def test_several_pfs_may_serve_one_physnet(tmp_path: Path) -> None:
    text = device_file("{name: ens5, kind: sriov, physnet: p1, vfs: 2}",
                       "{name: ens6, kind: sriov, physnet: p1, vfs: 2}", OK_BR)
    (host,) = load_hosts_file(write(tmp_path, "hosts.yaml", text))
    assert [d.name for d in host.network_devices] == ["ens5", "ens6", "br0"]


# --- faults armed when the agent starts (docs/faults.md) ------------------------------
FAULTS_TOML = """
[[hosts]]
name = "flaky"

[[hosts.faults]]
step = "spawn"
mode = "times"
times = 2
error = "disk full"

[[hosts.faults]]
step = "heartbeat"
mode = "always"

[[hosts.faults]]
step = "prep_resize"
"""
FAULTS_YAML = """
hosts:
  - name: flaky
    faults:
      - {step: spawn, mode: times, times: 2, error: disk full}
      - {step: heartbeat, mode: always}
      - {step: prep_resize}
"""


@pytest.mark.parametrize(("name", "text"), [("hosts.toml", FAULTS_TOML),
                                            ("hosts.yaml", FAULTS_YAML)])
def test_faults_in_toml_and_yaml(tmp_path: Path, name: str, text: str) -> None:
    [host] = load_hosts_file(write(tmp_path, name, text))
    assert host.faults == (FaultSpec("spawn", 2, "disk full"), FaultSpec("heartbeat", None),
                           FaultSpec("prep_resize", 1))


@pytest.mark.parametrize(("faults", "message"), [
    ('{ step = "spwan" }', "'step' must be one of"),
    ('{ step = "agent" }', "step 'agent' kills the agent"),
    ('{ step = "spawn", mode = "times" }', "'times' must be an integer from 1"),
    ('{ step = "spawn", times = 0 }', "'times' must be an integer from 1"),
    ('{ step = "spawn", mode = "always", times = 3 }', "'times' goes with mode 'times'"),
    ('{ step = "spawn", mode = "often" }', "'mode' must be one of"),
    ('{ step = "spawn", error = "" }', "'error' must be a non-empty string"),
    ('{ step = "spawn", when = 1 }', "unknown key(s) ['when']"),
    ('{ step = "spawn" }, { step = "spawn", mode = "always" }', "step 'spawn' is listed twice"),
])
def test_bad_faults_name_host_and_fault(tmp_path: Path, faults: str, message: str) -> None:
    text = f'[[hosts]]\nname = "flaky"\nfaults = [{faults}]\n'
    with pytest.raises(HostsFileError, match="host 'flaky': 'faults'") as err:
        load_hosts_file(write(tmp_path, "hosts.toml", text))
    assert message in str(err.value)
