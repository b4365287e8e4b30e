"""Language descriptors (SPEC §4): exact values on hand-built V1.1 rows, the reference
toolkit's edge cases, every stratum and role condition, and the V2 / JSONL layouts."""

from __future__ import annotations

import json
import math
import sys
import unicodedata
from collections import Counter

import pyarrow.parquet as pq
import pytest
from test_inputs import JSONL_RECORD, cli

from audit.io import release as readers
from audit.language import descriptors
from audit.languages import BY_CODE
from devkit import synth

CITY = ["Paris is the capital of France.", " It lies on the Seine."]
TOWER = ["The Eiffel Tower was built by Gustave Eiffel.", " It stands in Paris."]


def instance(rid: str, q: str, langs: list[str], gold: list[str] | None = None, *,
             qtype: str = "comparison", answer: str = "Danube", texts=None, facts=None,
             split: str = "validation") -> dict:
    """One V1.1 row: candidate i is `T{i}` in language langs[i]; `gold` names candidates
    ('p0', 'p1', …), each supported by its sentence 0, unless `facts` ([[title, index]…])."""
    texts = texts or [[f"Sentence {i} a.", f" Sentence {i} b."] for i in range(len(langs))]
    if facts is None:
        facts = [[f"T{int(p[1:])}", 0] for p in gold or []]
    src = {"_id": rid, "question": "Which one?", "answer": answer, "type": qtype,
           "level": "hard", "supporting_facts": facts,
           "context": [[f"T{i}", list(texts[i])] for i in range(len(langs))]}
    view = [[f"T{i}", list(texts[i]), BY_CODE[lang].name] if lang == "en" else
            [f"T{i} ({lang})", [f"[{lang}] {s}" for s in texts[i]], BY_CODE[lang].name]
            for i, lang in enumerate(langs)]
    return synth.build_v11_record(src, view, "Which one?", answer, BY_CODE[q].name,
                                  split=split, source_position=0, release_position=0,
                                  view_index=0)


def compute(tmp_path, records: list[dict]) -> dict[str, dict]:
    for position, record in enumerate(records):
        record["release_position"] = record["source_position"] = position
        record["record_sha256"] = synth.record_sha256(record)
    synth.write_release(records, tmp_path / "release")
    table = descriptors.descriptors(readers.open_release(tmp_path / "release"))
    assert table.num_rows == len(records)
    return {row["id"]: row for row in table.to_pylist()}


def bridge(rid: str, q: str, b: str, t: str, **kw) -> dict:
    """A bridge question whose answer 'Gustave Eiffel' is in the support sentence of p1."""
    return instance(rid, q, [b, t, "ko"], ["p0", "p1"], qtype="bridge",
                    answer=kw.pop("answer", "Gustave Eiffel"),
                    texts=kw.pop("texts", [CITY, TOWER, ["Seoul is big."]]), **kw)


# ------------------------------------------------------------------ reference edge cases

