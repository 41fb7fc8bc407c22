"""Record-by-record comparison of two dumps: verdict, CRCs, which records and lanes differ, and how.

Blocks that are byte-identical are skipped with one vectorised equality test; only differing blocks are
examined record by record, so a 1 GiB pair with a handful of differences costs about two reads and two CRCs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from forensics.compare.blocks import PARALLEL_MIN, stream_halves
from forensics.compare.crc import format_crc
from forensics.io.dump import Dump, DumpReader
from forensics.core.layout import RecordLayout
from forensics.core.parallel import two_cores
from forensics.compare.stats import ErrorAccumulator, ErrorStats, bit_view, element_dtype, feed_in_halves, locator
from forensics.core.tolerance import DIFFER, MATCH, WITHIN, Tolerance, judge
from forensics.core.verdict import Verdict

DEFAULT_LIMIT = 20


@dataclass(frozen=True)
class DifferingRecord:
    index: int   # record index within the compared region (the anchor index when the region starts at 0)
    offset: int  # absolute data offset of the record's first byte
    a: bytes
    b: bytes

    @property
    def xor(self) -> bytes:
        return bytes(x ^ y for x, y in zip(self.a, self.b))

    def to_dict(self, layout: RecordLayout | None = None) -> dict:
        out = {"index": self.index, "offset": self.offset, "a": self.a.hex(" "), "b": self.b.hex(" "),
               "xor": self.xor.hex(" ")}
        if layout is not None and layout.has_values:
            out["values_a"] = layout.values(self.a)
            out["values_b"] = layout.values(self.b)
        return out


@dataclass(frozen=True)
class DiffResult:
    path_a: str
    path_b: str
    size_a: int
    size_b: int
    crc32_a: int
    crc32_b: int
    layout: RecordLayout
    region_start: int
    records_compared: int
    records_differing: int
    bytes_differing: int
    first_differing_offset: int | None
    lane_differences: tuple[int, ...]  # per lane: records whose lane differs (as configured)
    lane_max_delta: tuple[int, ...]    # per lane: the largest |a - b| seen, in LSB
    records: tuple[DifferingRecord, ...]
    records_truncated: bool
    trailing_bytes: int                # bytes after the last whole record in the compared region
    trailing_differ: bool
    bytes_identical: bool
    tolerance: int = 0
    stats: ErrorStats | None = None    # over the data lanes of the whole records, as `dtype` elements
    policy: Tolerance | None = None    # the tolerance the verdict was judged by
    verdict: Verdict = DIFFER          # MATCH / WITHIN TOLERANCE / DIFFER: judged once, by diff_dumps
    dtype: str = "uint8"

    @property
    def sizes_equal(self) -> bool:
        return self.size_a == self.size_b

    @property
    def identical(self) -> bool:
        """Equal as configured: same size, no differing record (pad lanes and tolerance applied)."""
        return self.sizes_equal and self.records_differing == 0 and not self.trailing_differ

    def __bool__(self) -> bool:
        return self.identical

    @property
    def passed(self) -> bool:
        """MATCH or WITHIN TOLERANCE: what the exit code follows."""
        return self.verdict.passed

    def to_dict(self) -> dict:
        out = {
            "verdict": self.verdict,
            "identical": self.identical,
            "bytes_identical": self.bytes_identical,
            "path_a": self.path_a,
            "path_b": self.path_b,
            "size_a": self.size_a,
            "size_b": self.size_b,
            "crc32_a": format_crc(self.crc32_a),
            "crc32_b": format_crc(self.crc32_b),
            "record_size": self.layout.record_size,
            "offset": self.region_start,
            "pad_lanes": list(self.layout.pad_lanes),
            "tolerance": self.tolerance,
            "records_compared": self.records_compared,
            "records_differing": self.records_differing,
            "bytes_differing": self.bytes_differing,
            "first_differing_offset": self.first_differing_offset,
            "lanes": [{"lane": i, "name": name, "records_differing": n, "max_delta": d}
                      for i, (name, n, d) in enumerate(zip(self.layout.field_names, self.lane_differences,
                                                           self.lane_max_delta))],
            "trailing_bytes": self.trailing_bytes,
            "trailing_differ": self.trailing_differ,
            "records": [r.to_dict(self.layout) for r in self.records],
            "records_truncated": self.records_truncated,
        }
        if self.policy is not None:
            out["check"] = self.policy.to_dict()
        if self.stats is not None:
            out["dtype"] = self.dtype
            out["stats"] = self.stats.to_dict()
        return out


def _sum_reference(dump: Dump, lo: int, hi: int, acc: ErrorAccumulator, elements, record_size: int, *,
                   threads: int = 1) -> None:
    """Feed A's records in [lo, hi) to `acc` as the reference (`elements(view)` picks the data lanes); with
    `threads` 2 and a large range, the second half on another thread, merged after the first."""
    if lo is None or hi <= lo:
        return
    step = max(record_size, (8 << 20) // record_size * record_size)
    if threads > 1 and hi - lo >= PARALLEL_MIN and two_cores():
        feed_in_halves(acc, lo, hi, lambda part, a, b: _sum_reference(dump, a, b, part, elements, record_size),
                       align=record_size, name="forensics-reference")
        return
    with DumpReader(dump) as reader:
        for pos in range(lo, hi, step):
            window = reader.window(pos, min(pos + step, hi))
            try:
                acc.add_reference(elements(window.view))
            finally:
                window.release()


def _distinct_sorted(values: np.ndarray) -> np.ndarray:
    """np.unique of an already sorted array, in one linear pass instead of a sort."""
    if len(values) < 2:
        return values
    keep = np.empty(len(values), dtype=bool)
    keep[0] = True
    np.not_equal(values[1:], values[:-1], out=keep[1:])
    return values[keep]


def _words(table: np.ndarray) -> np.ndarray | None:
    """A C-contiguous [n, k] table of one-byte items as n integers of k bytes, when k is 1, 2, 4 or 8 (else
    None): numpy compares, gathers and reduces short rows of a 2-D array one item at a time."""
    k = table.shape[1]
    if k in (1, 2, 4, 8) and table.flags.c_contiguous:
        return table.reshape(-1).view(np.dtype(f"u{k}"))
    return None


def _differing_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Indices of the rows (records, uint8 [n, record_size]) whose bytes differ, in order."""
    words_a, words_b = _words(a), _words(b)
    if words_a is not None and words_b is not None:
        return np.flatnonzero(words_a != words_b)
    return _distinct_sorted(np.flatnonzero(a.reshape(-1) != b.reshape(-1)) // a.shape[1])


def _rows(table: np.ndarray, index: np.ndarray) -> np.ndarray:
    """table[index] of a uint8 [n, record_size] table."""
    words = _words(table)
    return table[index] if words is None else words[index].view(np.uint8).reshape(-1, table.shape[1])


def _any_per_row(mask: np.ndarray) -> np.ndarray:
    """mask.any(axis=1) of a bool [n, k]."""
    words = _words(mask)
    return mask.any(axis=1) if words is None else words != 0


def _merge_parts(parts: list[dict], limit: int | None) -> dict:
    """The parts' counts and findings as one pass in order would have them."""
    out = dict(parts[0])
    out["records"] = list(parts[0]["records"])
    for part in parts[1:]:
        out["bytes_identical"] = out["bytes_identical"] and part["bytes_identical"]
        out["records_differing"] += part["records_differing"]
        out["bytes_differing"] += part["bytes_differing"]
        out["first"] = out["first"] if out["first"] is not None else part["first"]
        out["lanes"] = out["lanes"] + part["lanes"]
        out["max_delta"] = np.maximum(out["max_delta"], part["max_delta"])
        out["records"].extend(part["records"])
        out["trailing_differ"] = out["trailing_differ"] or part["trailing_differ"]
        out["trailing_any"] = out["trailing_any"] or part["trailing_any"]
        out["data_any"] = out["data_any"] or part["data_any"]
    if limit is not None:
        del out["records"][limit:]
    return out


def diff_dumps(dump_a: Dump, dump_b: Dump, layout: RecordLayout, *, tolerance: int = 0,
               limit: int | None = DEFAULT_LIMIT, policy: Tolerance | None = None, dtype: str = "uint8",
               scale: float | None = None, zero_point: int | None = None, stats: bool = True,
               locate=None, progress=None, sample: bool | int = False) -> DiffResult:
    """Compare two dumps record by record over the layout's region of their common length.

    `tolerance` (LSB) filters which records count as differing, as it always has; `policy` (default: atol of
    `tolerance` LSB) judges the verdict from error statistics of the data lanes read as `dtype` elements
    (quantization from `scale`/`zero_point`, else the layout's), computed in the same pass. `locate` maps a
    flat element index to where it is (default: anchor and lane). `progress(done, total)` is called as blocks
    stream by. `sample`: the statistics also collect what a picture of the error needs (stats.sample), its
    map by record (True) or by `sample` elements (a tensor's last dimension: one cell per (y, x)).
    """
    if tolerance < 0:
        from forensics.core.errors import InputError

        raise InputError(f"tolerance must not be negative, got {tolerance}")
    policy = policy if policy is not None else Tolerance(atol=float(tolerance), lsb=True)
    np_dtype = element_dtype(dtype)
    k = np_dtype.itemsize
    if k == 1 and np_dtype.kind == "u" and policy.lsb_threshold() is not None and tolerance == 0:
        tolerance = policy.lsb_threshold()  # atol Klsb lists the records as --tolerance K always did
    common = min(dump_a.size, dump_b.size)
    region = layout.region(common, dump_a.path if dump_a.size <= dump_b.size else dump_b.path)
    rs = layout.record_size
    rec_lo, rec_hi = region.start, region.start + region.record_bytes
    keep = np.ones(rs, dtype=bool)
    keep[list(layout.pad_lanes)] = False
    acc = None
    if stats and rs % k == 0:
        per = rs // k
        data_el = np.array([e for e in range(per) if keep[e * k]], dtype=np.int64)
        all_data = data_el.size == per
        integer = np_dtype.kind in "iub"
        q_scale = scale if scale is not None else (layout.scale if k == 1 else None)
        q_zp = zero_point if zero_point is not None else (layout.zero_point if q_scale is not None else 0)
        acc = ErrorAccumulator(integer=integer, scale=q_scale if integer else None, zero_point=q_zp or 0,
                               atol=policy.atol_units(integer=integer, scale=q_scale), rtol=policy.rtol,
                               check=policy.check, lanes=per, itemsize=k,
                               sample=_sample_shape(sample, region.records, per, data_el.size))
        is_data = np.zeros(per, dtype=bool)
        is_data[data_el] = True

        def data_elements(view):
            records = np.frombuffer(view, np_dtype).reshape(-1, per)
            return records if all_data else records[:, data_el]

    parts: list[dict] = []

    def make_part(_index: int):
        """The consumer of one half of the blocks (stream_halves): its own counts, records and statistics."""
        state = {
            "bytes_identical": True,
            "records_differing": 0,
            "bytes_differing": 0,
            "first": None,
            "lanes": np.zeros(rs, dtype=np.int64),
            "max_delta": np.zeros(rs, dtype=np.int64),
            "records": [],
            "trailing_differ": False,
            "trailing_any": False,
            "data_any": False,
            "rec_from": None,  # where this part's whole records begin and end
            "rec_to": None,
            "ref_from": None,  # where this part's first difference is (the reference is summed from its start)
            "acc": acc.fresh() if acc is not None else None,
        }
        parts.append(state)
        part_acc = state["acc"]

        def feed_stats(a_all, a, b, r_lo: int, candidates, differ=None) -> None:
            """Error statistics of this block's whole records (`a_all`, A's side), as dtype elements of the data
            lanes; `a`, `b` are the records at `candidates`, those holding a differing byte (None: all of them).
            `differ`: which data bytes of `a`, `b` differ, when already known (one-byte elements)."""
            if state["ref_from"] is None:  # the part's first difference: its equal records before it count too
                state["ref_from"] = r_lo
                _sum_reference(dump_a, state["rec_from"], r_lo, part_acc, data_elements, rs)
            part_acc.add_reference(data_elements(a_all))
            a_el = a.view(np_dtype).reshape(-1)
            b_el = b.view(np_dtype).reshape(-1)
            if differ is None:
                differ = bit_view(a_el) != bit_view(b_el)
                if not all_data:
                    differ &= np.resize(is_data, differ.size)
            flat = np.flatnonzero(differ)
            if flat.size:
                base = (r_lo - rec_lo) // k

                def index_of(i):  # only the worst element's is asked for
                    row, lane = divmod(int(flat[i]), per)
                    return base + (row if candidates is None else int(candidates[row])) * per + lane

                lanes = flat & (per - 1) if per & (per - 1) == 0 else flat % per
                positions = None
                if part_acc.sample is not None:  # where each pair is, for the error picture's map
                    rows = flat // per
                    positions = base + (rows if candidates is None else candidates[rows]) * per + lanes
                part_acc.add_differing(a_el[flat], b_el[flat], index_of, lane=lanes, positions=positions)

        def consume(lo: int, va: memoryview, vb: memoryview, positions) -> None:
            hi = lo + len(va)
            # Whole records of the region inside this block (blocks are record-aligned from region.start).
            r_lo, r_hi = max(lo, rec_lo), min(hi, rec_hi)
            if state["rec_from"] is None:
                state["rec_from"] = min(r_lo, rec_hi)
            state["rec_to"] = max(r_hi, state["rec_from"])
            if positions is not None and positions.size == 0:
                if part_acc is not None and state["ref_from"] is not None and r_lo < r_hi:
                    part_acc.add_reference(data_elements(va[r_lo - lo:r_hi - lo]))
                return
            state["bytes_identical"] = False
            if r_lo < r_hi:
                a_all = np.frombuffer(va[r_lo - lo:r_hi - lo], np.uint8).reshape(-1, rs)
                b_all = np.frombuffer(vb[r_lo - lo:r_hi - lo], np.uint8).reshape(-1, rs)
                if positions is None:  # many differing words: find the differing records directly
                    candidates = _differing_rows(a_all, b_all)
                    if len(candidates) > len(a_all) // 4:  # most of them: examine every record
                        candidates = None
                else:  # sparse: only the records that hold a differing byte
                    inside = positions[(positions >= r_lo - lo) & (positions < r_hi - lo)]
                    candidates = _distinct_sorted((inside - (r_lo - lo)) // rs)
                a, b = (a_all, b_all) if candidates is None else (_rows(a_all, candidates), _rows(b_all, candidates))
                delta = np.abs(a.astype(np.int16) - b.astype(np.int16))
                mask = (delta > tolerance) & keep
                if part_acc is not None:  # without a tolerance, `mask` is which data bytes differ
                    feed_stats(a_all, a, b, r_lo, candidates, mask if k == 1 and not tolerance else None)
                if tolerance and not state["data_any"]:  # a data byte differs at all (within tolerance or not)
                    state["data_any"] = bool(((delta > 0) & keep).any())
                hit = np.flatnonzero(_any_per_row(mask))
                if hit.size:
                    state["data_any"] = True
                    rows = hit if candidates is None else candidates[hit]
                    if hit.size < len(mask):
                        mask, delta = mask[hit], delta[hit]
                    first_index = (r_lo - rec_lo) // rs
                    state["records_differing"] += int(rows.size)
                    state["bytes_differing"] += int(np.count_nonzero(mask))
                    masked = delta * mask
                    if rs <= 16:  # one column at a time: numpy reduces a [n, few] array over its long axis slowly
                        for lane in np.flatnonzero(keep):
                            state["lanes"][lane] += np.count_nonzero(mask[:, lane])
                            state["max_delta"][lane] = max(state["max_delta"][lane], masked[:, lane].max())
                    else:  # wide records (a float32 [N, 91] tensor's 364 bytes): one reduction per block
                        state["lanes"] += np.count_nonzero(mask, axis=0)
                        np.maximum(state["max_delta"], masked.max(axis=0), out=state["max_delta"])
                    if state["first"] is None:
                        state["first"] = r_lo + int(rows[0]) * rs + int(np.flatnonzero(mask[0])[0])
                    room = len(rows) if limit is None else max(0, limit - len(state["records"]))
                    for row in rows[:room]:
                        row = int(row)
                        state["records"].append(DifferingRecord(
                            index=first_index + row, offset=r_lo + row * rs,
                            a=a_all[row].tobytes(), b=b_all[row].tobytes()))
            # The partial record after the last whole one: compared byte for byte.
            t_lo, t_hi = max(lo, rec_hi), min(hi, region.stop)
            if t_lo < t_hi:
                ta = np.frombuffer(va[t_lo - lo:t_hi - lo], np.uint8)
                tb = np.frombuffer(vb[t_lo - lo:t_hi - lo], np.uint8)
                tdelta = np.abs(ta.astype(np.int16) - tb.astype(np.int16))
                state["trailing_any"] = state["trailing_any"] or bool(tdelta.any())
                tmask = tdelta > tolerance
                if tmask.any():
                    state["trailing_differ"] = True
                    state["bytes_differing"] += int(np.count_nonzero(tmask))
                    if state["first"] is None:
                        state["first"] = t_lo + int(np.flatnonzero(tmask)[0])

        return consume

    crc_a, crc_b = stream_halves(dump_a, dump_b, region.start, rs, make_part, progress=progress)
    state = _merge_parts(parts, limit)
    state["bytes_identical"] = state["bytes_identical"] and dump_a.size == dump_b.size
    result_stats = None
    if acc is not None:
        if any(part["acc"].differing for part in parts):
            for part in parts:
                if part["ref_from"] is None and part["rec_from"] is not None:  # no difference here: sum it all
                    _sum_reference(dump_a, part["rec_from"], part["rec_to"], part["acc"], data_elements, rs,
                                   threads=2)
                acc.merge(part["acc"])
        else:
            acc.n = region.records * data_el.size  # equal everywhere: only the count matters
        if locate is None:
            names = layout.field_names
            where_lane = locator(record_size=per, lane_names=names if k == 1 else None)

            def locate(index, _where=where_lane):
                return {**_where(index), "offset": region.start + index * k}
        result_stats = acc.finish(locate)
    first = state["first"]
    if first is None and dump_a.size != dump_b.size:
        first = common  # the prefix is equal: the files part where the shorter one ends
    truncated = limit is not None and state["records_differing"] > len(state["records"])
    return DiffResult(
        path_a=dump_a.path, path_b=dump_b.path, size_a=dump_a.size, size_b=dump_b.size,
        crc32_a=crc_a, crc32_b=crc_b, layout=layout, region_start=region.start,
        records_compared=region.records, records_differing=state["records_differing"],
        bytes_differing=state["bytes_differing"], first_differing_offset=first,
        lane_differences=tuple(int(x) for x in state["lanes"]),
        lane_max_delta=tuple(int(x) for x in state["max_delta"]),
        records=tuple(state["records"]), records_truncated=truncated,
        trailing_bytes=region.trailing, trailing_differ=state["trailing_differ"],
        bytes_identical=state["bytes_identical"], tolerance=tolerance,
        stats=result_stats, policy=policy, dtype=np_dtype.name,
        verdict=_verdict(dump_a.size == dump_b.size, state, result_stats, policy, acc),
    )


def _sample_shape(sample, records: int, per: int, data: int):
    """ErrorAccumulator's `sample`: (map records, elements per map record, data elements), or None."""
    if not sample:
        return None
    map_per = per if sample is True or (records * per) % int(sample) else int(sample)
    return records * per // map_per, map_per, records * data


def _verdict(sizes_equal: bool, state: dict, stats, policy: Tolerance, acc) -> Verdict:
    if not sizes_equal or state["trailing_differ"]:
        return DIFFER
    if stats is None:  # judged on whole LSB: equal, or every difference within the tolerance
        if state["records_differing"]:
            return DIFFER
        return WITHIN if state["data_any"] or state["trailing_any"] else MATCH
    equal = stats.differing == 0 and not state["trailing_any"]
    return judge(equal=equal, stats=stats, tol=policy, atol_units=acc.atol)
