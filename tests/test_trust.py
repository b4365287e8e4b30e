"""The trust boundary: outside text never becomes markup, outside names never become SQL,
and the workbench serves only releases under its data roots."""

from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import record, source, view
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from test_inputs import cli

from audit.checks import dsl, hiding, model, registry
from audit.controls import kind as controls_kind
from audit.engine import policy, scan
from audit.errors import InputError
from audit.io import release as readers
from audit.reports import render
from audit.sql import safe as sqlsafe
from devkit import synth
from workbench.serving import NotServed, served_directory, served_file, served_files, stamp

HOSTILE = ["<script>alert(1)</script>", '<img src="https://evil.example/x.png">',
           "<style>.badge{display:none}</style>", "[link](https://evil.example)",
           "![img](https://evil.example/i.png)", "https://evil.example/a", "www.evil.example",
           "bob@evil.example", "**bold** _em_ `code` $x^2$", "&lt;b&gt; &#60;i&#62;",
           "abc\u202etxt.exe", "zero\u200bwidth\u2060joined\ufeff", "line\n\nbreak\r\n# heading",
           "<a href='javascript:alert(1)'>x</a>", "\u0000nul\u0007bell\u0085next"]
# Text built from the pieces that matter most here, or any text at all.
PIECES = list("<>&\"'`*_[]()!#:/.@$\\|~-+={}\n\r\t ") + [
    "https://", "www.", "javascript:", "<script>", "<img src=x>", "<style>", "&lt;", "&#60;",
    "\u202e", "\u2066", "\u200b", "\u200c", "\u200d", "\u200f", "\u061c", "\ufeff", "\u2028",
    "\x00", "\x85", "a", "é", "ب", "中", "evil.example", "bob@x.org"]
TEXT = st.lists(st.sampled_from(PIECES), max_size=30).map("".join) | st.text(max_size=40)


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def parsed(markup: str) -> Tags:
    parser = Tags()
    parser.feed(markup)
    parser.close()
    return parser


# ------------------------------------------------------------------------ rendering

@settings(max_examples=400, deadline=None)
@given(TEXT, st.sampled_from([None, "ar", "fa", "en", '"><script>']))
def test_rendered_text_yields_only_our_own_tags_and_shows_every_character(value, language):
    markup = render.block(render.paragraph(value, language), render.badge(value, "review"))
    assert "\n" not in markup and "\r" not in markup
    found = parsed(markup)
    assert {tag for tag, _ in found.tags} <= {"div", "span"}
    for tag, attrs in found.tags:
        assert set(attrs) <= {"class", "title", "lang", "dir"}
        assert not any(a in (attrs.get("class") or "") for a in "<>\"'")
    shown = "".join(found.text)
    # Every character is there, visibly: hiding/reordering ones as their ⟨U+…⟩ tokens; a
    # blank text (empty or whitespace only) as a note naming its code points.
    blank = render.is_blank(value)
    assert shown == (render.blank_note(value) if blank else render.visible(value)) \
        + render.visible(value)
    if blank and value:
        assert f"U+{ord(value[0]):04X}" in shown
    assert not any(render.controls.kind(ch) not in (None, "orthographic") for ch in shown)


@settings(max_examples=400, deadline=None)
@given(TEXT)
def test_messages_show_outside_values_verbatim_in_code_spans(value):
    markdown = render.message("Cannot open {path} now", path=value)
    tokens = MarkdownIt("commonmark").parse(markdown)
    inline = [t for t in tokens if t.type == "inline"]
    assert len(inline) == 1
    kinds = [child.type for child in inline[0].children]
    assert kinds == ["text", "code_inline", "text"]
    shown = render.visible(value).replace("\r\n", "⏎").replace("\n", "⏎").replace("\r", "⏎")
    code = inline[0].children[1].content
    assert code == (shown if shown.strip(" ") else f" {shown} ")


