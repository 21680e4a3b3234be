"""`web.limits.read_body`: size and time bounds, driven by a scripted ASGI `receive`.

An ordinary body has one deadline for all of it; an image upload's data has
a deadline between two chunks only, however long the whole takes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

import pytest

from stowage.web.limits import BodyLimits, BodyRefused, ClientGone, read_body

TIMEOUT = 1.0
LIMITS = BodyLimits(size=10, upload_size=100, timeout=TIMEOUT)


def scripted(chunks: Sequence[bytes | None], pause: float = 0.0
             ) -> Callable[[], Awaitable[MutableMapping[str, Any]]]:
    """A `receive` that hands out `chunks` (None: the client disconnects), each after
    `pause` seconds; then never answers again."""
    queue = list(chunks)

    async def receive() -> MutableMapping[str, Any]:
        if not queue:
            await asyncio.Event().wait()
        await asyncio.sleep(pause)
        chunk = queue.pop(0)
        if chunk is None:
            return {"type": "http.disconnect"}
        return {"type": "http.request", "body": chunk, "more_body": bool(queue)}
    return receive


def read(chunks: Sequence[bytes | None], pause: float = 0.0, upload: bool = False,
         headers: dict[str, str] | None = None) -> tuple[bytes, int]:
    return asyncio.run(read_body(scripted(chunks, pause), headers or {}, LIMITS, upload))


def test_a_body_within_the_limit_is_joined() -> None:
    assert read([b"12345", b"67890"]) == (b"1234567890", 10)


@pytest.mark.parametrize("headers", [{}, {"content-length": "11"}])
def test_one_byte_over_is_413(headers: dict[str, str]) -> None:
    with pytest.raises(BodyRefused) as refused:
        read([b"123456", b"78901"], headers=headers)
    assert refused.value.status == 413


def test_a_declared_length_over_the_limit_is_refused_before_reading() -> None:
    with pytest.raises(BodyRefused):
        read([], headers={"content-length": "999999999999"})  # nothing would ever come


def test_a_body_slower_than_the_deadline_in_all_is_408() -> None:
    # Each chunk comes well within the timeout; the three together do not.
    with pytest.raises(BodyRefused) as refused:
        read([b"1", b"2", b"3"], pause=TIMEOUT * 0.4)
    assert refused.value.status == 408


def test_an_upload_is_counted_and_may_take_longer_than_the_deadline_in_all() -> None:
    assert read([b"a" * 40, b"b" * 40, b"c" * 20], pause=TIMEOUT * 0.4, upload=True) == (
        b"", 100)


def test_an_upload_that_stalls_between_chunks_is_408() -> None:
    with pytest.raises(BodyRefused) as refused:
        read([b"a" * 40, b"b" * 40], pause=TIMEOUT * 2, upload=True)
    assert refused.value.status == 408


def test_an_upload_over_its_cap_is_413() -> None:
    with pytest.raises(BodyRefused) as refused:
        read([b"a" * 60, b"b" * 41], upload=True)
    assert refused.value.status == 413


def test_a_client_that_goes_away_leaves_nobody_to_answer() -> None:
    with pytest.raises(ClientGone):
        read([b"12", None])
