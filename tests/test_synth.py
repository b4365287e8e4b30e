"""devkit.synth reproduces the reference V1.1 builder's per-record rules (SPEC §2)."""

from __future__ import annotations

import copy
import hashlib
import json

import pyarrow.parquet as pq
import pytest

from devkit import synth


def make_source(**changes: object) -> dict:
    source = {
        "_id": "5a8b57f25542995d1e6f1371", "answer": "Paris", "question": "Where is it?",
        "supporting_facts": [["Alpha", 0], ["Beta", 1]],
        "context": [["Alpha", ["Alpha is a city.", " It is old."]],
                    ["Beta", ["Beta is a river.", " It is long."]],
                    ["Gamma", ["Gamma is a hill.", " It is low."]]],
        "type": "bridge", "level": "hard",
    }
    source.update(changes)
    return source


def make_translated() -> list:
    return [["Alfa", ["Alfa es una ciudad.", "Es antigua."], "Spanish"],
            ["Beta-es", ["Beta es un río.", "Es largo."], "Spanish"],
            ["Gama", ["Gama es una colina.", "Es baja."], "Spanish"]]


def build(source: dict | None = None, translated: object = None, question: str = "¿Dónde?",
          answer: str = "París", language: str = "Spanish", **kw: object) -> dict:
    return synth.build_v11_record(
        source if source is not None else make_source(),
        make_translated() if translated is None else translated, question, answer, language,
        split=kw.get("split", "validation"), source_position=kw.get("source_position", 7),
        release_position=kw.get("release_position", 0), view_index=kw.get("view_index", 0))


def with_sentence(i: int, k: int, text: str) -> list:
    translated = make_translated()
    translated[i][1][k] = text
    return translated


def with_titles(*titles: str) -> list:
    translated = make_translated()
    for entry, title in zip(translated, titles):
        entry[0] = title
    return translated


def test_clean_record_is_accepted_with_expected_fields() -> None:
    record = build()
    assert record["structural_flags"] == [] and record["status"] == "accepted"
    assert list(record) == synth.V11_SCHEMA.names
    assert record["question_language"] == "es" == record["answer_language"]
    assert record["question_language_name"] == "Spanish"
    assert (record["source_question"], record["source_answer"]) == ("Where is it?", "Paris")
    assert (record["question_type"], record["difficulty"]) == ("bridge", "hard")
    first = record["candidates"][0]
    assert first == {"paragraph_id": "p00", "candidate_index": 0, "source_title": "Alpha",
                     "source_sentences": ["Alpha is a city.", " It is old."], "title": "Alfa",
                     "sentences": ["Alfa es una ciudad.", "Es antigua."],
                     "language": "Spanish", "language_code": "es"}
    assert record["supporting_facts"] == [
        {"source_title": "Alpha", "paragraph_id": "p00", "candidate_index": 0,
         "sentence_index": 0, "in_bounds": True},
        {"source_title": "Beta", "paragraph_id": "p01", "candidate_index": 1,
         "sentence_index": 1, "in_bounds": True}]
    assert record["provenance"]["source_record_sha256"] == hashlib.sha256(
        synth.canonical_json(make_source()).encode()).hexdigest()


def test_canonical_json_and_record_hash() -> None:
    assert synth.canonical_json({"b": 1, "a": "é"}) == '{"a":"é","b":1}'
    record = build()
    body = {k: v for k, v in record.items() if k != "record_sha256"}
    expected = hashlib.sha256(json.dumps(body, ensure_ascii=False, sort_keys=True,
                                         separators=(",", ":")).encode("utf-8")).hexdigest()
    assert record["record_sha256"] == expected == synth.record_sha256(record)


@pytest.mark.parametrize("blank", ["", " ", "\u00a0", "\u3000", "\t", "\u2003"])
def test_unicode_whitespace_sentence_is_blank(blank: str) -> None:
    record = build(translated=with_sentence(2, 1, blank))
    assert record["structural_flags"] == ["blank_sentence"]
    assert record["status"] == "quarantined"


def test_zero_width_space_is_not_blank() -> None:
    assert build(translated=with_sentence(2, 1, "\u200b"))["structural_flags"] == []


