"""Translation-quality heuristics: the damage machine translation does without breaking
structure (issue 12). Seven whole-release checks, review level by default:

number_mismatch            a numeral of the source changed in the translation (by value, any
                           digit system; `textsignals.number_mismatch`)
length_ratio_outlier       log(len translation / len source) a robust outlier within its
                           language and unit, calibrated from the release itself
repetition_loop            a unit repeated in a row more often than in the source
near_source_copy           a translation within a similarity of its English source, not equal
mojibake                   text ftfy repairs (UTF-8 read in a single-byte codec)
unbalanced_brackets        brackets or quotes balanced in the source, not in the translation
terminal_punctuation_mismatch  a question that no longer ends as one, a dropped final mark…

Units: every non-English unit of `units` that is one text (audit/io/units.LEAF_UNITS: a
sentence (paragraph_id, k), title (paragraph_id, NULL), question, answer or a parallel
dataset's text (NULL, NULL)) with a non-blank English source that it does not equal byte
for byte (an equal one is exact_source_copy's). Terminal punctuation judges units that end
as a sentence or question does (TERMINAL_UNITS): titles and answers are names and phrases.

Speed: XHotpotQA+ has 24 views per source sharing one context, so the contexts are grouped
first (the rows of a source with equal candidate lists share one set of units), and every
signal is computed once per DISTINCT (language, source, translation) pair, in Python only for
the pairs the cache lacks and only the signals SQL has not ruled out, and cached by the
sha256 of the pair (`<cache>/heuristics/signals/<version>/`, audit.io.signal_cache.SignalCache).
The release's units (keys, no text) are cached by the sha256 of its files, so a warm rescan
reads no candidate list. From PARALLEL_FROM missing pairs on, the scan starts their
signals in two forked child processes (`start`, `signal_cache.Background`) before the language
layer reads its texts, and the first heuristic check collects them. Thresholds are applied
in SQL, so a policy that tunes them reuses the cache. Length calibration is set-based SQL over the distinct pairs. Measured by
`bench/heuristics.py --speed` and `bench/scan.py`.
"""

from __future__ import annotations

import hashlib
import time
import unicodedata
import weakref
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from .. import settings
from ..io import signal_cache
from ..io.units import LEAF_UNITS, kinds_sql
from ..language import scripts
from ..languages import CODES
from ..sql import arrays, macros
from ..sql.safe import literal
from . import signals as textsignals

if TYPE_CHECKING:
    from ..io.model import Release

TARGETS = tuple(code for code in CODES if code != "en")
# Similarities below this are not kept (a near copy threshold must be at least this).
MIN_KEPT_SIMILARITY = 0.5
LENGTH_BINS = 4            # source-length quantile bins per language and unit
PARALLEL_FROM = 20_000     # pairs: compute misses in two processes from this many on
BATCH = 250_000            # pairs computed and cached at a time
SIGNALS_VERSION = "heur-2"
# As a signal layer (`audit.checks.layers.SignalLayer`) of the seven heuristic checks.
NAME, VERSION = "heuristics", SIGNALS_VERSION
THREADED = False

# ------------------------------------------------------------------ the signals per pair

SIGNAL_SCHEMA = pa.schema([
    ("key", pa.string()), ("len_s", pa.int32()), ("len_t", pa.int32()),
    ("category", pa.string()),
    ("num_missing", pa.string()), ("num_extra", pa.string()), ("num_evidence", pa.string()),
    ("num_changed", pa.int16()),
    ("loop_unit", pa.string()), ("loop_count", pa.int16()), ("loop_span", pa.string()),
    ("source_loop", pa.int16()),
    ("similarity", pa.float64()),
    ("moji_codec", pa.string()), ("moji_bad", pa.string()), ("moji_good", pa.string()),
    ("moji_repaired", pa.string()),
    ("br_kind", pa.string()), ("br_mark", pa.string()), ("br_evidence", pa.string()),
    ("term_category", pa.string()), ("term_source", pa.string()),
    ("term_translation", pa.string()), ("term_tail", pa.string()),
])


