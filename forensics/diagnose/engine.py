"""The engine: scan the pair once, ask every kind for its hypotheses, score them on the differing bytes, choose,
and turn the choice into findings, a verdict and a hint."""

from __future__ import annotations

import os

import numpy as np

from forensics.diagnose import kinds
from forensics.diagnose.context import Context
from forensics.diagnose.kinds.base import n
from forensics.diagnose.kinds.base import shell_arg as _arg
from forensics.diagnose.kinds.head_window import DEFAULT_WINDOW, head_window
from forensics.diagnose.kinds.relayout import residual_finding
from forensics.diagnose.region import LINE, DumpSource, Region, blocks, scattered_lines, where, whole_pages
from forensics.diagnose.result import DiagnoseResult, Finding
from forensics.diagnose.scan import DEFAULT_CHUNK, DEFAULT_MIN_RUN, SENTINELS, files_equal, fills_of, scan_pair
from forensics.diagnose.scoring import prefer_exact, score, shortlist
from forensics.diagnose.select import chance, select, unrelated_cut
from forensics.io.dump import Dump, open_dump
from forensics.core.errors import InputError
from forensics.core.layout import RecordLayout, layout_from
from forensics.core.verdict import Verdict

DEFAULT_MAX_SHIFT = 64 << 10  # how far (bytes) shift detection searches either way around each window ...
WHOLE_SHIFT_SEARCH = 1 << 20  # ... unless told: buffers up to this size are searched whole (a block copied
                              # half a tensor away, a DMA chunk repeated), ~30 ms of bytes.find
EXPLAINED_SHARE = 0.99        # EXPLAINED when the findings account for this share of the differing bytes
MAX_CANDIDATES = 400


def candidates(ctx: Context) -> list:
    """Every kind's hypotheses for this pair, in the order the kinds propose them, without repeats."""
    out = []
    for kind in kinds.proposers():
        made = kind.candidates(ctx)
        ctx.produced[kind.name] = made
        out += made
    seen, unique = set(), []
    for c in out[:MAX_CANDIDATES]:
        key = c.spec() if c.kind != "stale" else "stale"
        if key not in seen:
            seen.add(key)
            unique.append(c)
    return unique


def _characterize(scan, layout, region, mask, dump_a, dump_b, fills) -> dict:
    """Where the unexplained differences are and what they look like."""
    w = where(mask, region, layout)
    ha, hb = scan.hist_a, scan.hist_b
    tv = float(np.abs(ha / max(1, ha.sum()) - hb / max(1, hb.sum())).sum() / 2) if ha.sum() else 0.0
    pad_ok = None
    if layout.pad_lanes and region.diff.size:
        rel = region.at(region.diff & region.in_a) - layout.offset
        pad_ok = not np.isin(rel[rel >= 0] % layout.record_size, list(layout.pad_lanes)).any()
    sized = dump_a.size == dump_b.size
    well_formed = sized and not fills and tv <= 0.25 and pad_ok is not False
    lines = scattered_lines(region, mask & region.in_a) if mask.size else None
    pages = whole_pages(region, mask & region.in_a, dump_b.size) if mask.size and lines is None else None
    return {**w, "max_delta": scan.max_delta if sized else None,
            "bytes_off_by_one": scan.bytes_off_by_one if sized else None,
            "histogram_distance": round(tv, 4), "pad_lanes_intact": pad_ok,
            "looks_like_another_inference": bool(well_formed),
            "cache_lines": None if lines is None else int(lines.size), "pages": pages}


DRIFT_LSB = 8  # differences of at most this many LSB, spread thin, are another input's, not a driver's


def _drift(scan, region, mask, characterization) -> int | None:
    """The largest delta (LSB) when the unexplained differences are small values spread thin (under half the
    bytes of the cache lines they touch: not whole lines held stale), as another input or model gives."""
    if characterization.get("max_delta") is None:
        return None
    delta = scan.max_code if scan.max_code is not None else scan.max_delta
    if delta > DRIFT_LSB:
        return None
    lines = characterization.get("cache_lines")
    if lines and np.count_nonzero(mask & region.in_a) >= 0.5 * lines * LINE:
        return None
    return int(delta)


