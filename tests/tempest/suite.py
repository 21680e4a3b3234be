"""One Tempest run from scratch: side venv, cloud, workspace, run, verdict."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from tests.conformance.sidevenv import REPO_ROOT, ensure_installed
from tests.outcomes import Outcome
from tests.tempest.cloud import running_cloud
from tests.tempest.results import run_tempest
from tests.tempest.workspace import prepare

__all__ = ["TEMPEST", "VENV", "KNOWN_FAILURES", "SUMMARY_PROPERTY", "RunOptions", "run_suite"]

TEMPEST = "tempest==47.0.0"
VENV = REPO_ROOT / ".venv-tempest"
KNOWN_FAILURES = Path(__file__).with_name("known_failures.txt")
SUMMARY_PROPERTY = "tempest_summary"  # user_properties key of the P/T line
DEFAULT_REGEX = r"^tempest\.api\.compute\."


@dataclass(frozen=True)
class RunOptions:
    regex: str = DEFAULT_REGEX
    concurrency: int = 2
    timeout: float = 1800.0

    @classmethod
    def from_environ(cls) -> RunOptions:
        """STOWAGE_TEMPEST_REGEX / _CONCURRENCY / _TIMEOUT narrow or widen a run."""
        env = os.environ
        return cls(regex=env.get("STOWAGE_TEMPEST_REGEX", DEFAULT_REGEX),
                   concurrency=int(env.get("STOWAGE_TEMPEST_CONCURRENCY", "2")),
                   timeout=float(env.get("STOWAGE_TEMPEST_TIMEOUT", "1800")))


def run_suite(workdir: Path, options: RunOptions) -> Outcome:
    ensure_installed(VENV, [TEMPEST], "lib/python*/site-packages/tempest-47.0.0.dist-info")
    with running_cloud(workdir, options.concurrency) as cloud:
        space = prepare(cloud, workdir, VENV)
        return run_tempest(space, VENV, options.regex, options.concurrency, options.timeout)
