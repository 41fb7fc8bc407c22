"""The one Finding type: facts in, the sentence beside them, read like the dict of facts it replaces."""

from forensics.core.finding import Finding


def _words(facts):
    return f"{facts['kind']}: {facts['bytes']:,} bytes at 0x{facts['offset']:x}"


def test_a_finding_of_facts_carries_its_sentence_and_reads_like_the_facts():
    facts = {"kind": "truncated", "bytes": 4096, "offset": 0x40, "batch": None}
    f = Finding.of(facts, _words)
    assert f.kind == "truncated" and f.sentence == "truncated: 4,096 bytes at 0x40"
    assert f["kind"] == "truncated" and f["offset"] == 0x40 and f.get("batch") is None and f.get("absent", 1) == 1
    assert dict(f) == facts  # iterating gives the facts' keys, kind first
    assert Finding.of(f, _words) is f


def test_the_document_keeps_the_facts_keys_and_adds_the_sentence():
    f = Finding.of({"kind": "corrupted", "offsets": [1, 2]}, lambda d: "two bytes")
    assert f.to_dict() == {"kind": "corrupted", "offsets": [1, 2], "sentence": "two bytes"}


def test_diagnose_findings_are_findings():
    from forensics.diagnose.result import Finding as DiagnoseFinding

    f = DiagnoseFinding("shift", "B is A moved by 4 bytes", "fix the offset", {"shift": 4}, 0.5)
    assert isinstance(f, Finding)
    assert (f.evidence, f.details, f["shift"], f["explains"]) == (f.sentence, {"shift": 4}, 4, 0.5)
    assert f.to_dict()["evidence"] == "B is A moved by 4 bytes"
