"""compare as JUnit XML for CI dashboards: one test case per (stage, tensor) of the two runs.

A buffer that MATCHes or is WITHIN TOLERANCE passes; DIFFER and MISSING are failures (message: the verdict
and the summary; text: the error statistics); buffers in one run only are skipped. Times are 0: the
comparison of one buffer is not timed.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET


def _stats_text(row) -> str:
    stats = row.stats
    if stats is None or not stats.differing:
        return row.summary
    d = stats.to_dict()
    keys = ("max_abs", "mean_abs", "p99_abs", "max_rel", "cosine", "sqnr_db", "min_atol", "max_abs_lsb", "worst")
    return row.summary + "\n" + "\n".join(f"{k}: {d[k]}" for k in keys if k in d)


def junit_xml(result, *, name: str | None = None) -> str:
    """The JUnit XML document (testsuites > testsuite > testcase) of a forensics.runs.compare.CompareResult."""
    a, b = result.run_a, result.run_b
    suite_name = name or f"forensics compare {a.source} vs {b.source}"
    cases = []
    failures = skipped = 0
    for row in result.rows:
        case = ET.Element("testcase", {"classname": f"forensics.compare.{row.stage}", "name": row.label,
                                       "time": "0"})
        if not row.compared:
            skipped += 1
            ET.SubElement(case, "skipped", {"message": row.summary})
        elif not row.passed or row.changed:
            failures += 1
            status = "CHANGED " + row.status if row.changed else row.status
            failure = ET.SubElement(case, "failure", {"message": f"{status}: {row.summary}", "type": status})
            failure.text = _stats_text(row)
        else:
            out = ET.SubElement(case, "system-out")
            out.text = f"{row.status}: {row.summary}"
        cases.append(case)
    root = ET.Element("testsuites", {"name": "forensics", "tests": str(len(cases)), "failures": str(failures),
                                     "skipped": str(skipped), "errors": "0"})
    suite = ET.SubElement(root, "testsuite", {"name": suite_name, "tests": str(len(cases)),
                                              "failures": str(failures), "skipped": str(skipped), "errors": "0",
                                              "time": "0"})
    props = ET.SubElement(suite, "properties")
    for key, value in (("run_a", a.path), ("run_b", b.path), ("verdict", result.verdict)):
        ET.SubElement(props, "property", {"name": key, "value": str(value)})
    suite.extend(cases)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
