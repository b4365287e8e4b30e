"""The Plotly figures of the review reports (the Annotations page and `review report --out`
draw the same ones): the agreement charts here, each kind's own in its module
(kinds/<kind>.py, a Chart per report), drawn through `draw`. Plotly reads a little HTML in
text, so every category label that comes from data passes through
audit.render.chart_label. Plotly is imported only by the chart functions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import pyarrow as pa

from ..reports.render import chart_label


@dataclass(frozen=True)
class Chart:
    """How one report is charted: its title and a figure of its rows; `panels`: one
    panel per criterion (a taller figure, sized by its panels)."""

    title: str
    figure: Callable[[list[dict]], Any]
    panels: bool = False


def draw(chart: Chart, table: pa.Table):
    """The chart's figure of a report, or None when the report has no rows."""
    if table.num_rows == 0:
        return None
    fig = chart.figure(table.to_pylist())
    if chart.panels:
        fig.update_layout(title=chart.title, margin={"t": 70, "b": 40})
    else:
        fig.update_layout(title=chart.title, height=380, margin={"t": 50, "b": 40})
    return fig


def bars():
    """An empty figure for a bar chart."""
    import plotly.graph_objects as go
    return go.Figure()


def _agreement(rows: list[dict]):
    fig = bars()
    for statistic in ("cohen_kappa", "cohen_kappa_quadratic", "krippendorff_alpha"):
        part = [r for r in rows if r["statistic"] == statistic]
        if part:
            fig.add_bar(name=statistic, x=[chart_label(r["criterion"]) for r in part],
                        y=[r["estimate"] for r in part], error_y=error_bars(part, "estimate"))
    fig.update_layout(barmode="group", yaxis_title="estimate")
    return fig


KAPPAS = ("cohen_kappa", "cohen_kappa_linear")


def _small_multiples(rows: list[dict]):
    """One panel per criterion: unweighted (and, for ratings, linear) κ of each group with
    its interval, n under the group's name, and the policy floor as a dashed line."""
    from plotly.subplots import make_subplots
    criteria = list(dict.fromkeys(r["criterion"] for r in rows))
    fig = make_subplots(rows=len(criteria), cols=1,
                        subplot_titles=[chart_label(c) for c in criteria])
    for index, criterion in enumerate(criteria, start=1):
        for statistic, colour in zip(KAPPAS, ("#1f77b4", "#ff7f0e")):
            part = [r for r in rows if r["criterion"] == criterion and r["statistic"] == statistic]
            if part:
                fig.add_bar(name=statistic, legendgroup=statistic, showlegend=index == 1,
                            marker_color=colour, row=index, col=1,
                            x=[chart_label(f"{r['group']} (n={r['n_items']})") for r in part],
                            y=[r["estimate"] for r in part], error_y=error_bars(part, "estimate"))
        fig.add_hline(y=rows[0]["kappa_floor"], line_dash="dash", row=index, col=1)
    fig.update_layout(barmode="group", height=max(380, 220 * len(criteria)))
    return fig


AGREEMENT = {
    "agreement": Chart("Agreement per criterion (initial annotators, 95% cluster bootstrap)",
                       _agreement),
    "agreement_by_language": Chart(
        "κ per language group (95% cluster bootstrap; dashed: the κ floor)", _small_multiples,
        panels=True),
    "agreement_by_pair": Chart(
        "κ per annotator pair (95% cluster bootstrap; dashed: the κ floor)", _small_multiples,
        panels=True),
}


def error_bars(rows: list[dict], column: str) -> dict:
    """Plotly error bars from each row's ci_low and ci_high around `column`."""
    return {"type": "data", "symmetric": False,
            "array": [_gap(r["ci_high"], r[column]) for r in rows],
            "arrayminus": [_gap(r[column], r["ci_low"]) for r in rows]}


def _gap(high: float | None, low: float | None) -> float | None:
    if high is None or low is None or high != high or low != low:
        return None
    return high - low