# What SQL decides a pair cannot have (see `_gates_sql`). Similarity has no gate: its own
# bound (`similarity_bound`, ASCII counts in C) is stricter and cheaper than a regex in SQL.
GATES = ("g_numbers", "g_loop", "g_mojibake", "g_brackets", "g_terminal")


def pair_signals(lang: str, source: str, translation: str, gates: dict | None = None) -> dict:
    """Every signal of one pair (the row the cache holds). `gates` (see `_gates_sql`) skips
    the signals SQL has ruled out; without it every signal is computed."""
    gate = (lambda name: gates[name]) if gates is not None else (lambda name: True)
    row: dict = {"len_s": len(source), "len_t": len(translation)}
    numbers = gate("g_numbers") and textsignals.number_mismatch(source, translation, lang)
    if numbers:
        row.update(num_missing=", ".join(numbers.missing), num_extra=", ".join(numbers.extra),
                   num_evidence=numbers.evidence, num_changed=len(numbers.missing))
    if gate("g_loop") and textsignals.may_loop(translation, lang):
        loop = textsignals.longest_loop(translation, lang)
        if loop:
            ours = textsignals.longest_loop(source, "en")
            row.update(loop_unit=loop.unit, loop_count=loop.count, loop_span=loop.span,
                       source_loop=ours.count if ours else 1)
    if textsignals.similarity_bound(source, translation) >= MIN_KEPT_SIMILARITY:
        similarity = textsignals.similarity(source, translation)
        if similarity >= MIN_KEPT_SIMILARITY:
            row["similarity"] = similarity
    broken = gate("g_mojibake") and textsignals.mojibake(translation, lang)
    if broken:
        row.update(moji_codec=broken.codec, moji_bad=broken.bad, moji_good=broken.good,
                   moji_repaired=broken.repaired)
    brackets = gate("g_brackets") and textsignals.unbalanced(source, translation)
    if brackets:
        row.update(br_kind=brackets.kind, br_mark=brackets.mark,
                   br_evidence=brackets.evidence)
    ending = gate("g_terminal") and textsignals.terminal_mismatch(source, translation, lang)
    if ending:
        stripped = translation.rstrip(textsignals.CLOSING)
        row.update(term_category=ending[0], term_source=ending[1], term_translation=ending[2],
                   term_tail=translation[max(0, len(stripped) - 12):] or None)
    return row


COLUMNS = ("key", "lang", "src", "tgt", "category") + GATES


def signal_table(columns: dict[str, list]) -> pa.Table:
    """Signal rows for pairs given as columns (COLUMNS: key, lang, src, tgt, category and
    the gates)."""
    n = len(columns["key"])
    # Column-wise: a pair sets few signals, so each is written where it is set.
    values = {f.name: [None] * n for f in SIGNAL_SCHEMA if f.name not in ("key", "category")}
    for i, (lang, src, tgt, *gates) in enumerate(zip(
            columns["lang"], columns["src"], columns["tgt"], *(columns[g] for g in GATES))):
        for name, value in pair_signals(lang, src, tgt, dict(zip(GATES, gates))).items():
            values[name][i] = value
    return arrays.table({"key": columns["key"], "category": columns["category"], **values},
                        SIGNAL_SCHEMA)


@lru_cache(maxsize=1)
def cache_version() -> str:
    """The rules' code, the cached columns and what they depend on: a change to any of them
    never reads stale rows."""
    import inspect
    from importlib.metadata import version
    # The SQL macros too: a pair's copy category is copy_category()'s, cached with it.
    rules = hashlib.sha256(Path(textsignals.__file__).read_bytes()
                           + inspect.getsource(pair_signals).encode("utf-8")
                           + str(SIGNAL_SCHEMA).encode("utf-8")
                           + macros.MACROS.encode("utf-8")).hexdigest()[:12]
    return (f"{SIGNALS_VERSION}-{rules}-ftfy{version('ftfy')}-rapidfuzz{version('rapidfuzz')}"
            f"-unicode{unicodedata.unidata_version}-icu{scripts._unicode_version()}")


# ---------------------------------------------------------------------- the mojibake gate

