"""Image API v2 data routes: upload and download an image's file, deactivate, reactivate.

The upload is streamed: the handler reads the body chunk by chunk as it
arrives (`web.limits.UploadStream`) and image/data.py writes each to the
store, so no upload is ever held in memory. Downloads are streamed back from
the file, whole or one byte range (206 with Content-Range), with Glance's
headers: `Content-MD5` (the hex md5, as Glance sends it) and Content-Length.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import BinaryIO

from stowage.image import data, policy
from stowage.image import images as img
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response
from stowage.web.limits import BodyRefused, ClientGone

__all__ = ["octet_stream_only", "take_data", "upload_image", "download_image", "deactivate",
           "reactivate", "byte_range"]

OCTET_STREAM = "application/octet-stream"
CHUNK = 64 * 1024
_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


def octet_stream_only(req: Request) -> None:
    """Glance takes image data as application/octet-stream only (415 otherwise)."""
    ctype = (req.headers.get("content-type") or "").split(";")[0].strip().lower()
    if ctype != OCTET_STREAM:
        raise HTTPError(415, f"Invalid content type {ctype or None}")


def take_data(req: Request, store: Callable[[Iterable[bytes]], object]) -> None:
    """Hand the body's chunks (streamed off the socket, or the whole body in process)
    to `store`; a refused or abandoned stream becomes its HTTP error."""
    chunks = req.stream if req.stream is not None else [req.body]
    try:
        store(chunks)
    except BodyRefused as exc:
        raise HTTPError(exc.status, exc.detail) from None
    except ClientGone:
        raise HTTPError(400, "The client disconnected during the upload.") from None


def upload_image(req: Request) -> Response:
    octet_stream_only(req)
    state = req.app
    with state.db.read() as conn:
        image = img.get(conn, req.params["image_id"], req.context)
    policy.check(state.enforcer, req.context, "upload_image", image)
    try:
        take_data(req, lambda chunks: data.upload(state.db, state.settings, image.id, chunks,
                                                  ctx=req.context))
    except data.ImageGone as exc:
        raise HTTPError(410, exc.detail) from None
    return empty_response(204)


def byte_range(header: str, size: int) -> tuple[int, int] | None:
    """The (first, last) byte of a `Range: bytes=...` header for `size` bytes, or
    None when it covers nothing (a 416, as Glance answers a range it cannot serve);
    one range only, as Glance serves."""
    match = _RANGE.match(header.strip())
    if match is None or match.group(1) == match.group(2) == "":
        return None
    first, last = match.group(1), match.group(2)
    if first == "":  # the last N bytes
        count = int(last)
        return (max(size - count, 0), size - 1) if count > 0 and size else None
    start = int(first)
    end = min(int(last), size - 1) if last else size - 1
    return (start, end) if start <= end else None


def _chunks(handle: BinaryIO, offset: int, length: int) -> Iterator[bytes]:
    """The file's bytes [offset, offset+length), read as they are sent; closed after."""
    try:
        handle.seek(offset)
        while length > 0:
            chunk = handle.read(min(CHUNK, length))
            if not chunk:
                return
            length -= len(chunk)
            yield chunk
    finally:
        handle.close()


def download_image(req: Request) -> Response:
    state = req.app
    image, handle = data.open_data(state.db, state.settings, req.params["image_id"],
                                   ctx=req.context)
    try:
        if image.status == "deactivated" and not req.context.is_admin:
            raise HTTPError(403, "The requested image has been deactivated. Image data "
                                 "download is forbidden.")
        policy.check(state.enforcer, req.context, "download_image", image)
    except BaseException:
        if handle is not None:
            handle.close()
        raise
    if handle is None:
        return empty_response(204)
    size = image.size or 0
    offset, length, status = 0, size, 200
    headers = [("content-type", OCTET_STREAM)]
    asked = req.headers.get("range")
    if asked is not None:
        span = byte_range(asked, size)
        if span is None:
            handle.close()
            raise HTTPError(416, "Requested range not satisfiable",
                            headers={"content-range": f"bytes */{size}"})
        offset, length, status = span[0], span[1] - span[0] + 1, 206
        headers.append(("content-range", f"bytes {span[0]}-{span[1]}/{size}"))
    if image.checksum:
        headers.append(("content-md5", image.checksum))
    headers.append(("content-length", str(length)))
    return Response(status, b"", headers, stream=_chunks(handle, offset, length))


def _set_status(req: Request, action: str, to: str, keep: str) -> Response:
    """Glance's deactivate/reactivate: `keep` -> `to`; already `to`: nothing; else 403."""
    state = req.app
    with state.db.write() as conn:
        img.lock(conn, req.params["image_id"])
        image = img.get(conn, req.params["image_id"], req.context)
        policy.check(state.enforcer, req.context, action, image)
        if image.status == keep:
            img.set_status(conn, image.id, to)
        elif image.status != to:
            raise HTTPError(403, f"Not allowed to {action} image in status "
                                 f"'{image.status}'")
    return empty_response(204)


def deactivate(req: Request) -> Response:
    return _set_status(req, "deactivate", "deactivated", "active")


def reactivate(req: Request) -> Response:
    return _set_status(req, "reactivate", "active", "deactivated")
