"""The settings reference page is written from the option table and kept equal to it."""

from __future__ import annotations

import re

from karpy.settings import OPTIONS, FeatureGates
from karpy.settings.reference import DEFAULT_OUT, main, render

UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


def rows_by_env(page: str) -> dict[str, str]:
    rows = {}
    for line in page.splitlines():
        match = re.match(r"\| `([A-Z_]+)` \|", line)
        if match:
            rows[match.group(1)] = line
    return rows


def test_committed_page_is_the_generated_one():
    # Regenerate with: python -m karpy.settings.reference
    assert DEFAULT_OUT.read_text() == render()


def test_every_setting_has_a_row_with_its_flag_and_default():
    rows = rows_by_env(render())
    for option in OPTIONS:
        assert option.env in rows, option.env
        assert f"`{option.flag}`" in rows[option.env]
        if option.default and option.shown_default is None:
            assert f"`{option.default.replace('|', chr(92) + '|')}`" in rows[option.env]


def test_required_cluster_name_shows_why_it_has_no_default():
    assert '"" (required)' in rows_by_env(render())["CLUSTER_NAME"]


def test_settings_karpenter_lacks_are_marked_karpy_only():
    rows = rows_by_env(render())
    assert "*karpy only.*" in rows["CLOUD_PROVIDER"]
    assert "*karpy only.*" in rows["SCHEDULING_TIMEOUT"]
    assert "karpy only" not in rows["BATCH_MAX_DURATION"]


def test_pipes_in_values_do_not_split_table_cells():
    for line in render().splitlines():
        if line.startswith("| `") and "--" in line:
            assert len(UNESCAPED_PIPE.findall(line)) == 5, line


def test_feature_gates_are_listed_with_their_defaults():
    page = render()
    for name, on in FeatureGates().as_dict().items():
        assert f"| `{name}` | `FEATURE_GATES` | `{str(on).lower()}` |" in page


def test_check_exits_1_for_a_stale_page_and_writing_fixes_it(tmp_path, capsys):
    page = tmp_path / "settings.md"
    page.write_text("old\n")
    assert main(["--check", "--out", str(page)]) == 1
    assert "out of date" in capsys.readouterr().err
    assert main(["--out", str(page)]) == 0
    assert main(["--check", "--out", str(page)]) == 0
