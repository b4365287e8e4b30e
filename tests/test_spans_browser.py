"""Error spans as their people make them (issue 46), in a real browser against a real Label
Studio: two annotators log in with what the push gave them and mark spans on a Chinese unit
pre-filled from the checks (one keeps the pre-filled title region, the other deletes it;
both add the same minor span; one marks an omission on [missing]) and score both units; an
adjudicator, shown both sets unnamed, keeps one clean set. The pulled spans, the character
κ, span F1, ESA and MQM scores and the checks measured against people equal the hand
computations below.

Screenshots: artifacts/screenshots/spans-*.png.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from test_review_browser import RUN, browser, log_in, open_queue, server  # noqa: F401

from audit.engine import scan
from audit.review import sampling
from audit.review.kinds import spans as kind
from audit.review.pull import pull
from audit.review.push import push, push_adjudication
from audit.review.workspace import Workspace

pytestmark = [pytest.mark.browser, pytest.mark.labelstudio]

SHOTS = Path(__file__).resolve().parent.parent / "artifacts" / "screenshots"
ANA, BO, CY = (f"ana-s-{RUN}@example.org", f"bo-s-{RUN}@example.org", f"cy-s-{RUN}@example.org")
# Two Chinese paragraph units of the demo: Mount Kenya, left in Japanese (four
# script_mismatch findings: its title and three sentences), and the Rhine, clean.
KENYA, RHINE = "26db238c4e66d0c21da1dc16:paragraph:p05", "fd60ba5b3d40a6c2a8e44dba:paragraph:p01"

# Select characters [start, end) of the translation: the page holds its lines without the
# newline characters, so the caller passes offsets with those taken out.
SELECT = """([start, end]) => {
  const box = document.querySelector('.xr-target .lsf-htx-richtext');
  const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
  let pos = 0, node, set = 0;
  const range = document.createRange();
  while ((node = walker.nextNode())) {
    const n = node.textContent.length;
    if (!(set & 1) && start <= pos + n) { range.setStart(node, start - pos); set |= 1; }
    if (!(set & 2) && end <= pos + n) { range.setEnd(node, end - pos); set |= 2; break; }
    pos += n;
  }
  const selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
  box.dispatchEvent(new MouseEvent('mouseup', {bubbles: true}));
  return selection.toString();
}"""


def regions(tab):
    return tab.locator(".lsf-outliner-item")


def mark(tab, severity: str, text: str, start: int, end: int) -> None:
    """Choose a severity, select text[start:end], wait for the new region, and click
    elsewhere so the next label applies to the next selection."""
    before = regions(tab).count()
    label = tab.locator(".lsf-label", has_text=severity).first
    label.click()
    tab.wait_for_function("(el) => el.classList.contains('lsf-label_selected')",
                          arg=label.element_handle())
    tab.evaluate(SELECT, [start - text[:start].count("\n"), end - text[:end].count("\n")])
    new = regions(tab).nth(before)
    new.wait_for()
    if new.locator(".lsf-labels-list").first.inner_text().strip() != severity:
        new.click()               # selected, the region takes the label clicked next
        label.click()
        tab.wait_for_function(
            "([el, want]) => el.querySelector('.lsf-labels-list').innerText.trim() === want",
            arg=[new.element_handle(), severity])
    tab.get_by_text("Source (English)").click()


def delete_region(tab, index: int) -> None:
    """Delete the region the outliner numbers `index` (1-based)."""
    before = regions(tab).count()
    regions(tab).nth(index - 1).click()
    tab.keyboard.press("Backspace")
    tab.wait_for_function(f"() => document.querySelectorAll('.lsf-outliner-item').length"
                          f" === {before - 1}")


def score_and_submit(tab, score: int, shot: str) -> None:
    tab.locator("input[type=number]").fill(str(score))
    SHOTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(SHOTS / f"spans-{shot}.png"), full_page=True)
    with tab.expect_response(lambda r: r.request.method == "POST" and
                             "/annotations" in r.url, timeout=60_000) as answer:
        tab.get_by_role("button", name="Submit current annotation").click()
    assert answer.value.status == 201, answer.value.text()


def shown_item(tab) -> str:
    """The item id the open task shows (its unit line), once the task has loaded."""
    line = tab.locator(".lsf-richtext__line", has_text=":paragraph:").first
    line.wait_for()
    return line.inner_text().strip()


@pytest.fixture(scope="module")
def flow(server, browser, tmp_path_factory):
    work = tmp_path_factory.mktemp("span-reviews")
    result = scan.scan_release()
    sample = sampling.sample(sampling.build_units(result), by=["unit"], seed=1,
                             per_stratum={"paragraph": 2}, where={"item_id": [KENYA, RHINE]},
                             created_at="2026-12-07T00:00:00+00:00")
    batch = kind.span_batch(result, sample, f"spans-{RUN}", kind.DEFAULTS)
    report = push(server, batch, [f"{ANA}:zh", f"{BO}:zh"], workspace=work)
    logins = {note.email: note.password for note in report.credentials}
    projects = {p.annotator: p.project_id for p in report.projects}
    files = Workspace(batch.batch_id, work)
    kenya = files.tasks()[KENYA]["translation_text"]
    figures = kenya.index("5,199")
    for email, scores in ((ANA, {KENYA: 30, RHINE: 80}), (BO, {KENYA: 40, RHINE: 90})):
        tab = log_in(browser, server.url, email, logins[email])
        open_queue(tab, server.url, projects[email])
        for _ in range(2):
            item = shown_item(tab)
            if item == KENYA:
                regions(tab).nth(3).wait_for()          # the four pre-filled regions
                if email == BO:                          # the title is a name: not an error
                    delete_region(tab, 4)
                mark(tab, "minor", kenya, figures, figures + 5)
                if email == ANA:                         # something left out
                    mark(tab, "major", kenya, len(kenya) - len(kind.MISSING), len(kenya))
            score_and_submit(tab, scores[item], f"{email[:3].rstrip('-')}-{item[:6]}")
            if _ == 0:
                tab.locator(".lsf-richtext__line", has_text=":paragraph:").filter(
                    has_not_text=item).first.wait_for()
        tab.context.close()
    first = pull(server, batch.batch_id, workspace=work)
    again = pull(server, batch.batch_id, workspace=work)
    adjudication = push_adjudication(server, batch.batch_id, [f"{CY}:zh"], workspace=work)
    tab = log_in(browser, server.url, CY,
                 {n.email: n.password for n in adjudication.credentials}[CY])
    open_queue(tab, server.url, adjudication.projects[0].project_id)
    regions(tab).nth(9).wait_for()     # both sets: annotator 1's six, annotator 2's four
    SHOTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(SHOTS / "spans-adjudication.png"), full_page=True)
    for index in (10, 9, 8, 7, 1):     # annotator 2's duplicates, then the title
        delete_region(tab, index)
    score_and_submit(tab, 35, "adjudicated")
    tab.context.close()
    pull(server, batch.batch_id, workspace=work)
    return {"files": files, "first": first, "again": again, "adjudication": adjudication,
            "kenya": kenya, "figures": figures,
            "tables": kind.tables(files.annotations(), files, n_boot=200)}


def _spans(flow, annotator: str, role: str = "initial") -> list[tuple]:
    marked, _ = kind.annotated(flow["files"].annotations(), flow["files"])
    return sorted((r["item_id"], r["start"], r["end"], r["severity"], r["origin"])
                  for r in marked.to_pylist()
                  if r["annotator"] == annotator and r["role"] == role)


def test_the_pull_keeps_each_persons_spans_with_the_check_they_kept(flow):
    k, f, n = flow["kenya"], flow["figures"], len(flow["kenya"])
    check = "script_mismatch"
    assert flow["first"].rejected == [] and flow["again"].rows_added == 0
    assert _spans(flow, ANA) == [(KENYA, 0, 4, "major", check), (KENYA, 9, 29, "major", check),
                                 (KENYA, 34, 60, "major", check), (KENYA, f, f + 5, "minor", None),
                                 (KENYA, 65, 81, "major", check),
                                 (KENYA, n - 9, n, "major", None)]
    assert _spans(flow, BO) == [(KENYA, 9, 29, "major", check), (KENYA, 34, 60, "major", check),
                                (KENYA, f, f + 5, "minor", None),
                                (KENYA, 65, 81, "major", check)]
    assert k[f:f + 5] == "5,199" and k[n - 9:] == "[missing]" and k[0:4] == "ケニア山"
    fates = sorted((r["annotator"], r["start"], r["fate"])
                   for r in flow["tables"]["prefill_fates"].to_pylist())
    assert fates == [(ANA, 0, "kept"), (ANA, 9, "kept"), (ANA, 34, "kept"), (ANA, 65, "kept"),
                     (BO, 0, "deleted"), (BO, 9, "kept"), (BO, 34, "kept"), (BO, 65, "kept")]
    # what people found that no check proposed: the omission ("5,199" lies inside a
    # pre-filled sentence)
    assert [(r["annotator"], r["start"], r["end"], r["severity"])
            for r in flow["tables"]["added_spans"].to_pylist()] == [(ANA, n - 9, n, "major")]


def test_character_kappa_and_span_f1_equal_the_hand_computation(flow):
    # 91 + 65 characters. Major for both: 20 + 26 + 16 = 62; major for annotator 1 only:
    # the title (4) and [missing] (9); none for both: 156 - 62 - 13 = 81 (the minor span
    # lies inside a major sentence: the most severe label wins).
    observed = (81 + 62) / 156
    expected = (81 * 94 + 75 * 62) / 156 ** 2
    kappa = (observed - expected) / (1 - expected)
    pooled = next(r for r in flow["tables"]["span_kappa"].to_pylist() if r["by"] == "all")
    assert pooled["n_items"] == 2 and pooled["n_characters"] == 156
    assert pooled["raw_agreement"] == pytest.approx(observed, abs=1e-12)
    assert pooled["kappa"] == pytest.approx(kappa, abs=1e-12)      # 0.8303…
    assert pooled["flagged"] is False
    # F1 = 2 × matched / claims: Kenya 4 exact matches of 6 + 4 spans, the Rhine's two
    # empty sets one matched claim each: 2 × 5 / 12.
    f1 = {r["statistic"]: r["estimate"] for r in flow["tables"]["span_f1"].to_pylist()
          if r["by"] == "all"}
    assert f1["f1_exact"] == pytest.approx(10 / 12) and f1["f1_overlap"] == pytest.approx(10 / 12)


def test_scores_mqm_and_esa_equal_the_hand_computation(flow):
    agreement = {(r["score"], r["statistic"]): r["estimate"]
                 for r in flow["tables"]["score_agreement"].to_pylist() if r["by"] == "all"}
    # ESA (30, 40) and (80, 90): perfectly ordered and linear
    assert agreement["esa", "pearson"] == pytest.approx(1.0)
    assert agreement["esa", "kendall_tau_b"] == pytest.approx(1.0)
    units = {r["item_id"]: r for r in flow["tables"]["unit_scores"].to_pylist()}
    # Mount Kenya: 26 English words; the adjudicated set is 4 majors and 1 minor.
    assert units[KENYA]["origin"] == "adjudicated" and units[KENYA]["esa_score"] == 35
    assert units[KENYA]["mqm_penalty"] == pytest.approx((4 * 5 + 1) / 26 * 100)
    assert units[RHINE]["esa_score"] == 85 and units[RHINE]["mqm_penalty"] == 0
    zh = {r["score"]: r["mean"] for r in flow["tables"]["language_scores"].to_pylist()
          if r["by"] == "language" and r["group"] == "zh"}
    assert zh["esa"] == pytest.approx(60) and zh["mqm"] == pytest.approx((21 / 26 * 100) / 2)


def test_the_adjudicator_saw_both_sets_and_their_set_is_final(flow):
    assert [p.sent for p in flow["adjudication"].projects] == [1]      # only Kenya disputed
    n, f = len(flow["kenya"]), flow["figures"]
    final = sorted((r["start"], r["end"], r["severity"]) for r in
                   flow["tables"]["final_spans"].to_pylist() if r["item_id"] == KENYA)
    assert final == sorted([(9, 29, "major"), (34, 60, "major"), (f, f + 5, "minor"),
                            (65, 81, "major"), (n - 9, n, "major")])
    states = {r["item_id"]: r["status"] for r in flow["tables"]["final_items"].to_pylist()}
    assert states == {KENYA: "adjudicated", RHINE: "agreed"}


def _wilson(successes: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def test_the_checks_measured_against_people_equal_the_hand_computation(flow):
    row = next(r for r in flow["tables"]["checks_vs_people"].to_pylist()
               if r["check"] == "script_mismatch" and r["language"] == "zh")
    # 4 pre-filled regions × 2 people: 7 kept (annotator 2 deleted the title); people's
    # major spans: annotator 1's five (one is the omission no check proposed) and
    # annotator 2's three: 7 of 8 overlap a pre-filled region.
    assert (row["n_prefilled"], row["n_judgments"], row["n_kept"]) == (4, 8, 7)
    assert (row["kept_low"], row["kept_high"]) == pytest.approx(_wilson(7, 8))
    assert (row["n_serious"], row["n_serious_proposed"]) == (8, 7)
    assert row["recall"] == pytest.approx(7 / 8)
    assert (row["recall_low"], row["recall_high"]) == pytest.approx(_wilson(7, 8))