@lru_cache(maxsize=1)
def mojibake_gate() -> str:
    """An RE2 class pair that every single-byte mis-decoding of UTF-8 leaves behind: a
    character standing for a lead byte (0xC2–0xF4) followed by one standing for a
    continuation byte (0x80–0xBF), in one of ftfy's codecs. Text without such a pair
    cannot be the mojibake ftfy repairs, and skips it (most text: CJK, Indic, Thai,
    Hangul, plain ASCII)."""
    import ftfy.bad_codecs  # noqa: F401
    from ftfy.chardata import CHARMAP_ENCODINGS
    alternatives = []
    for codec in CHARMAP_ENCODINGS:
        leads = bytes(range(0xC2, 0xF5)).decode(codec)
        follows = bytes(range(0x80, 0xC0)).decode(codec)
        alternatives.append(f"[{_re2_class(leads)}][{_re2_class(follows)}]")
    return "|".join(alternatives)


# Every Zawgyi mark holds one of these (`textsignals.ZAWGYI`).
ZAWGYI_CHARS = "\u1031" + "".join(map(chr, range(0x1060, 0x1098)))


def _re2_class(chars: str) -> str:
    return "".join(f"\\x{{{ord(ch):x}}}" for ch in sorted(set(chars)))


# ------------------------------------------------------------ units of a whole release

# A translation without a letter or digit (a placeholder, a zero-width space) is for the
# blank, placeholder and Unicode checks; an equal one is exact_source_copy's.
_JUDGED = ("lang <> 'en' AND NOT is_blank(src) AND src <> tgt AND "
           r"regexp_matches(tgt, '[\p{L}\p{N}]')")

# The views of one source share its context (CONTEXT_NUMBERING): titles and sentences are
# units of a context (owner: its number, `shared`), questions, answers and a parallel
# dataset's texts of a row (owner: its rid).
_ROWS = """
CREATE OR REPLACE TEMP TABLE heur_rows AS SELECT rid, ctx AS rep, id, source_split FROM views
"""
_TEXT_UNITS = f"""
CREATE OR REPLACE TEMP TABLE heur_text_units AS
SELECT coalesce(ctx, rid) AS owner, ctx IS NOT NULL AS shared, paragraph_id, sentence_index,
       unit, lang, src, tgt
FROM units WHERE unit IN {kinds_sql(LEAF_UNITS)} AND {_JUDGED};
CREATE OR REPLACE TEMP TABLE heur_pairs AS
SELECT lang, src, tgt, sha256(lang || chr(31) || src || chr(31) || tgt) AS key
FROM (SELECT DISTINCT lang, src, tgt FROM heur_text_units)
"""
# Each distinct pair is hashed once and its key joined to its units (XHotpotQA+: 308,272
# pairs in 2.2 M units; hashing every unit cost twice the grouping and the join).
_KEYED_UNITS = """
SELECT u.owner, u.shared, u.paragraph_id, u.sentence_index, u.unit, u.lang, p.key
FROM heur_text_units u JOIN heur_pairs p USING (lang, src, tgt)"""


def _index(release: "Release", root: Path) -> bool:
    """Tables heur_units (every judged unit and its pair key, no text) and heur_rows (rid →
    representative row of its context, id, split), remembered per release content
    (`signal_cache.unit_index`): a warm rescan reads no candidate list. Returns True when
    the units were built now (heur_text_units exists)."""
    def build() -> None:
        _text_units(release.con)
        release.con.execute(f"CREATE OR REPLACE TEMP TABLE heur_units AS {_KEYED_UNITS}")
    return signal_cache.unit_index(release, root, ["heur_units", "heur_rows"], build,
                                   _ROWS, _TEXT_UNITS, _KEYED_UNITS)


def _text_units(con) -> None:
    con.execute(_ROWS)
    con.execute(_TEXT_UNITS)