def _inputs_text(crcs: dict | None) -> tuple[str, str]:
    """(what the inputs say, the command that compares them when they were not given)."""
    if crcs is None:
        return ("Compare the input CRCs and the model files (or give diagnose --inputs INPUT_A INPUT_B); the "
                "inputs' CRCs", "forensics crc INPUT_A INPUT_B")
    if crcs["equal"]:
        return (f"the inputs are identical (CRC32 {crcs['crc32_a']}): another model version, or a "
                "nondeterministic op, gave these values.", "")
    return (f"the inputs differ (CRC32 {crcs['crc32_a']} vs {crcs['crc32_b']}): B is the output of another "
            "input.", "")


def _tile_padding_differing(dump_a, dump_b, layout) -> int:
    """The differing bytes after a layout's `count` records (an Edge TPU output layer's tile padding: its
    size_bytes hold 4 bytes more than 1,917 records of 92), which `diff` does not compare either."""
    if layout.count is None:
        return 0
    start = layout.offset + layout.count * layout.record_size
    if start >= dump_a.size:
        return 0
    from forensics.io.dump import DumpReader

    total = 0
    with DumpReader(dump_a) as ra, DumpReader(dump_b) as rb:
        for lo in range(start, dump_a.size, 1 << 20):
            hi = min(dump_a.size, lo + (1 << 20))
            a, b = bytearray(hi - lo), bytearray(hi - lo)
            ra.read_exact(lo, memoryview(a))
            rb.read_exact(lo, memoryview(b))
            total += int(np.count_nonzero(np.frombuffer(a, np.uint8) != np.frombuffer(b, np.uint8)))
    return total


def _as_dump(value, what: str) -> Dump:
    if isinstance(value, Dump):
        return value
    if isinstance(value, (str, bytes, os.PathLike)):
        return open_dump(value)
    raise TypeError(f"{what} must be a Dump or a path, not {type(value).__name__}")


def element_name(dump_a, dump_b, layout, model_view) -> str | None:
    """The elements' dtype as the dumps' .npy headers, their sidecars, the layout or the model say (None: bytes)."""
    said = (getattr(dump_a, "npy_dtype", None), getattr(dump_b, "npy_dtype", None),
            getattr(dump_a.meta, "dtype", None), getattr(dump_b.meta, "dtype", None), layout.element,
            getattr(getattr(model_view, "tensor", None), "dtype", None))
    for name in said:
        if name:
            try:
                return np.dtype(name).name
            except TypeError:
                continue
    return None


def _input_crcs(inputs) -> dict | None:
    """The CRCs of the two inputs (paths, Dumps or CRC integers) the dumps were computed from."""
    if inputs is None:
        return None
    if len(inputs) != 2:
        raise InputError("inputs must be the two inputs (A's, B's), as paths or CRC32 values")
    crcs = []
    for value in inputs:
        if isinstance(value, int) and not isinstance(value, bool):
            crcs.append(value)
        else:
            from forensics.compare.crc import crc_dump

            crcs.append(crc_dump(_as_dump(value, "inputs")).crc32)
    return {"crc32_a": f"0x{crcs[0]:08x}", "crc32_b": f"0x{crcs[1]:08x}", "equal": crcs[0] == crcs[1]}


def _checked_options(dump_a, dump_b, *, min_run, window, max_shift, chunk, tolerance) -> int:
    """The search options refused when they make no sense; the shift search's reach (default: the whole pair
    up to WHOLE_SHIFT_SEARCH, else DEFAULT_MAX_SHIFT)."""
    if min_run <= 0 or window <= 0 or (max_shift is not None and max_shift < 0) or chunk <= 0:
        raise InputError("min_run, window and chunk must be positive and max_shift not negative")
    if tolerance is not None and tolerance < 0:
        raise InputError(f"tolerance must not be negative, got {tolerance}")
    if max_shift is None:
        largest = max(dump_a.size, dump_b.size)
        max_shift = largest if largest <= WHOLE_SHIFT_SEARCH else DEFAULT_MAX_SHIFT
    return max_shift


