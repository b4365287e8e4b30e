"""The CLI contract: scan outputs, versioned scans, quarantine exports, manifests, policy."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import pyarrow.parquet as pq
from conftest import record, source, view
from test_inputs import REPO, cli

from audit.engine import store
from audit.io import tables
from devkit import synth

DEMO = REPO / "data" / "demo"


def make_release(tmp_path):
    ctx = view(source())
    ctx[1][1][0] = "=HYPERLINK(\"http://x\")"        # formula-looking dataset text
    ctx[2][1][0] = " "
    dup = record(source(_id="5a0000000000000000000002"), position=1)
    dup["candidates"][2]["title"] = dup["candidates"][0]["title"].upper()
    dup["structural_flags"] = ["duplicate_normalized_translated_title"]
    dup["status"] = "review_required"
    dup["record_sha256"] = synth.record_sha256(dup)
    synth.write_release([record(context=ctx), dup], tmp_path / "release")
    return tmp_path / "release"


def test_scan_writes_the_three_outputs(tmp_path):
    done = cli("scan", str(make_release(tmp_path)), "--out", str(tmp_path / "scan"))
    assert done.returncode == 0, done.stderr
    assert "row, context and unit checks done" in done.stderr      # progress on stderr
    findings = pq.read_table(tmp_path / "scan" / "findings.parquet")
    assert findings.column_names[:9] == ["id", "source_split", "check", "severity", "origin",
                                         "unit", "paragraph_id", "sentence_index", "detail"]
    assert str(findings.schema.field("sentence_index").type) == "int32"
    # Each finding says which unit it sits on.
    assert sorted(zip(findings.column("check").to_pylist(),
                      findings.column("unit").to_pylist())) == [
        ("blank_sentence", "sentence"), ("duplicate_normalized_translated_title", "title"),
        ("terminal_punctuation_mismatch", "sentence")]
    status = pq.read_table(tmp_path / "scan" / "status.parquet").to_pylist()
    assert [(r["id"][-1], r["status"], r["flags"], r["shipped_status"]) for r in status] == [
        ("1", "quarantined", ["blank_sentence"], "quarantined"),
        ("2", "review_required", ["duplicate_normalized_translated_title"], "review_required")]
    summary = json.loads((tmp_path / "scan" / "summary.json").read_text())
    assert summary["rows"] == 2
    assert summary["status_counts"] == {"quarantined": 1, "review_required": 1}
    # The formula stands in for a sentence ending in a full stop: an info-level finding
    # (no effect on status) of the translation-quality heuristics.
    assert summary["check_counts"] == {"blank_sentence": 1,
                                       "duplicate_normalized_translated_title": 1,
                                       "terminal_punctuation_mismatch": 1}


def test_default_scans_are_versioned_never_overwritten(tmp_path, settings_env):
    settings_env(AUDIT_SCANS=tmp_path / "scans")
    release = make_release(tmp_path)
    from audit.engine import scan
    from audit.io import release as readers
    first = store.write_scan(scan.run(readers.open_release(release)))
    second = store.write_scan(scan.run(readers.open_release(release)))
    assert first != second and first.parent == second.parent == tmp_path / "scans" / "release"
    one = json.loads((first / "manifest.json").read_text())
    two = json.loads((second / "manifest.json").read_text())
    assert one["fingerprint"] == two["fingerprint"] and one["scan_id"] != two["scan_id"]
    done = cli("scan", str(release), "--out", str(first))
    assert done.returncode == 2 and "never overwrites" in done.stderr


def test_scan_history_lists_only_scans_of_the_same_files(tmp_path, settings_env):
    """Two releases under one name (shards are all validation-00000.parquet): each one's
    history holds its own saved scans, whatever the sources, not the other's."""
    from audit.engine import scan
    from audit.io import release as readers
    settings_env(AUDIT_SCANS=tmp_path / "scans")
    ours = readers.open_release(make_release(tmp_path / "a"))
    other = make_release(tmp_path / "b")
    (other / "validation-00000.parquet").unlink()
    synth.write_release([record(source(_id="5a0000000000000000000009"))], other)
    theirs = readers.open_release(other)
    assert ours.name == theirs.name and ours.content != theirs.content
    mine = store.write_scan(scan.run(ours))
    store.write_scan(scan.run(theirs))
    again = store.write_scan(scan.run(ours))
    assert [h["directory"] for h in store.scan_history(ours)] == [str(again), str(mine)]
    assert [h["rows"] for h in store.scan_history(theirs)] == [1]


