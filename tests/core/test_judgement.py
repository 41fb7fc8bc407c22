"""The one judgement of a result: its verdict line, exit code and JSON fields come from it alone."""

import pytest

from forensics.core.judgement import Judgement, Reason
from forensics.core.verdict import Verdict
from forensics.reports.base import Report


class _Doc:
    def to_dict(self):
        return {"n": 1}


def test_a_judgement_is_one_line_and_its_exit_code_follows_the_verdict():
    j = Judgement(Verdict.WITHIN, "2 bytes within 1 LSB", (Reason("tolerance", "atol 1"),))
    assert j.line == "WITHIN TOLERANCE | 2 bytes within 1 LSB"
    assert j.exit_code == 0 and j.passed and j.has("tolerance") and not j.has("pad_lanes")
    assert Judgement("DIFFER").line == "DIFFER" and Judgement("DIFFER").exit_code == 1


def test_a_report_takes_its_verdict_from_the_judgement_and_refuses_a_second_one():
    j = Judgement(Verdict.DIFFER, "3 records differ", (Reason("changed_after_capture"),))
    report = Report("x", _Doc(), judgement=j)
    assert report.verdict is Verdict.DIFFER and report.exit_code == 1
    doc = report.to_dict()
    assert (doc["verdict"], doc["exit_code"], doc["message"]) == ("DIFFER", 1, "3 records differ")
    assert doc["reasons"] == [{"code": "changed_after_capture", "text": ""}]
    with pytest.raises(ValueError):
        Report("x", _Doc(), judgement=j, verdict=Verdict.WITHIN)
