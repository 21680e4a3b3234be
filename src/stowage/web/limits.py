"""Reading a request body off the socket within bounds: how much, and how fast.

A body is read only after the caller's token is accepted (`web.app`), and
then never past `BodyLimits`:

- more bytes than the service's limit -> 413 (a `Content-Length` over the
  limit at once, before a byte is read; a chunked body as soon as the bytes
  counted so far pass it);
- a body that takes longer than `timeout` seconds in all -> 408; an image
  upload (`Route.upload`), whose data may rightly take hours, is instead
  held to `timeout` seconds between two chunks;
- an upload's data is not read here at all: the handler pulls it chunk by
  chunk from an `UploadStream` (the Image service writes each chunk to its
  store as it comes), held to Glance's `image_size_cap` and to `timeout`
  seconds between two chunks.

Each refusal leaves the rest of the body unread; `web.app` answers and
closes the connection.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

from stowage.config import ApiSettings

__all__ = ["BodyLimits", "BodyRefused", "ClientGone", "UploadStream", "declared_length",
           "expects_body", "read_body", "too_large"]

Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]


class BodyRefused(Exception):
    """The body breaks a limit: `status` (413 or 408) and the sentence to answer with."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


class ClientGone(Exception):
    """The client disconnected before sending its whole body: nobody to answer."""


@dataclass(frozen=True)
class BodyLimits:
    size: int  # bytes of an ordinary (JSON) body
    upload_size: int  # bytes of an upload's data (`Route.upload`)
    timeout: float  # seconds for a whole body; between two chunks of an upload

    @classmethod
    def of(cls, api: ApiSettings, service: str) -> BodyLimits:
        return cls(api.body_limit(service), api.image_size_cap, api.body_timeout)


def expects_body(headers: Mapping[str, str]) -> bool:
    """Whether the request announces a body (HTTP/1.1: Content-Length or chunked)."""
    return "transfer-encoding" in headers or headers.get("content-length", "0").strip() != "0"


def declared_length(headers: Mapping[str, str]) -> int | None:
    """The Content-Length, when there is a well-formed one (the pipeline refuses the rest)."""
    text = headers.get("content-length", "").strip()
    return int(text) if text.isascii() and text.isdigit() and len(text) < 20 else None


def too_large(limit: int) -> BodyRefused:
    """The 413 for a body past `limit` bytes (read here, or declared to an upload)."""
    return BodyRefused(413, f"Request is too large: the body is larger than {limit} bytes.")


async def read_body(receive: Receive, headers: Mapping[str, str], limits: BodyLimits,
                    upload: bool = False) -> tuple[bytes, int]:
    """The body (empty for an upload) and its size in bytes; BodyRefused or ClientGone."""
    limit = limits.upload_size if upload else limits.size
    declared = declared_length(headers)
    if declared is not None and declared > limit:
        raise too_large(limit)
    chunks: list[bytes] = []
    size = 0
    more = True
    try:
        async with asyncio.timeout(None if upload else limits.timeout):
            while more:
                message = await asyncio.wait_for(receive(), limits.timeout)
                if message["type"] == "http.disconnect":
                    raise ClientGone()
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > limit:
                    raise too_large(limit)
                if not upload:
                    chunks.append(chunk)
                more = bool(message.get("more_body"))
    except TimeoutError:
        raise BodyRefused(408, f"The request body was not received within {limits.timeout:g} "
                               "seconds.") from None
    return b"".join(chunks), size


class UploadStream:
    """An upload's body as a plain iterator of chunks, for a handler running in a worker
    thread (`web.app` runs the pipeline so): each chunk is awaited on the event loop.

    Raises BodyRefused (413 past `limits.upload_size`, 408 after `limits.timeout`
    seconds without a chunk) or ClientGone (`gone` is then true: nobody to answer).
    `finished` tells whether the whole body was read: if not, the connection must close.
    """

    def __init__(self, receive: Receive, limits: BodyLimits) -> None:
        self._receive = receive
        self._limits = limits
        self.received = 0
        self.finished = False
        self.gone = False

    def __iter__(self) -> Iterator[bytes]:
        from anyio import from_thread

        while not self.finished:
            chunk = from_thread.run(self._next)
            if chunk:
                yield chunk

    async def _next(self) -> bytes:
        try:
            message = await asyncio.wait_for(self._receive(), self._limits.timeout)
        except TimeoutError:
            raise BodyRefused(408, "The request body was not received within "
                                   f"{self._limits.timeout:g} seconds.") from None
        if message["type"] == "http.disconnect":
            self.gone = True
            raise ClientGone()
        chunk: bytes = message.get("body", b"")
        self.received += len(chunk)
        if self.received > self._limits.upload_size:
            raise too_large(self._limits.upload_size)
        self.finished = not message.get("more_body")
        return chunk
