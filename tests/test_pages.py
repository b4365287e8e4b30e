"""Every page renders on the demo release with the expected content (Streamlit AppTest)."""

from __future__ import annotations

import html
import json
import os
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

# Each test runs pages in Streamlit's AppTest: seconds apiece.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 60


def page(name: str, **params) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.query_params.update(params)
    at.switch_page(f"pages/{name}.py") if name != "app" else None
    return at.run()


def markdown_text(at: AppTest) -> str:
    """The page's Markdown and HTML sources, with the entities the pages use for dataset
    text decoded."""
    return html.unescape("\n".join(m.value for m in [*at.markdown, *at.html]))


def scope_text(at: AppTest) -> str:
    """The page's scope line (its HTML)."""
    return next(m.value for m in at.html if 'class="scope"' in m.value)


def linked_rows(at: AppTest) -> list[int]:
    """The release rows the page's instance links open, in page order."""
    return [int(r) for r in re.findall(r'href="\./Instance\?[^"]*?row=(\d+)"',
                                       html.unescape("\n".join(m.value for m in at.html)))]


def test_findings_page_folds_info_and_shows_severity_per_category():
    at = page("3_Findings")
    assert not at.exception
    table = at.dataframe[0].value
    rows = {(c, s): n for c, s, n in zip(table["check"], table["severity"], table["findings"])}
    # exact_source_copy: 13 ordinary sentences at review level, 417 info copies folded away.
    assert rows[("exact_source_copy", "review")] == 13 and rows[("blank_sentence",
                                                                  "blocking")] == 6
    assert "info" not in set(table["severity"])
    assert {m.label: m.value for m in at.metric} == {
        "quarantined": "39", "review required": "40", "accepted": "161",
        "rows in scope": "240"}
    at.toggle[0].set_value(True).run()
    table = at.dataframe[0].value
    info = table[(table["check"] == "exact_source_copy") & (table["severity"] == "info")]
    assert int(info["findings"].iloc[0]) == 417
    assert info["categories"].iloc[0] == "name_like, number_or_date"
    assert at.query_params["info"] == "1"
    heatmap = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert heatmap["data"][0]["type"] == "heatmap"
    categories = at.dataframe[1].value
    assert dict(zip(zip(categories["category"], categories["unit"]),
                    categories["findings"]))[("name_like", "title")] == 333


def test_findings_drill_down_follows_the_selected_check_and_the_filter():
    at = page("3_Findings", examples="placeholder_sentence")
    assert at.selectbox[0].value == "placeholder_sentence"
    assert markdown_text(at).count(">placeholder ") == 3 and len(linked_rows(at)) == 3


def test_findings_drill_down_is_local_and_never_narrows_the_filter():
    """Picking a check under "Examples of" changes the examples only: the view's filter,
    the page's counts and the checks offered stay those of the whole release."""
    at = page("3_Findings")
    offered = list(at.selectbox[0].options)
    at.selectbox[0].set_value("placeholder_sentence").run()
    assert not at.exception
    assert "check" not in at.query_params
    assert at.query_params["examples"] == "placeholder_sentence"
    assert {m.label: m.value for m in at.metric}["rows in scope"] == "240"
    assert list(at.selectbox[0].options) == offered
    assert markdown_text(at).count(">placeholder ") == 3
    # Narrowing the filter is its own, labelled action.
    at.button[0].click().run()
    assert at.query_params["check"] == "placeholder_sentence"
    assert {m.label: m.value for m in at.metric}["rows in scope"] == "3"
    scoped = page("3_Findings", question_language="fa")
    assert {m.label: m.value for m in scoped.metric}["rows in scope"] == "9"


def findings_at(at: AppTest, location: str) -> str:
    """The rendered line of one sentence ('p00 · 1'), findings included."""
    lines = [html.unescape(m.value) for m in at.html
             if f">{location}" in html.unescape(m.value)]
    assert len(lines) == 1, location
    return lines[0]


@pytest.mark.parametrize(("row", "location"), [(72, "p00 · 1"), (76, "p00 · 0")])
def test_instance_shows_the_planted_blank_sentence_at_its_sentence(row, location):
    at = page("2_Instance", row=str(row))
    assert not at.exception
    assert "blank_sentence: translated sentence is blank" in findings_at(at, location)
    # Once at its sentence, once in the summary at the top, which links there.
    assert markdown_text(at).count("blank_sentence") == 2
    assert f'href="#at-c0-{location[-1]}">blank_sentence' in markdown_text(at)
    assert at.number_input[0].value == row


