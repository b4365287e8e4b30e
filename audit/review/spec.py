"""A review batch spec: what `python -m audit review push SPEC` reads (JSON or TOML).

    kind = "translation"                 # translation | paired | realism | relevance |
                                         #   post-edit | spans
    batch = "pilot-ar-fa"                # optional; default: the sample's / pairs' own id
    release = "data/demo/release"        # translation: a release (default: the demo)
    sources = ["train=…json"]            # optional HotpotQA sources of the release
    new_release = "corrected/release"    # paired: the corrected release (release = OLD)
    new_sources = ["train=…json"]        # paired: optional HotpotQA sources of NEW
    design = "default"                   # translation: "default" | "paper" |
                                         #   "unverifiable" | a table: {by = [...],
                                         #   per_stratum = 2 or {paragraph = 4}, size = N,
                                         #   allocation = "equal", levels = {preservation =
                                         #   ["unverifiable"]}}
    seed = 20260810                      # sampling seed (MAPLE: the A/B order seed)
    pairs = "data/maple_demo/query_pairs.jsonl"   # realism / relevance input
    protocol = "esa"                     # spans: "esa" | "mqm"; also prefill = "findings" |
                                         #   "none", typology = [...] and mqm_weights =
                                         #   {minor = 1, major = 5, critical = 25} (MQM)
    plan = "work/plan.parquet"           # post-edit: units of `repair plan --out DIR` (that
                                         #   DIR or its plan.parquet); default: the whole
                                         #   work list of the release
    annotators = ["ana@example.org:ar,fa", "bo@example.org:ar,fa"]
    adjudicators = ["cy@example.org:ar,fa"]
    server = "default"                   # optional: a configured server, by name or URL
                                         #   (labelstudio.configured(); default "default")
    # or one server per side (blinding enforced), with the annotators per side:
    # [servers]  "annotator 1" = SERVER, "annotator 2" = SERVER, adjudication = SERVER
    # [annotators]  "annotator 1" = [...], "annotator 2" = [...]

Translation designs keep to non-English target languages (sampling.target_languages_only):
"default" is 4 paragraphs + 1 question + 1 answer per language (the paper's 80:20:20 in
miniature), "paper" the paper's 80 + 20 + 20, "unverifiable" 4 paragraphs per language that
the preservation checks could not settle (sampling.PRESETS). A paired batch samples OLD with
the design and sends the OLD and NEW version of each matched unit, blind, to the same
annotators (kinds/paired.py: the evidence for the acceptance gate's criteria 3 and 4). A
post-edit batch sends each repair unit to one editor who reads its language
(kinds/post_edit.py).
Every problem is an InputError naming the spec file and the field. The Spec itself and what
its paths resolve to: inputs.py.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from ..errors import InputError
from . import kinds, sampling
from .inputs import Spec

KEYS = {"kind", "batch", "release", "sources", "design", "seed", "pairs", "annotators",
        "adjudicators", "server", "servers", "new_release", "new_sources", "plan"}
# Keys a kind reads itself (kind.options): error spans' protocol, prefill, typology, weights.
OPTION_KEYS = {key for kind in kinds.KINDS.values() if kind.options for key in kind.accepts}
DESIGN_KEYS = {"by", "per_stratum", "size", "allocation", "levels"}


def load(path: str | Path) -> Spec:
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "no such file", expected="a batch spec (.json or .toml)")
    text = path.read_text(encoding="utf-8")
    try:
        raw = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, ValueError) as error:
        raise InputError(path, f"not valid {'TOML' if path.suffix == '.toml' else 'JSON'} "
                         f"({error})".replace("\n", " "), expected="a batch spec") from None
    if not isinstance(raw, dict):
        raise InputError(path, f"a {type(raw).__name__}", expected="a table of settings")
    return parse(raw, path)


def parse(raw: dict[str, Any], path: Path) -> Spec:
    unknown = sorted(set(raw) - KEYS - OPTION_KEYS)
    if unknown:
        raise InputError(path, f"unknown key(s) {', '.join(unknown)}",
                         expected=", ".join(sorted(KEYS | OPTION_KEYS)))
    kind = raw.get("kind", kinds.DEFAULT)
    _check(isinstance(kind, str) and kind in kinds.KINDS, path, "kind", f"{kind!r}",
           f"one of {', '.join(kinds.KINDS)}")
    chosen = kinds.get(kind)
    for key in ("batch", "release", "pairs", "server", "new_release", "plan"):
        _check(raw.get(key) is None or isinstance(raw[key], str) and raw[key].strip(),
               path, key, repr(raw.get(key)), "non-empty text")
    seed = raw.get("seed")
    _check(seed is None or isinstance(seed, int) and not isinstance(seed, bool), path, "seed",
           repr(seed), "an integer")
    sources = raw.get("sources", [])
    _check(isinstance(sources, list) and all(isinstance(s, str) for s in sources), path,
           "sources", repr(sources), "a list of paths")
    new_sources = raw.get("new_sources", [])
    _check(isinstance(new_sources, list) and all(isinstance(s, str) for s in new_sources),
           path, "new_sources", repr(new_sources), "a list of paths")
    given = {"new_release": raw.get("new_release") is not None or bool(new_sources),
             "plan": raw.get("plan") is not None, **{key: True for key in OPTION_KEYS & set(raw)}}
    for key, present in given.items():     # keys that only one kind takes
        owner = next(k.name for k in kinds.KINDS.values() if key in k.accepts)
        _check(key in chosen.accepts or not present, path, key, f"given for a {kind} batch",
               f"{key} only with kind = \"{owner}\"")
    for key, expected in chosen.needs:
        _check(raw.get(key) is not None, path, key, "missing", expected)
    design = raw.get("design", "default")
    _check(isinstance(design, str) and design in sampling.PRESETS or isinstance(design, dict)
           and set(design) <= DESIGN_KEYS and "by" in design, path, "design", repr(design),
           f"{', '.join(map(repr, sampling.PRESETS))} or a table with by and per_stratum "
           "or size")
    levels = design.get("levels", {}) if isinstance(design, dict) else {}
    _check(isinstance(levels, dict) and all(isinstance(v, list) for v in levels.values()),
           path, "design.levels", repr(levels), "a table of value lists, e.g. "
           "{preservation = ['unverifiable']}")
    annotators = raw.get("annotators")
    _check(isinstance(annotators, (list, dict)) and annotators, path, "annotators",
           repr(annotators), "a list such as ['ana@example.org:ar,fa', …], or one list per "
           "side")
    adjudicators = raw.get("adjudicators", [])
    _check(isinstance(adjudicators, list), path, "adjudicators", repr(adjudicators),
           "a list such as ['cy@example.org:ar,fa']")
    servers = raw.get("servers")
    _check(servers is None or isinstance(servers, dict)
           and set(servers) == {"annotator 1", "annotator 2", "adjudication"}
           and all(isinstance(u, str) for u in servers.values()), path, "servers",
           repr(servers), "configured servers (names or URLs) for 'annotator 1', "
           "'annotator 2' and 'adjudication'")
    _check(not (servers and raw.get("server")), path, "server", "given with servers",
           "either one server or one per side")
    spec = Spec(path, kind, annotators, raw.get("batch"), raw.get("release"), sources, design,
                seed, raw.get("pairs"), adjudicators, raw.get("server"), servers,
                raw.get("new_release"), new_sources, raw.get("plan"),
                chosen.options(raw, path) if chosen.options else {})
    _check_people(spec)
    return spec


def _check(ok: object, path: Path, key: str, problem: str, expected: str) -> None:
    if not ok:
        raise InputError(path, problem, where=key, expected=expected)


def _check_people(spec: Spec) -> None:
    from . import routing
    try:
        routing.parse_annotators(spec.annotators)
        routing.parse_annotators(spec.adjudicators, where="adjudicators")
    except InputError as error:
        raise InputError(spec.path, error.problem, where=error.path,
                         expected=error.expected) from None
    if isinstance(spec.annotators, dict) != bool(spec.servers):
        raise InputError(spec.path, "annotators per side need one server per side, and one "
                         "server per side needs annotators per side", where="annotators",
                         expected="both [servers] and [annotators] per side, or neither")


def build_batch(spec: Spec):
    """The ReviewBatch a spec describes, built as its kind builds it (kinds/: the release
    scanned and sampled, or the MAPLE pairs read and, for realism, put in seeded A/B
    order)."""
    return kinds.get(spec.kind).build(spec)