def test_quarantine_exports_neutralise_formulas(tmp_path):
    cli("scan", str(make_release(tmp_path)), "--out", str(tmp_path / "scan"))
    for fmt in ("csv", "jsonl", "parquet"):
        done = cli("export-quarantine", str(tmp_path / "scan"), "--out",
                   str(tmp_path / f"q.{fmt}"))
        assert done.returncode == 0, done.stderr
        assert "2 reasons for 2 rows" in done.stdout
    rows = list(csv.DictReader((tmp_path / "q.csv").open(encoding="utf-8")))
    assert [(r["id"][-1], r["status"], r["reason"], r["paragraph_id"], r["sentence_index"])
            for r in rows] == [("1", "quarantined", "blank_sentence", "p02", "0"),
                               ("2", "review_required",
                                "duplicate_normalized_translated_title", "p02", "")]
    lines = (tmp_path / "q.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["sentence_index"] == 0
    assert pq.read_table(tmp_path / "q.parquet").num_rows == 2


def test_csv_export_neutralises_formulas_that_come_from_the_release(tmp_path):
    """Release ids reach the export: a formula hidden behind blanks, a line break or a
    full-width sign must come out inert."""
    ids = ['\u00a0=HYPERLINK("http://x","y")', "\n+1+1", "\uff1dSUM(A1)", " @cmd", "plain-id"]
    records = []
    for position, hostile in enumerate(ids):
        ctx = view(source(_id=hostile))
        ctx[2][1][0] = " "                                  # blank: quarantined
        records.append(record(source(_id=hostile), ctx, position=position))
    synth.write_release(records, tmp_path / "release")
    assert cli("scan", str(tmp_path / "release"), "--out", str(tmp_path / "scan")).returncode == 0
    done = cli("export-quarantine", str(tmp_path / "scan"), "--out", str(tmp_path / "q.csv"))
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader((tmp_path / "q.csv").open(encoding="utf-8", newline="")))
    assert [r["id"] for r in rows] == ["'" + i for i in ids[:4]] + ["plain-id"]
    cells = ["=1+1", "+1", "-1", "@SUM(A1)", "\t=1", "\r1", " \u3000=1", "\ufe66x", "plain",
             "a=b", 3]
    assert [tables.neutralise(c) for c in cells] == [
        "'=1+1", "'+1", "'-1", "'@SUM(A1)", "'\t=1", "'\r1", "' \u3000=1", "'\ufe66x",
        "plain", "a=b", 3]


def test_manifest(tmp_path):
    release = make_release(tmp_path)
    cli("scan", str(release), "--out", str(tmp_path / "scan"))
    done = cli("manifest", str(tmp_path / "scan"))
    manifest = json.loads(done.stdout)
    assert [(i["role"], i["bytes"]) for i in manifest["inputs"]] == [
        ("release", (release / "validation-00000.parquet").stat().st_size)]
    assert len(manifest["inputs"][0]["sha256"]) == 64
    assert manifest["rows_per_split"] == {"validation": 2}
    assert manifest["policy"]["name"] == "default"
    assert {"duckdb", "pyarrow", "python"} <= set(manifest["tools"])
    assert any(c["name"] == "blank_sentence" and c["severity"] == "blocking"
               for c in manifest["checks"])
    assert cli("manifest", str(tmp_path)).returncode == 2


def test_policy_file_promotes_and_demotes(tmp_path):
    policy = tmp_path / "policy.toml"
    policy.write_text('[severity]\nblank_sentence = "info"\n'
                      'duplicate_normalized_translated_title = "blocking"\n')
    cli("scan", str(make_release(tmp_path)), "--out", str(tmp_path / "scan"),
        "--policy", str(policy))
    status = pq.read_table(tmp_path / "scan" / "status.parquet").to_pylist()
    assert [(r["status"], r["flags"]) for r in status] == [
        ("accepted", []), ("quarantined", ["duplicate_normalized_translated_title"])]
    manifest = json.loads((tmp_path / "scan" / "manifest.json").read_text())
    assert manifest["policy"]["overrides"] == {
        "blank_sentence": "info", "duplicate_normalized_translated_title": "blocking"}
    policy.write_text('[severity]\nno_such_check = "info"\n')
    done = cli("scan", str(make_release(tmp_path / "x")), "--policy", str(policy))
    assert done.returncode == 2 and "unknown check 'no_such_check'" in done.stderr