def _layout_of(dump_a, dump_b, layout, model_view) -> RecordLayout:
    """The layout given, else the model view's, else A's or B's sidecar (else 4-byte records)."""
    if layout is None:
        if model_view is not None:
            layout = model_view.layout
        else:
            layout = layout_from(dump_a.meta if dump_a.meta is not None else dump_b.meta)
    shorter = dump_a if dump_a.size <= dump_b.size else dump_b
    if layout.offset >= shorter.size:
        raise InputError(f"offset {layout.offset} is past the end of the data ({shorter.size} bytes)", shorter.path)
    return layout


def _without_search(scan, layout, base: dict, *, same_size: bool, tolerance, dtype,
                    tile_bytes: int = 0) -> DiagnoseResult | None:
    """The answers that need no hypotheses: byte-identical, only pad lanes or the tile padding after the last
    record differing (diff's rule: they are not compared), every element within the tolerance. None when the
    pair needs the search."""
    if same_size and scan.bytes_differing == 0:
        return DiagnoseResult(**base, findings=(), verdict=Verdict.IDENTICAL, explained_fraction=1.0)
    pad_bytes = base["pad_bytes_differing"]
    if same_size and pad_bytes == scan.bytes_differing:
        lanes = ",".join(map(str, layout.pad_lanes))
        lane_bytes = pad_bytes - tile_bytes
        ignored = " and ".join(part for part in (f"pad lanes {lanes}" if lane_bytes else "",
                                                 "the tile padding after the last record" if tile_bytes else "")
                               if part)
        return DiagnoseResult(**base, findings=(), verdict=Verdict.IDENTICAL, explained_fraction=1.0,
                              pad_only_bytes=pad_bytes,
                              hint=f"{n(pad_bytes)} bytes differ only in {ignored} (ignored)")
    if tolerance is not None and same_size and scan.max_code is not None and scan.max_code <= tolerance:
        unit = f"{dtype} element" if dtype else "byte"
        return DiagnoseResult(**base, findings=(), verdict=Verdict.WITHIN, explained_fraction=1.0,
                              pad_only_bytes=pad_bytes if pad_bytes == scan.bytes_differing else 0,
                              hint=f"every {unit} is within {tolerance} LSB of A's")
    return None


