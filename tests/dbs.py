"""Throw-away databases on the local SQLite, PostgreSQL and MariaDB/MySQL servers."""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa

PG_ADMIN = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
MYSQL_ADMIN = "mysql+pymysql://root@127.0.0.1:3306/"


@contextmanager
def throwaway_database(backend: str) -> Iterator[str]:
    """Yield the URL of a new, empty database and drop it afterwards."""
    name = f"stowage_test_{uuid.uuid4().hex[:12]}"
    if backend == "sqlite":
        with tempfile.TemporaryDirectory() as tmp:
            yield f"sqlite:///{os.path.join(tmp, name)}.db"
        return
    if backend == "postgresql":
        admin, url = PG_ADMIN, f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
        create, drop = f'CREATE DATABASE "{name}"', f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'
    elif backend == "mysql":
        admin, url = MYSQL_ADMIN, f"mysql+pymysql://root@127.0.0.1:3306/{name}?charset=utf8mb4"
        create = f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
        drop = f"DROP DATABASE IF EXISTS `{name}`"
    else:
        raise ValueError(f"unknown backend {backend!r}")
    engine = sa.create_engine(admin, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql(create)
        yield url
    finally:
        with engine.connect() as conn:
            conn.exec_driver_sql(drop)
        engine.dispose()
