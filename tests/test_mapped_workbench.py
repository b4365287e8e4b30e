"""A mapped release in the workbench and in compare: its pages render with its own facets
and its item across languages, the serving rule covers the files a mapping names, and two
versions compare unit by unit (column by column)."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from audit.reports import compare
from workbench import serving

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 120
MAPPING = """[release]
name = "{name}"
source_language = "en"
[input]
files = "xquad.{{lang}}.json"
records = "data[].paragraphs[].qas[]"
[columns]
id = "id"
context = "text"
question = "text"
answer = {{ role = "answer", field = "answers[0].text", in = "context" }}
"""


def small_xquad(realdata: Path, folder: Path, name: str, blank: int | None) -> Path:
    """The first article of XQuAD in English, German and Russian; German question `blank`
    blanked."""
    folder.mkdir(parents=True)
    for lang in ("en", "de", "ru"):
        doc = json.loads((realdata / "xquad" / f"xquad.{lang}.json").read_text("utf-8"))
        doc["data"] = doc["data"][:1]
        if lang == "de" and blank is not None:
            qas = [qa for p in doc["data"][0]["paragraphs"] for qa in p["qas"]]
            qas[blank]["question"] = ""
        (folder / f"xquad.{lang}.json").write_text(json.dumps(doc, ensure_ascii=False),
                                                    encoding="utf-8")
    mapping = folder / "xquad.toml"
    mapping.write_text(MAPPING.format(name=name), encoding="utf-8")
    return mapping


@pytest.fixture
def mapped(realdata: Path, tmp_path: Path, settings_env) -> Path:
    settings_env(AUDIT_DATA_ROOTS=str(tmp_path))
    return small_xquad(realdata, tmp_path / "v1", "xquad-one", blank=3)


def page(name: str, **params: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.query_params.update(params)
    if name != "app":
        at.switch_page(f"pages/{name}.py")
    return at.run()


def text_of(at: AppTest) -> str:
    return html.unescape("\n".join(m.value for m in [*at.markdown, *at.html]))


def test_browse_facets_a_mapped_release_by_language_unit_check_and_status(mapped: Path
                                                                           ) -> None:
    at = page("1_Browse", release=str(mapped), language="de", unit="question")
    assert not at.exception
    shown = text_of(at)
    # 74 questions in German and Russian; two German ones have a finding on the question.
    assert any(c.value.startswith("2 of 148 rows match") for c in at.caption)
    for label in ("Language", "Unit with a finding (column)", "Check holding the row",
                  "Info note only", "Status (derived)"):
        assert label in shown
    assert "Gold-paragraph languages" not in shown
    assert "blank_translation" in shown and ">de<" in shown


def test_instance_shows_the_item_in_every_language_with_its_findings(mapped: Path) -> None:
    browse = page("1_Browse", release=str(mapped), check="blank_translation")
    row = next(int(v) for v in re.findall(r"row=(\d+)", text_of(browse)))
    at = page("2_Instance", release=str(mapped), row=str(row))
    assert not at.exception
    shown = text_of(at)
    assert "2 languages beside the source (en)" in shown
    for column in ("context", "question", "answer"):
        assert f"<b>{column}</b>" in shown
    assert "blank_translation: blank where the source has" in shown


def test_the_overview_counts_status_per_language(mapped: Path) -> None:
    at = page("app", release=str(mapped))
    assert not at.exception
    assert [h.value for h in at.subheader][:3] == [
        "What puts rows into review or quarantine", "Status per language", "Findings by check"]
    table = at.dataframe[0].value
    assert list(table["language"]) == ["de", "ru"]        # German: the blanked question
    assert list(table["rows"]) == [74, 74] and list(table["quarantined"])[0] >= 1


def test_findings_and_export_open_it_and_vector_pages_say_why_not(mapped: Path) -> None:
    findings = page("3_Findings", release=str(mapped))
    assert not findings.exception
    assert "No HotpotQA source is attached" not in text_of(findings)
    assert not page("6_Export", release=str(mapped)).exception
    mixing = page("4_Mixing", release=str(mapped))
    assert not mixing.exception
    assert "works on multi-hop releases" in mixing.info[0].value
    # Review samples by language and column; Repair lists the columns to correct.
    review = page("7_Review", release=str(mapped))
    assert not review.exception
    assert [m.label for m in review.multiselect][:2] == ["Columns", "Strata"]
    repair = page("12_Repair", release=str(mapped))
    assert not repair.exception
    listed = next(c.value for c in repair.caption if "on the work list" in c.value)
    # The blanked German question is one of the units to correct, named by its column.
    assert re.search(r"per unit: ` (answer \d+, )?(context \d+, )?question [1-9]", listed), listed


def test_a_mapping_is_served_only_with_every_file_it_names_in_a_root(
        realdata: Path, tmp_path: Path, settings_env) -> None:
    inside, outside = tmp_path / "data", tmp_path / "elsewhere"
    small_xquad(realdata, outside, "x", blank=None)
    inside.mkdir()
    settings_env(AUDIT_DATA_ROOTS=str(inside))
    # A mapping inside the roots naming files outside them is not served.
    escape = inside / "escape.toml"
    escape.write_text(MAPPING.format(name="x").replace('"xquad.{lang}.json"',
                                                        f'"{outside}/xquad.{{lang}}.json"'))
    with pytest.raises(serving.NotServed):
        serving.served_files(str(escape))
    mapping = small_xquad(realdata, inside / "ok", "x", blank=None)
    files = serving.served_files(str(mapping))
    assert [f.name for f in files] == ["xquad.toml", "xquad.en.json", "xquad.de.json",
                                       "xquad.ru.json"]


def test_two_versions_of_a_mapped_release_compare_column_by_column(
        realdata: Path, tmp_path: Path) -> None:
    old = small_xquad(realdata, tmp_path / "old", "v1", blank=3)
    new = small_xquad(realdata, tmp_path / "new", "v2", blank=7)
    result = compare.compare(compare.load_version(old), compare.load_version(new), n_boot=200)
    assert result.findings["fixed"] == 1 and result.findings["introduced"] == 1
    assert result.changes["by_unit"]["question"]["text_changed"] == 2
    assert result.changes["by_unit"]["context"]["text_changed"] == 0
    languages = {r["group"] for r in result.structural.to_pylist() if r["by"] == "language"}
    assert languages == {"de", "ru"}