class _Search:
    """The hypotheses of one pair: every kind's candidates scored on the differing bytes, the chosen ones and what
    they leave unexplained (in bytes of B: `scale` turns region counts of a sampled pair into bytes)."""

    def __init__(self, ctx: Context, scan):
        self.ctx, self.scan = ctx, scan
        region, n_a, n_b = ctx.region, ctx.n_a, ctx.n_b
        self.d_b = scan.bytes_differing + max(0, n_b - n_a)
        self.missing = max(0, n_a - n_b)
        self.d_total = self.d_b + self.missing
        d_s = int(np.count_nonzero(region.diff))
        self.scale = self.d_b / d_s if d_s else 0.0
        self.scored: list = []
        self.chosen: list = []
        self.union = np.zeros(0, bool)
        self.missing_done = False

    def bytes_of(self, mask) -> float:
        return float(np.count_nonzero(mask)) * self.scale

    def explained(self) -> float:
        return self.bytes_of(self.union) + (self.missing if self.missing_done else 0)

    def run(self, prev, chunk: int) -> None:
        ctx, region = self.ctx, self.ctx.region
        cands = candidates(ctx)
        scored = [score(c, ctx.src_a, region, ctx.n_a, ctx.n_b)
                  for c in shortlist(cands, ctx.src_a, ctx.src_b, region, ctx.n_a, ctx.n_b)]
        scored = prefer_exact(scored, region)
        if prev is not None and files_equal(ctx.dump_b, prev, chunk):
            # B is the previous run's buffer byte for byte: that is the story (stale, first); lines or pages
            # holding the previous run's bytes are part of it, not a cache to flush
            ctx.stale_whole = True
            scored = [c for c in scored if getattr(c.bug, "previous", None) is None or c.bug.kind == "stale"]
        self.scored = scored
        chosen, union, done = select(scored, self.d_total, self.scale, self.missing, chance(self.scan))
        self.chosen, self.union, self.missing_done = unrelated_cut(chosen, union, done, region, self.scale,
                                                                   min(ctx.n_a, ctx.n_b))
        self._named_beside()

    def _named_beside(self) -> None:
        """Kinds that explain what another finding explains in another way are said too (`Bug.named_beside`:
        the previous run's bytes, a buffer the chip never computed): when they explain nearly all of it."""
        for c in self.scored:
            if c in self.chosen or not c.bug.named_beside:
                continue
            whole = c.bug.kind == "stale" and self.ctx.stale_whole
            if (self.d_b and self.bytes_of(c.hits) >= 0.9 * self.d_b) or whole:
                self.chosen.append(c)
                if whole:
                    self.union = c.hits.copy() if not self.union.size else self.union | c.hits

    def findings(self) -> list[Finding]:
        out: list[Finding] = []
        ctx, d_total = self.ctx, self.d_total
        for c in self.chosen:
            own = self.bytes_of(c.hits) + (self.missing if c.missing else 0)
            made = kinds.get(c.bug.kind).finding(c, ctx, round(min(1.0, own / d_total), 6) if d_total else 0.0)
            for f in made:
                f.details.setdefault("evidence_bytes", c.evidence())
            out += made
        return out

    def residual(self) -> tuple[np.ndarray, float]:
        """The differing bytes no chosen candidate explains: (mask over the region, bytes of B)."""
        region = self.ctx.region
        mask = region.diff & ~self.union if self.union.size else region.diff
        return mask, self.bytes_of(mask) + (0 if self.missing_done else self.missing)


def _verdict(named: list, fraction: float, common_left: float, bytes_differing: int) -> Verdict:
    """EXPLAINED when the findings account for EXPLAINED_SHARE of the differing bytes, of the common ones too;
    PARTLY EXPLAINED when something is named; else UNEXPLAINED."""
    common_ok = common_left <= (1 - EXPLAINED_SHARE) * max(1, bytes_differing)
    if named and fraction >= EXPLAINED_SHARE and common_ok:
        return Verdict.EXPLAINED
    return Verdict.PARTLY_EXPLAINED if named else Verdict.UNEXPLAINED


def _unexplained_hint(ctx: Context, scan, characterization: dict, drift, named, input_crcs) -> tuple[str, str]:
    """(what to look at, the command to run) for what no finding explains, from what the differences look like."""
    dump_a, dump_b, n_a, n_b = ctx.dump_a, ctx.dump_b, ctx.n_a, ctx.n_b
    diff = f"forensics diff {_arg(dump_a.path)} {_arg(dump_b.path)}"
    inputs, compare = _inputs_text(input_crcs)
    if drift is not None:
        return (f"B differs from A by at most {drift} LSB in {n(scan.bytes_differing)} bytes spread over the buffer, "
                f"in no pattern a driver bug leaves: another input or another model version? {inputs}", compare)
    if characterization["cache_lines"]:
        return (f"the differences sit in {characterization['cache_lines']} separate 64-byte cache lines: DMA into "
                "memory the CPU still caches (flush / invalidate the buffer after the transfer); rerun with "
                "--previous PREVIOUS_B to see whether they hold the previous run's bytes", "")
    if characterization["pages"]:
        return (f"the differences fill {characterization['pages']} whole 4 KiB page(s): pages the device did not "
                "write this run (a scatter-gather / MDL entry missing or pointing elsewhere); rerun with "
                "--previous PREVIOUS_B to see whether they hold the previous run's bytes", "")
    if characterization["looks_like_another_inference"]:
        return ("B looks like a well-formed output of another inference (pad lanes intact, value histogram like "
                "A's): a stale buffer or a different input. "
                + ("" if ctx.previous is not None else "Rerun with --previous PREVIOUS_B. ") + inputs, compare)
    if not named and n_a != n_b and scan.bytes_differing > 0.5 * min(n_a, n_b):
        return (f"B ({n(n_b)} bytes) is not A ({n(n_a)} bytes) cut short or padded: most bytes both hold differ. "
                "Check that the right buffer was copied (this output tensor, not another tensor or the input)",
                diff)
    return "look at the differing records", diff


