"""Seeded stratified samples of translation-review units (SPEC §5, paper C.5).

A review *unit* is one thing an annotator judges:

    paragraph   one candidate paragraph of a row (its translation against its English source)
    question    the row's question             answer     the row's answer
    instance    the whole row: question, answer and its gold paragraphs together

`build_units(scan_result)` turns a scanned release into a unit table, one row per unit, by
set-based DuckDB queries over `release`, the language descriptors and the scan's `status`
and `findings`.
Its stratum attributes:

    language         the unit's assigned language (code): the candidate's language for a
                     paragraph, the answer language for an answer, the question language for
                     a question and an instance
    script           that language's script (NULL for an unknown language)
    unit             paragraph | question | answer | instance
    question_type    bridge | comparison, as the release says
    answer_type      of the English source answer, by ANSWER_TYPE_RULE below
    support_role     paragraphs only (NULL otherwise): gold-bridge | gold-answer-hop | gold
                     (comparison or undetermined roles) | distractor, from the descriptors'
                     bridge_paragraph_id / answer_hop_paragraph_id / gold_paragraph_ids
    script_relation, stratum, role_condition   the row's descriptors (SPEC §4)
    status           the status our scan derived (accepted | review_required | quarantined)
    check            the checks that set that status (severity blocking or review; info
                     findings such as most exact source copies change nothing), sorted and
                     joined by '+', or 'none'; `checks` holds the same names as a list
    languages        the non-English languages an annotator must read to judge the unit
                     (sorted codes; 'und' for an unknown one): the unit's language, and for
                     an instance also its answer's and gold paragraphs' languages. Routing
                     (audit/review/routing.py) sends a unit only to annotators who read them.
    preservation     what the preservation checks (answer_not_in_evidence, bridge_entity_lost)
                     found: for a paragraph 'lost' when a finding on it has category lost,
                     else 'unverifiable' when one has category unverifiable (the release
                     holds no rendering to compare with: only a person can tell), else NULL;
                     for an instance the worst over its gold paragraphs; NULL for questions
                     and answers and on a mapped release. NULL does not say 'checked': which
                     sentences the checks examined is not kept after the scan.

Item ids are f"{row_id}:{unit}:{paragraph_id or '-'}". row_id is the release id, or
f"{id}@{rid}" when the id is blank or repeats in the release (duplicate ids are a finding, and
must not make two units share an id). A paragraph id that repeats inside its row, or is
missing, gets '#<position>' so item ids stay unique.

`sample(units, by=[...], …)` draws a batch. Strata are the distinct values of the `by`
columns (NULL is a value); within a stratum the order is sha256(f"{seed}:{item_id}") — a hash,
not Python's random state, so the same seed on the same release gives the same batch on any
machine, and a unit's draw does not depend on which other units exist. Allocation:

    per_stratum=K          K units from every stratum (equal allocation); K may be a mapping
                           {unit: K} when 'unit' is a dimension (the paper asks more paragraphs
                           than questions); its keys are then the units sampled
    size=N, equal          N split evenly; the N mod S leftover units go to strata in seeded
                           hash order
    size=N, proportional   N split by stratum size, largest remainder (ties in seeded order)

A stratum never gives more than it has: it gives everything, and the manifest records the
shortfall (target − chosen). Shortfalls are not moved to other strata, so a design's
per-stratum promise stays visible. `levels={dim: values}` fixes a dimension's domain: units
outside it are left out, and strata with no unit still appear (available 0), which is how the
paper preset reports languages the release lacks.

Named designs (PRESETS, by name): "default" 4 paragraphs + 1 question + 1 answer per
non-English language, "paper" the paper's 80 + 20 + 20, and "unverifiable" 4 paragraphs per
non-English language whose preservation is 'unverifiable' (by language, unit and
preservation, preservation fixed to that one level), so that people settle what the checks
could not.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import duckdb
import pyarrow as pa

from ..analysis.stats import SEED
from ..checks.preservation import PRESERVATION_NAMES
from ..engine.scan import ScanResult
from ..io.atomic import staged_file, write_json
from ..io.model import Release
from ..language import descriptors as descriptor_module
from ..languages import BY_CODE, LANGUAGES
from ..sql.connection import connect
from ..sql.safe import identifier, literal

UNITS = ("paragraph", "question", "answer", "instance")
SUPPORT_ROLES = ("gold-bridge", "gold-answer-hop", "gold", "distractor")
ANSWER_TYPES = ("yes-no", "date", "number", "entity")
ALLOCATIONS = ("equal", "proportional")
DIMENSIONS = ("language", "script", "unit", "question_type", "answer_type", "support_role",
              "script_relation", "stratum", "role_condition", "status", "check", "preservation")
NON_ENGLISH = tuple(language.code for language in LANGUAGES if language.code != "en")
PAPER_SEED = SEED

# ------------------------------------------------------------------------- answer type

ANSWER_TYPE_RULE = """\
The English source answer, trimmed (NULL or blank → NULL), is
  yes-no  when it is 'yes' or 'no' (any case);
  date    when it is date-like: a month name with a day and/or year ('5 May 1821',
          'May 5, 1821', 'May 1821'), an ISO or slashed date ('1821-05-05', '05/05/1821'),
          a bare year 1000–2099 with optional decade 's' or era ('1661', '1990s',
          'c. 1500', '44 BC'), a year range ('1939–1945') or a century ('19th century');
  number  when it is a numeral (digits with , or . separators) after an optional
          approximation word or currency sign, followed by at most a multiplier
          (thousand … trillion), '%' and two unit words ('3,677', '7 million people',
          '86 square kilometres'); a bare 1000–2099 counts as a year, '1,661' as a number;
  entity  otherwise (names, titles, number words such as 'three').
