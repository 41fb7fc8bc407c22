"""Choosing among the scored candidates: greedily the one explaining most of what is left, while it explains
enough, changes (almost) no equal bytes and, for bytes moved around, beats chance matches."""

from __future__ import annotations

import numpy as np

from forensics.diagnose.kinds import group_of, rank_of
from forensics.diagnose.scoring import MAX_FALSE, MIN_SHARE

MIN_EVIDENCE = 16  # differing bytes a move must predict exactly (not as bytes it vacates) to be named
MIN_DISTINCT = 2   # ... holding at least this many distinct values

def _group(bug) -> float:
    """The tie-break group of a candidate: its kind's, unless the candidate says its own (`tie_group`: a chip
    that computed nothing at a zero point comes before the bits that would all be stuck)."""
    own = getattr(bug, "tie_group", None)
    return own if own is not None else group_of(bug.kind)


def chance(scan) -> float:
    """How often a byte of B equals an unrelated byte of A (from the value histograms): 1/256 for random data,
    ~1/4 for scores that are mostly 0..3."""
    pa = scan.hist_a / max(1, int(scan.hist_a.sum()))
    pb = scan.hist_b / max(1, int(scan.hist_b.sum()))
    return float((pa * pb).sum())


def select(scored: list, d_total: float, scale: float, missing: int, chance: float = 0.0
            ) -> tuple[list, np.ndarray, bool]:
    """Greedy: the candidate explaining most of what is left (ties: the most specific), while it explains
    enough, changes (almost) no equal bytes, and (bytes moved around: shift, lane swap, page) gets the
    differing bytes it predicts right far more often than unrelated bytes would match by chance, on evidence that
    is informative: at least MIN_EVIDENCE differing bytes predicted exactly, of more than one value (a move of
    zeros onto zeros, or one explained by the bytes it vacates, proves nothing)."""
    union = None
    chosen, missing_done = [], False
    need_right = min(0.5, 3 * chance)
    remaining = [c for c in scored if not c.bug.relocates or _beats_chance(c, need_right)]
    while remaining:
        need = MIN_SHARE * d_total if not chosen else max(0.01 * d_total, 8)
        gains = _gains(remaining, union, missing_done, need, scale, missing)
        if not gains:
            break
        top = max(g for g, _ in gains)
        tied = [c for g, c in gains if g >= 0.98 * top]
        best = min(tied, key=lambda c: (_group(c.bug), c.false, rank_of(c.bug.kind), c.complexity))
        chosen.append(best)
        remaining.remove(best)
        union = best.hits.copy() if union is None else union | best.hits
        missing_done = missing_done or best.missing
    if union is None:
        union = np.zeros(0 if not scored else scored[0].hits.size, bool)
    return chosen, union, missing_done


def _beats_chance(c, need_right: float) -> bool:
    """A move (shift, lane swap, page) predicts the differing bytes right far more often than chance would, on
    informative evidence: MIN_EVIDENCE bytes predicted exactly, of MIN_DISTINCT values or more."""
    return c.right >= need_right * c.touched and c.right >= MIN_EVIDENCE and c.distinct >= MIN_DISTINCT


def _gains(remaining: list, union, missing_done: bool, need: float, scale: float, missing: int) -> list:
    """(what it explains beyond `union`, candidate) of each remaining candidate that changes (almost) no equal
    bytes (MAX_FALSE of what it explains) and explains at least `need` of what is left."""
    gains = []
    for c in remaining:
        own = float(np.count_nonzero(c.hits)) * scale + (missing if c.missing else 0)
        if c.false * scale > MAX_FALSE * own:
            continue
        new = c.hits if union is None else c.hits & ~union
        g = float(np.count_nonzero(new)) * scale + (missing if c.missing and not missing_done else 0)
        if g >= need and g > 0:
            gains.append((g, c))
    return gains


def unrelated_cut(chosen: list, union: np.ndarray, missing_done: bool, region, scale: float,
                   common: int) -> tuple[list, np.ndarray, bool]:
    """B shorter than A names a truncation only if B's bytes are A's (or explained otherwise): when most of the
    bytes both hold still differ, B is another buffer (a smaller tensor, the input), not A cut short."""
    cut = [c for c in chosen if c.bug.kind == "truncation" and c.bug.pattern is None]
    if not cut or not union.size:
        return chosen, union, missing_done
    rest = [c for c in chosen if c not in cut]
    u = np.zeros_like(union)
    for c in rest:
        u |= c.hits
    left = float(np.count_nonzero(region.diff & region.in_a & ~u)) * scale
    if left <= 0.5 * common:
        return chosen, union, missing_done
    return rest, u, any(c.missing for c in rest)