@pytest.mark.parametrize("payload", HOSTILE)
def test_hostile_strings_render_inert(payload):
    markup = render.block(render.paragraph(payload, "en"))
    tags = {tag for tag, _ in parsed(markup).tags}
    assert tags <= {"div", "span"}
    assert "<script" not in markup and "<img" not in markup and "<style" not in markup


def test_bidi_and_zero_width_characters_become_visible_tokens_with_names():
    markup = render.text("abc\u202etxt.exe\u200b\u200c")
    assert 'title="U+202E RIGHT-TO-LEFT OVERRIDE"' in markup
    assert 'class="cc cc-review"' in markup and "⟨U+202E⟩" in markup
    assert 'class="cc cc-info"' in markup and "⟨U+200B⟩" in markup
    assert markup.endswith("\u200c") and "U+200C" not in markup
    assert render.visible("a\u2067b") == "a⟨U+2067⟩b"
    assert render.chart_label('<a href="https://x">y</a>') == \
        "&lt;a href=&quot;https://x&quot;&gt;y&lt;/a&gt;"


@pytest.mark.parametrize("word", [
    "می\u200cخواهم",                 # Persian ZWNJ: "I want"
    "کتاب\u200cها",                  # Persian/Urdu plural with ZWNJ
    "क्\u200dष",                     # Devanagari ZWJ
    "\u200fשלום\u200e abc",           # RLM, LRM
    "\u061cالعربية",                  # ALM
])
def test_orthographic_joiners_and_marks_render_as_the_writing_expects(word):
    """ZWNJ, ZWJ, LRM, RLM and ALM are spelling: shown as themselves, with no marker, in
    HTML, in plain text and in our messages."""
    assert render.text(word) == word
    assert render.visible(word) == word
    assert 'class="cc' not in render.paragraph(word, "fa")
    assert render.literal(word) == f"` {word} `"


def test_evidence_is_highlighted_inside_the_escaped_text():
    markup = render.paragraph("the <b>the</b> the", "en", evidence="<b>")
    assert markup.count('<mark class="ev">&#60;b&#62;</mark>') == 1


MARK_OPEN, MARK_CLOSE = '<mark class="ev">', "</mark>"


def unmarked(markup: str) -> str:
    return markup.replace(MARK_OPEN, "").replace(MARK_CLOSE, "")


def marked(markup: str) -> list[str]:
    """The raw text inside each mark."""
    return [html.unescape(re.sub(r"<[^>]+>", "", inside)) for inside in
            re.findall(re.escape(MARK_OPEN) + "(.*?)" + re.escape(MARK_CLOSE), markup)]


@settings(max_examples=500, deadline=None)
@given(TEXT, st.data())
def test_highlighting_never_changes_the_text_it_marks(value, data):
    """For any text and any evidence (a piece of the text, or anything): the marked text
    with its marks removed is the escaped text, and the one mark holds the evidence."""
    start = data.draw(st.integers(0, len(value)))
    evidence = data.draw(st.sampled_from([value[start:data.draw(st.integers(start, len(value)))]])
                         | TEXT | st.sampled_from(list("0123456789#&;,.4")))
    markup = render.paragraph(value, "sv", evidence=evidence)
    assert unmarked(markup) == render.paragraph(value, "sv")
    if render.is_blank(value):       # shown as its note, naming its code points: no mark
        assert markup == render.missing(render.blank_note(value))
    elif evidence and evidence in value:
        begin, end = render.locate(value, evidence)
        assert value[begin:end] == evidence
        # The one mark holds the evidence, widened to the words it starts and ends in.
        start, stop = render._whole_words(value, begin, end)
        assert marked(markup) == [render.visible(value[start:stop])]
        assert start <= begin and stop >= end
    else:
        assert MARK_OPEN not in markup


def test_a_number_is_marked_once_where_it_stands_and_no_entity_breaks():
    """The Swedish sentence of the report: evidence "4" marked "&#44;", "&#46;" and 1945."""
    value = "Radio 4 sände 1945, som möjliggör, efter en uppgörelse."
    markup = render.paragraph(value, "sv", evidence="4")
    assert markup.count(MARK_OPEN) == 1
    assert f"Radio {MARK_OPEN}4{MARK_CLOSE} sände" in markup
    assert "1945&#44;" in markup and "möjliggör&#44;" in markup and "uppgörelse&#46;" in markup
    shown = "".join(parsed(markup).text)
    assert shown == value


