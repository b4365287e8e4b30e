"""The function-word rule: a Latin-script text whose commonest little words are plainly one
language's is that language, without a detector's reading (`settle`).

Each of the 13 Latin-script languages has a list of its most frequent function words
(articles, prepositions, conjunctions, pronouns, auxiliaries, question words); a word may be
in several lists ("de", "la", "en"). A text's score for a language is how many of its
lower-case tokens are in that language's list. The text is settled as the best-scoring
language W when W scores at least MIN_HITS, at least RATIO times the runner-up and at least
MARGIN more than it, and W also leads alone in each half of the text (a paragraph whose
first sentence stayed French is not settled as German by its German rest); anything closer
(Spanish against Portuguese in a short question, a paragraph half in English) goes to the
detector. The rule reads what the detector would read (`LanguageIdentifier.prepare_texts`:
capitalised tokens removed, clipped), so names never count.

Measured with bench/langid.py's texts (NTREX-128 human translations, XQuAD paragraphs and
questions): no text settled as a wrong language; settled are ~89 % of 3–5-line NTREX
paragraphs and ~61 % of single lines. On paragraphs whose first line is in another language
than the rest, the language check flags as many with the rule as lingua alone did. The
detector then reads only the rest: lingua costs ~0.1 ms of each core per 200-character
text, this rule ~0.01 ms.
"""

from __future__ import annotations

import re
from typing import Sequence

MIN_HITS, RATIO, MARGIN = 4, 1.5, 3
VERSION = f"words2-{MIN_HITS}.{RATIO}.{MARGIN}"

_LISTS = {
    "en": "the of and to is was that for with as by on are from this which his her it be at "
          "has have were been or an not who their they but its had also after first when what "
          "where how did does into than other more these there would can most whose while "
          "during between about both only such those in a no he she said will up out one two "
          "new over year years",
    "de": "der die das und ist von zu den mit sich des auf für nicht ein eine einen dem im auch "
          "es werden aus er hat dass sie nach wird bei einer um noch wie über zum war wurde "
          "haben nur oder aber vor zur bis mehr durch kann wer welche welcher welches wann wo "
          "sind seine seiner ihre ihr wurden sowie gegen unter zwischen in an als so am sei "
          "wir ich du jahr jahre sagte",
    "es": "el la los las de del y en que un una por con para es se su al lo como más fue sus "
          "pero o ha son entre desde también qué cuál dónde cuándo quién cómo este esta muy "
          "hay donde fueron cuando quien cual le les ese esa esto han hasta sin sobre ya otros "
          "otra otro año años cuyo no a si dos nos era ser después está había dijo mi ni e van",
    "pt": "o os as do da dos das no na nos nas em um uma e é que de para com por não se foi ao "
          "pelo pela mais seu sua como mas ou também quando onde qual quem isso este esta são "
          "ser entre já foram seus suas pelos pelas depois sobre anos ano outro outra cujo até "
          "a à era após afirmou disse está tem muito",
    "fr": "le la les de des du et en un une est que qui dans pour pas au aux sur avec par il "
          "elle ce cette son sa ses ont été a à sont mais ou où plus qu quel quelle quels "
          "quelles quand comment était leur leurs après aussi entre lors dont se ne y nous "
          "vous on je si ni non dit ai là lui avait",
    "it": "il lo la i gli le di del della dei delle degli e è che un una per con non si da in "
          "al alla sono ha come più anche ma nel nella questo questa quale chi quando dove "
          "cosa era stato stata suo sua suoi nei negli dal dalla dopo anni anno tra fra essere "
          "cui a dell hanno detto mi su ai po quel",
    "nl": "de het een en van in is dat op te zijn met voor niet die aan er om ook als bij door "
          "was werd naar uit wordt heeft hij zij wie wat waar wanneer welke hoe dit deze tot "
          "maar over zich haar hun werden jaar na dan nog kan ze we je had ten al",
    "sv": "och i att det som en är av på för med till den har de inte om ett var vid från men "
          "sig hon han också eller efter vilken vilket vilka vem när hur vad år blev blir sin "
          "sitt sina hade kan där detta denna mellan under sa alla dem du ser",
    "pl": "i w z na się do nie to że jest o jak po a od za co ale dla przez jego jej był była "
          "było są który która które którego oraz kto kiedy gdzie jaki jaka jakie czy ten tym "
          "roku także lub ze we jako jednak został została ma te mi im je",
    "tr": "bir ve bu da de için ile olarak olan çok daha gibi ne kadar sonra ise ki değil veya "
          "tarafından yılında hangi kim nerede nedir kaç mı mi mu mü olduğu edildi yapılan en "
          "ilk ancak her adlı göre dedi söyledi olduğunu büyük iki yeni yıl son karşı var",
    "id": "yang dan di ke dari ini itu dengan untuk dalam pada adalah tidak akan oleh sebagai "
          "juga atau ada karena tahun siapa apa mana kapan berapa bagaimana telah sudah "
          "menjadi para saat lebih antara setelah seorang merupakan tersebut bahwa dia ia "
          "mereka kata",
    "sw": "na ya wa kwa za la katika ni cha vya hiyo hii huo kama au lakini pia ambaye ambayo "
          "ambao alikuwa kuwa mwaka nini nani wapi lini gani je kutoka baada hadi sana yake "
          "wake zake wao kati ilikuwa",
    "vi": "của và là các có trong được một những cho với không này người đã để khi từ đến năm "
          "ra về theo như nào ai gì đâu bao nhiêu sao tại bởi nhất cũng sự vào còn nhưng đó "
          "ông bà",
}
LANGUAGES = tuple(_LISTS)
# word -> the indexes (in LANGUAGES) of every list holding it
_SETS = [frozenset(_LISTS[lang].split()) for lang in LANGUAGES]
_INDEX: dict[str, tuple[int, ...]] = {
    word: tuple(i for i, words in enumerate(_SETS) if word in words)
    for word in frozenset().union(*_SETS)}
_TOKEN = re.compile(r"[^\W\d_]+")


def _points(tokens: Sequence[str]) -> list[int]:
    """Per language of LANGUAGES: how many of the tokens its list holds."""
    out = [0] * len(LANGUAGES)
    for token in tokens:
        for i in _INDEX.get(token, ()):
            out[i] += 1
    return out


def _leads(points: list[int], best: int) -> bool:
    return all(p < points[best] for i, p in enumerate(points) if i != best)


def settle(texts: Sequence[str]) -> list[str | None]:
    """Per text: the language its function words settle (see the module doc), or None."""
    out: list[str | None] = []
    for text in texts:
        tokens = _TOKEN.findall(text.lower())
        half = len(tokens) // 2
        first, second = _points(tokens[:half]), _points(tokens[half:])
        points = [a + b for a, b in zip(first, second)]
        best = max(range(len(points)), key=points.__getitem__)
        top = points[best]
        runner_up = max(p for i, p in enumerate(points) if i != best)
        out.append(LANGUAGES[best] if top >= MIN_HITS and top >= RATIO * runner_up
                   and top - runner_up >= MARGIN and _leads(first, best)
                   and _leads(second, best) else None)
    return out
