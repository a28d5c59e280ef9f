"""The fixed discovery probes (§5). Output is data from the warehouse:
it reaches the model only through the agent's read-path screen."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from difflib import SequenceMatcher

import sqlalchemy as sa

from services.resources.catalog import Catalog, CatalogField, CatalogRelationship
from services.resources.draft import TEMPORAL
from services.resources.results import normalize_cell
from services.resources.warehouse import Warehouse
from shared.rpc.next_steps import metadata
from shared.rpc.refusals import Invalid, Refusal
from shared.semantic.model import MAX_PHRASE_WORDS, key_fields, spoken_words

MAX_DOMAIN_VALUES = 20
MAX_MATCHES = 20
# Near spellings ("stroe" for `store`): a word of at least MIN_TYPO_LETTERS letters that names no value as said,
# against the one-word values of a field with at most MAX_SPELLED_VALUES distinct values; the same first letter,
# difflib's ratio at least TYPO_RATIO, and one edit at most (two when the word and the value both have at least
# LONG_WORD_LETTERS letters).
MAX_SPELLED_VALUES = 200
MIN_TYPO_LETTERS = 4
TYPO_RATIO = 0.8
LONG_WORD_LETTERS = 7

# A field's distinct values when it has few (None when it has more than MAX_SPELLED_VALUES).
FewValues = Callable[[CatalogField], tuple[str, ...] | None]


@dataclass(frozen=True)
class ValueMatch:
    """A stored value a text names, and the text's words (lower-cased) that named it; `approximate` when those
    words were a near spelling of the value ("stroe" of `store`), not the value itself."""

    field: CatalogField
    value: str
    matched_text: str
    approximate: bool = False


def _refuse(reason: str, message: str) -> Refusal:
    return Invalid(reason, message, metadata("/field_id"))


def value_domain(warehouse: Warehouse, fld: CatalogField) -> tuple[list[str], bool]:
    if fld.spec.exposure != "bounded-values":
        raise _refuse("PROBE_NOT_ALLOWED", f"value-domain is only for fields with bounded values; "
                                           f"{fld.spec.label!r} is {fld.spec.exposure}")
    column = fld.column
    statement = sa.select(column).where(column.is_not(None)).distinct().order_by(column).limit(MAX_DOMAIN_VALUES + 1)
    rows, _ = warehouse.fetch(statement, MAX_DOMAIN_VALUES + 1)
    values = [str(normalize_cell(row[0], fld.spec.type)) for row in rows[:MAX_DOMAIN_VALUES]]
    return values, len(rows) > MAX_DOMAIN_VALUES


def field_profile(warehouse: Warehouse, fld: CatalogField) -> tuple[int, int, int]:
    column = fld.column
    statement = sa.select(sa.func.count(), sa.func.count(column), sa.func.count(sa.distinct(column))).select_from(
        column.table)
    (total, non_null, distinct), = warehouse.fetch(statement, 1)[0]
    return int(total), int(total) - int(non_null), int(distinct)


def time_bounds(warehouse: Warehouse, fld: CatalogField):
    if fld.spec.type not in TEMPORAL:
        raise _refuse("PROBE_NOT_ALLOWED", f"time-bounds needs a date or time field; {fld.spec.label!r} is "
                                           f"{fld.spec.type}")
    statement = sa.select(sa.func.min(fld.column), sa.func.max(fld.column))
    (earliest, latest), = warehouse.fetch(statement, 1)[0]
    return (normalize_cell(earliest, "timestamp"), normalize_cell(latest, "timestamp"))


def join_coverage(warehouse: Warehouse, catalog: Catalog, rel: CatalogRelationship) -> tuple[int, int]:
    spec = rel.spec
    start, end = catalog.entities[spec.from_entity], catalog.entities[spec.to_entity]
    start_table, end_table = start.table.alias("f"), end.table.alias("t")
    pairs = zip(key_fields(spec.from_field), key_fields(spec.to_field), strict=True)
    # Match on existence, so a one-to-many target cannot count a row twice.
    matched = sa.exists().where(*[end_table.c[end.fields[b].column.name] == start_table.c[start.fields[a].column.name]
                                  for a, b in pairs])
    statement = sa.select(sa.func.count(), sa.func.sum(sa.case((matched, 1), else_=0))).select_from(start_table)
    (total, hits), = warehouse.fetch(statement, 1)[0]
    return int(total or 0), int(hits or 0)


def phrases(text: str) -> list[str]:
    """Every run of 1-4 consecutive words of `text` (as spoken_words reads them), each once: the longest first,
    then in the order they are said, so the words that named a value are the fullest that did ("in store", not
    "store")."""
    words = spoken_words(text)
    found: dict[str, None] = {}
    for size in range(MAX_PHRASE_WORDS, 0, -1):
        for start in range(len(words) - size + 1):
            found.setdefault(" ".join(words[start:start + size]))
    return list(found)


def _spaced(text: str) -> str:
    """Underscores and hyphens read as spaces: a person says "small business" of `small_business`."""
    return text.replace("_", " ").replace("-", " ")


def singulars(phrase: str) -> list[str]:
    """`phrase` with its last word read as an English plural made singular, every way the simple rules allow
    ("marketplaces" → "marketplace", "businesses" → "business", "groceries" → "grocery"): which one holds is the
    data's to say, since only stored values match. A last word that is not all letters, ends in "ss" ("business")
    or would keep under three letters has none."""
    head, _, last = phrase.rpartition(" ")
    if not last.isalpha() or not last.endswith("s") or last.endswith("ss"):
        return []
    stems = [last[:-3] + "y"] if last.endswith("ies") else []
    stems += [last[:-2]] if last.endswith("es") else []
    stems.append(last[:-1])
    return [f"{head} {stem}" if head else stem for stem in stems if len(stem) >= 3]


def _namings(fld: CatalogField, said: list[str], value: str) -> tuple[list[str], list[str]]:
    """The phrases of `said` that name `value` of `fld`, in their order: (those that say it, those that say its
    plural). A phrase says a value when it is the value itself (any case, underscores and hyphens as spaces) or
    another word the model declares for it; it says its plural when its last word, made singular, gives the value
    ("small businesses" of `small_business`; declared words are taken as written). Only the text's own words are
    ever returned as matched_text, never the value: a database that lowers some letter otherwise than Python
    gets "" rather than a value."""
    spaced = _spaced(value.casefold())
    other_words = {" ".join(spoken_words(phrase)) for phrase in fld.spec.values.get(value, ())}
    as_said = [phrase for phrase in said if _spaced(phrase.casefold()) == spaced or phrase in other_words]
    # another word for the value first: the value's own name is found by the reader anyway, the other word
    # ("third-party" beside "marketplace") only if it is returned
    as_said.sort(key=lambda phrase: _spaced(phrase.casefold()) == spaced)
    plural = [phrase for phrase in said if phrase not in as_said and spaced in singulars(_spaced(phrase.casefold()))]
    return as_said, plural


def few_values(warehouse: Warehouse, fld: CatalogField) -> tuple[str, ...] | None:
    """The distinct values of `fld` when it has at most MAX_SPELLED_VALUES of them (None when it has more): what
    a near spelling is looked for among. Read for the gateway only: no one is shown them and no budget counts
    them."""
    column = fld.column
    statement = sa.select(column).where(column.is_not(None)).distinct().limit(MAX_SPELLED_VALUES + 1)
    rows, _ = warehouse.fetch(statement, MAX_SPELLED_VALUES + 1)
    return None if len(rows) > MAX_SPELLED_VALUES else tuple(sorted(str(row[0]) for row in rows))


def edits(a: str, b: str) -> int:
    """The fewest one-letter insertions, deletions, substitutions and swaps of two neighbours that make `a` `b`
    (optimal string alignment)."""
    before, row = None, list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            cost = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + (x != y))
            if before is not None and j > 1 and x == b[j - 2] and a[i - 2] == y:
                cost = min(cost, before[j - 2] + 1)
            current.append(cost)
        before, row = row, current
    return row[-1]


def near_spelling(word: str, values: tuple[str, ...]) -> str | None:
    """The one-word value of `values` that `word` (lower-cased) most likely misspells, if any is near enough:
    the same first letter, difflib's ratio at least TYPO_RATIO and few edits apart ("stroe" → `store`,
    "cananda" → `Canada`; "higher" is not `high`, nor "refund" `refunded`). A value spelled as `word` is no
    misspelling of it."""
    word = word.casefold()
    best: tuple[float, int, str] | None = None
    for value in values:
        folded = value.casefold()
        one_word = len(_spaced(folded).split()) == 1 and folded == folded.strip()
        if not one_word or folded == word or folded[0] != word[0] or abs(len(folded) - len(word)) > 2:
            continue
        ratio = SequenceMatcher(None, word, folded).ratio()
        if ratio < TYPO_RATIO:
            continue
        apart = edits(word, folded)
        if apart <= (2 if min(len(word), len(folded)) >= LONG_WORD_LETTERS else 1):
            candidate = (-ratio, apart, value)
            best = candidate if best is None or candidate < best else best
    return None if best is None else best[2]


def _heads(values: tuple[str, ...]) -> dict[str, str]:
    """Values of two names joined ("Toys & Games", "Home and Kitchen") by their first name alone ("toys"), where
    no other value starts so: what people call the category in passing (answered as an assumption, said)."""
    heads: dict[str, list[str]] = {}
    for value in values:
        head = re.split(r"\s+(?:&|and)\s+", value.casefold(), maxsplit=1)
        if len(head) == 2 and head[0].isalpha() and len(head[0]) >= MIN_TYPO_LETTERS:
            heads.setdefault(head[0], []).append(value)
    return {head: found[0] for head, found in heads.items() if len(found) == 1}


def value_match(warehouse: Warehouse, fields: list[CatalogField], text: str,
                few: FewValues | None = None, held: FewValues | None = None) -> tuple[list[ValueMatch], bool]:
    """The values of `fields` that `text` names as whole words, whatever their case: a person writes
    "france" or "West coast", the data says "France" and "West Coast"; "small business" names
    `small_business`; "online" names `web` where the model says so (`values:`); a plural names its singular
    ("marketplaces" → `marketplace`) unless those words already name a value as said ("phones" is `Phones`, not
    `phone`). A word of four letters or more that names nothing then may be a near spelling of a one-word value
    of a field with few values ("stroe" → `store`, `approximate`); `few` gives those values (kept by the caller:
    without it they are read each time). `held` gives them as the data holds them now (kept by the caller under the
    data's version): a field with few values is then matched against them, without a scan. Only values the data
    holds are returned."""
    said = phrases(text)
    said_once = set(said)
    forms = {_spaced(phrase) for phrase in said}
    spaced = sorted(forms | {singular for form in forms for singular in singulars(form)})
    named: list[tuple[CatalogField, str, list[str], list[str]]] = []
    for fld in fields:
        if not said or len(named) > MAX_MATCHES:
            break
        declared = [value for value, others in fld.spec.values.items()
                    if any(" ".join(spoken_words(other)) in said_once for other in others)]
        values = held(fld) if held is not None else None
        matched = _matched(values, spaced, declared) if values is not None else \
            _matched_in(warehouse, fld, spaced, declared)
        named += [(fld, value, *_namings(fld, said, value)) for value in matched]
    truncated = len(named) > MAX_MATCHES
    saying = {phrase for _, _, as_said, _ in named for phrase in as_said}
    found: list[ValueMatch] = []
    for fld, value, as_said, plural in named:
        only_plural = [phrase for phrase in plural if phrase not in saying]
        if as_said or only_plural or not plural:  # neither: the database lowered a letter otherwise than Python
            found.append(ValueMatch(fld, value, (as_said or only_plural or [""])[0]))
    if not truncated:
        covered = {word for _, _, as_said, plural in named for phrase in as_said + plural for word in phrase.split()}
        found += _near_spellings(warehouse, fields, text, covered, found, few)
    return found[:MAX_MATCHES], truncated or len(found) > MAX_MATCHES


def _matched(values: tuple[str, ...], spaced: list[str], declared: list[str]) -> list[str]:
    """The values (sorted) that a spaced phrase names, lowered as the warehouse lowers them, or that are
    declared: what _matched_in asks the warehouse, over values already read."""
    wanted, declared_once = set(spaced), set(declared)
    return [value for value in values if _spaced(value.lower()) in wanted or value in declared_once][:MAX_MATCHES + 1]


def _matched_in(warehouse: Warehouse, fld: CatalogField, spaced: list[str], declared: list[str]) -> list[str]:
    """The distinct values of `fld` (sorted) that a spaced phrase names, whatever their case, or that are
    declared, read from the warehouse."""
    column = fld.column
    wanted = sa.func.replace(sa.func.replace(warehouse.lowered(column), "_", " "), "-", " ").in_(spaced)
    condition = sa.or_(wanted, column.in_(declared)) if declared else wanted
    statement = sa.select(column).where(condition).distinct().order_by(column).limit(MAX_MATCHES + 1)
    rows, _ = warehouse.fetch(statement, MAX_MATCHES + 1)
    return [str(row[0]) for row in rows]


def _near_spellings(warehouse: Warehouse, fields: list[CatalogField], text: str, covered: set[str],
                    found: list[ValueMatch], few: FewValues | None) -> list[ValueMatch]:
    """Values the words of `text` that named nothing (not in `covered`) nearly spell, field by field, up to
    one more than the room MAX_MATCHES leaves after `found`."""
    words = [word for word in dict.fromkeys(spoken_words(text))
             if len(word) >= MIN_TYPO_LETTERS and word.isalpha() and word not in covered]
    room = MAX_MATCHES + 1 - len(found)
    known = {(m.field.id, m.value) for m in found}
    near: list[ValueMatch] = []
    for fld in fields:
        if not words or len(near) >= room:
            break
        values = few(fld) if few is not None else few_values(warehouse, fld)
        # the model's other one-word names for values held ("webiste" is "website", which is web)
        others = {other.casefold(): value for value, said in fld.spec.values.items() if values and value in values
                  for other in said if len(_spaced(other).split()) == 1 and other.casefold() not in values}
        heads = _heads(values or ())
        for word in words:  # the word as said, else as a plural ("grocries": a slip in the plural of Grocery)
            value = next((heads[form] for form in (word, *singulars(word)) if form in heads), None)
            spelled = (near_spelling(form, (*values, *others)) for form in (word, *singulars(word))) if values else ()
            value = value or next(filter(None, spelled), None)
            value = others.get(value, value)
            if value is not None and (fld.id, value) not in known and len(near) < room:
                known.add((fld.id, value))
                near.append(ValueMatch(fld, value, word, approximate=True))
    return near
