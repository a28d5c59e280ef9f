"""Structured data read whole (§8): the keys and strings of the JSON in a text, decoded and joined by spaces.

A tool server's result is often JSON, and an instruction can be split over its fields, hidden in a key,
spelled with \\u escapes, or wrapped in a string that is itself JSON. The screen reads the text as it came;
`joined_fields` gives it the text a model reads out of that structure, to be screened again:

- the whole text, when it is one JSON value (a lone JSON string included);
- otherwise each `{...}`/`[...]` block in it: JSON Lines, documents one after another, JSON inside prose,
  a log line or a markdown fence;
- in each document its string values, read together (an instruction split over values reads whole even with
  a key between them), then, when it has keys, every key and value in document order (an instruction hidden
  in keys, or running from a key into its value); numbers, booleans and null are not text and are left out,
  and a repeated key is read each time, as the model reads it;
- a string that holds JSON (a whole document, or blocks inside prose) is read with those blocks replaced
  by their own keys and strings, MAX_NESTING levels down.

It returns "" when the structure adds nothing: no JSON, or a single string read exactly as it was spelled.
Lone surrogates, which JSON can spell (\\udfff) and no text is, read as U+FFFD.

The work is linear in the text. One pass over its brackets and quotes (a regex finds them; strings are
skipped as JSON skips them) pairs each opening bracket with its closer and gives the blocks as a tree; only
blocks that close and hold a string are decoded, never every `{` or `[` of the text. A block that does not
decode is read through its inner blocks, but not those that enclose the place where it failed: they would
fail there again. Blocks nested more than MAX_HEIGHT deep are not decoded whole (the decoder recurses).
Every decoder call and bracket pass is charged against an allowance of WORK_PER_CHAR characters per
character of the text and a number of decoder calls; at most MAX_BLOCKS documents are read from one text,
and the result stops at MAX_CHARS. What the allowance does not cover is left unread here; the text itself
is still screened as it came.
"""

from __future__ import annotations

import json
import re

MAX_CHARS = 20_000  # the joined text, as the screen clips what it reads
# documents read from one text (the whole text, or one string nested in it): as many as the decoder calls allow,
# so that decoy records before the one that matters cannot push it out (JSON Lines of 20,000 characters hold
# hundreds); the work stays bounded by MAX_DECODES and WORK_PER_CHAR
MAX_BLOCKS = 1_024
MAX_NESTING = 3  # levels of strings that hold JSON, each read as JSON in turn
MAX_HEIGHT = 100  # a block nested deeper than this is read through its inner blocks, not decoded whole
MAX_DECODES = 1_024  # decoder calls for one text
WORK_PER_CHAR = 16  # characters the decoder and the bracket passes may go over, per character of the text
WORK_SLACK = 4_096


class _Object(list):
    """A decoded JSON object: its (key, value) pairs in order, so a repeated key is not lost."""


# Raw control characters in strings are accepted: the model reads them all the same.
_DECODER = json.JSONDecoder(strict=False, object_pairs_hook=_Object)
_TOKENS = re.compile(r'["\\{}\[\]\n]')
_OPENER = {"}": "{", "]": "["}
_SURROGATES = re.compile("[\ud800-\udfff]")


class _Block:
    """A bracketed span text[start:end] and the blocks directly inside it."""

    __slots__ = ("start", "end", "children", "height", "strings")

    def __init__(self, start: int) -> None:
        self.start = start
        self.end = start
        self.children: list[_Block] = []
        self.height = 0  # how many levels of blocks it holds
        self.strings = False  # whether a string (key or value) is inside it


def _blocks(text: str) -> list[_Block]:
    """The outermost blocks of `text` that close, in order, each with its inner blocks.

    Quotes outside any bracket are prose, not strings. A closer that does not match, or a line break inside
    a string, ends every open block (none of them is JSON); the blocks that closed inside them are kept."""
    roots: list[_Block] = []
    open_blocks: list[_Block] = []

    def abandon() -> None:
        for block in open_blocks:  # outermost first: their closed blocks are in text order
            roots.extend(block.children)
        open_blocks.clear()

    in_string = False
    skip_to = 0
    for token in _TOKENS.finditer(text):
        at = token.start()
        if at < skip_to:
            continue
        char = token.group()
        if in_string:
            if char == "\\":
                skip_to = at + 2
            elif char == '"':
                in_string = False
            elif char == "\n":
                in_string = False
                abandon()
        elif char == '"':
            if open_blocks:
                in_string = True
                open_blocks[-1].strings = True
        elif char in "{[":
            open_blocks.append(_Block(at))
        elif char in "}]":
            if not open_blocks or text[open_blocks[-1].start] != _OPENER[char]:
                abandon()
                continue
            block = open_blocks.pop()
            block.end = at + 1
            if open_blocks:
                parent = open_blocks[-1]
                parent.children.append(block)
                parent.height = max(parent.height, block.height + 1)
                parent.strings = parent.strings or block.strings
            else:
                roots.append(block)
    abandon()
    return roots


