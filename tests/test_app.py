"""The app opens on the demo release and shows an error box, not a traceback, on bad input."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

# Each test runs pages in Streamlit's AppTest: seconds apiece.
pytestmark = pytest.mark.slow

APP = str(Path(__file__).resolve().parent.parent / "app.py")


def test_overview_on_the_demo_release():
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics == {"Rows": "240", "accepted": "161", "review required": "40",
                       "quarantined": "39"}
    # Findings by check: an HTML table (no chart library on the first page), exact counts.
    table = next(html.unescape(m.value) for m in at.html
                 if "findings (bar: log scale)" in html.unescape(m.value))
    assert at.get("plotly_chart") == []
    row = re.search(r"<tr><td>support_index_out_of_range</td>(.*?)</tr>", table).group(1)
    assert "badge-blocking" in row and 'bar-n">15<' in row and "<td>11</td>" in row
    assert "<td>4.58%</td>" in row
    assert table.count('style="width:100%"') == 1               # only the largest count
    # What puts rows into each status, each count a link to those rows in Browse; and the
    # status the release's own structural rules alone give.
    shown = "\n".join(html.unescape(m.value) for m in at.html)
    assert ('href="./Browse?status=quarantined&check=support_index_out_of_range" '
            'target="_self"><span class="fv-label">support_index_out_of_range</span>'
            '<span class="fv-n">11</span>') in shown.replace("<wbr>", "")
    assert ('href="./Browse?status=review_required&check=language_mismatch"') in shown
    for label, status in (("39 quarantined", "quarantined"), ("4 review required",
                                                             "review_required"),
                          ("197 accepted", "accepted")):
        assert (f'href="./Browse?structural_status={status}" target="_self" title="open these '
                f'rows in Browse">{label}</a>') in shown


def test_a_split_without_its_source_is_named(settings_env):
    """One split's source given: the other split's rows are said to have none."""
    from audit.settings import demo_sources
    train = dict(spec.split("=", 1) for spec in demo_sources())["train"]
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["source_train"] = train
    at.run()
    assert not at.exception
    assert [i.value for i in at.info if "split" in i.value] == [
        "No HotpotQA source is attached for the ` validation ` split (` 96 rows `): its rows' "
        "source checks do not run. Attach its source in the sidebar under HotpotQA source "
        "and policy."]


def test_a_meter_is_log_scaled_and_escapes_its_kind():
    from audit.reports import render
    assert 'width:100%' in render.meter(20_000, 20_000, "blocking")
    # log1p(1) / log1p(20,000): 7%, where a linear bar would be invisible
    assert 'width:7%' in render.meter(1, 20_000, "review")
    assert 'width:0%' in render.meter(0, 20_000) and 'bar-n">0<' in render.meter(0, 20_000)
    assert 'meter-"' in render.meter(3, 5, '"><script>')    # an unknown kind is dropped


def test_a_first_visit_is_oriented_and_the_demo_is_named(tmp_path, settings_env):
    at = AppTest.from_file(APP, default_timeout=60).run()
    panel = [i.value for i in at.info if i.value.startswith("You are looking at")]
    assert len(panel) == 1
    assert panel[0].startswith("You are looking at the bundled demo release: 240 synthetic")
    assert "in the sidebar under Release, or upload it" in panel[0]
    assert "data roots (AUDIT_DATA_ROOTS)" in panel[0]
    scope = [m.value for m in at.html if 'class="scope"' in m.value]
    assert scope and scope[0].startswith('<div class="scope"><b>the bundled demo release</b>')
    # One's own release: no panel, the release by its name.
    from test_trust import one_row_release
    settings_env(AUDIT_DATA_ROOTS=str(tmp_path))
    mine = one_row_release(tmp_path, "mine.parquet", blank=False)
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["release"] = str(mine)
    at.run()
    assert not at.exception
    assert not [i for i in at.info if i.value.startswith("You are looking at")]
    scope = [m.value for m in at.html if 'class="scope"' in m.value][0]
    assert scope.startswith('<div class="scope"><b>mine</b>')
    assert " · 1 row · " in html.unescape(scope)      # one helper agrees: never "1 rows"


def test_unreadable_release_is_an_error_box(tmp_path, settings_env):
    settings_env(AUDIT_DATA_ROOTS=str(tmp_path))
    bad = tmp_path / "bad.parquet"
    bad.write_text("not parquet")
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.text_input[0].input(str(bad)).run()
    assert not at.exception
    assert "not a readable Parquet file" in at.error[0].value


def test_a_bad_source_or_policy_is_named_as_such(tmp_path, settings_env):
    """Each input says which one could not be opened: not "this release" for a policy."""
    settings_env(AUDIT_DATA_ROOTS=str(tmp_path))
    (tmp_path / "rules.toml").write_text("[colours]\n")
    (tmp_path / "hotpot.json").write_text("{not json")
    from test_trust import one_row_release
    mine = one_row_release(tmp_path, "mine.parquet", blank=False)
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update(release=str(mine), policy=str(tmp_path / "rules.toml"))
    at.run()
    assert not at.exception
    assert [e.value for e in at.error] == [
        f"Cannot open the policy file: ` {tmp_path / 'rules.toml'}: no 'severity', "
        "'thresholds' or 'acceptance' table (expected {\"severity\": {\"check\": "
        "\"blocking|review|info\"}, \"thresholds\": {\"check\": {\"name\": value}}, "
        "\"acceptance\": {\"name\": value}}) `"]
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update(release=str(mine), source_validation=str(tmp_path / "hotpot.json"))
    at.run()
    assert not at.exception
    assert at.error[0].value.startswith(
        f"Cannot open the HotpotQA validation source: ` {tmp_path / 'hotpot.json'}")


REFUSED = "` not available here: no release by that name under the workbench's data " \
          "roots (AUDIT_DATA_ROOTS) `"


def test_a_release_outside_the_data_roots_is_refused_without_saying_whether_it_exists():
    for path in ("/etc/passwd", "/etc/no-such-file", "../../.labelstudio.env", "/**/*",
                 "data/../../etc/hosts"):
        at = AppTest.from_file(APP, default_timeout=60)
        at.query_params["release"] = path
        at.run()
        assert not at.exception
        assert [e.value for e in at.error] == [f"Cannot open the release: {REFUSED}"], path


PAGES = ("app", "1_Browse", "2_Instance", "3_Findings", "4_Mixing", "6_Export")
ODD = {"page": ["abc", "999", "-3", "1e9", "٣"], "row": ["abc", "-5", "99999999999999999999"],
       "k_c_min": ["--3", "x"], "gold_mode": ["<b>"], "check": ["nope", "[x](https://e.x)"],
       "stratum": ["S9", "[x](https://e.x)"]}


def test_no_url_parameter_raises_on_any_page():
    for name in PAGES:
        for key, values in ODD.items():
            for value in values:
                at = AppTest.from_file(APP, default_timeout=60)
                at.query_params[key] = value
                if name != "app":
                    at.switch_page(f"pages/{name}.py")
                at.run()
                assert not at.exception, (name, key, value, at.exception)


def _page_with(name: str, **params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update(params)
    at.switch_page(f"pages/{name}.py")
    return at.run()


@pytest.mark.parametrize(("name", "params", "said"), [
    ("1_Browse", {"k_c_min": "50", "k_c_max": "-3"},
     ["The URL's ` k_c_min=50 ` is outside 1–24; using 24.",
      "The URL's ` k_c_max=-3 ` is outside 1–24; using 1.",
      "The URL's ` k_c_max=-3 ` is below k_c_min 24; not applied."]),
    ("1_Browse", {"page": "abc"}, ["The URL's ` page=abc ` is not a whole number; showing page 1."]),
    ("1_Browse", {"page": "3", "question_language": "fa,ur"},
     ["The URL's ` page=3 ` is past this filter's last page; showing page 1."]),
    ("1_Browse", {"page": "0"}, ["The URL's ` page=0 ` is outside 1–5; showing page 1."]),
    ("2_Instance", {"row": "-1"}, ["The URL's ` row=-1 ` is outside 0–239; showing row 0."]),
    ("2_Instance", {"row": "999999"},
     ["The URL's ` row=999999 ` is outside 0–239; showing row 239."]),
    ("3_Findings", {"k_c_min": "x", "gold_mode": "<b>"},
     ["The URL's ` gold_mode=<b> ` is neither any nor all; using any.",
      "The URL's ` k_c_min=x ` is not a whole number; not applied."]),
])
def test_every_url_parameter_is_used_clamped_or_refused_and_says_so(name, params, said):
    """240 demo rows, 50 a Browse page: pages 1–5; fa, ur select 21 rows, one page."""
    at = _page_with(name, **params)
    assert not at.exception
    assert [w.value for w in at.warning if w.value.startswith("The URL's")] == said
