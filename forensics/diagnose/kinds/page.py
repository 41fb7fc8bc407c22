"""page: a DMA scatter-gather (MDL) page list gone wrong: B's pages hold other pages of A (swapped, repeated,
one dropped and the rest moved up)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from forensics.diagnose.kinds.base import Bug, Kind, n, parse_int
from forensics.diagnose.result import Finding
from forensics.core.errors import InputError

PAGE = 4096  # the x86 / x64 page size: the unit of an MDL / scatter-gather list
PAGE_INDEX_CHUNK = 2 << 20  # bytes of A read at a time while indexing its pages

@dataclass(frozen=True)
class Pages(Bug):
    """A scatter-gather (MDL) page list gone wrong: B's page i (pages of `page` bytes from `phase`) holds A's page
    order[i]: pages swapped, duplicated, missing (the rest moved up one page); -1 keeps B's own page."""

    page: int = 4096
    order: tuple = ()
    phase: int = 0
    size: int | None = None
    kind = "page"
    relocates = True

    def size_out(self, n):
        return n if self.size is None else self.size

    def index(self, n, pos):
        rel = pos - self.phase
        q, j = rel // self.page, rel % self.page
        order = np.asarray(self.order or (-1,), np.int64)
        inside = (rel >= 0) & (q < len(self.order))
        src = order[np.clip(q, 0, len(order) - 1)]
        idx = np.where(inside & (src >= 0), self.phase + src * self.page + j, pos)
        return np.where(idx < n, idx, -1)

    def complexity(self):
        return len(self.moves())

    def moves(self) -> list[tuple[int, int]]:
        return [(i, j) for i, j in enumerate(self.order) if j >= 0 and j != i]

    def params(self):
        return {"page_bytes": self.page, "phase": self.phase,
                "pages": [{"page": i, "holds": j} for i, j in self.moves()[:32]]}

    def spec(self):
        return f"page:{self.page}:" + ",".join(f"{i}={j}" for i, j in self.moves())


