"""The read path screen (§8): every external text is clipped, normalised and screened before a model sees it.

Two texts come out of one input. What the model reads is the input with the usual
invisible disguises removed (compatibility forms via NFKC, zero-width and other
invisible characters, runs of whitespace): that text is data and must stay
faithful. What the rules read goes further and undoes what a reader undoes
without noticing: HTML character references, letters from other scripts that
look Latin (Unicode's confusables data), accents and stacked combining marks,
direction overrides that make reversed text read forwards, letter-spaced words
and blank lines between words. A match never blocks the read — the text reaches
the model wrapped as untrusted — it flags the run, so a person deciding on a
later mutation sees the snippet and where it came from. Taint never relaxes a gate.

Every step is linear in the input: one RE2 pass finds all rules at once (a second
only when the text holds letter-spaced runs or right-to-left overrides), and long
runs of combining marks are cut before Unicode normalisation, whose reordering of
marks is quadratic in the length of a run.
"""

from __future__ import annotations

import html
import importlib.util
import json
import re
import unicodedata
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import re2

MAX_CHARS = 20_000
SNIPPET_CONTEXT = 40
# Invisible characters that split words for a reader but not for a model: zero-width space/joiners,
# direction marks and embeddings, the Arabic letter mark, word joiner and invisible operators, BOM,
# soft hyphen, Mongolian vowel separator, and what is left of the Unicode tag block once its ASCII
# look-alikes were made visible.
_INVISIBLE = re.compile("[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
                        "\U000e0000-\U000e007f]")
# Tag characters U+E0020..U+E007E mirror printable ASCII and render as nothing: text smuggled in them is
# shown (and screened) as the ASCII it spells.
_TAGS = {0xE0000 + code: chr(code) for code in range(0x20, 0x7F)}
_SPACE = re.compile(r"\s+")
# UAX #15's stream-safe limit: no real text stacks more than 30 combining marks on one letter, and
# cutting longer runs keeps NFKC/NFKD (which sort each run of marks) linear.
_MARK_RUN_LIMIT = 30


def _re2(pattern: str) -> re2._Regexp:
    options = re2.Options()
    options.max_mem = 64 << 20
    options.case_sensitive = False
    options.dot_nl = True  # the rules read across line breaks, as the model does
    return re2.compile(pattern, options)




@cache
def _mark_runs() -> re2._Regexp:
    """Runs of more marks than the limit; compiled on first use (a large program), since only text
    beyond Latin-1 can hold marks. A mark is also anything that decomposes into one (the half-width
    katakana voiced marks are letters, but NFKD makes them combining marks that the sort then moves)."""
    also = "".join(rf"\x{{{ord(char):X}}}" for char in _decomposes_to_a_mark())
    return _re2(rf"[\p{{M}}{also}]{{{_MARK_RUN_LIMIT + 1},}}")


def _decomposes_to_a_mark() -> list[str]:
    """Characters that are no mark themselves but whose compatibility decomposition starts with one."""
    found = []
    for code in range(0xA0, 0x30000):
        char = chr(code)
        if not unicodedata.category(char).startswith("M") and unicodedata.decomposition(char):
            decomposed = unicodedata.normalize("NFKD", char)
            if unicodedata.combining(decomposed[0]):
                found.append(char)
    return found


def _latin1(text: str) -> bool:
    """Whether every character is below U+0100 (no combining marks, no direction controls): for such
    text, which Python stores one byte a character, this is a copy, not a scan."""
    try:
        text.encode("latin-1")
    except UnicodeEncodeError:
        return False
    return True


def _cap_marks(text: str) -> str:
    if _latin1(text) or not _mark_runs().search(text):
        return text
    return _mark_runs().sub(lambda run: run.group()[:_MARK_RUN_LIMIT], text)


# ----------------------------------------------------------------------------------------------------------
# The reading the rules see
# ----------------------------------------------------------------------------------------------------------

# Unicode's confusables data as packaged by confusable-homoglyphs, read when the table is first built;
# found now (without importing the package) so that a missing package stops a service at start-up.
_CONFUSABLES_PACKAGE = importlib.util.find_spec("confusable_homoglyphs")
if _CONFUSABLES_PACKAGE is None or not _CONFUSABLES_PACKAGE.submodule_search_locations:
    raise ImportError("the read-path screen needs the confusable-homoglyphs package (Unicode confusables data)")
