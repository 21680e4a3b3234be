"""Shared test configuration: every database-backed test runs on each backend.

`STOWAGE_TEST_BACKENDS` (default "sqlite,postgresql,mysql") selects backends;
each run creates throw-away databases on the local servers and drops them.
"""

from __future__ import annotations

import os

BACKENDS = [b for b in os.environ.get("STOWAGE_TEST_BACKENDS",
                                      "sqlite,postgresql,mysql").split(",") if b]