def _parse(text: str, size: int) -> Pages:
    body, _, page_text = text.partition("@")
    page = parse_int(page_text, "PAGE") if page_text else 4096
    n = -(-size // page) if page > 0 else 0
    if n < 2:
        raise InputError(f"page needs PAGE > 0 and at least 2 pages in {size} bytes")
    if body.startswith("missing:"):
        k = parse_int(body.split(":", 1)[1], "K")
        if not 0 <= k < n - 1:
            raise InputError(f"page:missing:K needs 0 <= K < {n - 1}")
        order = list(range(k)) + list(range(k + 1, n))
        return Pages(page, tuple(order), size=size - page if k < n - 1 else None)
    order = list(range(n))
    for part in body.split(","):
        i, sep, j = part.partition("=")
        if not sep:
            raise InputError(f"page move {part!r} must be I=J (B's page I holds A's page J)")
        i, j = parse_int(i, "I"), parse_int(j, "J")
        if not (0 <= i < n and 0 <= j < n):
            raise InputError(f"page move {part!r}: pages are 0..{n - 1}")
        order[i] = j
    return Pages(page, tuple(order))



PAGE_SEARCH_LIMIT = 64 << 20  # A is indexed page by page (a key per page) up to this size


def _page_keys(pages: np.ndarray) -> list:
    """Each page's lookup key (its first 64 bytes), or None for a page that proves nothing wherever it is found:
    a prefill, or one short record repeated (judged on its first 256 bytes: periodic at 1 to 16 bytes)."""
    head = pages[:, :256]
    ok = np.ones(len(pages), bool)
    for s in (1, 2, 4, 8, 16):
        ok &= ~(head[:, s:] == head[:, :-s]).all(axis=1)
    return [pages[k, :64].tobytes() if ok[k] else None for k in range(len(pages))]


def _page_index(src_a, phase: int) -> dict:
    """key -> A's page numbers with that key (None when more than 8 share it), pages from `phase`."""
    index: dict[bytes, list | None] = {}
    step = max(PAGE, (PAGE_INDEX_CHUNK // PAGE) * PAGE)
    for lo in range(phase, src_a.size - PAGE + 1, step):
        chunk = src_a.read(lo, min(src_a.size, lo + step))
        m = len(chunk) // PAGE
        for k, key in enumerate(_page_keys(chunk[:m * PAGE].reshape(m, PAGE))):
            if key is not None:
                js = index.setdefault(key, [])
                if js is not None:
                    js.append((lo - phase) // PAGE + k)
                    if len(js) > 8:
                        index[key] = None
    return index


def _candidates(src_a, src_b, region, scan) -> list:
    """B's pages that hold another page of A (exactly, and found once in A): a scatter-gather list out of
    order, a page duplicated or dropped. Pages from offset 0, or from where the first difference starts when
    the buffer does not start on a page; on a sampled pair, the differing pages inside the sampled blocks."""
    if src_b.size < 2 * PAGE or scan.first is None or src_a.size > PAGE_SEARCH_LIMIT:
        return []
    out = []
    for phase in sorted({0, scan.first % PAGE}):
        order = _page_order(src_a, src_b, region, phase)
        moves = [(i, j) for i, j in enumerate(order or ()) if j >= 0]
        if not moves:
            continue
        size = src_b.size if src_b.size != src_a.size else None
        out.extend(Pages(PAGE, pages, phase, size=size) for pages in _orders(src_a, region, phase, order, moves))
    return out


def _page_order(src_a, src_b, region, phase: int) -> list | None:
    """For each of B's pages (from `phase`), the page of A it holds when that is proven (the differing whole
    pages of the scored region, each found once in A, whole, at another place), else -1; None when no
    differing page could be looked up."""
    looked = []  # (B's page number, its bytes) of the differing whole pages of the scored region
    for (lo, hi), off in zip(region.blocks, region.starts[:-1].tolist()):
        for i in range(max(0, -(-(lo - phase) // PAGE)), (hi - phase) // PAGE):
            s = off + phase + i * PAGE - lo
            if region.diff[s:s + PAGE].any():
                looked.append((i, region.b[s:s + PAGE]))
    keys = _page_keys(np.stack([p for _, p in looked])) if looked else []
    if not any(k is not None for k in keys):
        return None
    index = _page_index(src_a, phase)
    order = [-1] * -(-(src_b.size - phase) // PAGE)
    for (i, page), key in zip(looked, keys):
        js = index.get(key) if key is not None else None
        same = [j for j in js or () if np.array_equal(src_a.read(phase + j * PAGE, phase + j * PAGE + PAGE), page)]
        if len(same) == 1 and same[0] != i:  # found once in A, whole: it proves where the page came from
            order[i] = same[0]
    return order


def _orders(src_a, region, phase: int, order: list, moves: list) -> list[tuple]:
    """The page orders to score for the proven `moves`: the order as found, or when every move is by one step
    the rest of B moved by whole pages (a page dropped or repeated): the pages after the first move follow
    (checked here on an exact pair; on a sampled one the scoring decides between the two). Nothing when A moved
    as a whole by whole pages from its start: that is a shift (a header, an offset), not a page list."""
    steps = {i - j for i, j in moves}
    if len(steps) != 1:
        return [tuple(order)]
    step, first, n_pages = steps.pop(), moves[0][0], len(order)
    rest = order[:first] + [i - step for i in range(first, n_pages)]
    from_start = 0 in moves[0] and phase == 0
    if not region.exact:
        return [] if from_start else [tuple(rest), tuple(order)]
    last = _followed_to(src_a, region, phase, step, moves[-1][0], n_pages)
    if all(order[i] >= 0 or i > moves[-1][0] for i in range(first, last + 1)):
        order[first:last + 1] = rest[first:last + 1]
    if from_start and last == n_pages - 1:
        return []
    return [tuple(order)]


def _followed_to(src_a, region, phase: int, step: int, last: int, n_pages: int) -> int:
    """The last of B's pages after page `last` up to which each page is A's page `step` pages away."""
    for i in range(last + 1, n_pages):
        lo = phase + i * PAGE
        got = region.b[lo:lo + PAGE]
        want = src_a.read(lo - step * PAGE, lo - step * PAGE + PAGE)
        if not np.array_equal(got[:len(want)], want):
            break
        last = i
    return last


def parse(args, size, previous=None):
    return _parse(args[0] if len(args) == 1 else ":".join(args[:2]), size)


def candidates(ctx) -> list:
    return _candidates(ctx.src_a, ctx.src_b, ctx.region, ctx.scan)


def finding(c, ctx, explains):
    bug = c.bug
    details = dict(bug.params())
    moves = bug.moves()
    dup = len({j for _, j in moves}) < len(moves) or any(
        j < len(bug.order) and bug.order[j] in (-1, j) for _, j in moves)
    steps = {i - j for i, j in moves}
    said = ", ".join(f"B page {i} = A page {j}" for i, j in moves[:6]) + (" ..." if len(moves) > 6 else "")
    where_p = f" (pages from offset {bug.phase})" if bug.phase else ""
    if len(steps) == 1 and len(moves) > 1 and moves[-1][0] >= len(bug.order) - 2 and next(iter(steps)) < 0:
        what = (f"A's page {moves[0][0]} is missing from B: from offset 0x{bug.phase + moves[0][0] * bug.page:x} "
                f"every later page of A sits one page earlier")
    elif dup:
        what = "pages of A appear twice in B (a scatter-gather entry repeated)"
    else:
        what = "B holds A's pages in another order"
    details.update({"moved_pages": len(moves), "duplicated": dup})
    text = (f"{what}: {said} ({bug.page:,}-byte pages{where_p}, {n(len(moves) * bug.page)} bytes): the DMA "
            "scatter-gather / MDL page list does not match the buffer's pages")
    hint = (f"check the page list built for {ctx.b} (MmGetMdlPfnArray / the scatter-gather list): its order, "
            "and that each page is mapped once; pages are 4 KiB on x86 / x64")
    return [Finding("page", text, hint, details, explains)]


KIND = Kind("page", rank=4, display=3, usage="page:I=J[,I=J...][@PAGE]|page:missing:K[@PAGE]",
            description="B's page I holds A's page J (4096-byte pages); missing: A's page K dropped, later pages move up one",
            parse=parse, candidates=candidates, finding=finding)