def caption_text(at: AppTest) -> str:
    return "\n".join(c.value for c in at.caption)


def test_browse_facet_changes_counts_and_url():
    at = page("1_Browse")
    assert not at.exception
    assert "240 of 240 rows match" in caption_text(at)
    language = next(m for m in at.multiselect if m.label == "Question language ℓq")
    language.set_value(["fa", "ur"]).run()
    assert "21 of 240 rows match" in caption_text(at)
    assert at.query_params["question_language"] == "fa,ur"
    assert len(linked_rows(at)) == 21
    status = next(m for m in at.multiselect if m.label == "Status (derived)")
    status.set_value(["accepted"]).run()
    split = next(m for m in at.multiselect if m.label == "Split")
    split.set_value(["train"]).run()
    # Every facet stays: the three combine.
    assert (at.query_params["question_language"], at.query_params["status"],
            at.query_params["split"]) == ("fa,ur", "accepted", "train")
    narrowed = len(linked_rows(at))
    assert 0 < narrowed < 21
    assert f"{narrowed} of 240 rows match" in caption_text(at)
    at.radio[0].set_value("all").run()
    assert at.query_params["question_language"] == "fa,ur"


def test_browse_deep_link_applies_the_filter():
    at = page("1_Browse", question_language="fa,ur", stratum="S4")
    language = next(m for m in at.multiselect if m.label == "Question language ℓq")
    assert language.value == ["fa", "ur"]
    rows = linked_rows(at)
    assert rows and all(f"row={r}" in markdown_text(at) for r in rows)


def button(at: AppTest, label: str):
    return next(b for b in at.button if b.label == label)


def test_instance_previous_next_follow_the_filter():
    rows = linked_rows(page("1_Browse", question_language="fa"))
    assert len(rows) >= 3
    at = page("2_Instance", question_language="fa", row=str(rows[1]))
    button(at, "next ▶").click().run()
    assert at.query_params["row"] == str(rows[2])
    assert at.number_input[0].value == rows[2]
    button(at, "◀ previous").click().run()
    assert at.query_params["row"] == str(rows[1])
    first = page("2_Instance", question_language="fa")       # no row: the filter's first
    assert first.number_input[0].value == rows[0]


def test_mixing_page_names_its_measures_and_follows_the_filter():
    at = page("4_Mixing")
    assert not at.exception
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    overall = charts[0]
    titles = [a["text"] for a in overall["layout"]["annotations"]]
    assert titles == ["evidence leaves the question language (I)",
                      "evidence in more than one language (C)",
                      "question language absent from every candidate",
                      "distinct candidate languages (K_C)"]
    # all, train and validation for each measure: never a single point.
    assert [len(t["x"]) for t in overall["data"]] == [3] * 8
    assert [c["data"][0]["type"] for c in charts] == ["scatter", "scatter", "bar", "bar",
                                                      "heatmap"]
    rates = at.dataframe[0].value
    overall_i = rates[(rates["measure"] == "I") & (rates["group"] == "all")].iloc[0]
    assert (overall_i["n"], overall_i["count"]) == (236, 236)
    assert round(overall_i["expected"], 4) == 0.9976
    table11 = next(json.loads(c.proto.spec) for c in at.get("plotly_chart")
                   if "counted" in json.dumps(json.loads(c.proto.spec)["data"][0]))
    assert sorted(a["text"] for a in table11["layout"]["annotations"]) == [
        "docs", "questions", "support"]
    # The ℓq × gold-language counts: a colour bar in whole steps (never 0.5).
    colours = charts[-1]["layout"]["coloraxis"]
    assert (colours["cmin"], colours["colorbar"]["tick0"], colours["colorbar"]["dtick"],
            colours["colorbar"]["tickformat"]) == (0, 0, 1, ",d")
    scoped = page("4_Mixing", question_language="fa")
    rates = scoped.dataframe[0].value
    assert rates[(rates["measure"] == "K_C") & (rates["group"] == "all")].iloc[0]["n"] == 9


def info_text(at: AppTest) -> str:
    return "\n".join(i.value for i in at.info)


