"""The suite gives the same result on every run of a commit: property tests are derandomized (tests/conftest.py)
and no test draws unseeded random data."""

from __future__ import annotations

import os
import re
from pathlib import Path

from hypothesis import settings

TESTS = Path(__file__).resolve().parents[1]
# Randomness that changes from run to run: OS entropy, numpy's global or unseeded generators, an unseeded
# random.Random, the random module's global functions (seeded by the OS at start-up).
UNSEEDED = re.compile(r"os\.urandom\(|default_rng\(\s*\)|random\.Random\(\s*\)|np\.random\.(?!default_rng)\w+\("
                      r"|(?<![\w.])random\.(?:random|randint|randrange|choice|choices|shuffle|sample|getrandbits|"
                      r"randbytes|uniform)\(")


def test_property_tests_are_derandomized_unless_a_fuzz_profile_is_asked_for():
    if os.environ.get("FORENSICS_HYPOTHESIS_PROFILE", "ci") != "ci":
        return
    assert settings.default.derandomize and settings.default.database is None
    assert settings.default.deadline is None


def test_no_test_draws_unseeded_random_data():
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if UNSEEDED.search(line.split("#")[0]) and path.name != "test_determinism.py":
                found.append(f"{path.relative_to(TESTS)}:{n}: {line.strip()}")
    assert not found, "seed these (random.Random(SEED), np.random.default_rng(SEED)):\n" + "\n".join(found)
