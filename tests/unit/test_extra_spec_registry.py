"""Nova's registry of flavor extra specs (2.86), without a server: what passes, what is refused."""

from __future__ import annotations

import pytest

from stowage.compute import extra_spec_registry as registry
from stowage.errors import Invalid


@pytest.mark.parametrize(("key", "value"), [
    ("hw:cpu_policy", "mixed"), ("hw:cpu_thread_policy", "isolate"),
    ("hw:mem_page_size", "2MB"), ("hw:mem_page_size", "large"), ("hw:mem_page_size", "2048"),
    ("hw:numa_nodes", "2"), ("hw:numa_cpus.0", "0-3,^2"), ("hw:numa_mem.1", "1024"),
    ("hw:max_cpu_sockets", "2"), ("hw:cpu_realtime", "Yes"), ("hw:cpu_realtime_mask", "^0-1"),
    ("hw:watchdog_action", "reset"), ("hw:serial_port_count", "0"),
    ("hw_rng:allowed", "false"), ("hw_video:ram_max_mb", "64"), ("os:secure_boot", "required"),
    ("powervm:proc_units", "0.5"), ("powervm:shared_weight", "255"),
    ("quota:cpu_shares", "1024"), ("quota:disk_read_iops_sec", "100"),
    ("quota:cpu_shares_level", "custom"), ("resources:VCPU", "2"), ("resources_G1:VCPU", "-1"),
    ("resources1:CUSTOM_GOLD", "1"), ("trait:HW_CPU_X86_AVX2", "forbidden"),
    ("trait_NET:CUSTOM_FAST", "required"), ("group_policy", "none"),
    ("pci_passthrough:alias", "a1:2, b:1"), ("aggregate_instance_extra_specs:ssd", "<in> x"),
    ("capabilities:hypervisor_type", "s== QEMU"), ("capabilities:cpu_info:arch", "x86_64"),
    ("accel:device_profile", "gpu"), ("vmware:hw_version", "vmx-13"),
    ("hide_hypervisor_id", "true"),
    # unknown namespaces and keys without a namespace are not Nova's to judge
    ("my_ns:anything", "at all"), ("no_namespace", "x"), ("hw_other:x", "y"),
])
def test_known_good_or_unjudged_specs_pass(key: str, value: str) -> None:
    registry.validate(key, value)


@pytest.mark.parametrize(("key", "value", "message"), [
    ("hw:cpu_policy", "dedicate",
     "Validation failed; 'dedicate' is not one of: dedicated, shared, mixed."),
    ("hw:cpu_thread_policy", "prefer ",
     "Validation failed; 'prefer ' is not one of: prefer, isolate, require."),
    ("hw:mem_page_size", "huge",
     "Validation failed; 'huge' is not of the format "
     "'(large|small|any|\\d+([kKMGT]i?)?(b|bit|B)?)'."),
    ("hw:numa_nodes", "0", "Validation failed; '0' is less than the min value of '1'."),
    ("hw:numa_nodes", "two", "Validation failed; 'two' is not a valid integer value."),
    ("hw:cpu_realtime", "maybe", "Validation failed; 'maybe' is not a valid boolean-like value."),
    ("powervm:shared_weight", "256",
     "Validation failed; '256' is greater than the max value of '255'."),
    ("hw:cpu_policyy", "dedicated",
     "Validation failed; extra spec 'hw:cpu_policyy' does not appear to be a valid extra spec."),
    ("hw:numa_cpus.x", "0",
     "Validation failed; extra spec 'hw:numa_cpus.x' does not appear to be a valid extra spec."),
    ("resources:NOT_A_CLASS", "1",
     "Validation failed; extra spec 'resources:NOT_A_CLASS' does not appear to be a valid "
     "extra spec."),
    ("resources1:custom_gold", "1",
     "Validation failed; extra spec 'resources1:custom_gold' does not appear to be a valid "
     "extra spec."),
    ("trait:HW_CPU_X86_AVX2", "yes", "Validation failed; 'yes' is not one of: required, "
     "forbidden."),
    ("group_policy", "spread", "Validation failed; 'spread' is not one of: isolate, none."),
    ("pci_passthrough:alias", "gpu",
     "Validation failed; 'gpu' is not of the format '[^:]+:\\d+(?:\\s*,\\s*[^:]+:\\d+)*'."),
    ("quota:cpu_period", "-1", "Validation failed; '-1' is less than the min value of '0'."),
    ("os:monitors", "2",
     "Validation failed; extra spec 'os:monitors' does not appear to be a valid extra spec."),
    ("capabilities:nothing", "1",
     "Validation failed; extra spec 'capabilities:nothing' does not appear to be a valid "
     "extra spec."),
])
def test_bad_specs_in_known_namespaces_are_refused(key: str, value: str,
                                                   message: str) -> None:
    with pytest.raises(Invalid) as refused:
        registry.validate(key, value)
    assert str(refused.value) == message


def test_namespaces_are_nova_s() -> None:
    plain = {n for n in registry.NAMESPACES if "(" not in n}
    assert plain == {"hw", "hw_rng", "hw_video", "os", "powervm", "vmware", "quota", "accel",
                     "capabilities", "aggregate_instance_extra_specs", "pci_passthrough"}
    assert {n.split("(")[0] for n in registry.NAMESPACES - plain} == {"resources", "trait"}
