"""compare as JUnit XML for CI dashboards: one test case per (stage, tensor) of the two runs (per pair for
compare --batch).

Each case follows its row's judgement (forensics.runs.compare.judge_row): a buffer that MATCHes or is WITHIN
TOLERANCE passes; DIFFER and MISSING, and a file changed after capture, are failures (message: the verdict and
the row's message; text: the error statistics); buffers in one run only are skipped. The suite carries the run
pair's one verdict line (its `verdict` and `message` properties and its system-out). Times are 0: the comparison
of one buffer is not timed. Text from the runs (tensor names, sources) may hold characters XML 1.0 cannot hold
at all, even escaped (control characters, lone surrogates): they are written as \\xNN / \\uNNNN, so the document
stays well-formed.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

# XML 1.0's Char production: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(value) -> str:
    """`value` as text XML 1.0 can hold: every character it cannot is written as its escape (\\x01, \\ud800)."""
    text = str(value)
    return _NOT_XML.sub(lambda m: ascii(m.group())[1:-1], text)


def _stats_text(row, message: str) -> str:
    stats = row.stats
    if stats is None or not stats.differing:
        return message
    d = stats.to_dict()
    keys = ("max_abs", "mean_abs", "p99_abs", "max_rel", "cosine", "sqnr_db", "min_atol", "max_abs_lsb", "worst")
    return message + "\n" + "\n".join(f"{k}: {d[k]}" for k in keys if k in d)


def junit_xml(result, *, name: str | None = None, judgement=None) -> str:
    """The JUnit XML document (testsuites > testsuite > testcase) of a forensics.runs.compare.CompareResult;
    the suite carries `judgement` (the report's; judge_compare's when None) as it is."""
    a, b = result.run_a, result.run_b
    suite_name = name or f"forensics compare {a.source} vs {b.source}"
    cases = []
    failures = skipped = 0
    for row in result.rows:
        case = ET.Element("testcase", {"classname": xml_text(f"forensics.compare.{row.stage}"),
                                       "name": xml_text(row.label), "time": "0"})
        j = row.judgement
        if j is None:
            skipped += 1
            ET.SubElement(case, "skipped", {"message": xml_text(row.summary)})
        elif not j.passed:
            failures += 1
            failure = ET.SubElement(case, "failure", {"message": xml_text(f"{j.verdict}: {j.message}"),
                                                      "type": str(j.verdict)})
            failure.text = xml_text(_stats_text(row, j.message))
        else:
            out = ET.SubElement(case, "system-out")
            out.text = xml_text(f"{j.verdict}: {j.message}")
        cases.append(case)
    judgement = judgement if judgement is not None else result.judgement
    root = ET.Element("testsuites", {"name": "forensics", "tests": str(len(cases)), "failures": str(failures),
                                     "skipped": str(skipped), "errors": "0"})
    suite = ET.SubElement(root, "testsuite", {"name": xml_text(suite_name), "tests": str(len(cases)),
                                              "failures": str(failures), "skipped": str(skipped), "errors": "0",
                                              "time": "0"})
    props = ET.SubElement(suite, "properties")
    for key, value in (("run_a", a.path), ("run_b", b.path), ("verdict", judgement.verdict),
                       ("message", judgement.message)):
        ET.SubElement(props, "property", {"name": key, "value": xml_text(value)})
    suite.extend(cases)
    out = ET.SubElement(suite, "system-out")
    out.text = xml_text(judgement.line)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def junit_batch(result, *, judgement=None) -> str:
    """compare --batch as JUnit XML: one test case per pair (a pair that does not pass is a failure, one that
    could not be compared an error); the suite carries the batch's one verdict line (`judgement`, the report's;
    judge_batch's when None)."""
    from forensics.core.verdict import Verdict

    judgement = judgement if judgement is not None else result.judgement
    cases, failures, errors = [], 0, 0
    for row in result.rows:
        case = ET.Element("testcase", {"classname": "forensics.compare.batch", "name": xml_text(row["pair"]),
                                       "time": "0"})
        verdict = Verdict(row["verdict"])
        said = f"{verdict}: {row.get('summary') or row.get('error') or ''}".rstrip(": ")
        if verdict is Verdict.ERROR:
            errors += 1
            ET.SubElement(case, "error", {"message": xml_text(said), "type": str(verdict)})
        elif not verdict.passed:
            failures += 1
            ET.SubElement(case, "failure", {"message": xml_text(said), "type": str(verdict)}).text = xml_text(said)
        else:
            ET.SubElement(case, "system-out").text = xml_text(said)
        cases.append(case)
    counts = {"tests": str(len(cases)), "failures": str(failures), "skipped": "0", "errors": str(errors)}
    root = ET.Element("testsuites", {"name": "forensics", **counts})
    suite = ET.SubElement(root, "testsuite", {"name": xml_text(f"forensics compare --batch {result.directory}"),
                                              **counts, "time": "0"})
    props = ET.SubElement(suite, "properties")
    for key, value in (("directory", result.directory), ("verdict", judgement.verdict),
                       ("message", judgement.message)):
        ET.SubElement(props, "property", {"name": key, "value": xml_text(value)})
    suite.extend(cases)
    ET.SubElement(suite, "system-out").text = xml_text(judgement.line)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