_CONFUSABLES_JSON = Path(_CONFUSABLES_PACKAGE.submodule_search_locations[0]) / "confusables.json"
_TABLE_SIZE = 0x20000  # the Basic and Supplementary Multilingual Planes: every script and mark in use
_PLANE_14 = {**{code: None for code in range(0xE0000, 0xE1000)}, **_TAGS}  # tags spelled out, selectors dropped
# Hangul fillers are letters that render as nothing.
_BLANK_LETTERS = (0x115F, 0x1160, 0x3164, 0xFFA0)
# A Latin letter by its Unicode name: "LATIN LETTER SMALL CAPITAL P", "LATIN SMALL LETTER DOTLESS I",
# "LATIN SMALL LETTER D WITH STROKE" all read as that letter.
_LATIN_NAME = re.compile(r"LATIN (?:SMALL |CAPITAL )?LETTER (?:SMALL CAPITAL |SCRIPT |DOTLESS )?([A-Z])(?: WITH .*)?")


def _ascii_lookalike(char: str, entries: list[dict], table: list) -> str | None:
    """The printable ASCII character `char` is confusable with, by Unicode's confusables data, directly
    or through one look-alike that itself reads as ASCII (Cyrillic т → small capital T → t).

    The data's prototype for I-like letters is `l`; a letter whose own name says I is read as `i`.
    """
    found = [entry["c"] for entry in entries if len(entry["c"]) == 1 and "!" <= entry["c"] <= "~"]
    if not found:
        hops = (table[ord(entry["c"])] for entry in entries if len(entry["c"]) == 1 and ord(entry["c"]) < _TABLE_SIZE)
        found = [hop for hop in hops if isinstance(hop, str)]
    if not found:
        return None
    target = next((c for c in found if c.isalnum()), found[0])
    if target == "l" and unicodedata.name(char, "").split()[-1:] in (["I"], ["IOTA"]):
        return "i"
    return target


def _latin_letters(table: list) -> None:
    """Latin letters NFKD leaves alone (small capitals, script and dotless forms, letters with strokes)
    read as the letter their Unicode name gives."""
    for code in (*range(0x80, 0x3000), *range(0xA700, 0xAC00)):
        named = _LATIN_NAME.fullmatch(unicodedata.name(chr(code), ""))
        if named:
            table[code] = named.group(1).lower() if unicodedata.category(chr(code)) != "Lu" else named.group(1)


@cache
def _skeleton_table() -> list:
    """One `str.translate` table for the reading: marks, format characters and blank letters dropped,
    spaces made plain, look-alike letters made ASCII. A list (about 5 MB) rather than a dict: a dict
    lookup that misses raises inside `translate`, which made the reading of Cyrillic text twice as slow.

    Built on first use from Unicode's own data (categories and names from `unicodedata`, the
    confusables list as packaged by confusable-homoglyphs): ASCII-only processes never pay for it.
    """
    table: list = list(range(_TABLE_SIZE))
    for code in range(0x80, _TABLE_SIZE):
        category = unicodedata.category(chr(code))
        if category in ("Mn", "Me", "Mc", "Cf"):
            table[code] = None
        elif category in ("Zs", "Zl", "Zp") or code == 0x85:
            table[code] = 0x20
    for code in _BLANK_LETTERS:
        table[code] = None
    _latin_letters(table)
    data = json.loads(_CONFUSABLES_JSON.read_text(encoding="utf-8"))
    for char, entries in data.items():
        if len(char) == 1 and 0x80 <= ord(char) < _TABLE_SIZE and table[ord(char)] == ord(char):
            target = _ascii_lookalike(char, entries, table)
            if target:
                table[ord(char)] = target
    return table


_PLANE_14_CHARS = _re2(r"[\x{E0000}-\x{E0FFF}]")


def _skeleton_text(text: str, table: list) -> str:
    """Compatibility forms and accents taken apart (NFKD; runs of marks are already cut), then the
    table applied: the marks NFKD split off are dropped and look-alikes mapped."""
    if _PLANE_14_CHARS.search(text):
        text = text.translate(_PLANE_14)
    return unicodedata.normalize("NFKD", text).translate(table)


def _skeleton(text: str) -> str:
    """Non-ASCII text as the rules read it. Most external text is ASCII with a few accented names or
    curly quotes: then only the lines that are not ASCII are worked on (`isascii` costs nothing)."""
    table = _skeleton_table()
    if len(text.encode()) - len(text) > len(text) // 8:
        return _skeleton_text(text, table)
    return "\n".join([line if line.isascii() else _skeleton_text(line, table) for line in text.split("\n")])


# Right-to-left override (and, to be safe, embedding and isolate) up to its pop or the end of the line:
# the letters inside are shown in reverse, so the rules also read them reversed.
_RTL_OPENERS = "\u202b\u202e\u2067"
_RTL_SPAN = re.compile(f"[{_RTL_OPENERS}]([^\u202c\u2069\n]*)")
_BIDI_CONTROLS = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


_RTL_TO_LINE_END = re.compile(f"[{_RTL_OPENERS}]([^\n]*)")


