"""How common an English word is, from pyspellchecker's frequency list (word counts over a large English
corpus): the planner corrects a typo only when the word is not an ordinary word of its own ("started" is no
typo of "state", "dairy" none of "daily"). Loaded once, on first use (about 0.2 s)."""

from __future__ import annotations

from functools import cache

from spellchecker import SpellChecker

COMMON = 1000  # seen this often, a word is meant as written ("chanel", seen 328 times, is "channel")


@cache
def _frequencies():
    return SpellChecker(distance=1).word_frequency


def is_word(word: str) -> bool:
    """Any word of the list, however rare ("jute", "juno")."""
    return _frequencies()[word] > 0


def is_common(word: str) -> bool:
    return _frequencies()[word] >= COMMON