def _primary(findings: list, named: list, stale_whole: bool) -> str | None:
    """The kind that explains the most (ties: the engine's first choice); B equal to the previous run: stale."""
    if stale_whole:
        return "stale"
    order = {id(f): i for i, f in enumerate(findings)}
    return min(named, key=lambda f: (-f.explains, order[id(f)])).kind if named else None


def _residual_doc(mask, residual_bytes: float, search: _Search, ctx: Context) -> dict | None:
    if residual_bytes <= 0:
        return None
    out = {"bytes": int(round(residual_bytes)), "fraction": round(residual_bytes / search.d_total, 6),
           **where(mask, ctx.region, ctx.layout)}
    if search.missing and not search.missing_done:
        out["missing_bytes"] = search.missing
    return out


def _explain(ctx: Context, scan, search: _Search, dump_a, dump_b, window: int) -> dict:
    """The findings of the chosen hypotheses, a relayout for what is left with equal byte values, the head
    window beside them, and what is left unexplained: the DiagnoseResult's fields past the pair's facts."""
    findings = search.findings()
    explained = search.explained()
    residual_mask, residual_bytes = search.residual()
    layout, region, n_a, n_b = ctx.layout, ctx.region, ctx.n_a, ctx.n_b
    if n_a == n_b and residual_bytes >= max(64, 0.01 * n_b) and np.array_equal(scan.diff_hist_a, scan.diff_hist_b):
        findings.append(residual_finding(ctx, residual_mask, round(residual_bytes / search.d_total, 6)))
        explained, residual_bytes = float(search.d_total), 0.0
        residual_mask = np.zeros_like(residual_mask)
    head = head_window(dump_a, dump_b, layout, scan, window)
    if head is not None:
        findings.append(head)
    d_total = search.d_total
    fraction = round(min(1.0, explained / d_total), 6) if d_total else 1.0
    named = [f for f in findings if f.kind != "head_window"]
    common_left = search.bytes_of(residual_mask & region.in_a) if residual_mask.size else 0.0
    verdict = _verdict(named, fraction, common_left, scan.bytes_differing)
    characterization, hint, command = None, "", ""
    if verdict != Verdict.EXPLAINED:
        characterization = _characterize(scan, layout, region, residual_mask, dump_a, dump_b, ctx.fills)
        drift = _drift(scan, region, residual_mask, characterization)
        hint, command = _unexplained_hint(ctx, scan, characterization, drift, named, ctx.inputs)
    primary = _primary(findings, named, ctx.stale_whole)
    findings.sort(key=lambda f: kinds.display_of(f.kind))
    return dict(findings=tuple(findings), verdict=verdict, explained_fraction=fraction,
                residual=_residual_doc(residual_mask, residual_bytes, search, ctx), characterization=characterization,
                exact=region.exact, hint=hint, command=command, primary=primary)


