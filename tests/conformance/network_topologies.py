"""Fixtures with deep trees of devices and network agents, over HTTP.

Kept apart from ``topologies`` because these trees are large; same rules:
upstream's class names, creation order and environment variables.
"""

from __future__ import annotations

import os

from .apifixture import APIFixture, new_uuid
from .seeding import Seeder

__all__ = [
    "DeepNUMANetworkFixture", "NUMANetworkFixture",
    "NeutronQoSMultiSegmentFixture",
]


def _export(**values: str) -> None:
    os.environ.update(values)


class NUMANetworkFixture(APIFixture):
    """Two compute hosts: cn1 keeps everything in NUMA / agent subtrees,
    cn2 is a "plain" host with NIC subtrees of PFs.

      ss1  DISK_GB 2000, MISC_SHARES_VIA_AGGREGATE, agg [A] .. shared with
       :                                                       cn1 and cn2
      cn1  no inventory, COMPUTE_VOLUME_MULTI_ATTACH, agg [A]
       +-- numa0   HW_NUMA_ROOT; VCPU 4 (2 used by a numafx consumer);
       |    |      MEMORY_MB 2048 (min_unit 512, step_size 256)
       |    +-- fpga0    FPGA 1
       |    +-- pgpu0    VGPU 8
       +-- numa1   HW_NUMA_ROOT, CUSTOM_FOO; VCPU 4;
       |    |      MEMORY_MB 2048 (min_unit 256, max_unit 1024)
       |    +-- fpga1_0  FPGA 1
       |    +-- fpga1_1  FPGA 1
       +-- sriov_agent   CUSTOM_VNIC_TYPE_DIRECT
       |    +-- esn1     CUSTOM_PHYSNET1, NET_BW_EGR_KILOBIT_PER_SEC 10000
       |    +-- esn2     CUSTOM_PHYSNET2, NET_BW_EGR_KILOBIT_PER_SEC 20000
       +-- ovs_agent     CUSTOM_VNIC_TYPE_NORMAL
            +-- br_int   CUSTOM_PHYSNET0, NET_BW_EGR_KILOBIT_PER_SEC 1000

      cn2  VCPU 8 (3 used), MEMORY_MB 2048 (min_unit 1024, step_size 128),
       |   DISK_GB 1000, CUSTOM_FOO, agg [A]
       +-- nic1 CUSTOM_HW_NIC_ROOT
       |    +-- pf1_1 PHYSNET1 VF 4    +-- pf1_2 PHYSNET2 VF 4
       +-- nic2 CUSTOM_HW_NIC_ROOT
       |    +-- pf2_1 PHYSNET1 VF 2    +-- pf2_2 PHYSNET2 VF 2
       |    +-- pf2_3 PHYSNET1 VF 2    +-- pf2_4 PHYSNET2 VF 2
       +-- nic3 CUSTOM_HW_NIC_ROOT
            +-- pf3_1 PHYSNET1 VF 8          (VF = CUSTOM_VF)

    The used VCPUs belong to two consumers of user "numafx-user", project
    "numafx-project".
    """

    # Pre-created by DeepNUMANetworkFixture, under extra ancestors.
    cn1: str | None = None
    cn2: str | None = None

    def seed(self, api: Seeder) -> None:
        self.make_entities(api)

    def make_entities(self, api: Seeder) -> None:
        agg_a = new_uuid()
        _export(AGGA_UUID=agg_a)
        ss1 = api.create_provider("ss1", agg_a)
        api.set_traits(ss1, "MISC_SHARES_VIA_AGGREGATE")
        api.add_inventory(ss1, "DISK_GB", 2000)
        _export(SS1_UUID=ss1)
        self._make_cn1(api, agg_a)
        self._make_cn2(api, agg_a)

    def _allocate(self, api: Seeder, rp: str, vcpus: int) -> None:
        api.set_allocation(new_uuid(), rp, {"VCPU": vcpus},
                           project_id="numafx-project", user_id="numafx-user")

    def _make_cn1(self, api: Seeder, agg_a: str) -> None:
        if not self.cn1:
            self.cn1 = api.create_provider("cn1", agg_a)
        cn1 = self.cn1
        api.set_aggregates(cn1, agg_a)
        api.set_traits(cn1, "COMPUTE_VOLUME_MULTI_ATTACH")
        _export(CN1_UUID=cn1)
        numas = []
        for i in (0, 1):
            numa = api.create_provider(f"numa{i}", parent=cn1)
            traits = ["HW_NUMA_ROOT"] + (["CUSTOM_FOO"] if i == 1 else [])
            api.set_traits(numa, *traits)
            api.add_inventory(numa, "VCPU", 4)
            numas.append(numa)
            _export(**{f"NUMA{i}_UUID": numa})
        api.add_inventory(numas[0], "MEMORY_MB", 2048, min_unit=512,
                          step_size=256)
        api.add_inventory(numas[1], "MEMORY_MB", 2048, min_unit=256,
                          max_unit=1024)
        self._allocate(api, numas[0], 2)

        fpga = api.create_provider("fpga0", parent=numas[0])
        api.add_inventory(fpga, "FPGA", 1)
        pgpu = api.create_provider("pgpu0", parent=numas[0])
        api.add_inventory(pgpu, "VGPU", 8)
        _export(FPGA0_UUID=fpga, PGPU0_UUID=pgpu)
        for i in (0, 1):
            fpga = api.create_provider(f"fpga1_{i}", parent=numas[1])
            api.add_inventory(fpga, "FPGA", 1)
            _export(**{f"FPGA1_{i}_UUID": fpga})

        agent = api.create_provider("sriov_agent", parent=cn1)
        api.set_traits(agent, "CUSTOM_VNIC_TYPE_DIRECT")
        _export(SRIOV_AGENT_UUID=agent)
        for i in (1, 2):
            dev = api.create_provider(f"esn{i}", parent=agent)
            api.set_traits(dev, f"CUSTOM_PHYSNET{i}")
            api.add_inventory(dev, "NET_BW_EGR_KILOBIT_PER_SEC", 10000 * i)
            _export(**{f"ESN{i}_UUID": dev})

        agent = api.create_provider("ovs_agent", parent=cn1)
        api.set_traits(agent, "CUSTOM_VNIC_TYPE_NORMAL")
        _export(OVS_AGENT_UUID=agent)
        dev = api.create_provider("br_int", parent=agent)
        api.set_traits(dev, "CUSTOM_PHYSNET0")
        api.add_inventory(dev, "NET_BW_EGR_KILOBIT_PER_SEC", 1000)
        _export(BR_INT_UUID=dev)

    def _make_cn2(self, api: Seeder, agg_a: str) -> None:
        if not self.cn2:
            self.cn2 = api.create_provider("cn2")
        cn2 = self.cn2
        api.set_aggregates(cn2, agg_a)
        api.add_inventory(cn2, "VCPU", 8)
        self._allocate(api, cn2, 3)
        api.add_inventory(cn2, "MEMORY_MB", 2048, min_unit=1024,
                          step_size=128)
        api.add_inventory(cn2, "DISK_GB", 1000)
        api.set_traits(cn2, "CUSTOM_FOO")
        _export(CN2_UUID=cn2)

        nics = []
        for i in (1, 2, 3):
            nic = api.create_provider(f"nic{i}", parent=cn2)
            api.set_traits(nic, "CUSTOM_HW_NIC_ROOT")
            nics.append(nic)
            _export(**{f"NIC{i}_UUID": nic})
        # (suffix, parent nic, physnet, VFs) in upstream's creation order.
        pfs = [("1_1", 0, 1, 4), ("1_2", 0, 2, 4),
               ("2_1", 1, 1, 2), ("2_2", 1, 2, 2),
               ("2_3", 1, 1, 2), ("2_4", 1, 2, 2),
               ("3_1", 2, 1, 8)]
        for suffix, nic_index, physnet, vfs in pfs:
            pf = api.create_provider(f"pf{suffix}", parent=nics[nic_index])
            api.set_traits(pf, f"CUSTOM_PHYSNET{physnet}")
            api.add_inventory(pf, "CUSTOM_VF", vfs)
            _export(**{f"PF{suffix}_UUID": pf})