def test_export_page_filters_downloads_and_compares(tmp_path, settings_env):
    settings_env(AUDIT_SCANS=tmp_path / "scans")
    at = page("6_Export")
    assert not at.exception
    scope = [m.value for m in at.html if 'class="scope"' in m.value][0]
    assert "filter: no filter → 240 rows" in html.unescape(scope)
    assert "does not apply" not in scope
    assert "141 reasons on 79 rows of ` the bundled demo release `" in info_text(at)
    whole = at.dataframe[0].value
    assert set(whole["status"]) == {"quarantined", "review_required"}
    filtered_view = page("6_Export", question_language="fa")
    assert filtered_view.radio(key="export_scope").value == "filter"   # the filter by default
    filtered = filtered_view.dataframe[0].value
    browse_rows = linked_rows(page("1_Browse", question_language="fa"))
    assert set(filtered["row"]) <= set(browse_rows) and len(filtered) < len(whole)
    assert "question_language fa" in info_text(filtered_view)
    assert "filter: question_language fa → 9 rows" in html.unescape(scope_text(filtered_view))
    # Rows set to the whole release: the scope line says the filter is not applied.
    filtered_view.radio(key="export_scope").set_value("release").run()
    assert html.unescape(scope_text(filtered_view)).split(" · ")[3] == (
        "whole release (Rows is set to the whole release: the Browse filter, "
        "question_language fa, is not applied)")
    assert [b.label for b in at.get("download_button")] == [
        "Download CSV", "Download JSONL", "Download PARQUET"]
    button(at, "Save this scan (findings, status, summary, manifest)").click().run()
    saved = list((tmp_path / "scans").glob("*/*/manifest.json"))
    assert len(saved) == 1
    # The same scan saved again is the one already saved, and says where it is.
    button(at, "Save this scan (findings, status, summary, manifest)").click().run()
    assert list((tmp_path / "scans").glob("*/*/manifest.json")) == saved
    assert any(i.value == "Already saved: this scan (same files, sources, policy and checks) "
               f"is at ` {saved[0].parent} `" for i in at.info)


def test_compare_page_matches_units_and_gives_the_gate(tmp_path, settings_env):
    from test_compare import new_rows, old_rows, write_jsonl
    served, outside = tmp_path / "served", tmp_path / "outside"
    served.mkdir(), outside.mkdir()
    new = write_jsonl(served / "new.jsonl", new_rows())
    settings_env(AUDIT_DATA_ROOTS=str(served))
    at = page("5_Compare", release=str(new))
    assert [i.value for i in at.info] == [
        "Name the earlier release (OLD) to compare this one with it."]
    at.text_input(key="compare_old").input(str(write_jsonl(outside / "old.jsonl",
                                                            old_rows()))).run()
    assert [e.value for e in at.error] == [
        "Cannot open the earlier release: ` not available here: no release by that "
        "name under the workbench's data roots (AUDIT_DATA_ROOTS) `"]
    old = write_jsonl(served / "old.jsonl", old_rows())
    at.text_input(key="compare_old").input(str(old)).run()
    assert not at.exception and at.query_params["old"] == str(old)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Sources in both"] == "9"
    assert (metrics["R_struct OLD"], metrics["R_struct NEW"]) == ("33.33%", "22.22%")
    assert metrics["ΔR (NEW − OLD)"] == "-11.11%"
    assert (metrics["Only in OLD"], metrics["Only in NEW"], metrics["Unit set differs"],
            metrics["Language changed (units)"]) == ("1", "1", "1", "2")
    gate = markdown_text(at)
    assert "Verdict: " in gate and "FAIL" in gate
    assert "1 source only in OLD, 0 tolerated (only_old)" in gate
    assert "key equality" in gate and "--reviews" not in gate
    assert [b.label for b in at.get("download_button")] == [
        "compare.json", "units CSV", "acceptance.json", "report.html"]


def test_compare_with_no_shared_source_says_so_in_one_line(tmp_path, settings_env):
    """A release against the demo (no source_id in common): one line naming both inputs,
    no traceback."""
    from test_compare import new_rows, write_jsonl
    new = write_jsonl(tmp_path / "new.jsonl", new_rows())
    settings_env(AUDIT_DATA_ROOTS=os.pathsep.join([str(tmp_path), str(ROOT / "data")]))
    at = page("5_Compare", release=str(new), old="data/demo/release")
    assert not at.exception
    assert [e.value for e in at.error] == [
        "Cannot compare ` new ` (NEW) with ` data/demo/release ` (OLD): ` comparison: the two "
        "releases share no source_id (expected two versions of one release, matched on "
        "source_id) `"]
    assert not at.metric