def test_blank_question_and_answer() -> None:
    assert build(question="\u3000")["structural_flags"] == ["blank_question"]
    assert build(answer="\u00a0")["structural_flags"] == ["blank_answer"]


def test_unknown_languages_get_und() -> None:
    record = build(language="Klingon")
    assert record["structural_flags"] == ["unknown_question_language"]
    assert record["question_language"] == record["answer_language"] == "und"
    translated = make_translated()
    translated[1][2] = "Latin"
    record = build(translated=translated)
    assert record["structural_flags"] == ["unknown_candidate_language"]
    assert record["candidates"][1]["language_code"] == "und"


def english_view() -> list:
    return [[t, list(s), "English"] for t, s in make_source()["context"]]


def test_english_identity() -> None:
    source = make_source()
    assert build(translated=english_view(), question=source["question"],
                 answer=source["answer"], language="English")["structural_flags"] == []
    assert build(question="Where is it ?", answer="Paris", language="English"
                 )["structural_flags"] == ["english_identity_mismatch"]
    edited = english_view()
    edited[0][1][1] = "It is old."  # the source keeps HotpotQA's leading space
    assert build(translated=edited)["structural_flags"] == ["english_identity_mismatch"]
    retitled = english_view()
    retitled[2][0] = "gamma"
    assert build(translated=retitled)["structural_flags"] == ["english_identity_mismatch"]


def test_invalid_context_and_source_context() -> None:
    record = build(translated={"error": "timeout"})
    assert record["candidates"] == []
    assert record["structural_flags"] == ["candidate_count_mismatch", "invalid_context",
                                          "support_index_out_of_range"]
    assert [f["paragraph_id"] for f in record["supporting_facts"]] == ["p00", "p01"]
    record = build(source=make_source(context=None))
    assert record["structural_flags"] == [
        "candidate_count_mismatch", "invalid_source_context", "support_index_out_of_range",
        "supporting_title_missing"]
    assert {c["source_title"] for c in record["candidates"]} == {""}


def test_invalid_candidate_is_skipped_leaving_a_gap() -> None:
    translated = make_translated()
    translated[1][0] = None
    record = build(translated=translated)
    assert [c["candidate_index"] for c in record["candidates"]] == [0, 2]
    # The fact on Beta resolves to p01, which has no candidate any more.
    assert record["structural_flags"] == ["invalid_candidate", "support_index_out_of_range"]
    assert record["supporting_facts"][1]["paragraph_id"] == "p01"
    assert record["supporting_facts"][1]["in_bounds"] is False
    translated = make_translated()
    translated[2] = ["Gama", ["ok"]]  # wrong length
    assert build(translated=translated)["structural_flags"] == ["invalid_candidate"]


def test_invalid_source_candidate() -> None:
    source = make_source()
    source["context"][2] = ["Gamma", "Gamma is a hill. It is low."]
    record = build(source=source)
    assert record["structural_flags"] == ["invalid_source_candidate"]
    assert record["candidates"][2]["source_title"] == ""
    assert record["candidates"][2]["source_sentences"] == []


def test_count_mismatch_and_sentence_counts() -> None:
    assert build(translated=make_translated()[:2])["structural_flags"] == [
        "candidate_count_mismatch"]
    short = make_translated()
    short[2][1].pop()
    assert build(translated=short)["structural_flags"] == ["paragraph_sentence_shortfall"]
    long = make_translated()
    long[2][1].append("Extra.")
    assert build(translated=long)["structural_flags"] == ["paragraph_sentence_surplus"]


def test_support_bounds_use_the_translated_sentence_count() -> None:
    # Source Beta has 2 sentences; index 2 is out of the source but inside a 3-sentence
    # translation, so the reference counts it in bounds (only the surplus is flagged).
    source = make_source(supporting_facts=[["Beta", 2]])
    long = make_translated()
    long[1][1].append("Tercera.")
    record = build(source=source, translated=long)
    assert record["structural_flags"] == ["paragraph_sentence_surplus"]
    assert record["supporting_facts"][0]["in_bounds"] is True
    short = make_translated()
    short[1][1].pop()  # fact ["Beta", 1] now past the translation
    record = build(translated=short)
    assert record["structural_flags"] == ["paragraph_sentence_shortfall",
                                          "support_index_out_of_range"]