def diagnose_dumps(dump_a, dump_b, *, layout: RecordLayout | None = None, previous=None, model_view=None,
                   model=None, sentinels=None, tolerance: int | None = None, min_run: int = DEFAULT_MIN_RUN,
                   max_shift: int | None = None, window: int = DEFAULT_WINDOW,
                   chunk: int = DEFAULT_CHUNK, progress=None, inputs=None) -> DiagnoseResult:
    """Explain how B (under test) differs from A (reference) with the bug generators; see the module doc.

    `layout` (record size, offset, pad lanes, zero point) defaults to the model view's, else A's or B's sidecar,
    else 4-byte records; it places records and lanes in the text and says where the output's zero point is
    (not_computed). `model_view` (forensics.decode.modeldumps.tensor_view) adds the model's tensor shape and Edge
    TPU layer map; `model` is the model's path for hints. `previous` is an earlier run's buffer (path or Dump)
    for stale. `tolerance` K: same-size pairs whose data elements differ by at most K LSB in their dtype (header,
    sidecar, model; else uint8 bytes; never floats) are WITHIN TOLERANCE (exit 0), as `compare --tolerance K`
    judges. Differences only in the layout's pad lanes are ignored as `diff` ignores them (IDENTICAL, said in the
    hint); `bytes_differing` counts the bytes outside them, as diff does, and `pad_bytes_differing` the others.
    `inputs` (the two inputs' paths or CRC32s, when the runs hold them) are compared when B is unexplained.
    """
    dump_a, dump_b = _as_dump(dump_a, "dump_a"), _as_dump(dump_b, "dump_b")
    prev = _as_dump(previous, "previous") if previous is not None else None
    max_shift = _checked_options(dump_a, dump_b, min_run=min_run, window=window, max_shift=max_shift, chunk=chunk,
                                 tolerance=tolerance)
    layout = _layout_of(dump_a, dump_b, layout, model_view)
    pats = tuple(SENTINELS) + tuple((str(n), bytes(p)) for n, p in (sentinels or ()) if p)
    dtype = element_name(dump_a, dump_b, layout, model_view)
    scan = scan_pair(dump_a, dump_b, layout, pats, min_run, chunk, progress, dtype=dtype)
    input_crcs = _input_crcs(inputs)
    same_size = dump_a.size == dump_b.size
    tile_bytes = _tile_padding_differing(dump_a, dump_b, layout) if same_size else 0
    pad_bytes = (int(scan.lane_diff[list(layout.pad_lanes)].sum()) if layout.pad_lanes else 0) + tile_bytes
    base = dict(path_a=dump_a.path, path_b=dump_b.path, size_a=dump_a.size, size_b=dump_b.size, crc32_a=scan.crc_a,
                crc32_b=scan.crc_b, record_size=layout.record_size, records_compared=scan.records,
                records_differing=scan.records_differing, bytes_differing=scan.bytes_differing - pad_bytes,
                first_differing_offset=scan.first, previous=prev.path if prev is not None else None,
                tolerance=tolerance, dtype=dtype, inputs=input_crcs, pad_bytes_differing=pad_bytes,
                pad_lanes=tuple(layout.pad_lanes))
    quick = _without_search(scan, layout, base, same_size=same_size, tolerance=tolerance, dtype=dtype,
                            tile_bytes=tile_bytes)
    if quick is not None:
        return quick
    src_a, src_b = DumpSource(dump_a), DumpSource(dump_b)
    prev_src = DumpSource(prev) if prev is not None else None
    try:
        spans, exact = blocks(dump_b.size, dump_a.size, scan)
        ctx = Context(dump_a, dump_b, src_a, src_b, layout, scan, Region(src_a, src_b, spans, exact),
                      model_view=model_view, previous_src=prev_src, max_shift=max_shift, fills=fills_of(scan, pats, dump_b.size),
                      model=model, previous=prev.path if prev is not None else None,
                      pattern_names={bytes(p): name for name, p in pats}, dtype=dtype, inputs=input_crcs)
        search = _Search(ctx, scan)
        search.run(prev, chunk)
        found = _explain(ctx, scan, search, dump_a, dump_b, window)
    finally:
        for s in (src_a, src_b, prev_src):
            if s is not None:
                s.close()
    return DiagnoseResult(**base, **found)