def test_reference_edge_cases(tmp_path):
    d = compute(tmp_path, [
        instance("fa-ur-de", "fa", ["fa", "ur", "de"], ["p0", "p1"]),
        instance("en-fafajaen", "en", ["fa", "fa", "ja", "en"], ["p0", "p1", "p2"]),
        instance("zh-jaja", "zh", ["ja", "ja"], ["p0", "p1"]),
        instance("en-fajaen", "en", ["fa", "ja", "en"], ["p0", "p1"]),  # toolkit's own test
    ])
    row = d["fa-ur-de"]
    assert (row["rho_g"], row["rho_d"], row["h_g"], row["k_c"]) == (0.5, 1.0, 1.0, 3)
    assert (row["stratum"], row["script_relation"]) == ("S2", "same-script")
    assert row["h_c"] == pytest.approx(1.0, abs=1e-15)
    assert (row["family_relation"], row["pair_relation"]) == ("mixed-family", "same-script")
    assert (row["interface_crossing"], row["composition_crossing"]) == (True, True)
    assert row["gold_paragraph_ids"] == ["p00", "p01"]
    assert row["gold_languages"] == ["fa", "ur"] and row["gold_scripts"] == ["Arabic"] * 2
    assert row["distractor_languages"] == ["de"]

    row = d["en-fafajaen"]
    h_g = -(2 / 3 * math.log(2 / 3) + 1 / 3 * math.log(1 / 3)) / math.log(3)
    assert row["rho_g"] == 1.0 and row["rho_d"] == 0.0 and row["k_c"] == 3
    assert row["h_g"] == pytest.approx(h_g, abs=1e-12) and round(row["h_g"], 4) == 0.5794
    assert (row["stratum"], row["script_relation"]) == ("S4", "different-script")
    assert row["gold_language_count"] == 2 and row["pair_relation"] is None
    assert row["gold_pair"] is None and row["gold_count"] == 3

    row = d["zh-jaja"]
    assert (row["stratum"], row["script_relation"], row["rho_g"]) == ("S3", "different-script",
                                                                      1.0)
    assert row["rho_d"] is None and row["distractor_count"] == 0       # NA, never 0
    assert (row["h_g"], row["h_c"], row["k_c"]) == (0.0, 0.0, 1)
    assert math.copysign(1, row["h_g"]) == 1.0                     # 0.0, not -0.0
    assert (row["pair_relation"], row["gold_pair"]) == ("same-language", "ja+ja")

    row = d["en-fajaen"]
    assert (row["rho_g"], row["gold_language_count"], row["stratum"]) == (1.0, 2, "S4")


# ------------------------------------------------------------------------------ strata

def test_every_stratum_and_the_na_stratum(tmp_path):
    d = compute(tmp_path, [
        instance("S0", "de", ["de", "de", "de"], ["p0", "p1"]),
        instance("S1", "de", ["de", "de", "de", "fr"], ["p0", "p1"]),
        instance("S2", "de", ["de", "fr", "de"], ["p0", "p1"]),
        instance("S3", "de", ["fr", "fr", "de"], ["p0", "p1"]),
        instance("S4", "de", ["fr", "es", "de"], ["p0", "p1"]),
        instance("NA", "de", ["de", "de"], ["p0", "p1"]),
        instance("NA-S3", "de", ["fr", "fr"], ["p0", "p1"]),          # no distractor, ρ_G = 1
        instance("nogold", "de", ["de", "fr"], facts=[["Missing title", 0]]),
    ])
    assert {k: v["stratum"] for k, v in d.items()} == {
        "S0": "S0", "S1": "S1", "S2": "S2", "S3": "S3", "S4": "S4", "NA": "NA",
        "NA-S3": "S3", "nogold": None}
    assert [d[k]["rho_d"] for k in ("S0", "S1", "NA")] == [0.0, 0.5, None]
    assert [d[k]["rho_g"] for k in ("S0", "S2", "S3", "S4")] == [0.0, 0.5, 1.0, 1.0]
    assert [d[k]["interface_crossing"] for k in ("S0", "S1", "S2", "S3", "S4")] == [
        False, False, True, True, True]
    assert [d[k]["composition_crossing"] for k in ("S0", "S1", "S2", "S3", "S4")] == [
        False, False, True, False, True]
    nogold = d["nogold"]
    assert nogold["gold_count"] == 0 and nogold["gold_paragraph_ids"] == []
    for key in ("rho_g", "h_g", "interface_crossing", "composition_crossing",
                "script_relation", "pair_relation"):
        assert nogold[key] is None, key
    assert nogold["rho_d"] == 0.5 and nogold["distractor_languages"] == ["de", "fr"]
    assert nogold["support_languages"] == [] and nogold["k_c"] == 2
    assert nogold["question_language_absent"] is False
    assert d["S3"]["question_language_absent"] is False
    assert d["NA-S3"]["question_language_absent"] is True


