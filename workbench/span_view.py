"""The Annotations page's section for an error-span batch (ESA / MQM, issue 46), shown
instead of the categorical agreement sections: character κ and span F1 with n and
intervals (each κ below the floor named), ESA scores and MQM penalties per language, the
checks measured against people, each item's spans over its text, the span adjudication
queue, and every report table as CSV (audit/review/kinds/spans.py `tables`)."""

from __future__ import annotations

import pyarrow as pa
import streamlit as st

from audit.io import tables as export
from audit.reports import render
from audit.review import agreement, kinds, reports, spans, workspace
from audit.review.kinds import spans as span_kind
from audit.settings import current
from workbench import adjudication
from workbench.shell import html, say, show_table

# The interval columns each report gives in percent (shares), by report.
PERCENT = {"checks_vs_people": ("share_kept", "kept_low", "kept_high", "share_unchanged",
                                "unchanged_low", "unchanged_high", "recall", "recall_low",
                                "recall_high")}
SHOWN = ("span_kappa", "span_f1", "score_agreement", "language_scores", "checks_vs_people",
         "span_queue")


def _files(batch_id: str) -> workspace.Workspace:
    return workspace.Workspace(batch_id, current().reviews)


def applies(batch_id: str) -> bool:
    """Whether the batch's kind brings its own report tables (error spans)."""
    return kinds.of_config(_files(batch_id).ledger()["config"]).tables is not None


@st.cache_data(show_spinner="Computing span agreement and reports…")
def _tables(batch_id: str, rows: int, latest: str, floor: float, _table: pa.Table
            ) -> dict[str, pa.Table]:
    kind = kinds.of_config(_files(batch_id).ledger()["config"])
    assert kind.tables is not None
    return kind.tables(_table, _files(batch_id), kappa_floor=floor)


def show(batch_id: str, table: pa.Table) -> None:
    """The whole section for a pulled span batch."""
    floor = st.number_input("κ floor (a slice whose character κ is below it is flagged)",
                            min_value=-1.0, max_value=1.0, value=agreement.KAPPA_FLOOR,
                            step=0.05, key="kappa_floor")
    latest = str(max(table.column("updated_at").to_pylist()))
    found = _tables(batch_id, table.num_rows, latest, float(floor), table)
    _agreement(batch_id, found, float(floor))
    _scores(batch_id, found)
    _checks(batch_id, found)
    _in_context(batch_id, table, found)
    st.subheader("Span adjudication queue")
    adjudication.queue_section(batch_id, found["span_queue"], "items whose two initial "
                               "annotators differ in spans, severities or ESA scores (by "
                               f"more than {spans.ESA_TOLERANCE:g})")
    _download(batch_id, "span_queue", found["span_queue"])
    st.subheader("Further tables")
    for name, report in found.items():
        if name not in SHOWN:
            with st.expander(name.replace("_", " ").capitalize()):
                show_table(report, percent=PERCENT.get(name, ()), height=260)
                _download(batch_id, name, report)


def _table(batch_id: str, found: dict[str, pa.Table], name: str, caption: str,
           columns: list[str]) -> None:
    """One report: what it holds, its columns that matter, and its CSV."""
    st.caption(caption)
    show_table(found[name].select(columns))
    _download(batch_id, name, found[name])


def _download(batch_id: str, name: str, report: pa.Table) -> None:
    st.download_button(f"{name} CSV", export.to_bytes(report, "csv"),
                       file_name=f"{batch_id}-{name}.csv", mime="text/csv", key=f"csv-{name}")


def _interval(value: float, row: dict) -> str:
    """An estimate with its row's 95% interval, or none (an undefined estimate)."""
    if row["ci_low"] != row["ci_low"]:
        return f"{_number(value)} (no interval)"
    return f"{_number(value)} [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"


def _agreement(batch_id: str, found: dict[str, pa.Table], floor: float) -> None:
    st.subheader("Agreement on spans")
    kappa, f1 = found["span_kappa"].to_pylist(), found["span_f1"].to_pylist()
    pooled = next(r for r in kappa if r["by"] == "all")
    exact, overlap = (next(r for r in f1 if r["by"] == "all" and r["statistic"] == name)
                      for name in ("f1_exact", "f1_overlap"))
    left, middle, right = st.columns(3)
    left.metric("Character κ, all items", _number(pooled["kappa"]))
    middle.metric("Span F1, exact", _number(exact["estimate"]))
    right.metric("Span F1, overlap", _number(overlap["estimate"]))
    st.caption(f"Over {pooled['n_items']:,} items with two initial annotations "
               f"({pooled['n_characters']:,} characters), with 95% intervals: character κ "
               f"{_interval(pooled['kappa'], pooled)}, span F1 exact "
               f"{_interval(exact['estimate'], exact)}, overlap "
               f"{_interval(overlap['estimate'], overlap)}. "
               "Character κ: each character none, minor or major for each annotator; span "
               "F1: spans matched one to one, by the same extent (exact) or one shared "
               "character (overlap). Intervals: bootstrap over source instances; per "
               "language and per annotator pair below.")
    notes = [r["note"] for r in kappa if r["flagged"]]
    if notes:
        say(st.warning, f"Below the κ floor {floor:g}: {{notes}}", notes="; ".join(notes))
    _table(batch_id, found, "span_kappa", "Character κ per slice: all items, each "
           "language, each annotator pair.", ["by", "group", "n_items", "n_characters",
                                              "kappa", "ci_low", "ci_high", "raw_agreement",
                                              "state", "language", "note"])
    _table(batch_id, found, "span_f1", "Span F1 per slice, exact and overlap, each also "
           "requiring the same severity.", ["by", "group", "statistic", "n_items",
                                             "n_spans_1", "n_spans_2", "n_matched",
                                             "estimate", "ci_low", "ci_high", "note"])
    _table(batch_id, found, "score_agreement", "The two annotators' ESA scores (0–100) and "
           "MQM penalties: Pearson's r and Kendall's τ-b per slice.",
           ["by", "group", "score", "statistic", "n_items", "estimate", "ci_low", "ci_high",
            "note"])


