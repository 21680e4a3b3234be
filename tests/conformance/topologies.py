"""Fixtures that carry data: upstream's provider topologies, over HTTP.

Each class has upstream's name, creates the same providers, inventories,
traits, aggregates and allocations, in the same order (results such as
allocation candidates are ordered by creation), and exports the same
environment variables for ``$ENVIRON[...]`` in the YAML files.

Uuids are random per run, as upstream's (uuidsentinel is random per process).
"""

from __future__ import annotations

import os

from .apifixture import APIFixture, new_uuid
from .seeding import Seeder

__all__ = [
    "AllocationFixture", "GranularFixture", "NUMAAggregateFixture",
    "NonSharedStorageFixture", "SharedStorageFixture",
]

SHARES = "MISC_SHARES_VIA_AGGREGATE"


def _export(**values: str) -> None:
    os.environ.update(values)


class AllocationFixture(APIFixture):
    """One provider and three consumers already holding allocations.

        user USER_ID, project PROJECT_ID     user ALT_USER_ID, same project
        +---------------+ +-------------+     +------------------+
        | CONSUMER_0    | | CONSUMER_ID |     | ALT_CONSUMER_ID  |
        | DISK_GB: 1000 | | VCPU: 6     |     | DISK_GB: 20      |
        +-------+-------+ +------+------+     | VCPU: 1          |
                |                |            +--------+---------+
                +----------------+---------------------+
                                 |
                  +--------------+-------------------------+
                  | RP_UUID / RP_NAME                      |
                  | DISK_GB: 2048 (min 10, max 1000, step 10)
                  | VCPU: 10 (max 10)                      |
                  +----------------------------------------+

    ALT_RP_UUID / ALT_RP_NAME name a provider that does not exist.
    """

    def seed(self, api: Seeder) -> None:
        _export(ALT_USER_ID=new_uuid())
        project = os.environ["PROJECT_ID"]
        user, alt_user = os.environ["USER_ID"], os.environ["ALT_USER_ID"]
        rp = api.create_provider(os.environ["RP_NAME"],
                                 rp_uuid=os.environ["RP_UUID"])
        api.add_inventory(rp, "DISK_GB", 2048,
                          step_size=10, min_unit=10, max_unit=1000)
        api.add_inventory(rp, "VCPU", 10, max_unit=10)
        consumers = [new_uuid(), new_uuid(), new_uuid()]
        api.set_allocation(consumers[0], rp, {"DISK_GB": 1000},
                           project_id=project, user_id=user)
        api.set_allocation(consumers[1], rp, {"VCPU": 6},
                           project_id=project, user_id=user)
        api.set_allocation(consumers[2], rp, {"DISK_GB": 20, "VCPU": 1},
                           project_id=project, user_id=alt_user)
        _export(CONSUMER_0=consumers[0], CONSUMER_ID=consumers[1],
                ALT_CONSUMER_ID=consumers[2],
                ALT_RP_UUID=new_uuid(), ALT_RP_NAME=new_uuid())


