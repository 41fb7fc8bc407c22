"""Why B's CPU tail differs: replay DEQUANTIZE and TFLite_Detection_PostProcess from B's own upstream stage and
find the one change that makes B's downstream stage, bit for bit.

The CPU tail of an SSD runs on the host, not on the device: its stages (tensor -> dequantized -> detections)
differ because of what the host computed, never because of a DMA. So each downstream stage of run B is
recomputed from B's own upstream stage with the model's constants (forensics.decode.ssd is bit-exact with the
kernel as ai-edge-litert runs it; DEQUANTIZE as forensics.core.layout.dequantize) and then, when that is not B's
stage, with one change at a time until one is:

- dequantized (from B's tensor): another runtime's rounding of `(q - zero_point) x scale` (harmless, within 1
  ulp: docs/pitfalls.md); each output dequantized with the other's scale and zero point; one output's scale
  and / or zero point other than the model's (solved from B's codes and values, then checked on every element);
- detections (from B's dequantized, else DEQUANTIZE of B's tensor): one PostProcess option other than the
  model's (max_detections and max_classes_per_detection from B's row count, use_regular_nms, nms_iou_threshold
  and nms_score_threshold on a grid of 0.05 and the values B's scores and rows point at, max_detections and
  detections_per_class from B's counts, y/x/h/w_scale on a grid and solved from B's top box); the model's
  anchors in another order or form; and when B's top detection has the class and score the model gives it but
  another box that no scale explains, anchors that are not the model's.

The search is bounded: at most `max_replays` replays of the kernel (each a few milliseconds on an SSD's 1917
anchors with fast NMS), in that fixed order; a match is refined only to state the range of values that give the
same rows. Two changes at once are not searched: then the answer is `unexplained`, with how far the model's own
options come. Results are facts (kind, stage, option, both values, counts); `describe` words them, once.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from forensics.core.errors import InputError
from forensics.core.layout import dequantize as dequantize_as
from forensics.decode.deps import DecodeDeps
from forensics.decode.ssd import PostProcessOptions, Quantization, postprocess

# What an explanation of one stage found (Explanation.kind).
SAME = "same"  # B's stage is A's: nothing to explain
FOLLOWS = "follows"  # B's stage is what the model's tail makes of B's own upstream: the cause is upstream
OPTION = "option"  # one PostProcess option other than the model's
ANCHORS = "anchors"  # decoded with anchors other than the model's (another order or form, or others)
DEQUANTIZE_SWAPPED = "dequantize_swapped"  # an output dequantized with the other output's scale and zero point
DEQUANTIZE_PARAMETER = "dequantize_parameter"  # an output dequantized with another scale and / or zero point
ROUNDING = "rounding"  # another runtime's dequantize rounding: within 1 ulp, harmless
UNEXPLAINED = "unexplained"  # none of the changes searched makes B's stage
INCOMPLETE = "incomplete"  # B lacks the stage, or the upstream stage to replay it from
KINDS = (SAME, FOLLOWS, OPTION, ANCHORS, DEQUANTIZE_SWAPPED, DEQUANTIZE_PARAMETER, ROUNDING, UNEXPLAINED, INCOMPLETE)

MAX_REPLAYS = 300
GRID = tuple(round(0.05 * i, 2) for i in range(1, 20))  # 0.05 ... 0.95 for the two thresholds
SCALE_GRID = (1.0, 2.0, 5.0, 10.0, 20.0)
COUNT_GRID = (1, 2, 3, 5, 10, 20, 25, 50, 100)
# The model's anchors (ycenter, xcenter, h, w) as a tail that reads them wrongly would hold them.
ANCHOR_VARIANTS = (("x, y, w, h order", (1, 0, 3, 2)), ("h, w, y, x order", (2, 3, 0, 1)),
                   ("corner form (ymin, xmin, ymax, xmax)", None))


@dataclass(frozen=True)
class Detections:
    """The four TFLite_Detection_PostProcess outputs of one run: boxes [R, 4], classes [R], scores [R] (float32)
    and num_detections. Only the rows the kernel wrote are compared (past them LiteRT leaves memory as it was)."""

    boxes: np.ndarray
    classes: np.ndarray
    scores: np.ndarray
    num_detections: float

    @classmethod
    def of(cls, boxes, classes, scores, num_detections) -> "Detections":
        boxes = np.asarray(boxes, np.float32).reshape(-1, 4)
        classes = np.asarray(classes, np.float32).reshape(-1)
        scores = np.asarray(scores, np.float32).reshape(-1)
        num = float(np.asarray(num_detections, np.float32).reshape(-1)[0])
        if not (classes.size == scores.size == boxes.shape[0]):
            raise InputError(f"detection outputs disagree on their rows: boxes {boxes.shape[0]}, classes "
                             f"{classes.size}, scores {scores.size}")
        return cls(boxes, classes, scores, num)

    @property
    def rows(self) -> int:
        return int(self.classes.size)

    def written(self, options: PostProcessOptions) -> int:
        """Rows the kernel writes under `options`: num_detections (x max_classes_per_detection with fast NMS,
        where it counts anchors), at most the rows there are."""
        num = self.num_detections
        if not (math.isfinite(num) and num >= 0):
            return 0
        per = 1 if options.use_regular_nms else options.max_classes_per_detection
        return min(int(num) * per, self.rows)


@dataclass(frozen=True)
class TailArrays:
    """One run's CPU tail: the tensor stage (uint8 box encodings [N, 4] and scores [N, C], e.g. Squeeze1 and
    convert_scores), the dequantized stage (their float32 values) and the detections; None where the run has
    no such buffer."""

    boxes: np.ndarray | None = None
    scores: np.ndarray | None = None
    boxes_dequantized: np.ndarray | None = None
    scores_dequantized: np.ndarray | None = None
    detections: Detections | None = None

    def rows(self, columns: int) -> "TailArrays":
        """The same arrays as the kernel reads them: box encodings [N, 4], scores [N, columns] (a run may hold
        them as [1, N, 4] or flat)."""
        def shaped(array, width):
            if array is None:
                return None
            array = np.asarray(array)
            return array.reshape(-1, width) if array.size % width == 0 else array

        return dataclasses.replace(self, boxes=shaped(self.boxes, 4), scores=shaped(self.scores, columns),
                                   boxes_dequantized=shaped(self.boxes_dequantized, 4),
                                   scores_dequantized=shaped(self.scores_dequantized, columns))

    @property
    def tensor(self) -> tuple | None:
        return None if self.boxes is None or self.scores is None else (self.boxes, self.scores)

    @property
    def dequantized(self) -> tuple | None:
        if self.boxes_dequantized is None or self.scores_dequantized is None:
            return None
        return self.boxes_dequantized, self.scores_dequantized


@dataclass(frozen=True)
class Explanation:
    """What explains B's `stage` (dequantized or detections), replayed from B's `upstream` stage."""

    stage: str
    kind: str
    upstream: str | None = None  # "tensor" / "dequantized": what B's stage was replayed from
    tensor: str | None = None  # the output a dequantize explanation is about (None: both)
    option: str | None = None  # the PostProcess option, "anchors", or "scale" / "zero_point" / "scale and zero_point"
    value_a: object = None  # the model's (A's) value
    value_b: object = None  # the value that makes B's stage
    value_range: tuple | None = None  # (low, high): every value in it gives the same stage
    harmless: bool = False
    evidence: dict = field(default_factory=dict)  # counts: rows / elements compared, equal, under the model
    replays: int = 0  # kernel replays the search ran (at most MAX_REPLAYS)
    searched: tuple[str, ...] = ()  # the options and hypotheses tried, in order
    sentence: str = ""

    def to_dict(self) -> dict:
        return {"stage": self.stage, "kind": self.kind, "upstream": self.upstream, "tensor": self.tensor,
                "option": self.option, "value_a": _jsonable(self.value_a), "value_b": _jsonable(self.value_b),
                "value_range": [_jsonable(v) for v in self.value_range] if self.value_range else None,
                "harmless": self.harmless, "evidence": {k: _jsonable(v) for k, v in self.evidence.items()},
                "replays": self.replays, "searched": list(self.searched),
                "sentence": self.sentence}


@dataclass(frozen=True)
class TailExplanation:
    """The explanation of each downstream stage of B's CPU tail (None where neither run has the stage)."""

    dequantized: Explanation | None
    detections: Explanation | None

    @property
    def stages(self) -> tuple[Explanation, ...]:
        return tuple(e for e in (self.dequantized, self.detections) if e is not None)

    def of(self, stage: str) -> Explanation | None:
        return {"dequantized": self.dequantized, "detections": self.detections}.get(stage)

    @property
    def cause(self) -> Explanation | None:
        """The first stage whose difference starts in the tail itself (not one that follows from upstream)."""
        for e in self.stages:
            if e.kind not in (SAME, FOLLOWS, INCOMPLETE):
                return e
        return None

    # kept: the cause is written as its stage name, not the Explanation it is
    def to_dict(self) -> dict:
        return {"dequantized": self.dequantized.to_dict() if self.dequantized else None,
                "detections": self.detections.to_dict() if self.detections else None,
                "cause": self.cause.stage if self.cause else None}


