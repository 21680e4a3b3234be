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
            -> else blocks of BLOCK consecutive roots          (one join each)
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

__all__ = ["EncodedTable", "Fragment", "TreeEncoder", "BLOCK"]

# Roots per block: small enough that a claim re-joins little, large enough
# that a warm 10,000-tree answer is a few hundred joins, not thousands.
BLOCK = 128

_HEAD = b'{"allocation_requests":['
_MID = b'],"provider_summaries":{'
_TAIL = b"}}"


@dataclass(slots=True)
class Fragment:
    """Encoded candidates (`requests`) and summaries of one tree or one block."""

    count: int
    requests: bytes
    summaries: bytes
    version: int = 0  # of the tree; unused for blocks


# (root, how many candidates at most or None for all) -> the tree's fragment
TreeEncoder = Callable[[int, int | None], Fragment]


class EncodedTable:
    """The fragments of one request shape, kept coherent with the snapshots it serves."""

    def __init__(self, block: int = BLOCK) -> None:
        self.lock = threading.Lock()
        self.block_size = block
        self.trees: dict[int, Fragment] = {}
        self.blocks: dict[int, Fragment] = {}
        self.roots: list[int] | None = None
        self.lineage: Lineage | None = None
        self.seq = 0
        self.body: tuple[int | None, bytes] | None = None
        self._tree_bytes = 0

    @property
    def nbytes(self) -> int:
        """Roughly what the table holds (trees, blocks, body), for the memo's budget."""
        return 2 * self._tree_bytes + (len(self.body[1]) if self.body else 0)

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

    def block(self, number: int, versions: dict[int, int], encode: TreeEncoder) -> Fragment:
        found = self.blocks.get(number)
        if found is None:
            assert self.roots is not None
            frags = [self.tree(root, versions[root], encode) for root in self.block_roots(number)]
            frags = [f for f in frags if f.count]
            found = self.blocks[number] = Fragment(
                sum(f.count for f in frags), b",".join(f.requests for f in frags),
                b",".join(f.summaries for f in frags))
        return found


def assemble(table: EncodedTable, lineage: Lineage, seq: int, versions: dict[int, int],
             roots: list[int], need: int | None, encode: TreeEncoder) -> bytes:
    """The response body: the first `need` candidates (all when None) and their trees."""
    with table.lock:
        table.sync(lineage, seq, roots)
        if table.body is not None and table.body[0] == need:
            return table.body[1]
        parts: list[Fragment] = []
        left = need
        for number in range((len(roots) + table.block_size - 1) // table.block_size):
            block = table.block(number, versions, encode)
            if not block.count:
                continue
            if left is None or block.count < left:
                parts.append(block)
                left = None if left is None else left - block.count
                continue
            if block.count == left:
                parts.append(block)
            else:
                parts.extend(_cut(table, number, left, versions, encode))
            break
        body = _join(parts)
        table.body = (need, body)
        return body


def _cut(table: EncodedTable, number: int, left: int, versions: dict[int, int],
         encode: TreeEncoder) -> list[Fragment]:
    """The trees of block `number` up to the `left`-th candidate, the last one cut short."""
    out: list[Fragment] = []
    for root in table.block_roots(number):
        frag = table.tree(root, versions[root], encode)
        if not frag.count:
            continue
        if frag.count > left:
            frag = encode(root, left)
        out.append(frag)
        left -= frag.count
        if left <= 0:
            break
    return out


def _join(parts: list[Fragment]) -> bytes:
    """`{"allocation_requests":[...],"provider_summaries":{...}}` in one copy."""
    pieces = [_HEAD]
    for i, part in enumerate(parts):
        if i:
            pieces.append(b",")
        pieces.append(part.requests)
    pieces.append(_MID)
    for i, part in enumerate(parts):
        if i:
            pieces.append(b",")
        pieces.append(part.summaries)
    pieces.append(_TAIL)
    return b"".join(pieces)
