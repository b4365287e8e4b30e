"""Post-editing as its people do it (issue 21), in a real browser (Debian chromium +
Playwright) against a real Label Studio, on the bundled demo release:

- `repair plan` lists the units; four of them become a post-edit batch (`review push`,
  kind = "post-edit"): an Urdu blank sentence, a Dutch sentence left in English, an Urdu
  paragraph one sentence short (one text area per English sentence, the last one empty)
  and a Chinese sentence whose finding is a false alarm;
- the editor logs in with exactly what the push wrote to the batch's credentials.txt,
  opens each of their three queues, edits the three pre-filled units and marks the fourth
  "fine as it is" (screenshots: artifacts/screenshots/postedit-*.png);
- `review status` counts the four done; `review pull` records exactly three corrections,
  with their old and new text, reason and author;
- `repair apply --from-batch` writes a corrected release whose rescan no longer shows
  those findings, and no new one on those rows;
- on the workbench, the Review page shows the batch done and points to Repair, where an
  operator applies the same batch (Corrections from: a post-edit batch) and reads its
  outcome (screenshots postedit-review-progress.png, postedit-repair-applied.png).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from app_server import ROOT, running_app
from repair_helpers import cli
from test_browser import settled
from test_review_browser import RUN, _cli, browser, log_in, open_queue, server, shot, submit  # noqa: F401

from audit.engine import scan
from audit.io import release as readers
from audit.repair import desk, plan
from audit.repair.record import Workspace
from audit.settings import DEMO_RELEASE, default_token, demo_sources

pytestmark = pytest.mark.browser

EDITOR = f"editor-{RUN}@example.org"
BLANK = ("sentence", "263279a99372fdb18a4de1c6")          # ur, p00 sentence 2 is a tab
COPY = ("sentence", "9212cbaa151348de1b0d646e")           # nl, p05 sentence 1 in English
SHORT = ("paragraph", "b25fe8be49b05d57a36452d2")         # ur, p01: 2 of 3 sentences
FINE = ("sentence", "ec544ae0ae39886e3f681262")           # zh, p05 sentence 0
URDU_109 = "عنصر 109، مائٹنیریم، کا نام ان کے نام پر رکھا گیا ہے۔"
DUTCH = "De film vertelt het verhaal van een dorp dat zwaardvechters inhuurt om zijn oogst " \
        "te verdedigen."
DANUBE = ["ڈینیوب یورپ کا دوسرا سب سے طویل دریا ہے۔",
          "یہ دس ممالک سے گزرتا ہے، جو کسی بھی دوسرے دریا سے زیادہ ہیں۔"]
DANUBE_3 = "یہ رومانیہ میں ایک وسیع ڈیلٹا کے ذریعے بحیرۂ اسود میں گرتا ہے۔"
HOBBIT = "《霍比特人》是J·R·R·托尔金创作的一部奇幻小说。"
SOURCES = [arg for spec in demo_sources() for arg in ("--source", spec)]


@pytest.fixture(scope="module")
def workbench(server, tmp_path_factory):  # noqa: F811
    """The app on a review workspace of its own and the session's Label Studio, keeping
    its repairs under a data root of its own: (url, review workspace, data root)."""
    reviews, root = (tmp_path_factory.mktemp(name) for name in ("reviews", "root"))
    with running_app(AUDIT_REVIEWS=str(reviews), LABEL_STUDIO_URL=server.url,
                     LABEL_STUDIO_API_KEY=default_token() or "",
                     AUDIT_DATA_ROOTS=os.pathsep.join([str(root), str(ROOT / "data")])) as url:
        yield url, reviews, root


def _batch(server, reviews: Path, tmp_path: Path) -> tuple[str, Path]:
    """The work list (`repair plan`), the four units' plan, and `review push` of it."""
    listed = tmp_path / "plan"
    done = cli("repair", "plan", DEMO_RELEASE, *SOURCES, "--out", listed)
    assert done.returncode == 0, done.stderr
    work = pq.read_table(listed / "plan.parquet")
    wanted = [BLANK, COPY, SHORT, FINE]
    rows = [r for r in work.to_pylist() if (r["unit"], r["id"]) in wanted]
    assert sorted((r["unit"], r["id"]) for r in rows) == sorted(wanted)
    chosen = tmp_path / "four.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=plan.SCHEMA), chosen)
    batch_id = f"pe-{RUN}"
    spec = tmp_path / "post-edit.json"
    spec.write_text(json.dumps({"kind": "post-edit", "batch": batch_id,
                                "release": str(DEMO_RELEASE), "sources": demo_sources(),
                                "plan": str(chosen), "annotators": [f"{EDITOR}:ur,nl,zh"]}))
    printed = _cli(server, reviews, "push", str(spec))
    assert f"batch {batch_id}: 4 units, 4 routed, 0 left out; 4 tasks sent; blinding not " \
           "applicable (one editor per item)" in printed
    return batch_id, reviews / batch_id