def test_gold_is_distinct_resolved_paragraphs_in_first_mention_order(tmp_path):
    row = compute(tmp_path, [instance(
        "dup", "sv", ["sv", "fr", "de", "fr"],
        facts=[["T2", 1], ["T1", 0], ["T2", 0], ["Nowhere", 0], ["T1", 1]])])["dup"]
    assert row["gold_paragraph_ids"] == ["p02", "p01"] and row["gold_languages"] == ["de", "fr"]
    assert row["support_languages"] == ["de", "fr", "de", "fr"]   # occurrences, resolved only
    assert row["distractor_paragraph_ids"] == ["p00", "p03"]
    assert row["distractor_languages"] == ["sv", "fr"] and row["rho_d"] == 0.5
    assert row["candidate_languages"] == ["sv", "fr", "de", "fr"]
    assert row["h_c"] == pytest.approx(
        -(0.5 * math.log(0.5) + 2 * 0.25 * math.log(0.25)) / math.log(4), abs=1e-12)
    assert (row["candidate_count"], row["gold_count"], row["distractor_count"]) == (4, 2, 2)


# -------------------------------------------------------------------- script / family

def test_script_family_and_pair_relations(tmp_path):
    d = compute(tmp_path, [
        instance("same", "es", ["fr", "it", "ja"], ["p0", "p1"]),
        instance("mixed", "ja", ["ja", "zh", "ko"], ["p0", "p1"]),
        instance("different", "zh", ["ja", "ko"], ["p0", "p1"]),
        instance("slavic", "de", ["ru", "pl"], ["p0", "p1"]),
        instance("mixedfam", "pl", ["ru", "en"], ["p0", "p1"]),
        instance("samelang", "hi", ["bn", "bn"], ["p0", "p1"]),
        instance("unknown", "de", ["de", "fr"], ["p0", "p1"]),
    ])
    assert [(d[k]["script_relation"], d[k]["family_relation"], d[k]["pair_relation"])
            for k in ("same", "mixed", "different", "slavic", "mixedfam", "samelang")] == [
        ("same-script", "same-family", "same-script"),
        ("mixed-script", "mixed-family", "different-script"),
        ("different-script", "different-family", "different-script"),
        ("mixed-script", "different-family", "different-script"),
        ("mixed-script", "mixed-family", "different-script"),
        ("different-script", "same-family", "same-language")]
    assert d["mixed"]["gold_pair"] == "ja+zh" and d["different"]["gold_scripts"] == [
        "Japanese", "Hangul"]
    assert (d["slavic"]["question_script"], d["slavic"]["question_family"]) == ("Latin",
                                                                                "Germanic")


def test_ten_script_groups():
    assert descriptors.SCRIPT_GROUPS == ("Latin", "Han", "Devanagari", "Arabic", "Cyrillic",
                                         "Bengali", "Japanese", "Hangul", "Thai", "Greek")


def test_unknown_candidate_language_leaves_the_relation_undefined(tmp_path):
    record = instance("und", "de", ["de", "fr", "es"], ["p0", "p1"])
    record["candidates"][1]["language"] = "Klingon"
    record["candidates"][1]["language_code"] = "und"
    row = compute(tmp_path, [record])["und"]
    assert row["gold_languages"] == ["de", "und"] and row["gold_scripts"] == ["Latin", None]
    assert (row["script_relation"], row["pair_relation"]) == (None, None)
    assert (row["rho_g"], row["stratum"]) == (0.5, "S2")


# ----------------------------------------------------------------------------- roles

def test_every_role_condition(tmp_path):
    d = compute(tmp_path, [
        bridge("monolingual", "de", "de", "de"),
        bridge("query", "fr", "de", "de"),
        bridge("bridge", "de", "fr", "de"),
        bridge("answerhop", "de", "de", "fr"),
        bridge("three", "de", "fr", "es"),
        instance("comparison", "de", ["de", "fr", "es"], ["p0", "p1"]),
    ])
    expected = {
        "monolingual": ("monolingual", ["monolingual"], False),
        "query": ("query mismatch", ["query mismatch"], False),
        "bridge": ("bridge mismatch", ["bridge mismatch", "cross-hop"], True),
        "answerhop": ("answer-hop mismatch", ["answer-hop mismatch", "cross-hop"], True),
        "three": ("three-language", ["three-language", "cross-hop"], True),
    }
    for key, (condition, conditions, cross) in expected.items():
        row = d[key]
        assert row["role_status"] == "determined", key
        assert (row["answer_hop_paragraph_id"], row["bridge_paragraph_id"]) == ("p01", "p00")
        assert (row["role_condition"], row["role_conditions"], row["cross_hop"]) == (
            condition, conditions, cross), key
    assert (d["three"]["bridge_language"], d["three"]["answer_hop_language"]) == ("fr", "es")
    assert [d[k]["answer_hop_aligned"] for k in expected] == [True, False, True, False, False]
    row = d["comparison"]
    assert (row["role_status"], row["role_condition"], row["role_conditions"]) == (
        "comparison (unordered)", "comparison (unordered)", [])
    assert row["bridge_language"] is None and row["cross_hop"] is None


