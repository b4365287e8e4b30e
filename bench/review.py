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

    .venv/bin/python bench/review.py --spans [--items 2000]

Error spans (issue 46, bench_spans): a span batch (kinds/spans.py, ESA, prefill =
"findings") of --items units sampled from a real-text release: bench/realtext.py's NTREX
text in the XHotpotQA+ shape, 990 sources x 24 views with two sentences per context left
untranslated (as its "copies" release, at the "real" release's size) so the checks find
places to pre-fill; 4 paragraphs : 1 question : 1 answer per non-English language (the
paper's ratio), drawn a little over --items and cut to --items. Pushed with its pre-filled
regions (predictions) to two annotators who both read the 23 target languages (23 groups,
46 projects), each task annotated once by each annotator through their own login: most
pre-filled regions kept (some re-graded minor, some deleted), usually a manual span (often
the one the other annotator marked, sometimes with other extents or severity), now and
then an omission on "[missing]", and a 0-100 score. Timed: the push (tasks and predictions
imported), the pull (export, parse, append; the export alone measured after), a second pull
(must add 0 rows), kinds.spans.tables() with 2,000 bootstrap replicates (and its parts),
and each phase's peak RSS of this process (VmHWM, reset before the phase; the Label Studio
server is another process).
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


# ------------------------------------------------------------------ error spans, real server

SPAN_SOURCES = 990           # the "real" release's size
SPAN_UNTRANSLATED = 2        # sentences per context left in English (the "copies" release)
SPAN_ITEMS = 2000


def _rss_reset() -> None:
    """Reset this process's peak RSS (Linux: /proc/self/clear_refs)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def _rss_peak() -> str:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return f"{int(line.split()[1]) / 1024:,.0f} MiB"
    except OSError:
        pass
    import resource
    return f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MiB (process)"


def span_release() -> dict:
    """The real-text release of the span bench (bench/realtext.py, built on first use)."""
    sys.path.insert(0, str(REPO / "bench"))
    import realtext
    return realtext.build(realtext.DATA / f"copies_{SPAN_SOURCES}x24", SPAN_SOURCES,
                          untranslated=SPAN_UNTRANSLATED)


def span_batch(batch_id: str, n_items: int, annotators: list[str], folder: Path):
    """A spans batch (ESA, prefill "findings") of n_items units of the real-text release,
    4:1:1 paragraphs, questions and answers per language, cut to n_items."""
    import dataclasses
    import json

    from audit.review import spec
    from audit.review.kinds import spans as kind
    info = span_release()
    per_language = -(-n_items // len(TARGETS))
    questions = max(1, round(per_language / 6))
    answers = max(1, per_language // 6)
    design = {"by": ["language", "unit"], "per_stratum": {
        "paragraph": per_language - questions - answers, "question": questions,
        "answer": answers}}
    path = folder / "spans.json"
    path.write_text(json.dumps({
        "kind": "spans", "batch": batch_id, "release": info["release"],
        "sources": [f"validation={info['source']}"], "design": design,
        "protocol": "esa", "prefill": "findings", "annotators": annotators}), encoding="utf-8")
    batch = kind.build(spec.load(path))
    if len(batch.tasks) <= n_items:
        return batch
    keep = batch.item_ids[:n_items]
    kept = set(keep)
    prefill = batch.tables[kind.PREFILL_FILE]
    manifest = dict(batch.manifest or {})
    if "item_ids" in manifest:
        manifest["item_ids"] = keep
    return dataclasses.replace(
        batch, items=batch.items.slice(0, n_items), tasks=batch.tasks[:n_items],
        manifest=manifest,
        tables={**batch.tables, kind.PREFILL_FILE: prefill.filter(
            pc.is_in(prefill["item_id"], pa.array(keep)))},
        predictions={k: v for k, v in (batch.predictions or {}).items() if k in kept})


def _words(text: str) -> list[tuple[int, int]]:
    """(start, end) of each whitespace-separated word of a text."""
    import re
    return [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]


def _span_results(task: dict, prefilled: list[dict]) -> list[list[dict]]:
    """The two annotators' results on one task (slot 1 and 2), seeded by the item: the
    pre-filled regions mostly kept (some re-graded minor, some deleted), a manual error span
    (the item's own, which each annotator marks with probability 0.75, now and then with a
    word more or another severity), an omission now and then, and a 0-100 score."""
    import zlib

    from audit.review.kinds import spans as kind
    shown = task["translation_text"]
    text = shown[:-len(kind.MISSING) - 1]
    item = np.random.default_rng([SEED, zlib.crc32(task["item_id"].encode())])
    words = _words(text)
    has_error = words and item.random() < 0.7
    if has_error:
        first = int(item.integers(len(words)))
        last = min(len(words) - 1, first + int(item.integers(0, 4)))
        truth = (words[first][0], words[last][1], "major" if item.random() < 0.3 else "minor")
    omission = item.random() < 0.05
    quality = float(item.normal(78, 12))

    def region(rid: str, start: int, end: int, severity: str) -> dict:
        return {"id": rid, "from_name": "severity", "to_name": "translation",
                "type": "labels", "value": {"start": start, "end": end,
                                            "text": shown[start:end], "labels": [severity]}}
    out = []
    for k in (1, 2):
        me = np.random.default_rng([SEED, zlib.crc32(task["item_id"].encode()), k])
        result = []
        for kept in prefilled:
            fate = me.random()
            if fate < 0.8:
                result.append(kept)
            elif fate < 0.9:
                result.append(region(kept["id"], kept["value"]["start"], kept["value"]["end"],
                                     "minor"))
        marked = 0
        if has_error and me.random() < 0.75:
            start, end, severity = truth
            if me.random() < 0.15 and last + 1 < len(words):
                end = words[last + 1][1]
            if me.random() < 0.15:
                severity = "major" if severity == "minor" else "minor"
            result.append(region(uuid.uuid4().hex[:10], start, end, severity))
            marked += 1
        if omission and me.random() < 0.6:
            result.append(region(uuid.uuid4().hex[:10], len(text) + 1, len(shown), "major"))
            marked += 1
        score = quality - 8 * marked - 10 * len(prefilled) + float(me.normal(0, 8))
        result.append({"id": uuid.uuid4().hex[:10], "from_name": "esa_score",
                       "to_name": "translation", "type": "number",
                       "value": {"number": int(np.clip(round(score), 0, 100))}})
        out.append(result)
    return out


def _annotate_spans(server, report, batch) -> tuple[int, int]:
    """Every task annotated by its project's annotator through their own login (untimed):
    (annotations, regions) made."""
    from concurrent.futures import ThreadPoolExecutor

    from audit.review.labelstudio import client as ls
    people = {n.email: ls.sign_in(server.url, n.email, n.password) for n in report.credentials}
    tasks = {t["item_id"]: t for t in batch.tasks}
    predicted = {item: [r for p in made for r in p["result"]]
                 for item, made in (batch.predictions or {}).items()}
    slots = {}
    for project in report.projects:
        slots.setdefault(project.group, []).append(project.annotator)
    results = {}
    work = []
    for project in report.projects:
        slot = sorted(slots[project.group]).index(project.annotator)
        for task in server.list_tasks(project.project_id):
            if task.item_id not in results:
                results[task.item_id] = _span_results(tasks[task.item_id],
                                                      predicted.get(task.item_id, []))
            work.append((people[project.annotator], task.id, results[task.item_id][slot]))

    def submit(job) -> None:
        me, task_id, result = job
        me.client.annotations.create(id=task_id, result=result,
                                     request_options={"max_retries": 0})
    with ThreadPoolExecutor(max_workers=6) as pool:
        list(pool.map(submit, work))
    for me in people.values():
        me.close()
    regions = sum(1 for _, _, result in work for r in result if r["from_name"] == "severity")
    return len(work), regions


def bench_spans(n_items: int = SPAN_ITEMS) -> None:
    """Print the push, pull, re-pull and report timings of a span batch against a real
    Label Studio."""
    if not os.environ.get("LABEL_STUDIO_URL") and importlib.util.find_spec("label_studio") is None:
        print("spans push / pull against Label Studio: skipped (label-studio is not installed)")
        return
    from audit.review import spans as span_stats
    from audit.review.kinds import spans as kind
    from audit.review.pull import pull
    from audit.review.push import push
    from audit.review.workspace import Workspace
    workspace = Path(tempfile.mkdtemp(prefix="bench-reviews-"))
    run = uuid.uuid4().hex[:6]
    annotators = [f"bench-{run}-{k}@example.org:{','.join(TARGETS)}" for k in (1, 2)]
    _rss_reset()
    wall = time.perf_counter()
    batch = span_batch(f"bench-spans-{run}", n_items, annotators, workspace)
    prefill = batch.tables[kind.PREFILL_FILE]
    lengths = np.array([len(t["translation_text"]) for t in batch.tasks])
    units = ", ".join(f"{u['counts']:,} {u['values']}s"
                      for u in pc.value_counts(batch.items["unit"]).to_pylist())
    print(f"(untimed setup: span batch of {len(batch.tasks):,} units of the real-text "
          f"release {SPAN_SOURCES}x24 ({units}; shown text {lengths.mean():.0f} characters on average, median "
          f"{np.median(lengths):.0f}, max {lengths.max():,}), {prefill.num_rows:,} regions "
          f"pre-filled from the checks on {len(batch.predictions or {}):,} units, built in "
          f"{time.perf_counter() - wall:.0f} s, peak RSS {_rss_peak()})")
    origins = pc.value_counts(prefill["origin"]).to_pylist()
    print("  pre-filled by check: " + ", ".join(
        f"{o['values']} {o['counts']}" for o in sorted(origins, key=lambda o: -o['counts'])))
    server, local = _server()
    report = None
    try:
        _rss_reset()
        wall = time.perf_counter()
        report = push(server, batch, annotators, workspace=workspace)
        seconds = time.perf_counter() - wall
        print(f"push {len(batch.tasks):,} span items to two annotators ({len(report.projects)} "
              f"projects, {report.sent:,} tasks with {2 * prefill.num_rows:,} pre-filled "
              f"regions as predictions, {len(report.credentials)} accounts signed up): "
              f"{seconds:.1f} s, peak RSS {_rss_peak()}")
        wall = time.perf_counter()
        made, regions = _annotate_spans(server, report, batch)
        print(f"(untimed setup: {made:,} annotations with {regions:,} regions and a score "
              f"each made through the annotators' own logins, 6 in parallel, in "
              f"{time.perf_counter() - wall:.0f} s)")
        _rss_reset()
        wall = time.perf_counter()
        pulled = pull(server, batch.batch_id, workspace=workspace)
        seconds = time.perf_counter() - wall
        n = sum(p.accepted for p in pulled.projects)
        print(f"pull {n:,} span annotations of {len(batch.tasks):,} items ({regions:,} "
              f"regions; {pulled.rows_added:,} rows added, {len(pulled.rejected)} refused; "
              f"export + parse + append): {seconds:.1f} s, peak RSS {_rss_peak()}")
        wall = time.perf_counter()
        for project in report.projects:
            server.export_annotations(project.project_id)
        print(f"  of which the export alone ({len(report.projects)} projects, measured "
              f"after): {time.perf_counter() - wall:.1f} s")
        _rss_reset()
        wall = time.perf_counter()
        again = pull(server, batch.batch_id, workspace=workspace)
        print(f"second pull of the same {n:,} annotations: {time.perf_counter() - wall:.1f} s, "
              f"{again.rows_added} rows added (must be 0), {again.rows_total:,} rows in all, "
              f"peak RSS {_rss_peak()}")
        files = Workspace(batch.batch_id, workspace)
        table = files.annotations()
        _rss_reset()
        wall, cpu = time.perf_counter(), time.process_time()
        reports_ = kind.tables(table, files)
        seconds, cpu = time.perf_counter() - wall, time.process_time() - cpu
        marked, scored = kind.annotated(table, files)
        print(f"kinds.spans.tables() over {scored.num_rows:,} annotations of "
              f"{len(batch.tasks):,} items ({marked.num_rows:,} spans, {prefill.num_rows:,} "
              f"pre-filled; 2,000 bootstrap replicates; {len(reports_)} tables): "
              f"{seconds:.1f} s ({cpu:.1f} s CPU), peak RSS {_rss_peak()}")
        parts = {
            "annotated (pulled rows to span and score tables)": lambda: kind.annotated(table, files),
            "char_kappa": lambda: span_stats.char_kappa(marked, scored, 2000),
            "span_f1": lambda: span_stats.span_f1(marked, scored, 2000),
            "score_agreement": lambda: span_stats.score_agreement(marked, scored, 2000),
            "language_scores": lambda: span_stats.language_scores(marked, scored, 2000),
            "unit_scores": lambda: span_stats.unit_scores(marked, scored),
            "checks_vs_people": lambda: span_stats.checks_vs_people(
                prefill.select(span_stats.PREFILL_SCHEMA.names), marked, scored),
            "prefill_fates": lambda: span_stats.prefill_fates(
                prefill.select(span_stats.PREFILL_SCHEMA.names), marked, scored),
            "final_spans": lambda: span_stats.final_spans(marked, scored),
            "span_queue": lambda: span_stats.span_queue(marked, scored),
        }
        timed = []
        for name, call in parts.items():
            wall = time.perf_counter()
            call()
            timed.append(f"{name} {time.perf_counter() - wall:.2f} s")
        print("  its parts, each timed alone: " + "; ".join(timed))
        pooled = next(r for r in reports_["span_kappa"].to_pylist() if r["by"] == "all")
        fates = ", ".join(f"{f['values']} {f['counts']:,}" for f in pc.value_counts(
            reports_["prefill_fates"]["fate"]).to_pylist())
        f1 = [r for r in reports_["span_f1"].to_pylist() if r["by"] == "all"]
        print(f"  (sanity: pooled character kappa {pooled['kappa']:.3f} "
              f"[{pooled['ci_low']:.3f}, {pooled['ci_high']:.3f}] over {pooled['n_items']:,} "
              f"items, {pooled['n_characters']:,} characters; span F1 "
              + ", ".join(f"{r.get('statistic')} {r.get('estimate'):.3f}" for r in f1)
              + f"; queue {reports_['span_queue'].num_rows:,} items; pre-filled fates {fates})")
    finally:
        if local is None:
            for project in (report.projects if report else []):
                server.delete_project(project.project_id)
        else:
            local.stop()
            shutil.rmtree(local.data_dir, ignore_errors=True)
        shutil.rmtree(workspace, ignore_errors=True)


def main() -> None:
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spans", action="store_true",
                        help="bench the error-span kind's push, pull and reports instead")
    parser.add_argument("--items", type=int, default=None,
                        help=f"span units (default {SPAN_ITEMS:,})")
    args = parser.parse_args()
    if args.spans:
        bench_spans(args.items or SPAN_ITEMS)
        return
    table = synthesise()
    initial = table.filter(pc.equal(table["role"], "initial"))
    annotations = len(set(zip(initial["item_id"].to_pylist(), initial["annotator"].to_pylist())))
    wall, cpu = run(table)
    print(f"agreement and reports over {annotations:,} annotations: {wall:.2f} s "
          f"({cpu:.2f} s CPU; target < 5 s)")
    bench_push_pull()


if __name__ == "__main__":
    main()
