"""The acceptance report as one self-contained HTML page: the verdicts, the numbers and
thresholds of each criterion, and the figures."""

from __future__ import annotations

import math

import plotly.graph_objects as go
import plotly.io as pio

from . import acceptance, render
from .acceptance import FAIL, PASS
from .compare import Comparison


def figures(comparison: Comparison, evidence: dict | None) -> list[tuple[str, go.Figure]]:
    """The report's Plotly figures: status transitions, ΔR per slice, ΔH and preservation
    per language."""
    out = [("Status of matched rows, OLD → NEW", transitions_figure(comparison)),
           ("ΔR per unit kind and language (95% interval)", _delta_r(comparison))]
    if evidence is not None and evidence["delta_h_by_language"]:
        out.append(("ΔH per language (Eq. 37, 95% interval)", _delta_h(evidence)))
    return out


def transitions_figure(comparison: Comparison) -> go.Figure:
    """Matched rows from each OLD status to each NEW one: every node names its status and
    its rows, in the status's colour, dark text on white."""
    rows = comparison.transitions.to_pylist()
    statuses = ["accepted", "review_required", "quarantined", "absent"]
    index = {s: i for i, s in enumerate(statuses)}
    counts = {(side, s): sum(r["rows"] for r in rows if r[f"{side}_status"] == s)
              for side in ("old", "new") for s in statuses}
    labels = [f"{side.upper()} {s.replace('_', ' ')}: {counts[side, s]:,}"
              for side in ("old", "new") for s in statuses]
    fig = go.Figure(go.Sankey(
        node={"label": [render.chart_label(label) for label in labels], "pad": 14,
              "color": [STATUS_COLOURS[s] for s in statuses] * 2,
              "line": {"color": "#555", "width": 0.5}},
        link={"source": [index[r["old_status"]] for r in rows],
              "target": [len(statuses) + index[r["new_status"]] for r in rows],
              "value": [r["rows"] for r in rows],
              "color": [STATUS_COLOURS[r["new_status"]].replace("rgb", "rgba")
                        .replace(")", ", 0.35)") for r in rows]},
        textfont={"color": "#111", "size": 13}))
    fig.update_layout(height=340, margin={"l": 10, "r": 10, "t": 10, "b": 10})
    return fig


STATUS_COLOURS = {"accepted": "rgb(60, 154, 87)", "review_required": "rgb(230, 155, 34)",
                  "quarantined": "rgb(192, 57, 43)", "absent": "rgb(150, 150, 150)"}


def interval_figure(labels: list[str], estimates: list, lows: list, highs: list,
                     axis: str, percent: bool = False) -> go.Figure:
    fig = go.Figure(go.Scatter(
        x=estimates, y=[render.chart_label(label) for label in labels], mode="markers",
        error_x={"type": "data", "symmetric": False,
                 "array": [h - e for h, e in zip(highs, estimates)],
                 "arrayminus": [e - lo for e, lo in zip(estimates, lows)]}))
    fig.add_vline(x=0, line_dash="dot")
    fig.update_yaxes(autorange="reversed")   # the first label on top, as in the tables
    fig.update_layout(height=max(240, 22 * len(labels)), xaxis_title=axis,
                      margin={"l": 10, "r": 10, "t": 10, "b": 10})
    if percent:      # fractions shown as the tables show them
        fig.update_xaxes(tickformat=".1%")
        fig.update_traces(hovertemplate="%{y}: %{x:+.2%}<extra></extra>")
    return fig


def _delta_r(comparison: Comparison) -> go.Figure:
    rows = [r for r in comparison.structural.to_pylist()
            if r["by"] in ("all", "unit", "language") and not math.isnan(r["ci_low"])]
    return interval_figure([f"{r['by']}: {r['group']}" for r in rows],
                            [r["delta"] for r in rows], [r["ci_low"] for r in rows],
                            [r["ci_high"] for r in rows], "ΔR = R_new − R_old", percent=True)


def _delta_h(evidence: dict) -> go.Figure:
    rows = [r for r in evidence["delta_h_by_language"] if r["ci"][0] is not None]
    return interval_figure([r["language"] for r in rows], [r["estimate"] for r in rows],
                            [r["ci"][0] for r in rows], [r["ci"][1] for r in rows],
                            "ΔH = h_new − h_old")


def _number(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        return "[" + ", ".join(_number(v) for v in value) + "]"
    if isinstance(value, dict):
        return "; ".join(f"{k} {_number(v)}" for k, v in value.items())
    return str(value)


def report_html(decision: "acceptance.Decision", comparison: Comparison, evidence: dict | None) -> str:
    """One self-contained page (Plotly inlined once, nothing fetched): the verdicts, the
    numbers and thresholds of each criterion, and the figures. Every outside string (release
    names, languages, checks) goes through audit.reports.render."""
    rows = [[render.text(c.criterion), render.text(c.name),
             render.badge(c.verdict, {PASS: "accepted", FAIL: "blocking"}.get(
                 c.verdict, "review")),
             render.text(c.reason),
             render.text(_number({k: v for k, v in c.numbers.items() if k != "flags"}
                                 if c.name == "preservation" else c.numbers)),
             render.text(_number(c.thresholds))] for c in decision.criteria]
    if "flags" in decision.criteria[3].numbers:
        flag_rows = [[render.text(flag)] + [render.text(_number(row[k])) for k in
                                            ("units", "old_rate", "new_rate", "difference",
                                             "ci", "b", "c", "p_value")]
                     for flag, row in decision.criteria[3].numbers["flags"].items()]
        flags = render.table(["flag", "units", "old", "new", "new − old", "95% interval",
                              "b (kept→lost)", "c (lost→kept)", "McNemar p"], flag_rows)
    else:
        flags = ""
    plots = []
    for i, (title, fig) in enumerate(figures(comparison, evidence)):
        plots.append(f"<h3>{render.text(title)}</h3>" +
                     pio.to_html(fig, full_html=False, include_plotlyjs=(i == 0)))
    old, new = decision.old, decision.new
    return "\n".join([
        "<!DOCTYPE html>", '<html><head><meta charset="utf-8">',
        "<title>Release acceptance</title>", render.CSS.strip(),
        "<style>body{font-family:sans-serif;max-width:70em;margin:1em auto;}</style>",
        "</head><body>",
        f"<h1>Release acceptance: {render.badge(decision.verdict.upper(), {PASS: 'accepted', FAIL: 'blocking'}.get(decision.verdict, 'review'))}</h1>",
        f"<p>OLD {render.text(old['release'])} ({render.text(old['layout'])}, "
        f"{old['rows']:,} rows) → NEW {render.text(new['release'])} "
        f"({render.text(new['layout'])}, {new['rows']:,} rows); reviews "
        f"{render.text(decision.reviews or 'none')}</p>",
        render.table(["#", "criterion", "verdict", "why", "numbers", "thresholds"], rows),
        flags, *plots,
        f"<p><i>{render.text(decision.note)}</i></p>", "</body></html>"])
