"""Error spans in the workbench (issue 46): the text with marked spans (render.marked_spans)."""

from __future__ import annotations

from audit.reports import render


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