def _login(folder: Path) -> tuple[str, str, str]:
    """(login page, email, password): the one line the push wrote to credentials.txt."""
    (line,) = (folder / "credentials.txt").read_text(encoding="utf-8").splitlines()
    _, page, email, password = line.split("\t")
    return page, email, password


def _areas(tab) -> list[dict]:
    return tab.evaluate("""() => [...document.querySelectorAll('textarea')].map(
        t => ({value: t.value, direction: getComputedStyle(t).direction}))""")


def reason_of(tab, reason: str) -> None:
    tab.locator(f"label:has(input[name='{reason}'])").click()


def _edit(tab, item: str) -> None:
    """What the editor does with the unit on screen (named by its item id)."""
    if item.startswith("sentence:validation:263279a99372fdb18a4de1c6:"):
        assert _areas(tab) == [{"value": "", "direction": "rtl"}]    # blank: an empty area
        assert tab.locator(".missing").all_inner_texts() == ["(blank)"]
        shot(tab, "postedit-ur-blank-sentence")
        tab.locator("textarea").nth(0).fill(URDU_109)
        reason_of(tab, "untranslated")
    elif item.startswith("paragraph:validation:b25fe8be49b05d57a36452d2:"):
        assert _areas(tab) == [{"value": DANUBE[0], "direction": "rtl"},
                               {"value": DANUBE[1], "direction": "rtl"},
                               {"value": "", "direction": "rtl"}]
        english = tab.get_by_text("It empties into the Black Sea through a wide delta in "
                                  "Romania.")
        assert english.evaluate("e => getComputedStyle(e).direction") == "ltr"
        shot(tab, "postedit-ur-paragraph-short")
        tab.locator("textarea").nth(2).fill(DANUBE_3)
        reason_of(tab, "truncated")
    elif item.startswith("sentence:train:9212cbaa151348de1b0d646e:"):
        assert _areas(tab) == [{"value": " It tells the story of a village that hires "
                                         "swordsmen to defend its harvest.",
                                "direction": "ltr"}]
        shot(tab, "postedit-nl-english-copy")
        tab.locator("textarea").nth(0).fill(DUTCH)
        reason_of(tab, "untranslated")
    elif item.startswith("sentence:train:ec544ae0ae39886e3f681262:"):
        assert _areas(tab) == [{"value": HOBBIT, "direction": "ltr"}]
        # the finding's evidence, marked in the current translation
        assert tab.locator("mark.ev").all_inner_texts() == ["是J·R·R·托尔"]
        shot(tab, "postedit-zh-fine")
        reason_of(tab, "fine as it is")
    else:
        raise AssertionError(f"unexpected task {item}")


