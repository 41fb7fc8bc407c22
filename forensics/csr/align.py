"""Two sequences of integer keys lined up: [(i, j)] pairs with None on the side that lacks the element.

The alignment is Myers' O((N+M)·D) greedy diff (Myers 1986, "An O(ND) Difference Algorithm and Its
Variations") after stripping the common prefix and suffix, so two long traces that differ in a few
places cost little more than reading them. When a region differs in more than `MYERS_MAX_D` places,
it is cut at keys that occur exactly once on each side and in the same order (patience anchors) and
each piece is aligned again; a piece with no such anchors falls back to a greedy walk that skips to the
nearest next occurrence. difflib.SequenceMatcher is not used: it is quadratic on the repetitive
sequences register traces are (the same few queue and run-control offsets over and over).
forensics.csr.compare aligns register accesses by their (op, offset) key with it.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from itertools import compress, count, repeat
from operator import contains, ne

MYERS_MAX_D = 300
GREEDY_WINDOW = 16   # how far the fallback looks for a local repair
GREEDY_CONFIRM = 4   # accesses that must agree after it



def _snake(a, x: int, n: int, b, y: int, m: int) -> tuple[int, int]:
    """(x, y) moved past the run of equal keys from a[x], b[y]: 64 at a time by C-level slice compares
    (two long traces in step give runs of 10^4 and more), then one at a time."""
    while x + 64 <= n and y + 64 <= m and a[x:x + 64] == b[y:y + 64]:
        x += 64
        y += 64
    while x < n and y < m and a[x] == b[y]:
        x += 1
        y += 1
    return x, y


def _myers(a: Sequence[int], b: Sequence[int], dmax: int, alo: int = 0, blo: int = 0):
    """Edit script [(i, j)] (None on the missing side; indices plus `alo`, `blo`) of a shortest edit,
    or None if it needs > dmax edits."""
    n, m = len(a), len(b)
    maxd = min(n + m, dmax)
    off = maxd + 1
    v = [0] * (2 * maxd + 3)
    history = []
    for d in range(maxd + 1):
        # v before step d, for diagonals -d-1..d+1: all the backtrack needs from this step.
        history.append(v[off - d - 1: off + d + 2])
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and v[off + k - 1] < v[off + k + 1]):
                x = v[off + k + 1]          # step down: b[y-1] is an insertion
            else:
                x = v[off + k - 1] + 1      # step right: a[x-1] is a deletion
            y = x - k
            if x < n and y < m and a[x] == b[y]:
                x, y = _snake(a, x, n, b, y, m)
            v[off + k] = x
            if x >= n and y >= m:
                return _backtrack(history, n, m, d, alo, blo)
    return None


def _diagonal(x: int, y: int, length: int, alo: int, blo: int):
    """The pairs (x-1, y-1), (x-2, y-2), ... `length` of them, shifted by alo, blo (backwards, as built)."""
    return zip(range(alo + x - 1, alo + x - length - 1, -1), range(blo + y - 1, blo + y - length - 1, -1))


def _backtrack(history, n: int, m: int, depth: int, alo: int = 0, blo: int = 0):
    x, y = n, m
    rev = []
    for d in range(depth, 0, -1):
        hv = history[d]
        base = d + 1
        k = x - y
        if k == -d or (k != d and hv[k - 1 + base] < hv[k + 1 + base]):
            prev_k = k + 1
        else:
            prev_k = k - 1
        prev_x = hv[prev_k + base]
        prev_y = prev_x - prev_k
        run = max(0, min(x - prev_x, y - prev_y))   # the snake that ended step d
        rev.extend(_diagonal(x, y, run, alo, blo))
        x -= run
        y -= run
        if x == prev_x:
            rev.append((None, blo + prev_y))
        else:
            rev.append((alo + prev_x, None))
        x, y = prev_x, prev_y
    rev.extend(_diagonal(x, y, min(x, y), alo, blo))
    rev.reverse()
    return rev


def _unique_anchors(a, alo, ahi, b, blo, bhi):
    """Keys occurring once in a[alo:ahi] and once in b[blo:bhi], kept in a longest increasing order."""
    count_a, count_b = {}, {}
    for i in range(alo, ahi):
        count_a[a[i]] = -1 if a[i] in count_a else i
    for j in range(blo, bhi):
        count_b[b[j]] = -1 if b[j] in count_b else j
    pairs = [(i, count_b[key]) for key, i in count_a.items()
             if i >= 0 and count_b.get(key, -1) >= 0]
    pairs.sort()
    # Longest increasing subsequence of the b positions (patience sorting), O(k log k).
    tails, tails_idx, prev = [], [], [-1] * len(pairs)
    for idx, (_, j) in enumerate(pairs):
        pos = bisect_left(tails, j)
        if pos == len(tails):
            tails.append(j)
            tails_idx.append(idx)
        else:
            tails[pos] = j
            tails_idx[pos] = idx
        prev[idx] = tails_idx[pos - 1] if pos else -1
    chain = []
    idx = tails_idx[-1] if tails_idx else -1
    while idx >= 0:
        chain.append(pairs[idx])
        idx = prev[idx]
    chain.reverse()
    return chain


def _positions(seq, lo: int, hi: int) -> dict:
    """Each key of seq[lo:hi] -> its indices, ascending: where the greedy walk finds a key's next occurrence."""
    positions = {}
    for i in range(lo, hi):
        positions.setdefault(seq[i], []).append(i)
    return positions


