"""Benchmark the review loop's analysis side: agreement and reports over 5,520 annotations.

    .venv/bin/python bench/review.py

The synthetic review mirrors the paper's translation-audit design (Table 10): 460 source
instances x (4 paragraphs + 1 question + 1 answer) = 2,760 units balanced over the 23 target
languages, each rated by two bilingual annotators on the seven translation criteria, with a
third annotator adjudicating 90% of the items in disagreement (so the reports also meet
unresolved labels). Agreement is realistic, not perfect: ratings are a latent quality plus
annotator noise, yes/no labels flip now and then, and consequences are sometimes misjudged
(seeded, so every run times the same table).

Timed: agreement() pooled and agreement_by() per language and per pair (2,000
source-clustered bootstrap replicates per statistic and group) plus all_reports() (2,000 replicates per mean and rate), from the pulled table to pyarrow tables.
Target: < 5 s.

Push, status and pull against a real Label Studio (bench_push_pull): a 2,760-item
translation batch routed to two bilingual annotators who both read the 23 target languages
(23 language groups, 46 projects, 5,520 tasks in chunks of 100; target < 60 s, accounts
signed up included); status of that batch before any annotation and with every task
annotated (the first read: project sizes and users once, each annotated project's latest
change and export judged as the pull judges it; then the median of 5 more reads, which
export only projects changed since; target < 2 s); and a pull of 5,520 annotations (2,760 per annotator, all eight
controls, 44,160 rows; target < 30 s). The annotations are made through each annotator's
own login and token, as in the labeling interface, so they pass attribution (untimed setup,
a few requests in parallel). The server is LABEL_STUDIO_URL when set, else one started by
scripts/labelstudio.sh on a free port and a fresh data dir, stopped and removed afterwards.
Skipped when label-studio is missing.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import os
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from audit.languages import CODES  # noqa: E402
from audit.review import agreement as ag  # noqa: E402
from audit.review import reports  # noqa: E402
from audit.review.kinds import translation  # noqa: E402
from audit.settings import current  # noqa: E402

SEED = 20261130
SOURCES = 460
UNITS = ("paragraph",) * 4 + ("question", "answer")
TARGETS = tuple(code for code in CODES if code != "en")


def synthesise(n_sources: int = SOURCES, seed: int = SEED) -> pa.Table:
    """Two initial annotations per unit on every criterion, adjudication where they differ."""
    rng = np.random.default_rng(seed)
    n = n_sources * len(UNITS)
    item = np.arange(n)
    language = np.array(TARGETS)[item % len(TARGETS)]
    truth = {
        "adequacy": rng.choice(5, n, p=[0.02, 0.05, 0.13, 0.35, 0.45]),
        "fluency": rng.choice(5, n, p=[0.01, 0.04, 0.15, 0.40, 0.40]),
        **{c: rng.choice(2, n, p=[0.08, 0.92]) for c in translation.PRESERVATION},
        "consequence": rng.choice(4, n, p=[0.70, 0.15, 0.10, 0.05]),
    }
    columns: dict[str, list] = {name: [] for name in ag.REQUIRED}
    stamp = dt.datetime(2026, 11, 30, 12, 0)

    def add(criterion: str, labels: tuple[str, ...], codes: np.ndarray, who: np.ndarray,
            role: str, rows: np.ndarray, slot: int) -> None:
        columns["item_id"] += [f"u{i:05d}" for i in rows]
        columns["cluster_id"] += [f"s{i // len(UNITS):04d}" for i in rows]
        columns["kind"] += ["translation"] * len(rows)
        columns["language"] += language[rows].tolist()
        columns["unit"] += [UNITS[i % len(UNITS)] for i in rows]
        columns["setting"] += [None] * len(rows)
        columns["annotator"] += who.tolist()
        columns["role"] += [role] * len(rows)
        columns["criterion"] += [criterion] * len(rows)
        columns["value"] += [labels[c] for c in codes]
        columns["annotation_id"] += (rows * 3 + slot - 1).tolist()   # one id per annotation
        columns["updated_at"] += [stamp] * len(rows)

    adjudicated = rng.random(n) < 0.9   # the third annotator has not finished the queue
    for criterion, scale in ag.CRITERIA["translation"].items():
        k = len(scale.labels)
        given = []
        for slot in (1, 2):
            if scale.ordinal:   # latent rating +- 1 with probability 0.3
                noise = rng.choice([-1, 0, 1], n, p=[0.15, 0.70, 0.15])
                codes = np.clip(truth[criterion] + noise, 0, k - 1)
            else:               # occasionally a different category
                slip = rng.random(n) < (0.05 if k == 2 else 0.15)
                codes = np.where(slip, rng.integers(0, k, n), truth[criterion])
            given.append(codes)
            add(criterion, scale.labels, codes, np.char.add(language, f"-{slot}"), "initial",
                item, slot)
        differ = item[(given[0] != given[1]) & adjudicated]
        add(criterion, scale.labels, truth[criterion][differ],
            np.char.add(language[differ], "-3"), "adjudication", differ, 3)
    return pa.table(columns)


def run(table: pa.Table) -> tuple[float, float]:
    """Wall and CPU seconds of agreement + all reports (CPU time is the figure to trust on a
    shared machine: it does not count time spent waiting for a core)."""
    wall, cpu = time.perf_counter(), time.process_time()
    ag.agreement(table)
    for by in ag.BREAKDOWNS:
        ag.agreement_by(table, by)
    reports.all_reports(table)
    return time.perf_counter() - wall, time.process_time() - cpu


# ------------------------------------------------------------------ push and pull, real server

PUSH_ITEMS = SOURCES * len(UNITS)     # 2,760 items, 5,520 tasks over 46 projects
SENTENCE = ("The river rises in the mountains and flows for several hundred kilometres "
            "before it reaches the sea near the old harbour town. ")


def synthetic_batch(batch_id: str, n_items: int = PUSH_ITEMS):
    """A translation review batch shaped like the paper's: paragraphs of five sentences,
    questions and answers, over the 23 target languages (one routing group each)."""
    from audit.review.batches import ReviewBatch
    from audit.review.schemas import ITEM_SCHEMA
    tasks, items = [], []
    for i in range(n_items):
        unit, source = UNITS[i % len(UNITS)], f"s{i // len(UNITS):04d}"
        language = TARGETS[i % len(TARGETS)]
        text = SENTENCE * 5 if unit == "paragraph" else SENTENCE[:90]
        item_id = f"{source}:{unit}:{'p%d' % (i % len(UNITS)) if unit == 'paragraph' else '-'}"
        tasks.append(translation.FORM.payload(
            item_id=item_id, batch_id=batch_id, unit=unit,
            language=language, question=SENTENCE[:80], source_question=SENTENCE[:80],
            answer="the sea", source_answer="the sea", title="River", source_title="River",
            source_text=text, translation_text=text))
        items.append({"item_id": item_id, "cluster_id": source, "kind": "translation",
                      "language": language, "unit": unit, "setting": None, "source_a": None,
                      "source_b": None, "group": language})
    table = pa.Table.from_pylist(items, schema=ITEM_SCHEMA)
    return ReviewBatch(batch_id, "translation_review", table, tasks)


def _result(rng: np.random.Generator) -> list[dict]:
    def control(name: str, kind: str, value: dict) -> dict:
        return {"from_name": name, "to_name": "translation", "type": kind, "value": value}
    result = [control(c, "rating", {"rating": int(rng.integers(3, 6))})
              for c in ("adequacy", "fluency")]
    result += [control(c, "choices", {"choices": [str(rng.choice(["yes", "yes", "no"]))]})
               for c in translation.PRESERVATION]
    result.append(control("consequence", "choices", {"choices": ["cosmetic"]}))
    result.append(control("comment", "textarea", {"text": ["fine"]}))
    return result


def _server():
    """(server, local) — LABEL_STUDIO_URL, or a fresh local server (local is then set)."""
    from audit.review.labelstudio import client as ls
    from devkit.labelstudio_local import LocalServer, free_port
    if os.environ.get("LABEL_STUDIO_URL"):
        return ls.connect(), None
    local = LocalServer(current().labelstudio_data / f"bench-{uuid.uuid4().hex[:8]}", free_port())
    local.start()
    return ls.connect(local.url), local


def _annotate_all(server, report) -> int:
    """Every task annotated by its project's annotator, through their own login."""
    from concurrent.futures import ThreadPoolExecutor

    from audit.review.labelstudio import client as ls
    people = {n.email: ls.sign_in(server.url, n.email, n.password) for n in report.credentials}
    rng = np.random.default_rng(SEED)
    work = [(people[p.annotator], task.id, _result(rng)) for p in report.projects
            for task in server.list_tasks(p.project_id)]

    def submit(job) -> None:
        me, task_id, result = job
        me.client.annotations.create(id=task_id, result=result,
                                     request_options={"max_retries": 0})
    with ThreadPoolExecutor(max_workers=6) as pool:
        list(pool.map(submit, work))
    for me in people.values():
        me.close()
    return len(work)