Case-insensitive; one SQL macro is the only definition (answer_type() runs it)."""

_MONTH = (r"(jan(uary)?|feb(ruary)?|mar(ch)?|apr(il)?|may|june?|july?|aug(ust)?|"
          r"sep(t(ember)?)?|oct(ober)?|nov(ember)?|dec(ember)?)\.?")
_ORDINAL = r"\d{1,2}(st|nd|rd|th)?"
_YEAR = r"(1\d{3}|20\d{2})"
_ERA = r"(\s*(ad|bc|bce|ce))"
_DATE_RE = "|".join([
    rf"{_ORDINAL}\s+{_MONTH},?(\s+\d{{3,4}})?",
    rf"{_MONTH}\s+{_ORDINAL}(,?\s+\d{{3,4}})?",
    rf"{_MONTH},?\s+\d{{3,4}}",
    r"\d{4}-\d{1,2}(-\d{1,2})?",
    r"\d{1,2}[/.]\d{1,2}[/.]\d{2,4}",
    rf"(c\.\s*|circa\s+)?{_YEAR}s?{_ERA}?",
    rf"\d{{1,4}}{_ERA}",
    rf"{_YEAR}\s*[-–]\s*{_YEAR}",
    rf"{_ORDINAL}\s+century{_ERA}?",
])
_NUMBER_RE = (r"(about|approximately|around|nearly|almost|over|under|more than|less than|"
              r"~|≈)?\s*[$£€¥]?\s*\d[\d,]*(\.\d+)?\s*"
              r"(%|percent|thousand|million|billion|trillion)?(\s+[^\s\d]+){0,2}")

_ANSWER_TYPE_MACRO = f"""
CREATE OR REPLACE TEMP MACRO review_answer_type(a) AS CASE
    WHEN a IS NULL OR trim(a) = '' THEN NULL
    WHEN lower(trim(a)) IN ('yes', 'no') THEN 'yes-no'
    WHEN regexp_full_match(trim(a), '{_DATE_RE}', 'i') THEN 'date'
    WHEN regexp_full_match(trim(a), '{_NUMBER_RE}', 'i') THEN 'number'
    ELSE 'entity' END
"""


def answer_type(text: str | None) -> str | None:
    """The answer type of one English answer, by the same SQL the unit table uses."""
    con = connect()
    con.execute(_ANSWER_TYPE_MACRO)
    return con.execute("SELECT review_answer_type(?::VARCHAR)", [text]).fetchall()[0][0]


# ------------------------------------------------------------------------- unit table

# Preservation ranks the worst category per (row, paragraph): 2 lost, 1 unverifiable.
_UNITS_QUERY = f"""
WITH paragraph_preservation AS (
    SELECT "row" AS pres_rid, paragraph_id AS pres_paragraph,
           max(CASE category WHEN 'lost' THEN 2 ELSE 1 END) AS pres_rank
    FROM findings
    WHERE list_contains({literal(list(PRESERVATION_NAMES))}, "check")
      AND category IN ('lost', 'unverifiable')
    GROUP BY ALL),