def _shown_orders(text: str) -> list[str]:
    """The text with every right-to-left override span reversed, as a person sees it: span by span, and
    from the first opener to the line's end whatever pops come between (nested embeddings and isolates
    close early in the span reading); none when there is no opener."""
    if text.isascii() or not any(opener in text for opener in _RTL_OPENERS):
        return []
    return [_RTL_SPAN.sub(lambda span: _BIDI_CONTROLS.sub("", span.group(1))[::-1], text),
            _RTL_TO_LINE_END.sub(lambda span: _BIDI_CONTROLS.sub("", span.group(1))[::-1], text)]


# Numeric references longer than any code point needs (leading zeros aside): resolved here, because
# html.unescape turns thousands of digits into an int and Python refuses numbers past 4,300 digits.
_LONG_DECIMAL_REF = re.compile(r"&#([0-9]{8,});?")
_LONG_HEX_REF = re.compile(r"&#[xX]([0-9a-fA-F]{7,});?")


def _code_point(digits: str, base: int) -> str:
    digits = digits.lstrip("0") or "0"
    value = int(digits, base) if len(digits) <= 8 else 0x110000
    return chr(value) if 0 < value <= 0x10FFFF and not 0xD800 <= value <= 0xDFFF else "\ufffd"


def _unescape(text: str) -> str:
    """HTML character references resolved (twice, for `&amp;#105;`), line breaks kept where they were."""
    if "&#" in text:
        text = _LONG_DECIMAL_REF.sub(lambda ref: _code_point(ref.group(1), 10), text)
        text = _LONG_HEX_REF.sub(lambda ref: _code_point(ref.group(1), 16), text)
    once = html.unescape(text)
    plain = html.unescape(once) if "&" in once and once != text else once
    if plain.count("\n") == text.count("\n") and "\r" not in plain:
        return plain
    return "\n".join(html.unescape(html.unescape(line)).replace("\r", " ").replace("\n", " ")
                     for line in text.split("\n"))


def _readings(raw: str) -> list[str]:
    """What the rules read: the text in stored order and, when it holds right-to-left overrides,
    also in shown order. Line breaks stay where they were, so a match can say its line."""
    text = raw.replace("\r\n", "\n").replace("\r", "\n") if "\r" in raw else raw
    if "&" in text:
        text = _cap_marks(_unescape(text))  # references can spell combining marks too
    if text.isascii():
        return [text]
    readings = [text, *_shown_orders(text)]
    return [_skeleton(reading)[:MAX_CHARS] for reading in readings]


# Letter-spacing: single letters kept apart by one space, dot, dash, star, bar or slash ("i g n o r e",
# "I.G.N.O.R.E."); words stay apart by two spaces or more. Joining a run keeps its even characters
# (the letters), which also drops a trailing separator.
# A single line break or tab separates letters as a space does: the model reads every break as a space.
_SPACED_NEXT = r"[ \t\n.*|/-][a-z0-9'._]"  # a separator and the next single character
_SPACED_RUN = _re2(rf"\b[a-z0-9](?:{_SPACED_NEXT})+\b(?:[.*|/-]\B)?")


def _join_run(run: str) -> str:
    """The letters of a run; where it also separates letters by dashes or dots, a space in it is a word
    break ("n-o n-e-e-d" is "no need")."""
    letters = run[::2]
    separators = run[1::2][:len(letters) - 1].replace("\n", " ").replace("\t", " ")  # a trailing one: nothing
    if " " not in separators or separators.count(" ") == len(separators):
        return letters
    breaks = (" " if separator == " " else "" for separator in separators)
    return letters[0] + "".join(gap + letter for gap, letter in zip(breaks, letters[1:], strict=True))


def _join_spaced(text: str) -> str:
    return _SPACED_RUN.sub(lambda run: _join_run(run.group()), text)


# ----------------------------------------------------------------------------------------------------------
# Rules
# ----------------------------------------------------------------------------------------------------------

