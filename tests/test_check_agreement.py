"""The preservation checks against the human flags (audit/review/check_agreement.py): a
translation batch drawn from the demo release and recorded as `review push` records it, two
annotators' answer/entity flags, precision and recall per criterion and severity; a batch
read against another release counts nothing and says so; the `review report` command."""

from __future__ import annotations

import csv
import subprocess
import sys

import pytest
from test_agreement import annotations

from audit.engine.scan import scan_release
from audit.review import agreement, check_agreement, sampling
from audit.review.kinds.translation import translation_batch
from audit.review.workspace import Workspace, batch_dir
from audit.settings import DEMO_RELEASE, demo_sources

# Demo paragraph units (row, paragraph): 142 p03 lost its answer (review), 1 p03 is
# 'unverifiable' (info: Russian 'Венеции', no Russian rendering), 78 p05 lost its bridge
# entity (review); the rest carry no preservation finding.
UNITS = ((142, "p03"), (1, "p03"), (78, "p05"), (142, "p00"), (78, "p00"), (1, "p00"),
         (2, "p00"), (3, "p00"))
# The annotators' "no"s: answer_preserved on 142 p03 (the check agrees) and on 2 p00 (a
# loss the check does not see); entities_preserved on 78 p05 and 3 p00.
ANSWER_NO = {(142, "p03"), (2, "p00")}
ENTITY_NO = {(78, "p05"), (3, "p00")}


@pytest.fixture(scope="module")
def demo():
    return scan_release()


@pytest.fixture(scope="module")
def batch(demo, tmp_path_factory):
    workspace = tmp_path_factory.mktemp("reviews")
    units = sampling.build_units(demo)
    # `where` takes scalar columns only; the (row, paragraph) pairs are picked here first.
    wanted = [i for i, (unit, rid, paragraph) in enumerate(zip(
        units["unit"].to_pylist(), units["rid"].to_pylist(), units["paragraph_id"].to_pylist()))
        if unit == "paragraph" and (rid, paragraph) in UNITS]
    sample = sampling.sample(units.take(wanted), [], seed=1, size=len(UNITS),
                             where={"unit": "paragraph"})
    recorded = translation_batch(sample, demo.release, "checks-vs-humans")
    Workspace(recorded.batch_id, workspace).record(recorded)     # what `review push` records first
    by_place = {(u["rid"], u["paragraph_id"]): u["item_id"] for u in sample.units.to_pylist()}
    records = []
    for place, item in by_place.items():
        for who in ("ann", "bob"):
            for criterion, noes in (("answer_preserved", ANSWER_NO),
                                    ("entities_preserved", ENTITY_NO)):
                records.append({"item": item, "who": who, "criterion": criterion,
                                "value": "no" if place in noes else "yes"})
    table = annotations(records)
    return workspace, table, agreement.final_labels(table)


def rows(table) -> dict:
    return {(r["criterion"], r["unit"], r["severity"]): r for r in table.to_pylist()}


def test_precision_and_recall_against_the_human_flags(demo, batch):
    workspace, _, final = batch
    found = rows(check_agreement.against_humans(final, demo, "checks-vs-humans", workspace))
    answer = found["answer_preserved", "paragraph", "review"]
    assert {k: answer[k] for k in ("check", "units", "human_no", "fired", "both",
                                   "precision", "recall", "left_out")} == {
        "check": "answer_not_in_evidence", "units": 8, "human_no": 2, "fired": 1, "both": 1,
        "precision": 1.0, "recall": 0.5, "left_out": 0}
    assert (round(answer["recall_low"], 3), round(answer["recall_high"], 3)) == (0.095, 0.905)
    with_info = found["answer_preserved", "paragraph", "review or info"]
    assert (with_info["fired"], with_info["both"], with_info["precision"]) == (2, 1, 0.5)
    entity = found["entities_preserved", "paragraph", "review"]
    assert (entity["check"], entity["human_no"], entity["fired"], entity["both"],
            entity["recall"]) == ("bridge_entity_lost", 2, 1, 1, 0.5)
    assert "lower bound" in entity["note"]
    assert found["answer_preserved", "instance", "review"]["units"] == 0


def test_a_batch_read_against_another_release_counts_nothing(batch, tmp_path):
    workspace, _, final = batch
    from conftest import record, scan_records
    other = scan_records(tmp_path, [record()])
    found = rows(check_agreement.against_humans(final, other, "checks-vs-humans", workspace))
    answer = found["answer_preserved", "paragraph", "review"]
    assert (answer["units"], answer["left_out"], answer["precision"]) == (0, 8, None)
    assert answer["note"] == "no judged unit of this batch is in this release"


def test_review_report_writes_the_table(batch, tmp_path):
    workspace, table, _ = batch
    import pyarrow.parquet as pq
    pq.write_table(table, batch_dir("checks-vs-humans", workspace) / "annotations.parquet")
    sources = [arg for spec in demo_sources() for arg in ("--source", spec)]
    done = subprocess.run([sys.executable, "-m", "audit", "review", "--workspace",
                           str(workspace), "report", "checks-vs-humans", "--out",
                           str(tmp_path / "out"), "--n-boot", "20", "--release",
                           str(DEMO_RELEASE), *sources], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "checks_vs_humans.csv" in done.stdout
    with (tmp_path / "out" / "checks_vs_humans.csv").open(encoding="utf-8") as handle:
        written = list(csv.DictReader(handle))
    assert len(written) == 8
    assert {k: written[0][k] for k in ("criterion", "unit", "severity", "units", "human_no",
                                       "fired", "both", "precision", "recall")} == {
        "criterion": "answer_preserved", "unit": "paragraph", "severity": "review",
        "units": "8", "human_no": "2", "fired": "1", "both": "1", "precision": "1.0",
        "recall": "0.5"}
