"""`python -m audit review …` (audit/cli/review.py) as a release manager scripts it: bad input
is one line and exit 2; push / status / pull / adjudicate / report against a real Label
Studio, with the logins printed once and the reports written as CSV and Plotly HTML."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from conftest import label_studio

from audit.review.labelstudio import client as ls

ROOT = Path(__file__).resolve().parent.parent
RUN = uuid.uuid4().hex[:6]


def review(*args: str, workspace: Path, env: dict | None = None,
           ) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "audit", "review", "--workspace",
                           str(workspace), *args], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=900)


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("spec, message", [
    (None, "no such file"),
    ("{not json", "not valid JSON"),
    ('{"annotators": ["a@example.org:de", "b@example.org:de"], "colour": 1}',
     "unknown key(s) colour"),
    ('{"annotators": ["a@example.org:de", "b@example.org:xx"]}',
     "unknown language code(s) xx"),
    ('{"annotators": ["a@example.org:de"], "design": "huge"}', "design: 'huge'"),
    ('{"kind": "realism", "annotators": ["a@example.org"]}', "pairs: missing"),
    ('{"kind": "paired", "release": "data/demo/release", "annotators": ["a@example.org:de"]}',
     "new_release: missing"),
    ('{"new_release": "data/demo/release", "annotators": ["a@example.org:de"]}',
     "new_release: given for a translation batch"),
    ('{"annotators": {"annotator 1": ["a@example.org"], "annotator 2": ["b@example.org"]}}',
     "annotators per side need one server per side"),
])
def test_a_bad_spec_is_one_line_and_exit_2(tmp_path, spec, message):
    path = tmp_path / "spec.json"
    if spec is not None:
        write(path, spec)
    done = review("push", str(path), workspace=tmp_path / "ws")
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: ")
    assert str(path) in done.stderr and message in done.stderr
    assert not (tmp_path / "ws").exists()


def test_bad_batch_and_report_arguments_are_one_line_and_exit_2(tmp_path):
    for args, message in ((["status", "nosuch"], "no such review batch"),
                          (["pull", "../up"], "batch id"),
                          (["report", "nosuch", "--out", str(tmp_path)], "already exists")):
        done = review(*args, workspace=tmp_path)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert message in done.stderr


@pytest.fixture(scope="module")
def server():
    with label_studio("cli") as connected:
        yield connected


def logins(stdout: str) -> dict[str, str]:
    """email -> password from the push's NEW ACCOUNTS block."""
    found = {}
    for line in stdout.split("NEW ACCOUNTS", 1)[-1].splitlines()[1:]:
        parts = line.split()
        if len(parts) == 3 and parts[0].endswith("/user/login/"):
            found[parts[1]] = parts[2]
    return found


def question_result(adequacy: int, answer: str) -> list[dict]:
    result = [{"from_name": name, "to_name": "translation", "type": "rating",
               "value": {"rating": adequacy}} for name in ("adequacy", "fluency")]
    result += [{"from_name": name, "to_name": "translation", "type": "choices",
                "value": {"choices": [answer if name == "answer_preserved" else "yes"]}}
               for name in ("answer_preserved", "entities_preserved", "alignment_preserved",
                            "assigned_language")]
    return result


