"""Which unfinished moves the quota count must read from Placement.

A move adds to a project's cores/ram usage only when its source (held by the
migration) is larger than its destination (held by the instance); every
other move is skipped without a Placement read.
"""

from __future__ import annotations

from typing import Any

import pytest

from stowage.compute.quota_usage import _may_shrink


def _flavor(vcpus: int, ram: int, **specs: str) -> dict[str, Any]:
    return {"vcpus": vcpus, "memory_mb": ram, "root_gb": 1, "ephemeral_gb": 0, "swap": 0,
            "extra_specs": specs}


@pytest.mark.parametrize(("old", "new", "shrinks"), [
    (_flavor(1, 512), _flavor(2, 1024), False),          # larger in both
    (_flavor(2, 1024), _flavor(2, 1024), False),         # migrate/live migrate: same flavor
    (_flavor(2, 1024), _flavor(1, 1024), True),          # fewer cores
    (_flavor(2, 2048), _flavor(4, 1024), True),          # more cores, less ram
    (_flavor(1, 512, **{"resources:VCPU": "4"}), _flavor(2, 512), True),   # override wins
    (_flavor(4, 512), _flavor(2, 512, **{"resources:PCPU": "4", "resources:VCPU": "0"}),
     False),                                             # PCPU counts as cores too
    (_flavor(2, 512), _flavor(2, 512, **{"resources:MEMORY_MB": "256"}), True),
])
def test_only_a_move_to_less_cores_or_ram_is_read(old: dict[str, Any], new: dict[str, Any],
                                                  shrinks: bool) -> None:
    assert _may_shrink(old, new) is shrinks
