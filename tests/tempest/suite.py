"""One Tempest run from scratch: side venv, cloud, workspace, run, verdict."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conformance.sidevenv import REPO_ROOT, ensure_installed
from tests.outcomes import Outcome, report_unexpected
from tests.tempest.cloud import running_cloud
from tests.tempest.results import run_tempest
from tests.tempest.workspace import prepare

__all__ = ["TEMPEST", "VENV", "KNOWN_FAILURES", "SUMMARY_PROPERTY", "SUITES", "RunOptions",
           "check_suite", "run_suite"]

TEMPEST = "tempest==47.0.0"
VENV = REPO_ROOT / ".venv-tempest"
KNOWN_FAILURES = Path(__file__).with_name("known_failures.txt")
SUMMARY_PROPERTY = "tempest_summary"  # user_properties key of the P/T line
DEFAULT_REGEX = r"^tempest\.api\.compute\."
# The suites the test suite runs, each in a cloud of its own and a test file of its
# own (test_tempest_*.py), so that pytest-xdist (--dist loadfile) runs them side by
# side: the Compute API, and the Network and Image APIs together.
SUITES = {"compute": DEFAULT_REGEX,
          "network_image": r"^tempest\.api\.(network|image)\."}


@dataclass(frozen=True)
class RunOptions:
    regex: str = DEFAULT_REGEX
    concurrency: int = 2
    timeout: float = 1800.0

    @classmethod
    def from_environ(cls, regex: str = DEFAULT_REGEX) -> RunOptions:
        """STOWAGE_TEMPEST_REGEX / _CONCURRENCY / _TIMEOUT narrow or widen a run; the
        regex replaces the suite's own, for a run by hand of a few classes."""
        env = os.environ
        return cls(regex=env.get("STOWAGE_TEMPEST_REGEX", regex),
                   concurrency=int(env.get("STOWAGE_TEMPEST_CONCURRENCY", "2")),
                   timeout=float(env.get("STOWAGE_TEMPEST_TIMEOUT", "1800")))


def check_suite(suite: str, workdir: Path, request: pytest.FixtureRequest) -> None:
    """Run one of SUITES and fail on any failure `known_failures.txt` does not excuse;
    its `P/T passed` line goes into the session's tempest section."""
    outcome = run_suite(workdir, RunOptions.from_environ(SUITES[suite]))
    request.node.user_properties.append((SUMMARY_PROPERTY, f"{suite}: {outcome.summary()}"))
    assert outcome.total > 0, f"Tempest ran no test; see {workdir}/tempest/logs/run.log"
    report_unexpected(outcome, KNOWN_FAILURES)


def run_suite(workdir: Path, options: RunOptions) -> Outcome:
    ensure_installed(VENV, [TEMPEST], "lib/python*/site-packages/tempest-47.0.0.dist-info")
    with running_cloud(workdir, options.concurrency) as cloud:
        space = prepare(cloud, workdir, VENV)
        return run_tempest(space, VENV, options.regex, options.concurrency, options.timeout)
