"""What the kinds see of one pair: the dumps, their byte sources, the layout, the scan's tallies, the scored
region, the model (when known) and the earlier run; shared work (shift votes, pad periods) computed once."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Context:
    dump_a: object
    dump_b: object
    src_a: object
    src_b: object
    layout: object
    scan: object
    region: object
    model_view: object = None
    previous_src: object = None
    max_shift: int = 0
    fills: list = field(default_factory=list)
    model: str | None = None
    previous: str | None = None
    pattern_names: dict = field(default_factory=dict)
    stale_whole: bool = False
    dtype: str | None = None                       # the elements' dtype (header, sidecar, model), None: bytes
    inputs: dict | None = None                     # the inputs' CRCs, when given
    memo: dict = field(default_factory=dict)       # results shared between kinds (computed once)
    produced: dict = field(default_factory=dict)   # kind name -> the candidates it proposed

    @property
    def n_a(self) -> int:
        return self.dump_a.size

    @property
    def n_b(self) -> int:
        return self.dump_b.size

    @property
    def a(self) -> str:
        return self.dump_a.path

    @property
    def b(self) -> str:
        return self.dump_b.path

    @property
    def exact(self) -> bool:
        return self.region.exact

    @property
    def records(self) -> int:
        return self.scan.records

    @property
    def common_differ(self) -> bool:
        return self.scan.bytes_differing > 0

    @property
    def tensor(self) -> str | None:
        return getattr(getattr(self.model_view, "tensor", None), "name", None)

    def cached(self, key: str, make):
        if key not in self.memo:
            self.memo[key] = make()
        return self.memo[key]
