"""Scoring a hypothesis: how many of the differing bytes its prediction reproduces (`hits`), how many equal
bytes it would change (`false`), and the spans where a move holds when it fails over the whole buffer."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from forensics.diagnose.kinds import rank_of
from forensics.diagnose.region import Region, extent

MIN_SHARE = 0.05              # a candidate must explain this share of the differing bytes (or of what is left)
MAX_FALSE = 0.05              # ... and change at most this many equal bytes per byte it explains
MAX_WRONG = 0.1               # oversize / stride / pitch: at most this share of the bytes they place may be wrong
SHIFT_WINDOW = 64             # bytes of B searched for in A (and the least span a local move is named for)


@dataclass
class Scored:
    bug: object
    packed: np.ndarray        # bits over the region: differing bytes the prediction reproduces
    false: int                # equal bytes the prediction would have changed
    missing: bool             # explains B being shorter than A
    complexity: int = 0
    size: int = 0
    touched: int = 0          # differing bytes where it predicts a value other than A's ...
    right: int = 0            # ... and of those, the ones it predicts right
    slack_packed: np.ndarray | None = None  # the hits it has only because it lets them hold anything
    distinct: int = 0         # distinct values of B among the `right` bytes (zeros alone prove little)

    def evidence(self) -> dict:
        """What the finding rests on: differing bytes predicted exactly (a value other than A's), how many
        distinct values they hold, and the bytes it explains only by letting them hold anything."""
        slack = 0 if self.slack_packed is None else int(np.count_nonzero(self.slack_hits))
        return {"exact": self.right, "distinct_values": self.distinct, "slack": slack}

    @property
    def hits(self) -> np.ndarray:
        return np.unpackbits(self.packed, count=self.size).view(bool)

    @property
    def slack_hits(self) -> np.ndarray:
        if self.slack_packed is None:
            return np.zeros(self.size, bool)
        return np.unpackbits(self.slack_packed, count=self.size).view(bool)


def score(bug, src_a, region: Region, n_a: int, n_b: int) -> Scored:
    hits = np.zeros(region.diff.size, bool)
    loose = np.zeros(region.diff.size, bool)
    false = np.zeros(region.diff.size, bool)
    predicted = wrong = touched = right = 0
    seen = np.zeros(256, bool)
    for (lo, hi), off in zip(region.blocks, region.starts[:-1].tolist()):
        pred, defined, slack = bug.predict(src_a, lo, hi)
        b = region.b[off:off + hi - lo]
        same = defined & (pred == b)
        ok = slack | same
        d = region.diff[off:off + hi - lo]
        hits[off:off + hi - lo] = d & ok
        loose[off:off + hi - lo] = d & slack & ~same
        false[off:off + hi - lo] = ~d & ~ok
        predicted += int(np.count_nonzero(defined))
        wrong += int(np.count_nonzero(defined & ~same))
        claim = d & defined & (pred != region.a[off:off + hi - lo])
        touched += int(np.count_nonzero(claim))
        got = claim & same
        right += int(np.count_nonzero(got))
        if not seen.all():
            seen[b[got]] = True
    if bug.placed and wrong > MAX_WRONG * predicted:
        hits[:] = False  # the slack it allows explains nothing unless A's bytes really are where it puts them
    missing = n_b < n_a and bug.explains_size(n_a, n_b)
    if not bug.judged_on_equal:
        false[:] = False  # parts of B rewritten this run are no evidence against staleness elsewhere
    if bug.spans and bug.start is None:
        found = int(np.count_nonzero(hits))
        nf = int(np.count_nonzero(false))
        if found and (nf > MAX_FALSE * found or nf and region.exact):  # it would change equal bytes: a span?
            for f, l, span_hits in shift_spans(hits, false, loose, region):
                span_false = int(np.count_nonzero(false[f:l + 1]))
                s, e = int(region.at([f])[0]), int(region.at([l])[0]) + 1
                if span_hits and e - s >= SHIFT_WINDOW and span_false <= MAX_FALSE * span_hits:
                    bug = bug.local(s, e)
                    for bits in (false, hits, loose):  # outside its span the shift claims nothing
                        bits[:f] = False
                        bits[l + 1:] = False
                    break
    return Scored(bug, np.packbits(hits), int(np.count_nonzero(false)), missing, bug.complexity(), hits.size,
                   touched, right, np.packbits(loose & hits) if loose.any() else None, int(np.count_nonzero(seen)))


TAKEN_SHARE = 0.8  # a shift's vacated bytes go to another candidate that predicts at least this share of them


def prefer_exact(scored: list, region: Region) -> list:
    """The candidates, each shift without the differing bytes it vacates (slack: they may hold anything) where
    another candidate predicts most of them byte for byte. Why: when two blocks were written in each other's
    place (tiles or scatter-gather entries out of order), the shift of one would otherwise claim the other block
    as its vacated bytes, and one shift would be named for both. A shift that loses bytes this way keeps the
    span its exact hits cover."""
    strong = [c.hits & ~c.slack_hits for c in scored]
    count = np.zeros(region.diff.size, np.int16)
    for s in strong:
        count += s
    out = []
    for c, s in zip(scored, strong):
        if not c.bug.vacates or c.slack_packed is None:
            out.append(c)
            continue
        slack = c.slack_hits
        taken = slack & ((count - s) > 0)
        if np.count_nonzero(taken) < TAKEN_SHARE * np.count_nonzero(slack):  # chance matches, not a block
            out.append(c)
            continue
        hits = c.hits & ~taken
        bug = c.bug
        if hits.any():
            f, l = extent(hits)
            bug = bug.local(int(region.at([f])[0]), int(region.at([l])[0]) + 1)
        out.append(dataclasses.replace(c, bug=bug, packed=np.packbits(hits),
                                       slack_packed=np.packbits(slack & ~taken)))
    return out


SHORTLIST = 12          # candidates scored on the whole region after a pre-score on small windows


def shortlist(cands: list, src_a, src_b, region: Region, n_a: int, n_b: int) -> list:
    """Pre-score every candidate on a few 2 KiB windows around differing bytes (and spread over B); keep the
    ones that explain something there, most first."""
    if len(cands) <= SHORTLIST // 2:
        return cands
    idx = np.flatnonzero(region.diff)
    if not idx.size:
        return cands
    picks = region.at(idx[np.linspace(0, idx.size - 1, min(16, idx.size)).astype(np.int64)]).tolist()
    picks += [i * max(0, n_b - 2048) // 7 for i in range(8)]
    blocks = []
    for p in sorted(min(max(0, p - 512), max(0, n_b - 2048)) for p in picks):
        if blocks and p <= blocks[-1][1]:
            blocks[-1] = (blocks[-1][0], min(n_b, max(blocks[-1][1], p + 2048)))
        else:
            blocks.append((p, min(n_b, p + 2048)))
    small = Region(src_a, src_b, blocks)
    ranked, kept = [], [c for c in cands if c.structural]
    for c in cands:
        if c.structural:
            continue
        sc = score(c, src_a, small, n_a, n_b)
        hits, d = int(np.count_nonzero(sc.hits)), max(1, int(np.count_nonzero(small.diff)))
        # Explaining the size difference puts a candidate first only if it explains the bytes too: many widths
        # and pitches fit two sizes within the slack, and they must not push out a shift that explains bytes.
        gain = hits + (1 << 30 if sc.missing and hits >= 0.5 * d else 0)
        if gain > 0.02 * d:
            ranked.append((-gain, rank_of(c.kind), sc.complexity, len(ranked), c))
    ranked.sort(key=lambda t: t[:4])
    return kept + [t[-1] for t in ranked[:SHORTLIST]]




MIN_EXACT = 0.25  # a local shift's share of hits it predicts exactly (the rest: bytes it vacates)
DENSE_SPAN_MIN = 4096  # the least block (a page, a scatter-gather entry) a shift is named for inside other data


def shift_spans(hits, false, loose, region: Region):
    """(first, last, hits inside) of the spans where a shift that fails over the whole buffer may hold, best
    first. An exact region tries the span from the first to the last hit (which must then hold throughout);
    then, as sampled blocks of a large pair always do, the densest span, so that chance hits elsewhere (on data
    of few distinct values, a quarter of the bytes match anywhere) do not stretch it. A span must be mostly
    bytes the shift predicts exactly, not the bytes it vacates (`loose`: they may hold anything)."""
    def dense(f, l):  # the hits inside, when they are (nearly) all the span's differing bytes
        span_hits = int(np.count_nonzero(hits[f:l + 1]))
        exact = span_hits - int(np.count_nonzero(loose[f:l + 1]))
        held = span_hits >= 0.9 * int(np.count_nonzero(region.diff[f:l + 1])) and exact >= MIN_EXACT * span_hits
        return f, l, span_hits if held else 0

    if region.exact:
        yield dense(*extent(hits))
    f, l = dense_span(hits, false, region.diff)
    if region.exact and l - f + 1 < DENSE_SPAN_MIN:
        return  # two neighbouring records exchanged is what another inference looks like, not a block moved
    yield dense(f, l)


def dense_span(hits, false, diff) -> tuple[int, int]:
    """[first, last] region indices of the span where a local shift holds: the interval maximising
    hits - 20 x false changes - 0.05 x other differing bytes (chance hits elsewhere do not stretch it)."""
    w = hits.astype(np.float32)
    w[false] = -1 / MAX_FALSE
    w[diff & ~hits] = -0.05
    c = np.concatenate(([0], np.cumsum(w, dtype=np.float32)))
    low = np.minimum.accumulate(c)
    j = int(np.argmax(c - low))
    i = int(np.flatnonzero(c[:j + 1] == low[j])[-1]) if j else 0
    return i, max(i, j - 1)
