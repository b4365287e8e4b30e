"""The Plotly figures of the review reports (the Annotations page and `review report --out`
draw the same ones): the agreement charts here, each kind's own in its module
(kinds/<kind>.py, a Chart per report), drawn through `draw`. Plotly reads a little HTML in
text, so every category label that comes from data passes through
audit.render.chart_label. Plotly is imported only by the chart functions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, TypeGuard

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
            estimate_bars(fig, part, statistic, [chart_label(r["criterion"]) for r in part])
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
                estimate_bars(fig, part, statistic,
                              [chart_label(f"{r['group']} (n={r['n_items']})") for r in part],
                              colour=colour, legend=index == 1, row=index, col=1)
        fig.add_hline(y=rows[0]["kappa_floor"], line_dash="dash", row=index, col=1)
    fig.update_layout(barmode="group", height=max(380, 220 * len(criteria)))
    return fig


UNDEFINED = "undefined"
HATCH = "#888888"


def estimate_bars(fig, rows: list[dict], statistic: str, x: list[str], *,
                  colour: str | None = None, legend: bool = True, **cell) -> None:
    """One statistic's bars with their intervals. An undefined estimate (NaN: one category
    only, or no pair) gets no bar but, in the same slot, a hatched outline over the
    statistic's whole range (-1 to 1) labelled "undefined": an empty slot would read as
    0. `cell`: the subplot's row and col."""
    estimates = [r["estimate"] if _defined(r["estimate"]) else None for r in rows]
    fig.add_bar(name=statistic, legendgroup=statistic, showlegend=legend,
                offsetgroup=statistic, marker_color=colour, x=x, y=estimates,
                error_y=error_bars(rows, "estimate"), **cell)
    undefined = [i for i, value in enumerate(estimates) if value is None]
    if undefined:
        fig.add_bar(name=f"{statistic} {UNDEFINED}", legendgroup=statistic, showlegend=False,
                    offsetgroup=statistic, x=[x[i] for i in undefined],
                    base=[-1.0] * len(undefined), y=[2.0] * len(undefined),
                    text=[UNDEFINED] * len(undefined), textposition="inside",
                    hovertext=[rows[i]["note"] for i in undefined],
                    marker={"color": "rgba(0,0,0,0)", "line": {"color": HATCH, "width": 1},
                            "pattern": {"shape": "/", "fgcolor": HATCH}}, **cell)


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
    return high - low if _defined(high) and _defined(low) else None


def _defined(value: float | None) -> TypeGuard[float]:
    """Not None and not NaN."""
    return value is not None and value == value
