"""Prediction evaluation on a hand-made release: metrics.json, slices, contrasts, the
Table 17 sensitivity, paired differences, the output directory and the CLI, each against a
hand computation."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import record, source, view

from audit.engine import scan
from audit.errors import InputError
from audit.evaluation import predictions as pred
from audit.evaluation import report
from audit.io import release as readers
from audit.language import descriptors
from devkit import synth

ROOT = Path(__file__).resolve().parent.parent
N_BOOT = 400
GOLD = [{"paragraph_id": "p00", "sentence_id": 0}, {"paragraph_id": "p01", "sentence_id": 1}]


def _row(ident, language, candidate_languages, answer, blank=False):
    src = source(_id=ident)
    context = view(src, candidate_languages)
    if blank:
        context[2][1][0] = " "          # a blank translated sentence: quarantined
    return record(src, context, question=f"Frage {ident}", answer=answer, language=language)


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """Five rows: de S2 (twice, one quarantined), ru S4, ja S3, fr S0."""
    rows = [_row("r1", "German", ("German", "French", "Spanish"), "Donau"),
            _row("r2", "Russian", ("German", "French", "Spanish"), "Дунай"),
            _row("r3", "Japanese", ("Mandarin Chinese",) * 3, "ドナウ川"),
            _row("r4", "French", ("French",) * 3, "le Danube"),
            _row("r5", "German", ("German", "Russian", "Spanish"), "Donau", blank=True)]
    folder = tmp_path_factory.mktemp("eval-release")
    synth.write_release(rows, folder / "release")
    opened = readers.open_release(folder / "release")
    return opened, scan.run(opened, skip=frozenset({"language_mismatch"})), folder


def _predictions(folder: Path, name: str, lines: list[dict]) -> Path:
    path = folder / name
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines),
                    encoding="utf-8")
    return path


A_LINES = [
    {"id": "r1", "answer": "Donau", "supporting_facts": GOLD},        # all 1
    {"id": "r2", "answer": "Рейн", "supporting_facts": GOLD[:1]},     # answer 0, support 2/3
    # r3 missing: every score 0
    {"id": "r4", "answer": "Danube", "supporting_facts": []},         # answer P1 R½, support 0
    {"id": "r5", "answer": "", "supporting_facts": GOLD},             # answer 0, support 1
    {"id": "ghost", "answer": "x"},                                   # not in the release
]
B_LINES = [{"id": r, "answer": a, "supporting_facts": GOLD}
           for r, a in (("r1", "Donau"), ("r2", "Дунай"), ("r3", "ドナウ川"), ("r4", "le Danube"),
                        ("r5", "Donau"))]


@pytest.fixture(scope="module")
def evaluation(release):
    opened, result, folder = release
    files = [pred.read_predictions(_predictions(folder, "a.jsonl", A_LINES)),
             pred.read_predictions(_predictions(folder, "b.jsonl", B_LINES))]
    return report.evaluate(pred.gold(opened), descriptors.descriptors(opened), result.status,
                           files, n_boot=N_BOOT)


def test_the_release_has_the_intended_language_geometry(release, evaluation):
    labels = {r["rid"]: r for r in evaluation.labels.to_pylist()}
    assert [labels[i]["stratum"] for i in range(5)] == ["S2", "S4", "S3", "S0", "S2"]
    assert [labels[i]["status"] for i in range(5)][4] == "quarantined"
    assert [labels[i]["quarantined"] for i in range(5)] == [False] * 4 + [True]


def test_metrics_json_has_the_issue_names_and_hand_computed_values(evaluation):
    metrics = evaluation.metrics_json()
    assert set(metrics) == {"protocol", "n", "missing", "overall", "macro_language",
                            "by_question_language"}
    assert (metrics["protocol"], metrics["n"], metrics["missing"]) == (
        "unicode_script_aware", 5, 1)
    keys = {"answer_em", "answer_f1", "support_em", "support_f1", "joint_em", "joint_f1"}
    assert set(metrics["overall"]) == keys == set(metrics["macro_language"])
    overall = metrics["overall"]
    assert overall["answer_em"] == pytest.approx(1 / 5)
    assert overall["answer_f1"] == pytest.approx((1 + 0 + 0 + 2 / 3 + 0) / 5)
    assert overall["support_f1"] == pytest.approx((1 + 2 / 3 + 0 + 0 + 1) / 5)
    assert overall["support_em"] == pytest.approx(2 / 5)
    assert overall["joint_em"] == pytest.approx(1 / 5)
    assert overall["joint_f1"] == pytest.approx(1 / 5)
    german = metrics["by_question_language"]["de"]
    assert german["n"] == 2 and german["answer_f1"] == pytest.approx(0.5)
    assert set(german) == keys | {"n"}
    # MacroLang: the mean of the de, ru, ja, fr means, not of the items.
    assert metrics["macro_language"]["answer_f1"] == pytest.approx((0.5 + 0 + 0 + 2 / 3) / 4)
    assert all(0 <= v <= 1 for v in overall.values())


def test_missing_and_unexpected_are_counted(evaluation):
    runs = evaluation.summary["runs"]
    assert (runs["A"]["missing"], runs["A"]["unexpected"]) == (1, 1)
    assert (runs["B"]["missing"], runs["B"]["unexpected"]) == (0, 0)


def _slice(evaluation, family, group, metric="answer_f1", run="A",
           protocol="unicode_script_aware"):
    rows = [r for r in evaluation.slices.to_pylist()
            if (r["run"], r["protocol"], r["family"], r["group"], r["metric"])
            == (run, protocol, family, group, metric)]
    assert len(rows) == 1
    return rows[0]


def test_slices_cover_every_family_with_intervals(evaluation):
    families = {r["family"] for r in evaluation.slices.to_pylist()}
    assert families == {"overall", "question_language", "macro_language", "stratum",
                        "script_relation", "role_condition", "interface_crossing",
                        "composition_crossing", "status"}
    s2 = _slice(evaluation, "stratum", "S2", "support_f1")
    assert (s2["n"], s2["mean"]) == (2, 1.0) and s2["ci_low"] == s2["ci_high"] == 1.0
    de = _slice(evaluation, "question_language", "de")
    # Two items, 1 and 0: a resample mean is 0, ½ or 1.
    assert de["mean"] == 0.5 and de["ci_low"] == 0.0 and de["ci_high"] == 1.0
    assert _slice(evaluation, "status", "quarantined", "support_em")["n"] == 1
    assert _slice(evaluation, "script_relation", "different-script")["n"] == 2
    # Legacy protocol: same support, French answer "Danube" vs "le Danube" still P1 R½.
    legacy = _slice(evaluation, "question_language", "fr", protocol="legacy_hotpot")
    assert legacy["mean"] == pytest.approx(2 / 3)


def _contrast(evaluation, kind, name, metric="answer_f1", run="A"):
    rows = [r for r in evaluation.contrasts.to_pylist()
            if (r["kind"], r["contrast"], r["metric"], r["run"]) == (kind, name, metric, run)]
    assert len(rows) == 1
    return rows[0]


def test_s4_minus_s2_and_script_contrasts(evaluation):
    s4 = _contrast(evaluation, "contrast", "S4 − S2")
    assert (s4["n_pos"], s4["n_neg"]) == (1, 2)
    assert s4["estimate"] == pytest.approx(0 - 0.5)
    assert s4["ci_low"] <= s4["estimate"] <= s4["ci_high"]
    assert s4["p_holm"] >= s4["p_value"] and s4["holm_family_size"] >= 2
    support = _contrast(evaluation, "contrast", "S4 − S2", "support_f1")
    assert support["estimate"] == pytest.approx(2 / 3 - 1)
    script = _contrast(evaluation, "contrast", "different − same script")
    # different: ru (0) and ja (0); same: r1 de and r4 fr (1, 2/3); r5 (de with a Russian
    # gold paragraph) is mixed-script.
    assert (script["n_pos"], script["n_neg"]) == (2, 2)
    assert script["estimate"] == pytest.approx(0 - (1 + 2 / 3) / 2)


def test_table17_sensitivity_excludes_quarantined_rows(evaluation):
    shift = _contrast(evaluation, "sensitivity", "S4 − S2")
    # All: 0 − mean(1, 0) = −½. Clean (r5 quarantined): 0 − 1 = −1. Shift −½.
    assert shift["all_estimate"] == pytest.approx(-0.5)
    assert shift["clean_estimate"] == pytest.approx(-1.0)
    assert shift["estimate"] == pytest.approx(-0.5)
    assert (shift["n_pos"], shift["n_neg"], shift["n_excluded"]) == (1, 1, 1)
    assert shift["design"] == "paired source-clustered bootstrap"


def test_two_files_give_paired_differences_per_slice(evaluation):
    overall = _contrast(evaluation, "paired", "all", run="B − A")
    # B is right everywhere: B − A answer F1 per item 0, 1, 1, ⅓, 1.
    assert overall["estimate"] == pytest.approx((0 + 1 + 1 + 1 / 3 + 1) / 5)
    assert overall["n_pos"] == 5 and overall["design"] == "paired source-clustered bootstrap"
    german = _contrast(evaluation, "paired", "de", run="B − A")
    assert german["estimate"] == pytest.approx(0.5)
    macro = _contrast(evaluation, "paired", "macro", run="B − A")
    assert macro["estimate"] == pytest.approx((0.5 + 1 + 1 + 1 / 3) / 4)


def test_write_is_atomic_and_never_overwrites(evaluation, tmp_path):
    out = report.write(evaluation, tmp_path / "eval")
    assert sorted(p.name for p in out.iterdir()) == [
        "contrasts.parquet", "metrics.json", "slices.parquet", "summary.json"]
    assert json.loads((out / "metrics.json").read_text()) == json.loads(
        json.dumps(evaluation.metrics_json()))
    assert pq.read_table(out / "slices.parquet").num_rows == evaluation.slices.num_rows
    with pytest.raises(InputError):
        report.write(evaluation, out)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "audit", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def test_cli_evaluate_writes_the_directory(release, tmp_path):
    _, _, folder = release
    path = _predictions(tmp_path, "a.jsonl", A_LINES)
    done = _cli("evaluate", folder / "release", path, "--out", tmp_path / "out",
                "--n-boot", 200, "--skip", "language_mismatch")
    assert done.returncode == 0, done.stderr
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["missing"] == 1 and metrics["overall"]["answer_em"] == pytest.approx(0.2)


def test_cli_bad_prediction_line_exits_2_naming_it(release, tmp_path):
    _, _, folder = release
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "r1", "answer": "x"}\n{"id": "r2", "supporting_facts": '
                    '[{"paragraph_id": "p00", "sentence_id": -2}]}\n', encoding="utf-8")
    done = _cli("evaluate", folder / "release", path, "--out", tmp_path / "out")
    assert done.returncode == 2
    assert "line 2" in done.stderr and "sentence_id" in done.stderr
    assert not (tmp_path / "out").exists()