def test_answer_hop_rule_and_undetermined_roles(tmp_path):
    d = compute(tmp_path, [
        # the answer is in both gold paragraphs' support sentences
        bridge("both", "de", "fr", "es", answer="Paris",
               facts=[["T0", 0], ["T1", 1]]),
        bridge("neither", "de", "fr", "es", answer="Lyon"),
        # only a non-support sentence (p0's second) holds it: the support indices decide
        bridge("nonsupport", "de", "fr", "es", answer="Seine", facts=[["T0", 0], ["T1", 0]]),
        # …but a support sentence of p0 does
        bridge("second", "de", "fr", "es", answer="Seine", facts=[["T0", 1], ["T1", 0]]),
        # SPEC §6 normalisation: NFKC (fullwidth), casefold, punctuation, articles
        bridge("nfkc", "de", "fr", "es", answer="ＧＵＳＴＡＶＥ—eiffel!"),
        bridge("article", "de", "fr", "es", answer="The Eiffel Tower"),
        # whole tokens only: 'Eiff' is inside 'Eiffel' but is not a token of it
        bridge("partial", "de", "fr", "es", answer="Eiff"),
        # three gold paragraphs: no bridge/answer-hop pair
        instance("three-gold", "de", ["de", "fr", "es"], ["p0", "p1", "p2"], qtype="bridge",
                 answer="Paris", texts=[CITY, TOWER, ["Lyon."]]),
        # punctuation-only answer normalises to '': undetermined
        bridge("empty", "de", "fr", "es", answer="—"),
        bridge("one-gold", "de", "fr", "es", facts=[["T1", 0]]),
    ])
    assert d["second"]["role_status"] == "determined"
    assert d["second"]["answer_hop_paragraph_id"] == "p00"
    assert (d["second"]["role_condition"], d["second"]["answer_hop_language"]) == (
        "three-language", "fr")
    for key in ("nfkc", "article"):
        assert d[key]["answer_hop_paragraph_id"] == "p01", key
    for key in ("both", "neither", "nonsupport", "partial", "three-gold", "empty", "one-gold"):
        row = d[key]
        assert (row["role_status"], row["role_condition"], row["role_conditions"]) == (
            "undetermined", "undetermined", []), key
        assert row["answer_hop_language"] is None and row["bridge_paragraph_id"] is None


def test_punctuation_and_symbols_all_lie_below_the_table_limit():
    beyond = [cp for cp in range(descriptors._PS_LIMIT, sys.maxunicode + 1)
              if unicodedata.category(chr(cp))[0] in "PS"]
    assert beyond == []


def test_normalize_answer_follows_the_release_protocol():
    norm = descriptors.normalize_answer
    assert norm("The  Eiffel-Tower!") == "eiffel tower"
    assert norm("ＡＢＣ　ｄｅｆ") == "abc def"                # NFKC: fullwidth, U+3000
    assert norm("Straße") == "strasse"                     # casefold, not lower()
    assert norm("an apple, a pear & the fig") == "apple pear fig"
    assert norm("Theatre and Anthem") == "theatre and anthem"   # articles as words only
    assert norm("The Louvre", "fr") == "the louvre"        # English-only article removal
    assert norm("£5 €") == "5"                             # S* symbols
    assert norm("—") == ""


# --------------------------------------------------------------------- layouts and CLI

