"""One member's server on one host, for the tests of actions on a server in place.

    host1 (8 VCPU, 4096 MB, 100 GB, `traits`)
      └── vm: flavor "small" (1 VCPU, 512 MB, 5 GB), public image, owned by
          demo:p1 (member)

An action in place (reboot, pause, rebuild, soft delete, ...) may change the
server's states and its guest, never its host or its allocation: `check`
asserts exactly that.
"""

from __future__ import annotations

from collections.abc import Sequence

from tests.functional.conftest import MEMBER, Cloud
from tests.functional.servers import boot, flavor, flavor_amounts, guests, held, image, server
from tests.functional.shelving import sts

__all__ = ["SMALL", "OneServer"]

SMALL = flavor_amounts(1, 512, 5)


class OneServer:
    def __init__(self, cloud: Cloud, traits: Sequence[str] = ()) -> None:
        self.node = cloud.add_host("host1", vcpus=8, memory_mb=4096, disk_gb=100,
                                   traits=tuple(traits))
        self.owner = cloud.client("demo:p1", roles=MEMBER)
        self.flavor = flavor(cloud, "small", 1, 512, 5)
        self.image = image(cloud, visibility="public")
        self.id = self.boot(cloud)

    def boot(self, cloud: Cloud) -> str:
        """Another server like the first, of the same owner."""
        return boot(cloud, "vm", self.flavor, self.image, client=self.owner)

    def check(self, cloud: Cloud, status: str, vm_state: str, power: int,
              image_id: str | None = None) -> None:
        """The server, its guest and its allocation: only the states may have changed."""
        view = server(cloud, self.id)
        assert sts(view) == (status, vm_state, None, power, "host1")
        if image_id is not None:
            assert view["image"]["id"] == image_id
        assert guests(cloud, self.id) == {("host1", ""): power}
        assert held(cloud, self.id) == {self.node: SMALL}