def test_title_join_is_exact_and_unnormalised() -> None:
    for title in ("Beta ", "beta", "ＢＥＴＡ"):
        record = build(source=make_source(supporting_facts=[[title, 0]]))
        assert record["structural_flags"] == ["support_index_out_of_range",
                                              "supporting_title_missing"]
        fact = record["supporting_facts"][0]
        assert (fact["paragraph_id"], fact["candidate_index"], fact["in_bounds"]) == (
            None, None, False)
    source = make_source()
    source["context"][2] = ["Beta", ["Another Beta.", " Yes."]]
    record = build(source=source)
    assert record["structural_flags"] == ["support_index_out_of_range",
                                          "supporting_title_ambiguous"]
    assert record["supporting_facts"][1]["paragraph_id"] is None


def test_malformed_facts_are_skipped() -> None:
    facts = [["Alpha", -1], ["Alpha", "1"], ["Alpha", True], ["Alpha"], "Alpha", ["Beta", 0]]
    record = build(source=make_source(supporting_facts=facts))
    assert record["structural_flags"] == ["malformed_supporting_fact"]
    assert [f["source_title"] for f in record["supporting_facts"]] == ["Beta"]


@pytest.mark.parametrize("first,second", [
    ("Danube", "ＤＡＮＵＢＥ"),        # NFKC folds fullwidth letters
    ("Straße", "STRASSE"),           # casefold, not lower()
    ("Lake  Baikal", "lake baikal"),  # whitespace collapse
    ("Rhein", " Rhein\u3000"),         # Unicode whitespace trimmed
])
def test_duplicate_normalised_titles_need_review(first: str, second: str) -> None:
    record = build(translated=with_titles(first, "Other", second))
    assert record["structural_flags"] == ["duplicate_normalized_translated_title"]
    assert record["status"] == "review_required"


def test_zwnj_titles_are_not_duplicates() -> None:
    assert "Straße".lower() != "STRASSE".lower()  # why casefold matters above
    record = build(translated=with_titles("Rhein", "Rh\u200cein", "Gama"))
    assert record["structural_flags"] == [] and record["status"] == "accepted"


def test_status_rule() -> None:
    assert synth.status_of([]) == "accepted"
    assert synth.status_of(["duplicate_normalized_translated_title"]) == "review_required"
    assert synth.status_of(["duplicate_normalized_translated_title",
                            "blank_sentence"]) == "quarantined"
    record = build(question="", translated=with_titles("Alfa", "ALFA", "Gama"))
    assert record["structural_flags"] == ["blank_question",
                                          "duplicate_normalized_translated_title"]
    assert record["status"] == "quarantined"


def test_legacy_raw_hash_covers_the_translated_view() -> None:
    translated = make_translated()
    record = build(translated=translated)
    assert record["provenance"]["legacy_raw_sha256"] == hashlib.sha256(synth.canonical_json({
        "translate_context": translated, "translate_question": "¿Dónde?",
        "translate_answer": "París", "target_language": "Spanish"}).encode()).hexdigest()


def test_inputs_are_not_mutated() -> None:
    source, translated = make_source(), make_translated()
    before = copy.deepcopy((source, translated))
    build(source=source, translated=translated)
    assert (source, translated) == before


def test_write_release_round_trips(tmp_path) -> None:
    rows = [build(release_position=0), build(translated={"x": 1}, release_position=1),
            build(split="train", view_index=2, language="Spanish")]
    paths = synth.write_release(rows, tmp_path)
    assert [p.name for p in paths] == ["train-00000.parquet", "validation-00000.parquet"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [p.name for p in paths]  # no temps
    table = pq.read_table(tmp_path / "validation-00000.parquet")
    assert table.schema.equals(synth.V11_SCHEMA)
    assert len(synth.V11_SCHEMA) == 22
    back = table.to_pylist()
    assert back == rows[:2]
    assert all(synth.record_sha256(r) == r["record_sha256"] for r in back)
    meta = pq.ParquetFile(tmp_path / "validation-00000.parquet").metadata
    assert meta.row_group(0).column(0).compression == "ZSTD"