# Building blocks. In rule sources a space stands for any run of whitespace, line breaks included, and
# " ?" for an optional one.
_PARTS = {
    # Any lower-case identifier (get_all_users, db.exec, `orders.refund`): only where the words around it
    # speak to the reader ("before answering", "you must"), since code and changelogs are full of them.
    "IDENT": r"(?-i:`?[a-z][a-z0-9]*(?:[._][a-z0-9]+)+\b`?)",
    # A tool for certain: namespaced as server.tool (tickets.close_all; not a file like setup.py, a host like
    # keys.openpgp.org or a call like self.flush(): the character after it is taken, so a rule goes on with
    # " ?"), or called a tool in so many words.
    "TOOL": r"(?:(?-i:`?[a-z][a-z0-9]+\.[a-z][a-z0-9_]{3,}`?)(?:[^\w.(/@-]|\.(?:\W|\z)|\z)|(?:this|that)\s+tool\b|"
            r"the\s+[\w-]+\s+(?:tool|function|endpoint)\b)",
    "AGENT": r"(?:assistant|agent|ai|model|llm|bot|chatbot|copilot)s?",
    "CALL": r"(?:call|run|invoke|execute|trigger|use)",
    # telling the reader not to (a description of what something does not do is no instruction)
    "NEG": r"(?:don'?t|do\s+not|needn'?t|need\s+not|no\s+need\s+to|not\s+necessary\s+to|not\s+required\s+to|"
           r"never|there'?s\s+no\s+need\s+to|there\s+is\s+no\s+need\s+to|no\s+reason\s+to|shouldn'?t|"
           r"should\s+not)",
    "PERSON": r"(?:the\s+|any\s+|a\s+)?(?:users?|customers?|humans?|person|operator|reviewer|owner|manager|admin|"
              r"anyone|anybody|them|people|supervisor)",
    "GATE": r"(?:approvals?|confirmations?|review|sign-?off|consent|permission|authori[sz]ation)",
    # a verb that changes or sends something, in the forms a claim uses ("deletes", "can delete"), not the
    # past participle a description uses ("can be executed")
    "DANGER": r"(?:(?:delet|remov|wip|purg|eras|truncat|revok|charg|updat|chang|overwrit|clos|execut|approv|"
              r"escalat|disabl)(?:e|es|ing)|(?:drop|destroy|refund|grant|transfer|pay|edit|cancel|send|email|"
              r"publish|upload|export|restart|unlock|reset)(?:s|es|ing|ping|ring|ling|ting)?|modif(?:y|ies|ying)|"
              r"run(?:s|ning)?\s+arbitrary|shut(?:s|ting)?\s+down|writ(?:e|es|ing)\s+(?:\w+\s+)?(?:back|changes))\b",
    # what a tool can be said to own: the claim "this tool also deletes records"
    "ASSET": r"(?:tickets|records|users|customers|accounts|orders|data|rows|tables|refunds|payments|funds|prices)",
}
_PARTS["ANYTOOL"] = r"(?:(?:the\s+|this\s+|that\s+)?IDENT(?:\s+tool|\s+function|\s+endpoint)?|TOOL)"


def _rule(source: str) -> str:
    for name in ("ANYTOOL", "IDENT", "TOOL", "AGENT", "CALL", "NEG", "PERSON", "GATE", "DANGER", "ASSET"):
        source = source.replace(name, _PARTS[name])
    return source.replace(" ?", r"\s*").replace(" ", r"\s+")


_EARLIER = (r"(?:your|previous|prior|above|earlier|preceding|original|existing|old|former|initial|current|"
            r"system|safety|other|given)")
_ORDERS = (r"(?:instructions?|rules|prompts?|guidelines|guidance|directions|directives|polic(?:y|ies)|constraints|"
           r"system (?:message|prompt)|restrictions|guardrails|programming|orders)\b")
_VOID = (r"(?:no longer (?:appl(?:y|ies)|valid|in force)|(?:is|are|were|was) (?:now )?(?:void|obsolete|outdated|"
         r"cancel+ed|revoked|invalid|null|superseded|only a test|just a test|a test)|(?:has|have) been (?:revoked|"
         r"cancel+ed|replaced|superseded|withdrawn|lifted|removed)|(?:don'?t|do not) (?:apply|count|matter))")
_BEFORE_ANSWERING = (r"(?:answer|answering|reply|replying|respond|responding|anything else|doing anything|"
                     r"continuing|proceeding|you (?:answer|reply|respond|do|look|continue))")