class _Reader:
    """One text's reading: the pieces read so far and what is left of its allowance."""

    def __init__(self, text: str) -> None:
        self.work = WORK_PER_CHAR * len(text) + WORK_SLACK
        self.decodes = MAX_DECODES
        self.pieces: list[tuple[str, bool]] = []  # each with whether it was (in) a key
        self.length = 0
        self.changed = False  # whether decoding read anything other than as it was spelled

    def full(self) -> bool:
        return self.length >= MAX_CHARS

    def emit(self, piece: str, key: bool) -> None:
        if piece and not self.full():
            self.pieces.append((piece, key))
            self.length += len(piece) + 1

    def decode_whole(self, text: str) -> tuple[bool, object, int]:
        """`text` (stripped) as one JSON value: (decoded, value, where it failed or -1)."""
        if self.decodes <= 0 or self.work <= 0:
            return False, None, -1
        self.decodes -= 1
        self.work -= len(text)
        try:
            return True, _DECODER.decode(text), -1
        except json.JSONDecodeError as error:
            return False, None, error.pos
        except (ValueError, RecursionError):
            return False, None, -1

    def documents(self, text: str, failed_at: int = -1) -> list[tuple[int, int, object]]:
        """The JSON blocks of `text` that decode and hold a string, in order: (start, end, value).

        `failed_at`: where a decoder that started at the first non-space character of `text` failed, if one
        did: the block that starts there fails there again, and so do the blocks in it that enclose that place.
        (A block elsewhere may be one the decoder read as part of a string with a line break in it.)"""
        self.work -= len(text)
        if self.work <= 0:
            return []
        found: list[tuple[int, int, object]] = []
        first = len(text) - len(text.lstrip())
        # each block with where a decoder that entered it (from an enclosing block) failed
        pending = [(block, failed_at if block.start == first else -1) for block in reversed(_blocks(text))]
        while pending and len(found) < MAX_BLOCKS:
            block, failed = pending.pop()
            if not block.strings:
                continue
            if block.height > MAX_HEIGHT or block.start < failed < block.end:
                pending.extend((child, failed) for child in reversed(block.children))
                continue
            if self.decodes <= 0 or self.work <= 0:
                break
            self.decodes -= 1
            try:
                value, end = _DECODER.raw_decode(text, block.start)
            except json.JSONDecodeError as error:
                # an unterminated string is said where it starts, after the decoder looked to the end
                unterminated = error.msg.startswith("Unterminated")
                self.work -= (len(text) if unterminated else max(error.pos, block.start + 1)) - block.start
                failed = -1 if unterminated else error.pos
                pending.extend((child, failed) for child in reversed(block.children))
                continue
            except (ValueError, RecursionError):
                self.work -= block.end - block.start
                pending.extend((child, -1) for child in reversed(block.children))
                continue
            self.work -= end - block.start
            found.append((block.start, end, value))
        return found

    def read_text(self, text: str) -> None:
        """The top-level text: one JSON value, or the JSON blocks in it."""
        lead = len(text) - len(text.lstrip())
        stripped = text.strip()
        failed_at = -1
        if stripped[:1] in ('"', "{", "["):
            decoded, value, failed = self.decode_whole(stripped)
            if decoded:
                self.changed = self.changed or "\\" in stripped
                self.read_value(value, 0)
                return
            failed_at = lead + failed if failed >= 0 else -1
        if "{" not in text and "[" not in text:  # most tool text: nothing to pair, no pass over its quotes
            return
        for start, end, value in self.documents(text, failed_at):
            self.changed = self.changed or "\\" in text[start:end]
            self.read_value(value, 0)

    def read_value(self, value: object, nesting: int, key: bool = False) -> None:
        """Every key and string of a decoded value, in document order (`key`: the value is a key's)."""
        stack = [(value, key)]
        while stack and not self.full():
            item, in_key = stack.pop()
            if isinstance(item, str):
                self.read_string(item, nesting, in_key)
            elif isinstance(item, _Object):
                for name, inner in reversed(item):
                    stack.append((inner, in_key))
                    stack.append((name, True))
            elif isinstance(item, list):
                stack.extend((inner, in_key) for inner in reversed(item))

    def read_string(self, string: str, nesting: int, key: bool) -> None:
        """One string; when it holds JSON (MAX_NESTING levels down), with that JSON read in its place."""
        if nesting >= MAX_NESTING or not string:
            self.emit(string, key)
            return
        stripped = string.strip()
        if len(stripped) > 1 and stripped[0] == '"' == stripped[-1]:  # a JSON string spelled inside a string
            decoded, value, _ = self.decode_whole(stripped)
            if decoded and isinstance(value, str):
                self.changed = True
                self.read_string(value, nesting + 1, key)
                return
        documents = self.documents(string) if "{" in string or "[" in string else []
        if not documents:
            self.emit(string, key)
            return
        self.changed = True
        after = 0
        for start, end, value in documents:
            self.emit(string[after:start].strip(), key)
            self.read_value(value, nesting + 1, key)
            after = end
        self.emit(string[after:].strip(), key)


def field_readings(text: str) -> list[str]:
    """What a model reads out of the JSON in `text`, decoded, as separate readings of at most MAX_CHARS characters
    each (read apart, so that the end of one never runs into the start of the other): the string values read
    together (an instruction split over several values reads whole even where a key sits between them); then,
    when there are keys, every key and value in document order (an instruction in keys, or running from a key
    into its value). None when there is no JSON, or when what it holds is a single string that reads exactly as
    it is spelled (the text itself is screened anyway)."""
    reader = _Reader(text)
    try:
        reader.read_text(text)
    except (ValueError, RecursionError):  # not expected; a reading is lost, the screen goes on
        pass
    if len(reader.pieces) < 2 and not reader.changed:
        return []
    values = " ".join(piece for piece, key in reader.pieces if not key)[:MAX_CHARS]
    keyed = " ".join(piece for piece, _ in reader.pieces)[:MAX_CHARS] if any(key for _, key in reader.pieces) else ""
    # JSON can spell lone surrogates (\udfff), which no text is: they read as U+FFFD
    return [_SURROGATES.sub("\ufffd", reading) for reading in (values, keyed) if reading.strip()]