def _item_on_screen(tab, left: set[str]) -> str:
    """The item id of the task on screen, once one of those left is shown."""
    tab.wait_for_function("ids => ids.some(i => document.body.innerText.includes(i))",
                          arg=sorted(left), timeout=60_000)
    body = tab.inner_text("body")
    (item,) = [i for i in left if i in body]
    return item


def test_an_editor_post_edits_and_the_corrections_make_a_release_without_those_findings(
        server, browser, workbench, tmp_path):  # noqa: F811
    app, reviews, root = workbench
    batch_id, folder = _batch(server, reviews, tmp_path)
    tasks = [json.loads(line) for line in (folder / "tasks.jsonl").read_text(
        encoding="utf-8").splitlines()]
    items = {t["item_id"] for t in tasks}
    ledger = json.loads((folder / "ledger.json").read_text(encoding="utf-8"))
    projects = {e["group"]: e["project_id"] for e in ledger["projects"].values()}
    assert sorted(projects) == ["nl", "ur", "zh"]

    page, email, password = _login(folder)
    assert (page, email) == (f"{server.url}/user/login/", EDITOR)
    tab = log_in(browser, server.url, email, password)
    seen = []
    for group, count in (("ur", 2), ("nl", 1), ("zh", 1)):
        open_queue(tab, server.url, projects[group])
        for _ in range(count):       # the queue's next task replaces the one submitted
            item = _item_on_screen(tab, items - set(seen))
            _edit(tab, item)
            submit(tab)
            seen.append(item)
    tab.context.close()
    assert sorted(seen) == sorted(items)

    early = cli("repair", "apply", DEMO_RELEASE, "--from-batch", folder, "--out",
                tmp_path / "early")                     # before the pull: nothing to apply
    assert (early.returncode, early.stderr.strip()) == (
        2, f"error: {folder}: no correction recorded for this release (expected a post-edit "
           "batch pulled (`review pull`) after its editors submitted)")
    assert not (tmp_path / "early").exists()
    status = json.loads(_cli(server, reviews, "status", batch_id, "--json"))
    assert status["blinding"] == "not applicable (one editor per item)"
    assert [(g["group"], g["tasks"], g["done"]) for g in status["groups"]] == [
        ("nl", 1, 1), ("ur", 2, 2), ("zh", 1, 1)]
    printed = _cli(server, reviews, "pull", batch_id)
    assert "post-edit: 4 submission(s): 3 correction(s), 1 fine as it is, 0 unchanged; " \
           "3 new record row(s)" in printed
    proposed = [r for r in Workspace(folder).read().to_pylist() if r["action"] == "proposed"]
    made = sorted((r["row_id"], r["unit"], r["paragraph_id"], r["sentence_index"],
                   r["language"], r["old_text"], r["new_text"], r["reason"], r["author"],
                   r["origin"]["kind"], r["origin"]["batch"]) for r in proposed)
    compact = lambda sentences: json.dumps(sentences, ensure_ascii=False,  # noqa: E731
                                           separators=(",", ":"))
    assert made == [
        ("263279a99372fdb18a4de1c6", "sentence", "p00", 2, "ur", "\t", URDU_109,
         "untranslated", EDITOR, "post-edit", batch_id),
        ("9212cbaa151348de1b0d646e", "sentence", "p05", 1, "nl",
         " It tells the story of a village that hires swordsmen to defend its harvest.",
         DUTCH, "untranslated", EDITOR, "post-edit", batch_id),
        ("b25fe8be49b05d57a36452d2", "paragraph", "p01", None, "ur", compact(DANUBE),
         compact([*DANUBE, DANUBE_3]), "truncated", EDITOR, "post-edit", batch_id)]
    again = _cli(server, reviews, "pull", batch_id)          # pulling twice adds nothing
    assert "3 correction(s), 1 fine as it is, 0 unchanged; 0 new record row(s)" in again

    out = tmp_path / "corrected"
    done = cli("repair", "apply", DEMO_RELEASE, "--from-batch", folder, "--out", out)
    assert done.returncode == 0, done.stderr
    applied = json.loads(done.stdout)
    assert {k: applied["counts"][k] for k in ("corrections", "applied", "held", "refused",
                                              "rows_changed")} == {
        "corrections": 3, "applied": 3, "held": 0, "refused": 0, "rows_changed": 3}
    manifest = json.loads((out / "repair_manifest.json").read_text(encoding="utf-8"))
    assert manifest["fixed_per_check"] == {
        "blank_sentence": 1, "exact_source_copy": 1, "paragraph_sentence_shortfall": 1,
        "support_index_out_of_range": 1}
    assert [i["role"] for i in manifest["inputs"]][-1] == "corrections"   # the batch record

    rows = {BLANK[1], COPY[1], SHORT[1], FINE[1]}
    before, after = (_findings(path, rows) for path in (DEMO_RELEASE, out))
    gone = {(BLANK[1], "blank_sentence", "p00", 2),
            (COPY[1], "exact_source_copy", "p05", 1),
            (SHORT[1], "paragraph_sentence_shortfall", "p01", None),
            (SHORT[1], "support_index_out_of_range", "p01", 2),
            # the corrected row's flags are re-derived by the release's rule, so the stored
            # flags agree with the derived ones again
            (SHORT[1], "structural_flags_mismatch", None, None)}
    assert gone <= before and after == before - gone
    assert (FINE[1], "bridge_entity_lost", "p05", 0) in after     # fine as it is: kept

    _on_the_workbench(browser, app, root, batch_id, folder)


