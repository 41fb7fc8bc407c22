"""The engine: scan the pair once, ask every kind for its hypotheses, score them on the differing bytes, choose,
and turn the choice into findings, a verdict and a hint."""

from __future__ import annotations

import os

import numpy as np

from forensics.diagnose import kinds
from forensics.diagnose.context import Context
from forensics.diagnose.kinds.base import n
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


def _inputs_text(crcs: dict | None) -> str:
    if crcs is None:
        return ("Compare the input CRCs (forensics crc INPUT_A INPUT_B, or give diagnose --inputs INPUT_A INPUT_B) "
                "and the model files.")
    if crcs["equal"]:
        return (f"the inputs are identical (CRC32 {crcs['crc32_a']}): another model version, or a "
                "nondeterministic op, gave these values.")
    return (f"the inputs differ (CRC32 {crcs['crc32_a']} vs {crcs['crc32_b']}): B is the output of another "
            "input.")


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


def diagnose_dumps(dump_a, dump_b, *, layout: RecordLayout | None = None, previous=None, model_view=None,
                   model=None, sentinels=None, tolerance: int | None = None, min_run: int = DEFAULT_MIN_RUN,
                   max_shift: int | None = None, window: int = DEFAULT_WINDOW,
                   chunk: int = DEFAULT_CHUNK, progress=None, inputs=None) -> DiagnoseResult:
    """Explain how B (under test) differs from A (reference) with the bug generators; see the module doc.

    `layout` (record size, offset, pad lanes) defaults to the model view's, else A's or B's sidecar, else
    4-byte records; it places records and lanes in the text but never changes which bug is named.
    `model_view` (forensics.decode.modeldumps.tensor_view) adds the model's tensor shape and Edge TPU layer map;
    `model` is the model's path for hints. `previous` is an earlier run's buffer (path or Dump) for stale.
    `tolerance` K: same-size pairs whose data elements differ by at most K LSB in their dtype (header, sidecar,
    model; else uint8 bytes; never floats) are WITHIN TOLERANCE (exit 0), as `compare --tolerance K` judges.
    Differences only in the layout's pad lanes are ignored as `diff` ignores them (IDENTICAL, said in the hint).
    `inputs` (the two inputs' paths or CRC32s, when the runs hold them) are compared when B is unexplained.
    """
    dump_a, dump_b = _as_dump(dump_a, "dump_a"), _as_dump(dump_b, "dump_b")
    prev = _as_dump(previous, "previous") if previous is not None else None
    if min_run <= 0 or window <= 0 or (max_shift is not None and max_shift < 0) or chunk <= 0:
        raise InputError("min_run, window and chunk must be positive and max_shift not negative")
    if max_shift is None:
        largest = max(dump_a.size, dump_b.size)
        max_shift = largest if largest <= WHOLE_SHIFT_SEARCH else DEFAULT_MAX_SHIFT
    if tolerance is not None and tolerance < 0:
        raise InputError(f"tolerance must not be negative, got {tolerance}")
    if layout is None:
        if model_view is not None:
            layout = model_view.layout
        else:
            layout = layout_from(dump_a.meta if dump_a.meta is not None else dump_b.meta)
    shorter = dump_a if dump_a.size <= dump_b.size else dump_b
    if layout.offset >= shorter.size:
        raise InputError(f"offset {layout.offset} is past the end of the data ({shorter.size} bytes)", shorter.path)
    pats = tuple(SENTINELS) + tuple((str(n), bytes(p)) for n, p in (sentinels or ()) if p)
    dtype = element_name(dump_a, dump_b, layout, model_view)
    scan = scan_pair(dump_a, dump_b, layout, pats, min_run, chunk, progress, dtype=dtype)
    n_a, n_b = dump_a.size, dump_b.size
    input_crcs = _input_crcs(inputs)
    base = dict(path_a=dump_a.path, path_b=dump_b.path, size_a=n_a, size_b=n_b, crc32_a=scan.crc_a,
                crc32_b=scan.crc_b, record_size=layout.record_size, records_compared=scan.records,
                records_differing=scan.records_differing, bytes_differing=scan.bytes_differing,
                first_differing_offset=scan.first, previous=prev.path if prev is not None else None,
                tolerance=tolerance, dtype=dtype, inputs=input_crcs)
    if n_a == n_b and scan.bytes_differing == 0:
        return DiagnoseResult(**base, findings=(), verdict=Verdict.IDENTICAL, explained_fraction=1.0)
    pad_bytes = int(scan.lane_diff[list(layout.pad_lanes)].sum()) if layout.pad_lanes else 0
    tile_bytes = _tile_padding_differing(dump_a, dump_b, layout) if n_a == n_b else 0
    if n_a == n_b and pad_bytes + tile_bytes == scan.bytes_differing:  # diff's rule: pad lanes, and the bytes
        lanes = ",".join(map(str, layout.pad_lanes))                    # after the layout's records, are not
        ignored = " and ".join(part for part in (f"pad lanes {lanes}" if pad_bytes else "",  # compared
                                               "the tile padding after the last record" if tile_bytes else "")
                             if part)
        return DiagnoseResult(**base, findings=(), verdict=Verdict.IDENTICAL, explained_fraction=1.0,
                              pad_only_bytes=pad_bytes + tile_bytes,
                              hint=f"{n(pad_bytes + tile_bytes)} bytes differ only in {ignored} (ignored)")
    if tolerance is not None and n_a == n_b and scan.max_code is not None and scan.max_code <= tolerance:
        unit = f"{dtype} element" if dtype else "byte"
        return DiagnoseResult(**base, findings=(), verdict=Verdict.WITHIN, explained_fraction=1.0,
                              pad_only_bytes=pad_bytes,
                              hint=f"every {unit} is within {tolerance} LSB of A's")

    src_a, src_b = DumpSource(dump_a), DumpSource(dump_b)
    prev_src = DumpSource(prev) if prev is not None else None
    try:
        spans, exact = blocks(n_b, n_a, scan)
        region = Region(src_a, src_b, spans, exact)
        fills = fills_of(scan, pats)
        ctx = Context(dump_a, dump_b, src_a, src_b, layout, scan, region, model_view=model_view,
                      previous_src=prev_src, max_shift=max_shift, fills=fills,
                      model=model, previous=prev.path if prev is not None else None,
                      pattern_names={bytes(p): name for name, p in pats}, dtype=dtype)
        cands = candidates(ctx)
        d_b = scan.bytes_differing + max(0, n_b - n_a)
        missing = max(0, n_a - n_b)
        d_total = d_b + missing
        d_s = int(np.count_nonzero(region.diff))
        scale = d_b / d_s if d_s else 0.0
        scored = [score(c, src_a, region, n_a, n_b) for c in shortlist(cands, src_a, src_b, region, n_a, n_b)]
        scored = prefer_exact(scored, region)
        if prev is not None and files_equal(dump_b, prev, chunk):
            # B is the previous run's buffer byte for byte: that is the story (stale, first); lines or pages
            # holding the previous run's bytes are part of it, not a cache to flush
            ctx.stale_whole = True
            scored = [c for c in scored if getattr(c.bug, "previous", None) is None or c.bug.kind == "stale"]
        chosen, union, missing_done = select(scored, d_total, scale, missing, chance(scan))
        chosen, union, missing_done = unrelated_cut(chosen, union, missing_done, region, scale, min(n_a, n_b))
        explained = float(np.count_nonzero(union)) * scale + (missing if missing_done else 0)
        findings: list[Finding] = []
        for c in scored:  # the previous run's bytes explain what another finding explains: say both
            if c.bug.kind == "stale" and c not in chosen and \
                    (float(np.count_nonzero(c.hits)) * scale >= 0.9 * d_b and d_b or ctx.stale_whole):
                chosen.append(c)
                if ctx.stale_whole:
                    union = c.hits.copy() if not union.size else union | c.hits
                    explained = float(np.count_nonzero(union)) * scale + (missing if missing_done else 0)
        for c in chosen:
            own = float(np.count_nonzero(c.hits)) * scale + (missing if c.missing else 0)
            made = kinds.get(c.bug.kind).finding(c, ctx, round(min(1.0, own / d_total), 6) if d_total else 0.0)
            for f in made:
                f.details.setdefault("evidence_bytes", c.evidence())
            findings += made
        residual_mask = region.diff & ~union if union.size else region.diff
        residual_bytes = float(np.count_nonzero(residual_mask)) * scale + (0 if missing_done else missing)
        if (n_a == n_b and residual_bytes >= max(64, 0.01 * n_b) and np.array_equal(scan.diff_hist_a, scan.diff_hist_b)):
            findings.append(residual_finding(ctx, residual_mask, round(residual_bytes / d_total, 6)))
            explained, residual_bytes = float(d_total), 0.0
            residual_mask = np.zeros_like(residual_mask)
        head = head_window(dump_a, dump_b, layout, scan, window)
        if head is not None:
            findings.append(head)
    finally:
        for s in (src_a, src_b, prev_src):
            if s is not None:
                s.close()
    fraction = round(min(1.0, explained / d_total), 6) if d_total else 1.0
    named = [f for f in findings if f.kind != "head_window"]
    common_left = float(np.count_nonzero(residual_mask & region.in_a)) * scale if residual_mask.size else 0.0
    common_ok = common_left <= (1 - EXPLAINED_SHARE) * max(1, scan.bytes_differing)
    if named and fraction >= EXPLAINED_SHARE and common_ok:
        verdict = Verdict.EXPLAINED
    elif named:
        verdict = Verdict.PARTLY_EXPLAINED
    else:
        verdict = Verdict.UNEXPLAINED
    residual = None
    if residual_bytes > 0:
        residual = {"bytes": int(round(residual_bytes)), "fraction": round(residual_bytes / d_total, 6),
                    **where(residual_mask, region, layout)}
        if missing and not missing_done:
            residual["missing_bytes"] = missing
    characterization, hint = None, ""
    if verdict != Verdict.EXPLAINED:
        characterization = _characterize(scan, layout, region, residual_mask, dump_a, dump_b, fills)
        drift = _drift(scan, region, residual_mask, characterization)
        if drift is not None:
            hint = (f"B differs from A by at most {drift} LSB in {n(scan.bytes_differing)} bytes spread over the "
                    "buffer, in no pattern a driver bug leaves: another input or another model version? "
                    + _inputs_text(input_crcs))
        elif characterization["cache_lines"]:
            hint = (f"the differences sit in {characterization['cache_lines']} separate 64-byte cache lines: "
                    "DMA into memory the CPU still caches (flush / invalidate the buffer after the transfer); "
                    "rerun with --previous PREVIOUS_B to see whether they hold the previous run's bytes")
        elif characterization["pages"]:
            hint = (f"the differences fill {characterization['pages']} whole 4 KiB page(s): pages the device did not "
                    "write this run (a scatter-gather / MDL entry missing or pointing elsewhere); rerun with "
                    "--previous PREVIOUS_B to see whether they hold the previous run's bytes")
        elif characterization["looks_like_another_inference"]:
            hint = ("B looks like a well-formed output of another inference (pad lanes intact, value histogram "
                    "like A's): a stale buffer or a different input. " + _inputs_text(input_crcs)
                    + ("" if prev is not None else " Rerun with --previous PREVIOUS_B"))
        elif not named and n_a != n_b and scan.bytes_differing > 0.5 * min(n_a, n_b):
            hint = (f"B ({n(n_b)} bytes) is not A ({n(n_a)} bytes) cut short or padded: most bytes both hold "
                    "differ. Check that the right buffer was copied (this output tensor, not another tensor or the "
                    f"input): forensics diff {dump_a.path} {dump_b.path}")
        else:
            hint = (f"look at the differing records: forensics diff {dump_a.path} {dump_b.path}")
    # The primary finding explains the most (ties: the engine's first choice).
    order = {id(f): i for i, f in enumerate(findings)}
    primary = min(named, key=lambda f: (-f.explains, order[id(f)])).kind if named else None
    if ctx.stale_whole:
        primary = "stale"
    findings.sort(key=lambda f: kinds.display_of(f.kind))
    return DiagnoseResult(**base, findings=tuple(findings), verdict=verdict, explained_fraction=fraction,
                          residual=residual, characterization=characterization, exact=exact, hint=hint,
                          primary=primary)

