"""Stratified sampling of review units (audit/review/sampling.py) on the demo release:
the unit table, exact stratum counts, seeded determinism, proportional sums, the paper
preset's shortfall report, and the preservation stratum with its "unverifiable" preset."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace

import duckdb
import pyarrow as pa
import pytest

from audit.checks.preservation import PRESERVATION_NAMES
from audit.engine import scan
from audit.language import descriptors
from audit.review import sampling
from audit.review.kinds import translation
from audit.review.sampling import PAPER_PRESET, build_units, sample, sample_design

CREATED = "2026-08-10T00:00:00+00:00"


@pytest.fixture(scope="module")
def scanned():
    return scan.scan_release()


@pytest.fixture(scope="module")
def described(scanned):
    return descriptors.descriptors(scanned.release)


@pytest.fixture(scope="module")
def units(scanned, described):
    return build_units(scanned, described)


def strata(batch) -> dict[tuple, tuple[int, int, int, int]]:
    """{stratum values: (available, target, chosen, shortfall)} from a manifest."""
    return {tuple(c["stratum"].values()): (c["available"], c["target"], c["chosen"],
                                           c["shortfall"]) for c in batch.manifest["counts"]}


def chosen_counts(batch, *dims) -> Counter:
    rows = batch.units.select(list(dims)).to_pylist()
    return Counter(tuple(row[d] for d in dims) for row in rows)


# ------------------------------------------------------------------------- unit table

def test_unit_table_has_one_row_per_unit(units):
    assert units.num_rows == 3 * 240 + 1614
    assert Counter(units.column("unit").to_pylist()) == {
        "instance": 240, "question": 240, "answer": 240, "paragraph": 1614}
    ids = units.column("item_id").to_pylist()
    assert len(set(ids)) == len(ids)
    assert {"language", "unit", "question_type", "answer_type", "support_role",
            "script_relation", "stratum", "status", "check"} <= set(units.column_names)


def test_repeated_release_ids_get_the_row_number(units):
    ids = set(units.column("item_id").to_pylist())
    assert {"446811e7110a050da564ee66@0:instance:-",
            "446811e7110a050da564ee66@143:instance:-",
            "446811e7110a050da564ee66@0:paragraph:p03"} <= ids
    assert "446811e7110a050da564ee66:instance:-" not in ids


def test_support_roles_follow_the_descriptors(units, described):
    con = duckdb.connect()
    con.register("u", units)
    con.register("d", described)
    assert dict(con.sql("SELECT support_role, count(*) FROM u WHERE unit = 'paragraph' "
                        "GROUP BY 1").fetchall()) == {
        "distractor": 1146, "gold": 228, "gold-bridge": 120, "gold-answer-hop": 120}
    wrong = con.sql("""SELECT count(*) FROM u JOIN d USING (rid) WHERE u.unit = 'paragraph'
        AND ((u.support_role = 'gold-bridge') <> (u.paragraph_id = d.bridge_paragraph_id
                                                   AND d.bridge_paragraph_id IS NOT NULL)
          OR (u.support_role = 'distractor')
             <> NOT list_contains(d.gold_paragraph_ids, u.paragraph_id))""").fetchall()
    assert wrong == [(0,)]
    assert con.sql("SELECT count(*) FROM u WHERE unit <> 'paragraph' "
                   "AND support_role IS NOT NULL").fetchall() == [(0,)]


def test_unit_languages(units):
    con = duckdb.connect()
    con.register("u", units)
    # An answer unit carries the answer language, a paragraph its candidate's language.
    assert con.sql("SELECT count(*) FROM u WHERE unit = 'paragraph' "
                   "AND language = 'de'").fetchall() == [(60,)]
    assert con.sql("SELECT count(*) FROM u WHERE unit = 'answer' "
                   "AND language = 'de'").fetchall() == [(9,)]
    assert con.sql("SELECT DISTINCT script FROM u WHERE language = 'fa'").fetchall() == \
        [("Arabic",)]


def test_checks_are_the_status_flags(units, scanned):
    con = duckdb.connect()
    con.register("u", units)
    rows = con.sql("SELECT status, count(*) FROM u WHERE unit = 'instance' "
                   "GROUP BY 1").fetchall()
    assert dict(rows) == {"accepted": 161, "review_required": 40, "quarantined": 39}
    assert con.sql("SELECT count(*) FROM u WHERE unit = 'instance' AND \"check\" = 'none' "
                   "AND status <> 'accepted'").fetchall() == [(0,)]
    assert con.sql("SELECT \"check\" FROM u WHERE item_id = "
                   "'446811e7110a050da564ee66@0:instance:-'").fetchall() == [("duplicate_id",)]


@pytest.mark.parametrize("text, expected", [
    ("yes", "yes-no"), (" No ", "yes-no"), ("1661", "date"), ("1990s", "date"),
    ("5 May 1821", "date"), ("May 5, 1821", "date"), ("March 2011", "date"),
    ("1939–1945", "date"), ("44 BC", "date"), ("19th century", "date"),
    ("1821-05-05", "date"), ("3,677", "number"), ("7 million people", "number"),
    ("86 square kilometres", "number"), ("12", "number"), ("$4.5 billion", "number"),
    ("Marie Curie", "entity"), ("May", "entity"), ("three", "entity"),
    ("3rd Rock from the Sun", "entity"), ("", None), (None, None),
])
def test_answer_type_rule(text, expected):
    assert sampling.answer_type(text) == expected


def test_answer_types_on_the_demo(units):
    instances = [r for r in units.to_pylist() if r["unit"] == "instance"]
    assert Counter(r["answer_type"] for r in instances) == {
        "entity": 157, "date": 46, "yes-no": 37}


# ------------------------------------------------------------------------- sampling

def test_equal_allocation_per_stratum_exact_counts(units):
    batch = sample(units, ["answer_type"], seed=11, per_stratum=40,
                   where={"unit": "instance"}, created_at=CREATED)
    assert strata(batch) == {("date",): (46, 40, 40, 0), ("entity",): (157, 40, 40, 0),
                             ("yes-no",): (37, 40, 37, 3)}
    assert chosen_counts(batch, "answer_type") == {
        ("date",): 40, ("entity",): 40, ("yes-no",): 37}
    assert batch.manifest["totals"] == {"available": 240, "target": 120, "chosen": 117,
                                        "shortfall": 3}


def test_equal_allocation_two_dimensions(units):
    batch = sample(units, ["language", "unit"], seed=3, per_stratum=1,
                   where={"language": ["de", "ja"], "unit": ["question", "paragraph"]})
    assert strata(batch) == {("de", "paragraph"): (60, 1, 1, 0), ("de", "question"): (9, 1, 1, 0),
                             ("ja", "paragraph"): (51, 1, 1, 0),
                             ("ja", "question"): (14, 1, 1, 0)}
    assert chosen_counts(batch, "language", "unit") == {
        ("de", "paragraph"): 1, ("de", "question"): 1, ("ja", "paragraph"): 1,
        ("ja", "question"): 1}


def test_equal_size_spreads_the_remainder_by_seed(units):
    batch = sample(units, ["status"], seed=11, size=10, where={"unit": "paragraph"})
    assert strata(batch) == {("accepted",): (1083, 4, 4, 0), ("quarantined",): (263, 3, 3, 0),
                             ("review_required",): (268, 3, 3, 0)}
    other = sample(units, ["status"], seed=12, size=10, where={"unit": "paragraph"})
    assert [c["target"] for c in other.manifest["counts"]] == [3, 3, 4]
    assert batch.units.num_rows == other.units.num_rows == 10


def test_same_seed_same_batch_other_seed_other_batch(units):
    def draw(seed, created_at):
        return sample(units, ["unit", "status"], seed=seed, per_stratum=4,
                      release_fingerprint="fp", created_at=created_at)
    first, again, other = draw(5, CREATED), draw(5, "2030-01-01T00:00:00+00:00"), draw(6, CREATED)
    assert first.item_ids == again.item_ids
    assert first.batch_id == again.batch_id  # created_at is not content
    assert first.units.equals(again.units)
    assert set(first.item_ids) != set(other.item_ids)
    assert first.batch_id != other.batch_id


def test_draw_order_is_the_seeded_hash(units):
    """A stratum's chosen units are its k smallest sha256(seed:item_id), whatever else the
    table holds: the order is reproducible outside DuckDB."""
    questions = [r["item_id"] for r in units.to_pylist() if r["unit"] == "question"]
    batch = sample(units, [], seed=20260810, size=7, where={"unit": "question"})
    expected = sorted(questions, key=lambda i: sampling.order_key(20260810, i))[:7]
    assert batch.item_ids == expected
    # Dropping other units (here every other question not chosen) changes nothing.
    keep = [r["unit"] != "question" or r["item_id"] in expected or n % 2 == 0
            for n, r in enumerate(units.to_pylist())]
    smaller = units.filter(pa.array(keep))
    assert smaller.num_rows < units.num_rows
    again = sample(smaller, [], seed=20260810, size=7, where={"unit": "question"})
    assert again.item_ids == expected


def test_proportional_allocation_sums_to_size(units):
    batch = sample(units, ["status", "support_role"], seed=11, size=100,
                   allocation="proportional", where={"unit": "paragraph"})
    counts = strata(batch)
    assert sum(t for _, t, _, _ in counts.values()) == 100
    assert batch.units.num_rows == 100
    for available, target, chosen, shortfall in counts.values():
        share = 100 * available / 1614
        assert int(share) <= target <= int(share) + 1
        assert chosen == target and shortfall == 0
    assert counts[("accepted", "distractor")] == (761, 47, 47, 0)
    assert counts[("quarantined", "gold-bridge")] == (15, 1, 1, 0)
    assert chosen_counts(batch, "status", "support_role")[("review_required", "distractor")] == 12


def test_proportional_beyond_the_pool_takes_everything(units):
    batch = sample(units, ["status"], seed=1, size=5000, allocation="proportional",
                   where={"unit": "paragraph"})
    assert batch.manifest["totals"] == {"available": 1614, "target": 5000, "chosen": 1614,
                                        "shortfall": 3386}


@pytest.mark.parametrize("where", ["list_contains(checks, 'blank_sentence')",
                                   "TRUE) OR (1=1", ("language", "de")])
def test_a_filter_is_a_mapping_never_sql_text(units, where):
    with pytest.raises(ValueError, match="where must be a mapping"):
        sample(units, ["unit"], seed=2, per_stratum=5, where=where)
    with pytest.raises(ValueError, match="non-scalar unit column 'checks'"):
        sample(units, ["unit"], seed=2, per_stratum=5, where={"checks": "blank_sentence"})


@pytest.mark.parametrize("kwargs, message", [
    ({"by": ["unit"], "per_stratum": 2, "allocation": "proportional"}, "needs size=N"),
    ({"by": ["unit"], "per_stratum": 2, "size": 3}, "exactly one of"),
    ({"by": ["colour"], "size": 3}, "unknown or non-scalar unit column 'colour'"),
    ({"by": ["checks"], "size": 3}, "non-scalar unit column 'checks'"),
    ({"by": ["language"], "per_stratum": {"paragraph": 2}}, "needs 'unit'"),
    ({"by": ["unit"], "per_stratum": {"sentence": 2}}, "unknown unit(s) ['sentence']"),
    ({"by": ["unit"], "size": 3, "allocation": "optimal"}, "allocation 'optimal'"),
])
def test_bad_arguments(units, kwargs, message):
    by = kwargs.pop("by")
    with pytest.raises(ValueError) as error:
        sample(units, by, seed=1, **kwargs)
    assert message in str(error.value)


# ------------------------------------------------------------------------- paper preset

def test_paper_preset_design():
    assert PAPER_PRESET.seed == 20260810
    assert len(sampling.NON_ENGLISH) == 23 and "en" not in sampling.NON_ENGLISH
    assert sum(PAPER_PRESET.per_stratum.values()) * len(sampling.NON_ENGLISH) == 2760


def test_paper_preset_takes_all_available_and_reports_the_shortfall(units):
    batch = sample_design(units, release_fingerprint="demo-fp", created_at=CREATED)
    manifest, counts = batch.manifest, strata(batch)
    assert manifest["design"] == "paper" and manifest["seed"] == 20260810
    assert len(counts) == 23 * 3
    assert manifest["totals"] == {"available": 2007, "target": 2760, "chosen": 2004,
                                  "shortfall": 756}
    assert counts[("de", "paragraph")] == (60, 80, 60, 20)
    assert counts[("de", "question")] == (9, 20, 9, 11)
    assert counts[("de", "answer")] == (9, 20, 9, 11)
    assert counts[("vi", "paragraph")] == (82, 80, 80, 0)
    assert counts[("hi", "paragraph")] == (80, 80, 80, 0)
    chosen = set(batch.item_ids)
    german_questions = {r["item_id"] for r in units.to_pylist()
                        if r["unit"] == "question" and r["language"] == "de"}
    assert german_questions <= chosen  # short strata give everything they have
    languages = set(batch.units.column("language").to_pylist())
    assert "en" not in languages and "und" not in languages
    assert set(batch.units.column("unit").to_pylist()) == {"paragraph", "question", "answer"}


def test_paper_preset_reports_a_missing_language(units):
    batch = sample_design(units, where={"language": [code for code in sampling.NON_ENGLISH
                                                     if code != "sw"]})
    counts = strata(batch)
    assert counts[("sw", "paragraph")] == (0, 80, 0, 80)
    assert counts[("sw", "question")] == (0, 20, 0, 20)
    assert batch.manifest["totals"]["shortfall"] == 856


# ------------------------------------------------------------------------- manifest

def test_manifest_format(units, tmp_path):
    batch = sample(units, ["unit"], seed=3, per_stratum=2, release_fingerprint="abc123",
                   created_at=CREATED)
    manifest = batch.manifest
    assert set(manifest) == {"batch_id", "design", "seed", "strata", "allocation", "size",
                             "per_stratum", "levels", "where", "release_fingerprint",
                             "counts", "totals", "item_ids", "created_at"}
    assert len(manifest["batch_id"]) == 16 and int(manifest["batch_id"], 16) >= 0
    assert manifest["strata"] == ["unit"] and manifest["allocation"] == "equal"
    assert manifest["release_fingerprint"] == "abc123" and manifest["created_at"] == CREATED
    assert manifest["counts"][0] == {"stratum": {"unit": "answer"}, "available": 240,
                                     "target": 2, "chosen": 2, "shortfall": 0}
    assert len(manifest["item_ids"]) == 8
    assert all(i.count(":") == 2 for i in manifest["item_ids"])
    path = sampling.write_manifest(tmp_path / "batches" / "manifest.json", manifest)
    assert json.loads(path.read_text(encoding="utf-8")) == manifest


def test_unit_texts_feed_the_translation_payload(scanned, units):
    batch = sample(units, ["unit"], seed=4, per_stratum=1)
    texts = sampling.unit_texts(scanned.release, batch.units)
    assert [t["item_id"] for t in texts] == batch.item_ids
    by_unit = {t["unit"]: t for t in texts}
    paragraph = by_unit["paragraph"]
    assert paragraph["source_text"].startswith(paragraph["source_title"] + "\n[0] ")
    assert paragraph["translation_text"].startswith(paragraph["title"] + "\n[0] ")
    assert by_unit["question"]["translation_text"] == by_unit["question"]["question"]
    assert by_unit["answer"]["source_text"] == by_unit["answer"]["source_answer"]
    assert by_unit["instance"]["source_text"].startswith("Q: ")
    payloads = [translation.payload(t, batch.batch_id) for t in texts]
    assert all(p["batch_id"] == batch.batch_id for p in payloads)
    assert set(payloads[0]) == {"item_id", "batch_id"} | set(
        translation.FORM.fields)


def test_a_blank_question_or_answer_shows_a_marker_not_an_empty_line(tmp_path):
    from conftest import record, scan_records
    scanned = scan_records(tmp_path, [record(question="\u3000", answer="")])
    units = build_units(scanned, descriptors.descriptors(scanned.release))
    batch = sample(units, ["unit"], seed=1, per_stratum=1,
                   where={"unit": ["question", "answer", "instance"]})
    texts = {t["unit"]: t for t in sampling.unit_texts(scanned.release, batch.units)}
    blank_question = "(blank in the release: 1 character(s), U+3000)"
    empty = "(blank in the release: empty)"
    assert texts["question"]["translation_text"] == blank_question
    assert texts["question"]["question"] == blank_question
    assert texts["answer"]["translation_text"] == empty
    assert texts["instance"]["translation_text"].startswith(f"Q: {blank_question}\nA: {empty}\n")
    # the English source side is untouched
    assert texts["question"]["source_text"] == "Which river is longer, the Danube or the Rhine?"
    assert sampling.visible("\u200b \u3000") == \
        "(blank in the release: 3 character(s), U+200B U+0020 U+3000)"
    assert sampling.visible(" a ") == " a "


# ------------------------------------------------------------------------- preservation

def _paragraph_languages(scanned) -> dict[tuple[int, str], str]:
    return {(rid, pid): code for rid, pid, code in scanned.release.con.sql(
        "SELECT rid, c.paragraph_id, c.language_code "
        "FROM (SELECT rid, unnest(candidates) AS c FROM release)").fetchall()}


def _unverifiable_by_hand(scanned) -> dict[tuple[int, str], str]:
    """{(row, paragraph): language} of paragraphs whose preservation findings are all
    'unverifiable', from the findings table in plain Python."""
    categories: dict[tuple[int, str], set[str]] = {}
    for f in scanned.findings.to_pylist():
        if f["check"] in PRESERVATION_NAMES:
            categories.setdefault((f["row"], f["paragraph_id"]), set()).add(f["category"])
    languages = _paragraph_languages(scanned)
    return {key: languages[key] for key, found in categories.items() if found == {"unverifiable"}}


def test_preservation_unverifiable_paragraphs_match_the_findings(scanned, units):
    expected = _unverifiable_by_hand(scanned)
    rows = [r for r in units.to_pylist() if r["unit"] == "paragraph"
            and r["preservation"] == "unverifiable"]
    assert {(r["rid"], r["paragraph_id"]): r["language"] for r in rows} == expected
    assert Counter(r["language"] for r in rows) == {"ru": 4, "es": 3, "fr": 1, "pt": 1, "ko": 1}
    by_id = {r["item_id"]: r for r in units.to_pylist()}
    assert by_id["d25738181b0bae42e2ba12a3:paragraph:p03"]["preservation"] == "unverifiable"
    assert by_id["d25738181b0bae42e2ba12a3:instance:-"]["preservation"] == "unverifiable"
    assert by_id["9c979850379ca7b54c0759d0:paragraph:p03"]["preservation"] == "lost"
    assert by_id["d25738181b0bae42e2ba12a3:paragraph:p02"]["preservation"] is None
    assert {r["preservation"] for r in units.to_pylist()
            if r["unit"] in ("question", "answer")} == {None}


def test_preservation_takes_the_worst_category_and_gold_paragraphs_only(scanned, described):
    """Row 1 (gold p02, p03; p03 unverifiable) gains a lost finding on p03 and an
    unverifiable one on its distractor p00; row 2 (gold p05, no finding) one on p00."""
    table = "findings_preservation_test"
    con = scanned.release.con
    con.execute(f"CREATE OR REPLACE TABLE {table} AS SELECT * FROM {scanned.tables['findings']}")
    con.execute(f"""INSERT INTO {table} BY NAME
        SELECT * FROM (VALUES (1, 'bridge_entity_lost', 'lost', 'p03'),
                              (1, 'answer_not_in_evidence', 'unverifiable', 'p00'),
                              (2, 'answer_not_in_evidence', 'unverifiable', 'p00'))
                      v("row", "check", category, paragraph_id)""")
    try:
        changed = replace(scanned, tables={**scanned.tables, "findings": table})
        units = {r["item_id"]: r["preservation"]
                 for r in build_units(changed, described).to_pylist()}
    finally:
        con.execute(f"DROP TABLE {table}")
    assert units["d25738181b0bae42e2ba12a3:paragraph:p03"] == "lost"
    assert units["d25738181b0bae42e2ba12a3:paragraph:p00"] == "unverifiable"
    assert units["d25738181b0bae42e2ba12a3:instance:-"] == "lost"
    assert units["7db30629e90d01a541d5da8a:paragraph:p00"] == "unverifiable"
    assert units["7db30629e90d01a541d5da8a:instance:-"] is None


def test_unverifiable_preset_draws_only_unverifiable_paragraphs(scanned, units):
    design = sampling.PRESETS["unverifiable"]
    assert design.per_stratum == {"paragraph": 4} and design.seed == PAPER_PRESET.seed
    batch = sample_design(units, design, where={"language": list(sampling.NON_ENGLISH)})
    expected = _unverifiable_by_hand(scanned)
    assert {(r["rid"], r["paragraph_id"]) for r in batch.units.to_pylist()} == set(expected)
    counts = strata(batch)
    assert len(counts) == 23
    assert counts[("ru", "paragraph", "unverifiable")] == (4, 4, 4, 0)
    assert counts[("es", "paragraph", "unverifiable")] == (3, 4, 3, 1)
    assert counts[("de", "paragraph", "unverifiable")] == (0, 4, 0, 4)
    assert batch.manifest["totals"] == {"available": 10, "target": 92, "chosen": 10,
                                        "shortfall": 82}
    assert batch.manifest["design"] == "unverifiable"


def test_a_preservation_stratum_takes_k_per_language(units):
    """by language and preservation with levels: 2 per language where more are there."""
    batch = sample(units, ["language", "preservation"], seed=PAPER_PRESET.seed, per_stratum=2,
                   where={"unit": "paragraph"},
                   levels={"language": ("ru", "es", "ko"), "preservation": ("unverifiable",)})
    assert Counter(batch.units.column("language").to_pylist()) == {"ru": 2, "es": 2, "ko": 1}
    assert set(batch.units.column("preservation").to_pylist()) == {"unverifiable"}
    assert strata(batch)[("ko", "unverifiable")] == (1, 2, 1, 1)
