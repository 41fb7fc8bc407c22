"""pitch: rows of A land in B at a row pitch larger than the row (an aligned pitch, e.g. 11,008 bytes for rows of
10,944), or the reverse: one side was written with padding after each row."""

from __future__ import annotations

import math

import numpy as np

from forensics.diagnose.kinds import shift
from forensics.diagnose.kinds.base import Kind, n, parse_int
from forensics.diagnose.kinds.stride import Strided
from forensics.diagnose.result import Finding
from forensics.core.errors import InputError

MAX_SAME_SIZE = 8  # same-size pitch candidates (one per row size that fits, longest first)


def parse(args, size, previous=None):
    row, pitch = parse_int(args[0], "ROW"), parse_int(args[1], "PITCH")
    if row <= 0 or abs(pitch) <= row:
        raise InputError("pitch needs ROW > 0 and |PITCH| > ROW")
    if pitch > 0:
        return Strided(row, row, pitch, kind_name="pitch")
    return Strided(row, -pitch, row, kind_name="pitch")


def _model_rows(view) -> list[int]:
    """Row sizes of the model tensor (bytes in the last 1, 2, ... dims), for pitch."""
    if view is None:
        return []
    shape = [int(d) for d in getattr(view.tensor, "shape", ()) or ()]
    item = int(getattr(view.tensor, "itemsize", 1) or 1)
    rows = []
    for k in range(len(shape) - 1, 0, -1):
        r = int(np.prod(shape[k:])) * item
        if r > 1:
            rows.append(r)
    return rows


def _divisors(value: int) -> list[int]:
    out = set()
    for i in range(1, math.isqrt(value) + 1):
        if value % i == 0:
            out.update((i, value // i))
    return sorted(out)


def candidates(ctx) -> list:
    """Rows of A at a fixed pitch in B (or the reverse), for row sizes from the model, or that divide the smaller
    dump and whose pitch fits the larger (aligned, or agreeing with the shifts the windows voted for)."""
    n_a, n_b = ctx.n_a, ctx.n_b
    ranked = shift.ranked(ctx)[:shift.TOP_SHIFTS]
    ks = [abs(k) for k in ranked]
    d = math.gcd(*ks) if ks else 0
    if n_a == n_b:
        return _same_size(ctx, ranked, d)
    small, big = min(n_a, n_b), max(n_a, n_b)
    rows = _pitched_rows(set(_model_rows(ctx.model_view)), small, big, d)
    out = []
    for row in sorted(rows):
        if row >= small or small % row:
            continue
        r = small // row
        for pitch in {(big - row) // (r - 1) if r > 1 and (big - row) % (r - 1) == 0 else 0,
                      big // r if big % r == 0 else 0}:
            if pitch > row:
                out.append(Strided(row, row, pitch, size=n_b, kind_name="pitch") if n_b > n_a else
                           Strided(row, pitch, row, size=n_b, kind_name="pitch"))
    return out


def _pitched_rows(rows: set, small: int, big: int, d: int) -> set:
    """`rows` (the model's) and every row size dividing the smaller dump into 2 or more rows of 8 bytes or more
    whose pitch would fill the larger: the size difference a whole number of the voted shifts' gcd `d` per row,
    or a pitch padding a row a little (a known row, or 16-byte aligned). Updated in place: a row added counts as
    known for the next."""
    for r in _divisors(small):
        row = small // r
        if r < 2 or row < 8:
            continue
        if row in rows or (d and (big - small) % d == 0 and (big - small) // d in (r, r - 1)):
            rows.add(row)
        for pitch in ((big - row) // (r - 1) if (big - row) % (r - 1) == 0 else 0,
                      big // r if big % r == 0 else 0):
            if pitch > row and pitch - row <= max(4096, row) and (row in rows or pitch % 16 == 0):
                rows.add(row)
    return rows


def _same_size(ctx, ranked, d: int) -> list:
    """A buffer of the tensor's size written with a row pitch (its last rows fall off the end): row i moves by
    i x (pitch - row), so the voted shifts are multiples of d = pitch - row. Rows from the model, or the divisors
    of the size whose row + d is 16-byte aligned."""
    size = ctx.n_a
    if not d or len({abs(k) for k in ranked}) < 2:  # rows moved by several multiples of d, not one block moved
        return []
    later = sum(1 for k in ranked if k > 0) * 2 >= len(ranked)  # B pitched: rows land later in B
    # the largest voted shift is (rows - 1) x d at least: rows no longer than that allows, longest first
    longest = size // (max(abs(k) for k in ranked) // d + 1)
    rows = {r for r in _model_rows(ctx.model_view) if size % r == 0}
    rows |= {row for row in _divisors(size) if 64 <= row <= longest and size // row >= 2 and (row + d) % 16 == 0}
    out = []
    for row in sorted(rows, reverse=True):
        pitch = row + d
        if pitch - row > min(4096, row // 2):  # a pitch pads a row a little
            continue
        out.append(Strided(row, row, pitch, size=size, kind_name="pitch") if later else
                   Strided(row, pitch, row, size=size, kind_name="pitch"))
    return out[:MAX_SAME_SIZE]


def finding(c, ctx, explains):
    bug, a, b, n_a, n_b = c.bug, ctx.a, ctx.b, ctx.n_a, ctx.n_b
    details = dict(bug.params())
    row, pitch = bug.width, max(bug.src, bug.dst)
    side = "B" if bug.dst > bug.src else "A"
    other = "A" if side == "B" else "B"
    rows = -(-min(n_a, n_b) // row)
    details.update({"rows": rows, "row_bytes": row, "pitch": pitch, "pitched_side": side})
    text = (f"{rows} rows of {n(row)} bytes of {other} appear in {side} at a pitch of {n(pitch)} bytes "
            f"({n(pitch - row)} padding bytes after each row): {side} was written with an aligned row pitch")
    hint = (f"copy each row of {b if side == 'B' else a} at the tensor's row size ({n(row)} bytes), dropping "
            f"the {n(pitch - row)} pitch padding bytes, or give the consumer the pitch")
    return [Finding("pitch", text, hint, details, explains)]


KIND = Kind("pitch", rank=3, display=1, usage="pitch:ROW:PITCH",
            description="ROW-byte rows of A land PITCH bytes apart in B (PITCH < 0: A is pitched)",
            parse=parse, candidates=candidates, finding=finding)