def test_a_slow_browse_query_is_stopped_and_says_so():
    from audit.analysis import browse
    from audit.engine.scan import scan_release
    result = scan_release()
    browse.build_index(result)
    cur = result.release.con.cursor()
    with pytest.raises(browse.QueryTimeout, match="longer than 0.2 s"):
        with browse.time_limit(cur, 0.2):
            cur.execute("SELECT count(*) FROM range(1000000000000) a").fetchall()


def test_review_page_previews_a_stratified_batch_and_its_routing(tmp_path, settings_env):
    from audit.review import sampling
    settings_env(AUDIT_REVIEWS=tmp_path)
    at = page("7_Review")
    assert not at.exception
    strata = at.dataframe[0].value
    assert set(strata.columns) >= {"language", "unit", "available", "target", "chosen"}
    assert set(strata["language"]) == set(sampling.NON_ENGLISH)   # no en, no und
    assert dict(zip(strata["unit"], strata["target"])) == {"paragraph": 4, "question": 1,
                                                            "answer": 1}
    assert "Batch `" in markdown_text(at) and "138 units" in markdown_text(at)
    at.text_area(key="review_annotators").input(
        "ana@example.org:ar,fa\nbo@example.org:ar\ncy@example.org:fa").run()
    assert not at.exception
    pairs = at.dataframe[2].value      # [1]: the configured servers
    assert pairs.to_dict("records") == [
        {"group": "ar", "annotator 1": "ana@example.org", "annotator 2": "bo@example.org",
         "units": 6},
        {"group": "fa", "annotator 1": "cy@example.org", "annotator 2": "ana@example.org",
         "units": 6}]
    shortfall = at.dataframe[3].value
    assert "de" in set(shortfall["language"]) and "ar" not in set(shortfall["language"])
    at.text_area(key="review_annotators").input("not an email").run()
    assert any("is not an email address" in e.value for e in at.error)
    at.radio(key="review_design").set_value(next(
        o for o in at.radio(key="review_design").options if o.startswith("unverifiable"))).run()
    assert not at.exception
    # the demo's paragraphs the preservation checks cannot confirm (es 3, fr, ko, pt, ru 4)
    assert "10 units" in markdown_text(at)
    at.radio(key="review_kind").set_value("MAPLE realism pairs").run()
    assert not at.exception
    assert "30 units" in markdown_text(at)


def test_annotations_page_reports_agreement(tmp_path, settings_env):
    from test_roles import plant_batch  # hand-planted review
    settings_env(AUDIT_REVIEWS=plant_batch(tmp_path))
    at = page("8_Annotations")
    assert not at.exception
    scores = at.dataframe[0].value
    assert set(scores["statistic"]) >= {"cohen_kappa", "raw_agreement", "krippendorff_alpha"}
    assert "3 open, 0 skipped, 0 resolved" in markdown_text(at)
    charts = [json.loads(c.proto.spec)["data"][0]["type"] for c in at.get("plotly_chart")]
    # κ per language and per pair, ratings, preservation, consequences
    assert charts == ["bar"] * 5
    # Planted (test_agreement.planted_review): ann & bob, all de; ann answers 5 / yes /
    # cosmetic throughout, so p_e = p_o on each criterion and κ = 0 < 0.6: flagged.
    by_language, by_pair = at.dataframe[1].value, at.dataframe[2].value
    kappa = by_pair[by_pair["statistic"] == "cohen_kappa"]
    assert dict(zip(kappa["criterion"], zip(kappa["n_items"], kappa["estimate"],
                                            kappa["flagged"]))) == {
        "adequacy": (10, 0.0, True), "answer_preserved": (10, 0.0, True),
        "consequence": (10, 0.0, True)}
    german = by_language[(by_language["statistic"] == "cohen_kappa")
                         & (by_language["criterion"] == "adequacy")]
    assert german[["group", "n_items", "n_irregular"]].values.tolist() == [["de", 10, 1]]
    # Each κ below the floor with its criterion, slice, raw agreement and n: adequacy and
    # answer_preserved agree on 9 of 10 items (i03, i07), the consequence on 8 (i07, i09
    # cosmetic against none); the pooled table's κ too (one pair, one language: the same).
    def notes(where: str) -> str:
        return "; ".join([f"adequacy, {where}: κ 0.000, raw agreement 0.900, n = 10",
                          f"adequacy, {where}: κ linear 0.000, raw agreement 0.900, n = 10",
                          f"adequacy, {where}: κ quadratic 0.000, raw agreement 0.900, "
                          "n = 10",
                          f"answer_preserved, {where}: κ 0.000, raw agreement 0.900, n = 10",
                          f"consequence, {where}: κ 0.000, raw agreement 0.800, n = 10"])
    assert [w.value for w in at.warning] == [
        f"Below the κ floor 0.6, pooled: ` {notes('all items')} `",
        f"Below the κ floor 0.6, per language group: ` {notes('language de')} `",
        f"Below the κ floor 0.6, per annotator pair: ` {notes('pair ann & bob (de)')} `"]
    at.number_input(key="kappa_floor").set_value(-0.5).run()
    assert not at.warning and not at.dataframe[2].value["flagged"].any()
    # The planted items name no unit of the demo release in the sidebar: nothing to count.
    at.number_input(key="kappa_floor").set_value(0.6).run()
    versus = at.dataframe[-3].value
    assert list(versus["criterion"].unique()) == ["answer_preserved", "entities_preserved"]
    assert set(versus["units"]) == {0} and set(versus["left_out"]) == {9}
    final = at.dataframe[-2].value
    assert set(final["origin"].dropna()) == {"agreed"}
    queue = at.dataframe[-1].value
    assert list(queue["item_id"]) == ["i03", "i07", "i09"]
    assert set(queue["state"]) == {"open"}