class SharedStorageFixture(APIFixture):
    """Two compute nodes and two sharing storage providers in one aggregate;
    each compute node has two NUMA children, each with one PF child.

              ss (DISK_GB 2000, reserved 100)    ss2 (same)
              MISC_SHARES_VIA_AGGREGATE          MISC_SHARES_VIA_AGGREGATE
                      :                              :
        ..............:......... AGG_UUID ...........:..............
              :                                          :
        cn1 VCPU 24 (x16), MEMORY_MB 131072 (x1.5)   cn2 VCPU 24 (x16),
            traits HW_CPU_X86_SSE, HW_CPU_X86_SSE2       MEMORY_MB 131072 (x1.5)
              |                                          DISK_GB 2000 (resv 100)
          +---+-------+                              +---+-------+
       numa1_1     numa1_2                        numa2_1     numa2_2
          |           |                              |           |
       pf1_1       pf1_2                          pf2_1       pf2_2
       (each pf: SRIOV_NET_VF 8)
    """

    def seed(self, api: Seeder) -> None:
        agg = new_uuid()
        cn1, cn2, ss, ss2 = (api.create_provider(name, agg)
                             for name in ("cn1", "cn2", "ss", "ss2"))
        numa = {n: api.create_provider(f"numa{n}", parent=cn)
                for n, cn in (("1_1", cn1), ("1_2", cn1),
                              ("2_1", cn2), ("2_2", cn2))}
        pf = {n: api.create_provider(f"pf{n}", parent=numa[n]) for n in numa}
        _export(AGG_UUID=agg, CN1_UUID=cn1, CN2_UUID=cn2, SS_UUID=ss,
                SS2_UUID=ss2)
        _export(**{f"NUMA{n}_UUID": u for n, u in numa.items()})
        _export(**{f"PF{n}_UUID": u for n, u in pf.items()})
        for cn in (cn1, cn2):
            api.add_inventory(cn, "VCPU", 24, allocation_ratio=16.0)
            api.add_inventory(cn, "MEMORY_MB", 128 * 1024,
                              allocation_ratio=1.5)
        api.set_traits(cn1, "HW_CPU_X86_SSE", "HW_CPU_X86_SSE2")
        api.add_inventory(cn2, "DISK_GB", 2000, reserved=100,
                          allocation_ratio=1.0)
        for shared in (ss, ss2):
            api.add_inventory(shared, "DISK_GB", 2000, reserved=100,
                              allocation_ratio=1.0)
            api.set_traits(shared, SHARES)
        for rp in pf.values():
            api.add_inventory(rp, "SRIOV_NET_VF", 8, allocation_ratio=1.0)


class NUMAAggregateFixture(APIFixture):
    """Two resource-less compute nodes whose NUMA children hold the CPUs;
    storage is shared by aggregate, one NUMA node has its own aggregate.

        ss1 DISK_GB 2000 (resv 100), shares, agg [A]
              :
        ......:...... aggA ..................
        :                                   :
        cn1 agg [A]                         cn2 agg [A, B]
        +-- numa1_1 VCPU 24 (x16), agg [C]  +-- numa2_1 VCPU 24 (x16)
        |      :                            +-- numa2_2 VCPU 24 (x16)
        |      : aggC
        |   ss2 DISK_GB 2000 (resv 100), shares, agg [C]
        +-- numa1_2 VCPU 24 (x16)
    """

    def seed(self, api: Seeder) -> None:
        agg_a, agg_b, agg_c = new_uuid(), new_uuid(), new_uuid()
        cn1 = api.create_provider("cn1", agg_a)
        cn2 = api.create_provider("cn2", agg_a, agg_b)
        ss1 = api.create_provider("ss1", agg_a)
        ss2 = api.create_provider("ss2", agg_c)
        numa1_1 = api.create_provider("numa1_1", agg_c, parent=cn1)
        numa1_2 = api.create_provider("numa1_2", parent=cn1)
        numa2_1 = api.create_provider("numa2_1", parent=cn2)
        numa2_2 = api.create_provider("numa2_2", parent=cn2)
        _export(AGGA_UUID=agg_a, AGGB_UUID=agg_b, AGGC_UUID=agg_c,
                CN1_UUID=cn1, CN2_UUID=cn2, SS1_UUID=ss1, SS2_UUID=ss2,
                NUMA1_1_UUID=numa1_1, NUMA1_2_UUID=numa1_2,
                NUMA2_1_UUID=numa2_1, NUMA2_2_UUID=numa2_2)
        for numa in (numa1_1, numa1_2, numa2_1, numa2_2):
            api.add_inventory(numa, "VCPU", 24, allocation_ratio=16.0)
        for ss in (ss1, ss2):
            api.add_inventory(ss, "DISK_GB", 2000, reserved=100,
                              allocation_ratio=1.0)
            api.set_traits(ss, SHARES)


class NonSharedStorageFixture(APIFixture):
    """Three compute nodes with local storage and no sharing at all.

        cn1    cn2    cn3      each: VCPU 24, MEMORY_MB 131072, DISK_GB 2000

    AGGA_UUID, AGGB_UUID, AGGC_UUID are exported but unused by any provider.
    """

    def seed(self, api: Seeder) -> None:
        _export(AGGA_UUID=new_uuid(), AGGB_UUID=new_uuid(),
                AGGC_UUID=new_uuid())
        cns = [api.create_provider(name) for name in ("cn1", "cn2", "cn3")]
        _export(CN1_UUID=cns[0], CN2_UUID=cns[1], CN3_UUID=cns[2])
        for cn in cns:
            api.add_inventory(cn, "VCPU", 24)
            api.add_inventory(cn, "MEMORY_MB", 128 * 1024)
            api.add_inventory(cn, "DISK_GB", 2000)


