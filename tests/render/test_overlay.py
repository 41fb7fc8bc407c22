"""render.overlay's reader of another decode's --json: a malformed file is one InputError naming the file once,
with the JSON reader's reason (its `reason` field, not its message cut at a colon: a folder named `a: b` used to
leave part of the path in the reason)."""

from __future__ import annotations

import pytest

from forensics.core.errors import InputError
from forensics.render.overlay import load_detections


@pytest.mark.parametrize("folder", ["plain", "with: colon"])
def test_a_malformed_decode_json_names_the_file_once_with_the_reason(tmp_path, folder):
    path = tmp_path / folder / "other.json"
    path.parent.mkdir()
    path.write_text('{"detections": [', encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_detections(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: is not a decode --json output (malformed JSON: ")
    assert message.count(str(path)) == 1 and message.endswith(")")


def test_rows_load_from_a_bare_list(tmp_path):
    path = tmp_path / "rows.json"
    path.write_text('[{"box": [0.1, 0.2, 0.3, 0.4], "score": 0.5}]', encoding="utf-8")
    assert load_detections(path) == [{"box": [0.1, 0.2, 0.3, 0.4], "score": 0.5}]