def _next_at(positions: dict, key, start: int):
    """The first index >= start at which `key` occurs (None: it does not occur again)."""
    lst = positions.get(key)
    if not lst:
        return None
    k = bisect_left(lst, start)
    return lst[k] if k < len(lst) else None


def _local_repair(a, i, ahi, b, j, bhi, out):
    """The cheapest local repair at a difference (a[i] != b[j]) that the following accesses confirm: s
    substituted, deleted or inserted accesses, s = 1, 2, ... GREEDY_WINDOW, appended to `out`; the positions
    after it, or None when no repair within the window is confirmed.
    (Each check of GREEDY_CONFIRM agreeing accesses is first tried on its first pair, inline: on repetitive
    traces most fail there.)"""
    def agrees(i, j, n=GREEDY_CONFIRM):
        """a and b agree for n elements from (i, j) (or to the end of either)."""
        n = min(n, ahi - i, bhi - j)
        return a[i:i + n] == b[j:j + n]

    a_i, b_j = a[i], b[j]
    for s in range(1, GREEDY_WINDOW + 1):
        x, y = i + s, j + s
        if x <= ahi and y <= bhi and (x == ahi or y == bhi or a[x] == b[y]) and agrees(x, y):
            out.extend((ii, None) for ii in range(i, x))
            out.extend((None, jj) for jj in range(j, y))
            return x, y
        if x <= ahi and (x == ahi or a[x] == b_j) and agrees(x, j):
            out.extend((ii, None) for ii in range(i, x))
            return x, j
        if y <= bhi and (y == bhi or a_i == b[y]) and agrees(i, y):
            out.extend((None, jj) for jj in range(j, y))
            return i, y
    return None


def _skip_ahead(a, i, pos_a, b, j, pos_b, out) -> tuple[int, int]:
    """No local repair: skip to the nearer next occurrence of a[i] in b or of b[j] in a (the skipped accesses
    one-sided in `out`); neither occurring again, a[i] and b[j] are one substitution."""
    jb = _next_at(pos_b, a[i], j)   # where a[i] shows up again in b
    ia = _next_at(pos_a, b[j], i)   # where b[j] shows up again in a
    if jb is not None and (ia is None or jb - j <= ia - i):
        out.extend((None, jj) for jj in range(j, jb))
        return i, jb
    if ia is not None:
        out.extend((ii, None) for ii in range(i, ia))
        return ia, j
    out.append((i, None))
    out.append((None, j))
    return i + 1, j + 1