def test_instance_highlights_the_evidence_of_a_heuristic_finding(tmp_path, settings_env):
    settings_env(AUDIT_DATA_ROOTS=str(tmp_path))
    from conftest import record, source

    from devkit import synth
    src = source(context=[["Lake", ["The lake is 1,642 metres deep."]]],
                 supporting_facts=[["Lake", 0]])
    row = record(src, context=[["See", ["Der See ist 1.624 Meter tief."], "German"]])
    synth.write_release([row], tmp_path / "release")
    at = page("2_Instance", release=str(tmp_path / "release"), row="0")
    assert not at.exception
    line = findings_at(at, "p00 · 0")
    assert '<mark class="ev">1.624</mark>' in line
    assert "number_mismatch: sentence: source 1,642 → translation 1.624" in line


def test_a_hotpotqa_source_attached_in_the_url_runs_the_checks_that_need_it(tmp_path, settings_env):
    """Without a source the Overview says which checks fall back; with the source in the
    view they run, and the scope line names it."""
    import shutil
    settings_env(AUDIT_DATA_ROOTS=str(tmp_path))
    release = tmp_path / "other"
    shutil.copytree(ROOT / "data" / "demo" / "release", release)
    for split in ("train", "validation"):
        shutil.copy(ROOT / "data" / "demo" / f"hotpot_source_{split}.json", tmp_path)
    bare = page("app", release=str(release))
    assert "No HotpotQA source is attached: ` 8 ` checks need it" in "\n".join(
        i.value for i in bare.info)
    attached = page("app", release=str(release),
                    source_train=str(tmp_path / "hotpot_source_train.json"),
                    source_validation=str(tmp_path / "hotpot_source_validation.json"))
    assert not attached.info or "No HotpotQA source" not in attached.info[0].value
    assert "HotpotQA source: hotpot_source_train.json, hotpot_source_validation.json" in \
        markdown_text(attached)
    assert {m.label: m.value for m in attached.metric} == {
        m.label: m.value for m in page("app").metric}      # = the demo with its sources


def test_instance_shows_the_english_sentences_without_hotpotqa_joining_spaces():
    from audit.analysis import queries
    from audit.engine.scan import scan_release
    item = queries.instance(scan_release(), 0)
    raw = [line["source"] for cand in item["candidates"] for line in cand["lines"]]
    assert sum(s.startswith(" ") for s in raw if s) >= 3      # HotpotQA's joining spaces
    shown = re.findall(r'<div class="xt" lang="en" dir="auto">(.)',
                       "\n".join(m.value for m in page("2_Instance", row="0").html))
    assert len(shown) >= len(raw) and " " not in shown