def _number(value: float) -> str:
    return "undefined" if value != value else f"{value:.3f}"


def _scores(batch_id: str, found: dict[str, pa.Table]) -> None:
    st.subheader("ESA score and MQM penalty per language")
    st.caption("Each unit's final score (the adjudicator's, else the mean of its two initial "
               "annotators'); MQM penalty per 100 English words (weights minor 1, major 5, "
               "critical 25 unless the batch sets its own).")
    _chart("language_scores", found["language_scores"])
    show_table(found["language_scores"], column_config={
        name: st.column_config.NumberColumn(format="%.1f")
        for name in ("mean", "ci_low", "ci_high")})
    _download(batch_id, "language_scores", found["language_scores"])


def _chart(name: str, report: pa.Table) -> None:
    figure = reports.figure(name, report)
    if figure is not None:
        st.plotly_chart(figure, key=f"chart-{name}")


def _checks(batch_id: str, found: dict[str, pa.Table]) -> None:
    st.subheader("The checks measured against people")
    checks = found["checks_vs_people"]
    st.caption("Per check and language: of the pre-filled spans each initial annotator "
               "judged, the share kept (as is or re-bounded: precision as people judge it), "
               "and of the people's major and critical spans, the share some pre-filled span "
               "of the check overlaps (recall); Wilson 95% intervals, n beside each. It rests "
               "on the pre-filled regions of this batch's push (prefill.parquet) and the "
               "initial annotators' spans; two people's judgments of one span count twice.")
    if checks.num_rows == 0:
        st.caption("Nothing was pre-filled in this batch: no check to measure.")
        return
    _chart("checks_vs_people", checks)
    # The shares and their n first: they fit the page's width; the counts behind them follow.
    show_table(checks.select(
        ["check", "language", "n_judgments", "share_kept", "kept_low", "kept_high",
         "n_serious", "recall", "recall_low", "recall_high", "n_prefilled", "n_kept",
         "n_deleted", "n_serious_proposed"]), percent=PERCENT["checks_vs_people"])
    _download(batch_id, "checks_vs_people", checks)


# ------------------------------------------------------------------------- in context

def _in_context(batch_id: str, table: pa.Table, found: dict[str, pa.Table]) -> None:
    """One item's English source, then its translation with each person's spans, the
    checks' pre-filled ones and the final set marked."""
    st.subheader("Spans in context")
    files = _files(batch_id)
    marked, scored = (t.to_pylist() for t in span_kind.annotated(table, files))
    prefill = span_kind.prefill_of(files).to_pylist()
    units = {row["item_id"]: row for row in files.items().to_pylist()}
    with_spans = sorted({row["item_id"] for row in (*marked, *prefill)},
                        key=lambda item: (units[item]["language"], item))
    if not with_spans:
        st.caption("No span marked or pre-filled on any item yet.")
        return
    item = st.selectbox("Item (with spans)", with_spans, key="span_item",
                        format_func=lambda i: render.visible(
                            f"{units[i]['language']} · {units[i]['unit']} · {i}"))
    task = files.tasks()[item]
    language = units[item]["language"]
    shown = task["translation_text"]
    # What the checks proposed, when the batch was pre-filled at all.
    proposed = [r for r in prefill if r["item_id"] == item]
    rows = [[render.strong("pre-filled"), render.text("the checks"), "",
             render.marked_spans(shown, proposed, language) if proposed else
             render.missing("nothing pre-filled on this unit")]] if prefill else []
    for who in sorted((r for r in scored if r["item_id"] == item),
                      key=lambda r: (r["role"] != "initial", r["annotator"])):
        theirs = [s for s in marked if s["item_id"] == item
                  and (s["annotator"], s["role"]) == (who["annotator"], who["role"])]
        rows.append([render.text(who["role"]), render.text(who["annotator"]),
                     render.text(f"{who['esa_score']:g}"),
                     render.marked_spans(shown, theirs, language)])
    rows.append(_final_row(found, item, shown, language))
    severities = span_kind.SEVERITIES[files.ledger().get("settings", {}).get(
        "protocol", span_kind.DEFAULTS["protocol"])]
    html(render.strong("English source"), render.paragraph(task["source_text"], "en"),
         render.span_legend(severities),
         render.table(["", "who", "ESA score", "the translation as shown"], rows))


def _final_row(found: dict[str, pa.Table], item: str, shown: str, language: str) -> list[str]:
    status = next(r["status"] for r in found["final_items"].to_pylist()
                  if r["item_id"] == item)
    final = [r for r in found["final_spans"].to_pylist() if r["item_id"] == item]
    text = render.marked_spans(shown, final, language) if status in (
        "agreed", "adjudicated") else render.missing(f"no final set yet ({status})")
    return [render.strong("final"), render.text(status), "", text]
