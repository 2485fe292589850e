"""`load_objects` reads JSON with orjson for speed, and still takes, and words the errors
of, exactly what the standard library did."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from karpy.errors import UsageError
from karpy.simulate.loader import load_objects


def test_a_json_list_flattens_into_its_objects_with_their_file(tmp_path: Path) -> None:
    path = tmp_path / "cluster.json"
    items = [{"kind": "Pod", "metadata": {"name": f"p{i}"}} for i in range(3)]
    path.write_text(json.dumps({"kind": "List", "items": items}))
    assert load_objects([str(path)]) == [(str(path), item) for item in items]


def test_json_orjson_refuses_but_the_standard_library_reads_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "odd.json"
    # An integer past 64 bits and a NaN: orjson rejects both, json.loads reads them.
    path.write_text('{"kind": "Pod", "metadata": {"name": "p", "generation": '
                    '123456789012345678901234567890}, "spec": {"x": NaN}}')  # fmt: skip
    ((_, obj),) = load_objects([str(path)])
    assert obj["metadata"]["generation"] == 123456789012345678901234567890
    assert obj["spec"]["x"] != obj["spec"]["x"]  # NaN


def test_broken_json_is_worded_as_the_standard_library_words_it(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"kind": "Pod",\n  "metadata": }')
    with pytest.raises(UsageError) as caught:
        load_objects([str(path)])
    expected = "does not parse: Expecting value: line 2 column 15 (char 30)"
    assert str(caught.value) == f"{path}: {expected}"