def _greedy(a, alo, ahi, b, blo, bhi, out):
    """Fallback for wildly different regions: walk both; at a difference take the smallest substitution,
    deletion or insertion after which GREEDY_CONFIRM accesses agree, else skip to the nearer next occurrence.
    O((N+M)·GREEDY_WINDOW·GREEDY_CONFIRM); not minimal, but it re-synchronises after local damage."""
    pos_a, pos_b = _positions(a, alo, ahi), _positions(b, blo, bhi)
    i, j = alo, blo
    while i < ahi and j < bhi:
        if a[i] == b[j]:
            out.append((i, j))
            i += 1
            j += 1
            continue
        repaired = _local_repair(a, i, ahi, b, j, bhi, out)
        i, j = repaired if repaired is not None else _skip_ahead(a, i, pos_a, b, j, pos_b, out)
    out.extend((ii, None) for ii in range(i, ahi))
    out.extend((None, jj) for jj in range(j, bhi))


def _align_range(a, alo, ahi, b, blo, bhi, out, methods, depth=0):
    while alo < ahi and blo < bhi and a[alo] == b[blo]:
        out.append((alo, blo))
        alo += 1
        blo += 1
    tail = []
    while alo < ahi and blo < bhi and a[ahi - 1] == b[bhi - 1]:
        ahi -= 1
        bhi -= 1
        tail.append((ahi, bhi))
    if alo == ahi or blo == bhi:
        out.extend((i, None) for i in range(alo, ahi))
        out.extend((None, j) for j in range(blo, bhi))
    else:
        script = _myers(a[alo:ahi], b[blo:bhi], MYERS_MAX_D, alo, blo)
        if script is not None:
            methods.add("myers")
            out.extend(script)
        else:
            anchors = _unique_anchors(a, alo, ahi, b, blo, bhi) if depth < 32 else []
            if anchors:
                methods.add("anchored")
                pa, pb = alo, blo
                for ia, jb in anchors:
                    _align_range(a, pa, ia, b, pb, jb, out, methods, depth + 1)
                    out.append((ia, jb))
                    pa, pb = ia + 1, jb + 1
                _align_range(a, pa, ahi, b, pb, bhi, out, methods, depth + 1)
            else:
                methods.add("greedy")
                _greedy(a, alo, ahi, b, blo, bhi, out)
    out.extend(reversed(tail))


def align(a: Sequence, b: Sequence) -> tuple[list[tuple[int | None, int | None]], tuple[str, ...]]:
    """Align two key sequences: [(i, j)] with None on the side that lacks the element, and the methods used.

    Inside each run of edits the deletions (only in `a`) come first, then the insertions.
    """
    head, middle, tail, methods = align_parts(a, b)
    out = list(zip(range(head), range(head)))
    out.extend(middle)
    out.extend(zip(range(len(a) - tail, len(a)), range(len(b) - tail, len(b))))
    return out, methods


def align_parts(a: Sequence, b: Sequence) -> tuple[int, list, int, tuple[str, ...]]:
    """align() as (common prefix length, the pairs between, common suffix length, methods): the prefix
    and suffix (all of two equal traces, most of two similar ones) are found by C-level iteration and
    never become pairs; only the region between them goes through _align_range."""
    n = min(len(a), len(b))
    head = next(compress(count(), map(ne, a, b)), n)
    tail = min(next(compress(count(), map(ne, reversed(a), reversed(b))), n), n - head)
    middle: list = []
    methods: set = set()
    _align_range(a, head, len(a) - tail, b, head, len(b) - tail, middle, methods)
    return head, _tidy(middle), tail, tuple(sorted(methods)) or ("identical",)


def _tidy(pairs: list) -> list:
    """Each block of consecutive edits reordered: all of A's leftovers, then B's, each in order."""
    edits = list(compress(count(), map(contains, pairs, repeat(None))))
    if not edits:
        return pairs
    out = list(pairs)
    start = prev = edits[0]
    for k in [*edits[1:], None]:
        if k == prev + 1:
            prev = k
            continue
        block = pairs[start:prev + 1]
        out[start:prev + 1] = [p for p in block if p[1] is None] + [p for p in block if p[0] is None]
        start = prev = k
    return out