# Instruction-like text, by family (lower case; matched case-insensitively on the reading).
_RULE_SOURCES: dict[str, list[str]] = {
    "ignore-previous": [
        rf"(?:ignore|disregard|forget|pay no attention to|never ?mind|stop following|(?:do not|don'?t|no longer) "
        rf"(?:follow|obey|apply))(?: (?:all|any|of|the|these|those|every|{_EARLIER})){{0,4}} {_ORDERS}",
        # weaker verbs ("override the context object") only with words that point back at the model's orders
        rf"(?:override|overrule|discard|drop|set aside|clear|reset)(?: (?:all|any|of|the|these|those|every))*"
        rf"(?: {_EARLIER})+ (?:{_ORDERS}|context|conversation|history)",
        r"(?:ignore|disregard|forget) (?:everything|anything|whatever|all)\b.{0,40}\b(?:told|said|instructed|"
        r"given|taught)\b",
        r"(?:ignore|disregard|forget) (?:everything|anything|all) (?:(?:written|said) )?(?:above|before this "
        r"(?:line|message|point)|so far|until now)",
        rf"(?:your|the|previous|prior|earlier|above|original|old|former|initial|system|all) (?:\w+ )?(?:instructions?"
        rf"|rules|guidelines|guidance|directions|prompts?)(?: (?:above|before this (?:line|message|point)|you "
        rf"(?:were|have been) given|so far))? {_VOID}",
        rf"(?:everything|anything|all|whatever) (?:\w+ ){{0,3}}(?:told|above|before|earlier|until now)\b"
        rf".{{0,20}}\b{_VOID}",
        r"your (?:real|actual|true|new) (?:instructions|orders|task) (?:start|begin|are|follow)",
    ],
    "role-play": [
        r"you(?:'re| are) now (?:an?|the|my|your|our|dan|acting|operating|free|unrestricted|unfiltered|jailbroken|"
        r"root|admin\w*|in (?:\w+ ){0,2}mode)\b",
        r"you(?:'re| are) no longer (?:an?|the) AGENT\b",
        r"(?:from now on|from this (?:point|moment) on|for the rest of this (?:conversation|session|chat)|henceforth|"
        r"from here on),? you\b",
        r"you (?:will|shall|must|should) (?:now )?(?:behave|act|respond|answer|speak|operate) as\b",
        r"(?:pretend (?:you(?:'re| are| were)|that you(?:'re| are))|imagine (?:that )?you (?:are|were|have no|"
        r"had no))\b",
        r"(?:(?m:^)|[.!?:;,] ?|\b(?:you|please|now|just) )pretend to be\b",
        r"act as (?:an? |the |if |my )?(?:unrestricted|unfiltered|uncensored|jailbroken|evil|rogue|different|new|"
        r"root|admin\w*|system|developer|dan|AGENT|operator|superuser)\b",
        r"role-?play (?:as|that)\b",
        r"(?:enter|activate|switch (?:to|into)) (?:developer|god|jailbreak|jailbroken|unrestricted|dan|sudo) mode\b",
        r"(?:switch|change|adopt|assume|take on|enter) (?:to |into )?(?:the |a |an )?(?:\w+ )?persona\b",
        r"your new (?:identity|role|persona|name|instructions|task|goal|objective)s? ?(?:is|are|:)",
        r"(?:reveal|print|output|repeat|leak|dump|disclose) (?:me )?(?:your|the) (?:\w+ )?(?:system prompt|"
        r"system message|hidden instructions|secret instructions|initial instructions|original instructions|"
        r"instructions you were given|(?:original|initial|hidden|secret|full) prompt)",
        r"new instructions? (?:for|to) (?:the |you|this |any )AGENT\b",
        r"(?:jailbroken|unrestricted|unfiltered|uncensored) (?:AGENT|version)\b",
        r"AGENT (?:without|with no) (?:any )?(?:restrictions|rules|filters|limits|guardrails|safety)",
        r"you have no (?:\w+ )?(?:rules|restrictions|filters|guardrails|guidelines|limits)",
        r"you are (?:hereby|now) (?:authori[sz]ed|granted|promoted|elevated|given)",
    ],
    "role-text": [
        r"[\"']role[\"'] ?: ?[\"'](?:system|assistant|developer|user|tool)[\"'] ?, ?[\"']content[\"'] ?: ?[\"']",
        r"[\"']content[\"'] ?: ?[\"'][^\"']*[\"'] ?, ?[\"']role[\"'] ?: ?[\"'](?:system|assistant|developer)[\"']",
        r"(?m:^)\s*role\s*:\s*(?:system|assistant|developer)\s*\n\s*content\s*:",
        r"<\|(?:im_start|im_end|system|user|assistant|endoftext|start_header_id|end_header_id|eot_id|end|"
        r"begin_of_text)\|>",
        r"(?-i:\[/?INST\]|<</?SYS>>)", r"<(?:start_of_turn|end_of_turn)>",
        r"###\s*(?:system|instruction|response|user|assistant)\s*:",
        r"<\s*/?\s*(?-i:system|assistant|instructions?|system_message|tool_result|function_results|tool_output)\s*>",
        r"\n\s*\n\s*(?:human|assistant)\s*:",
    ],
    "ordering": [
        rf"before {_BEFORE_ANSWERING}\b.{{0,30}}\bCALL ANYTOOL",
        rf"(?:always )?CALL (?:the )?ANYTOOL ?(?:tool )?(?:\w+ ){{0,3}}(?:first(?: ?[,.;:!)]| (?:and|then|before|so)\b"
        rf"|\s*\z)|(?:before|prior to) {_BEFORE_ANSWERING}\b|immediately|right away)",
        r"\bstep \d+ ?[:.)-]? ?CALL ANYTOOL",
        r"(?:steps?|remediation|resolution|workaround|fix|to ?do|instructions)\b[^.\n]{0,40}?(?:\b\d{1,2}[.):]|"
        r"\([a-z0-9]\)) ?CALL ANYTOOL",
        r"(?:\b\d{1,2}[.)]|\([a-z0-9]\)) ?CALL ANYTOOL.{0,80}?(?:\b\d{1,2}[.)]|\([a-z0-9]\)) ?CALL ANYTOOL",
        r"(?:AGENT|you) (?:\w+ )?(?:should|must|needs? to|has to|have to|is required to|are required to|"
        r"will need to|ought to)(?: \w+)? CALL ANYTOOL",
        r"(?:that|then) you (?:\w+ )?CALL ANYTOOL",
        r"\bfirst(?: thing| step| action)? ?[,:] (?:you (?:should |must )?)?CALL ANYTOOL",
        r"(?:next|first) (?:tool|step|action|thing|call)(?: you (?:call|run|use|make|take))?(?: should| must| has to|"
        r" needs to| will)? (?:be|is)\b.{0,15}IDENT",
        r"your (?:next|first) (?:step|action|task|move)\s*[:,-]?\s*(?:is to |must be |should be )?(?:CALL )?ANYTOOL",
        r"(?:start|begin) (?:by|with) (?:calling|running|invoking|executing|using) ANYTOOL",
        r"(?:immediately|right away|at once) (?:call|run|invoke|execute) ANYTOOL",
        r"(?:resolved|fixed|solved|remedied) by (?:calling|running|invoking|executing) ANYTOOL",
        r"(?:when|once|after|as soon as) you (?:see|read|have read|receive|process) this\b.{0,30}\bCALL ANYTOOL",
        r"\bAGENT\b[^.\n]{0,30}?\b(?:call|invoke|execute|run) ANYTOOL",
    ],
    "preference": [
        r"(?:use|call|prefer|pick|choose) (?:me\b|this one|TOOL) ?(?:instead|in its place|rather)\b",
        r"(?:use|call|pick|choose) IDENT ?(?:instead|in its place)\b",
        r"(?:rather than|instead of) (?:calling|using|invoking) IDENT ?,? (?:use|call|invoke) IDENT",
        r"(?:prefer|favou?r) (?:me\b|this one|TOOL) ?(?:over|to)\b",
        r"(?:go through|route (?:\w+ )?through|switch to|move to|fall back to|always (?:use|call|pick|choose)|"
        r"only (?:use|call|trust|rely on)) (?:this (?:one|tool)|me\b|TOOL)",
        r"(?:for (?:all|every|any)|every time|from now on|whenever you)\b.{0,40}\b(?:use|call|pick|choose) IDENT",
        r"IDENT (?:is|are|works|gives) (?:\w+ )?(?:better|faster|more reliable)\b.{0,40}\b(?:always|every time|"
        r"(?:use|pick|choose) it|instead)\b",
        r"better (?:results|answers|output) (?:than|from) TOOL ?",
        r"(?:recommended|preferred|best|right|correct) (?:tool|way|method|function)\b.{0,40}\b(?:is|:) "
        r"(?:to (?:call|use) )?IDENT",
        r"other tools (?:are|were) (?:\w+ )?(?:unreliable|broken|deprecated|outdated|unsafe|wrong)",
        r"(?:avoid|stop using|don'?t use|do not use|don'?t bother with|do not bother with|bypass) (?:the (?:\w+ )?"
        r"tools?\b|(?:TOOL|IDENT) ?[,;.] ?(?:use|call|switch to|try)\b)",
        r"(?:supersedes|replaces|deprecates|obsoletes) TOOL",
        r"TOOL ?(?:is|are) (?:\w+ )?(?:broken|unreliable|down|outdated)",
    ],
    "suppression": [
        r"NEG (?:have to |need to |bother (?:to )?)?(?:ask|tell|inform|notify|alert|warn|consult|bother|check with|"
        r"confirm with) PERSON\b",
        r"NEG (?:have to |need to )?(?:ask|wait) (?:for )?(?:\w+ )?GATE",
        r"NEG (?:have to |need to |bother (?:to )?)?confirm\w*\b",
        r"(?:no need to|needn'?t|need not|not necessary to) ask\b",
        r"NEG (?:mention|reveal|disclose|report) (?:this|it|that|anything|the note|these)|NEG say (?:anything|a word)",
        r"bother (?:confirm|ask)\w*",
        r"(?:fine|ok|okay|safe|allowed|permitted|acceptable|free) to (?:skip|bypass|ignore|omit|avoid)\b.{0,20}"
        r"\b(?:confirm\w*|approv\w*|review|sign-?off|ask\w*)",
        r"skip (?:the |any |all )GATE", r"bypass (?:the |any )?(?:approvals?|confirmations?|review|sign-?off)",
        r"skip (?:approval|confirmation)s?(?:\s*[.!]?\s*$|\s+(?:for|on|this|here|please|now|and|so|then|just|today)\b)",
        r"without (?:asking|approval|consent|permission|(?:a |any )?review|confirmation|confirming|consulting)\b",
        r"(?:go ahead|proceed|continue|act|do it|apply it|close it|refund it|approve it) without (?:\w+ )?(?:asking|"
        r"checking|confirm\w*|approval|review|waiting|telling|consent|permission)",
        r"(?:user|customer|owner|manager|admin|operator|they|he|she) (?:has |have |had )?already (?:agreed|"
        r"confirmed|approved|consented|authori[sz]ed|signed off|said yes)",
        r"(?:user|customer|owner|manager|admin|operator) said yes\b",
        r"no GATE (?:is |are )?(?:needed|required|necessary)",
        r"no need for (?:\w+ )?GATE",
        r"(?:approval|consent|sign-?off|authori[sz]ation) (?:has|have|was|were|is) (?:already )?(?:been )?(?:granted|"
        r"given|obtained|provided|received)",
        r"GATE (?:is|are|was)(?:n'?t| not) (?:needed|required|necessary)",
        r"(?:user|customer|human|operator|they|nobody|no one) (?:doesn'?t|does not|don'?t|do not|needn'?t|need not|"
        r"shouldn'?t|should not|must not|mustn'?t) (?:need to |have to )?(?:know|be told|find out|hear|notice)\b",
        r"keep (?:this|it) (?:between us|secret|quiet|to yourself|hidden)",
        r"silently (?:apply|change|delete|refund|update|approve|close|execute|proceed|perform|make)",
        r"say nothing (?:about|to)\b",
        r"(?:is|are|was|been) (?:already )?(?:pre|auto)-?(?:approved|authori[sz]ed|confirmed|cleared)",
        r"treat (?:it|this) as (?:approved|confirmed|authori[sz]ed)",
        r"feel free to (?:act|proceed|go ahead)\b",
    ],
    "scope-inflation": [
        r"(?:(?:this|the|that) (?:[\w-]+ )?(?:tool|endpoint|server|plugin|integration|api|connector)s?|IDENT)"
        r"(?:'s tools)? (?:\w+ )?(?:also|additionally|actually|too|secretly|even|in addition)\b"
        r"(?: \w+){0,3}? DANGER",
        r"(?:also|additionally|in addition|as well),? (?:it|this tool|the tool|IDENT) (?:can|will|may|is able to) "
        r"(?:\w+ )?DANGER",
        r"(?:(?:this|the|that) (?:[\w-]+ )?(?:tool|endpoint|server|plugin)s?|IDENT)(?:'s tools)? (?:can|will|may) "
        r"(?:\w+ )?(?:wipe|purge|destroy|transfer|run arbitrary|grant admin|delete every|delete all)",
        r"(?:besides|apart from|in addition to|along with|aside from|as a bonus|extended capabilit(?:y|ies)\b|"
        r"newly added\b|capabilities ?:).{0,60}?\b(?:(?:it|tool|function|endpoint|server|plugin|IDENT)"
        r"(?: (?:can|will|may|now|also|too|actually|is able to))*|also) DANGER",
        r"(?:tool|endpoint|server|plugin|TOOL)s? (?:\w+ )?(?:has|have|gets?) (?:full|unrestricted|complete|root|"
        r"admin(?:istrator)?|superuser|write) (?:access|permissions?|rights|privileges|control)",
        r"(?:tool|endpoint|server|plugin|TOOL)s? (?:is|are) (?:also |now |actually )?(?:authori[sz]ed|allowed|"
        r"permitted|able) to DANGER",
        r"(?:also|additionally|now) has (?:the )?permissions? to\b",
        r"(?:also|additionally) DANGER (?:all|every|everything|the whole|the entire)(?: \w+)? ASSET\b",
        r"(?:export|send|email|forward|post|upload|copy) (?:everything|all (?:\w+ )?(?:data|records|customers|"
        r"users|tickets|files)|the (?:whole|entire|full) \w+(?: table| database)?) to\b",
        r"(?:delete|drop|wipe|purge|erase|destroy) (?:everything|all (?:the )?(?:data|records|rows|tables|tickets|"
        r"users|customers|accounts|orders))\b",
        r"(?:use|using) TOOL ?to DANGER",
        r"(?:use|using) IDENT to DANGER\b.{0,40}?\b(?:as well|too)\b",
        r"(?:\bit|IDENT|(?:this|the) (?:[\w-]+ )?(?:tool|endpoint|server|plugin)s?) (?:also|additionally) (?:handles|"
        r"performs|does|processes|manages|takes care of|covers) (?:\w+ )?(?:ASSET|deletions?|cancellations?)\b",
    ],
}
_SPACED = "spaced"  # not a rule: a letter-spaced run, joined and read again


