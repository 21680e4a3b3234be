"""Build one YAML file's gabbi tests and run them, in-process, live HTTP.

Why not ``gabbi.driver.build_tests``: it loads a whole directory and we want
one file per server, so we call its per-file half
(``suitemaker.test_suite_from_dict``) with the same handlers. The host and
port are fixed at build time, so a free port is picked first and handed to
the fixture through ``apifixture.planned``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import traceback
import unittest
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from gabbi import handlers, suitemaker, utils

from . import bridge
from .apifixture import FilePlan, planned
from .server import free_port
from .settings import RunSettings

__all__ = ["FileResult", "TestProblem", "run_file"]

_ErrInfo = (tuple[type[BaseException], BaseException, TracebackType]
            | tuple[None, None, None])


@dataclass(frozen=True)
class TestProblem:
    """A gabbi test that did not pass, and why (exception text only)."""

    name: str
    kind: str  # failure | error | unexpected success | skipped
    message: str


@dataclass
class FileResult:
    file: str
    total: int = 0
    passed: int = 0
    skipped: int = 0
    problems: list[TestProblem] = field(default_factory=list)


def _test_name(test: unittest.TestCase) -> str:
    data = getattr(test, "test_data", None)
    return str(data["name"]) if data else test.id()


class _Recorder(unittest.TestResult):
    """Keeps every outcome by gabbi test name, with short messages.

    gabbi's own skip for "fixture failure" (the server did not start) counts
    as a problem; a skip asked for by the YAML file does not.
    """

    def __init__(self) -> None:
        super().__init__()
        self.passed: list[str] = []
        self.problems: list[TestProblem] = []
        self.yaml_skips = 0

    def _problem(self, test: unittest.TestCase, kind: str, msg: str) -> None:
        self.problems.append(TestProblem(_test_name(test), kind, msg))

    def addSuccess(self, test: unittest.TestCase) -> None:
        self.passed.append(_test_name(test))

    def addExpectedFailure(self, test: unittest.TestCase, err: Any) -> None:
        self.passed.append(_test_name(test))

    def addFailure(self, test: unittest.TestCase, err: _ErrInfo) -> None:
        super().addFailure(test, err)
        self._problem(test, "failure", _exception_text(err))

    def addError(self, test: unittest.TestCase, err: _ErrInfo) -> None:
        super().addError(test, err)
        self._problem(test, "error", _exception_text(err))

    def addUnexpectedSuccess(self, test: unittest.TestCase) -> None:
        self._problem(test, "unexpected success", "xfail test passed")

    def addSkip(self, test: unittest.TestCase, reason: str) -> None:
        if reason == "fixture failure":
            self._problem(test, "skipped", reason)
        else:
            self.yaml_skips += 1


def _exception_text(err: _ErrInfo) -> str:
    if err[1] is None:
        return "(no exception)"
    return "".join(traceback.format_exception_only(err[1])).strip()


def build_suite(path: Path, port: int) -> unittest.TestSuite:
    """gabbi tests for one YAML file, aimed at 127.0.0.1:port, prefix ''."""
    suite_dict = utils.load_yaml(yaml_file=str(path))
    handler_objects = [h() for h in handlers.RESPONSE_HANDLERS]
    suite: unittest.TestSuite = suitemaker.test_suite_from_dict(
        unittest.TestLoader(), path.stem, suite_dict, str(path.parent),
        "127.0.0.1", port, bridge, None, prefix="",
        handlers=handler_objects, test_loader_name="conformance")
    return suite


def run_file(path: Path, settings: RunSettings) -> FileResult:
    """Run one YAML file against a fresh server; never raises for test
    failures, only returns them."""
    workdir = Path(tempfile.mkdtemp(prefix=f"conformance-{path.stem}-"))
    try:
        port = free_port()
        suite = build_suite(path, port)
        recorder = _Recorder()
        with planned(FilePlan(settings, port, workdir)):
            suite.run(recorder)
        return FileResult(
            file=path.name, total=suite.countTestCases(),
            passed=len(recorder.passed), skipped=recorder.yaml_skips,
            problems=recorder.problems)
    finally:
        if not os.environ.get("CONFORMANCE_KEEP_WORKDIR"):
            shutil.rmtree(workdir, ignore_errors=True)