# What each signal needs, decided in SQL so Python computes only the signals that can exist:
# digits on both sides, a word repeated (any text written without spaces), the mojibake
# gate, a bracket or quote, final characters that differ (or an ellipsis). A text's last
# character before its closing marks is found by one end-anchored regex: rtrim(text, marks)
# and right() read the whole text three times over (10x slower on XHotpotQA+'s pairs).
def _gates_sql() -> str:
    unspaced = "(" + ", ".join(literal(c) for c in sorted(textsignals.UNSPACED)) + ")"
    marks = literal("[" + _re2_class("".join(o + c for o, c in textsignals.BRACKETS
                                             + textsignals.QUOTES)
                                     + "".join(textsignals.COUNTED_QUOTES)
                                     + textsignals.SYMMETRIC_QUOTES) + "]")
    closing = _re2_class(textsignals.CLOSING)
    last = literal(f"([^{closing}])[{closing}]*$")
    ellipsis = literal(f"[.][.][{closing}]*$")
    return rf"""
        (regexp_matches(src, '\p{{Nd}}') AND regexp_matches(tgt, '\p{{Nd}}')) AS g_numbers,
        (lang IN {unspaced} OR (SELECT len(words) - len(list_distinct(words)) >= 2 FROM
            (SELECT string_split_regex(lower(tgt), '[\s\p{{P}}\p{{S}}]+') AS words)))
            AS g_loop,
        regexp_matches(tgt, {literal(mojibake_gate() + "|[" + _re2_class(ZAWGYI_CHARS) + "]")})
            AS g_mojibake,
        (regexp_matches(src, {marks}) OR regexp_matches(tgt, {marks})) AS g_brackets,
        (regexp_extract(src, {last}, 1) <> regexp_extract(tgt, {last}, 1)
            OR regexp_matches(tgt, {ellipsis})) AS g_terminal"""


@dataclass
class Prepared:
    """What `prepare` did: distinct pairs, how many were computed now, seconds per phase."""
    units: int = 0
    pairs: int = 0
    computed: int = 0
    seconds: dict = field(default_factory=dict)


_PREPARED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
# A pair has a finding of some check only where one of these is set (length aside).
_ANY_SIGNAL = ("s.num_changed IS NOT NULL OR s.loop_count IS NOT NULL OR s.similarity IS NOT "
               "NULL OR s.moji_bad IS NOT NULL OR s.br_kind IS NOT NULL OR "
               "s.term_category IS NOT NULL")


def prepare(release: "Release", cache_dir: Path | None = None,
            force: bool = False) -> Prepared:
    """Tables heur_rows, heur_units (see `_index`), heur_signals (the signals of every
    distinct pair) and heur_found (the units with some signal) on the release's connection,
    once per connection unless `force`; what `start` began is collected."""
    con = release.con
    if con in _PREPARED and not force:
        return _PREPARED[con]
    pending = _STARTED.pop(con, None)
    if pending is None or force:
        if pending is not None:
            pending.background.cancel()
        _PREPARED.pop(con, None)
        start(release, cache_dir)
        pending = _STARTED.pop(con, None)
        if pending is None:        # computed already: few pairs were missing
            return _PREPARED[con]
    return _finish(con, pending.done, pending.cache, pending.root, pending.background)


def start(release: "Release", cache_dir: Path | None = None) -> None:
    """Begin `prepare` so that it overlaps what the scan does next (the language layer):
    from PARALLEL_FROM missing pairs on, two child processes compute their signals
    meanwhile (`signal_cache.Background`) and `prepare` collects them; fewer are computed now."""
    con = release.con
    if con in _PREPARED or con in _STARTED:
        return
    root = Path(cache_dir) if cache_dir is not None else settings.cache_dir("heuristics")
    done, cache = _lookup(release, root)
    if done.computed < PARALLEL_FROM:
        _finish(con, done, cache, root, None)
        return
    _STARTED[con] = _Pending(done, cache, root, signal_cache.Background(
        con, "SELECT * FROM heur_todo", done.computed, COLUMNS, signal_table, BATCH, root))


@dataclass
class _Pending:
    """A `prepare` that `start` began: the lookup done, the misses computing."""
    done: Prepared
    cache: "signal_cache.SignalCache"
    root: Path
    background: "signal_cache.Background"