def _oracle(row: dict) -> dict:
    """An independent per-row computation from the raw V2 record."""
    cands = {c["paragraph_id"]: c for c in row["candidates"]}
    gold = list(dict.fromkeys(f["paragraph_id"] for f in row["supporting_facts"]
                              if f["paragraph_id"] in cands))
    gl = [cands[g]["language"] for g in gold]
    dl = [c["language"] for c in row["candidates"] if c["paragraph_id"] not in gold]
    q = row["question_language"]

    def entropy(xs):
        if len(xs) <= 1:
            return 0.0
        return -sum(n / len(xs) * math.log(n / len(xs)) for n in Counter(xs).values()) / \
            math.log(len(xs))
    rho_g = sum(x != q for x in gl) / len(gl)
    rho_d = sum(x != q for x in dl) / len(dl) if dl else None
    stratum = ("NA" if rho_g == 0 and rho_d is None else "S0" if rho_g == 0 and rho_d == 0
               else "S1" if rho_g == 0 else "S2" if rho_g < 1
               else "S3" if len(set(gl)) == 1 else "S4")
    scripts = {BY_CODE[x].script for x in gl}
    qs = BY_CODE[q].script
    relation = ("same-script" if scripts == {qs} else "mixed-script" if qs in scripts
                else "different-script")
    role = None
    if row["question_type"] == "bridge" and len(gold) == 2:
        answer = descriptors.normalize_answer(row["source_answer"])
        hits = []
        for g in gold:
            sentences = cands[g]["source_sentences"]
            text = " ".join(sentences[f["sentence_id"]] for f in row["supporting_facts"]
                            if f["paragraph_id"] == g and 0 <= f["sentence_id"] < len(sentences))
            hits.append(answer != "" and
                        f" {answer} " in f" {descriptors.normalize_answer(text)} ")
        role = gold[hits.index(True)] if sum(hits) == 1 else None
    return {"rho_g": rho_g, "rho_d": rho_d, "h_g": entropy(gl),
            "h_c": entropy([c["language"] for c in row["candidates"]]),
            "k_c": len({c["language"] for c in row["candidates"]}), "stratum": stratum,
            "script_relation": relation, "answer_hop_paragraph_id": role,
            "gold_paragraph_ids": gold}


def test_v2_sample_matches_an_independent_oracle(realdata):
    path = realdata / "xhotpotqa_v2_sample" / "xhotpotqa_v2_sample.parquet"
    table = descriptors.descriptors(readers.open_release(path))
    raw = pq.read_table(path).to_pylist()
    assert table.num_rows == len(raw) == 197
    rows = table.to_pylist()
    for got, record in zip(rows, raw):
        assert got["id"] == record["id"]
        want = _oracle(record)
        for key, value in want.items():
            if isinstance(value, float):
                assert got[key] == pytest.approx(value, abs=1e-12), (record["id"], key)
            else:
                assert got[key] == value, (record["id"], key)
    counts = Counter(r["role_status"] for r in rows)
    assert counts["determined"] > 100 and counts["undetermined"] > 0
    assert counts["comparison (unordered)"] == 37
    assert [r["shipped_status"] for r in rows] == [r["status"] for r in raw]


def test_jsonl_layout(tmp_path):
    record = dict(JSONL_RECORD, question_type="bridge", source_answer="Danube")
    record["candidates"] = JSONL_RECORD["candidates"] + [
        {"id": "p01", "title": "Rhein", "sentences": ["Der Rhein."], "language": "ja",
         "source_title": "Rhine", "source_sentences": ["The Rhine."]}]
    record["supporting_facts"] = [{"paragraph_id": "p00", "sentence_id": 0},
                                  {"paragraph_id": "p01", "sentence_id": 0}]
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    row = descriptors.descriptors(readers.open_release(path)).to_pylist()[0]
    assert row["shipped_status"] is None and row["gold_languages"] == ["de", "ja"]
    assert (row["stratum"], row["rho_d"], row["pair_relation"]) == ("S2", None,
                                                                   "different-script")
    # 'Danube' is in p00's English support sentence: ℓt = de = ℓq, ℓb = ja
    assert (row["role_status"], row["answer_hop_paragraph_id"]) == ("determined", "p00")
    assert (row["role_condition"], row["role_conditions"]) == (
        "bridge mismatch", ["bridge mismatch", "cross-hop"])