def bench_push_pull() -> None:
    """Print the push, status and pull timings against a real Label Studio."""
    if not os.environ.get("LABEL_STUDIO_URL") and importlib.util.find_spec("label_studio") is None:
        print("push / pull against Label Studio: skipped (label-studio is not installed)")
        return
    from audit.review.pull import pull
    from audit.review.push import push
    server, local = _server()
    workspace = Path(tempfile.mkdtemp(prefix="bench-reviews-"))
    run = uuid.uuid4().hex[:6]
    annotators = [f"bench-{run}-{k}@example.org:{','.join(TARGETS)}" for k in (1, 2)]
    report = None
    try:
        batch = synthetic_batch(f"bench-{run}")
        wall = time.perf_counter()
        report = push(server, batch, annotators, workspace=workspace)
        push_seconds = time.perf_counter() - wall
        print(f"push {len(batch.tasks):,} items to two annotators ({len(report.projects)} "
              f"projects, {report.sent:,} tasks, {len(report.credentials)} accounts signed "
              f"up): {push_seconds:.1f} s (target < 60 s)")
        wall = time.perf_counter()
        again = push(server, batch, annotators, workspace=workspace)
        print(f"re-push of the complete batch: {time.perf_counter() - wall:.1f} s, "
              f"{again.sent} sent")
        _time_status(server, batch, workspace, "before any annotation")
        wall = time.perf_counter()
        made = _annotate_all(server, report)
        print(f"(untimed setup: {made:,} annotations made through the annotators' own "
              f"logins in {time.perf_counter() - wall:.0f} s)")
        _time_status(server, batch, workspace, "every task annotated")
        wall = time.perf_counter()
        pulled = pull(server, batch.batch_id, workspace=workspace)
        pull_seconds = time.perf_counter() - wall
        n = sum(p.accepted for p in pulled.projects)
        print(f"pull {n:,} annotations ({pulled.rows_total:,} rows, {len(pulled.rejected)} "
              f"refused): {pull_seconds:.1f} s (target < 30 s)")
    finally:
        if local is None:
            for project in (report.projects if report else []):
                server.delete_project(project.project_id)
        else:
            local.stop()
            shutil.rmtree(local.data_dir, ignore_errors=True)
        shutil.rmtree(workspace, ignore_errors=True)


