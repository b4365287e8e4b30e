"""A fourth layout, a parallel dataset (one Parquet file of `id, language, source,
translation`), is one module (audit/io/layouts/parallel.py) and one registry line: 20 rows of
real NTREX-128 text scan with language, script, heuristic and unit-check findings, each on
its `text` unit, and the checks that need contexts, questions or shipped flags are not
planned (issue 44)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from audit.errors import InputError
from audit.io import release as readers
from audit.io.layouts import registry as layouts

REPO = Path(__file__).resolve().parent.parent
# NTREX-128 file per language code; the rows take lines 20–39 of the news test set.
NTREX = {"de": "deu", "fr": "fra", "es": "spa", "ru": "rus", "el": "ell", "tr": "tur",
         "hi": "hin", "ja": "jpn", "ko": "kor", "zh": "zho-CN", "nl": "nld"}
LANGUAGES = ["de", "fr", "de", "es", "ru", "tr", "fr", "hi", "es", "ja",
             "ko", "zh", "nl", "de", "el", "es", "tr", "fr", "ru", "de"]
FIRST_LINE = 20


def _lines(realdata: Path, name: str) -> list[str]:
    path = realdata / "ntrex128" / f"newstest2019-{name}.txt"
    return path.read_text(encoding="utf-8").splitlines()[FIRST_LINE - 1:FIRST_LINE + 19]


def build(realdata: Path, out: Path) -> Path:
    """The 20 rows, seven of them damaged as translation damages text."""
    english = _lines(realdata, "src.eng")
    rows = [{"id": f"s{i:02d}", "language": lang, "source": english[i],
             "translation": _lines(realdata, f"ref.{NTREX[lang]}")[i]}
            for i, lang in enumerate(LANGUAGES)]
    rows[2]["translation"] = _lines(realdata, "ref.nld")[2]       # Dutch, assigned German
    rows[4]["translation"] = _lines(realdata, "ref.ell")[4]       # Greek, assigned Russian
    rows[6]["translation"] = english[6]                             # left in English
    rows[8]["translation"] = "—"                                    # a placeholder
    rows[13]["translation"] = rows[13]["translation"].replace("1930", "1950")
    words = rows[15]["translation"].rstrip(".").split()
    rows[15]["translation"] += " " + " ".join([words[-1]] * 4)      # a decoding loop
    rows[17]["translation"] = "\u202e" + rows[17]["translation"]    # a bidi override
    path = out / "parallel.parquet"
    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


@pytest.fixture
def parallel(tmp_path: Path, realdata: Path) -> Path:
    return build(realdata, tmp_path / "release")


def test_the_registry_detects_it_and_it_yields_one_text_unit_per_row(parallel: Path):
    release = readers.open_release(parallel)
    assert release.layout is layouts.BY_NAME["parallel"] and release.rows == 20
    assert release.layout.capabilities == frozenset()
    units = release.con.sql("SELECT unit, count(*), count(DISTINCT lang) FROM units "
                            "GROUP BY 1").fetchall()
    assert units == [("text", 20, 11)]


def test_it_scans_with_language_heuristic_and_unit_findings(parallel: Path, tmp_path: Path,
                                                            settings_env):
    settings_env(AUDIT_CACHE_DIR=str(tmp_path / "cache"), AUDIT_SCANS=str(tmp_path / "scans"))
    done = subprocess.run([sys.executable, "-m", "audit", "scan", str(parallel), "--out",
                           str(tmp_path / "scan")], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    findings = pq.read_table(tmp_path / "scan" / "findings.parquet").to_pylist()
    found = sorted((f["id"], f["check"], f["unit"], f["severity"]) for f in findings)
    assert found == [
        ("s02", "language_mismatch", "text", "review"),
        ("s04", "language_mismatch", "text", "review"),
        ("s04", "script_mismatch", "text", "review"),
        ("s06", "exact_source_copy", "text", "review"),
        ("s06", "language_mismatch", "text", "review"),
        ("s08", "placeholder_sentence", "text", "review"),
        ("s13", "number_mismatch", "text", "review"),
        ("s15", "repetition_loop", "text", "review"),
        # (the loop runs on after the sentence's full stop, so the final mark is lost too)
        ("s15", "terminal_punctuation_mismatch", "text", "info"),
        ("s17", "invisible_control", "text", "review"),
    ]
    details = {(f["id"], f["check"]): f["detail"] for f in findings}
    assert details[("s04", "script_mismatch")] == "text: Greek, expected Cyrillic"
    assert details[("s02", "language_mismatch")].startswith("text: detected nl")
    assert details[("s13", "number_mismatch")] == "text: source 1930 → translation 1950"
    summary = json.loads((tmp_path / "scan" / "summary.json").read_text(encoding="utf-8"))
    assert summary["layout"] == "parallel"
    assert summary["status_counts"] == {"review_required": 7, "accepted": 13}
    # What needs contexts, questions or shipped flags is not planned at all.
    assert sorted(summary["checks_run"]) == [
        "duplicate_id", "exact_source_copy", "invalid_unicode", "invisible_control",
        "language_mismatch", "length_ratio_outlier", "mojibake", "near_source_copy",
        "number_mismatch", "placeholder_sentence", "repetition_loop", "script_mismatch",
        "terminal_punctuation_mismatch", "unbalanced_brackets"]
    # No language vector without questions and contexts: no descriptors.parquet.
    assert not (tmp_path / "scan" / "descriptors.parquet").exists()


def test_a_hotpotqa_source_is_refused_for_it(parallel: Path, tmp_path: Path):
    source = tmp_path / "hotpot.json"
    source.write_text("[]")
    with pytest.raises(InputError, match="has none"):
        readers.open_release(parallel, [f"validation={source}"])


def test_a_file_of_its_columns_mistyped_names_the_column(tmp_path: Path):
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"id": [1], "language": ["de"], "source": ["a"],
                             "translation": ["b"]}), path)
    with pytest.raises(InputError, match=r"column 'id' has type int64 \(expected string\)"):
        readers.open_release(path)