class DeepNUMANetworkFixture(NUMANetworkFixture):
    """NUMANetworkFixture with empty ancestors above the compute nodes, to
    exercise same_subtree across more levels.

        gp1
         +-- p1
         |    +-- cn1 ... (as in NUMANetworkFixture)
         +-- p2
              +-- cn2 ... (as in NUMANetworkFixture)
    """

    def make_entities(self, api: Seeder) -> None:
        gp1 = api.create_provider("gp1")
        p1 = api.create_provider("p1", parent=gp1)
        p2 = api.create_provider("p2", parent=gp1)
        self.cn1 = api.create_provider("cn1", parent=p1)
        self.cn2 = api.create_provider("cn2", parent=p2)
        super().make_entities(api)


_VNIC_DIRECT = ("CUSTOM_VNIC_TYPE_DIRECT", "CUSTOM_VNIC_TYPE_DIRECT_PHYSICAL",
                "CUSTOM_VNIC_TYPE_MACVTAP")
_OVS = "Open vSwitch agent"
_SRIOV = "NIC Switch agent"


class NeutronQoSMultiSegmentFixture(APIFixture):
    """Four compute trees as Neutron reports them with QoS minimum bandwidth
    and packet rate, for a multi-segment network.

      computeN          VCPU 8, MEMORY_MB 4096, DISK_GB 500
       +-- computeN:Open vSwitch agent
       |    |  NET_PACKET_RATE_KILOPACKET_PER_SEC 1000, VNIC_TYPE_NORMAL
       |    +-- ...:br-ex     BW_EGR / BW_IGR 5000 each, VNIC_TYPE_NORMAL,
       |                      physnet
       +-- computeN:NIC Switch agent   VNIC_TYPE_DIRECT, _DIRECT_PHYSICAL,
            |                          _MACVTAP
            +-- ...:enp129s0f0  BW_EGR / BW_IGR 10000 each, the three
                                VNIC types, physnet

      physnet: compute0 CUSTOM_PHYSNET_OTHER, compute1 CUSTOM_PHYSNET_MSN_S1,
               compute2 CUSTOM_PHYSNET_MSN_S2.
      compute3 reaches both segments with little bandwidth (1000 each):
        br-ex -> MSN_S1, br-ex2 -> MSN_S2, enp129s0f0 -> MSN_S1,
        enp129s0f1 -> MSN_S2.

    Environment: computeN, computeN:ovs_agent, computeN:br_ex(2),
    computeN:sriov_agent, computeN:pf0/pf1. As upstream (a slip kept on
    purpose), compute3:sriov_agent holds compute2's agent uuid.
    """

    def seed(self, api: Seeder) -> None:
        physnets = ("OTHER", "MSN_S1", "MSN_S2")
        for n, physnet in enumerate(physnets):
            self._compute(api, n, bridges=[("br-ex", "br_ex", physnet)],
                          pfs=[("enp129s0f0", "pf0", physnet)], bandwidth=None)
        self._compute(api, 3,
                      bridges=[("br-ex", "br_ex", "MSN_S1"),
                               ("br-ex2", "br_ex2", "MSN_S2")],
                      pfs=[("enp129s0f0", "pf0", "MSN_S1"),
                           ("enp129s0f1", "pf1", "MSN_S2")],
                      bandwidth=1000)
        # Upstream's environment variable names are lowercase.
        os.environ["compute3:sriov_agent"] = (  # noqa: SIM112
            os.environ["compute2:sriov_agent"])  # noqa: SIM112

    @staticmethod
    def _bandwidth(api: Seeder, rp: str, kbps: int) -> None:
        api.add_inventory(rp, "NET_BW_EGR_KILOBIT_PER_SEC", kbps)
        api.add_inventory(rp, "NET_BW_IGR_KILOBIT_PER_SEC", kbps)

    def _compute(self, api: Seeder, n: int, bridges: list[tuple[str, ...]],
                 pfs: list[tuple[str, ...]], bandwidth: int | None) -> None:
        """One compute tree; ``bandwidth`` overrides the per-device default
        (5000 for bridges, 10000 for PFs)."""
        host = f"compute{n}"
        compute = api.create_provider(host)
        os.environ[host] = compute
        api.add_inventory(compute, "VCPU", 8)
        api.add_inventory(compute, "MEMORY_MB", 4096)
        api.add_inventory(compute, "DISK_GB", 500)

        ovs = api.create_provider(f"{host}:{_OVS}", parent=compute)
        os.environ[f"{host}:ovs_agent"] = ovs
        api.add_inventory(ovs, "NET_PACKET_RATE_KILOPACKET_PER_SEC", 1000)
        api.set_traits(ovs, "CUSTOM_VNIC_TYPE_NORMAL")
        for device, key, physnet in bridges:
            br = api.create_provider(f"{host}:{_OVS}:{device}", parent=ovs)
            os.environ[f"{host}:{key}"] = br
            self._bandwidth(api, br, bandwidth or 5000)
            api.set_traits(br, "CUSTOM_VNIC_TYPE_NORMAL",
                           f"CUSTOM_PHYSNET_{physnet}")

        sriov = api.create_provider(f"{host}:{_SRIOV}", parent=compute)
        os.environ[f"{host}:sriov_agent"] = sriov
        api.set_traits(sriov, *_VNIC_DIRECT)
        for device, key, physnet in pfs:
            pf = api.create_provider(f"{host}:{_SRIOV}:{device}", parent=sriov)
            os.environ[f"{host}:{key}"] = pf
            self._bandwidth(api, pf, bandwidth or 10000)
            api.set_traits(pf, *_VNIC_DIRECT, f"CUSTOM_PHYSNET_{physnet}")