def _on_the_workbench(browser, app: str, root: Path, batch_id: str, folder: Path) -> None:
    """Review shows the batch done and points to Repair; Repair applies it."""
    tab = browser.new_page(viewport={"width": 1400, "height": 2000})
    tab.goto(f"{app}/Review")
    tab.get_by_role("heading", name="Review").first.wait_for(timeout=90_000)
    settled(tab, "4 of 4 tasks done", "A post-edit batch: one editor per language.")
    assert tab.get_by_text(f"python -m audit review pull {batch_id}").count() == 1
    shot(tab, "postedit-review-progress")
    tab.get_by_text("Repair: apply its corrections").click()
    tab.get_by_role("heading", name="Repair").first.wait_for(timeout=90_000)
    settled(tab, "on the work list")
    tab.get_by_text("a post-edit batch", exact=True).click()
    settled(tab, "Apply the batch's corrections")
    assert tab.get_by_role("combobox", name="Post-edit batch").input_value() == \
        f"{batch_id} (3 corrections pulled)"
    tab.get_by_role("button", name="Apply the batch's corrections").click()
    settled(tab, "Rows changed", "Applied 3, held 0, refused 0 of 3 corrections; 3 rows changed")
    assert tab.locator('[data-testid="stException"]').count() == 0
    shot(tab, "postedit-repair-applied")
    tab.close()
    area = desk.area(root / "repairs", readers.open_release(DEMO_RELEASE))
    (made,) = desk.applies(area)
    manifest = desk.manifest(made["out"])
    assert [i["path"] for i in manifest["inputs"] if i["role"] == "corrections"] == [
        str(p) for p in Workspace(folder).files()]
    outcomes = desk.outcomes(made["out"]).to_pylist()
    assert sorted((o["action"], o["row_id"], o["author"]) for o in outcomes) == [
        ("applied", row, EDITOR) for row in sorted((BLANK[1], COPY[1], SHORT[1]))]


def _findings(release: Path, rows: set[str]) -> set[tuple]:
    """(row id, check, paragraph, sentence) of the blocking and review findings on these
    rows when the release is scanned with the demo's sources."""
    result = scan.run(readers.open_release(release, demo_sources()))
    return {(f["id"], f["check"], f["paragraph_id"], f["sentence_index"])
            for f in result.findings.to_pylist()
            if f["id"] in rows and f["severity"] in ("blocking", "review")}