@pytest.mark.parametrize(("value", "evidence", "before"), [
    ("Kandydował na prezydenta, a prezydenta wybrano.", "a prezydenta", "Kandydował na prezydenta, "),
    ("این نامساوی است و آن مساوی است", "مساوی", "این نامساوی است و آن "),
    ("x=11.624 und 1.624 Meter", "1.624", "x=11.624 und "),
    ("Der See (tief", "(tief", "Der See "),          # an edge that is no word character
    ("東京都東京", "東京", ""),                        # no spaces: the first occurrence
    ("nana na", "na", "nana "),
])
def test_a_word_is_marked_as_a_whole_word(value, evidence, before):
    markup = render.paragraph(value, None, evidence=evidence)
    assert marked(markup) == [evidence]
    assert render.locate(value, evidence) == (len(before), len(before) + len(evidence))


@pytest.mark.parametrize(("value", "evidence", "shown"), [
    ("Kandydował na prezydenta.", "a prezydenta", "na prezydenta"),   # issue 24: "n|a"
    ("این دو نامساوی است", "مساوی", "نامساوی"),
    ("Die Unabhängigkeit kam", "hängig", "Unabhängigkeit"),
    ("x=11.624 m", "1.624", "11.624"),
    ("東京都東京", "京都", "京都"),                       # no spaces: no word edge to find
    ("ในกรุงเทพมหานคร", "เทพ", "เทพ"),
])
def test_a_mark_never_starts_or_ends_mid_word(value, evidence, shown):
    assert marked(render.paragraph(value, None, evidence=evidence)) == [shown]


def test_a_count_and_its_noun_agree():
    assert [render.plural(n, "entry") for n in (0, 1, 2, 1234)] == [
        "0 entries", "1 entry", "2 entries", "1,234 entries"]
    assert (render.plural(1, "matched unit"), render.plural(3, "matched unit")) == (
        "1 matched unit", "3 matched units")
    assert (render.plural(2, "day"), render.plural(2, "box"), render.plural(2, "match")) == (
        "2 days", "2 boxes", "2 matches")
    assert render.plural(2, "annotation or draft", "annotations or drafts") == (
        "2 annotations or drafts")


def test_a_hotpotqa_sentence_is_shown_without_its_joining_space():
    assert render.source_sentence(" The band formed in 1990.") == "The band formed in 1990."
    assert render.source_sentence(None) is None


def test_a_word_found_only_inside_another_is_still_marked():
    assert render.locate("Unabhängigkeit", "hängig") == (4, 10)
    assert render.locate("abc", "x") is None and render.locate("abc", "") is None


def test_several_evidence_strings_never_mark_inside_a_mark():
    """A second string ('ev', 'mark', 'class') must not match the first one's tags."""
    markup = render.paragraph("Venice mark ev class", "en", evidence=("Venice", "ev", "mark"))
    assert markup == ('<div class="xt" lang="en" dir="auto"><mark class="ev">Venice</mark> '
                      '<mark class="ev">mark</mark> <mark class="ev">ev</mark> class</div>')


# ------------------------------------------------------------------------- SQL

def test_sql_literals_and_identifiers():
    assert sqlsafe.literal("o'brien") == "'o''brien'"
    assert sqlsafe.literal(["a", 1, None, True]) == "['a', 1, NULL, TRUE]"
    assert sqlsafe.identifier('we"ird') == '"we""ird"'
    assert sqlsafe.strings([]) == "[]::VARCHAR[]"
    for bad in ("nul\x00", float("nan"), object()):
        with pytest.raises(sqlsafe.UnsafeValue):
            sqlsafe.literal(bad)