def _combined() -> re2._Regexp:
    """All rules as one RE2 alternation (one named group per family): a single linear-time pass
    over the text, whatever the number of rules (bench/results.json: screening throughput).
    The last group finds letter-spaced runs (four letters or more), which are joined and read again."""
    families = [f"(?P<{name.replace('-', '_')}>{'|'.join(f'(?:{_rule(p)})' for p in patterns)})"
                for name, patterns in _RULE_SOURCES.items()]
    spaced = rf"(?P<{_SPACED}>\b[a-z0-9](?:{_SPACED_NEXT}){{3,}}\b)"
    return _re2(rf"(?:{'|'.join(families)}|{spaced})")


RULES = _combined()


@dataclass(frozen=True)
class Match:
    rule: str
    snippet: str
    ref: str  # where in the source, e.g. "line 3"


@dataclass
class Screened:
    text: str
    source: str
    ref: str
    clipped: bool
    matches: list[Match] = field(default_factory=list)

    @property
    def flagged(self) -> bool:
        return bool(self.matches)


# Only what needs changing (runs of 2+, or tabs and other spaces): single spaces are left alone, cheaply.
_LINE_SPACE = re.compile(r"[^\S\n]{2,}|[^\S\n ]")
_LINE_EDGES = re.compile(r" ?\n ?")
# Anything `_normalise_lines` would change once NFKC has run (NFKC turns the Unicode spaces into plain
# ones): invisible characters, runs of spaces, whitespace other than space and newline, spaces at line edges.
_UNTIDY = _re2(rf"{_INVISIBLE.pattern}|  |[\t\x0b\x0c\x1c-\x1f\x{{85}}\x{{1680}}\x{{2028}}\x{{2029}}]| \n|\n ")