instance_preservation AS (
    SELECT p.pres_rid, max(p.pres_rank) AS instance_rank
    FROM paragraph_preservation p JOIN _review_descriptors d ON d.rid = p.pres_rid
    WHERE list_contains(d.gold_paragraph_ids, p.pres_paragraph)
    GROUP BY ALL),
rows AS (
    SELECT r.rid, r.id, r.source_split, r.question_type, r.question_language,
           r.answer_language,
           -- only the fields a unit needs: unnesting whole candidates (their sentences)
           -- took the Review page from 0.5 to 1.2 GiB on 23,760 rows
           list_transform(r.candidates, lambda c: {{'paragraph_id': c.paragraph_id,
                                                    'language_code': c.language_code}})
             AS candidates,
           -- what an instance unit shows: question, answer and its gold paragraphs
           list_distinct([coalesce(r.question_language, 'und'),
                          coalesce(r.answer_language, 'und')]
               || list_transform(list_filter(r.candidates, lambda c: list_contains(
                      list_transform(r.supporting_facts, lambda f: f.paragraph_id),
                      c.paragraph_id)), lambda c: coalesce(c.language_code, 'und')))
             AS instance_languages,
           -- blank or repeated ids would make two units share an item id
           CASE WHEN coalesce(r.id, '') = '' OR count(*) OVER (PARTITION BY r.id) > 1
                THEN coalesce(r.id, '') || '@' || r.rid ELSE r.id END AS row_id,
           review_answer_type(r.source_answer) AS answer_type,
           d.stratum, d.script_relation, d.role_condition, d.gold_paragraph_ids,
           d.bridge_paragraph_id, d.answer_hop_paragraph_id,
           s.status, coalesce(s.flags, []::VARCHAR[]) AS checks, ip.instance_rank
    FROM release r
    JOIN _review_descriptors d ON d.rid = r.rid
    LEFT JOIN status s ON s."row" = r.rid
    LEFT JOIN instance_preservation ip ON ip.pres_rid = r.rid),
row_units AS (
    SELECT rows.*, u.unit, u.ord,
           CASE u.unit WHEN 'answer' THEN answer_language ELSE question_language END
             AS language,
           CASE u.unit WHEN 'instance' THEN instance_languages
                ELSE [coalesce(CASE u.unit WHEN 'answer' THEN answer_language
                                           ELSE question_language END, 'und')]
           END AS shown_languages,
           NULL::VARCHAR AS paragraph_id, NULL::VARCHAR AS paragraph_key,
           NULL::INTEGER AS candidate_index, NULL::VARCHAR AS support_role
    FROM rows CROSS JOIN (VALUES ('instance', 0), ('question', 1), ('answer', 2)) u(unit, ord)),
unnested AS (
    SELECT *, unnest(candidates) AS c, unnest(range(len(candidates))) AS position
    FROM rows),
paragraph_units AS (
    SELECT * EXCLUDE (c, position), 'paragraph' AS unit, 3 AS ord,
           c.language_code AS language, [coalesce(c.language_code, 'und')] AS shown_languages,
           c.paragraph_id,
           CASE WHEN c.paragraph_id IS NULL THEN '#' || position
                WHEN count(*) OVER (PARTITION BY rid, c.paragraph_id) > 1
                  THEN c.paragraph_id || '#' || position
                ELSE c.paragraph_id END AS paragraph_key,
           position::INTEGER AS candidate_index,
           CASE WHEN c.paragraph_id = bridge_paragraph_id THEN 'gold-bridge'
                WHEN c.paragraph_id = answer_hop_paragraph_id THEN 'gold-answer-hop'
                WHEN list_contains(gold_paragraph_ids, c.paragraph_id) THEN 'gold'
                ELSE 'distractor' END AS support_role
    FROM unnested),
units AS (
    SELECT * FROM row_units UNION ALL BY NAME SELECT * FROM paragraph_units)
SELECT row_id || ':' || unit || ':' || coalesce(paragraph_key, '-') AS item_id,
       row_id, rid, id, source_split, unit, paragraph_id, candidate_index, language,
       lang_script(language) AS script, question_type, answer_type, support_role,
       script_relation, stratum, role_condition, status,
       CASE WHEN len(checks) = 0 THEN 'none' ELSE array_to_string(checks, '+') END AS "check",
       checks,
       list_sort(list_distinct(list_filter(shown_languages, lambda l: l <> 'en'))) AS languages,
       CASE CASE unit WHEN 'paragraph' THEN pres_rank WHEN 'instance' THEN instance_rank END
            WHEN 2 THEN 'lost' WHEN 1 THEN 'unverifiable' END AS preservation
