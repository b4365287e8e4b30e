"""Error spans in the workbench (issue 46): the text with marked spans (render.marked_spans),
the Review page building a span batch, and the Annotations page's span section on a pulled
span batch planted without Label Studio (span_batch.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from audit.reports import render

ROOT = Path(__file__).resolve().parent.parent


def span(start: int, end: int, severity: str, category: str | None = None,
         origin: str | None = None) -> dict:
    return {"start": start, "end": end, "severity": severity, "category": category,
            "origin": origin}


def test_overlapping_spans_are_cut_at_every_boundary_and_show_the_most_severe():
    assert render.marked_spans("abcdef", [span(0, 4, "minor", "fluency/grammar"),
                                          span(2, 6, "major", origin="number_mismatch")]) == (
        '<div class="xt" dir="auto">'
        '<mark class="sp sp-minor" title="minor · fluency&#47;grammar">ab</mark>'
        '<mark class="sp sp-major sp-prefill" title="major · pre&#45;filled by the check '
        'number&#95;mismatch&#59; minor · fluency&#47;grammar">cd</mark>'
        '<mark class="sp sp-major sp-prefill" title="major · pre&#45;filled by the check '
        'number&#95;mismatch">ef</mark></div>')


def test_a_script_in_the_text_and_in_a_category_is_shown_never_run():
    marked = render.marked_spans("<script>alert(1)</script>",
                                 [span(0, 8, "critical", "<script>x</script>")], "fa")
    assert marked == (
        '<div class="xt xt-rtl" lang="fa" dir="auto"><mark class="sp sp-critical" '
        'title="critical · &#60;script&#62;x&#60;&#47;script&#62;">&#60;script&#62;</mark>'
        'alert&#40;1&#41;&#60;&#47;script&#62;</div>')
    assert "<script" not in marked


def test_offsets_count_code_points_so_an_astral_character_is_one():
    assert render.marked_spans("𝒳y𝒵z", [span(1, 2, "minor"), span(3, 4, "major")]) == (
        '<div class="xt" dir="auto">𝒳<mark class="sp sp-minor" title="minor">y</mark>𝒵'
        '<mark class="sp sp-major" title="major">z</mark></div>')


def test_a_hiding_character_in_a_title_is_a_token_and_an_unknown_severity_is_named():
    # A marker's own <span> would break the attribute: the title holds its token instead.
    assert render.marked_spans("ab", [span(0, 2, "odd", "a\u202eb")]) == (
        '<div class="xt" dir="auto"><mark class="sp sp-minor" title="odd · a⟨U&#43;202E⟩b">'
        'ab</mark></div>')


def test_the_legend_names_the_protocol_s_severities_and_pre_filled():
    assert render.span_legend(("minor", "major")) == (
        '<div class="sp-legend">Spans&#58; <mark class="sp sp-minor">minor</mark> '
        '<mark class="sp sp-major">major</mark> '
        '<mark class="sp sp-prefill">pre-filled by a check</mark></div>')


def test_evidence_marks_are_unchanged():
    assert render.paragraph("the <b>the</b> the", "en", evidence="<b>") == (
        '<div class="xt" lang="en" dir="auto">the <mark class="ev">&#60;b&#62;</mark>'
        "the&#60;&#47;b&#62; the</div>")


# ------------------------------------------------------------------------- the pages

def page(name: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.switch_page(f"pages/{name}.py")
    return at.run()


@pytest.mark.slow
def test_the_review_page_builds_a_span_batch_and_says_what_it_pre_fills(tmp_path,
                                                                          settings_env):
    settings_env(AUDIT_REVIEWS=tmp_path)
    at = page("7_Review")
    at.radio(key="review_kind").set_value("error spans (ESA / MQM)").run()
    assert not at.exception
    text = "\n".join(m.value for m in at.markdown)
    assert "Batch ` spans-esa-findings-" in text and "138 units" in text
    # The demo's findings that point at a place in the default design's units
    # (test_spans_kind: the same checks at the same texts).
    assert any(c.value.startswith("6 regions pre-filled on 2 units") for c in at.caption)
    assert at.dataframe[1].value.to_dict("records") == [
        {"check": "exact_source_copy", "severity": "major", "regions": 1, "units": 1,
         "languages": "ko"},
        {"check": "script_mismatch", "severity": "major", "regions": 5, "units": 2,
         "languages": "ko, zh"}]
    at.radio(key="review_protocol").set_value("mqm")
    at.radio(key="review_prefill").set_value("none").run()
    assert not at.exception
    assert "Batch ` spans-mqm-none-" in "\n".join(m.value for m in at.markdown)
    assert any(c.value.startswith("Nothing pre-filled") for c in at.caption)


@pytest.mark.slow
def test_the_annotations_page_shows_a_span_batch_s_agreement_checks_and_spans(
        tmp_path, settings_env):
    from span_batch import plant_span_batch
    settings_env(AUDIT_REVIEWS=plant_span_batch(tmp_path))
    at = page("8_Annotations")
    assert not at.exception
    # Characters of the three shown texts (45 + 42 + 29), ann's label by bob's:
    # none/none 83, minor/none 5 (Firma), none/minor 7 (<b>, </b>), major/minor 4 (1945),
    # none/major 9 ([missing]), major/major 8 (<script>). p_o = 91/116,
    # p_e = (99·88 + 5·11 + 12·17) / 116² = 8971/13456, κ = 0.3534.
    # Span F1: exact 2·2/8 (s2's <script>, s3's two empty sets), overlap 2·3/8 (and 1945).
    assert {m.label: m.value for m in at.metric} == {
        "Character κ, all items": "0.353", "Span F1, exact": "0.500",
        "Span F1, overlap": "0.750"}
    assert [w.value for w in at.warning] == [
        "Below the κ floor 0.6: ` character κ 0.353 is below the floor 0.6 for all items "
        "(raw agreement 0.784, 3 items, 116 characters); character κ 0.013 is below the "
        "floor 0.6 for language de (raw agreement 0.662, 2 items, 74 characters); character "
        "κ 0.353 is below the floor 0.6 for pair ann@example.org & bob@example.org (raw "
        "agreement 0.784, 3 items, 116 characters) `"]
    # The checks against people: ann kept the pre-filled 1945, bob deleted it; of the two
    # major spans in German (ann's 1945, bob's [missing]) the check proposed one.
    checks = at.dataframe[4].value
    german = checks[(checks["check"] == "number_mismatch") & (checks["language"] == "de")]
    assert german[["n_prefilled", "n_judgments", "n_kept", "share_kept", "n_deleted",
                   "n_serious", "n_serious_proposed", "recall"]].to_dict("records") == [
        {"n_prefilled": 1, "n_judgments": 2, "n_kept": 1, "share_kept": 0.5, "n_deleted": 1,
         "n_serious": 2, "n_serious_proposed": 1, "recall": 0.5}]
    # Spans in context: s1 first (German), each person's spans over the shown text.
    shown = "\n".join(h.value for h in at.html)
    assert ('<td>initial</td><td>ann&#64;example&#46;org</td><td>60</td><td><div class="xt" '
            'lang="de" dir="auto">Wer gründete die <mark class="sp sp-minor" title="minor">'
            'Firma</mark> &#60;b&#62;<mark class="sp sp-major sp-prefill" title="major · '
            'pre&#45;filled by the check number&#95;mismatch">1945</mark>&#60;&#47;b&#62;'
            '&#63; &#91;missing&#93;</div></td>') in shown
    assert ('<mark class="sp sp-minor" title="minor">&#60;b&#62;1945&#60;&#47;b&#62;</mark>'
            '&#63; <mark class="sp sp-major" title="major">&#91;missing&#93;</mark>') in shown
    assert "no final set yet &#40;disputed&#41;" in shown
    assert "Who founded the company in 1954&#63;" in shown
    at.selectbox(key="span_item").set_value("s2").run()
    shown = "\n".join(h.value for h in at.html)
    assert ('کتاب 𝒳 <mark class="sp sp-major" title="major">&#60;script&#62;</mark>'
            'alert&#40;1&#41;') in shown and "<script" not in shown
    assert '<td><b>final</b></td><td>agreed</td>' in shown
    # The span queue: s1 open (its extents differ), with the adjudicator push below it.
    assert any(m.value == "1 open, 0 skipped, 0 resolved: items whose two initial annotators "
               "differ in spans, severities or ESA scores (by more than 25)."
               for m in at.markdown)
    queue = at.dataframe[5].value
    assert queue[["item_id", "state"]].values.tolist() == [["s1", "open"]]
    assert list(queue["reasons"][0]) == ["spans"]
    assert at.text_area(key="adjudicators") is not None
    assert {b.label for b in at.get("download_button")} >= {
        f"{name} CSV" for name in ("span_kappa", "span_f1", "score_agreement",
                                   "language_scores", "checks_vs_people", "span_queue",
                                   "final_spans", "prefill_fates")}