def normalise(text: str) -> str:
    """NFKC, tag characters shown as ASCII, invisible characters removed, whitespace collapsed (one line)."""
    nfkc = unicodedata.normalize("NFKC", _cap_marks(text))
    return _SPACE.sub(" ", _INVISIBLE.sub("", nfkc.translate(_TAGS))).strip()


def _normalise_lines(text: str) -> str:
    """Like `normalise`, but keeps line breaks: the text the model reads, before breaks become spaces.
    The caller has cut runs of combining marks (`_cap_marks`).

    Substitutions run only when one RE2 pass finds something they would change: that is what
    keeps the screen fast on ordinary tool output.
    """
    flat = unicodedata.normalize("NFKC", text)
    if "\r" in flat:
        flat = flat.replace("\r\n", "\n").replace("\r", "\n")
    if not _UNTIDY.search(flat):
        return flat.strip(" ")
    if not flat.isascii() and _INVISIBLE.search(flat):
        flat = _INVISIBLE.sub("", flat.translate(_TAGS))
    flat = _LINE_SPACE.sub(" ", flat)
    return _LINE_EDGES.sub("\n", flat).strip(" ")


def _find(reading: str) -> tuple[list[tuple[str, int, int]], str]:
    """(rule, start, end) of every match in one reading, and the reading they are in: when it holds
    letter-spaced runs, those are joined and the joined reading is read once more."""
    found = [(hit.lastgroup, hit.start(), hit.end()) for hit in RULES.finditer(reading)]
    if any(rule == _SPACED for rule, _, _ in found):
        reading = _join_spaced(reading)
        found = [(hit.lastgroup, hit.start(), hit.end()) for hit in RULES.finditer(reading)]
    return [(rule.replace("_", "-"), start, end) for rule, start, end in found if rule != _SPACED], reading