FROM units
LEFT JOIN paragraph_preservation
  ON unit = 'paragraph' AND pres_rid = rid AND pres_paragraph = paragraph_id
ORDER BY rid, ord, candidate_index
"""


# A mapped release (audit/io/layouts/mapped.py): a unit is one text or answer column of a
# row (an item in one language), named by the column; its language is the row's, as the
# checks read it (one of the 24 where the code names one: annotators declare those).
_MAPPED_UNITS_QUERY = """
WITH rows AS (
    SELECT v.rid, v.id, v.language AS code, l.unit_lang AS language,
           CASE WHEN coalesce(v.id, '') = ''
                     OR count(*) OVER (PARTITION BY v.id, v.language) > 1
                THEN coalesce(v.id, '') || '@' || v.language || '@' || v.rid
                ELSE v.id || '@' || v.language END AS row_id,
           s.status, coalesce(s.flags, []::VARCHAR[]) AS checks
    FROM raw_views v JOIN mapped_languages l USING (language)
    LEFT JOIN status s ON s."row" = v.rid
    WHERE NOT v.missing)
SELECT r.row_id || ':' || u.paragraph_id || ':-' AS item_id, r.row_id, r.rid, r.id,
       NULL::VARCHAR AS source_split, u.paragraph_id AS unit, NULL::VARCHAR AS paragraph_id,
       NULL::INTEGER AS candidate_index, r.language, lang_script(r.language) AS script,
       NULL::VARCHAR AS question_type, NULL::VARCHAR AS answer_type,
       NULL::VARCHAR AS support_role, NULL::VARCHAR AS script_relation,
       NULL::VARCHAR AS stratum, NULL::VARCHAR AS role_condition, r.status,
       CASE WHEN len(r.checks) = 0 THEN 'none' ELSE array_to_string(r.checks, '+') END
         AS "check", r.checks,
       CASE WHEN r.language = 'en' THEN []::VARCHAR[] ELSE [r.language] END AS languages,
       NULL::VARCHAR AS preservation
FROM rows r JOIN units u USING (rid)
ORDER BY r.rid, u.key
"""


def build_units(result: ScanResult, descriptor_table: pa.Table | None = None) -> pa.Table:
    """The unit table of a scanned release (see the module docstring for its columns).
    Pass the descriptor table when you already have it, to skip recomputing it."""
    release = result.release
    if release.layout.has("aligned"):
        with result.cursor() as con:
            descriptor_module.register(con)  # lang_script()
            return con.sql(_MAPPED_UNITS_QUERY).to_arrow_table()
    table = descriptor_table if descriptor_table is not None else \
        descriptor_module.descriptors(release)
    # A cursor of its own: the release's connection is shared by every app session, and a
    # registered name lives on the cursor that registered it.
    with result.cursor() as con:
        descriptor_module.register(con)  # lang_script()
        con.execute(_ANSWER_TYPE_MACRO)
        con.register("_review_descriptors", table)
        return con.sql(_UNITS_QUERY).to_arrow_table()


# ------------------------------------------------------------------------- designs

@dataclass(frozen=True)
class Design:
    """A named sampling design: the arguments of one sample() call, without the data."""

    name: str
    by: tuple[str, ...]
    seed: int
    allocation: str = "equal"
    per_stratum: int | Mapping[str, int] | None = None
    size: int | None = None
    levels: Mapping[str, tuple] = field(default_factory=dict)


# Paper C.5: per non-English language 80 paragraphs + 20 questions + 20 answers
# (23 × 120 = 2,760 units).
PAPER_PRESET = Design(name="paper", by=("language", "unit"), seed=PAPER_SEED,
                      per_stratum={"paragraph": 80, "question": 20, "answer": 20},
                      levels={"language": NON_ENGLISH})

# The default: the paper's 80:20:20 in miniature, 4 paragraphs + 1 question + 1 answer per
# non-English language (23 × 6 = 138 units), for a pilot round.
DEFAULT_PRESET = Design(name="default", by=("language", "unit"), seed=PAPER_SEED,
                        per_stratum={"paragraph": 4, "question": 1, "answer": 1},
                        levels={"language": NON_ENGLISH})

# What the preservation checks could not settle (issue 47): per non-English language 4
# paragraphs whose answer or bridge entity they found neither carried nor lost.
UNVERIFIABLE_PRESET = Design(name="unverifiable", by=("language", "unit", "preservation"),
                             seed=PAPER_SEED, per_stratum={"paragraph": 4},
                             levels={"language": NON_ENGLISH,
                                     "preservation": ("unverifiable",)})

PRESETS = {design.name: design
           for design in (DEFAULT_PRESET, PAPER_PRESET, UNVERIFIABLE_PRESET)}


@dataclass(frozen=True)
class Batch:
    """The chosen units (unit-table columns, in draw order) and the batch manifest."""

    units: pa.Table
    manifest: dict

    @property
    def batch_id(self) -> str:
        return self.manifest["batch_id"]

    @property
    def item_ids(self) -> list[str]:
        return self.manifest["item_ids"]


def order_key(seed: int | str, item_id: str) -> str:
    """A unit's place in the random order: what the SQL draw computes, in Python."""
    return hashlib.sha256(f"{seed}:{item_id}".encode("utf-8")).hexdigest()


