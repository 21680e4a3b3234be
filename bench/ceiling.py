"""How many ask->claim loops the benchmark's clients can drive on this machine
when the server costs (almost) nothing.

    python bench/ceiling.py [--clients 4] [--workers 2] [--seconds 8] [--limit 50]

Why: `bench/schedule.py` compares claims per second against upstream
Placement with the clients, the server workers and the database on the same
cores. This bench runs the very same client loop (`schedule._phase`) against
a null server -- `--workers` asyncio processes sharing one port that answer
GET /allocation_candidates with a prebuilt body the size of a real flat
answer with `--limit` candidates, and every PUT with 204 -- so the figure
it prints is the most any server could reach with these clients here.
Asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import schedule  # noqa: E402


def _body(limit: int) -> bytes:
    """A flat answer: `limit` candidates on distinct providers, with their summaries."""
    rps = [str(uuid.uuid4()) for _ in range(limit)]
    res = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}
    return json.dumps({
        "allocation_requests": [{"allocations": {rp: {"resources": res}}} for rp in rps],
        "provider_summaries": {rp: {"resources": {rc: {"capacity": 64, "used": 8}
                                                  for rc in res},
                                    "traits": ["HW_CPU_X86_AVX2"], "parent_provider_uuid": None,
                                    "root_provider_uuid": rp} for rp in rps}}).encode()


class _Null(asyncio.Protocol):
    """HTTP/1.1 keep-alive, just enough of it: answer each request once its body is in."""

    def __init__(self, ok: bytes) -> None:
        self.ok, self.buf, self.transport = ok, b"", None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while True:
            head, sep, rest = self.buf.partition(b"\r\n\r\n")
            if not sep:
                return
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if len(rest) < length:
                return
            self.buf = rest[length:]
            get = head.startswith(b"GET")
            self.transport.write(self.ok if get else  # type: ignore[attr-defined]
                                 b"HTTP/1.1 204 No Content\r\n\r\n")


def _serve(sock: socket.socket, ok: bytes) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: _Null(ok), sock=sock)
        await server.serve_forever()
    asyncio.run(main())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--limit", type=int, default=50)
    args = p.parse_args()
    body = _body(args.limit)
    ok = (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
          + str(len(body)).encode() + b"\r\n\r\n" + body)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    children = []
    for _ in range(args.workers):
        pid = os.fork()
        if pid == 0:
            _serve(sock, ok)
            os._exit(0)
        children.append(pid)
    try:
        figures, _ = schedule._phase(f"http://127.0.0.1:{port}", "flat", args.clients,
                                     args.limit, args.seconds, seed=1)
    finally:
        for pid in children:
            os.kill(pid, 15)
            os.waitpid(pid, 0)
    print(f"null server, {args.workers} worker(s), {args.clients} client(s), "
          f"{len(body)} byte answer: GET {figures['get_median_ms']:.2f} ms, "
          f"PUT {figures['put_median_ms']:.2f} ms, {figures['claims_per_s']:.0f} claims/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
