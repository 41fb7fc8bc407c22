"""The one Finding type: something a check found, as facts (its `kind` code and the numbers, offsets and names
it rests on) with the sentence its area's `describe` module words from them (pyelftools' descriptions.py).

The link check's findings are Findings, and diagnose's findings are Findings too (forensics.diagnose.result adds
the share of the differing bytes a finding explains). A Finding reads like the dict it replaces: `f["kind"]`,
`f["offset_bit"]`, `f.get("batch")` read its facts, so code written against the dicts keeps working; its
document (`to_dict`) carries the facts under their keys, as before, and the sentence as its own field. Nothing
parses the sentence back: a renderer that needs to decide reads a fact.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, eq=False)  # equal as the Mapping of its facts: a Finding == the dict it replaces
class Finding(Mapping):
    """`kind`: the finding's code (`byte_aligned`, `truncated`, `shift`, ...); `sentence`: the line a person
    acts on (its area's describe module); `hint`: what to do, when it is said apart from the sentence; `facts`:
    what it rests on (numbers, offsets, names: the JSON's keys)."""

    kind: str
    sentence: str = ""
    hint: str = ""
    facts: dict = field(default_factory=dict, compare=False, hash=False)

    def to_dict(self) -> dict:
        """The facts under their own keys, the kind first and the sentence as its own field."""
        return {"kind": self.kind, **self.facts, "sentence": self.sentence}

    # read like the dict of facts it replaces (kind included; the sentence is `.sentence`)
    def __getitem__(self, key):
        if key == "kind":
            return self.kind
        return self.facts[key]

    def __iter__(self):
        yield "kind"
        yield from (k for k in self.facts if k != "kind")

    __hash__ = None  # equal as a dict is, and unhashable as a dict is

    def __len__(self) -> int:
        return 1 + sum(1 for k in self.facts if k != "kind")


    @classmethod
    def of(cls, facts: Mapping, describe) -> "Finding":
        """A Finding of the `facts` dict a check built (its "kind" among them), worded by `describe(facts)`;
        a Finding is returned as it is."""
        if isinstance(facts, Finding):
            return facts
        facts = dict(facts)
        return cls(str(facts.get("kind")), describe(facts), facts=facts)