def test_cli_descriptors_on_the_demo_release(tmp_path):
    out = tmp_path / "sub" / "descriptors.parquet"
    done = cli("descriptors", "data/demo/release", "--out", str(out))
    assert done.returncode == 0, done.stderr
    table = pq.read_table(out)
    assert table.num_rows == 240
    for name in ("rid", "id", "source_split", "question_type", "shipped_status",
                 "question_language",
                 "gold_paragraph_ids", "gold_languages", "distractor_languages", "rho_g",
                 "rho_d", "h_g", "h_c", "k_c", "stratum", "script_relation",
                 "family_relation", "pair_relation", "bridge_language",
                 "answer_hop_language", "role_condition", "role_conditions"):
        assert name in table.column_names, name
    assert table.column("rid").to_pylist() == list(range(240))
    summary = json.loads(done.stdout)
    assert summary["rows"] == 240 and sum(summary["stratum"].values()) == 240
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]   # no staging left


def test_cli_descriptors_on_the_v2_sample(tmp_path, realdata):
    out = tmp_path / "v2.parquet"
    done = cli("descriptors", str(realdata / "xhotpotqa_v2_sample"), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert pq.read_table(out).num_rows == 197


def test_cli_descriptors_bad_input_exits_2(tmp_path):
    out = tmp_path / "d.parquet"
    done = cli("descriptors", str(tmp_path / "missing.parquet"), "--out", str(out))
    assert done.returncode == 2 and "no such file" in done.stderr and not out.exists()
    (tmp_path / "junk.parquet").write_bytes(b"not parquet")
    done = cli("descriptors", str(tmp_path / "junk.parquet"), "--out", str(out))
    assert done.returncode == 2 and "not a readable Parquet file" in done.stderr
    done = cli("descriptors", "data/demo/release", "--out", str(tmp_path))
    assert done.returncode == 2 and "is a directory" in done.stderr


def test_scan_directory_holds_descriptors(tmp_path):
    records = [instance("a", "de", ["de", "fr", "es"], ["p0", "p1"]),
               instance("b", "fr", ["fr", "fr"], ["p0", "p1"])]
    for position, record in enumerate(records):
        record["release_position"] = position
        record["record_sha256"] = synth.record_sha256(record)
    synth.write_release(records, tmp_path / "release")
    done = cli("scan", str(tmp_path / "release"), "--out", str(tmp_path / "scan"))
    assert done.returncode == 0, done.stderr
    table = pq.read_table(tmp_path / "scan" / "descriptors.parquet").to_pylist()
    assert [(r["id"], r["stratum"]) for r in table] == [("a", "S2"), ("b", "NA")]
    summary = json.loads((tmp_path / "scan" / "summary.json").read_text())
    assert summary["descriptor_counts"]["stratum"] == {"NA": 1, "S2": 1}
    assert summary["descriptor_counts"]["script_relation"] == {"same-script": 2}


def test_descriptors_twice_on_one_connection(tmp_path):
    synth.write_release([instance("a", "de", ["de", "fr"], ["p0"])], tmp_path / "r")
    release = readers.open_release(tmp_path / "r")
    assert descriptors.descriptors(release) == descriptors.descriptors(release)


def test_descriptors_are_remembered_per_content(tmp_path, settings_env):
    settings_env(AUDIT_CACHE_DIR=str(tmp_path / "cache"))
    demo = readers.open_release("data/demo/release")
    first = descriptors.descriptors(demo)
    [cached] = (tmp_path / "cache" / "descriptors").glob("*.parquet")
    again = descriptors.descriptors(readers.open_release("data/demo/release"))
    assert again.equals(first) and first.num_rows == 240
    # A damaged cache file is computed again and replaced, never trusted.
    cached.write_bytes(b"not parquet")
    assert descriptors.descriptors(readers.open_release("data/demo/release")).equals(first)
    assert pq.read_table(cached).equals(first)
    # Other content, another entry.
    other = tmp_path / "other.parquet"
    table = pq.read_table("data/demo/release/validation-00000.parquet")
    pq.write_table(table.slice(0, 5), other)
    assert descriptors.descriptors(readers.open_release(other)).num_rows == 5
    assert len(list((tmp_path / "cache" / "descriptors").glob("*.parquet"))) == 2


def test_a_first_view_makes_the_table_alone_and_a_full_scan_writes_it_out(tmp_path,
                                                                          settings_env):
    """`start(file=False)` (the workbench's first view) makes the release's table
    `main.descriptors` and no file; a browse index then reads that table as it is. A full
    scan's `start` then writes the file, in rid order, as a scan without a first view does."""
    settings_env(AUDIT_CACHE_DIR=tmp_path / "cache")
    synth.write_release([instance("c", "fr", ["en", "de", "ko"], ["p0", "p1"]),
                         instance("a", "de", ["de", "de", "de"], ["p0", "p2"]),
                         instance("b", "ko", ["en", "ko", "fr"], ["p1", "p2"])],
                        tmp_path / "release")
    release = readers.open_release(tmp_path / "release")
    folder = tmp_path / "cache" / "descriptors"
    descriptors.start(release, file=False)
    descriptors.wait(release)
    assert descriptors._PENDING[release.root].result() is None
    assert not list(folder.glob("*.parquet"))
    made = release.con.sql("SELECT * FROM main.descriptors ORDER BY rid").to_arrow_table()
    assert made.column("id").to_pylist() == ["c", "a", "b"]
    assert made.column("gold_languages").to_pylist() == [["en", "de"], ["de", "de"],
                                                         ["ko", "fr"]]
    descriptors.into_table(release)                     # made: nothing waited, copied, written
    assert not list(folder.glob("*.parquet"))

    descriptors.start(release)                          # the file, on a thread
    started = descriptors._PENDING[release.root]
    path = descriptors.cached(release)
    assert started.result() == path and release.root not in descriptors._PENDING
    written = pq.read_table(path)
    assert written.to_pylist() == made.to_pylist()

    direct = readers.open_release(tmp_path / "release", cache=False)
    path.unlink()
    assert descriptors.descriptors(direct).equals(written)     # the same file, schema too
    assert descriptors._has_table(direct.con) is False


def test_a_scan_computes_the_descriptors_on_a_thread_of_their_own(tmp_path, settings_env):
    """The scan starts the descriptor table beside its checks (DuckDB, no GIL) and the
    writer takes it; a scan that fails first waits for it: no thread outlives either."""
    import threading

    from audit.engine import scan

    settings_env(AUDIT_CACHE_DIR=tmp_path / "cache")
    synth.write_release([instance("a", "fr", ["en", "de", "ko"], ["p0", "p1"])],
                        tmp_path / "release")
    release = readers.open_release(tmp_path / "release")
    descriptors.start(release)
    assert release.root in descriptors._PENDING
    started = descriptors._PENDING[release.root]
    path = descriptors.cached(release)                  # waits for the one started
    assert started.done() and path == started.result()
    assert pq.read_table(path).column("id").to_pylist() == ["a"]
    descriptors.start(release)                          # cached now: nothing to start
    assert release.root not in descriptors._PENDING

    other = readers.open_release(tmp_path / "release", cache=False)
    (tmp_path / "cache" / "descriptors").mkdir(exist_ok=True)
    path.unlink()
    descriptors.start(other)
    with pytest.raises(KeyError):
        scan.run(other, progress=lambda message: (_ for _ in ()).throw(KeyError(message)))
    assert other.root not in descriptors._PENDING
    assert not [t for t in threading.enumerate() if t.name.startswith("descriptors")]

    path.unlink()
    probe = readers.open_release(tmp_path / "release", cache=False)
    scan.run(probe)                                     # not to be written: none computed
    assert probe.root not in descriptors._PENDING and not path.exists()
    written = scan.run(probe, describe=True)            # computed beside it, ended with it
    assert descriptors._PENDING[probe.root].done()
    assert descriptors.cached(written.release) == path and path.exists()
    probe.close()                                       # nothing of the scan still running

