"""A page of a listing as the dashboard's routes take and give it.

Every listing is cut on the server: `page` (from 1) and `per_page` (at most
`MAX_PER_PAGE`) come from the query string, and the answer says how many
rows matched so the page can draw its pager without reading them all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["Page", "DEFAULT_PER_PAGE", "MAX_PER_PAGE", "BadQuery"]

DEFAULT_PER_PAGE = 20
MAX_PER_PAGE = 200


class BadQuery(ValueError):
    """A query parameter the dashboard cannot use (answered 400)."""


def _number(query: Mapping[str, str], name: str, default: int) -> int:
    raw = query.get(name, "")
    if raw == "":
        return default
    if not raw.isdigit() or len(raw) > 6 or int(raw) < 1:
        raise BadQuery(f"{name} must be a whole number from 1, not {raw!r}")
    return int(raw)


@dataclass(frozen=True)
class Page:
    number: int = 1
    size: int = DEFAULT_PER_PAGE

    @classmethod
    def of(cls, query: Mapping[str, str]) -> Page:
        size = _number(query, "per_page", DEFAULT_PER_PAGE)
        if size > MAX_PER_PAGE:
            raise BadQuery(f"per_page is at most {MAX_PER_PAGE}")
        return cls(_number(query, "page", 1), size)

    @property
    def offset(self) -> int:
        return (self.number - 1) * self.size

    def meta(self, total: int) -> dict[str, int]:
        """What the pager shows: this page, its size, the matches and the last page."""
        return {"page": self.number, "per_page": self.size, "total": total,
                "pages": max(1, -(-total // self.size))}