def one_row_release(folder: Path, name: str, *, blank: bool) -> Path:
    """A one-row V1.1 file; `blank` plants a blank sentence (quarantined)."""
    src = source(_id=f"5a00000000000000000000{2 if blank else 1:02d}")
    ctx = view(src)
    if blank:
        ctx[0][1][0] = " "
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    synth.write_release([record(src, context=ctx)], folder / "tmp-release")
    (folder / "tmp-release" / "validation-00000.parquet").rename(path)
    (folder / "tmp-release").rmdir()
    return path


@pytest.mark.slow
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=st.sampled_from(list("ab'\"`;-)(,\\ ]*[é中\u202e")), min_size=1,
               max_size=24))
def test_any_file_name_reads_as_data_not_sql(tmp_path_factory, name):
    folder = tmp_path_factory.mktemp("names")
    good = one_row_release(folder / "shards", "a-00000.parquet", blank=False)
    other = one_row_release(folder / "shards", f"b{name}.parquet".replace("/", "_"),
                            blank=True)
    release = readers.open_release(folder / "shards")
    assert [p.name for p in release.paths] == sorted([good.name, other.name])
    result = scan.run(release, skip=frozenset({"language_mismatch", "script_mismatch"}))
    status = [r["status"] for r in result.status.to_pylist()]
    assert sorted(status) == ["accepted", "quarantined"]
    assert [r["row"] for r in result.status.to_pylist()] == [0, 1]


def test_a_quote_in_a_shard_name_scans_with_exit_0(tmp_path):
    path = one_row_release(tmp_path, "o'brien.parquet", blank=True)
    done = cli("scan", str(path), "--out", str(tmp_path / "scan"))
    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "scan" / "summary.json").read_text())
    assert summary["status_counts"] == {"quarantined": 1}


def test_an_injecting_shard_name_is_only_a_name(tmp_path):
    """The name that once closed the CASE, read a local file and flipped statuses."""
    folder = tmp_path / "shards"
    one_row_release(folder, "a.parquet", blank=True)
    evil = "b' THEN 0 WHEN 'x' THEN 0 END) + 0 AS rid FROM read_csv('x') --.parquet"
    one_row_release(folder, evil.replace("/", "_"), blank=True)
    result = scan.run(readers.open_release(folder),
                      skip=frozenset({"language_mismatch", "script_mismatch"}))
    assert result.summary["status_counts"] == {"quarantined": 2}


def test_policy_categories_are_validated_and_never_reach_sql(tmp_path):
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"severity": {"exact_source_copy:sentence": "blocking"}}))
    assert policy.load(good).severity("exact_source_copy", "sentence") == "blocking"
    for key, expected in (("exact_source_copy:bogus", "unknown category 'bogus'"),
                          ("exact_source_copy:x' THEN 'blocking' WHEN '",
                           "unknown category"),
                          ("blank_sentence:any", "unknown category 'any' of blank_sentence")):
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps({"severity": {key: "blocking"}}))
        with pytest.raises(InputError, match=re.escape(expected)):
            policy.load(bad)
        done = cli("scan", str(one_row_release(tmp_path / "r", "r.parquet", blank=False)),
                   "--policy", str(bad), "--out", str(tmp_path / "never"))
        assert done.returncode == 2 and "unknown category" in done.stderr
        assert not (tmp_path / "never").exists()


def test_the_registry_fingerprint_follows_the_declarations():
    base = registry.fingerprint(registry.REGISTRY)
    assert base == registry.FINGERPRINT
    extra = model.Check("extra_check", ("instance",), "review", "translation", "A new check.",
                         model.UNITS_ONLY, sql=dsl.when("FALSE"))
    assert registry.fingerprint(registry.REGISTRY + (extra,)) != base
    first, *rest = registry.REGISTRY
    changed = model.Check(**{**{f: getattr(first, f) for f in first.__slots__},
                              "sql": first.sql + " "})
    assert registry.fingerprint((changed, *rest)) != base
    assert registry.fingerprint(registry.REGISTRY) == base


# ----------------------------------------------------------------------- data roots

