"""The Evaluate, Judge and Retrieval pages on the demo files (Streamlit AppTest)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

# Each test runs pages in Streamlit's AppTest: seconds apiece.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent


def page(name: str, **params) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.query_params.update(params)
    at.switch_page(f"pages/{name}.py")
    return at.run()


def test_evaluate_page_shows_metrics_slices_contrasts_and_links():
    at = page("9_Evaluate")
    assert not at.exception and not at.error
    metrics = {m.label: m.value for m in at.metric}
    assert set(metrics) == {"Answer F1 (A)", "Support F1 (A)", "Joint F1 (A)",
                            "MacroLang answer F1 (A)"}
    slices = at.dataframe[0].value
    assert set(slices["family"]) == {"question_language"} and set(slices["run"]) == {"A", "B"}
    # The 24 languages and the demo's planted unknown-language row ('und').
    assert len(slices) == 2 * 25 and "und" in set(slices["group"])
    assert (slices["ci_low"] <= slices["mean"]).all()
    contrasts = at.dataframe[1].value
    assert "S4 − S2" in set(contrasts["contrast"]) and (contrasts["p_holm"] >= contrasts[
        "p_value"]).all()
    rows = at.dataframe[-1].value
    assert rows["open"].str.match(r"^/Instance\?row=\d+$").all()
    chart = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert [t["name"] for t in chart["data"]] == ["file A", "file B"]


def test_evaluate_page_names_a_bad_prediction_file(tmp_path, settings_env):
    settings_env(AUDIT_DATA_ROOTS=f"{tmp_path}:{ROOT / 'data'}")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1}\n', encoding="utf-8")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.switch_page("pages/9_Evaluate.py").run()
    at.sidebar.text_input(key="pred_a").set_value(str(bad))
    at.sidebar.text_input(key="pred_b").set_value("")
    at.run()
    assert not at.exception
    assert "line 1" in at.error[0].value and "no string id" in at.error[0].value


def test_judge_page_validates_reports_and_calibrates():
    at = page("10_Judge")
    assert not at.exception and not at.error and not at.warning
    # The demo's 8/2/2 design: its only departures, listed beside each file.
    sizes = at.dataframe[1].value
    assert list(sizes["check"]) == ["design"] * 3 and list(sizes["n"]) == [184, 46, 46]
    # Both heatmaps: the same languages (by name) in the same order, the same units.
    maps = [json.loads(c.proto.spec)["data"][0] for c in at.get("plotly_chart")
            if json.loads(c.proto.spec)["data"][0]["type"] == "heatmap"]
    assert len(maps) == 2 and maps[0]["y"] == maps[1]["y"] and maps[0]["x"] == maps[1]["x"]
    assert maps[0]["x"] == ["paragraph", "question", "answer"] and "Arabic" in maps[0]["y"]
    assert any("independent, unpaired samples" in c.value for c in at.caption)
    pooled = at.dataframe[2].value
    assert pooled.set_index("unit").loc["all", "mean"] == pytest.approx(92.098, abs=5e-4)
    assert at.selectbox(key="judge_human").value == "demo: synthetic ratings"
    worst = at.dataframe[-1].value
    assert len(worst) == 20 and worst["open"].str.match(r"^/Instance\?row=\d+$").all()


def test_judge_page_reads_a_pulled_review_batch(tmp_path, settings_env):
    import pyarrow.parquet as pq

    from audit.settings import DEMO_EVALUATION
    from devkit.evaluation import demo_reviews
    batch = tmp_path / "batch-x"
    batch.mkdir()
    pq.write_table(demo_reviews.annotations(pq.read_table(DEMO_EVALUATION / "judge-v1.parquet")),
                   batch / "annotations.parquet")
    settings_env(AUDIT_REVIEWS=tmp_path)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.switch_page("pages/10_Judge.py").run()
    box = at.selectbox(key="judge_human")
    assert "review batch batch-x" in box.options
    box.set_value("review batch batch-x").run()
    assert not at.exception


def test_retrieval_page_scores_the_demo_runs():
    at = page("11_Retrieval")
    assert not at.exception and not at.error
    metrics = at.dataframe[0].value
    assert set(metrics["metric"]) == {"all_aspect", "any_aspect", "aspect_coverage",
                                      "recall_motivation", "recall_method",
                                      "recall_experiment-result"}
    assert set(metrics["k"]) == {5, 10, 20}
    row = metrics[(metrics["run"] == "A") & (metrics["k"] == 20)].set_index("metric")
    assert row.loc["all_aspect", "value"] <= row.loc["aspect_coverage", "value"] <= row.loc[
        "any_aspect", "value"]
    comparison = at.dataframe[1].value
    assert (comparison["p_holm"] >= comparison["p_value"]).all()


def test_path_boxes_are_prefilled_relative_and_retrieval_has_no_release_picker():
    """Issue 24: no absolute server path in a box; no release picker where it is unused."""
    boxes = {"9_Evaluate": ("pred_a", "data/evaluation_demo/predictions-a.jsonl"),
             "10_Judge": ("judge_b", "data/evaluation_demo/judge-v2.parquet"),
             "11_Retrieval": ("ret_run_a", "data/evaluation_demo/maple-run-a.txt")}
    for name, (key, shown) in boxes.items():
        at = page(name)
        assert not at.exception and at.sidebar.text_input(key=key).value == shown
        assert not any(str(ROOT) in box.value for box in at.sidebar.text_input)
        keys = {box.key for box in at.sidebar.text_input}
        assert ("path_release" in keys) == (name != "11_Retrieval"), name
    scope = [m.value for m in page("11_Retrieval").html if 'class="scope"' in m.value]
    assert scope == []


def test_judge_page_opens_on_the_demo_with_one_info_line_and_no_warning():
    """Issue 48: the demo's small size is no fault of the user's: one calm line says what
    to give the page to see more."""
    at = page("10_Judge")
    assert not at.exception and not at.error
    assert [w.value for w in at.warning] == []
    assert [i.value for i in at.info] == [
        "The bundled demo judge files are small synthetic samples (8 paragraph + 2 question "
        "+ 2 answer units per language, where the design has 80 + 20 + 20), so their "
        "intervals are wide. To validate and score a full sample, name your own judge files "
        "(26-field Parquet) in the sidebar or upload one or two."]
    assert [s.value for s in at.success] == [
        "Matches the 26-field schema, one prompt per unit, sampling seed 20260810, and every "
        "unit joins this release; smaller than the 23 × (80 + 20 + 20) design, as a demo "
        "file is."] * 2


def test_a_judge_file_of_ones_own_still_warns_of_its_departures(tmp_path, settings_env):
    """The same bytes under another name are the user's own sample: a smaller design is a
    departure to warn of, and a bad score an error, with no demo line."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from audit.settings import DEMO_EVALUATION
    settings_env(AUDIT_DATA_ROOTS=f"{tmp_path}:{ROOT / 'data'}")
    table = pq.read_table(DEMO_EVALUATION / "judge-v1.parquet")
    scores = table.column("score").to_pylist()
    scores[0] = 140
    mine = tmp_path / "judge-mine.parquet"
    pq.write_table(table.set_column(table.schema.get_field_index("score"), "score",
                                    pa.array(scores, table.schema.field("score").type)), mine)
    assert pc.max(pq.read_table(mine).column("score")).as_py() == 140
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.switch_page("pages/10_Judge.py").run()
    at.sidebar.text_input(key="judge_a").set_value(str(mine))
    at.sidebar.text_input(key="judge_b").set_value("")
    at.run()
    assert not at.exception and not at.error and not at.info
    assert [w.value for w in at.warning] == ["4 departures from the schema and design "
                                             "(1 error)."]
    issues = at.dataframe[0].value
    assert list(issues["check"]) == ["score", "design", "design", "design"]
    assert issues["detail"].iloc[0] == "1 score(s) outside 0–100"