_STARTED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _lookup(release: "Release", root: Path) -> tuple[Prepared, "signal_cache.SignalCache"]:
    """The units, the cached signals (heur_signals) and, when some pair's are missing, the
    temp table heur_todo: each missing pair once, with its texts and gates."""
    con = release.con
    done = Prepared()
    clock = time.perf_counter()
    texts = _index(release, root)
    done.seconds["units"] = time.perf_counter() - clock
    cache = signal_cache.SignalCache(root, "signals", cache_version(), SIGNAL_SCHEMA)
    with signal_cache.cache_lock(root):
        clock = time.perf_counter()
        done.pairs, done.computed = signal_cache.cached_signals(
            con, cache, "heur_signals", "SELECT DISTINCT key FROM heur_units", "heur_missing")
        done.seconds["lookup"] = time.perf_counter() - clock
    if done.computed:
        clock = time.perf_counter()
        if not texts:      # the index was cached but some signals are not
            _text_units(con)
        # The gates of each missing pair once (the regex gates are the costly part).
        con.execute(f"""CREATE OR REPLACE TEMP TABLE heur_todo AS
            SELECT key, lang, src, tgt, copy_category(tgt) AS category, {_gates_sql()}
            FROM heur_pairs SEMI JOIN heur_missing USING (key)""")
        done.seconds["texts"] = time.perf_counter() - clock
    con.execute("DROP TABLE IF EXISTS heur_missing; DROP TABLE IF EXISTS heur_text_units; "
                "DROP TABLE IF EXISTS heur_pairs")
    return done, cache


def _computed_here(con, count: int):
    """The signals of heur_todo's rows, BATCH at a time, in this process."""
    for first in range(0, count, BATCH):
        rows = con.sql("SELECT * FROM heur_todo WHERE rowid >= ? AND rowid < ?",
                       params=[first, first + BATCH]).to_arrow_table()
        yield signal_table({name: arrays.values(rows.column(name)) for name in COLUMNS})


def _finish(con, done: Prepared, cache: "signal_cache.SignalCache", root: Path,
            background: "signal_cache.Background | None") -> Prepared:
    """The missing signals (from `background`, else computed here) into heur_signals and
    the cache, then heur_found."""
    if done.computed:
        clock = time.perf_counter()   # started in the background: the wait for the children
        with signal_cache.cache_lock(root):
            # A batch at a time: millions of pairs are never all held at once, and each
            # batch is cached as soon as it is read; pairs another scan cached since the
            # lookup are not cached twice.
            for table in (background.tables() if background is not None
                          else _computed_here(con, done.computed)):
                con.register("new_signals", table)
                con.execute("INSERT INTO heur_signals SELECT * FROM new_signals")
                cached = cache.sql()
                cache.append(table if cached is None else con.sql(
                    f"SELECT n.* FROM new_signals n ANTI JOIN {cached} c USING (key)"
                ).to_arrow_table())
                con.unregister("new_signals")
        con.execute("DROP TABLE heur_todo")
        done.seconds["compute"] = time.perf_counter() - clock
    clock = time.perf_counter()
    con.execute(f"""CREATE OR REPLACE TEMP TABLE heur_found AS
        SELECT u.*, s.* EXCLUDE (key) FROM heur_units u JOIN heur_signals s USING (key)
        WHERE {_ANY_SIGNAL}""")
    done.seconds["found"] = time.perf_counter() - clock
    done.units = con.sql("SELECT count(*) FROM heur_units").fetchall()[0][0]
    done.seconds["total"] = sum(done.seconds.values())
    _PREPARED[con] = done
    return done


def discard(con) -> Prepared | None:
    """Drop what `prepare` put on a connection and return what it did (see
    `langid.discard`)."""
    pending = _STARTED.pop(con, None)
    if pending is not None:      # the scan stopped before collecting: the children go
        pending.background.cancel()
    for table in ("heur_rows", "heur_units", "heur_signals", "heur_found", "heur_todo"):
        con.execute(f"DROP TABLE IF EXISTS {table}")
    return _PREPARED.pop(con, None)


# ------------------------------------------------------------------------ the checks


