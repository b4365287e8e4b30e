"""Every path the workbench is given — `?release=`, `?old=`, the sources and the policy in
the URL, every path box of every page — goes through the one serving rule
(workbench/serving.py): outside the roots, `..`, symlinks out of a root, globs with `..`,
targets that exist and targets that do not all get the same one-line refusal."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from test_trust import hostile, one_row_release, refusal

# Each test runs pages in Streamlit's AppTest: seconds apiece.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 60
REALISM = "MAPLE realism pairs"

# (page, how the path arrives: a URL parameter or a box's key, what is refused, the
# page's own words before the refusal, a choice to make first)
BOXES = [
    ("app", "?release", "release", "Cannot open the release", None),
    ("app", "?source_train", "file", "Cannot open the HotpotQA train source", None),
    ("app", "?policy", "file", "Cannot open the policy file", None),
    ("app", "path_release", "release", "Cannot open the release", None),
    ("5_Compare", "?old", "release", "Cannot open the earlier release", None),
    ("5_Compare", "compare_old", "release", "Cannot open the earlier release", None),
    ("7_Review", "review_maple_path", "file", "Cannot build the batch", REALISM),
    ("9_Evaluate", "pred_a", "file", "Cannot evaluate", None),
    ("9_Evaluate", "pred_b", "file", "Cannot evaluate", None),
    ("10_Judge", "judge_a", "file", "Cannot read the judge file(s)", None),
    ("11_Retrieval", "ret_qrels", "file", "Cannot score the runs", None),
    ("11_Retrieval", "ret_queries", "file", "Cannot score the runs", None),
    ("11_Retrieval", "ret_run_a", "file", "Cannot score the runs", None),
]


@pytest.fixture
def world(tmp_path, settings_env):
    inside, outside = tmp_path / "data", tmp_path / "elsewhere"
    (inside / "rel").mkdir(parents=True)
    outside.mkdir()
    one_row_release(inside / "rel", "r-00000.parquet", blank=False)
    one_row_release(outside, "secret.parquet", blank=False)
    for name in ("secret.json", "secret.jsonl", "secret.toml", "secret.txt"):
        (outside / name).write_text("{}\n")
    settings_env(AUDIT_DATA_ROOTS=str(inside))
    return hostile(inside, outside)


def shown(page: str, way: str, path: str, choice: str | None, at: AppTest | None) -> tuple:
    """Run the page with `path` given `way`; its error boxes and the AppTest (one session
    per box: each path is one more run of it)."""
    if at is None:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
        if page != "app":
            at.switch_page(f"pages/{page}.py")
        at.run()
        if choice is not None:
            at.radio(key="review_kind").set_value(choice).run()
    if way.startswith("?"):
        at.query_params[way[1:]] = path
        at.run()
    else:
        at.text_input(key=way).input(path).run()
    assert not at.exception, (page, way, path, at.exception)
    return [e.value for e in at.error], at


@pytest.mark.parametrize(("page", "way", "what", "words", "choice"), BOXES,
                         ids=[f"{p}:{w}" for p, w, *_ in BOXES])
def test_every_path_box_refuses_alike(world, page, way, what, words, choice):
    at = None
    answers = {}
    for path in world:
        if not path:
            continue        # empty means "not given": the demo, no file
        errors, at = shown(page, way, path, choice, at)
        answers[path] = tuple(errors)
    expected = (f"{words}: ` {refusal(what)} `",)
    assert {answer for answer in answers.values()} == {expected}, \
        {path: answer for path, answer in answers.items() if answer != expected}
