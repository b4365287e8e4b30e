"""Every page renders on the demo release with the expected content (Streamlit AppTest)."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 60


def page(name: str, **params) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.query_params.update(params)
    at.switch_page(f"pages/{name}.py") if name != "app" else None
    return at.run()


def markdown_text(at: AppTest) -> str:
    """The markdown sources, with the entities the pages use for dataset text decoded."""
    return html.unescape("\n".join(m.value for m in at.markdown))


def test_findings_page_lists_checks_and_categories():
    at = page("3_Findings")
    assert not at.exception
    table = at.dataframe[0].value
    counts = dict(zip(table["check"], table["findings"]))
    assert counts["exact_source_copy"] == 430 and counts["blank_sentence"] == 6
    assert at.selectbox[0].value == "exact_source_copy"
    heatmap = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert heatmap["data"][0]["type"] == "heatmap"
    categories = at.dataframe[2].value
    assert dict(zip(zip(categories["category"], categories["unit"]),
                    categories["findings"]))[("name_like", "title")] == 333


def test_findings_drill_down_follows_the_selected_check():
    at = page("3_Findings", check="placeholder_sentence")
    examples = at.dataframe[1].value
    assert list(examples["paragraph_id"]) and set(examples["detail"].str[:11]) == {
        "placeholder"}
    assert len(examples) == 3


def findings_at(at: AppTest, location: str) -> str:
    """The rendered line of one sentence ('p00 · 1'), findings included."""
    lines = [html.unescape(m.value) for m in at.markdown
             if f">{location}" in html.unescape(m.value)]
    assert len(lines) == 1, location
    return lines[0]


@pytest.mark.parametrize(("row", "location"), [(72, "p00 · 1"), (76, "p00 · 0")])
def test_instance_shows_the_planted_blank_sentence_at_its_sentence(row, location):
    at = page("2_Instance", row=str(row))
    assert not at.exception
    assert "blank_sentence: translated sentence is blank" in findings_at(at, location)
    assert markdown_text(at).count("blank_sentence") == 1
    assert at.number_input[0].value == row


def test_browse_facet_changes_counts_and_url():
    at = page("1_Browse")
    assert not at.exception
    assert "**240** of 240 rows match" in markdown_text(at)
    language = next(m for m in at.sidebar.multiselect if m.label == "Question language ℓq")
    language.set_value(["fa", "ur"]).run()
    assert "**21** of 240 rows match" in markdown_text(at)
    assert at.query_params["question_language"] == "fa,ur"
    table = at.dataframe[0].value
    assert len(table) == 21 and set(table["question_language"]) == {"fa", "ur"}
    stratum = next(m for m in at.sidebar.multiselect if m.label == "Stratum")
    assert {o.split(" (")[0] for o in stratum.options} >= {"S2", "S3", "S4"}


def test_browse_deep_link_applies_the_filter():
    at = page("1_Browse", question_language="fa,ur", stratum="S4")
    table = at.dataframe[0].value
    assert set(table["stratum"]) == {"S4"} and set(table["question_language"]) <= {"fa", "ur"}
    language = next(m for m in at.sidebar.multiselect if m.label == "Question language ℓq")
    assert language.value == ["fa", "ur"]


def button(at: AppTest, label: str):
    return next(b for b in at.button if b.label == label)


def test_instance_previous_next_follow_the_filter():
    rows = list(page("1_Browse", question_language="fa").dataframe[0].value["row"])
    assert len(rows) >= 3
    at = page("2_Instance", question_language="fa", row=str(rows[1]))
    button(at, "next ▶").click().run()
    assert at.query_params["row"] == str(rows[2])
    assert at.number_input[0].value == rows[2]
    button(at, "◀ previous").click().run()
    assert at.query_params["row"] == str(rows[1])


def test_mixing_page_shows_expected_and_realised():
    at = page("4_Mixing")
    assert not at.exception
    rates = at.dataframe[0].value
    overall = rates[rates["measure"] == "I"].iloc[0]
    assert (overall["n"], overall["count"]) == (236, 236)
    assert round(overall["expected"], 4) == 0.9976
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert [c["data"][0]["type"] for c in charts] == ["scatter", "bar", "heatmap"]
    counts = at.dataframe[1].value
    assert set(counts["facet"]) == {at.radio[1].value}


def test_export_page_filters_downloads_and_compares(tmp_path, monkeypatch):
    from audit import export
    monkeypatch.setattr(export, "SCANS", tmp_path / "scans")
    at = page("6_Export")
    assert not at.exception
    assert "reasons on 78 rows" in markdown_text(at)
    whole = at.dataframe[0].value
    assert set(whole["status"]) == {"quarantined", "review_required"}
    at.radio[0].set_value("current Browse filter")
    at.query_params["question_language"] = "fa"
    at.run()
    filtered = at.dataframe[0].value
    browse_rows = page("1_Browse", question_language="fa").dataframe[0].value
    assert set(filtered["id"]) <= set(browse_rows["id"]) and len(filtered) < len(whole)
    assert [b.label for b in at.get("download_button")] == [
        "Download CSV", "Download JSONL", "Download PARQUET"]
    button(at, "Save this scan (findings, status, summary, manifest)").click().run()
    assert len(list((tmp_path / "scans").glob("*/*/manifest.json"))) == 1
    saved = str(next((tmp_path / "scans").glob("*/*")))
    at.text_input(key="compare_with").input(saved).run()
    assert "0 rows differ" in markdown_text(at)


def test_a_slow_browse_query_is_stopped_and_says_so():
    from audit import browse
    from audit.workspace import scan_release
    result = scan_release()
    browse.build_index(result)
    cur = result.release.con.cursor()
    with pytest.raises(browse.QueryTimeout, match="longer than 0.2 s"):
        with browse.time_limit(cur, 0.2):
            cur.execute("SELECT count(*) FROM range(1000000000000) a").fetchall()


def test_review_page_previews_a_stratified_batch():
    at = page("7_Review")
    assert not at.exception
    strata = at.dataframe[0].value
    assert set(strata.columns) >= {"language", "unit", "available", "target", "chosen"}
    assert (strata["chosen"] <= 2).all() and (strata["target"] == 2).all()
    assert "Batch `" in markdown_text(at)
    at.radio(key="review_kind").set_value("MAPLE realism pairs").run()
    assert not at.exception
    assert "30 pairs" in markdown_text(at)


def test_annotations_page_reports_agreement(tmp_path, monkeypatch):
    import pyarrow.parquet as pq
    from audit.review import loop
    from test_agreement import annotations, planted_review   # hand-planted review
    batch = tmp_path / "demo-batch"
    batch.mkdir()
    (batch / "ledger.json").write_text(json.dumps(
        {"batch_id": "demo-batch", "config": "translation_review", "kind": "translation",
         "projects": {}}))
    pq.write_table(annotations(planted_review()), batch / "annotations.parquet")
    monkeypatch.setattr(loop, "REVIEWS", tmp_path)
    at = page("8_Annotations")
    assert not at.exception
    scores = at.dataframe[0].value
    assert set(scores["statistic"]) >= {"cohen_kappa", "raw_agreement", "krippendorff_alpha"}
    assert "3 items on which the two initial annotators disagree" in markdown_text(at)
    charts = [json.loads(c.proto.spec)["data"][0]["type"] for c in at.get("plotly_chart")]
    assert charts == ["bar", "bar", "bar"]      # ratings, preservation, consequences
    queue = at.dataframe[-1].value
    assert list(queue["item_id"]) == ["i03", "i07", "i09"]


def test_instance_highlights_the_evidence_of_a_heuristic_finding(tmp_path):
    from audit import synth
    from conftest import record, source
    src = source(context=[["Lake", ["The lake is 1,642 metres deep."]]],
                 supporting_facts=[["Lake", 0]])
    row = record(src, context=[["See", ["Der See ist 1.624 Meter tief."], "German"]])
    synth.write_release([row], tmp_path / "release")
    at = page("2_Instance", release=str(tmp_path / "release"), row="0")
    assert not at.exception
    line = findings_at(at, "p00 · 0")
    assert '<mark class="ev">1.624</mark>' in line
    assert "number_mismatch: sentence: source 1,642 → translation 1.624" in line