class GranularFixture(APIFixture):
    """Three compute nodes and three sharing providers in three aggregates,
    for granular (numbered / suffixed group) requests.

      shr_disk_1 ---aggA--- cn_left      cn_middle ---aggB--- cn_right
      DISK 1000       |     VCPU 8       VCPU 8         |     VCPU 8
      DISK_SSD,       |     MEM 4096     MEM 4096       |     MEM 4096
      shares          |     DISK 500     VF 8           |     DISK 500
                      |     VGPU 8       NET_MBPS 4000  |     VGPU 8 (max 2)
      shr_disk_2 -aggA+aggB VF 8         AVX, AVX2,     |     MMX, DXVA,
      DISK 1000             NET_MBPS 4000  SSE,         |     DISK_SSD
      shares                AVX, AVX2,     NIC_ACCEL_TLS|        |
                            DXVA, DCB_PFC,  (aggA, aggB)|      aggC
                            CUSTOM_FOO                  |        |
                                                  shr_net: VF 16, NET_MBPS
                                                  40000, shares (aggC)

    cn_middle is in aggA and aggB; cn_right in aggB and aggC.
    """

    def seed(self, api: Seeder) -> None:
        api.ensure_resource_class("CUSTOM_NET_MBPS")
        agg_a, agg_b, agg_c = new_uuid(), new_uuid(), new_uuid()
        _export(AGGA=agg_a, AGGB=agg_b, AGGC=agg_c)

        left = api.create_provider("cn_left", agg_a)
        _export(CN_LEFT=left)
        for rc, total in (("VCPU", 8), ("MEMORY_MB", 4096), ("DISK_GB", 500),
                          ("VGPU", 8), ("SRIOV_NET_VF", 8),
                          ("CUSTOM_NET_MBPS", 4000)):
            api.add_inventory(left, rc, total)
        api.set_traits(left, "HW_CPU_X86_AVX", "HW_CPU_X86_AVX2",
                       "HW_GPU_API_DXVA", "HW_NIC_DCB_PFC", "CUSTOM_FOO")

        middle = api.create_provider("cn_middle", agg_a, agg_b)
        _export(CN_MIDDLE=middle)
        for rc, total in (("VCPU", 8), ("MEMORY_MB", 4096),
                          ("SRIOV_NET_VF", 8), ("CUSTOM_NET_MBPS", 4000)):
            api.add_inventory(middle, rc, total)
        api.set_traits(middle, "HW_CPU_X86_AVX", "HW_CPU_X86_AVX2",
                       "HW_CPU_X86_SSE", "HW_NIC_ACCEL_TLS")

        right = api.create_provider("cn_right", agg_b, agg_c)
        _export(CN_RIGHT=right)
        api.add_inventory(right, "VCPU", 8)
        api.add_inventory(right, "MEMORY_MB", 4096)
        api.add_inventory(right, "DISK_GB", 500)
        api.add_inventory(right, "VGPU", 8, max_unit=2)
        api.set_traits(right, "HW_CPU_X86_MMX", "HW_GPU_API_DXVA",
                       "CUSTOM_DISK_SSD")

        disk1 = api.create_provider("shr_disk_1", agg_a)
        _export(SHR_DISK_1=disk1)
        api.add_inventory(disk1, "DISK_GB", 1000)
        api.set_traits(disk1, SHARES, "CUSTOM_DISK_SSD")

        disk2 = api.create_provider("shr_disk_2", agg_a, agg_b)
        _export(SHR_DISK_2=disk2)
        api.add_inventory(disk2, "DISK_GB", 1000)
        api.set_traits(disk2, SHARES)

        net = api.create_provider("shr_net", agg_c)
        _export(SHR_NET=net)
        api.add_inventory(net, "SRIOV_NET_VF", 16)
        api.add_inventory(net, "CUSTOM_NET_MBPS", 40000)
        api.set_traits(net, SHARES)
