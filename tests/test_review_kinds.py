"""The review kinds' registry (audit/review/kinds/) is the single source of what a kind is:
its config files exist and validate, every config and annotation kind elsewhere belongs to a
registered kind, the modules of the loop name kinds only through it, and an unknown kind is
one clear error (exit 2 on the CLI)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from audit.errors import InputError
from audit.review import agreement, configs, kinds, reports, spec
from audit.review.schemas import ANNOTATION_SCHEMA

ROOT = Path(__file__).resolve().parents[1]
# Modules that push, pull, report on and show batches: they name a kind only through the
# registry (kinds.KINDS[...] / kinds.get(...)), never as a bare string. (A kind's own module,
# kinds/<kind>.py, is where its names are declared.)
CONSULTERS = ["audit/review/push.py", "audit/review/pull.py", "audit/review/status.py",
              "audit/review/intrusions.py", "audit/review/workspace.py",
              "audit/review/batches.py", "audit/review/spec.py", "audit/review/inputs.py",
              "audit/review/configs.py", "audit/review/reports.py", "audit/review/charts.py",
              "audit/cli/review.py", "pages/7_Review.py", "pages/8_Annotations.py"]


def vocabulary() -> set[str]:
    """Every word of the three vocabularies: kind names, configs, annotation kinds."""
    return {word for kind in kinds.KINDS.values()
            for word in (kind.name, kind.config, kind.adjudication, kind.annotation) if word}


def test_the_registry_names_each_kind_in_the_three_vocabularies():
    table = {name: (k.config, k.adjudication, k.annotation, k.per_item)
             for name, k in kinds.KINDS.items()}
    assert table == {
        "translation": ("translation_review", "translation_adjudication", "translation", 2),
        "paired": ("translation_review", "translation_adjudication", "translation", 2),
        "realism": ("maple_realism", "maple_realism_adjudication", "realism", 2),
        "relevance": ("maple_relevance", "maple_relevance_adjudication", "relevance", 2),
        "post-edit": ("post_edit", None, "post-edit", 1),
        "spans": ("translation_esa", "translation_esa_adjudication", "spans", 2)}
    assert [k.label for k in kinds.ON_PAGE] == ["translation units", "error spans (ESA / MQM)",
                                                "MAPLE realism pairs", "MAPLE relevance pairs"]


@pytest.mark.parametrize("name", list(kinds.KINDS))
def test_every_kind_s_config_files_exist_and_validate(name):
    kind = kinds.get(name)
    for config in filter(None, (kind.config, kind.adjudication)):
        assert kinds.config(config).path.is_file()
        text = kinds.config(config).load()          # parses and validates, or raises
        assert configs.data_fields(text) == set(kinds.config(config).fields)
    assert kind.config_path == ROOT / "audit" / "review" / "label_configs" / f"{kind.config}.xml"


def test_every_config_and_annotation_kind_belongs_to_a_registered_kind():
    owned = {c.name for k in kinds.KINDS.values() for c in k.configs}
    assert owned == set(kinds.CONFIGS)
    assert {config: kinds.of_config(config).name for config in kinds.CONFIGS} == {
        "translation_review": "translation", "translation_adjudication": "translation",
        "maple_realism": "realism", "maple_realism_adjudication": "realism",
        "maple_relevance": "relevance", "maple_relevance_adjudication": "relevance",
        "post_edit": "post-edit", "translation_esa": "spans",
        "translation_esa_adjudication": "spans", "translation_mqm": "spans",
        "translation_mqm_adjudication": "spans"}
    # agreement's criteria cover exactly the kinds two annotators read with one label per
    # control (error spans parse and agree on spans of their own: audit/review/spans.py)
    assert set(agreement.CRITERIA) == {k.annotation for k in kinds.KINDS.values()
                                       if k.agreement and k.parse is None}


def _bare_kind_strings(path: Path, words: set[str]) -> list[tuple[int, str]]:
    """String constants equal to a kind word, except a registry lookup's argument."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    looked_up = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and ast.unparse(node.value) == "kinds.KINDS":
            looked_up.add(id(node.slice))
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "kinds.get":
            looked_up.update(id(a) for a in node.args)
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and node.value in words
            and id(node) not in looked_up]


@pytest.mark.parametrize("module", CONSULTERS)
def test_push_pull_status_and_the_pages_name_kinds_only_through_the_registry(module):
    assert _bare_kind_strings(ROOT / module, vocabulary()) == []
    tree = ast.parse((ROOT / module).read_text(encoding="utf-8"))
    for node in ast.walk(tree):     # every lookup names a registered kind
        if isinstance(node, ast.Subscript) and ast.unparse(node.value) == "kinds.KINDS":
            assert ast.literal_eval(node.slice) in kinds.KINDS


def test_reports_come_from_the_kinds_that_occur():
    row = {"item_id": "r1", "cluster_id": "p1", "kind": "relevance", "language": None,
           "unit": None, "setting": None, "annotator": "a@example.org", "role": "initial",
           "criterion": "relevance", "value": "relevant", "annotation_id": 1,
           "updated_at": None, "source_a": None, "source_b": None, "project_id": 7,
           "task_id": 1}
    table = pa.Table.from_pylist([row, row | {"annotator": "b@example.org", "annotation_id": 2}],
                                 schema=ANNOTATION_SCHEMA)
    assert list(reports.all_reports(table, n_boot=10)) == ["relevance"]
    assert [k.name for k in kinds.of_annotations({"translation", "realism"})] == [
        "translation", "realism"]


def test_an_unknown_kind_is_one_clear_error(tmp_path):
    with pytest.raises(InputError) as caught:
        kinds.get("sentiment")
    assert str(caught.value) == ("kind: 'sentiment' (expected one of translation, paired, "
                                 "realism, relevance, post-edit, spans)")
    with pytest.raises(InputError, match="config"):
        kinds.of_config("sentiment_review")
    bad = tmp_path / "batch.json"
    bad.write_text(json.dumps({"kind": "sentiment", "annotators": ["ana@example.org:ar"]}),
                   encoding="utf-8")
    with pytest.raises(InputError) as caught:
        spec.load(bad)
    assert "'sentiment'" in str(caught.value)
    assert "translation, paired, realism, relevance, post-edit, spans" in str(caught.value)
    done = subprocess.run([sys.executable, "-m", "audit", "review", "--workspace",
                           str(tmp_path / "reviews"), "push", str(bad)], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: {bad}: kind: 'sentiment' (expected one of translation, paired, realism, "
        "relevance, post-edit, spans)"]