def target_languages_only(by: Sequence[str]) -> dict:
    """sample() arguments of the default scope, non-English target languages only (an
    English unit's source and "translation" are the same text): the filter and, when
    language is a stratum, every target language as a level, so a language the release
    lacks shows up as a shortfall."""
    return {"where": {"language": list(NON_ENGLISH)},
            "levels": {"language": NON_ENGLISH} if "language" in by else {}}


# ------------------------------------------------------------------------- sampling

Where = Mapping[str, object] | None


def sample(units: pa.Table, by: Sequence[str], *, seed: int,
           allocation: str = "equal", size: int | None = None,
           per_stratum: int | Mapping[str, int] | None = None, where: Where = None,
           levels: Mapping[str, Sequence] | None = None,
           release_fingerprint: str | None = None, created_at: str | None = None,
           design: str | None = None) -> Batch:
    """Draw a stratified batch from a unit table (see the module docstring).

    `where` filters units first: a mapping {scalar column: value or list of values} (None
    matches NULL); its values reach SQL only as parameters."""
    by = tuple(by)
    levels = {dim: tuple(values) for dim, values in (levels or {}).items()}
    _check_arguments(units, by, allocation, size, per_stratum, where, levels)
    if isinstance(per_stratum, Mapping):
        levels.setdefault("unit", tuple(per_stratum))  # the mapping names the units sampled
    con = connect()
    con.register("units", units)
    predicate, params = _predicate(where, levels)
    con.execute("CREATE TABLE pool AS SELECT *, sha256(? || ':' || item_id) AS draw "
                f"FROM units WHERE {predicate}", [str(seed), *params])
    strata = _strata(con, by, levels)
    targets = _targets(strata, by, allocation, size, per_stratum, seed)
    chosen = _draw(con, units.schema, by, strata, targets)
    manifest = _manifest(
        design=design, seed=seed, strata=list(by), allocation=allocation, size=size,
        per_stratum=dict(per_stratum) if isinstance(per_stratum, Mapping) else per_stratum,
        levels={dim: list(values) for dim, values in levels.items()}, where=_jsonable(where),
        release_fingerprint=release_fingerprint, counts=_counts(by, strata, targets),
        item_ids=chosen.column("item_id").to_pylist(), created_at=created_at)
    return Batch(chosen, manifest)


def sample_design(units: pa.Table, design: Design = PAPER_PRESET, *, where: Where = None,
                  release_fingerprint: str | None = None,
                  created_at: str | None = None) -> Batch:
    """sample() with a named design's arguments (by default the paper's)."""
    return sample(units, design.by, seed=design.seed, allocation=design.allocation,
                  size=design.size, per_stratum=design.per_stratum, where=where,
                  levels=design.levels, release_fingerprint=release_fingerprint,
                  created_at=created_at, design=design.name)


def _check_arguments(units: pa.Table, by: tuple[str, ...], allocation: str,
                     size: int | None, per_stratum, where: Where,
                     levels: dict[str, tuple]) -> None:
    _check_dimensions(units, by, where, levels)
    _check_allocation(by, allocation, size, per_stratum)


def _check_dimensions(units: pa.Table, by: tuple[str, ...], where: Where,
                      levels: dict[str, tuple]) -> None:
    if where is not None and not isinstance(where, Mapping):
        raise ValueError(f"where must be a mapping {{column: value or values}}, not a "
                         f"{type(where).__name__}")
    # Only scalar columns: a list (checks) can neither name a stratum nor filter.
    scalar = {f.name for f in units.schema if not pa.types.is_list(f.type)}
    for dim in (*by, *(where or ())):
        if dim not in scalar:
            raise ValueError(f"unknown or non-scalar unit column {dim!r} "
                             f"(expected one of {', '.join(sorted(scalar))})")
    if len(set(by)) != len(by):
        raise ValueError(f"a dimension repeats in by={list(by)}")
    if set(levels) - set(by):
        raise ValueError(f"levels given for {sorted(set(levels) - set(by))}, "
                         "which are not dimensions")