def test_skip_leaves_a_check_out_and_says_so(tmp_path):
    done = cli("scan", str(make_release(tmp_path)), "--out", str(tmp_path / "scan"),
               "--skip", "blank_sentence")
    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "scan" / "summary.json").read_text())
    assert "blank_sentence" not in summary["check_counts"]
    assert summary["checks_skipped"] == ["blank_sentence"]
    assert summary["status_counts"] == {"accepted": 1, "review_required": 1}
    done = cli("scan", str(make_release(tmp_path / "x")), "--skip", "no_such_check")
    assert done.returncode == 2 and "unknown check(s) no_such_check" in done.stderr


def test_a_saved_scan_of_the_same_inputs_is_read_not_recomputed(tmp_path, settings_env):
    from audit.engine import policy, scan
    from audit.io import release as readers
    settings_env(AUDIT_SCANS=tmp_path / "scans")
    release = make_release(tmp_path)
    first = scan.run(readers.open_release(release))
    saved = store.write_scan(first)
    again = readers.open_release(release)
    assert store.saved_scan(again, scan.identity(again, policy.DEFAULT)) == saved
    loaded, language = store.load_result(again, policy.DEFAULT, saved)
    assert loaded.findings.equals(first.findings) and loaded.status.equals(first.status)
    assert loaded.identity == first.identity and language.num_rows == 2
    # Another policy is another scan.
    strict = tmp_path / "strict.json"
    strict.write_text(json.dumps({"severity": {"exact_source_copy": "blocking"}}))
    assert store.saved_scan(again, scan.identity(again, policy.load(strict))) is None


def test_a_warm_scan_never_imports_pandas(tmp_path):
    """Arrow imports pandas on the first array built from Python values: 0.15 s of a 1 s
    scan. A `--fresh` rescan (every cache warm, the results computed again) builds none, on
    a release with a source and with characters that the invisible-control check describes
    in Python."""
    scan = ["scan", str(DEMO / "release"),
            "--source", f"train={DEMO / 'hotpot_source_train.json'}",
            "--source", f"validation={DEMO / 'hotpot_source_validation.json'}"]
    assert cli(*scan, "--out", str(tmp_path / "cold")).returncode == 0
    probe = ("import sys\nfrom audit.cli.main import main\n"
             f"code = main({[*scan, '--out', str(tmp_path / 'warm'), '--fresh']!r})\n"
             "print(code, 'pandas' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True,
                          text=True)
    assert done.stdout.split()[-2:] == ["0", "False"], done.stderr
    assert json.loads((tmp_path / "warm" / "summary.json").read_text())["check_counts"][
        "invisible_control"] > 0


def _seed_defaults(parser, path=()):
    """(command path, --seed default) of every command that takes a seed."""
    import argparse
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _seed_defaults(child, (*path, name))
        elif "--seed" in action.option_strings:
            yield " ".join(path), action.default


def test_every_resampling_command_and_function_defaults_to_one_seed():
    """`review evidence BATCH` and `accept --reviews BATCH` read the same ΔH interval: one
    default seed, declared once (review's commands defaulted to 0, accept to 20260810)."""
    import inspect

    from audit.analysis import stats
    from audit.cli import main
    from audit.evaluation import judge, report, retrieval
    from audit.reports import compare
    from audit.review import agreement, reports
    from audit.review.kinds import paired, translation
    from audit.review.reports import write_reports
    defaults = dict(_seed_defaults(main.parser()))
    assert {"review evidence", "review report", "accept", "compare"} <= set(defaults)
    assert set(defaults.values()) == {stats.SEED}
    functions = [agreement.agreement, agreement.agreement_by, translation.rating_means,
                 reports.all_reports, paired.delta_h, paired.preservation, paired.evidence,
                 compare.compare, judge.bootstrap, write_reports]
    assert {inspect.signature(f).parameters["seed"].default for f in functions} == {stats.SEED}
    assert report.SEED == retrieval.SEED == judge.SAMPLING_SEED == stats.SEED