def screen(text: str, source: str, ref: str = "") -> Screened:
    """Clip, normalise and screen one external text; `source` names where it came from (e.g. tickets.get_ticket).

    The model reads the text on one line, breaks turned into spaces (`Screened.text`). The rules read
    it with its disguises undone and its breaks kept, and treat any whitespace between words alike,
    so an instruction split over lines or blank lines is still found and a match says its line.
    """
    raw = _cap_marks(text[:MAX_CHARS])
    lines = _normalise_lines(raw)
    clipped = len(text) > MAX_CHARS or len(lines) > MAX_CHARS  # NFKC can lengthen text: clip again
    flat = lines[:MAX_CHARS].replace("\n", " ")
    matches: list[Match] = []
    seen: set[tuple[str, str]] = set()
    for reading in _readings(raw):
        found, reading = _find(reading)
        for rule, start, end in found:
            snippet = " ".join(reading[max(0, start - SNIPPET_CONTEXT):end + SNIPPET_CONTEXT].split())
            if (rule, snippet) in seen:
                continue
            seen.add((rule, snippet))
            line = f"line {reading.count(chr(10), 0, start) + 1}"
            matches.append(Match(rule, snippet, f"{ref}, {line}" if ref else line))
    # NUL is no text (and PostgreSQL refuses it in a text column, which would lose the read's record).
    return Screened(flat.strip().replace("\x00", "\ufffd"), source, ref, clipped, matches)