def _check_allocation(by: tuple[str, ...], allocation: str, size: int | None,
                      per_stratum) -> None:
    if allocation not in ALLOCATIONS:
        raise ValueError(f"allocation {allocation!r} (expected one of {', '.join(ALLOCATIONS)})")
    if (size is None) == (per_stratum is None):
        raise ValueError("give exactly one of size=N or per_stratum=K")
    if allocation == "proportional" and size is None:
        raise ValueError("proportional allocation needs size=N")
    quotas = per_stratum.values() if isinstance(per_stratum, Mapping) else [per_stratum]
    for value in (size,) if size is not None else quotas:
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"size / per_stratum must be non-negative integers, "
                             f"not {value!r}")
    if isinstance(per_stratum, Mapping):
        if "unit" not in by:
            raise ValueError("a per-unit per_stratum mapping needs 'unit' among the dimensions")
        unknown = set(per_stratum) - set(UNITS)
        if unknown:
            raise ValueError(f"unknown unit(s) {sorted(unknown)} in per_stratum "
                             f"(expected {', '.join(UNITS)})")


def _predicate(where: Where, levels: dict[str, tuple]) -> tuple[str, list]:
    """The WHERE clause and its parameters: the filter, then the fixed level domains."""
    parts, params = ["TRUE"], []
    if where is not None:
        for column, value in where.items():
            values = list(value) if isinstance(value, (list, tuple, set, frozenset)) else [value]
            parts.append(_in_clause(column, values))
            params += [v for v in values if v is not None]
    for column, values in levels.items():
        parts.append(_in_clause(column, list(values)))
        params += [v for v in values if v is not None]
    return " AND ".join(parts), params


def _in_clause(column: str, values: list) -> str:
    present = [v for v in values if v is not None]
    tests = [f'{identifier(column)} IN ({", ".join("?" for _ in present)})'] if present else []
    if len(present) < len(values):
        tests.append(f'{identifier(column)} IS NULL')
    return "(" + (" OR ".join(tests) or "FALSE") + ")"


def _strata(con: duckdb.DuckDBPyConnection, by: tuple[str, ...],
            levels: dict[str, tuple]) -> list[tuple[tuple, int]]:
    """(stratum key, available units), sorted: leveled dimensions in level order, the others
    by value. Leveled dimensions take every level, observed or not."""
    columns = ", ".join(identifier(dim) for dim in by)
    sql = (f"SELECT {columns}, count(*) FROM pool GROUP BY ALL" if by
           else "SELECT count(*) FROM pool")
    observed = {tuple(row[:-1]): row[-1] for row in con.sql(sql).fetchall()}
    fixed = [dim for dim in by if dim in levels]
    free = [dim for dim in by if dim not in levels]
    free_keys = sorted({tuple(key[by.index(dim)] for dim in free) for key in observed},
                       key=_value_order) if free else [()]
    keys = []
    for fixed_values in itertools.product(*(levels[dim] for dim in fixed)):
        for free_values in free_keys:
            value = dict(zip(fixed, fixed_values)) | dict(zip(free, free_values))
            keys.append(tuple(value[dim] for dim in by))
    return [(key, observed.get(key, 0)) for key in keys]


def _value_order(key: tuple) -> tuple:
    return tuple((value is None, str(value)) for value in key)


def _stratum_rank(strata: list[tuple[tuple, int]], seed: int) -> list[int]:
    """Stratum positions in seeded hash order, for leftover units and ties."""
    def digest(key: tuple) -> str:
        return hashlib.sha256(f"{seed}:{json.dumps(key, default=str)}".encode()).hexdigest()
    return sorted(range(len(strata)), key=lambda i: digest(strata[i][0]))


