"""An answer put together from JSON fragments encoded once per tree.

When no sharing provider exists, every candidate lives in its anchor's tree,
candidates come root by root in ascending order, and the provider summaries
are the whole trees of the roots that have candidates, in the same order. The
response body is then a concatenation: per tree, the encoded allocation
requests and the encoded summaries. Encoding them once per tree version,
instead of once per request, takes the per-candidate work (views, summaries,
JSON) off the request path::

    request -> sync the table with the snapshot (drop what changed)
            -> body of the same cut, if still valid           (whole answer)
            -> else blocks of BLOCK consecutive roots          (lists of fragments)
               (the block where a `limit` cuts is walked tree by tree, as far as needed)
            -> a block rebuilt from its trees' fragments       (per tree version)
            -> a tree re-encoded from the engine's candidates  (only if changed)

Blocks are invalidated through the snapshot lineage's record of which roots
each publish changed, so a request after a claim re-checks one block, not
every tree. The bytes equal what encoding the whole answer at once gives:
orjson writes no whitespace, so `[a,b]` is `[` + a + `,` + b + `]`.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable
from dataclasses import dataclass

from stowage.placement.candidates.versions import Lineage

__all__ = ["Block", "EncodedTable", "Fragment", "TreeEncoder", "BLOCK"]

# Roots per block: small enough that a claim re-joins little, large enough
# that a warm 10,000-tree answer is a few hundred joins, not thousands.
BLOCK = 128

_HEAD = b'{"allocation_requests":['
_MID = b'],"provider_summaries":{'
_TAIL = b"}}"


@dataclass(slots=True)
class Fragment:
    """Encoded candidates (`requests`) and summaries of one tree."""

    count: int
    requests: bytes
    summaries: bytes
    version: int = 0  # of the tree


@dataclass(slots=True)
class Block:
    """The non-empty fragments of consecutive trees, separators included, not joined.

    Lists rather than joined bytes: the answer is joined once, from these
    lists, so a block rebuilt after a claim copies no bytes, and the table
    holds each tree's bytes once.
    """

    count: int
    requests: list[bytes]
    summaries: list[bytes]

    @classmethod
    def of(cls, frags: list[Fragment]) -> Block:
        requests: list[bytes] = []
        summaries: list[bytes] = []
        for frag in frags:
            if frag.count:
                if requests:
                    requests.append(b",")
                    summaries.append(b",")
                requests.append(frag.requests)
                summaries.append(frag.summaries)
        return cls(sum(f.count for f in frags), requests, summaries)


# (root, how many candidates at most or None for all) -> the tree's fragment
TreeEncoder = Callable[[int, int | None], Fragment]

# Whole answers larger than this are not kept: joining one again costs a few
# milliseconds, far less than its transfer, and keeping it would double the
# table's memory.
_MAX_BODY = 4 << 20


class EncodedTable:
    """The fragments of one request shape, kept coherent with the snapshots it serves."""

    def __init__(self, block: int = BLOCK) -> None:
        self.lock = threading.Lock()
        self.block_size = block
        self.trees: dict[int, Fragment] = {}
        self.blocks: dict[int, Block] = {}
        self.roots: list[int] | None = None
        self.lineage: Lineage | None = None
        self.seq = 0
        self.body: tuple[int | None, bytes] | None = None
        self._tree_bytes = 0

    @property
    def nbytes(self) -> int:
        """Roughly what the table holds (trees and body), for the memo's budget."""
        return self._tree_bytes + (len(self.body[1]) if self.body else 0)

    def sync(self, lineage: Lineage, seq: int, roots: list[int]) -> None:
        """Drop the blocks (and body) that the publishes since the last request changed."""
        changed = None
        if lineage is self.lineage and (roots is self.roots or roots == self.roots):
            changed = lineage.changed_between(self.seq, seq)
        if changed is None:
            self.blocks.clear()
            self.body = None
        elif changed:
            self.body = None
            for root in changed:
                pos = bisect.bisect_left(roots, root)
                if pos < len(roots) and roots[pos] == root:
                    self.blocks.pop(pos // self.block_size, None)
        self.lineage, self.seq, self.roots = lineage, seq, roots

    def block_roots(self, number: int) -> list[int]:
        assert self.roots is not None
        return self.roots[number * self.block_size:(number + 1) * self.block_size]

    def tree(self, root: int, version: int, encode: TreeEncoder) -> Fragment:
        frag = self.trees.get(root)
        if frag is None or frag.version != version:
            if frag is not None:
                self._tree_bytes -= len(frag.requests) + len(frag.summaries)
            frag = self.trees[root] = encode(root, None)
            frag.version = version
            self._tree_bytes += len(frag.requests) + len(frag.summaries)
        return frag

    def block(self, number: int, versions: dict[int, int], encode: TreeEncoder) -> Block:
        found = self.blocks.get(number)
        if found is None:
            found = self.blocks[number] = Block.of(
                [self.tree(root, versions[root], encode) for root in self.block_roots(number)])
        return found


def assemble(table: EncodedTable, lineage: Lineage, seq: int, versions: dict[int, int],
             roots: list[int], need: int | None, encode: TreeEncoder) -> bytes:
    """The response body: the first `need` candidates (all when None) and their trees."""
    with table.lock:
        table.sync(lineage, seq, roots)
        if table.body is not None and table.body[0] == need:
            return table.body[1]
        parts: list[Block] = []
        left = need
        for number in range((len(roots) + table.block_size - 1) // table.block_size):
            block = table.blocks.get(number)
            if left is not None and (block is None or block.count >= left):
                # The cut may fall in this block: visit its trees only as far as needed.
                taken, left = _take(table, number, left, versions, encode)
                parts.append(taken)
                if not left:
                    break
                continue
            block = block or table.block(number, versions, encode)
            if block.count:
                parts.append(block)
                left = None if left is None else left - block.count
        body = _join(parts)
        table.body = (need, body) if len(body) <= _MAX_BODY else None
        return body


def _take(table: EncodedTable, number: int, left: int, versions: dict[int, int],
          encode: TreeEncoder) -> tuple[Block, int]:
    """The trees of block `number` up to the `left`-th candidate, and how many are missing.

    The last tree is cut short when it has more than needed. When the whole
    block was taken (the missing ones are beyond it), it is kept for the next
    request.
    """
    frags: list[Fragment] = []
    for root in table.block_roots(number):
        frag = table.tree(root, versions[root], encode)
        if not frag.count:
            continue
        if frag.count >= left:
            frags.append(frag if frag.count == left else encode(root, left))
            return Block.of(frags), 0
        frags.append(frag)
        left -= frag.count
    block = table.blocks.setdefault(number, Block.of(frags))
    return block, left


def _join(parts: list[Block]) -> bytes:
    """`{"allocation_requests":[...],"provider_summaries":{...}}` in one copy."""
    pieces = [_HEAD]
    for part in parts:
        if not part.count:
            continue
        if len(pieces) > 1:
            pieces.append(b",")
        pieces.extend(part.requests)
    pieces.append(_MID)
    first = len(pieces)
    for part in parts:
        if not part.count:
            continue
        if len(pieces) > first:
            pieces.append(b",")
        pieces.extend(part.summaries)
    pieces.append(_TAIL)
    return b"".join(pieces)
