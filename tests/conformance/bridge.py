"""The fixture module handed to gabbi: upstream's fixture names, our classes.

A YAML file's ``fixtures:`` list names classes of upstream's
``placement.tests.functional.fixtures.gabbits``; gabbi looks each name up
here with ``getattr``. Every class starts a fresh server process and
re-creates upstream's data over HTTP (see ``apifixture`` and the two
topology modules for the pictures).
"""

from __future__ import annotations

from .apifixture import (
    APIFixture,
    CORSFixture,
    LegacyRBACPolicyFixture,
    OpenPolicyFixture,
    SecureRBACPolicyFixture,
)
from .network_topologies import (
    DeepNUMANetworkFixture,
    NeutronQoSMultiSegmentFixture,
    NUMANetworkFixture,
)
from .topologies import (
    AllocationFixture,
    GranularFixture,
    NonSharedStorageFixture,
    NUMAAggregateFixture,
    SharedStorageFixture,
)

__all__ = [
    "APIFixture",
    "AllocationFixture",
    "CORSFixture",
    "DeepNUMANetworkFixture",
    "GranularFixture",
    "LegacyRBACPolicyFixture",
    "NUMAAggregateFixture",
    "NUMANetworkFixture",
    "NeutronQoSMultiSegmentFixture",
    "NonSharedStorageFixture",
    "OpenPolicyFixture",
    "SecureRBACPolicyFixture",
    "SharedStorageFixture",
]