def _targets(strata: list[tuple[tuple, int]], by: tuple[str, ...], allocation: str,
             size: int | None, per_stratum, seed: int) -> list[int]:
    if isinstance(per_stratum, Mapping):
        position = by.index("unit")
        return [per_stratum[key[position]] for key, _ in strata]
    if per_stratum is not None:
        return [per_stratum] * len(strata)
    if not strata:
        return []
    rank = _stratum_rank(strata, seed)
    if allocation == "equal":
        base, extra = divmod(size, len(strata))
        targets = [base] * len(strata)
        for i in rank[:extra]:
            targets[i] += 1
        return targets
    return _largest_remainder(size, [available for _, available in strata], rank)


def _largest_remainder(size: int, weights: list[int], rank: list[int]) -> list[int]:
    """size × weight / total, rounded so the targets sum to size exactly (Hamilton)."""
    total = sum(weights)
    if total == 0:
        return [0] * len(weights)
    shares = [divmod(size * w, total) for w in weights]
    targets = [quotient for quotient, _ in shares]
    order = {position: r for r, position in enumerate(rank)}
    by_remainder = sorted(range(len(weights)), key=lambda i: (-shares[i][1], order[i]))
    for i in by_remainder[:size - sum(targets)]:
        targets[i] += 1
    return targets


def _draw(con: duckdb.DuckDBPyConnection, schema: pa.Schema, by: tuple[str, ...],
          strata: list[tuple[tuple, int]], targets: list[int]) -> pa.Table:
    """The first `target` units of each stratum in draw order, all in draw order."""
    quotas = {dim: pa.array([key[i] for key, _ in strata], schema.field(dim).type)
              for i, dim in enumerate(by)}
    quotas["target"] = pa.array(targets, pa.int64())
    con.register("quotas", pa.table(quotas))
    partition = f"PARTITION BY {', '.join(identifier(d) for d in by)}" if by else ""
    join = " AND ".join(f"p.{identifier(d)} IS NOT DISTINCT FROM q.{identifier(d)}"
                        for d in by) or "TRUE"
    return con.sql(f"""
        SELECT p.* EXCLUDE (draw, k)
        FROM (SELECT *, row_number() OVER ({partition} ORDER BY draw, item_id) AS k
              FROM pool) p
        JOIN quotas q ON {join}
        WHERE p.k <= q.target
        ORDER BY p.draw, p.item_id""").to_arrow_table()


# ------------------------------------------------------------------------- manifest

def _counts(by: tuple[str, ...], strata: list[tuple[tuple, int]],
            targets: list[int]) -> list[dict]:
    """Per stratum: what it has, what the design asked, what it gave, what is missing."""
    return [{"stratum": dict(zip(by, key)), "available": available, "target": target,
             "chosen": min(available, target), "shortfall": target - min(available, target)}
            for (key, available), target in zip(strata, targets)]


def _jsonable(value: object) -> object:
    """A `where` mapping as JSON; sets sorted, so the batch id does not depend on their
    iteration order."""
    if not isinstance(value, Mapping):
        return value
    return {k: sorted(v, key=str) if isinstance(v, (set, frozenset))
            else list(v) if isinstance(v, (list, tuple)) else v for k, v in value.items()}


def _manifest(*, created_at: str | None, counts: list[dict], **content) -> dict:
    """The batch manifest. batch_id hashes everything except created_at, so the same design
    on the same release gets the same id whenever it is drawn."""
    totals = {name: sum(c[name] for c in counts)
              for name in ("available", "target", "chosen", "shortfall")}
    body = {**content, "counts": counts, "totals": totals}
    canonical = json.dumps(body, sort_keys=True, ensure_ascii=False, default=str)
    stamp = created_at or dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    return {"batch_id": hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16],
            **body, "created_at": stamp}


def write_manifest(path: Path, manifest: dict) -> Path:
    """Write a batch manifest as JSON, atomically."""
    with staged_file(Path(path)) as staging:
        write_json(staging, manifest)
    return Path(path)


# ------------------------------------------------------------------------- unit texts

_TEXTS_QUERY = """
SELECT u.item_id, u.unit, u.language, u.languages, r.question, r.source_question, r.answer,
       r.source_answer, r.question_language, r.answer_language,
       CASE WHEN u.unit = 'paragraph' THEN r.candidates[u.candidate_index + 1] END AS paragraph,
       CASE WHEN u.unit = 'instance' THEN list_filter(r.candidates, lambda c: list_contains(
           list_transform(r.supporting_facts, lambda f: f.paragraph_id), c.paragraph_id))
       END AS gold
FROM _review_chosen u JOIN release r ON r.rid = u.rid
ORDER BY u._position
"""