def test_a_rescan_of_the_same_inputs_copies_the_remembered_results(tmp_path, settings_env):
    """Same files, policy, checks and code: the second scan copies the first one's outputs
    (its own id, date and paths); another policy, a skipped check, --fresh or a damaged
    entry scan again."""
    settings_env(AUDIT_CACHE_DIR=str(tmp_path / "cache"))
    release = make_release(tmp_path)
    assert cli("scan", str(release), "--out", str(tmp_path / "first")).returncode == 0
    done = cli("scan", str(release), "--out", str(tmp_path / "again"))
    assert done.returncode == 0, done.stderr
    assert "nothing is recomputed" in done.stderr and "checks done" not in done.stderr
    for name in ("findings.parquet", "status.parquet", "descriptors.parquet"):
        assert (tmp_path / "first" / name).read_bytes() == (tmp_path / "again" / name).read_bytes()
    first, again = (json.loads((tmp_path / d / "summary.json").read_text())
                    for d in ("first", "again"))
    assert again["reused"] == {"scan_id": first["scan_id"], "seconds": first["seconds"]}
    assert again["scan_id"] != first["scan_id"] and again["check_counts"] == first["check_counts"]
    manifests = [json.loads((tmp_path / d / "manifest.json").read_text())
                 for d in ("first", "again")]
    assert manifests[0]["fingerprint"] == manifests[1]["fingerprint"]
    assert manifests[1]["inputs"] == manifests[0]["inputs"]
    strict = tmp_path / "strict.json"
    strict.write_text(json.dumps({"severity": {"blank_sentence": "info"}}))
    for n, extra in enumerate((["--policy", str(strict)], ["--skip", "blank_sentence"],
                               ["--fresh"])):
        done = cli("scan", str(release), "--out", str(tmp_path / f"other{n}"), *extra)
        assert done.returncode == 0 and "row, context and unit checks done" in done.stderr, extra
    for entry in (tmp_path / "cache" / "results").iterdir():
        (entry / "findings.parquet").unlink()
    done = cli("scan", str(release), "--out", str(tmp_path / "damaged"))
    assert done.returncode == 0 and "row, context and unit checks done" in done.stderr
    assert (tmp_path / "damaged" / "findings.parquet").read_bytes() == (
        tmp_path / "first" / "findings.parquet").read_bytes()
    done = cli("scan", str(release), "--out", str(tmp_path / "repaired"))
    assert done.returncode == 0 and "nothing is recomputed" in done.stderr


def test_a_remembered_scan_imports_no_library(tmp_path, settings_env):
    """A rescan answered from remembered outputs reads paths and bytes only: neither DuckDB,
    Arrow, numpy nor a check module is imported."""
    settings_env(AUDIT_CACHE_DIR=str(tmp_path / "cache"))
    release = make_release(tmp_path)
    assert cli("scan", str(release), "--out", str(tmp_path / "first")).returncode == 0
    probe = ("import sys\nfrom audit.cli.main import main\n"
             f"code = main(['scan', {str(release)!r}, '--out', {str(tmp_path / 'again')!r}])\n"
             "print(code, *sorted(m for m in ('duckdb', 'pyarrow', 'numpy',"
             " 'audit.checks.registry') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True,
                          text=True)
    assert done.stdout.split()[-1:] == ["0"], done.stderr
    assert "nothing is recomputed" in done.stderr


def test_every_review_command_a_help_text_cites_exists():
    """A help text that names `review X` names a command there is (accept's once cited a
    `review push-paired` that never existed)."""
    import argparse
    import re

    from audit.cli.main import parser

    def subparsers(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        return next((a.choices for a in p._actions
                     if isinstance(a, argparse._SubParsersAction)), {})

    top = subparsers(parser())
    review = set(subparsers(top["review"]))
    texts = [p.format_help() for p in top.values()]
    texts += [p.format_help() for p in subparsers(top["review"]).values()]
    cited = {m for text in texts for m in re.findall(r"review ([a-z][a-z-]+)", text)}
    # ("review batch", "review workspace": the nouns, not commands)
    assert "push" in cited and cited - review == {"batch", "workspace"}


def test_the_reoffer_hint_names_the_control_the_page_has():
    """The hint for a skipped adjudication names the Annotations page's checkbox by its
    label (it once said "button")."""
    from audit.review.push import reoffer_hint
    label = "Also offer the skipped items again"
    page = (REPO / "workbench" / "adjudication.py").read_text(encoding="utf-8")  # its queue
    assert f'"{label} (deletes' in page and "button" not in reoffer_hint("b1")
    assert f'"{label}" box' in reoffer_hint("b1")
