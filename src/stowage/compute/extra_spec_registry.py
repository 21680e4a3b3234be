"""Nova's registry of known flavor extra specs, checked on write from microversion 2.86.

How a key is judged (Nova's order):

1. a key registered by its exact name is checked against its value rule;
2. otherwise the first registered name pattern that matches the whole key
   (``hw:numa_cpus.{id}``, ``resources{group}:CUSTOM_{resource}``, ...) is;
3. otherwise a key without ``:`` is accepted as it is, and so is a key whose
   namespace (the part before the first ``:``) no registered name uses;
4. a key in a known namespace that matches no name is refused.

A value rule is a type (integer, boolean-like, string) and for strings an
optional full-match pattern or an enum, for integers optional bounds. The
messages are Nova's. Namespaces validated here::

    hw  hw_rng  hw_video  os  powervm  vmware  quota  accel  capabilities
    aggregate_instance_extra_specs  pci_passthrough  resources<group>  trait<group>
    (and the bare keys group_policy, hide_hypervisor_id)

The ``hw:`` list is Nova's as of its 2.9x releases; see docs/compatibility.md
for the keys of later releases that are accepted too and the Hyper-V keys
(``os:resolution``, ...) that are not.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import os_resource_classes as orc
import os_traits

from stowage.errors import Invalid

__all__ = ["Rule", "REGISTRY", "validate", "NAMESPACES"]

_TRUE = ("1", "t", "true", "on", "y", "yes")
_FALSE = ("0", "f", "false", "off", "n", "no")
_GROUP = r"([a-zA-Z0-9_-]{1,64})?"
_CPU_MASK = r"\^?\d+((-\d+)?(,\^?\d+(-\d+)?)?)*"


@dataclass(frozen=True)
class Rule:
    """One registered extra spec: its name (with ``{param}`` holes) and its value rule."""

    name: str
    kind: type = str  # int, bool or str
    enum: tuple[str, ...] = ()
    pattern: str | None = None
    minimum: int | None = None
    maximum: int | None = None
    params: dict[str, str] = field(default_factory=dict)  # param -> its pattern

    @property
    def name_regex(self) -> str:
        regex = self.name
        for param, pattern in self.params.items():
            regex = regex.replace(f"{{{param}}}", f"(?P<{param}>{pattern})")
        return regex

    def check(self, value: str) -> None:
        if self.kind is int:
            self._check_int(value)
        elif self.kind is bool:
            if value.strip().lower() not in (*_TRUE, *_FALSE):
                raise Invalid(f"Validation failed; '{value}' is not a valid boolean-like "
                              "value.")
        elif self.pattern is not None:
            if not re.fullmatch(self.pattern, value):
                raise Invalid(f"Validation failed; '{value}' is not of the format "
                              f"'{self.pattern}'.")
        elif self.enum and value not in self.enum:
            raise Invalid(f"Validation failed; '{value}' is not one of: "
                          f"{', '.join(self.enum)}.")

    def _check_int(self, value: str) -> None:
        try:
            number = int(value)  # as Python's int(): surrounding blanks and "_" allowed
        except ValueError:
            raise Invalid(f"Validation failed; '{value}' is not a valid integer value."
                          ) from None
        if self.maximum is not None and self.maximum < number:
            raise Invalid(f"Validation failed; '{number}' is greater than the max value of "
                          f"'{self.maximum}'.")
        if self.minimum is not None and self.minimum > number:
            raise Invalid(f"Validation failed; '{number}' is less than the min value of "
                          f"'{self.minimum}'.")


def _ints(names: Iterable[str], minimum: int | None = None,
          maximum: int | None = None) -> list[Rule]:
    return [Rule(n, int, minimum=minimum, maximum=maximum) for n in names]


def _bools(names: Iterable[str]) -> list[Rule]:
    return [Rule(n, bool) for n in names]


def _strings(names: Iterable[str]) -> list[Rule]:
    return [Rule(n) for n in names]


def _hw() -> list[Rule]:
    node = {"id": r"\d+"}
    return [
        *_bools(("hw:cpu_realtime", "hw:hide_hypervisor_id", "hw:boot_menu",
                 "hw:mem_encryption", "hw:pmu")),
        Rule("hw:cpu_realtime_mask", pattern=r"(\^)?\d+((-\d+)?(,\^?\d+(-\d+)?)?)*"),
        Rule("hw:cpu_policy", enum=("dedicated", "shared", "mixed")),
        Rule("hw:cpu_thread_policy", enum=("prefer", "isolate", "require")),
        Rule("hw:emulator_threads_policy", enum=("isolate", "share")),
        Rule("hw:cpu_dedicated_mask", pattern=_CPU_MASK),
        Rule("hw:mem_page_size", pattern=r"(large|small|any|\d+([kKMGT]i?)?(b|bit|B)?)"),
        Rule("hw:numa_nodes", int, minimum=1),
        Rule("hw:numa_cpus.{id}", pattern=_CPU_MASK, params=node),
        Rule("hw:numa_mem.{id}", int, minimum=1, params=node),
        Rule("hw:pci_numa_affinity_policy",
             enum=("required", "preferred", "legacy", "socket")),
        *_ints(("hw:cpu_sockets", "hw:cpu_cores", "hw:cpu_threads", "hw:max_cpu_sockets",
                "hw:max_cpu_cores", "hw:max_cpu_threads"), minimum=1),
        Rule("hw:pmem", pattern="([a-zA-Z0-9_]+(,)?)+"),
        Rule("hw:serial_port_count", int, minimum=0),
        Rule("hw:tpm_model", enum=("tpm-tis", "tpm-crb")),
        Rule("hw:tpm_version", enum=("1.2", "2.0")),
        Rule("hw:watchdog_action", enum=("none", "pause", "poweroff", "reset", "disabled")),
        # Added by later Nova releases; accepted so that a flavor valid there is valid here.
        *_bools(("hw:vif_multiqueue_enabled", "hw:locked_memory", "hw:virtio_packed_ring")),
    ]


def _powervm() -> list[Rule]:
    units = r"\d+\.\d+"
    return [
        *_ints(("powervm:min_mem", "powervm:max_mem"), minimum=256),
        *_ints(("powervm:min_vcpu", "powervm:max_vcpu"), minimum=1),
        *[Rule(n, pattern=units) for n in ("powervm:proc_units", "powervm:min_proc_units",
                                           "powervm:max_proc_units")],
        *_bools(("powervm:dedicated_proc", "powervm:uncapped", "powervm:srr_capability")),
        *_ints(("powervm:shared_weight", "powervm:availability_priority"), 0, 255),
        Rule("powervm:dedicated_sharing_mode",
             enum=("share_idle_procs", "keep_idle_procs", "share_idle_procs_active",
                   "share_idle_procs_always")),
        Rule("powervm:processor_compatibility",
             enum=("default", "POWER6", "POWER6+", "POWER6_Enhanced", "POWER6+_Enhanced",
                   "POWER7", "POWER8")),
        Rule("powervm:shared_proc_pool_name"),
    ]


def _quota() -> list[Rule]:
    rules: list[Rule] = []
    for resource in ("cpu", "memory", "disk_io", "vif"):  # VMware
        rules += _ints((f"quota:{resource}_limit", f"quota:{resource}_reservation",
                        f"quota:{resource}_shares_share"))
        rules.append(Rule(f"quota:{resource}_shares_level"))
    # libvirt
    rules += _ints((f"quota:cpu_{key}" for key in ("shares", "period", "quota")), minimum=0)
    rules += _ints((f"quota:disk_{stat}_{metric}_sec" for stat in ("read", "write", "total")
                    for metric in ("bytes", "iops")), minimum=0)
    rules += _ints((f"quota:vif_{way}_{metric}" for way in ("inbound", "outbound")
                    for metric in ("average", "peak", "burst")), minimum=0)
    return rules


_CAPABILITIES = (
    "id", "uuid", "service_id", "host", "vcpus", "memory_mb", "local_gb", "vcpus_used",
    "memory_mb_used", "local_gb_used", "hypervisor_type", "hypervisor_version",
    "hypervisor_hostname", "free_ram_mb", "free_disk_gb", "current_workload", "running_vms",
    "disk_available_least", "host_ip", "mapped", "cpu_allocation_ratio",
    "ram_allocation_ratio", "disk_allocation_ratio", "total_usable_ram_mb",
    "total_usable_disk_gb", "disk_mb_used", "free_disk_mb", "vcpus_total", "num_instances",
    "num_io_ops", "failed_builds", "aggregates", "cell_uuid", "updated")
_NESTED_CAPABILITIES = (
    "cpu_info", "metrics", "stats", "numa_topology", "supported_hv_specs",
    "pci_device_pools", "nodename", "pci_stats", "supported_instances", "limits",
    "instances")


def _placement() -> list[Rule]:
    group = {"group": _GROUP}
    rules = [Rule(f"resources{{group}}:{rc}", int, params=group) for rc in orc.STANDARDS]
    rules.append(Rule("resources{group}:CUSTOM_{resource}", int,
                      params={**group, "resource": "[A-Z0-9_]+"}))
    required = ("required", "forbidden")
    rules += [Rule(f"trait{{group}}:{trait}", enum=required, params=group)
              for trait in os_traits.get_traits()]
    rules.append(Rule("trait{group}:CUSTOM_{trait}", enum=required,
                      params={**group, "trait": "[A-Z0-9_]+"}))
    return rules


def _others() -> list[Rule]:
    return [
        Rule("hw_rng:allowed", bool),
        *_ints(("hw_rng:rate_bytes", "hw_rng:rate_period", "hw_video:ram_max_mb"),
               minimum=0),
        Rule("os:secure_boot", enum=("disabled", "required")),
        *_strings(("vmware:hw_version", "vmware:storage_policy", "accel:device_profile")),
        *_strings(f"capabilities:{c}" for c in _CAPABILITIES),
        *[Rule(f"capabilities:{c}{{filter}}", params={"filter": r"(:\w+)*"})
          for c in _NESTED_CAPABILITIES],
        Rule("aggregate_instance_extra_specs:{key}", params={"key": ".+"}),
        Rule("pci_passthrough:alias", pattern=r"[^:]+:\d+(?:\s*,\s*[^:]+:\d+)*"),
        Rule("hide_hypervisor_id", bool),
        Rule("group_policy", enum=("isolate", "none")),
    ]


def _registry() -> dict[str, Rule]:
    registry: dict[str, Rule] = {}
    for rule in (*_hw(), *_powervm(), *_quota(), *_others(), *_placement()):
        registry.setdefault(rule.name, rule)
    return registry


REGISTRY = _registry()
# The namespaces the registry speaks for, as patterns (`resources(?P<group>...)`).
NAMESPACES = frozenset(rule.name_regex.split(":", 1)[0] for rule in REGISTRY.values()
                       if ":" in rule.name_regex)


@functools.cache
def _patterns() -> tuple[list[tuple[re.Pattern[str], Rule]], list[re.Pattern[str]]]:
    """The rules' name patterns and the namespaces', compiled on first use: hundreds of
    them, a tenth of a second that every process start would pay for nothing."""
    return ([(re.compile(rule.name_regex), rule) for rule in REGISTRY.values()],
            [re.compile(namespace) for namespace in NAMESPACES])


def validate(name: str, value: str) -> None:
    """Raise Invalid when Nova (2.86 and later) would refuse this extra spec."""
    patterns, namespaces = _patterns()
    rule = REGISTRY.get(name)
    if rule is None:
        rule = next((r for regex, r in patterns if regex.fullmatch(name)), None)
    if rule is not None:
        rule.check(value)
        return
    if ":" not in name:
        return
    namespace = name.split(":", 1)[0]
    if any(pattern.fullmatch(namespace) for pattern in namespaces):
        raise Invalid(f"Validation failed; extra spec '{name}' does not appear to be a "
                      "valid extra spec.")