def unit_texts(release: Release, units: pa.Table) -> list[dict]:
    """What an annotator reads for each unit, in the order of `units`: the instance context
    (question, answer, paragraph title, English and translated) and the unit's source and
    translation, sentences numbered so alignment can be judged. The translated question and
    answer appear in the context only when written in one of the unit's `languages` (or
    English): a unit is routed to annotators who read those, and nothing else. One
    set-based query fetches the rows; only the chosen units are formatted."""
    chosen = units.select(["item_id", "rid", "unit", "candidate_index", "language",
                           "languages"])
    chosen = chosen.append_column("_position", pa.array(range(chosen.num_rows), pa.int64()))
    mapped = release.layout.has("aligned")
    with release.con.cursor() as con:   # its own cursor, as build_units
        con.register("_review_chosen", chosen)
        rows = con.sql(_MAPPED_TEXTS_QUERY if mapped else _TEXTS_QUERY
                       ).to_arrow_table().to_pylist()
    return [_mapped_texts(row) if mapped else _texts(row) for row in rows]


# A mapped release's unit: its column's text beside the source language's.
_MAPPED_TEXTS_QUERY = """
SELECT c.item_id, c.unit, c.language, u.src, u.tgt
FROM _review_chosen c JOIN units u ON u.rid = c.rid AND u.paragraph_id = c.unit
ORDER BY c._position
"""
_NO_CONTEXT = "—"   # a mapped release's unit stands alone: no question, answer or title


def _mapped_texts(row: dict) -> dict:
    return {"item_id": row["item_id"], "unit": row["unit"],
            "language": _language_label(row["language"]),
            **{key: _NO_CONTEXT for key in ("question", "source_question", "answer",
                                            "source_answer", "title", "source_title")},
            "source_text": visible(row["src"]), "translation_text": visible(row["tgt"])}


def _texts(row: dict) -> dict:
    paragraph = row["paragraph"] or {}
    source, translation = _unit_sides(row)
    readable = set(row["languages"] or ()) | {"en"}
    return {"item_id": row["item_id"], "unit": row["unit"],
            "language": _language_label(row["language"]),
            "question": _if_readable(row["question"], row["question_language"], readable),
            "source_question": visible(row["source_question"]),
            "answer": _if_readable(row["answer"], row["answer_language"], readable),
            "source_answer": visible(row["source_answer"]),
            "title": paragraph.get("title") or "",
            "source_title": paragraph.get("source_title") or "",
            "source_text": source, "translation_text": translation}


def _if_readable(text: str | None, language: str | None, readable: set[str]) -> str:
    if (language or "und") in readable:
        return visible(text)
    return f"(in {_language_label(language)}: not part of this unit)"


def _unit_sides(row: dict) -> tuple[str, str]:
    unit = row["unit"]
    if unit == "question":
        return visible(row["source_question"]), visible(row["question"])
    if unit == "answer":
        return visible(row["source_answer"]), visible(row["answer"])
    if unit == "paragraph":
        p = row["paragraph"] or {}
        return (_paragraph(p.get("source_title"), p.get("source_sentences")),
                _paragraph(p.get("title"), p.get("sentences")))
    gold = row["gold"] or []
    head = "Q: {}\nA: {}"
    return ("\n\n".join([head.format(visible(row["source_question"]),
                                       visible(row["source_answer"]))]
                        + [_paragraph(c["source_title"], c["source_sentences"]) for c in gold]),
            "\n\n".join([head.format(visible(row["question"]), visible(row["answer"]))]
                        + [_paragraph(c["title"], c["sentences"]) for c in gold]))


def _paragraph(title: str | None, sentences: list | None) -> str:
    lines = [title or ""] + [f"[{i}] {visible(s)}" for i, s in enumerate(sentences or [])]
    return "\n".join(lines)


# Characters that show nothing although Python does not count them as whitespace.
_INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff"


def visible(text: str | None) -> str:
    """The text as the release holds it, or, when it would show as an empty line (missing,
    empty, or only whitespace such as U+3000), a marker naming what is there, so an
    annotator can tell a blank in the data from a display fault."""
    if text and any(not c.isspace() and c not in _INVISIBLE for c in text):
        return text
    if not text:
        return "(blank in the release: empty)"
    points = " ".join(dict.fromkeys(f"U+{ord(c):04X}" for c in text))
    return f"(blank in the release: {len(text)} character(s), {points})"


def _language_label(code: str | None) -> str:
    language = BY_CODE.get(code or "")
    return f"{language.name} ({code})" if language else (code or "unknown")
