"""Review reports over pulled annotations (schema: audit/review/agreement.py), all from
final labels (adjudicated, else agreed), each returned as a pyarrow table: the agreement
tables, and each kind's own reports (kinds/<kind>.py) for the kinds that occur.

write_reports writes them all, with the agreement tables, the final labels and the
adjudication queue, as CSV (and Plotly HTML where charted) into a new directory.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pyarrow as pa

from ..analysis.stats import SEED
from . import agreement as ag
from . import charts, kinds

# ---------------------------------------------------------------------------------- bundle

def all_reports(table: pa.Table | pl.DataFrame, n_boot: int = 2000,
                seed: int = SEED) -> dict[str, pa.Table]:
    """Every report whose kind occurs in the table, from one preparation."""
    frame = ag.prepare(table)
    final, complete = ag.final_frame(frame), ag.pair_frames(frame)[0]
    reports: dict[str, pa.Table] = {}
    for kind in kinds.of_annotations(set(frame["kind"].unique())):
        if kind.reports is not None:
            reports |= kind.reports(final, complete, n_boot, seed)
    return reports


def figure(name: str, table: pa.Table):
    """The figure of report `name`, or None when it has no chart or no rows."""
    chart = charts.AGREEMENT.get(name) or kinds.CHARTS.get(name)
    return charts.draw(chart, table) if chart is not None else None


def to_csv(table: pa.Table | pl.DataFrame, path: str | Path) -> Path:
    """Write a report atomically through the one CSV writer (audit.export)."""
    from ..io.tables import write_table
    return write_table(table.to_arrow() if isinstance(table, pl.DataFrame) else table,
                       Path(path), "csv")


def write_reports(table, out: Path, *, n_boot: int = 2000, seed: int = SEED,
                  extra: dict | None = None, kappa_floor: float | None = None,
                  skips: list[dict] | tuple = (), batch_id: str = "BATCH") -> list[str]:
    """Every report of a pulled table (and the `extra` tables), written by write_tables."""
    from .push import queue_with_skips
    frame = ag.prepare(table)
    final = ag.final_frame(frame)
    floor = ag.KAPPA_FLOOR if kappa_floor is None else kappa_floor
    tables = {"agreement": ag.agreement(table, n_boot=n_boot, seed=seed, kappa_floor=floor),
              **{f"agreement_by_{by}": ag.agreement_by(table, by, n_boot=n_boot,
                                                        seed=seed, kappa_floor=floor)
                 for by in ag.BREAKDOWNS},
              **all_reports(table, n_boot=n_boot, seed=seed),
              "final_labels": final.to_arrow(),
              "adjudication_queue": queue_with_skips(
                  ag.queue_frame(final).to_arrow(), skips, batch_id),
              **(extra or {})}
    return write_tables(tables, out)


def write_tables(tables: dict[str, pa.Table], out: Path) -> list[str]:
    """Reports as CSV, the charted ones also as Plotly HTML (with plotly.min.js beside
    them, so the pages open offline), into a new directory that appears whole or not at
    all; the names written."""
    from ..io.atomic import staged_directory
    written = []
    with staged_directory(out, what="report") as staging:
        for name, report in tables.items():
            to_csv(report, staging / f"{name}.csv")
            written.append(f"{name}.csv")
            fig = figure(name, report)
            if fig is not None:
                fig.write_html(staging / f"{name}.html", include_plotlyjs="directory")
                written.append(f"{name}.html")
    return written
