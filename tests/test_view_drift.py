"""view_context_drift: the views of one XHotpotQA+ source must share one context. On the
real-text `plus` release of bench/realtext.py (HotpotQA skeletons, NTREX-128 text, 24
question-language views per source), built small, with a few drifted views planted."""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from audit.checks import registry
from audit.engine import scan
from audit.io import release
from audit.io.layouts import v11
from devkit import synth

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
OTHERS = frozenset(c.name for c in registry.REGISTRY) - {"view_context_drift"}


def drifted(rows: list[dict]) -> list[dict]:
    """Four views of four sources drift: a translated sentence, a paragraph's language, a
    supporting fact dropped, the last candidate dropped; their hashes re-derived, as a
    builder that drifted would write them."""
    rows[3]["candidates"][2]["sentences"][1] = "A sentence this view alone has."
    rows[30]["candidates"][0]["language_code"], rows[30]["candidates"][0]["language"] = (
        "fr", "French")
    rows[55]["supporting_facts"] = rows[55]["supporting_facts"][:1]
    rows[80]["candidates"] = rows[80]["candidates"][:-1]
    for n in (3, 30, 55, 80):
        rows[n]["record_sha256"] = synth.record_sha256(rows[n])
    return rows


@pytest.fixture(scope="module")
def plus(tmp_path_factory, realdata):
    import realtext
    out = tmp_path_factory.mktemp("plus")
    built = realtext.build(out / "plus", sources=4)
    rows = pq.read_table(built["release"]).to_pylist()
    pq.write_table(pa.Table.from_pylist(rows, schema=v11.SCHEMA), out / "clean.parquet")
    pq.write_table(pa.Table.from_pylist(drifted(rows), schema=v11.SCHEMA),
                   out / "drifted.parquet")
    return {name: scan.run(release.open_release(out / f"{name}.parquet"), skip=OTHERS)
            for name in ("clean", "drifted")}


def test_views_sharing_their_context_raise_nothing(plus):
    assert plus["clean"].summary["rows"] == 96
    assert plus["clean"].findings.num_rows == 0


def test_each_drifted_view_names_the_unit_and_the_sibling(plus):
    found = [(f["row"], f["paragraph_id"], f["sentence_index"], f["severity"], f["origin"],
              f["detail"]) for f in plus["drifted"].findings.to_pylist()]
    sources = [f"{s}-{n:05d}" for n, s in enumerate((
        "5a8b57f25542995d1e6f1371", "5a8c7595554299585d9e36b6", "5a85ea095542994775f606a8",
        "5adbf0a255429947ff17385a"))]
    tail = "; 23 of the 24 views of source {} share the sibling's context, 1 this one's"
    assert found == [
        (3, "p02", 1, "review", "release", f"differs from sibling view {sources[0]}-v00 in "
         "translated sentence 1" + tail.format(sources[0])),
        (30, "p00", None, "review", "release", f"differs from sibling view {sources[1]}-v00 in "
         "language (fr here, fa in the sibling)" + tail.format(sources[1])),
        (55, None, None, "review", "release", f"differs from sibling view {sources[2]}-v00 in "
         "supporting facts (1 here, 5 in the sibling)" + tail.format(sources[2])),
        (80, "p09", None, "review", "release", f"differs from sibling view {sources[3]}-v00 in "
         "candidate 10 (missing here, p09 in the sibling)" + tail.format(sources[3]))]


def test_a_tie_takes_the_first_context_in_release_order(tmp_path):
    """Two views, two contexts: the later view is the one that drifted."""
    from conftest import record, source
    first = record(source())
    second = dict(first, id=first["id"] + "-fr", question="Quel fleuve est plus long ?")
    second["candidates"] = [dict(c) for c in first["candidates"]]
    second["candidates"][1]["title"] = "Rhin"
    second["record_sha256"] = synth.record_sha256(second)
    synth.write_release([first, second], tmp_path / "release")
    result = scan.run(release.open_release(tmp_path / "release"), skip=OTHERS)
    assert [(f["row"], f["paragraph_id"], f["detail"].split(";")[0])
            for f in result.findings.to_pylist()] == [
        (1, "p01", f"differs from sibling view {first['id']} in translated title")]