def _time_status(server, batch, workspace: Path, when: str) -> None:
    """The first status read (every annotated project exported and judged as the pull
    does), then the median and max of 5 more (only changed projects are exported again)."""
    from audit.review.status import status as poll
    from audit.review.workspace import batch_dir
    (batch_dir(batch.batch_id, workspace) / "status.json").unlink(missing_ok=True)
    times = []
    for _ in range(6):
        wall = time.perf_counter()
        status = poll(server, batch.batch_id, workspace=workspace)
        times.append(time.perf_counter() - wall)
    first, again = times[0], sorted(times[1:])
    done = sum(p.done for p in status.projects)
    print(f"status of the {len(batch.tasks):,}-item batch ({len(status.projects)} projects, "
          f"{when}: {done:,} done): first read {first:.2f} s, then median {again[2]:.2f} s, "
          f"max {again[-1]:.2f} s (target < 2 s)")


def main() -> None:
    table = synthesise()
    initial = table.filter(pc.equal(table["role"], "initial"))
    annotations = len(set(zip(initial["item_id"].to_pylist(), initial["annotator"].to_pylist())))
    wall, cpu = run(table)
    print(f"agreement and reports over {annotations:,} annotations: {wall:.2f} s "
          f"({cpu:.2f} s CPU; target < 5 s)")
    bench_push_pull()


if __name__ == "__main__":
    main()