@pytest.mark.labelstudio
def test_push_status_pull_adjudicate_report(server, tmp_path):
    ana, bo, cy = (f"{name}-{RUN}@example.org" for name in ("ana", "bo", "cy"))
    spec = write(tmp_path / "spec.toml", f'''
kind = "translation"
batch = "cli-{RUN}"
design = {{by = ["language", "unit"], per_stratum = {{question = 1}}}}
seed = 7
annotators = ["{ana}:de,fr", "{bo}:de,fr"]
adjudicators = ["{cy}:de,fr"]
server = "{server.url}"
''')
    work = tmp_path / "ws"
    pushed = review("push", str(spec), workspace=work)
    assert pushed.returncode == 0, pushed.stderr
    assert f"batch cli-{RUN}: 23 units, 2 routed, 21 left out; 4 tasks sent" in pushed.stdout
    assert "ja        1      0       1         0        no annotator reads ja" in pushed.stdout
    assert "[##############################] 1/1" in pushed.stderr   # progress bars
    passwords = logins(pushed.stdout)
    assert sorted(passwords) == sorted([ana, bo])
    assert (work / f"cli-{RUN}" / "spec.json").exists()

    status = review("status", f"cli-{RUN}", "--json", workspace=work)
    assert status.returncode == 0, status.stderr
    counts = json.loads(status.stdout)
    assert counts["groups"] == [
        {"group": "de", "tasks": 2, "done": 0, "skipped": 0, "remaining": 2},
        {"group": "fr", "tasks": 2, "done": 0, "skipped": 0, "remaining": 2}]
    assert counts["left_out"] == 21 and counts["blinding"] == "detected"

    ledger = json.loads((work / f"cli-{RUN}" / "ledger.json").read_text())
    for email, adequacy in ((ana, 4), (bo, 2)):
        with ls.sign_in(server.url, email, passwords[email]) as me:
            for key, entry in ledger["projects"].items():
                if entry["annotator"] == email:
                    for task in server.list_tasks(entry["project_id"]):
                        me.client.annotations.create(id=task.id,
                                                     result=question_result(adequacy, "yes"))
    pulled = review("pull", f"cli-{RUN}", workspace=work)
    assert pulled.returncode == 0, pulled.stderr
    assert f"batch cli-{RUN}: 32 new rows (32 in all)" in pulled.stdout
    assert "0 refused" in pulled.stdout
    # No refusal was ever logged: no log file, and none named.
    assert "refusals.jsonl" not in pulled.stdout
    assert not (work / f"cli-{RUN}" / "refusals.jsonl").exists()

    adjudicated = review("adjudicate", f"cli-{RUN}", workspace=work)
    assert adjudicated.returncode == 0, adjudicated.stderr
    assert "2 open items; 2 adjudication tasks sent" in adjudicated.stdout
    assert sorted(logins(adjudicated.stdout)) == [cy]

    out = tmp_path / "reports"
    reported = review("report", f"cli-{RUN}", "--out", str(out), "--n-boot", "50",
                      workspace=work)
    assert reported.returncode == 0, reported.stderr
    names = sorted(p.name for p in out.iterdir())
    for name in ("agreement", "rating_means", "preservation_rates", "consequences"):
        assert f"{name}.csv" in names and f"{name}.html" in names
    assert {"final_labels.csv", "adjudication_queue.csv", "plotly.min.js"} <= set(names)
    assert "plotly.min.js" in (out / "rating_means.html").read_text()
    with (out / "final_labels.csv").open(encoding="utf-8") as stream:
        final = list(csv.DictReader(stream))
    adequacy = [r for r in final if r["criterion"] == "adequacy"]
    assert len(adequacy) == 2 and {r["status"] for r in adequacy} == {"disagreement"}
    assert {r["value"] for r in final if r["criterion"] == "answer_preserved"} == {"yes"}
    again = review("report", f"cli-{RUN}", "--out", str(out), workspace=work)
    assert again.returncode == 2 and "already exists" in again.stderr


def test_report_writes_agreement_per_language_and_pair_and_prints_n_and_the_flagged(tmp_path):
    import pyarrow.parquet as pq
    from test_agreement import annotations, three_language_batch
    batch = tmp_path / "ws" / "three"
    batch.mkdir(parents=True)
    pq.write_table(annotations(three_language_batch()), batch / "annotations.parquet")
    out = tmp_path / "reports"
    done = review("report", "three", "--out", str(out), "--n-boot", "100", "--kappa-floor",
                  "0.6", workspace=tmp_path / "ws")
    assert done.returncode == 0, done.stderr
    names = {p.name for p in out.iterdir()}
    assert {"agreement_by_language.csv", "agreement_by_language.html",
            "agreement_by_pair.csv", "agreement_by_pair.html"} <= names
    with (out / "agreement_by_pair.csv").open(encoding="utf-8") as stream:
        pairs = [r for r in csv.DictReader(stream) if r["statistic"] == "cohen_kappa"]
    # hand computations: tests/test_agreement.py three_language_batch (ar κ = 5/9)
    assert [(r["group"], r["language"], r["n_items"], round(float(r["estimate"]), 3))
            for r in pairs] == [("amal & badr", "ar", "6", 0.556), ("dirk & erna", "de", "6", 1.0),
                                ("umar & yara", "ur", "3", 1.0), ("umar & zaid", "ur", "3", 1.0)]
    # pooled κ 55/64 over 18 items; only the Arabic unweighted κ is below 0.6
    assert "adequacy   cohen_kappa            0.859" in done.stdout
    pooled = next(line for line in done.stdout.splitlines()
                  if line.startswith("adequacy   cohen_kappa "))
    assert pooled.split()[5:7] == ["18", "18"]          # n items, clusters
    assert done.stdout.split("below the κ floor 0.6: 2\n")[1].splitlines() == [
        "  adequacy, language ar: κ 0.556, raw agreement 0.667, n = 6",
        "  adequacy, pair amal & badr (ar): κ 0.556, raw agreement 0.667, n = 6"]
    # a pooled κ below the floor is named too: 55/64 = 0.859 < 0.9
    strict = review("report", "three", "--out", str(tmp_path / "strict"), "--n-boot", "20",
                    "--kappa-floor", "0.9", workspace=tmp_path / "ws")
    assert strict.returncode == 0, strict.stderr
    assert "  adequacy, all items: κ 0.859, raw agreement 0.889, n = 18" in \
        strict.stdout.split("below the κ floor 0.9: ")[1].splitlines()
    wrong = review("report", "three", "--out", str(tmp_path / "r2"), "--kappa-floor", "3",
                   workspace=tmp_path / "ws")
    assert wrong.returncode == 2 and wrong.stderr.count("\n") == 1
    assert "--kappa-floor" in wrong.stderr and "between -1 and 1" in wrong.stderr
