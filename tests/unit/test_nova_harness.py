"""The Nova harness's bookkeeping: dealing classes to processes, reading results."""

from __future__ import annotations

import json
from pathlib import Path

from tests.nova.results import read_outcome
from tests.nova.suite import deal
from tests.outcomes import known_failures, unexpected


def test_classes_stay_whole_and_shares_even_out() -> None:
    ids = ([f"m.Big.test_{i}" for i in range(6)] + [f"m.Mid.test_{i}" for i in range(4)]
           + [f"m.Small.test_{i}" for i in range(3)])
    shares = deal(ids, 2)
    assert sorted(len(s) for s in shares) == [6, 7]
    for share in shares:
        classes = {t.rsplit(".", 1)[0] for t in share}
        for cls in classes:
            assert all(t in share for t in ids if t.startswith(cls + "."))
    assert [sorted(share) for share in deal(ids, 1)] == [sorted(ids)]
    assert deal(ids[:2], 4) == [ids[:2]]


def _part(tmp_path: Path, name: str, listed: list[str], rows: list[dict[str, str]]) -> Path:
    part = tmp_path / name
    part.mkdir()
    (part / "tests.txt").write_text("\n".join(listed) + "\n")
    (part / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (part / "nova.log").write_text("Traceback: boom\nSegmentation fault\n")
    return part


def test_a_test_that_never_reported_counts_as_failed(tmp_path: Path) -> None:
    one = _part(tmp_path, "part1", ["a.T.ok", "a.T.bad", "a.T.skipped"], [
        {"id": "a.T.ok", "status": "success", "details": ""},
        {"id": "a.T.bad", "status": "fail", "details": "AssertionError: 1 != 2"},
        {"id": "a.T.skipped", "status": "skip", "details": "no libvirt"}])
    two = _part(tmp_path, "part2", ["b.U.first", "b.U.lost"], [
        {"id": "b.U.first", "status": "success", "details": ""}])
    outcome = read_outcome(["a.T.ok", "a.T.bad", "a.T.skipped", "b.U.first", "b.U.lost"],
                           [one, two])
    assert outcome.summary() == "nova: 2/5 passed (2 failed, 1 skipped)"
    assert sorted(outcome.failed) == ["a.T.bad", "b.U.lost"]
    assert "AssertionError" in outcome.details["a.T.bad"]
    assert "did not report" in outcome.details["b.U.lost"]
    assert "Segmentation fault" in outcome.details["b.U.lost"]


def test_known_failures_need_their_line_and_excuse_nothing_else(tmp_path: Path) -> None:
    listing = tmp_path / "known.txt"
    listing.write_text("# header\n\na.T.bad  # upstream bug 123\n")
    one = _part(tmp_path, "p", ["a.T.bad", "a.T.worse"], [
        {"id": "a.T.bad", "status": "fail", "details": ""},
        {"id": "a.T.worse", "status": "fail", "details": ""}])
    known = known_failures(listing)
    assert known == {"a.T.bad": "upstream bug 123"}
    assert unexpected(read_outcome(["a.T.bad", "a.T.worse"], [one]), known) == ["a.T.worse"]