def _jsonable(value):
    if isinstance(value, (np.floating, float)):
        return float(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    return value


# --- wording (the one place) ------------------------------------------------------------------------------

def shown(value) -> str:
    """A value as a reader writes it: the shortest decimal of a float32 (0.6, not 0.6000000238418579)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (float, np.floating)):
        return np.format_float_positional(np.float32(value), trim="-")
    return str(value)


_UPSTREAM = {"dequantized": "B's dequantized", "tensor": "DEQUANTIZE(B's tensor)"}


def describe(e: Explanation) -> str:
    """The one sentence of an explanation."""
    src = _UPSTREAM.get(e.upstream or "", "B's upstream")
    n = e.evidence
    if e.kind == INCOMPLETE:
        return f"B's {e.stage} cannot be replayed: {n.get('missing', 'a stage')} is not in run B"
    if e.kind == SAME:
        return f"B's {e.stage} is A's"
    if e.stage == "dequantized":
        if e.kind == FOLLOWS:
            return ("B's dequantized is DEQUANTIZE(B's tensor) with this model's scales and zero points: expected, "
                    "it follows from tensor")
        if e.kind == ROUNDING:
            return (f"B's dequantized is DEQUANTIZE(B's tensor) in another runtime's rounding ({n.get('rounded', 0):,} "
                    "elements within 1 ulp of (q - zero_point) x scale): harmless")
        if e.kind == DEQUANTIZE_SWAPPED:
            if e.tensor is None:
                return "each output dequantized with the other's scale and zero point"
            return f"{e.tensor} dequantized with {e.value_b}'s scale and zero point"
        if e.kind == DEQUANTIZE_PARAMETER:
            return f"{e.tensor} dequantized with {e.option} {_pair(e.value_b)} instead of {_pair(e.value_a)}"
        return (f"nothing forensics knows explains B's dequantized: {n.get('equal', 0):,} of {n.get('elements', 0):,} "
                "elements are DEQUANTIZE(B's tensor) with this model's parameters, and no other rounding, swapped or "
                "solved scale and zero point makes the rest")
    if e.kind == FOLLOWS:
        return f"B's detections are PostProcess({src}) with this model's options: expected, they follow from {e.upstream}"
    if e.kind == OPTION:
        if e.option == "use_regular_nms":
            nms = "regular NMS instead of fast NMS" if e.value_b else "fast NMS instead of regular NMS"
            text = f"B = PostProcess({src}) with {nms}"
        else:
            text = f"B = PostProcess({src}) with {e.option} {shown(e.value_b)} instead of {shown(e.value_a)}"
        if e.option == "nms_score_threshold" and e.value_range:  # exact: the scores on either side of it
            low, high = e.value_range
            return (f"B = PostProcess({src}) with nms_score_threshold above {shown(low)} and at most {shown(high)} "
                    f"(e.g. {shown(e.value_b)}) instead of {shown(e.value_a)}")
        if e.value_range and e.value_range[0] != e.value_range[1]:
            text += (f" (every value tried from {shown(e.value_range[0])} to {shown(e.value_range[1])} gives these "
                     "rows)")
        return text
    if e.kind == ANCHORS:
        if e.value_b:
            return f"B = PostProcess({src}) with this model's anchors in {e.value_b}"
        text = f"B = PostProcess({src}) decoded with anchors that are not this model's"
        if "needed_anchor" in n:
            text += (f": its top detection (anchor {n['anchor']}) has the model's class and score but a box that "
                     f"needs anchor {_anchor(n['needed_anchor'])} where the model has {_anchor(n['model_anchor'])}")
        return text
    if e.kind == DEQUANTIZE_SWAPPED:
        return "B = PostProcess of B's tensor with each output dequantized with the other's scale and zero point"
    if e.kind == ROUNDING:
        return ("B = PostProcess of B's tensor dequantized in another runtime's rounding (one rounding of "
                "(q - zero_point) x scale, where LiteRT rounds twice in blocks of 8): harmless")
    text = (f"nothing forensics knows explains B's detections: PostProcess({src}) with this model's options makes "
            f"{n.get('equal_rows', 0)} of {n.get('rows', 0)} of B's rows, and none of {e.replays} single changes "
            "(PostProcess options, anchors) makes them all")
    if n.get("stopped"):
        text += f" (the search stopped at its bound of {e.replays} replays)"
    return text


def _anchor(values) -> str:
    return "(" + ", ".join(f"{v:.4g}" for v in values) + ")"


def _pair(value) -> str:
    if isinstance(value, tuple):
        return f"{shown(value[0])} / {value[1]}"
    return shown(value)


def _done(e: Explanation) -> Explanation:
    return dataclasses.replace(e, sentence=describe(e))


# --- the dequantized stage --------------------------------------------------------------------------------

def _equal(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Element-wise bit equality of two float32 arrays (NaN equals NaN of the same bits)."""
    return np.asarray(x, np.float32).view(np.uint32) == np.asarray(y, np.float32).view(np.uint32)


def _within_ulp(values: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """Whether each float32 value is within 1 ulp of the float64 exact value."""
    v = np.asarray(values, np.float32)
    nearest = exact.astype(np.float32)
    return (v == nearest) | (v == np.nextafter(nearest, np.float32(np.inf))) | (
        v == np.nextafter(nearest, np.float32(-np.inf)))


def _follows_quant(q, v, quant: Quantization) -> str | None:
    """"litert" / "reference" when v is DEQUANTIZE(q) in that rounding; "ulp" when every element is within 1 ulp
    of (q - zero_point) x scale; None otherwise."""
    if v.shape != q.shape:
        return None
    for rounding in ("litert", "reference"):
        if _equal(dequantize_as(q, quant.scale, quant.zero_point, rounding), v).all():
            return rounding
    if _within_ulp(v, dequantize_as(q, quant.scale, quant.zero_point, "exact")).all():
        return "ulp"
    return None


def _solve_quant(q: np.ndarray, v: np.ndarray) -> Quantization | None:
    """The scale and zero point that dequantize q to v (every element within 1 ulp), solved from the two codes
    farthest apart and checked on all; None when there is none (or q holds fewer than two codes)."""
    q = q.reshape(-1)
    v = np.asarray(v, np.float32).reshape(-1)
    if q.size == 0 or v.size != q.size or not np.isfinite(v).all():
        return None
    lo, hi = int(np.argmin(q)), int(np.argmax(q))
    if q[lo] == q[hi]:
        return None
    scale = (float(v[hi]) - float(v[lo])) / (int(q[hi]) - int(q[lo]))
    if not (scale > 0 and math.isfinite(scale)):
        return None
    zero_point = int(round(int(q[lo]) - float(v[lo]) / scale))
    base = np.float32(scale)
    for step in (0, 1, -1, 2, -2):  # the float32 scale nearest the estimate, or a neighbour
        s = base
        for _ in range(abs(step)):
            s = np.nextafter(s, np.float32(np.inf if step > 0 else -np.inf))
        if not s > 0:
            continue
        quant = Quantization(float(s), zero_point)
        if _follows_quant(q, v, quant) is not None:
            return quant
    return None


def explain_dequantized(deps: DecodeDeps, a: TailArrays, b: TailArrays) -> Explanation | None:
    """What makes B's dequantized stage from B's tensor (None when neither run has a dequantized stage)."""
    stage = "dequantized"
    if b.dequantized is None:
        return None if a.dequantized is None else _done(Explanation(stage, INCOMPLETE, evidence={"missing": stage}))
    if a.dequantized is not None and all(x.shape == y.shape and _equal(x, y).all()
                                         for x, y in zip(a.dequantized, b.dequantized)):
        return _done(Explanation(stage, SAME))
    if b.tensor is None:
        return _done(Explanation(stage, INCOMPLETE, evidence={"missing": "tensor"}))
    names = (deps.boxes.name or "boxes", deps.scores.name or "scores")
    quants = (deps.boxes.quant, deps.scores.quant)
    if None in quants:
        return _done(Explanation(stage, INCOMPLETE, upstream="tensor", evidence={"missing": "the quantization"}))
    pairs = [(np.asarray(q), np.asarray(v, np.float32)) for q, v in zip(b.tensor, b.dequantized)]
    elements = sum(v.size for _, v in pairs)
    equal = sum(int(_equal(dequantize_as(q, quant.scale, quant.zero_point, "litert"), v).sum())
                if q.shape == v.shape else 0 for (q, v), quant in zip(pairs, quants))
    evidence = {"elements": elements, "equal": equal}
    searched = ["model", "rounding", "swapped", "solved"]
    how = [_follows_quant(q, v, quant) for (q, v), quant in zip(pairs, quants)]
    if all(h == "litert" for h in how):
        return _done(Explanation(stage, FOLLOWS, upstream="tensor", evidence=evidence, searched=("model",)))
    if all(h is not None for h in how):
        rounded = elements - equal
        return _done(Explanation(stage, ROUNDING, upstream="tensor", harmless=True,
                                 evidence={**evidence, "rounded": rounded}, searched=tuple(searched[:2])))
    swapped = [_follows_quant(q, v, other) is not None for (q, v), other in zip(pairs, reversed(quants))]
    if all(swapped):
        return _done(Explanation(stage, DEQUANTIZE_SWAPPED, upstream="tensor", option="scale and zero_point",
                                 evidence=evidence, searched=tuple(searched[:3])))
    for i, ((q, v), quant) in enumerate(zip(pairs, quants)):
        if how[i] is not None:
            continue
        if swapped[i]:
            return _done(Explanation(stage, DEQUANTIZE_SWAPPED, upstream="tensor", tensor=names[i],
                                     value_b=names[1 - i], evidence=evidence, searched=tuple(searched[:3])))
        solved = _solve_quant(q, v) if q.shape == v.shape else None
        if solved is not None:
            same_scale = solved.scale == quant.scale
            same_zp = solved.zero_point == quant.zero_point
            if same_scale and not same_zp:
                option, value_a, value_b = "zero_point", quant.zero_point, solved.zero_point
            elif same_zp and not same_scale:
                option, value_a, value_b = "scale", quant.scale, solved.scale
            else:
                option = "scale and zero_point"
                value_a, value_b = (quant.scale, quant.zero_point), (solved.scale, solved.zero_point)
            return _done(Explanation(stage, DEQUANTIZE_PARAMETER, upstream="tensor", tensor=names[i], option=option,
                                     value_a=value_a, value_b=value_b, evidence=evidence, searched=tuple(searched)))
    return _done(Explanation(stage, UNEXPLAINED, upstream="tensor", evidence=evidence, searched=tuple(searched)))


# --- the detections stage ---------------------------------------------------------------------------------

class _Replayer:
    """The kernel replayed on B's inputs under changed options or anchors, at most `budget` times, each result
    compared with B's detections row by row (class, score and box bit for bit, over the rows both wrote)."""

    def __init__(self, boxes, scores, deps: DecodeDeps, target: Detections, budget: int, kernel: dict):
        self.boxes, self.scores, self.deps, self.target = boxes, scores, deps, target
        self.budget, self.kernel = budget, kernel
        self.replays = 0
        self.searched: list[str] = []

    @property
    def exhausted(self) -> bool:
        return self.replays >= self.budget

    def run(self, options: PostProcessOptions, anchors=None, kernel: dict | None = None):
        """(DecodeResult, equal rows, rows compared, same) or None when the budget is spent or the kernel
        rejects these options and inputs. `kernel`: other dequantize keywords for uint8 inputs."""
        if self.exhausted:
            return None
        self.replays += 1
        try:
            result = postprocess(self.boxes, self.scores, self.deps.anchors if anchors is None else anchors, options,
                                 **{**self.kernel, **(kernel or {})})
        except InputError:
            return None
        boxes, classes, scores, num, _ = result.output_tensors()
        got = Detections(boxes, classes, scores, float(num[0]))
        n_got, n_b = got.written(options), self.target.written(options)
        rows = min(n_got, n_b)
        t = self.target
        same_box = _equal(got.boxes[:rows], t.boxes[:rows]).all(axis=1) & _equal(got.scores[:rows], t.scores[:rows])
        equal = same_box & _equal(got.classes[:rows], t.classes[:rows])
        if not options.use_regular_nms and options.max_classes_per_detection > 1 and not equal.all():
            equal |= same_box & self._tied_class(result, t, rows)
        same = n_got == n_b and got.num_detections == t.num_detections and bool(equal.all())
        return result, int(equal.sum()), max(n_got, n_b), same

    def _tied_class(self, result, t: Detections, rows: int) -> np.ndarray:
        """Rows whose class is another with the very same score at that anchor: fast NMS ranks an anchor's
        classes with std::partial_sort, whose order among equal scores is the C++ library's, not ours."""
        out = np.zeros(rows, bool)
        scores = scores_of(self)
        for det in result.detections:
            if det.row < rows:
                c = int(t.classes[det.row])
                out[det.row] = 0 <= c < scores.shape[1] and _equal(scores[det.anchor, c], np.float32(det.score))
        return out
    def matches(self, options, anchors=None, kernel: dict | None = None) -> bool:
        out = self.run(options, anchors, kernel)
        return out is not None and out[3]


def _kernel_inputs(deps: DecodeDeps, b: TailArrays):
    """(boxes, scores, kernel keywords, upstream) of B's replay: B's dequantized as the kernel received it, else
    B's tensor dequantized as the model's DEQUANTIZE (ai-edge-litert's rounding)."""
    if deps.boxes_into_kernel and b.boxes is not None:  # uint8 boxes straight into the kernel
        scores = b.scores_dequantized if b.scores_dequantized is not None else b.scores
        if scores is None:
            return None
        upstream = "dequantized" if b.scores_dequantized is not None else "tensor"
        return (np.asarray(b.boxes, np.uint8).reshape(-1, 4), _columns(scores), dict(
            boxes_quant=deps.boxes.quant, scores_quant=deps.scores.quant, rounding="litert",
            boxes_into_kernel=True), upstream)
    if b.dequantized is not None:
        return (np.asarray(b.boxes_dequantized, np.float32).reshape(-1, deps.box_columns),
                _columns(np.asarray(b.scores_dequantized, np.float32)), {}, "dequantized")
    if b.tensor is not None and deps.boxes.quant and deps.scores.quant:
        return (np.asarray(b.boxes, np.uint8).reshape(-1, deps.box_columns), _columns(b.scores),
                dict(boxes_quant=deps.boxes.quant, scores_quant=deps.scores.quant, rounding="litert"), "tensor")
    return None


def _columns(scores) -> np.ndarray:
    scores = np.asarray(scores)
    return scores.reshape(-1, scores.shape[-1]) if scores.ndim >= 2 else scores.reshape(1, -1)


def _digits(value) -> int:
    """Significant digits of the shortest decimal of a float32 (0.5: 1, 0.45: 2)."""
    text = np.format_float_positional(np.float32(value), trim="-").lstrip("-0.")
    return len(text.replace(".", ""))


def _simplest(values, reference: float):
    """The value a person would have typed: fewest significant digits, then nearest the model's."""
    return min(values, key=lambda v: (_digits(v), abs(v - reference)))


def _float_option(rep: _Replayer, options, key: str, candidates, *, refine: float | None = None):
    """The values of option `key` among `candidates` (then refined by `refine` steps around the simplest) that
    make B's rows: (chosen value, (low, high)) or None."""
    model = float(getattr(options, key))
    rep.searched.append(key)

    def fits(value) -> bool:
        if np.float32(value) == np.float32(model):
            return False
        try:
            changed = dataclasses.replace(options, **{key: value})
        except InputError:  # the kernel rejects it (a threshold out of (0, 1])
            return False
        return rep.matches(changed)

    tried = {float(v): fits(v) for v in dict.fromkeys(float(c) for c in candidates)}
    found = [v for v, ok in tried.items() if ok]
    if not found:
        return None
    chosen = _simplest(found, model)
    values = sorted(tried)  # the range: the candidates next to the chosen one that fit too, then finer steps
    at = values.index(chosen)
    lo = hi = at
    while lo > 0 and tried[values[lo - 1]]:
        lo -= 1
    while hi + 1 < len(values) and tried[values[hi + 1]]:
        hi += 1
    low, high = values[lo], values[hi]
    if refine:
        for direction in (-1, 1):
            value = low if direction < 0 else high
            for _ in range(4):
                value = round(value + direction * refine, 6)
                if not fits(value):
                    break
                low, high = min(low, value), max(high, value)
    return chosen, (low, high)


def _score_candidates(scores: np.ndarray, target: Detections, options) -> list[float]:
    """Thresholds worth trying: the 0.05 grid and B's lowest detection score, none above it (the kernel writes
    no score below its threshold), one per set of scores passed (two thresholds with no score between them
    pass the same candidates: one replay says it for both; the simplest value stands for them)."""
    values = np.unique(scores.astype(np.float32))
    n = target.written(options)
    lowest = float(target.scores[:n].min()) if n else math.inf
    out = {}
    for t in sorted(list(GRID) + ([lowest] if n else []), key=lambda v: _digits(v)):
        if t <= lowest:
            out.setdefault(int(np.searchsorted(values, np.float32(t), side="left")), t)
    return sorted(out.values())


def _score_range(scores: np.ndarray, threshold: float) -> tuple[float, float]:
    """The thresholds that pass exactly the scores `threshold` passes: (largest score below it, smallest at or
    above it] in the replay's float32 scores."""
    values = np.unique(scores.astype(np.float32))
    t = np.float32(threshold)
    below, at = values[values < t], values[values >= t]
    return (float(below[-1]) if below.size else 0.0, float(at[0]) if at.size else float(t))


def _solved_scales(rep: _Replayer, options, base_result) -> dict:
    """y/x/h/w_scale values that would give B's top box from the top detection's anchor and box encoding (the
    top row's anchor is the same whatever the scales: the highest score comes first)."""
    t = rep.target
    if not base_result.detections or t.written(options) == 0:
        return {}
    top = base_result.detections[0]
    if top.row != 0 or not (t.classes[0] == top.class_id and _equal(t.scores[:1], np.float32([top.score])).all()):
        return {}
    deltas = _deltas(rep, top.anchor)
    ya, xa, ha, wa = (float(v) for v in rep.deps.anchors[top.anchor])
    ymin, xmin, ymax, xmax = (float(v) for v in t.boxes[0])
    out = {}
    with np.errstate(all="ignore"):
        for key, d, centre, a_centre, size in (("y_scale", deltas[0], (ymin + ymax) / 2, ya, ha),
                                               ("x_scale", deltas[1], (xmin + xmax) / 2, xa, wa)):
            if d and centre != a_centre and size:
                out[key] = d * size / (centre - a_centre)
        for key, d, extent, size in (("h_scale", deltas[2], ymax - ymin, ha), ("w_scale", deltas[3], xmax - xmin, wa)):
            if d and extent > 0 and size > 0 and extent != size:
                out[key] = d / math.log(extent / size)
    return {k: v for k, v in out.items() if math.isfinite(v) and v > 0}


def _round_candidates(value: float) -> list[float]:
    out = [value]
    for digits in (0, 1, 2, 3):
        out.append(round(value, digits))
    return [v for v in dict.fromkeys(out) if v > 0]


def _anchor_variant(anchors: np.ndarray, order) -> np.ndarray:
    if order is not None:
        return np.ascontiguousarray(anchors[:, list(order)])
    y, x, h, w = (anchors[:, i].astype(np.float64) for i in range(4))  # corners read as centre and size
    return np.stack([y - h / 2, x - w / 2, y + h / 2, x + w / 2], axis=1).astype(np.float32)


def _found(option, value_a, value_b, value_range=None, kind=OPTION) -> tuple:
    """One explanation found: (kind, option, value_a, value_b, value_range)."""
    return kind, option, value_a, value_b, value_range


def _try_dequantize(rep: _Replayer, deps: DecodeDeps, options, target, upstream):
    """The DEQUANTIZE B's host did before the kernel: another rounding, or the outputs' quantizations swapped."""
    if upstream != "tensor" or deps.boxes_into_kernel:
        return None
    rep.searched.append("dequantize")
    if rep.matches(options, kernel={"rounding": "reference"}):
        return _found(None, "litert", "reference", kind=ROUNDING)
    if rep.matches(options, kernel={"boxes_quant": deps.scores.quant, "scores_quant": deps.boxes.quant}):
        return _found("scale and zero_point", None, None, kind=DEQUANTIZE_SWAPPED)
    return None


def _try_rows(rep: _Replayer, deps: DecodeDeps, options, target, upstream):
    """The output's row count says max_detections x max_classes_per_detection."""
    if target.rows == options.rows:
        return None
    rep.searched += ["max_detections", "max_classes_per_detection"]
    pers = [options.max_classes_per_detection] + [p for p in (1, 2, 3, 4) if p != options.max_classes_per_detection]
    for per in pers:
        if target.rows % per:
            continue
        md = target.rows // per
        try:
            changed = dataclasses.replace(options, max_detections=md, max_classes_per_detection=per)
        except InputError:
            continue
        if rep.matches(changed):
            if per != options.max_classes_per_detection and md == options.max_detections:
                return _found("max_classes_per_detection", options.max_classes_per_detection, per)
            return _found("max_detections", options.max_detections, md)
    return None


def _try_regular_nms(rep: _Replayer, deps: DecodeDeps, options, target, upstream):
    rep.searched.append("use_regular_nms")
    if rep.matches(dataclasses.replace(options, use_regular_nms=not options.use_regular_nms)):
        return _found("use_regular_nms", options.use_regular_nms, not options.use_regular_nms)
    return None


def _try_iou(rep: _Replayer, deps: DecodeDeps, options, target, upstream):
    hit = _float_option(rep, options, "nms_iou_threshold", GRID + (1.0,), refine=0.01)
    return _found("nms_iou_threshold", options.nms_iou_threshold, hit[0], hit[1]) if hit else None


def _try_score(rep: _Replayer, deps: DecodeDeps, options, target, upstream):
    hit = _float_option(rep, options, "nms_score_threshold", _score_candidates(scores_of(rep), target, options))
    if hit:
        return _found("nms_score_threshold", options.nms_score_threshold, hit[0], _score_range(scores_of(rep), hit[0]))
    return None


def _try_max_detections(rep: _Replayer, deps: DecodeDeps, options, target, upstream):
    rep.searched.append("max_detections")
    n = int(target.num_detections) if math.isfinite(target.num_detections) else 0
    for md in dict.fromkeys([n] + list(COUNT_GRID)):
        if md <= 0 or md == options.max_detections or md > options.max_detections:
            continue  # more rows than the output holds would show in its row count
        if rep.matches(dataclasses.replace(options, max_detections=md)):
            return _found("max_detections", options.max_detections, md)
    return None


def _try_detections_per_class(rep: _Replayer, deps: DecodeDeps, options, target, upstream):
    if not options.use_regular_nms:
        return None
    rep.searched.append("detections_per_class")
    written = target.written(options)
    counts = np.unique(target.classes[:written], return_counts=True)[1] if written else np.array([0])
    for dpc in dict.fromkeys([int(counts.max())] + list(COUNT_GRID)):
        if dpc <= 0 or dpc == options.detections_per_class:
            continue
        if rep.matches(dataclasses.replace(options, detections_per_class=dpc)):
            return _found("detections_per_class", options.detections_per_class, dpc)
    return None


def _try_scales(rep: _Replayer, options, base_result):
    solved = _solved_scales(rep, options, base_result)
    for key in ("y_scale", "x_scale", "h_scale", "w_scale"):
        candidates = (_round_candidates(solved[key]) if key in solved else []) + list(SCALE_GRID)
        hit = _float_option(rep, options, key, list(dict.fromkeys(candidates)))
        if hit:
            return _found(key, getattr(options, key), hit[0])
    return None


def _try_anchor_variants(rep: _Replayer, deps: DecodeDeps, options, base_result):
    rep.searched.append("anchors")
    for name, order in ANCHOR_VARIANTS:
        if rep.matches(options, _anchor_variant(deps.anchors, order)):
            return _found("anchors", None, name, kind=ANCHORS)
    if not rep.exhausted and _box_only(rep, base_result):  # after every scale was tried
        return _found("anchors", None, None, kind=ANCHORS)
    return None


def _first_hypothesis(rep: _Replayer, deps: DecodeDeps, target: Detections, upstream, base_result):
    """The first hypothesis, in the order searched, whose replay gives B's detections; None when none does."""
    options = deps.options
    for attempt in (_try_dequantize, _try_rows, _try_regular_nms, _try_iou, _try_score, _try_max_detections,
                    _try_detections_per_class):
        found = attempt(rep, deps, options, target, upstream)
        if found is not None:
            return found
    return _try_scales(rep, options, base_result) or _try_anchor_variants(rep, deps, options, base_result)


def explain_detections(deps: DecodeDeps, a: TailArrays, b: TailArrays, *,
                       max_replays: int = MAX_REPLAYS) -> Explanation | None:
    """What makes B's detections from B's own upstream stage (None when neither run has detections)."""
    stage = "detections"
    if b.detections is None:
        return None if a.detections is None else _done(Explanation(stage, INCOMPLETE, evidence={"missing": stage}))
    options = deps.options
    if a.detections is not None and _same_detections(a.detections, b.detections, options):
        return _done(Explanation(stage, SAME))
    inputs = _kernel_inputs(deps, b)
    if inputs is None:
        return _done(Explanation(stage, INCOMPLETE, evidence={"missing": "dequantized or tensor"}))
    boxes, scores, kernel, upstream = inputs
    rep = _Replayer(boxes, scores, deps, b.detections, max_replays, kernel)
    base = rep.run(options)
    if base is None:
        return _done(Explanation(stage, UNEXPLAINED, upstream=upstream, replays=rep.replays,
                                 evidence={"rows": b.detections.written(options), "equal_rows": 0}))
    base_result, equal_rows, rows, same = base
    evidence = {"rows": rows, "equal_rows": equal_rows}
    rep.searched.append("model")
    if same:
        return _done(Explanation(stage, FOLLOWS, upstream=upstream, evidence=evidence, replays=rep.replays,
                                 searched=tuple(rep.searched)))
    found = _first_hypothesis(rep, deps, b.detections, upstream, base_result)
    if found is None:
        if rep.exhausted:
            evidence["stopped"] = True  # the budget of replays ran out: not every hypothesis was tried
        return _done(Explanation(stage, UNEXPLAINED, upstream=upstream, evidence=evidence, replays=rep.replays,
                                 searched=tuple(dict.fromkeys(rep.searched))))
    kind, option, value_a, value_b, value_range = found
    if kind == ANCHORS and value_b is None:
        evidence.update(_needed_anchor(rep, base_result))
    return _done(Explanation(stage, kind, upstream=upstream, option=option, value_a=value_a, value_b=value_b,
                             value_range=value_range, harmless=kind == ROUNDING, evidence=evidence,
                             replays=rep.replays, searched=tuple(dict.fromkeys(rep.searched))))


def scores_of(rep: _Replayer) -> np.ndarray:
    """The float32 scores the kernel compares with its thresholds (the classes' columns, not the background)."""
    scores = rep.scores
    if scores.dtype == np.uint8:
        quant = rep.kernel["scores_quant"]
        scores = dequantize_as(scores, quant.scale, quant.zero_point, "litert")
    return scores[:, scores.shape[1] - rep.deps.options.num_classes:]


def _needed_anchor(rep: _Replayer, base_result) -> dict:
    """The anchor (ycenter, xcenter, h, w) B's top box needs under the model's scales, from the top detection's
    box encoding (the inverse of DecodeCenterSizeBoxes), beside the model's anchor there."""
    top = base_result.detections[0]
    d = _deltas(rep, top.anchor)
    o = rep.deps.options
    ymin, xmin, ymax, xmax = (float(v) for v in rep.target.boxes[0])
    with np.errstate(all="ignore"):
        ha = (ymax - ymin) / math.exp(d[2] / o.h_scale)
        wa = (xmax - xmin) / math.exp(d[3] / o.w_scale)
        needed = ((ymin + ymax) / 2 - d[0] / o.y_scale * ha, (xmin + xmax) / 2 - d[1] / o.x_scale * wa, ha, wa)
    return {"anchor": int(top.anchor), "model_anchor": tuple(float(v) for v in rep.deps.anchors[top.anchor]),
            "needed_anchor": tuple(float(v) for v in needed)}


def _deltas(rep: _Replayer, anchor: int) -> np.ndarray:
    """The float64 box encoding (dy, dx, dh, dw) the kernel decodes at `anchor`."""
    deltas = np.asarray(rep.boxes[anchor, :4], np.float64)
    if rep.boxes.dtype == np.uint8 and rep.kernel.get("boxes_quant") is not None:
        quant = rep.kernel["boxes_quant"]
        deltas = (deltas - quant.zero_point) * np.float32(quant.scale)
    return deltas


def _box_only(rep: _Replayer, base_result) -> bool:
    """B's top row has the class and score the model's replay gives it but another box."""
    t = rep.target
    if not base_result.detections or t.written(rep.deps.options) == 0:
        return False
    top = base_result.detections[0]
    return (top.row == 0 and t.classes[0] == top.class_id and _equal(t.scores[:1], np.float32([top.score])).all()
            and not _equal(t.boxes[0], np.float32(top.box)).all())


def _same_detections(x: Detections, y: Detections, options: PostProcessOptions) -> bool:
    n = x.written(options)
    return (n == y.written(options) and x.num_detections == y.num_detections
            and bool(_equal(x.boxes[:n], y.boxes[:n]).all() and _equal(x.classes[:n], y.classes[:n]).all()
                     and _equal(x.scores[:n], y.scores[:n]).all()))


def explain_tail(deps: DecodeDeps, a: TailArrays, b: TailArrays, *, max_replays: int = MAX_REPLAYS) -> TailExplanation:
    """What explains each downstream stage of B's CPU tail: `deps` the model's decode constants (anchors,
    PostProcess options, the outputs' quantization: forensics.decode.model_deps.deps_from_model or a --deps
    directory), `a` and `b` the two runs' tail arrays. B's stages are replayed from B's own upstream; A's
    arrays only say whether B's stage differs at all."""
    a, b = a.rows(deps.score_columns), b.rows(deps.score_columns)
    return TailExplanation(explain_dequantized(deps, a, b), explain_detections(deps, a, b, max_replays=max_replays))
