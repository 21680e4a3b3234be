"""docs/operations.md's settings reference is what `stowage.config` says, key by key."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from stowage import config
from stowage.settings_reference import BEGIN, END, reference, rewrite

DOC = Path(__file__).resolve().parents[2] / "docs" / "operations.md"


def test_the_doc_holds_the_generated_reference() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert BEGIN in text and END in text
    assert rewrite(text) == text, (
        "docs/operations.md is out of date: run `PYTHONPATH=src python3 -m "
        "stowage.settings_reference --write docs/operations.md`")


def test_every_key_of_every_table_is_listed_with_its_default() -> None:
    text = reference()
    for table in dataclasses.fields(config.Settings):
        if not dataclasses.is_dataclass(table.default):
            continue
        assert f"### `[{table.name}]`" in text
        for key in dataclasses.fields(type(table.default)):
            if key.name == "upgrade_levels_compute":
                assert "| `[upgrade_levels] compute` |" in text
            elif not str(key.type).startswith("tuple[Identity"):
                assert f"| `{key.name}` |" in text, (table.name, key.name)
    assert '| `keepalive_timeout` | number | `75.0` |' in text
    assert "| `allow_unauthenticated_from` | list of strings | `[]` |" in text


def test_a_changed_default_changes_the_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference is read from the code each time: a new default shows at once."""
    before = reference()
    field = next(f for f in dataclasses.fields(config.MetricsSettings)
                 if f.name == "audit_interval")
    monkeypatch.setattr(field, "default", 60.0)
    after = reference()
    assert "| `audit_interval` | number | `300.0` |" in before
    assert "| `audit_interval` | number | `60.0` |" in after
