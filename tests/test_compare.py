"""Release comparison (issue 13): unit matching, key equality, language agreement, changes,
R_struct and ΔR (Eq. 36) on OLD/NEW pairs whose differences are known by construction."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from audit.io import release
from audit.reports import compare

REPO = Path(__file__).resolve().parent.parent


def record(i: int) -> dict:
    """A clean canonical JSONL row: German question and answer, two German paragraphs of
    one sentence each (sources q0, q1, …)."""
    return {
        "id": f"q{i}", "source_id": f"q{i}", "source_split": "validation",
        "question": f"Welcher Fluss ist länger, die Donau oder der Rhein? ({i})",
        "answer": "Die Donau", "question_language": "de", "answer_language": "de",
        "question_type": "comparison", "difficulty": "hard",
        "source_question": f"Which river is longer, the Danube or the Rhine? ({i})",
        "source_answer": "The Danube",
        "candidates": [
            {"id": "p00", "title": "Donau", "language": "de", "source_title": "Danube",
             "sentences": ["Die Donau ist der zweitlängste Fluss in Europa."],
             "source_sentences": ["The Danube is the second-longest river in Europe."]},
            {"id": "p01", "title": "Rhein", "language": "de", "source_title": "Rhine",
             "sentences": ["Der Rhein fließt durch sechs Länder."],
             "source_sentences": ["The Rhine flows through six countries."]}],
        "supporting_facts": [{"paragraph_id": "p00", "sentence_id": 0, "role": "answer"},
                             {"paragraph_id": "p01", "sentence_id": 0, "role": "support"}],
        "provenance": {}, "checksum": "",
    }


def old_rows() -> list[dict]:
    rows = [record(i) for i in range(10)]
    for i in (0, 1, 2):
        rows[i]["question"] = " "            # blank_question: blocking → quarantined
    return rows


def new_rows() -> list[dict]:
    rows = {r["id"]: r for r in (record(i) for i in range(11))}
    rows["q2"]["question"] = " "             # q0, q1 fixed; q2 kept blank
    rows["q3"]["answer"] = " "               # introduced: blank_answer
    p = rows["q4"]["candidates"][0]          # p00 now French: language changed
    p.update(language="fr", title="Danube",
             sentences=["Le Danube est le deuxième plus long fleuve d'Europe."])
    p = rows["q5"]["candidates"][0]          # p00 gains a sentence (source too)
    p["sentences"] = p["sentences"] + ["Sie fließt durch zehn Länder."]
    p["source_sentences"] = p["source_sentences"] + ["It flows through ten countries."]
    rows["q6"]["question"] = "Welcher Strom ist länger, die Donau oder der Rhein? (6)"
    extra = copy.deepcopy(rows["q7"]["candidates"][1])   # q7 gains paragraph p02
    extra["id"] = "p02"
    rows["q7"]["candidates"].append(extra)
    del rows["q9"]                           # only in OLD; q10 only in NEW
    return list(rows.values())


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("compare")
    return (write_jsonl(folder / "old.jsonl", old_rows()),
            write_jsonl(folder / "new.jsonl", new_rows()))


@pytest.fixture(scope="module")
def result(pair) -> compare.Comparison:
    old, new = compare.release_versions(*map(str, pair))
    return compare.compare(old, new)


def test_key_equality_lists_each_difference(result):
    assert result.key_equality == {"only_old": 1, "only_new": 1, "unit_set_differs": 1}
    assert sorted(result.keys.to_pylist(), key=lambda r: r["source_id"]) == [
        {"source_id": "q10", "difference": "only_new"},
        {"source_id": "q7", "difference": "unit_set_differs"},
        {"source_id": "q9", "difference": "only_old"}]


def test_every_unit_change_is_counted(result):
    changes = result.changes
    # Questions of q0, q1 (blank → text) and q6; q3's answer; q5's p00 (one more sentence).
    assert changes["text_changed"] == 5
    # q4's p00 and its sentence: excluded, not compared.
    assert changes["language_changed"] == 2
    # q9: question, answer, 2 paragraphs, 2 sentences.
    assert changes["only_old"] == 6
    # q10's 6 units, q7's p02 and its sentence, q5's second sentence of p00.
    assert changes["only_new"] == 9
    assert changes["sentence_count_changed"] == 1
    # 9 matched sources × 6 units = 54, plus q7's and q5's new units; minus the changed.
    assert changes["unchanged"] == 54 - 5 - 2
    assert changes["by_unit"]["question"]["text_changed"] == 3
    assert changes["by_unit"]["paragraph"]["language_changed"] == 1
    assert changes["by_unit"]["sentence"]["language_changed"] == 1


def unit(result, source_id, kind, paragraph_id=None, sentence_index=None) -> dict:
    rows = [r for r in result.units.to_pylist()
            if (r["source_id"], r["unit"], r["paragraph_id"], r["sentence_index"])
            == (source_id, kind, paragraph_id, sentence_index)]
    assert len(rows) == 1, rows
    return rows[0]


def test_findings_fixed_introduced_and_kept_per_unit(result):
    assert unit(result, "q0", "question")["fixed"] == ["blank_question"]
    assert unit(result, "q0", "question")["change"] == "text_changed"
    assert unit(result, "q2", "question")["kept"] == ["blank_question"]
    assert unit(result, "q2", "question")["change"] == "unchanged"
    assert unit(result, "q3", "answer")["introduced"] == ["blank_answer"]
    assert unit(result, "q3", "answer")["blocking_new"] is True
    moved = unit(result, "q4", "paragraph", "p00")
    assert (moved["language_old"], moved["language_new"], moved["change"], moved["matched"]) \
        == ("de", "fr", "language_changed", False)
    grown = unit(result, "q5", "paragraph", "p00")
    assert (grown["sentences_old"], grown["sentences_new"]) == (1, 2)
    assert grown["sentence_count_changed"] is True
    assert unit(result, "q5", "sentence", "p00", 1)["change"] == "only_new"


def test_r_struct_and_delta_r_by_hand(result):
    # Sources in both: q0–q8 (N = 9). Quarantined in OLD: q0, q1, q2; in NEW: q2, q3.
    assert result.sources == 9
    assert result.r_struct == pytest.approx({"old": 3 / 9, "new": 2 / 9})
    assert result.delta_r == pytest.approx(-1 / 9)
    # The paired per-source changes are -1 (q0, q1), +1 (q3) and 0 (six sources): an
    # independent bootstrap of their mean gives the same percentile interval.
    diffs = np.array([-1, -1, 1, 0, 0, 0, 0, 0, 0], dtype=float)
    rng = np.random.default_rng(7)
    means = diffs[rng.integers(0, 9, (100_000, 9))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    assert result.delta_r_ci[0] == pytest.approx(low, abs=1 / 9 + 1e-9)
    assert result.delta_r_ci[1] == pytest.approx(high, abs=1 / 9 + 1e-9)
    assert result.delta_r_ci[0] < result.delta_r < result.delta_r_ci[1]


def test_slices_share_the_definition(result):
    rows = {(r["by"], r["group"]): r for r in result.structural.to_pylist()}
    blank = rows[("check", "blank_question")]
    assert (blank["n"], blank["old"], blank["new"]) == (9, pytest.approx(3 / 9),
                                                        pytest.approx(1 / 9))
    assert rows[("check", "blank_answer")]["new"] == pytest.approx(1 / 9)
    question = rows[("unit", "question")]
    assert (question["old"], question["new"]) == (pytest.approx(3 / 9), pytest.approx(1 / 9))
    # German units: every matched source has some; q3's blocking answer is new in German.
    german = rows[("language", "de")]
    assert (german["n"], german["old"], german["new"]) == (
        9, pytest.approx(3 / 9), pytest.approx(2 / 9))


def test_status_transitions_of_matched_rows(result):
    moves = {(r["old_status"], r["new_status"]): r["rows"]
             for r in result.transitions.to_pylist()}
    assert moves[("quarantined", "accepted")] == 2           # q0, q1
    assert moves[("quarantined", "quarantined")] == 1        # q2
    assert moves[("accepted", "quarantined")] == 1           # q3
    assert moves[("accepted", "absent")] == 1                # q9
    assert moves[("absent", "accepted")] == 1                # q10
    assert sum(moves.values()) == 11


def test_cross_layout_v11_against_its_jsonl_twin(tmp_path):
    """The demo V1.1 release and the same rows written as canonical JSONL match unit for
    unit with no change (the layouts differ, the content does not)."""
    demo = REPO / "data" / "demo" / "release"
    rows = release.open_release(demo).con.sql("""
        SELECT id, source_id, source_split, question, answer, question_language,
               answer_language, question_type, difficulty, source_question, source_answer,
               list_transform(candidates, lambda c: {'id': c.paragraph_id, 'title': c.title,
                   'sentences': c.sentences, 'language': c.language_code,
                   'source_title': c.source_title, 'source_sentences': c.source_sentences})
                 AS candidates
        FROM release ORDER BY rid""").to_arrow_table().to_pylist()
    for row in rows:
        row.update(supporting_facts=[], provenance={}, checksum="")
    twin = write_jsonl(tmp_path / "twin.jsonl", rows)
    old, new = compare.release_versions(str(demo), str(twin))
    result = compare.compare(old, new, n_boot=200)
    assert (old.layout, new.layout) == ("v1.1", "jsonl")
    assert result.key_equality == {"only_old": 0, "only_new": 0, "unit_set_differs": 0}
    assert result.changes["unchanged"] == 6892
    assert result.changes["text_changed"] == result.changes["language_changed"] == 0


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "audit", *args], cwd=REPO,
                          capture_output=True, text=True)


def test_cli_writes_the_documented_files(pair, tmp_path):
    out = tmp_path / "cmp"
    done = cli("compare", str(pair[0]), str(pair[1]), "--out", str(out), "--n-boot", "500")
    assert done.returncode == 0, done.stderr
    written = json.loads((out / "compare.json").read_text())
    assert written["key_equality"] == {"only_old": 1, "only_new": 1, "unit_set_differs": 1}
    assert written["r_struct"] == pytest.approx({"old": 3 / 9, "new": 2 / 9})
    assert written["delta_r"] == pytest.approx(-1 / 9)
    assert len(written["delta_r_ci"]) == 2 and written["sources"] == 9
    units = pq.read_table(out / "units.parquet")
    assert units.num_rows == 54 + 6 + 9 + 10 + 1   # units of both versions + instance rows
    assert {"fixed", "introduced", "kept", "change", "language_old"} <= set(units.column_names)
    assert sorted(p.name for p in out.iterdir()) == [
        "compare.json", "keys.parquet", "structural.parquet", "transitions.parquet",
        "units.parquet"]


def test_cli_refuses_bad_input_without_writing(pair, tmp_path):
    out = tmp_path / "cmp"
    missing = cli("compare", str(pair[0]), str(tmp_path / "nope.parquet"), "--out", str(out))
    assert missing.returncode == 2
    assert "nope.parquet: no such file or directory" in missing.stderr
    assert "Traceback" not in missing.stderr and not out.exists()
    out.mkdir()
    again = cli("compare", str(pair[0]), str(pair[1]), "--out", str(out))
    assert again.returncode == 2 and "already exists" in again.stderr
    assert list(out.iterdir()) == []


def test_v2_against_a_corrected_v2(realdata, tmp_path):
    """The real V2 RC1 sample against a copy whose first five questions were revised: only
    those five units change, and ΔR is what the two scans' statuses give by hand."""
    import pyarrow as pa

    from audit.engine import scan
    sample = realdata / "xhotpotqa_v2_sample" / "xhotpotqa_v2_sample.parquet"
    table = pq.read_table(sample)
    questions = table["question"].to_pylist()
    revised = [q + " (rev.)" if i < 5 else q for i, q in enumerate(questions)]
    corrected = tmp_path / "corrected.parquet"
    pq.write_table(table.set_column(table.schema.get_field_index("question"), "question",
                                    pa.array(revised, pa.string())), corrected)
    old, new = compare.release_versions(str(sample), str(corrected))
    result = compare.compare(old, new, n_boot=300)
    assert (old.layout, new.layout) == ("v2", "v2")
    assert result.key_equality == {"only_old": 0, "only_new": 0, "unit_set_differs": 0}
    assert result.changes["text_changed"] == 5
    assert result.changes["by_unit"]["question"]["text_changed"] == 5
    assert result.changes["language_changed"] == 0
    # By hand, from each release's own scan: the share of sources with a quarantined row.
    shares = []
    for path in (sample, corrected):
        status = scan.run(release.open_release(path)).status.to_pylist()
        quarantined = {r["source_id"] for r in status if r["status"] == "quarantined"}
        shares.append(len(quarantined) / len({r["source_id"] for r in status}))
    assert result.sources == 197
    assert result.r_struct == pytest.approx({"old": shares[0], "new": shares[1]})
    assert result.delta_r == pytest.approx(shares[1] - shares[0])


def test_findings_in_rows_nobody_edited_are_counted_apart(tmp_path):
    """A finding that comes in a row none of whose units changed (here: another row takes
    its id, so both are duplicates) is no edit's regression: counted apart from the
    findings introduced where a unit changed (q0's title, now a duplicate title)."""
    old = [record(i) for i in range(3)]
    new = [record(i) for i in range(3)]
    new[0]["candidates"][1]["title"] = "Donau"
    new[1]["id"] = "q2"
    versions = compare.release_versions(str(write_jsonl(tmp_path / "old.jsonl", old)),
                                        str(write_jsonl(tmp_path / "new.jsonl", new)))
    found = compare.compare(*versions).findings
    assert found == {"fixed": 0, "introduced": 1, "kept": 0, "fixed_unchanged": 0,
                     "introduced_unchanged": 2}
