"""An operator pastes placement.conf's URL; its driver becomes one stowage ships."""

from __future__ import annotations

import pytest

from stowage.placement.adopt.source import our_driver


@pytest.mark.parametrize(("given", "used"), [
    ("mysql+pymysql://placement:s3cret@db/placement?charset=utf8",
     "mysql+pymysql://placement:s3cret@db/placement?charset=utf8"),
    ("mysql://placement:s3cret@db/placement", "mysql+pymysql://placement:s3cret@db/placement"),
    ("postgresql://placement:s3cret@db:5433/placement",
     "postgresql+psycopg://placement:s3cret@db:5433/placement"),
    ("postgresql+psycopg2://p@db/placement", "postgresql+psycopg://p@db/placement"),
    ("sqlite:////var/lib/placement.db", "sqlite:////var/lib/placement.db"),
])
def test_upstream_drivers_are_replaced(given: str, used: str) -> None:
    assert our_driver(given) == used
