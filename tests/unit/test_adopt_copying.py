"""Provider rows are written parents first, in id order wherever the tree allows."""

from __future__ import annotations

from stowage.placement.adopt.copying import parents_first


def _ids(rows: list[dict[str, int | None]]) -> list[int | None]:
    return [row["id"] for row in parents_first(rows)]


def test_id_order_when_every_parent_is_older() -> None:
    rows = [{"id": 3, "parent_provider_id": 1}, {"id": 1, "parent_provider_id": None},
            {"id": 2, "parent_provider_id": 1}, {"id": 4, "parent_provider_id": 3}]
    assert _ids(rows) == [1, 2, 3, 4]


def test_a_reparented_provider_waits_for_its_newer_parent() -> None:
    """1 was moved under 5 (microversion 1.37); 2 is under 1."""
    rows = [{"id": 1, "parent_provider_id": 5}, {"id": 2, "parent_provider_id": 1},
            {"id": 3, "parent_provider_id": None}, {"id": 5, "parent_provider_id": None}]
    assert _ids(rows) == [3, 5, 1, 2]


def test_a_cycle_is_kept_for_the_foreign_keys_to_refuse() -> None:
    rows = [{"id": 1, "parent_provider_id": 2}, {"id": 2, "parent_provider_id": 1}]
    assert sorted(_ids(rows)) == [1, 2]  # type: ignore[type-var]