@pytest.fixture
def roots(tmp_path, settings_env):
    inside = tmp_path / "data"
    (inside / "rel").mkdir(parents=True)
    one_row_release(inside / "rel", "r-00000.parquet", blank=False)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    one_row_release(outside, "secret.parquet", blank=False)
    settings_env(AUDIT_DATA_ROOTS=str(inside))
    return inside, outside


def refusal(what: str) -> str:
    return (f"not available here: no {what} by that name under the workbench's "
            "data roots (AUDIT_DATA_ROOTS)")


def hostile(inside: Path, outside: Path) -> list[str]:
    """Paths a link or a box may name that must all be refused alike: outside the roots,
    `..`, symlinks out of a root, globs with `..` or through such a symlink, each once at a
    target that exists and once at one that does not; a file missing inside a root."""
    (inside / "link.parquet").symlink_to(outside / "secret.parquet")
    (inside / "dead.parquet").symlink_to(outside / "missing.parquet")
    (inside / "linkdir").symlink_to(outside, target_is_directory=True)
    paths = []
    for name in ("secret.parquet", "missing.parquet"):
        stem = name.replace(".parquet", ".parque?")
        paths += [str(outside / name), f"{inside}/../elsewhere/{name}",
                  f"{inside}/rel/../../elsewhere/{name}", f"{inside}/linkdir/{name}",
                  f"{inside}/*/../../elsewhere/{stem}", f"{inside}/*/{name}",
                  f"{inside}/[a-z]*/../../elsewhere/{name}", f"{inside}/**/{stem}"]
    return paths + [str(inside / "link.parquet"), str(inside / "dead.parquet"),
                    "/etc/passwd", "/etc/nonexistent", "data/*/../../../../etc/passw?",
                    "data/*/../../../../etc/nonexistent?", "../../.labelstudio.env",
                    str(inside / "rel" / "missing.parquet"), str(inside / "rel" / "*.json"),
                    str(inside / "rel" / "../rel/r-00000.parquet"), "/**/*.parquet", "",
                    "x\x00y", str(outside / "*.parquet")]


def test_only_releases_under_the_data_roots_are_served(roots, tmp_path):
    inside, outside = roots
    assert served_files(str(inside / "rel")) == [(inside / "rel" / "r-00000.parquet").resolve()]
    assert len(served_files(str(inside / "rel" / "*.parquet"))) == 1
    assert len(served_files(str(inside / "**" / "*.parquet"))) == 1
    for spec in hostile(inside, outside):
        for serve, what in ((served_files, "release"), (served_file, "file"),
                            (served_directory, "directory")):
            with pytest.raises(NotServed) as caught:
                serve(spec)
            # One line, the same whether or not the target exists, naming nothing.
            assert str(caught.value) == refusal(what), (serve.__name__, spec)
    with pytest.raises(NotServed):
        served_directory(str(outside))
    # A symlink inside the roots to a file inside them is served as that file.
    (inside / "alias.parquet").symlink_to(inside / "rel" / "r-00000.parquet")
    assert served_file(str(inside / "alias.parquet")) == inside / "rel" / "r-00000.parquet"


def test_a_kept_upload_is_served_wherever_the_roots_are(roots, tmp_path, settings_env):
    """Uploads live under the data directory (AUDIT_DATA_DIR), not in the checkout, and are
    served wherever the data roots are."""
    from workbench import serving
    settings_env(AUDIT_DATA_DIR=str(tmp_path / "elsewhere-data"),
                 AUDIT_DATA_ROOTS=str(roots[0]))
    uploads = tmp_path / "elsewhere-data" / "uploads"
    assert serving.uploads_root() == uploads
    uploads.mkdir(parents=True)
    kept = uploads / "0123456789abcdef.parquet"
    one_row_release(uploads, kept.name, blank=False)
    assert served_files(str(kept)) == [kept.resolve()]
    with pytest.raises(NotServed):
        served_files(f"{uploads}/../elsewhere/secret.parquet")


