"""The Plotly figure of each review report (the Annotations page and `review report --out`
draw the same ones). Plotly reads a little HTML in text, so every category label that
comes from data passes through audit.render.chart_label. Plotly is imported here only."""

from __future__ import annotations

import pyarrow as pa

from ..reports.render import chart_label
from .agreement import split_setting

TITLES = {
    "agreement": "Agreement per criterion (initial annotators, 95% cluster bootstrap)",
    "agreement_by_language": "κ per language group (95% cluster bootstrap; dashed: the κ floor)",
    "agreement_by_pair": "κ per annotator pair (95% cluster bootstrap; dashed: the κ floor)",
    "rating_means": "Mean adequacy and fluency by language (95% cluster bootstrap)",
    "preservation_rates": "Share preserved (95% cluster bootstrap)",
    "consequences": "Error consequences (final labels)",
    "realism": "Table 4: blinded realism preferences (% of final labels)",
    "relevance": "Query–paper relevance (Wilson 95%)",
}


def figure(name: str, table: pa.Table):
    """The figure of report `name`, or None when it has no chart or no rows."""
    if table.num_rows == 0 or name not in TITLES:
        return None
    import plotly.graph_objects as go
    rows = table.to_pylist()
    if name.startswith("agreement_by_"):
        fig = _small_multiples(rows)
        fig.update_layout(title=TITLES[name], margin={"t": 70, "b": 40})
        return fig
    fig = go.Figure()
    if name == "agreement":
        for statistic in ("cohen_kappa", "cohen_kappa_quadratic", "krippendorff_alpha"):
            part = [r for r in rows if r["statistic"] == statistic]
            if part:
                fig.add_bar(name=statistic, x=[chart_label(r["criterion"]) for r in part],
                            y=[r["estimate"] for r in part], error_y=_errors(part, "estimate"))
        fig.update_layout(barmode="group", yaxis_title="estimate")
    elif name == "rating_means":
        for criterion in ("adequacy", "fluency"):
            part = [r for r in rows if r["by"] == "language" and r["criterion"] == criterion]
            fig.add_bar(name=criterion, x=[chart_label(r["group"]) for r in part],
                        y=[r["mean"] for r in part], error_y=_errors(part, "mean"))
        fig.update_layout(barmode="group", xaxis_title="language",
                          yaxis_title="mean rating (1–5)")
    elif name == "preservation_rates":
        fig.add_bar(x=[chart_label(r["criterion"]) for r in rows],
                    y=[r["share_yes"] for r in rows], error_y=_errors(rows, "share_yes"))
        fig.update_layout(yaxis_title="share preserved", yaxis_range=[0, 1])
    elif name == "consequences":
        fig.add_bar(x=[chart_label(r["consequence"]) for r in rows], y=[r["n"] for r in rows])
        fig.update_layout(yaxis_title="units")
    elif name == "realism":
        settings = [chart_label(_with_source_a(r["setting"])) for r in rows]
        for column, label in (("prefer_a", "Prefer A"), ("tie", "Tie"),
                              ("prefer_b", "Prefer B")):
            fig.add_bar(name=label, y=settings, x=[r[column] for r in rows], orientation="h")
        # The legend reads left to right like the stacked segments (Plotly reverses a
        # stacked chart's legend by default), under the plot.
        fig.update_layout(barmode="stack", xaxis_title="% of pairs",
                          yaxis={"autorange": "reversed"},   # the paper's order, top down
                          legend={"orientation": "h", "traceorder": "normal",
                                  "x": 0, "y": -0.2})
    else:
        fig.add_bar(x=["relevant"], y=[r["share_relevant"] for r in rows],
                    error_y=_errors(rows, "share_relevant"))
        fig.update_layout(yaxis_range=[0, 1], yaxis_title="share relevant")
    fig.update_layout(title=TITLES[name], height=380, margin={"t": 50, "b": 40})
    return fig


def _with_source_a(setting: str) -> str:
    """'MAPLE vs Human' -> 'MAPLE vs Human (A = MAPLE)': which source Prefer A means."""
    return f"{setting} (A = {split_setting(setting)[0]})"


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
                            y=[r["estimate"] for r in part], error_y=_errors(part, "estimate"))
        fig.add_hline(y=rows[0]["kappa_floor"], line_dash="dash", row=index, col=1)
    fig.update_layout(barmode="group", height=max(380, 220 * len(criteria)))
    return fig


def _errors(rows: list[dict], column: str) -> dict:
    return {"type": "data", "symmetric": False,
            "array": [_gap(r["ci_high"], r[column]) for r in rows],
            "arrayminus": [_gap(r[column], r["ci_low"]) for r in rows]}


def _gap(high: float | None, low: float | None) -> float | None:
    if high is None or low is None or high != high or low != low:
        return None
    return high - low