def test_an_upload_keeps_its_sanitised_name_beside_the_hash(roots):
    """The scope line, exports and history name a release by summary["release"]: an upload
    is called by its own name there, not by its hash alone."""
    import hashlib

    from audit.engine import scan
    from audit.io import release as readers
    from workbench import serving
    data = b"x" * 10
    digest = hashlib.sha256(data).hexdigest()[:16]
    assert serving.upload_name("XHotpot v2 (final).PARQUET", data, (".parquet",)) == \
        f"{digest}-XHotpot_v2_final.parquet"
    assert serving.upload_name("../../etc/passwd", data, (".json",)) == f"{digest}-passwd.json"
    assert serving.upload_name("<b>.toml", data, (".toml", ".json")) == f"{digest}-b.toml"
    name = serving.upload_name("xhotpot-v2.parquet", data, (".parquet",))
    kept = one_row_release(roots[0], name, blank=False)
    summary = scan.run(readers.open_release(kept)).summary
    assert summary["release"] == f"{digest}-xhotpot-v2"


PATH_PIECES = ["{inside}", "{outside}", "{nowhere}", "rel", "linkdir", "link.parquet",
               "secret.parquet", "missing.parquet", "r-00000.parquet", "..", ".", "*", "**",
               "?", "[a-z]*", "*.parquet", "etc", "", "~"]


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(PATH_PIECES), min_size=1, max_size=6), st.booleans())
def test_the_serving_rule_answers_alike_whether_outside_files_exist(roots, pieces, absolute):
    """Any path built from these pieces is either served, every file resolving inside the
    roots, or refused with the one line; and the answer is the same when the outside
    directory is replaced by one that does not exist."""
    inside, outside = roots
    if not (inside / "linkdir").exists():
        (inside / "linkdir").symlink_to(outside, target_is_directory=True)
        (inside / "link.parquet").symlink_to(outside / "secret.parquet")
    template = ("/" if absolute else "") + "/".join(pieces)

    def answer(elsewhere: Path):
        spec = template.format(inside=inside, outside=elsewhere,
                               nowhere=outside.parent / "nowhere")
        try:
            files = served_files(spec)
        except NotServed as refused:
            return "refused", str(refused)
        assert files and all(f.is_relative_to(inside.resolve()) for f in files), spec
        return "served", [f.relative_to(inside.resolve()) for f in files]

    outcome = answer(outside)
    assert outcome == answer(outside.parent / "nowhere")
    assert outcome[0] == "served" or outcome[1] == refusal("release")


def test_a_glob_release_refreshes_when_files_appear(roots):
    inside, _ = roots
    before = stamp(served_files(str(inside / "rel" / "*.parquet")))
    one_row_release(inside / "rel", "r-00001.parquet", blank=True)
    after = stamp(served_files(str(inside / "rel" / "*.parquet")))
    assert len(before) == 1 and len(after) == 2 and before != after


def test_clean_human_translations_raise_no_review_level_control(realdata):
    """NTREX-128 in the 24 languages: ZWNJ (Persian spelling), ZWJ, LRM/RLM/ALM and the
    zero-width spaces human translators leave are never review-level."""
    import realdata_release
    kinds, zwnj_persian = {}, 0
    for code, lines in realdata_release.load_ntrex().items():
        for line in lines:
            for _, char in hiding.hiding_characters(line):
                kinds[controls_kind(char)] = kinds.get(controls_kind(char), 0) + 1
            zwnj_persian += line.count("\u200c") if code == "fa" else 0
    assert "review" not in kinds
    assert zwnj_persian >= 1800


def test_only_the_rendering_boundary_shows_html():
    """Pages show HTML only through workbench.shell.html (fragments from
    audit.reports.render)."""
    root = Path(__file__).resolve().parent.parent
    for path in [root / "app.py", *sorted((root / "pages").glob("*.py"))]:
        assert "unsafe_allow_html" not in path.read_text(encoding="utf-8"), path
    shell = (root / "workbench" / "shell.py").read_text(encoding="utf-8")
    assert shell.count("unsafe_allow_html=True") == 1      # the stylesheet
    assert shell.count("st.html(") == 1                    # shell.html
