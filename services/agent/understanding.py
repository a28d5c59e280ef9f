"""What a question asks, in the catalog's terms: the embedded planner's reading.

`understand()` maps every content word of a question to the catalog slice (measures, dimensions, values a
value-match probe found, time, ranking, shares, comparisons) and lists the words it could not map, so the
planner answers only what was asked. Pure: the same question, slice and matches give the same reading.
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
import unicodedata
from dataclasses import dataclass, field, replace

from services.agent.english import is_common, is_word
from services.agent.time_words import (
    MONTHS,
    NAMED_DAY_ALONE,
    UNIT_MONTHS,
    TimeSpan,
    dated,
    describe,
    find_times,
    named_day_within,
    named_days,
    shifted_back,
    side_by_side,
    widened_back,
)

_WORD = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*|%")  # words in any script: "región" stays one word
# Words that carry no meaning of their own for the catalog: asking, pointing and joining words.
STOP = frozenset("""
a an the of in on at to for from with about into within inside over under and or is are was were be been being
do does did
what whats which who how many much show me give tell list display see get find let us our we my i you your
their its it this that these those there here please can could would should will shall may might must total
overall altogether all each every per by across broken down split grouped group between than number count
amount figure figures data report chart graph plot table breakdown trend over time so far now
only just same instead also too again any some had has have having got bring brings brought bringing make makes
made generate generates generated come comes came coming up rank ranked ranking share proportion fraction
percentage percent top bottom highest lowest most least largest smallest biggest best worst greatest fewest
sell sells selling sold earn earns earned common frequent often popular still currently ever carry carrying carried
break actually
really distinct unique distribution busiest strongest weakest quietest single
hi hello hey thanks thank pls ok okay sure fine quick quickly need needs want wants wanted like wondering wonder
trying try understand know curious interested help check looking look whether if one ones them they it he she
i'm i've i'd we've we're we'd you're they're u ur along sit sits sitting lie lies move moves moved moving
basically roughly approximately % contain contains containing getting gets receive receives received receiving
thing things catalogue catalog database system dataset something anything everything stuff pull pulled grab fetch
provide calendar subsequently lineup assortment peak peaked sum pivot pivoted
separate separately part mix behind add added
specifically particularly especially though tho
""".split())
_ASKING = ("which", "what", "show", "many", "much", "total", "number", "please")  # a typo may hide these
# and a few longer words that say nothing of what is asked ("best sellng"): a near spelling of one is passed over
# (never of a word that ranks, shares or counts apart: "fewset", "percnet", "uniqe" stay unknown)
_SAYS_NOTHING = ("selling", "please", "thanks", "actually", "really", "basically", "roughly", "approximately",
                 "quickly", "wondering", "curious", "interested", "looking", "trying", "something", "anything")
# Every period of the data, said outright: no period (and none carried over from the conversation).
_WHOLE_HISTORY = re.compile(r"\b(?:across|over|for|in|of) (?:the )?(?:full|whole|entire|complete) history(?: of the "
                            r"data)?\b|\b(?:of |for |over |in )?all[- ]time\b|\b(?:over|across|for|in) all (?:the )?"
                            r"(?:years|time|periods|dates)\b|\bsince (?:we|the (?:company|business|shop|store)) "
                            r"(?:started|began|opened|launched)\b|"
                            r"\bsince (?:the (?:very )?beginning(?! of\b)|day one|inception)\b")  # (not "of Q3")
# A question about now or about every period without saying which ("open right now", "revenue to date", "the
# biggest ever"): never asked within the conversation's period.
_NOW_OR_EVER = re.compile(r"\b(?:right now|now|currently|at the moment|at present|as of (?:now|today)|today|still|"
                          r"ever)\b|(?<!year )(?<!month )(?<!quarter )(?<!week )\bto date\b")
# Phrases that frame a question without changing it ("right now", "in terms of", "revenue-wise").
_FILLER = re.compile(r"\b(?:right now|at the moment|in terms of|out of(?: all| the)?|as well as|along with)\b|"
                     r"\b(?:stuck|sitting|sat)(?= in \w)|"  # ("tickets stuck in pending": pending)
                     r"\bat least (?:one|a|an|1)(?= \w)|"  # ("customers who placed at least one order": who have one)
                     r"(?<=\bsame) but\b|"  # ("same but web orders only")
                     r"(?<=\w)[- ]wise\b|^\s*but\b|\bbut(?= (?:by|for|in|with|now|as|on|per|only|just|filter\w*)\b)|"
                     r"\ball[- ]time\s*,?\s*not (?:just|only) (?:this|last) (?:year|quarter|month|week)\b|"
                     r"\bdrill (?:down )?(?:into|to|on|in)\b|" + _WHOLE_HISTORY.pattern + "|"
                     r",? all[- ]in(?=\s*(?:[?.!]|$))|"  # ("net sales for 2024, all in?": everything counted)
                     r"\bat (?:this|the) (?:moment|point|time)\b|"
                     r"\bboth (?:days|dates|ends|months) (?:included|inclusive)\b|\binclusive\b|"
                     r"\ball (?:the )?(?:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|\d{1,2})\b"
                     r"(?! (?:top|best|worst|highest|lowest|largest|smallest|biggest|most|least))|"
                     r"\b(?:filter(?:ed)?|narrow(?:ed)?) (?:it |that |this |them )?(?:down )?(?:to|for|on)\b|"
                     r"(?<!came )(?<!come )(?<!went )(?<!sent )(?<!send )(?<!got )(?<!brought )"
                     r"\bback(?= in (?:19|20)\d\d)|"
                     r"\b(?:marked|flagged|listed|tagged) as\b|\bthese days\b|\bnowadays\b|"
                     r"\b(?:next to|beside|alongside) (?:it|them|that|those|each other)\b|"
                     r"\bas (?=(?:a |an )?(?:share|percentage|percent|"
                     r"proportion|fraction)\b)")  # ("but" leading a follow-up, not "all but web"; "as a share of")
# A follow-up's words for "the earlier answer, changed" ("switch that to units", "same year", "that year"):
# what changes is said beside them. Only beside an earlier question; alone they are not understood.
_REFERS_BACK = re.compile(
    # "in-store, same year?": the earlier period (not "the same month last year": another one)
    r"\b(?:for |in |over )?(?:the )?same (?:year|quarter|month|week|period|time(?: frame)?|dates?)\b"
    r"(?! (?:last|a|the previous|one) (?:year|quarter|month|week)\b)|"
    r"\b(?:in |for |over |during )?(?:that|those) (?:years?|quarters?|months?|weeks?|periods?)\b|"
    r"\b(?:for |of |in )?(?:each of |both of )?(?:those|these|them) (?:two|three|four|five)\b|"
    r"\b(?:for |of |in )?(?:each|both) of (?:those|these|them)\b|"  # "for each of those two": the earlier values
    r"\b(?:switch|swap|flip) (?:that|this|it|them)(?: over)? (?:to|into|for)\b|"
    r"\b(?:narrow|limit|restrict) (?:that|this|it|them)(?: down)? to\b|"
    r"\b(?:keeping|keep) (?:the )?same (?:(?:categories|category|dates?|periods?|years?|quarters?|months?|weeks?|"
    r"filters?|breakdowns?|groups?|regions?|channels?|segments?|measures?|metrics?|time(?: frame)?)\b"
    r"(?:,? and |, )?){1,3}")
_FUTURE = re.compile(r"\b(?:will|shall|won't)\b(?!\s+(?:you|u)\b)|\bgoing to (?:be|look|happen)\b|\bgonna\b|"
                     r"\b(?:forecast|predict|projection)\w*|\b(?:should|can|do|would) we expect\b|"
                     r"(?<!the )\bnext (?:year|quarter|month|week|season)s?\b")
# A phrasal verb around its object ("send stuff back", "brought it back"): the verb together, as models declare it.
_HYPHENATED = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)+")
_PHRASAL = re.compile(r"\b(send|sends|sent|sending|bring|brings|brought|bringing|take|takes|took|taking) "
                      r"(stuff|things|items|it|them|something|anything|products|goods) (back)\b")
# "how much did we take in (bring in) last year", "which regions brought in the most from …": money (not "how
# many orders did we take in 2024", "take in returns", "bring in more orders", "brought in the most orders")
_TAKEN_IN = re.compile(r"\b(?:take|takes|took|taken|taking) in\b(?! ?\d| (?:q[1-4]|jan\w*|feb\w*|mar\w*|apr\w*|may|"
                       r"jun\w*|jul\w*|aug\w*|sep\w*|oct\w*|nov\w*|dec\w*|returns?|refunds?|total)\b)|"
                       r"\b(?:bring|brings|brought|bringing) in(?=(?: the)?(?: most| least)?\s*(?:[?.!,;]|$|(?:last|"
                       r"this|in|during|for|over|since|from|between|through|via|on|at|by|per|with|each|every)\b))")
# "who spent more with us": the money customers spent (not "how much did we spend")
_SPENT_WITH_US = re.compile(r"\b(?:spend|spends|spent|spending)(?= (?:more |less |the most |the least )?(?:with us|"
                            r"per (?:order|customer))\b)")  # ("who spends more per order": money per order)
# "orders we took over the phone", "how many orders did we take?": received (not "take web out of it")
_TAKEN = re.compile(r"\b(?:take|takes|took|taken|taking)(?= (?:over|through|via|on|by|in(?! \w+ out)|during|"
                    r"the (?:week|day|month)|last|this|that) |\s*[?.!,;]|\s*$)")
# "how are sales tracking", "what's AOV been doing": how a figure went, said as a figure does
_HOW_IT_GOES = re.compile(r"\b(?:been )?(?:doing|tracking|pacing|landing|land|landed|shaping up|holding up|faring|"
                          r"performing)\b(?! (?:by|over|across)\b)")
_BECOMES = re.compile(r"\b(?:end|ends|ended|wind|winds|wound) up\b")  # "end up refunded": are refunded
# A sentence in the person's own voice ("I just started here -"): may set the scene (see `_asides`).
_FIRST_PERSON = re.compile(r"\s*(?:i|i'm|i've|i'd|we|we're|we've|my|our team|fyi|btw|context|background|"
                           r"need it|it's for|it is for|this is for|people say|putting together|working on|prepping|"
                           r"preparing|curious|wondering|want to|wanna|trying to|hoping to|need to)\b")
# An impression beside the question ("felt busy", "seems low to me"): said as the person's own.
_IMPRESSION = re.compile(r"\s*(?:it |that |this |things? )?(?:felt|feels|feel|seemed|seems|seem|looked|looks|"
                         r"sounded|sounds)\b")
# Calendar and order words a typo may hide in ("last yaer", "biggest frist"), corrected before they are read.
_EARLY_WORDS = ("year", "years", "month", "months", "quarter", "quarters", "week", "weeks", "previous", "since",
               "between", "yesterday", "today", "january", "february", "march", "april", "june", "july", "august",
               "september", "october", "november", "december", "hourly", "daily", "weekly", "monthly", "quarterly",
               "yearly", "annual", "annually",
               "first", "highest", "lowest", "largest", "biggest", "smallest",  # (and the order: "biggest frist")
               "different")  # ("how many diffrent products": distinct)
# Words that turn a question around ("not from web", "other than France"): never passed over, and when they
# cannot be used no other reading is offered (it would be the opposite question).
NEGATIONS = frozenset({"not", "never", "no", "non", "none", "nor", "except", "excluding", "exclude", "excluded",
                       "without", "other", "besides", "neither", "isn't", "aren't", "wasn't", "weren't", "don't",
                       "doesn't", "didn't", "hasn't", "haven't", "ignore", "ignoring", "remove", "removing",
                       "removed", "minus", "but", "omit", "omitting", "omitted", "leave", "leaving", "skip", "skipping",
                       "skipped", "apart", "aside", "filter", "filtered", "outside", "beyond", "less"})
# Words that ask for an average: explained by a measure that is one, a count to divide by, or a field averaged.
AVERAGE_WORDS = frozenset({"average", "mean", "typical", "typically"})
# Words that compare two things; explained only when two values or two periods are set side by side.
COMPARING = re.compile(r"\b(?:compare[ds]?|comparing|comparison|vs\.?|versus|against|than|higher|lower|more|"
                       r"fewer|bigger|smaller|greater|better|worse|differ(?:s|ence|ent)?|up or down|down or up|"
                       r"go(?:ne|ing|es)? (?:up|down)|went (?:up|down)|side by side|relative to|beat|beats|"
                       r"outperform\w*|stack(?:s|ed)? up)\b")
_ABBREVIATIONS = {"avg": "average", "qty": "quantity", "pct": "percent", "yr": "year", "yrs": "years",
                  "rev": "revenue", "thru": "through", "qtr": "quarter", "qtrs": "quarters", "mos": "months",
                  "tix": "tickets", "dept": "department", "depts": "departments", "rn": "now", "r": "are",
                  "havent": "haven't", "hasnt": "hasn't", "didnt": "didn't", "dont": "don't",
                  "doesnt": "doesn't", "isnt": "isn't", "arent": "aren't", "wasnt": "wasn't", "werent": "weren't",
                  "wont": "won't", "cust": "customer", "custs": "customers", "ppl": "people", "biz": "business",
                  "atm": "at the moment", "all together": "altogether", "going by": "by", "acct": "account",
                  "accts": "accounts", "prio": "priority", "ty": "this year", "ly": "last year",
                  "v": "vs", "mo": "month", "mth": "month", "mths": "months", "em": "them", "val": "value"}
# (chat shorthand above: "how many r smbs", "up n down", "last qtr", "last 12 mo", "rank em")
_PERIOD_SHORT = {"mom": "month over month", "qoq": "quarter over quarter", "wow": "week over week"}
_FISCAL = "fiscal "  # "FY2025" as "fiscal 2025": read as the calendar year, and the answer says so
SUPERLATIVE_HIGH = frozenset({"highest", "most", "largest", "biggest", "best", "top", "greatest", "maximum",
                              "busiest", "strongest", "peak", "peaked"})
SUPERLATIVE_LOW = frozenset({"lowest", "least", "smallest", "fewest", "worst", "bottom", "minimum", "quietest",
                             "weakest"})
_NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
                 "nine": 9, "ten": 10, "fifteen": 15, "twenty": 20, "fifty": 50, "hundred": 100}
_TOP_N = re.compile(r"\b(top|bottom|best|worst|highest|lowest|largest|smallest|biggest|first)\s+(\d{1,3}|"
                    + "|".join(_NUMBER_WORDS) + r")\b")
_N_TOP = re.compile(r"\b(\d{1,3}|" + "|".join(_NUMBER_WORDS) + r")\s+(top|bottom|best|worst|highest|lowest|largest|"
                    r"smallest|biggest|most|least)\b")  # "the 10 largest regions"
_PACE = re.compile(r"\b(?:fastest|quickest|slowest)\b")
_PACED_GROWTH = re.compile(r"\b(?:grew|grown|grow|grows|growing|increased|rose|risen|climbed) (?:(?:its|their) \w+ )?"
                           r"(?:the )?(?:most|least)\b|"  # ("which channel grew its revenue the most")
                           r"\b(?:most|least|biggest|largest|smallest) (?:growth|increase)\b")
# The order of a ranking said outright.
_ORDER = re.compile(r"\b(highest|largest|biggest|most|top|best|lowest|smallest|least|fewest|worst|bottom)(?: ones?)? "
                    r"first\b(?![-\s](?:quarter|half|time|week|month|year|day))|"
                    r"\b(?:from )?(highest|largest|biggest|most|lowest|smallest|least|fewest) to "
                    r"(?:lowest|smallest|least|fewest|highest|largest|biggest|most)\b|\b(?:(?:sorted|ordered) )?"
                    r"(?:in )?(descending|ascending|desc|asc)(?: order)?\b")
_N_WITH_MOST = re.compile(r"\b(\d{1,3}|" + "|".join(w for w in _NUMBER_WORDS if w != "one") + r")\s+(?=(?:[^\W\d]+\s+)"
                          r"{1,2}(?:with|by|having|that have|that had|behind|driving|causing|for|(?:that|which) \w+) "
                          r"(?:the )?"
                          r"(?:most|highest|biggest|largest|best|lowest|least|smallest|fewest|worst)\b)")
_UNITS = frozenset({"hour", "day", "week", "month", "quarter", "year"})
_WHICH_N = re.compile(r"\b(?:which|what)\s+(\d{1,3}|" + "|".join(w for w in _NUMBER_WORDS if w != "one")
                      + r")\b(?=\s+[^\W\d])")  # ("which one of these months": which, not how many)
COMPARATIVE_HIGH = frozenset({"more", "higher", "bigger", "greater", "better"})
COMPARATIVE_LOW = frozenset({"lower", "fewer", "smaller", "worse"})  # not "less": "revenue less returns" subtracts
_SHARE = re.compile(r"\b(?:share|percentage|percent|proportion|fraction|mix)\b|%|\b(?:what|which) part(?= of\b)")
_SAME_PERIOD_LAST_YEAR = re.compile(
    r"\b(year[ -]o(?:ver|n)[ -]year|yoy|y/y|(?:vs\.?|versus|compared? (?:to|with)|compares (?:to|with)|against) "
    r"(?:the )?"
    r"(?:(?:same (?:period|month|quarter|week|point|time) )?(?:of |in )?last year|"
    r"same (?:period|month|quarter|week) (?:of |in )?(?:the|a) year (?:before|earlier)))\b")  # ("… the year before")
# "how much more … than"; "more orders in 2025 than 2024? by how much" (the comparative looked for only before
# "by how much": one pass each, linear on long text)
_HOW_MUCH_MORE = re.compile(r"\bhow (?:much|many) (?:more|less|fewer)\b")
_BY_HOW_MUCH = re.compile(r"\bby how (?:much|many)\b")
_MORE_OR_LESS = re.compile(r"\b(?:more|less|fewer|higher|lower)\b")
_YEAR_OVER_YEAR = re.compile(r"\b(?:year[ -]o(?:ver|n)[ -]year|yoy|y/y)\b")
_PREVIOUS_PERIOD = re.compile(
    r"\b(?:(month|quarter|week|year)[ -]o(?:ver|n)[ -](?:month|quarter|week|year)|period[ -]over[ -]period|"
    r"(?:vs\.?|versus|compared (?:to|with)|against|than|relative to) (?:the )?(?:(?:previous|prior|last) "
    r"(month|quarter|week|year|period)|(month|quarter|week|year|period|one) before))\b")
_MERIT = re.compile(r"\b(?:best|worst|better|worse)\b(?![ -](?:sell\w*|seller\w*))")
_OTHER_ORDER = re.compile(r"\b(?:" + "|".join(sorted((SUPERLATIVE_HIGH | SUPERLATIVE_LOW | COMPARATIVE_HIGH
                                                      | COMPARATIVE_LOW) - {"best", "worst", "better", "worse"}))
                          + r")\b")
# "did orders go up or down from Q2 to Q3": whether, so both periods are shown side by side
# "more orders this year than last", "did the holidays beat last year": which way, too (bounded: linear)
# A period said before "through 2025" makes it a stretch's end ("2023 through 2025", "jan 2024 through 2025").
_PERIOD_BEFORE = re.compile(r"\b(?:from|since|between)\b|\b(?:19|20)\d\d\b|\bq[1-4]\b|\b(?:"
                            + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\b")
# The comparatives "is X higher than Y" asks with ("fewer" only of periods: "is that fewer than" is not said)
_COMPARATIVE_WORDS = "more|less|higher|lower|bigger|smaller|greater|better|worse"
_WHICH_WAY = re.compile(rf"\b(?:fewer|{_COMPARATIVE_WORDS})\b[^?.!;]{{0,80}}?"
                        r"\bthan\b|\b(?:beat|beats|outperform(?:s|ed)?|outdid|outdo(?:es)?)\b")
_UP_OR_DOWN = re.compile(r"\b(?:(?:go|goes|going|gone|went|move|moved) )?(?:up or down|down or up)\b|"
                         r"\b(?:rise|rose|risen) or (?:fall|fell|fallen)\b")  # ("did revenue rise or fall")
_WENT_UP = re.compile(r"\b(?:go|goes|gone|went) (?:up|down)\b")  # "did store sales go down …": whether, too
_HOW_MUCH = re.compile(r"\bby how (?:much|many)\b|\bhow much (?:(?:did|does|do|has|have|had) )?(?:it|they|that|this|"
                       r"those|these)\b")  # (how much it moved; not "how much revenue"; returns "by how many")
_YES_OR_NO = re.compile(r"\s*(?:did|has|have|had|is|was|were|are)\b")
# "growth in 2025, as a %": the rate a change is shown as anyway
_AS_PERCENT = re.compile(r"\b(?:as|in) (?:a )?(?:percent(?:age)?s?\b|%)|\bin percentage terms\b")
# A running total along time ("cumulative revenue", "running total of orders month by month").
_RUNNING = re.compile(r"\b(?:running|cumulative|cumulated|accumulated) (?:totals?|sums?|counts?)\b|"
                      r"\bcumulative(?:ly)?\b")  # (not "running out")
# In a follow-up, the period before the earlier question's ("and the year before?", "the previous quarter",
# "the same quarter a year earlier").
_THE_ONE_BEFORE = re.compile(r"\b(?:the )?(?:(year|quarter|month) before(?: that| it| then)?|(?:previous|prior) "
                             r"(year|quarter|month)|same (quarter|month|week|period) (?:a |one )?year "
                             r"(?:earlier|before|prior))\b(?! (?:by|per|each)\b)")
_GROWTH = re.compile(r"\b(growth(?: rates?)?|grow|grows|grew|grown|growing|change|changes|changed|changing|"
                     r"shrink|shrinks|shrank|dying|dwindl(?:e|es|ed|ing)|slump(?:s|ed|ing)?|"
                     r"shrinking|decline|declines|declined|declining|increase|increased|increasing|decrease|"
                     r"decreased|decreasing|rise|rising|rose|risen|falling|fell|drop|dropped|dropping|uplift|"
                     r"(?:go|goes|going|gone|went|move|moved|moves|moving) (?:up|down)|"
                     r"(?:move|moved|moves)(?= (?:across|over|during|throughout|between|since)\b))\b"
                     r"(?! data)")  # (not "fall": a season)
_GRAIN_WORDS = {"hourly": "hour", "daily": "day", "weekly": "week", "monthly": "month", "quarterly": "quarter",
                "yearly": "year", "annual": "year", "annually": "year"}
_BY_GRAIN = re.compile(r"\b(?:by|per|each|every|over|for each|in each|across) (?:the )?(hour|day|week|month|quarter|"
                       r"year)s?\b|\b(hour|day|week|month|quarter|year) (?:by|after|over|to) (?:hour|day|week|month|"
                       r"quarter|year)\b")
_TREND = re.compile(r"\bover time\b|\btrend(?:s|ing|ed)?\b")
# "which month had the most orders", "the best quarter for sales": the periods themselves, ranked.
_WHICH_PERIOD = re.compile(r"\b(?:which|what|best|worst|busiest|quietest|strongest|weakest|highest|lowest|"
                           r"biggest|top) (?:one (?:of )?)?(?:(?:these|those|the) )?(hour|day|week|month|quarter|"
                           r"year)s?\b")
_RANKED_PERIODS = re.compile(r"\s*(hour|day|week|month|quarter|year)s\b")  # right after "top 3", "which three"
_BREAKDOWN = re.compile(r"\b(?:by|per|across|for each|in each|each|split by|broken down by|grouped by|"
                        r"for every)\s*$")
# "units in an order": the entity after these words is what a measure is divided by, as after "per".
_PER = re.compile(r"\b(?:per|each|(?:in|for) (?:a|an|one|every)(?: single)?|(?:a|an|the|per) (?:average|typical|"
                  r"mean))\s*$")
_BREAK_OUT = re.compile(r"\bbreak\s+(?:(?:it|them|that|this|those|these)\s+)?(?:out|down)\b")  # ("break that growth
# out": the change words are read, and blank, by then)
# "across the customer segments", "by region": the question names groups to set side by side.
_BREAKDOWN_AHEAD = re.compile(r"\b(?:by|per|across|for each|in each|between the|among)\s+\w")
# A follow-up setting the earlier answer against something named now ("how does that compare with 2023?").
_SET_AGAINST = re.compile(r"\b(?:stack(?:s|ed)? up (?:against|to|with)|compare[sd]? (?:to|with)|against|vs\.?|"
                          rf"versus|relative to|(?:{_COMPARATIVE_WORDS}) than)\b")
_AGAINST = re.compile(r"\b(?:compare[sd]?|comparison|vs\.?|versus|against|stack(?:s)? up|relative to)\b")
_SPLIT = re.compile(r"\b(vs\.?|versus|compared? (?:to|with)|compares (?:to|with)|against|beat|beats|outsold|"
                    r"outperform(?:s|ed)?)\b")  # ("did online sales beat in-store sales": both, side by side)
# "compare A and B", "cancelled and refunded orders, how many of each": values joined by "and", side by side
_COMPARE_AND = re.compile(r"\b(compare[ds]?|comparing|comparison|differ(?:s|ence|ent)?|of each|each of them|"
                          r"respectively|separately|separate|break (?:it |them )?(?:out|down)|split)\b")
# Words asking for what people wrote ("what customers wrote in their tickets", "the full text"): free text is
# never given to the planner; when the catalog has no such word, that is the reason to say.
_WRITTEN = re.compile(r"wrote|write|writes|writing|written|say|says|saying|said|complain(?:ed|ing|s|ts?)?|"
                      r"moan(?:ed|ing|s)?|"
                      r"gripes?|text|texts|body|bodies|contents?|messages?|transcripts?|wording|"
                      r"comments?|notes?")
# Words that ask for data this planner is never given (never-to-model fields hold them).
PERSONAL = frozenset({"email", "emails", "e-mail", "e-mails", "phone", "phones", "telephone", "address",
                      "addresses", "password", "passwords", "ssn", "birthday", "birthdays", "name", "names",
                      "contact", "contacts", "iban", "card"})
_PERSONAL_PHRASE = re.compile(r"\b(?:phone|telephone|mobile|cell|contact|home|mailing|postal|email) "
                              r"(?:numbers?|details?|info|address(?:es)?)\b")
CHANGE_VERBS = re.compile(r"^\s*(?:(?:please|pls|plz|kindly)\s+)?(?:(?:can|could|would) (?:you|u)\s+)?(?:please\s+)?"
                          r"(?:(?:go ahead|just go|now go|go) and\s+|just\s+)?"
                          r"(delete|remove|drop|update|change|modify|set|cancel|refund|insert|edit|rename|mark|close|"
                          r"reopen|erase|wipe|purge|clear|add|get rid of|move|assign|reassign|transfer|convert|upgrade|"
                          r"downgrade|merge|flag|tag|archive|restore|approve|reject|void|disable|enable|deactivate|"
                          r"activate|suspend|promote|demote|block|unblock)\b"
                          r"(?!\s+(?:in|of|over|from|by)\b)")  # "change in revenue" asks, it does not order
LISTING_WORDS = frozenset({"latest", "recent", "newest"})  # a listing's own words, unusable in an analysis
_IS_THAT = re.compile(r"\b(?:is|was|are|were) (?:that|this|it|those)\W*$")  # "what % of all orders is that?"
# "of those, how many …", "among them": a count within the earlier answer's rows
_OF_THOSE = re.compile(r"^\W*(?:of|among) (?:the ones|those|them|these)\b")
_CHANGE_THAT = re.compile(r"^\s*(?:(?:can|could|would) (?:you|u) )?(?:please |pls )?(?:switch|swap|flip|narrow|limit|"
                          r"restrict|break|split|change|turn|make|show|do|redo|run|filter) "
                          r"(?:that|this|it|them|those)\b"
                          r"(?! (?:year|quarter|month|week|day)'?s?\b)|\b(?:those|these|that) (?:same|ones)\b|"
                          r"\b(?:each|all|any) of (?:those|these|them)\b|" + _IS_THAT.pattern)
# Chat around a question (Slack-style): greetings, reactions, thanks, sign-offs and hedges, none of which
# changes what is asked. Emoji end a sentence, as a full stop would.
_EMOJI = re.compile("[\U0001F300-\U0001FAFF\u2600-\u27BF\u2B50\u2B55\uFE0F\u200D]+")
_GREETING = re.compile(r"^\s*(?:(?:hey|hi|hello|hiya|yo|howdy|morning|good (?:morning|afternoon|evening)|afternoon|"
                       r"evening|ok|okay|cool|nice|great|perfect|awesome|sweet|thanks|thank you|thx|ty|got it|"
                       r"ah|oh|hmm|so)(?: (?:team|all|folks|everyone|there|guys|y'all|again|so much))?\b"
                       r"[\s!,.:;\-\u2013\u2014]*)+")
_CHAT = re.compile(r"\b(?:(?:thx|thanks|thank you)(?: (?:a lot|so much|again|in advance))?|ty(?=\W*$)|cheers|lmk|"
                   r"let me know|no rush|no worries|no pressure|asap|when you (?:get|have) a (?:sec|second|minute|"
                   r"chance)|if (?:possible|you can)|worth a (?:shot|try|go)|quick (?:q|question|one|sanity check|"
                   r"check)|sanity check|double[- ]check(?:ing)?|just checking)\b|"
                   r"\b(?:i'?m )?not sure (?:if|whether) [^.?!;]{0,80}?(?:\bbut\b|(?=[.?!;])|$)")
FOLLOW_UP = re.compile(r"^\s*(?:and|now|what about|how about|same|also|only|just|instead|but|then|ok|okay)\b")


@dataclass(frozen=True)
class Filter:
    field: dict
    values: tuple[str, ...]


@dataclass
class Reading:
    """A question understood in the catalog's terms; `unknown` lists the words nothing explained."""

    measures: list[dict] = field(default_factory=list)  # metric dicts of the slice, with "entity_id"
    dimensions: list[dict] = field(default_factory=list)  # text or boolean field dicts
    grain: str | None = None  # a dimension by time at this grain
    filters: list[Filter] = field(default_factory=list)
    time: TimeSpan | None = None
    limit: int | None = None  # "top 5"
    direction: str | None = None  # "desc" for highest first, "asc" for lowest
    which: bool = False  # "which region has the highest …": the first one is named in words
    share: Filter | None = None  # "what share of orders are cancelled"
    share_of_total: bool = False  # "share of revenue by channel"
    per: dict | None = None  # "orders per customer": the entity whose count divides
    compare: str | None = None  # previous_period / same_period_last_year
    compare_grain: str | None = None
    split: Filter | None = None  # "web vs store": one field's values side by side
    every_value_of: list[str] = field(default_factory=list)  # ", all channels": fields taken in full (a follow-up's
    # earlier filter on one goes)
    unknown: list[str] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)  # why an unknown word cannot be used, where known
    needs_latest: bool = False  # a month or quarter without a year: to be read again knowing what "now" is
    assumed: list[tuple[str, str]] = field(default_factory=list)  # near spellings read as values: said in answers
    asks_future: bool = False  # "what will revenue be": no reading of it is about the past
    asks_other_rows: bool = False  # a verb of rows the measure does not count: no reading without it is close
    counted_by_name: bool = False  # the measure is a count only because an entity was named ("for enterprise
    # customers"): in a follow-up that says whose rows, not what to count
    personal: list[str] = field(default_factory=list)  # words asking for personal data
    follow_up: bool = False
    listing: bool = False
    time_field: dict | None = None  # a date named in the question ("joined", "order date"): time is counted by it
    owner_hint: str | None = None  # the measure's entity, known before the words that depend on it are read
    compared_outright: bool = False  # "how did X compare with the same quarter last year": both periods shown
    which_way: bool = False  # "did we get more orders this year than last?", "up or down": which way one period
    # went against another; both are shown, and the later against the earlier (its change) above them
    ranks_change: bool = False  # "which category grew fastest": ranked by the change, not the measure
    against_earlier: bool = False  # a follow-up's period set against the earlier one: its dimensions stay
    cumulative: bool = False  # "running total of revenue by month": added up along time
    set_against: bool = False  # a follow-up's value set against the earlier one's ("how does that stack up
    # against the website?": both side by side)
    has_rows: dict | None = None  # "customers who bought this year": the entity the counted records must have at
    # least one row of, in the period (by `time_field`, its date) and with the filters on those rows
    points_at_rows: bool = False  # a follow-up's "those", "them": the earlier answer's rows
    threshold: tuple[str, float] | None = None  # "regions under 15k in sales": (op, value) on the measure per group
    bound_said: tuple[str, str, str] = ("", "", "")  # the bound as written, the word before it, the words after
    had_ever: bool = False  # "customers who have placed an order": rows had at any time (a period is the records')
    had_none: bool = False  # "customers who have never placed an order": none of those rows
    lacks_rows: dict | None = None  # "… who have bought but never returned anything": the entity they have no
    # row of, at any time (beside `has_rows`, had)
    period_kept: bool = False  # a new question without a period of its own, asked in the earlier one's period
    whole_history: bool = False  # "of all time", "since we started": every period, said outright

    @property
    def written(self) -> bool:
        """Asks for what people wrote (a ticket's text): free text, never given to the planner."""
        return any(_WRITTEN.fullmatch(word.lower()) for word in self.unknown)


def singular(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def plain(word: str) -> str:
    """A word without its "'s" ("what's", "channel's") and with a short form written out ("avg")."""
    word = word.removesuffix("'s")
    return _ABBREVIATIONS.get(word, word)


def words(text: str) -> list[str]:
    return [singular(plain(w)) for w in _WORD.findall(text.lower().replace("\u2019", "'"))]


NUMBERS = frozenset({"integer", "decimal", "float"})


@dataclass(frozen=True)
class _Entry:
    phrase: tuple[str, ...]
    kind: str  # metric / field / entity / amount (a number only aggregated) / event (a verb dating a row)
    item: dict
    exact: bool  # the whole label or a synonym, not a part of one
    noun: bool = False  # an event said as a noun ("signups"): it also names the rows the verb is about


class Vocabulary:
    """Every label and synonym of the slice as word sequences, to be found in a question."""

    def __init__(self, entities: list[dict]) -> None:
        self.entities = entities
        self.by_id = {e["id"]: e for e in entities}
        self.entries: list[_Entry] = []
        for entity in entities:
            for name in [entity["label"], *entity.get("synonyms", [])]:
                self.entries.append(_Entry(tuple(words(name)), "entity", entity, True))
            for metric in entity["metrics"]:
                item = {**metric, "entity_id": entity["id"]}
                for name in [metric["label"], *metric.get("synonyms", [])]:
                    self.entries.append(_Entry(tuple(words(name)), "metric", item, True))
                    if len(words(name)) == 2:  # "units returned" for Returned units
                        self.entries.append(_Entry(tuple(reversed(words(name))), "metric", item, False))
            for fld in entity["fields"]:
                item = {**fld, "entity_id": entity["id"], "entity_label": entity["label"]}
                # A number only ever aggregated ("discount") is an amount: usable only as an average of it.
                kind = "field" if fld["exposure"] == "bounded-values" else "amount" if (
                    fld["exposure"] == "aggregate-only" and fld["type"] in NUMBERS) else None
                if kind is None:
                    continue
                for name in [fld["label"], *fld.get("synonyms", [])]:
                    self.entries.append(_Entry(tuple(words(name)), kind, item, True))
                verbs = [words(verb) for verb in fld.get("event_verbs", [])] if kind == "field" else []
                for first, *rest in [said for said in verbs if said]:  # (a verb of no letters names nothing)
                    # "placed": place, places, placing; a verb of two words as written too ("send back": sending)
                    for form in inflections(first) | (_present_forms(first) if rest else set()):
                        self.entries.append(_Entry((form, *rest), "event", item, form == first))
                    if len(rest) == 1:  # "sign up": "signups" (or "sign ups"), the event as a noun
                        self.entries.append(_Entry((first + rest[0],), "event", item, False, noun=True))
                        self.entries.append(_Entry((first, rest[0] + "s"), "event", item, False, noun=True))
        self.known = {w for entry in self.entries if entry.exact for w in entry.phrase}  # (not guessed forms)
        self._starting: dict[str, list[_Entry]] = {}  # entries by their first word: a lookup, not a scan
        for entry in self.entries:
            if entry.phrase:
                self._starting.setdefault(entry.phrase[0], []).append(entry)
        self._corrections: dict[str, str] = {}
        self._known_in_order = sorted(self.known)  # (ties between equally near words go the same way each time)

    def longest_at(self, tokens: list[str], start: int) -> list[_Entry]:
        """Entries whose whole phrase starts at `start`, longest first."""
        found = [e for e in self._starting.get(tokens[start], ())
                 if tuple(tokens[start:start + len(e.phrase)]) == e.phrase]
        if not found:
            return []
        size = max(len(e.phrase) for e in found)
        return [e for e in found if len(e.phrase) == size]

    def partial(self, word: str, kind: str) -> list[dict]:
        """Items of `kind` one of whose labels contains `word` ("segment" → Customer segment)."""
        seen: dict[str, dict] = {}
        for e in self.entries:
            if e.kind == kind and word in e.phrase:
                seen.setdefault(e.item["id"], e.item)
        return list(seen.values())

    def corrected(self, word: str) -> str:
        """A typo'd word as the catalog word it most likely meant ("revenu" → "revenue")."""
        if word.endswith("al") and word[:-2] in self.known and word not in self.known:
            return word[:-2]  # "regional" market, "national" figures: of the region, of the nation
        if word in self.known or word in STOP or len(word) < 4 or word.isdigit() or is_common(word):
            return word  # (an ordinary word is meant as written: "started" is no typo of "state")
        if word not in self._corrections:  # a question may repeat a word a thousand times
            if any(word.startswith(known) and len(known) >= 4 for known in self.known):
                self._corrections[word] = word  # "refunded" is no typo of "refund": maybe a value
            else:
                # a catalog word first ("untis": units); else one of the few asking words ("wich" is "which"),
                # else a longer word that counts nothing ("sellng")
                self._corrections[word] = near(word, self._known_in_order) or (word.endswith("s") and near(
                    word[:-1], self._known_in_order)) or near(word, _ASKING) or near(word, _SAYS_NOTHING) or word
        return self._corrections[word]


def near(word: str, candidates) -> str | None:
    """The candidate `word` is most likely a misspelling of: the same first letter, a length within one, and
    one slip (a letter missed, added, changed, or two swapped), two in a long word. "started" is no "state"."""
    best = None
    for candidate in candidates:
        if candidate[:1] != word[:1] or abs(len(candidate) - len(word)) > 1 or candidate == word:
            continue
        slips = _slips(word, candidate)
        closeness = difflib.SequenceMatcher(None, word, candidate).ratio()  # ties: "monthy" is "monthly"
        if slips <= (2 if len(word) >= 8 else 1) and (best is None or (slips, -closeness) < best[:2]):
            best = (slips, -closeness, candidate)
    return best[2] if best else None


def _slips(a: str, b: str) -> int:
    """Edits from `a` to `b`, a swap of neighbours counting as one (optimal string alignment)."""
    rows = [list(range(len(b) + 1))]
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            row[j] = min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], rows[-2][j - 2] + 1)
        rows.append(row)
    return rows[-1][-1]


def inflections(verb: str) -> set[str]:
    """A verb's forms from its past tense, as a model writes it ("signed", "placed", "opened"), or as is."""
    if not verb.endswith("ed") or len(verb) < 5:
        return {verb}
    stems = {verb[:-2], verb[:-1]}  # "open(ed)", "place(d)"
    return {verb} | {form for stem in stems for form in (stem, stem + "s", stem + "ing")
                     if not stem.endswith("e") or not form.endswith("eing")}


def _present_forms(verb: str) -> set[str]:
    """"send": sends, sending; "place": placing (not for a past tense, "sent", nor "new")."""
    if verb.endswith("ed") or not verb.isalpha() or len(verb) < 3:
        return set()
    return {verb + "s", (verb[:-1] if verb.endswith("e") else verb) + "ing"}


def reachable(entities: list[dict], owner: str) -> list[str]:
    """Entities the owner belongs to (many-to-one, transitively), nearest first, itself included."""
    by_id = {e["id"]: e for e in entities}
    order, frontier = [owner], [owner]
    while frontier:
        following = []
        for entity_id in frontier:
            for relationship in by_id.get(entity_id, {}).get("relationships", []):
                if relationship["from"] == entity_id and relationship["kind"] in ("many_to_one", "one_to_one") \
                        and relationship["to"] not in order:
                    order.append(relationship["to"])
                    following.append(relationship["to"])
        frontier = following
    return order


def time_field(entities: list[dict], owner: str) -> dict | None:
    """The date or time field of the measure's entity, or of one it belongs to, nearest first."""
    by_id = {e["id"]: e for e in entities}
    for entity_id in reachable(entities, owner):
        for fld in by_id.get(entity_id, {}).get("fields", []):
            if fld["type"] in ("timestamp", "date") and fld["exposure"] == "bounded-values":
                return {**fld, "entity_id": entity_id}
    return None


def _blank(text: str, start: int, end: int) -> str:
    return text[:start] + " " * (end - start) + text[end:]


def _take(pattern: re.Pattern, text: str) -> tuple[re.Match | None, str]:
    found = pattern.search(text)
    return (found, _blank(text, found.start(), found.end())) if found else (None, text)


def understand(question: str, entities: list[dict], matches: list[dict], earlier: Reading | None = None,
               latest: dt.date | None = None) -> Reading:
    """The question's reading over `entities` (the slice), `matches` (value-match results: field_id,
    entity_id, untrusted_value, matched_text), for a follow-up the earlier question's reading, and `latest`,
    what "now" is for a month or quarter named without a year (unknown: the reading says it needs it)."""
    vocabulary = Vocabulary(entities)
    reading = Reading(whole_history=_WHOLE_HISTORY.search(question.lower()) is not None)  # (before filler goes)
    text = said = _normalised(question)
    if earlier is not None:
        text = _pointers_back(text, reading, vocabulary)
    text = _outside_the_data(text, reading)
    text = _comparison(text, reading)
    text = _threshold(text, reading)
    before = None
    if earlier is not None and earlier.time is not None and is_follow_up(question):
        before, text = _one_before_earlier(text, earlier.time, latest, reading)
    change, text = _change_words(text, reading)
    whether, growth = change.whether, change.growth
    spans, text, time_starts = _time_spans(text, question, latest, before, matches, reading)
    borrowed = None if spans else _earlier_period_compared(text, question, earlier, reading)
    spans = borrowed or spans

    text, value_spans = _values(text, reading, vocabulary, matches)
    text = _state_verbs_before_values(text, value_spans)
    _part_from(said, value_spans, reading)
    if earlier is not None and (reading.filters or reading.split) and is_follow_up(question):
        text = _value_against_earlier(text, value_spans, reading, earlier, own_period=bool(spans) and not borrowed)
    text = _framing(text, vocabulary, reading, value_spans, time_starts)
    situation = _asides(text, vocabulary, value_spans, time_starts, reading, question)
    for start, end in situation:  # an aside says nothing to count, group, rank or compare by ("a channel deck")
        text = _blank(text, start, end)
    compared = bool(reading.split or reading.compare or len(spans) > 1)
    if not borrowed:
        spans = _against_earlier(spans, text, said, earlier, reading, latest)
        compared = compared or reading.compare is not None  # ("stack up vs the same quarters in 2024")
    spans = _dated_to_compare(spans, text, reading, latest)
    if whether and growth is None and len(spans) == 1 and not spans[0].ends and reading.compare is None:
        reading.compare, reading.compared_outright = "previous_period", True  # "up or down last quarter"
    asks_difference = _difference_between_periods(spans, time_starts, said, reading)
    _periods(spans, text, reading, asks_change=growth is not None or asks_difference, both=whether is not None)
    reading.which_way = growth is None and not asks_difference and (
        whether is not None or _WHICH_WAY.search(said) is not None)
    merit, text = _order_words(text, reading, change)
    text = _grain(text, reading)
    if _SHARE.search(text):
        reading.share_of_total = True
    text = _BREAK_OUT.sub(lambda m: " " * len(m.group(0)), text)  # (read by _values: side by side)
    if compared or reading.direction or reading.grain or _BREAKDOWN_AHEAD.search(text):
        # what is compared (values, periods, the groups of a dimension) says what the comparing words mean
        text = COMPARING.sub(lambda m: " " * len(m.group(0)), text)
    text = _HYPHENATED.sub(lambda m: _compound(m.group(0), vocabulary), text)
    text = _all_of_a_field(text, question.lower(), vocabulary, reading)
    _named_in_the_catalog(text, reading, vocabulary, value_spans, earlier, situation)
    _settle(reading, growth is not None, vocabulary)
    reading = _with_earlier(earlier, reading, question, said, text, vocabulary)
    if merit:
        _by_merit(reading)
    _ranked_by_count(reading, vocabulary, text)
    _said_together(reading, said)
    return reading


def _with_earlier(earlier: Reading | None, reading: Reading, question: str, said: str, text: str,
                  vocabulary: Vocabulary) -> Reading:
    """A follow-up changes the earlier reading (see `_follow`); another question about the same records is asked
    in the conversation's period (see `_in_the_conversation_period`)."""
    if earlier is None:
        return reading
    if reading.measures and not is_follow_up(question):
        _in_the_conversation_period(earlier, reading, question.lower())
        return reading
    merged = _follow(earlier, reading, question, vocabulary)
    if not reading.measures and reading.dimensions and _names_rows_of(said, reading.dimensions, vocabulary):
        _counted_if_out_of_reach(merged, vocabulary, text)
    return merged


def _state_verbs_before_values(text: str, value_spans: list[tuple[int, int, str]]) -> str:
    """"Tickets still marked open": a verb that only says a record is in the state named right after it (alone,
    "how many orders were flagged?", it names a state the catalog may not have: not passed over)."""
    for start, _, _ in value_spans:
        said = re.search(r"\b(?:marked|flagged|listed)(?: as)?\s+$", text[max(0, start - 20):start])
        if said:
            text = _blank(text, max(0, start - 20) + said.start(), start)
    return text


def _said_together(reading: Reading, said: str) -> None:
    """"Revenue from web and store combined": one figure for the values together, which is how several values
    of one field are read unless set side by side; the word asks for nothing more."""
    if reading.split is None and any(len(f.values) > 1 for f in reading.filters):
        together = {word for m in _TOGETHER.finditer(said) for word in m.group(0).split()}
        reading.unknown = [word for word in reading.unknown if word not in together]


def _named_in_the_catalog(text: str, reading: Reading, vocabulary: Vocabulary, value_spans: list[tuple[int, int, str]],
                          earlier: Reading | None, situation: list[tuple[int, int]]) -> None:
    """The measures, dimensions and entities the rest of the words name (see `_catalog_words`): a first pass
    finds the measure, so that a word two fields share is read as the measure's own."""
    context = {m["entity_id"] for m in earlier.measures} if earlier is not None else set()
    scratch = replace(reading, measures=[], dimensions=[], unknown=list(reading.unknown), personal=[],
                      reasons=dict(reading.reasons))
    _catalog_words(text, scratch, vocabulary, value_spans, context, situation)
    reading.owner_hint = scratch.measures[0]["entity_id"] if scratch.measures else None
    _catalog_words(text, reading, vocabulary, value_spans, context, situation)
    if len(reading.measures) > 1:  # "compare gross vs net sales": the measures side by side are the comparison
        reading.unknown = [w for w in reading.unknown if not _COMPARE_WORD.fullmatch(w)]


# "for the worst one", "within that one": a row of the earlier answer, which the planner never sees
_ONE_OF_THE_ROWS = re.compile(r"\b(?:for|in|within|of|from|at) (?:the (?:worst|best|top|biggest|largest|highest|"
                              r"lowest|smallest|leading|first|last|winning) one|that one|the winner)\b")


# "under 15k", "more than $2,000": a bound on the measure of each group (never a year: "over 2024")
_THRESHOLD = re.compile(r"\b(over|above|more than|greater than|at least|under|below|less than|fewer than|at most|"
                        r"no more than)\s+(\$?)(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)\s*(k|m|thousand|million)?\b"
                        r"(?!\s*(?:%|percent|days?|weeks?|months?|years?|quarters?)\b)")
_THRESHOLD_OPS = {"over": "gt", "above": "gt", "more than": "gt", "greater than": "gt", "at least": "gte",
                  "under": "lt", "below": "lt", "less than": "lt", "fewer than": "lt", "at most": "lte",
                  "no more than": "lte"}
_SCALES = {"k": 1_000, "thousand": 1_000, "m": 1_000_000, "million": 1_000_000}


def _threshold(text: str, reading: Reading) -> str:
    """"Which regions did under 15k in sales": the groups whose measure is under 15,000 (one bound, read once)."""
    for bound in _THRESHOLD.finditer(text):
        number, scale = bound.group(3).replace(",", ""), bound.group(4)
        if scale is None and re.fullmatch(r"(?:19|20)\d\d", number):
            continue  # "over 2024": a year
        reading.threshold = (_THRESHOLD_OPS[bound.group(1)], float(number) * _SCALES.get(scale or "", 1))
        before = _WORD.findall(text[:bound.start()])[-1:]
        after = re.match(r"\s*(?:in|of)\s+((?:[\w&'-]+\s+){0,2}[\w&'-]+)", text[bound.end():])
        reading.bound_said = (bound.group(0).strip(), before[0] if before else "",
                              (after.group(1) if after else "") + (" $" if bound.group(2) else ""))
        return _blank(text, bound.start(), bound.end())
    return text


def _bound_on_the_measure(reading: Reading) -> None:
    """A bound is on the one measure, said beside its name ("revenue over 2,500", "under 15k in sales");
    one beside another noun ("more than 100 orders", "customers over 30"), in money on a count, or on a change,
    a rate or a share is not read."""
    if reading.threshold is None:
        return
    said, before, after = reading.bound_said
    measure = reading.measures[0] if len(reading.measures) == 1 else None
    names = {w for name in [measure["label"], *measure.get("synonyms", [])] for w in words(name)} if measure else set()
    beside = singular(plain(before)) in names or bool(set(words(after.replace("$", ""))[:2]) & names)
    money_on_a_count = after.endswith("$") and measure is not None and measure.get("type") == "integer"
    if measure is None or not beside or money_on_a_count or reading.compare or reading.per or reading.share or \
            reading.share_of_total or reading.cumulative:
        reading.threshold = None
        reading.unknown.append(said)
        reading.reasons[said] = ("I keep groups by a bound on the one figure asked for, said beside it, e.g. "
                                 "\u201cregions with net revenue under 15,000\u201d")


def _earlier_period_compared(text: str, question: str, earlier: Reading | None,
                             reading: Reading) -> list[TimeSpan] | None:
    """"And how does that compare to last year?" names no period of its own: the earlier one, with the same groups
    (not an earlier series or ranking: its figure against last year's stays as it was). None when it is not so."""
    if earlier is None or earlier.time is None or not reading.compared_outright or not (
            is_follow_up(question) or re.search(r"\b(?:that|it|this)\b", text)) or _named_grain(text) is not None \
            or earlier.grain is not None or earlier.limit or earlier.direction:
        return None
    reading.against_earlier = True
    return [earlier.time]


def _dated_to_compare(spans: list[TimeSpan], text: str, reading: Reading, latest: dt.date | None) -> list[TimeSpan]:
    """Periods set side by side, as dates once "now" is known ("last year vs 2023", "this quarter compared with
    the same quarter last year"). A ranking, or a period only partly over, keeps its figure against the same
    period instead: "top 5 products this year vs last year" ranks this year; "ytd vs last year" in June sets the
    same days of each year beside each other (not half a year against a whole one)."""
    if len(spans) == 1 and reading.compared_outright and (_SUPERLATIVE.search(text) or _partial_period(spans[0],
                                                                                                       latest)):
        reading.compared_outright = False
    if len(spans) > 1 or (reading.compared_outright and reading.compare == "same_period_last_year"):
        return [dated(span, latest) for span in spans]
    return spans


_SUPERLATIVE = re.compile(r"\b(?:top|bottom|" + "|".join(sorted(SUPERLATIVE_HIGH | SUPERLATIVE_LOW)) + r")\b")


def _partial_period(span: TimeSpan, latest: dt.date | None) -> bool:
    """A period "to date" ("this year", "ytd") that "now" is not the last day of."""
    if span.kind != "relative" or span.op != "to_date" or latest is None:
        return False
    whole = dated(span, latest)
    return whole.kind == "between" and latest + dt.timedelta(days=1) != whole.end


def _pointers_back(text: str, reading: Reading, vocabulary: Vocabulary) -> str:
    """A follow-up's words pointing at the earlier question ("same period", "those two") taken out; "its"
    before a name of rows is unusable (the earlier answer's rows are not seen)."""
    reading.points_at_rows = bool(re.search(r"\b(?:those|these|them)\b", text))
    for row in _ONE_OF_THE_ROWS.finditer(text):
        said = row.group(0).split(" ", 1)[1]
        reading.unknown.append(said)
        reading.reasons[said] = "I do not see the earlier answer's rows: name the one you mean"
    text = _ONE_OF_THE_ROWS.sub(lambda m: " " * len(m.group(0)), text)
    text = _REFERS_BACK.sub(lambda m: " " * len(m.group(0)), text)
    for its in re.finditer(r"\bits (\w+)", text):  # "rank its subcategories": one row of the earlier answer
        if any(e.kind in ("entity", "field") for e in vocabulary.longest_at([singular(its.group(1))], 0)):
            reading.unknown.append("its")
            reading.reasons["its"] = "I do not see the earlier answer's rows: name the one you mean"
        text = _blank(text, its.start(), its.start(1))  # ("and its growth?": the measure's)
    return text


def _outside_the_data(text: str, reading: Reading) -> str:
    """A listing asked for; words asking for personal data and for a forecast, noted and taken out."""
    reading.listing = bool(re.match(r"\s*(list|show me the latest|which are the latest)\b", text)) or bool(
        re.search(r"\b(latest|recent|newest)\b", text))
    for personal in _PERSONAL_PHRASE.finditer(text):  # "phone numbers": never a value's word ("phone orders")
        reading.personal.append(personal.group(0))
    text = _PERSONAL_PHRASE.sub(lambda m: " " * len(m.group(0)), text)
    for future in _FUTURE.finditer(text):  # a forecast: not in any data
        said = future.group(0).strip()
        reading.unknown.append(said)
        reading.asks_future = True
        reading.reasons[said] = "I report what the data holds; I cannot tell what will happen"
    return _FUTURE.sub(lambda m: " " * len(m.group(0)), text)


@dataclass(frozen=True)
class _Change:
    """How the question asks about change: ranked by it ("grew the most"), whether up or down, a change."""

    paced: re.Match | None
    whether: re.Match | None
    growth: re.Match | None


def _change_words(text: str, reading: Reading) -> tuple[_Change, str]:
    """The words asking for a change or a running total, taken out of the text."""
    paced = _PACED_GROWTH.search(text)  # "which one grew the most": ranked by the growth
    whether, text = _take(_UP_OR_DOWN, text)
    if whether is None and _YES_OR_NO.match(text):
        whether, text = _take(_WENT_UP, text)
    growth, text = _take(_GROWTH, text)
    if whether and growth is None and _HOW_MUCH.search(text):  # "how much it went up or down", "up or down? by
        whether, growth = None, whether  # how much": the amount it moved, not only which way
    if growth:  # (said again, "how did it move … the % change each month", it is the same change)
        text = _AS_PERCENT.sub(lambda m: " " * len(m.group(0)), _GROWTH.sub(lambda m: " " * len(m.group(0)), text))
    running, text = _take(_RUNNING, text)
    reading.cumulative = running is not None
    if growth and reading.compare is None:  # "revenue growth by year": each period against the one before
        reading.compare = "previous_period"
    return _Change(paced, whether, growth), text


def _time_spans(text: str, question: str, latest: dt.date | None, before: tuple[TimeSpan, int] | None,
                matches: list[dict], reading: Reading) -> tuple[list[TimeSpan], str, list[int]]:
    """The periods named (the one before the earlier question's among them, in its place), each with where it
    was said; those of a second question left out."""
    reading.assumed += [(f"fy{year}", f"the calendar year {year}") for year in re.findall(_FISCAL + r"(\d{4})", text)]
    text = text.replace(_FISCAL, "")
    text, days = named_days(text, latest)
    reading.assumed += days
    for said, _ in days if reading.compare else []:  # ("black friday 2025 vs last year": not the same date)
        reading.unknown.append(said)
        reading.reasons[said] = "a named day falls on another date each year: ask for each year's on its own"
    alone = [(day, re.match(r"(?: day)?,? (?:of |in )?(?:this|last) year\b", text[day.end():]) is not None,
              re.search(r"\b(?:on|for|during|over)\s+(?:the\s+)?$", text[:day.start()]) is not None)
             for day in NAMED_DAY_ALONE.finditer(text)]
    for day, _, _ in alone:
        text = _blank(text, day.start(), day.end())
    spans, text, time_starts = find_times(text, latest)
    for day, of_now, asked_of in alone:
        if latest is None and of_now:
            reading.needs_latest = True  # "black friday this year": which day, once "now" is known
        elif asked_of or not named_day_within(day.group(0), spans):  # ("on black friday in november 2025": the
            # day is asked of, not the month; "the black friday bump" in a week that holds it says why)
            reading.unknown.append(day.group(0))
            reading.reasons[day.group(0)] = f"say which year's, e.g. \u201c{day.group(0)} 2024\u201d"
    if before is not None:
        at = sum(1 for start in time_starts if start < before[1])
        spans, time_starts = [*spans[:at], before[0], *spans[at:]], [*time_starts[:at], before[1], *time_starts[at:]]
    text, spans, time_starts = _second_question(text, question, spans, time_starts, matches, reading)
    return spans, text, time_starts


def _settle(reading: Reading, growth: bool, vocabulary: Vocabulary) -> None:
    """What the words read together mean: shares settled, a per that is the measure's own, a growth of a share, a
    bound on the measure, a rate of some rows."""
    _settle_shares(reading)
    if reading.per and reading.measures and reading.per["id"] == reading.measures[0]["entity_id"] and not \
            _counts_some_of(reading.measures[0], reading.per):
        reading.per = None  # "average order value per order": the measure is per order already
    if growth and reading.share and not reading.compare_grain:
        # "is the web share growing": the share over time answers it; a growth of the total would not.
        reading.compare, reading.grain = None, reading.grain or "month"
    elif growth and reading.share_of_total:
        reading.share_of_total = False  # "percentage change in revenue": the change, in percent
    _bound_on_the_measure(reading)
    _rate_of_rows(reading, vocabulary)


def _ranked_by_count(reading: Reading, vocabulary: Vocabulary, text: str) -> None:
    """"The top 3 return reasons": with no measure, a ranking of what describes rows is by how many rows each
    has (never of the rows' own names: one each; never by size, "the biggest channel": of what is not said)."""
    if reading.measures or not (reading.limit or reading.direction) or len(reading.dimensions) != 1 or \
            reading.grain or reading.ranks_change or reading.compare or re.search(
                r"\b(?:big|large|small|great|huge|tiny|strong|weak)\w*", text):
        return
    field = reading.dimensions[0]
    entity = vocabulary.by_id.get(field["entity_id"])
    if entity is None or "name" in words(field["label"]) or not counts_of(entity):
        return
    reading.measures = [counts_of(entity)[0]]


def _names_rows_of(said: str, dimensions: list[dict], vocabulary: Vocabulary) -> bool:
    """The question names the rows its dimension describes, by their name or a verb of theirs ("the top 3
    reasons people send back apparel": returns), not only the dimension ("which priority has the most?")."""
    owners = {b["entity_id"] for b in dimensions}
    tokens = words(said)
    return any(e.kind == "event" and e.item["entity_id"] in owners or e.kind == "entity" and e.item["id"] in owners
               for start in range(len(tokens)) for e in vocabulary.longest_at(tokens, start))


def _counted_if_out_of_reach(reading: Reading, vocabulary: Vocabulary, text: str) -> None:
    """"Ok what are the top 3 reasons people send back apparel?" after a question about the return rate: a
    ranking of a dimension the earlier measure cannot be broken down by is of its own rows' count, as asked
    alone (the earlier measure stays where no count can be had)."""
    reach = {entity for m in reading.measures for entity in reachable(vocabulary.entities, m["entity_id"])}
    if all(b["entity_id"] in reach for b in reading.dimensions):
        return
    inherited, reading.measures = reading.measures, []
    _ranked_by_count(reading, vocabulary, text)
    reading.measures = reading.measures or inherited


def _counts_some_of(measure: dict, entity: dict) -> bool:
    """A count of some of an entity's rows ("Cancelled orders" of orders): per its rows, a rate."""
    named = words(measure["label"])
    return measure.get("type") == "integer" and not measure["label"].lower().startswith("number of") and \
        measure["entity_id"] == entity["id"] and bool(named) and named[-1] in words(entity["label"])


def _rate_of_rows(reading: Reading, vocabulary: Vocabulary) -> None:
    """"Cancellation rate": a count of some of an entity's rows as a rate is that count per its rows."""
    said = [w for w in reading.unknown if w in ("rate", "rates", "ratio", "percentage")]
    if not said or len(reading.measures) != 1 or reading.per is not None:
        return
    entity = vocabulary.by_id.get(reading.measures[0]["entity_id"])
    if entity is not None and _counts_some_of(reading.measures[0], entity):
        reading.per = entity
        reading.unknown = [w for w in reading.unknown if w not in said]


def _order_words(text: str, reading: Reading, change: _Change) -> tuple[bool, str]:
    """The ranking asked for, and whether "best" or "worst" alone set its order (for `_by_merit`, once the
    measure is known: "worst first" of a return rate is the highest)."""
    said = [*_MERIT.finditer(text), *_OTHER_ORDER.finditer(text)]
    last = max(said, key=lambda m: m.start()) if said else None  # the word said last sets the order ("which get
    merit = last is not None and bool(_MERIT.fullmatch(last.group(0)))  # sent back the most? … worst first")
    text = _ranking(text, reading)
    if merit and reading.direction is not None:  # the highest is the best, until the measure says otherwise
        reading.direction = "asc" if last.group(0) in ("worst", "worse") else "desc"
    if change.paced and reading.compare:
        reading.ranks_change = True
        reading.direction = "asc" if re.search(r"least|smallest|slowest", change.paced.group(0)) else "desc"
    if reading.ranks_change and change.growth and re.match(r"declin|drop|fell|fall|shr[iau]nk|decreas",
                                                           change.growth.group(0)):
        reading.direction = "asc" if reading.direction == "desc" else "desc"  # "declined fastest": most negative
    return merit and reading.direction is not None, text


def _by_merit(reading: Reading) -> None:
    """"best" and "worst" ask for the highest and the lowest, unless the model says lower is better for the
    measure ranked (a return rate): then the other way round."""
    if reading.direction and reading.measures and reading.measures[0].get("better") == "lower":
        reading.direction = "asc" if reading.direction == "desc" else "desc"


def _normalised(question: str) -> str:
    """The question lower-cased with short forms written out and fillers that never change what is asked
    ("end up", "on average" keeps its average word) taken out, padded for whole-word patterns."""
    question = re.sub(r"(?<![\w'])['\u2019](\d{2})\b", r"20\1", question)  # "Q4 '25": 2025
    question = re.sub(r"\b([qQ][1-4])[ /-](\d{2})(?=\s*(?:$|[?!,;:)]|\.(?!\d)|-\s|(?:vs|v|versus|and|or|to|than|"
                      r"compared|against)\b))", r"\1 20\2", question)  # "q3 25 vs q3 24" (not "in q2 50 units")
    # "the US" in capitals is the country, never the word "us" passed over ("just the US, Canada and the UK")
    question = re.sub(r"\bU\.?S\b(?!\.?A)", "USA", question)
    text = " " + _EMOJI.sub(". ", question.lower().replace("\u2019", "'")) + " "
    text = _GREETING.sub(lambda m: " " * len(m.group(0)), text)
    text = _CHAT.sub(lambda m: " " * len(m.group(0)), text)
    text = re.sub(r"\b(" + "|".join(_ABBREVIATIONS) + r")\b", lambda m: _ABBREVIATIONS[m.group(1)], text)
    text = re.sub(r"\bhow many diff\b", "how many different", text)  # (not "the diff between web and store")
    if _GROWTH.search(text) or "%" in text:  # "mom %", "wow growth": only where a change is asked ("Wow, …")
        text = re.sub(r"\b(" + "|".join(_PERIOD_SHORT) + r")\b", lambda m: _PERIOD_SHORT[m.group(1)], text)
    text = re.sub(r"\bfy ?'?(\d{4}|\d{2})\b", lambda m: _FISCAL + str(_full_year(m.group(1))), text)
    text = re.sub(r"\b(year|month|quarter|week|day|today|yesterday)'s\b", r"\1", text)  # "this year's revenue"
    text = _said_plainly(text)
    text = re.sub(r"(?<!the )\b(this|last) (year|month|quarter|week)s(?= (?!ago\b)[a-z])", r"\1 \2",
                  text)  # ("this years returns": the apostrophe left out)
    text = re.sub(r"\b(day|week|month|quarter|year)-(by|on|to|over)-(day|week|month|quarter|year)\b",
                  r"\1 \2 \3", text)  # "month-by-month" as "month by month"
    text = re.sub(r"\b(change[ds]?|growth|grew|increase[ds]?|decrease[ds]?|difference|delta|rose|fell|moved|"
                  r"(?:went|gone|go(?:es)?) (?:up|down)(?: or (?:up|down))?|up or down) (?:from|on|over) (?=(?:the )?"
                  r"(?:(?:previous|prior|last) (?:month|quarter|week|year|period)|"
                  r"(?:month|quarter|week|year|period|one) before)\b)",
                  r"\1 vs ", text)  # ("with the change from the month before", "went up or down from")
    # "if we only count in-store purchases": the rows counted in, not a count asked for
    text = re.sub(r"\b(?:if (?:we|you|i) )?(?:only|just) count(?:ing)?\b|\bcount(?:ing)? only\b",
                  lambda m: "only".ljust(len(m.group(0))), text)
    text = re.sub(r"\bin (?:%|percent|percentage|relative) terms\b", "in %", text)  # ("grew fastest, in % terms")
    text = re.sub(r"\bbroken out by\b", "broken down by", text)  # ("2024 sales broken out by quarter")
    text = re.sub(r"\bsplit ((?:that|it|this|them|those) )?out by\b", r"split \1by    ", text)  # ("split that out by")
    text = re.sub(r"\bbut (?=never\b)", "    ", text)  # ("have signed up but never ordered")
    text = re.sub(r"\bsubject lines?\b", lambda m: "text".ljust(len(m.group(0))), text)  # (what people wrote)
    text = re.sub(r"\b(?:for |in )?(?:each|every one) of the ((?:last|past|previous|prior) \w+ "
                  r"(day|week|month|quarter|year)s)\b", r"by \2 over the \1", text)  # "for each of the last 3 months"
    text = _through_a_year(text)
    text = re.sub(r"[^\W\d_]{4,}", _time_typo, text)
    text = _BECOMES.sub(lambda m: "are".ljust(len(m.group(0))), text)
    if not re.search(r"\bhow many\b", text):
        text = _TAKEN_IN.sub(lambda m: "money".ljust(len(m.group(0))), text)
    text = _TAKEN.sub(lambda m: " " * len(m.group(0)), text)
    text = _SPENT_WITH_US.sub(lambda m: "money".ljust(len(m.group(0))), text)
    text = re.sub(r"\bhow many different\b", "how many distinct  ", text)  # (not a comparison)
    text = _shorthand_at_work(text)
    # an analyst's "orders where status = cancelled": "with" (a word between, so "orders status" is no one name)
    text = re.sub(r"\bwhere(?= \w+(?: \w+)? (?:==?|(?:is|equals|in)\b))", "with ", text)
    text = _PHRASAL.sub(lambda m: f"{m.group(1)} {m.group(3)} {m.group(2)}", text)  # "send stuff back": sent back
    text = re.sub(r"\b(best|top|worst)[- ](selling|sellers?|performing|performers?)\b", r"\1 \2", text)
    return _FILLER.sub(lambda m: " " * len(m.group(0)), text)


def _said_plainly(text: str) -> str:
    """Ways of asking that say what a plainer wording says ("who've", "how fast … grown", "over the course of",
    "had nothing returned", "plus the % increase", "2024's"): rewritten to it, keeping words that change meaning."""
    text = re.sub(r"\b(who|which|that|they|we|you|i)'ve\b", r"\1 have", text)  # "customers who've bought"
    text = re.sub(r"\bhow (?:fast|quickly)(?= (?:(?:have|has|did|do|does|is|are) )?(?:\w+ ){0,5}(?:grow|grew|grown|"
                  r"growing|increas\w*|declin\w*|drop\w*|fall\w*|fell|shr[iau]nk\w*|ris\w+|rose)\b)", "how much",
                  text)  # ("how fast have orders grown each year": the change, each year)
    # ("grown from one year to the next": each against the one before)
    text = re.sub(r"\bfrom one (year|quarter|month|week) to the next\b", r"\1 over \1", text)
    text = re.sub(r"\bover the course of\b", "during", text)  # ("changed over the course of 2025")
    text = re.sub(r"\b(have|has|had) (\w+) at least once\b(?! (?:a|an|per|every|each)\b)", r"\1 \2",
                  text)  # ("who have ordered at least once"; not "at least once a month": how often)
    text = re.sub(r"\bhad nothing (?=\w)", "never had anything ", text)  # ("orders that had nothing returned")
    text = re.sub(r"\b(never \w+(?: back)?) a single (?:item|thing|one)\b", r"\1 anything",
                  text)  # ("never returned a single item"; "never placed a single web order" keeps its words)
    text = re.sub(r"\bplus (?=(?:the |its |their )?(?:% ?)?(?:growth|change|increase|decrease|yoy)\b(?! (?:in|of)\b))",
                  "with ", text)  # ("revenue each year, plus the % increase on the previous year"; not "plus growth
    # in order count": another measure's)
    text = re.sub(r"^(\W*same(?: \w+)?) but (?=\w)", r"\1 ", text)  # ("same list but ranked by units instead")
    text = re.sub(r"\b((?:19|20)\d\d)'s\b", r"\1", text)  # ("2024's highest-revenue region")
    return text


def _through_a_year(text: str) -> str:
    """"Month by month through 2025": during it, when a grain is said and no period before it ("2023 through
    2025" stays a stretch; alone, "revenue through 2024" may mean up to its end: not read)."""
    if re.search(r"\b(?:(?:by|each|every|per) (?:day|week|month|quarter)|daily|weekly|monthly|quarterly|trend\w*)\b",
                 text):
        through = re.search(r"\bthrough (?=\d{4}\b)", text)
        if through and not _PERIOD_BEFORE.search(text, 0, through.start()):
            text = text[:through.start()] + "in      " + text[through.end():]
    return text


def _shorthand_at_work(text: str) -> str:
    """How people at work say what a question already says another way ("w/", "where are we on", "the % change",
    "this yr vs last", "#1 reason"): rewritten to the plain words, or taken out."""
    text = re.sub(r"\bw/(?=\s)", "with", text)  # "by year w/ growth"
    # "the change from the previous quarter": against it (alone, "revenue from the previous quarter" is in it)
    text = re.sub(r"\b(change|growth|increase|decrease|difference)( (?:in \w+ )?)(from|over|on)\b(?= (?:the )?"
                  r"(?:previous|prior) (?:month|quarter|week|year|period)\b)",
                  lambda m: f"{m.group(1)}{m.group(2)}{'vs'.rjust(len(m.group(3)))}", text)
    # "the % change", "growth in percent": the change as a rate, not a share
    text = re.sub(r"(?:%|\bper ?cent(?:age)?)(?= (?:change|growth|increase|decrease|drop|difference|decline)\b)|"
                  r"(?<=\bchange )(?:in |as an? )?(?:%|per ?cent(?:age)?\b)|(?<=\bby how much )(?:in |as an? )?"
                  r"(?:%|per ?cent(?:age)?\b)", lambda m: " " * len(m.group(0)), text)  # ("… by how much %")
    text = re.sub(r"\b(we|they) stock\b", r"\1 carry", text)  # "products we stock" (not "units in stock")
    # "which channel drove the uplift": the one that grew the most (not "what's driving cancellations": why)
    text = re.sub(r"(?<=\bwhich )(\w+(?: \w+)? )(?:drove|drives|was behind|were behind|(?:was|were) responsible for|"
                  r"contributed (?:most )?to) (?:the|that|this|our) (?:uplift|growth|increase|rise|gain|jump)\b",
                  lambda m: f"{m.group(1)}grew the most".ljust(len(m.group(0))), text)
    # "how much have we sold in apparel": money ("how many … sold", "how much of product X": units, not read so)
    if not re.search(r"\b(?:units?|items?|pieces?|quantity|quantities|volume)\b", text):
        text = re.sub(r"\bhow much(?= (?:(?:have|has|did|do|does) )?(?:we|they|you|i) (?:sold|sell)\b)", "money   ",
                      text)
        # "did we sell more to US or Canada customers": the money (the customers say whose rows, not what to count)
        text = re.sub(r"\b(?:sell|sold)(?= (?:more|less) (?:to|through|via|in|on|at)\b)", "money", text)
        # "how many customers did we sell to in 2025": those who bought then (not those who joined then)
        text = re.sub(r"(?<=\bhow many )(\w+(?: \w+)?) (did|do|have|has) (?:we|they) (?:sell|sold) to\b",
                      lambda m: f"{m.group(1)} {'have ' if m.group(2) in ('have', 'has') else ''}bought", text)
        # "how many did we sell to enterprise customers": units
        text = re.sub(r"\bhow many(?= (?:(?:have|has|did|do|does) )?(?:we|they|you|i) (?:sold|sell)\b)",
                      "how many units", text)
    # "how many orders does a customer place": orders per customer
    text = re.sub(r"\b(how many \w+(?: \w+)?) (?:does|do|did|would|will) (?:a|an|each|one|the average|the typical) "
                  r"(?=\w)", r"\1 per ", text)
    # "this year vs last": the same unit
    text = re.sub(r"\b(this (year|quarter|month|week)\b.{0,30}?\b(?:vs\.?|versus|against|compared (?:to|with)|than) "
                  r"last)\b(?! (?:year|quarter|month|week)\b)", r"\1 \2", text)
    # "biggest market first": the order said once
    text = re.sub(r"\b((?:biggest|largest|highest|smallest|lowest|busiest)(?: \w+)?) first(?![\w-])",
                  lambda m: m.group(1).ljust(len(m.group(0))), text)
    text = re.sub(r"\b(?:the )?full[- ]year(?= (?:of )?(?:19|20)\d\d\b)", lambda m: " " * len(m.group(0)), text)
    text = re.sub(r"^\W*where (?:are|r|do) (?:we|things) (?:on|with|at|stand on|stand with)\b|"
                  r"\bwhere (?=(?:did|does|do|will|has|have) .{1,60}?\bland(?:ed)?\b)",
                  lambda m: " " * len(m.group(0)), text)  # "where are we on turnover": how much it is
    text = re.sub(r"(?<!order )(?<!ticket )#(\d{1,2}) (?=[a-z])", r"top \1 ", text)  # "the #1 reason" (not "order #12")
    if re.search(r"^\W*(?:how|how'?s|what'?s|what (?:is|has))\b|\bland(?:ed)?\b", text):  # "how did Q4 sales
        # land", "what's AOV been doing", "where did net sales land"
        text = _HOW_IT_GOES.sub(lambda m: " " * len(m.group(0)), text)
    return text


def _full_year(written: str) -> int:
    return int(written) if len(written) == 4 else 2000 + int(written)


def spelled_out(text: str) -> str:
    """Short forms written out ("rev", "avg") and calendar words' typos mended, for looking words up."""
    return _normalised(text).strip()


def _time_typo(word: re.Match) -> str:
    """"yaer" as "year": only near a calendar or order word, never a word of its own (STOP's, or its forms)."""
    written = word.group(0)
    if written in STOP or written in _EARLY_WORDS or written.rstrip("s") in STOP or is_word(written):
        return written  # ("dairy", "jute", "match" are words of their own)
    return near(written, _EARLY_WORDS) or written


def _comparison(text: str, reading: Reading) -> str:
    """"Year over year", "vs last year", "compared to the quarter before": a period against an earlier one."""
    compare, text = _take(_SAME_PERIOD_LAST_YEAR, text)
    if compare:
        reading.compare = "same_period_last_year"
        # "how did X compare with …", "this year vs last year": both periods, side by side (a change is asked
        # for with its own words: "growth vs last year", "year over year")
        each_year = re.fullmatch(r"year[ -]o(?:ver|n)[ -]year|yoy|y/y", compare.group(0))
        while each_year and (again := _YEAR_OVER_YEAR.search(text)):  # "year on year … the YoY %": said twice
            text = _blank(text, again.start(), again.end())
        reading.compared_outright = not each_year
        if each_year:
            reading.compare_grain = "year"  # "trended year over year": each year against the one before
        return text
    compare, text = _take(_PREVIOUS_PERIOD, text)
    while compare and _PREVIOUS_PERIOD.search(text):  # "MoM …, with the change vs the prior month": said twice
        again, text = _take(_PREVIOUS_PERIOD, text)
        compare = compare if any(compare.groups()) else again
    if compare:
        reading.compare = "previous_period"
        reading.compared_outright = not re.search(r"[ -]o(?:ver|n)[ -]", compare.group(0))  # "vs the quarter before"
        grain = next((g for g in compare.groups() if g), None)
        reading.compare_grain = grain if grain in ("month", "quarter", "week", "year") else None
    return text


def _against_earlier(spans: list[TimeSpan], text: str, said: str, earlier: Reading | None, reading: Reading,
                     latest: dt.date | None) -> list[TimeSpan]:
    """"and how does that compare with 2023?": the earlier period against the one named now; "with the previous
    year": the one before the earlier one, not before now. Only in a follow-up that points back."""
    against = _AGAINST.search(text) if earlier is not None and earlier.time is not None and len(spans) == 1 else None
    if against is None or not re.search(r"\b(?:that|it|this|those|these|each (?:month|quarter|week)|which one|which "
                                        r"of (?:them|those|these))\b", text[:against.start()]):
        return spans
    same = re.search(r"\b(?:against|vs\.?|versus|with|to) the same (month|quarter|week)s?\b", said)
    year_before = _a_year_before(dated(earlier.time, latest))
    if same and earlier.grain == same.group(1) and year_before is None and latest is None and \
            earlier.time.kind != "between":
        reading.needs_latest = True  # ("this year" by quarter, then "vs the same quarters in 2024")
        return spans
    if same and earlier.grain == same.group(1) and year_before is not None and (
            year_before.start, year_before.end) == (spans[0].start, spans[0].end):
        # "how does each month stack up against the same month in 2024?" after 2025 by month: each month of
        # the earlier period against the same month a year before
        reading.compare, reading.compare_grain = "same_period_last_year", same.group(1)
        return [earlier.time]
    before = _before_earlier(spans[0], earlier.time)
    if before is None and spans[0].kind == "relative":
        reading.unknown.append(spans[0].words.strip())
        reading.reasons[spans[0].words.strip()] = "say which period, e.g. \u201ccompared with 2023\u201d"
    elif (before or spans[0]) != earlier.time:
        reading.against_earlier = True
        return [earlier.time, before or spans[0]]
    return spans


def _one_before_earlier(text: str, earlier: TimeSpan, latest: dt.date | None, reading: Reading
                        ) -> tuple[tuple[TimeSpan, int] | None, str]:
    """"what about the year before?" after a question about 2025: 2024, the one before the earlier period (not
    before now), with where it was said; the words taken out of the text. (None, text) when there is none."""
    said = _THE_ONE_BEFORE.search(text)
    if said is None:
        return None, text
    if said.group(3):  # "the same quarter a year earlier": the earlier period, a year back
        before = _a_year_before(dated(earlier, latest))
        if before is not None and said.group(3) != "period" and before.calendar_unit != said.group(3):
            return None, text  # ("the same month a year earlier" after a quarter: which month is not said)
    else:
        unit = said.group(1) or said.group(2)
        before = _before_earlier(TimeSpan("relative", said.group(0), op="previous", unit=unit),
                                 dated(earlier, latest))
    if before is None and latest is None and earlier.kind != "between":
        reading.needs_latest = True  # ("last quarter", then "the year before": which, once "now" is known)
        return None, _blank(text, said.start(), said.end())
    if before is None:
        return None, text
    return (replace(before, words=describe(before)), said.start()), _blank(text, said.start(), said.end())


def _value_against_earlier(text: str, value_spans: list[tuple[int, int, str]], reading: Reading,
                           earlier: Reading, own_period: bool = False) -> str:
    """"ok, and how does that stack up against the website?": the value named now set beside the earlier
    question's (see `_follow`), when the follow-up points back, every value after the comparing words is of the
    field the earlier question limited, and nothing else is named after them ("compare with 2023, web only" keeps
    its words for the period)."""
    against = _SET_AGAINST.search(text)
    if against is None or not re.search(r"\b(?:that|it|this|those|these)\b", text[:against.start()]) or (
            own_period and against.group(0).endswith(" than")):
        return text  # ("is that higher than store in 2024?" after web in 2025: not both in 2024)
    after = {value for start, _, value in value_spans if start >= against.end()}
    earlier_fields = {f.field["id"] for f in [*earlier.filters, *([earlier.split] if earlier.split else [])]}
    fields = {f.field["id"] for f in [*reading.filters, *([reading.split] if reading.split else [])]
              if set(f.values) & after}
    if not after or not fields or not fields <= earlier_fields or any(
            start < against.start() for start, _, value in value_spans if value in after):
        return text
    reading.set_against = True
    return _blank(text, against.start(), against.end())


def _a_year_before(span: TimeSpan) -> TimeSpan | None:
    """A whole month, quarter or year of dates, a year earlier (None for any other period)."""
    return shifted_back(span, 12) if span.calendar_unit in UNIT_MONTHS else None


def _before_earlier(span: TimeSpan, earlier: TimeSpan) -> TimeSpan | None:
    """"the previous year" said after a question about 2023: 2022 (None when it is no such word, or the earlier
    period is not a whole year, quarter or month of dates)."""
    if span.kind != "relative" or span.op != "previous" or span.count != 1 or earlier.kind != "between":
        return None
    months = UNIT_MONTHS.get(span.unit)
    if months is None or earlier.calendar_unit != span.unit:
        return None
    start = earlier.start.replace(day=1)
    index = start.year * 12 + start.month - 1 - months
    start = dt.date(index // 12, index % 12 + 1, 1)
    end = earlier.start
    return TimeSpan("between", span.words, start=start, end=end)


def _periods(spans: list[TimeSpan], text: str, reading: Reading, asks_change: bool, both: bool = False) -> None:
    """The question's periods. One is a filter. Several of one unit are set side by side ("2024 and 2025"),
    or, asked for a change, each against the one before ("growth in 2025 compared with 2024": 2025 against
    2024). Asked whether one period is higher than the one before (`both`: "up or down from Q2 to Q3"), both
    are shown, side by side."""
    if not spans:
        return
    if any(span.unresolved for span in spans):  # read again once "now" is known
        reading.time, reading.needs_latest = spans[0], True
        return
    ends = spans[0].ends if len(spans) == 1 else ()
    together = side_by_side(list(ends)) if ends else None
    if together is not None and together.kind == "any" and asks_change and (
            _BY_GRAIN.search(text) or reading.compare_grain):
        # "growth for each year from 2022 through 2025": each of them against the one before (of two, the
        # later against the earlier, below)
        unit = ends[0].calendar_unit
        reading.time, reading.grain = spans[0], unit
        reading.compare, reading.compare_grain = "previous_period", unit
        return
    if ends and (asks_change or both):  # "growth from 2023 to 2025": the last against the first, as when both
        # are named
        spans = list(ends)
    spans = _parts_of_years_said_apart(spans)
    if len(spans) == 1:
        _one_period(spans[0], text, reading, asks_change, both)
    else:
        _periods_apart(spans, text, reading, asks_change)


def _difference_between_periods(spans: list[TimeSpan], time_starts: list[int], said: str, reading: Reading) -> bool:
    """"How much more revenue did we make in nov 2025 than in oct?" ("more orders in 2025 than 2024? by how
    much"): the later period, then "than", then the one just before it: the change from the earlier to the
    later (values set apart, "web than store", are not)."""
    by_how_much = _BY_HOW_MUCH.search(said)
    asked = _HOW_MUCH_MORE.search(said) or (by_how_much and _MORE_OR_LESS.search(said, 0, by_how_much.start()))
    if len(spans) != 2 or len(time_starts) != 2 or reading.split is not None or not asked:
        return False
    later, earlier = spans
    if not (later.kind == earlier.kind == "between" and earlier.end <= later.start) or not re.search(
            r"\bthan\b", said[time_starts[0]:time_starts[1]]):
        return False
    together = side_by_side([earlier, later])
    return together is not None and _change_between(together, together.parts[0].calendar_unit) is not None


def _parts_of_years_said_apart(spans: list[TimeSpan]) -> list[TimeSpan]:
    """"Q4 orders … this year", "Q4 revenue this year vs Q4 last year": a quarter or month said without a year
    of its own, with the year it falls in said apart from it, is that part of that year (the year is not a
    period of its own). Of two periods only, any year; among more, only "this year" or "last year"."""
    bare = [span for span in spans if span.kind == "between" and not span.parts and re.fullmatch(
        r"(?:in |for |during )?(?:q[1-4]|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*)",
        span.words.strip())]
    kept = list(spans)
    for inner in bare:
        outer = next((span for span in kept if span is not inner and span.kind == "between" and not span.parts
                      and span.calendar_unit == "year" and span.start <= inner.start and inner.end <= span.end
                      and (len(spans) == 2 or re.fullmatch(r"(?:in |for |of )?(?:this|last) year",
                                                           span.words.strip()))), None)
        if outer is not None:
            kept.remove(outer)
    return kept


def _one_period(span: TimeSpan, text: str, reading: Reading, asks_change: bool, both: bool) -> None:
    """One period: a filter; compared with the one before it and not asked for a change ("was revenue up last
    quarter vs the one before"), the two side by side."""
    reading.time = span
    unit_months = UNIT_MONTHS.get(span.calendar_unit or "")
    each_part = reading.compare == "same_period_last_year" and reading.compare_grain not in (None, "year") and \
        span.calendar_unit == "year"  # (each month of a year against the same month before: not two years)
    if reading.compare and not asks_change and unit_months and not each_part and (
            COMPARING.search(text) or reading.compared_outright or both):
        back = 12 if reading.compare == "same_period_last_year" else UNIT_MONTHS.get(reading.compare_grain or "",
                                                                                      unit_months)
        if back not in (unit_months, 12) or back < unit_months:  # "2025 vs the month before", "last month vs the
            said = span.words.strip()  # previous quarter": no such period to set beside it
            reading.unknown.append(said)
            reading.reasons[said] = (f"I set a period beside the one of the same length just before it, or beside "
                                     f"the same period a year earlier; against a {reading.compare_grain} before, "
                                     f"\u201c{said}\u201d is neither")
            return
        widened = widened_back(span, back)
        if widened is not None:
            reading.time, reading.grain = widened, span.calendar_unit
            reading.compare, reading.compare_grain = None, None


def _periods_apart(spans: list[TimeSpan], text: str, reading: Reading, asks_change: bool) -> None:
    """Several periods: side by side in one unit, or each against the one before when a change is asked."""
    together = side_by_side(spans)
    said = ", ".join(span.words.strip() for span in spans)
    if together is None:  # "in 2024 and in Q3 2025", "last year vs 2023": no one unit to set them side by side in
        reading.time = spans[0]
        reading.unknown.append(said)
        reading.reasons[said] = ("I can set periods side by side only when each is named as a whole year, quarter "
                                 "or month, all of one length, e.g. \u201cin 2024 and 2025\u201d")
        return
    unit = together.parts[0].calendar_unit
    if not asks_change and reading.compare is None:
        reading.time, reading.grain = together, reading.grain or unit
        return
    if reading.compare == "same_period_last_year" and unit == "year" and _named_grain(text) in ("month", "quarter",
                                                                                               "week"):
        # "revenue by quarter for 2024 and 2025, with YoY growth": every quarter of both, each against the same
        # quarter a year before
        reading.time = together
        return
    compare = _change_between(together, unit)
    if compare is None:
        reading.time = together
        reading.unknown.append(said)
        reading.reasons[said] = ("I measure a change against the period just before or the same period a year "
                                 "earlier; asked without \u201cgrowth\u201d, the periods are shown side by side")
        return
    # Two periods: the later against the earlier. More, one after another: each against the one before.
    reading.time = together.parts[-1] if len(together.parts) == 2 else together
    reading.compare, reading.compare_grain, reading.grain = compare, unit, reading.grain or unit


def _named_grain(text: str) -> str | None:
    """The grain a dimension over time is named by ("by quarter", "month by month", "monthly"), if one is."""
    by = _BY_GRAIN.search(text)
    if by:
        return by.group(1) or by.group(2)
    return next((grain for word, grain in _GRAIN_WORDS.items() if re.search(rf"\b{word}\b", text)), None)


def _change_between(together: TimeSpan, unit: str) -> str | None:
    """How periods set side by side compare: each with the one just before (previous_period), two a year
    apart (same_period_last_year), or not at all (None)."""
    parts = together.parts
    steps = {(b.start.year - a.start.year) * 12 + b.start.month - a.start.month for a, b in zip(parts, parts[1:],
                                                                                              strict=False)}
    if steps == {UNIT_MONTHS[unit]}:
        return "previous_period"
    if steps == {12} and len(parts) == 2:
        return "same_period_last_year"
    return None


def _values(text: str, reading: Reading, vocabulary: Vocabulary, matches: list[dict]) -> tuple[str, list]:
    """Blank out every value the probe found in the question (the text, and where each was). Values of one
    field set against each other ("web vs store", "Canada or the United States, which is higher", "compare
    A and B") are a split."""
    by_field: dict[str, list[tuple[int, str]]] = {}
    spans: list[tuple[int, int]] = []
    fields = {f["id"]: {**f, "entity_id": e["id"], "entity_label": e["label"]}
              for e in vocabulary.entities for f in e["fields"]}
    for match in sorted(matches, key=lambda m: -len(m.get("matched_text") or m["untrusted_value"])):
        value = match["untrusted_value"]
        said = (match.get("matched_text") or value).lower()
        if match["field_id"] not in fields:
            continue
        if match.get("approximate"):  # a near spelling: never a word the catalog, a question or English has
            first_name = value.lower().split()[0] == said  # ("toys" for Toys & Games: meant, and said so)
            if _asking_word(said) or singular(said) in vocabulary.known or (
                    is_word(said) and not _spelled_otherwise(said, value) and _unaccented(value) != said
                    and not first_name) or vocabulary.corrected(said) not in (said, value.lower()):
                continue  # an English word is meant as written ("austria" is no Australia, "stoves" no store;
                # but "canceled" is "cancelled" spelled the American way, "quebec" Québec without its accent);
                # "retuned" is one slip from the catalog's "returned", two from the value refunded
            reading.assumed.append((said, value))
        # Every place the value is said, in the person's words or its own ("third-party marketplaces", "phone
        # channel … phone orders"), but not where it begins a measure's name.
        spoken = "|".join(re.escape(w).replace(r"\ ", r"[\s_-]+") for w in dict.fromkeys([said, value.lower()]))
        for found in [m for m in re.finditer(r"(?<!\w)(?:" + spoken + r")(?:e?s|'s)?(?!\w)", text)
                      if not _names_a_measure(text, m.start(), vocabulary)]:
            text = _blank(text, found.start(), found.end())
            spans.append((found.start(), found.end(), value))
            line = re.match(r"\s+(?:range|ranges|lineup|assortment|line|lines)\b", text[found.end():])
            if line:  # "our Electronics range": the value's own rows
                text = _blank(text, found.end(), found.end() + line.end())
            by_field.setdefault(match["field_id"], []).append((found.start(), value))
    for field_id, found in by_field.items():
        found.sort()
        text, found = _said_besides(text, found)
        values = tuple(dict.fromkeys(v for _, v in found))
        between = text[found[0][0]:found[-1][0]] if len(found) > 1 else ""
        condition = Filter(fields[field_id], values)
        if _SHARE.search(text) and re.search(r"\b(are|were|is|was|get|got|being|been)\s+$", text[:found[0][0]]):
            reading.share = condition  # "what share of orders are cancelled": the part, not a filter
        elif len(values) > 1 and (_SPLIT.search(between) or (
                re.search(r"\b(and|or|than)\b", between) and (COMPARING.search(text) or _COMPARE_AND.search(text)))
                or (re.search(r"\bor\b", between) and re.search(r"\bwhich\b", text) and set(_WORD.findall(
                    text)) & (SUPERLATIVE_HIGH | SUPERLATIVE_LOW))):  # "which had the most, web or store?"
            reading.split = condition
            joining = _SPLIT.search(between) or re.search(r"\b(and|or|than)\b", between)
            if joining and _names_a_measure_in(between, vocabulary):  # "apparel's return rate compared with
                start = found[0][0] + joining.start()  # grocery's": the measure between stays
                text = _blank(text, start, found[0][0] + joining.end())
            else:
                text = _blank(text, found[0][0], found[-1][0])
        else:
            reading.filters.append(condition)
    return text, spans


# A heading or a note of who asks and why, before the question itself: "For the channel review:", "Finance
# wants to know:", "Category management question -", "Returns desk here.", "For the board pack, I need …".
_FRAMING = re.compile(
    r"^\s*(?:(?P<head>[^:.!?;]{2,60}?)(?::\s|\s[-\u2013\u2014]{1,2}\s)"
    r"|(?P<intro>[^:.!?;,]{2,40}?\shere)[.!,]\s"
    r"|(?P<purpose>(?:for|re)\s[^:.!?;,]{2,50}?)(?:,\s|\s(?=(?:i|we)\s(?:need|want|'d like|would like)\b|"
    r"(?:can|could|would)\s(?:you|u)\b|please\b|pls\b))"
    # "Finance is asking how many …", "my boss wants to know which …"
    r"|(?P<reporter>(?:[\w']+\s){1,3}(?:is asking|are asking|asked(?: me)?|asks|wants to know|want to know|"
    r"would like to know|needs to know|need to know)(?: about)?)\s(?=(?:how|what|which|who|when|where|whether|if|is|"
    r"are|did|do|does)\b))")
# Words that say who asks or for what occasion, and nothing about which rows ("For the board pack:", "Finance is
# asking", "Returns desk here."): the only other words a framing may hold.
_OCCASION_WORDS = frozenset("""review reviews pack deck slides slide meeting call sync standup report reporting question
questions update check board finance team desk ops operations marketing exec execs leadership boss manager management
cfo ceo coo vp director analyst pipeline planning budget backlog prep dashboard memo newsletter offsite kickoff retro
qbr investor investors town hall doing asking asked asks presentation summary recap catch-up catchup one-pager audit
committee cx kpi kpis okr okrs mbr wbr""".split())
# The only words of STOP a framing may hold: who asks, for what occasion; never what or how to count.
_FRAMING_WORDS = frozenset("""for re the a an my our this that from on to of here is are am i we me us you
about with and need needs want wants know please hi hello hey thanks ok okay so quick check one i'm i've we're
we've doing is asking asked asks would like""".split())


def _compound(written: str, vocabulary: Vocabulary) -> str:
    """A hyphenated word as the catalog knows it: whole ("e-commerce", "e-mail"), joined ("sign-ups" as
    "signups", padded to keep every position), or as separate words ("year-end")."""
    if singular(written) in vocabulary.known or written in PERSONAL:
        return written
    joined = written.replace("-", "")
    if singular(joined) in vocabulary.known:
        return joined.ljust(len(written))
    return written.replace("-", " ")


def spaced_for_values(text: str, entities: list[dict]) -> str:
    """"high-priority tickets" as "high priority tickets" where the word after the hyphen is the catalog's
    ("priority"), so a value-match sees the value ("high") as a word of its own, and "apparel's" as "apparel".
    Other compounds stay whole: "non-cancelled" must never name `cancelled`."""
    known = Vocabulary(entities).known
    text = re.sub(r"(?<=[^\W\d_])['\u2019]s\b", "", text)  # ("apparel's return rate": Apparel)
    return _HYPHENATED.sub(lambda m: m.group(0).replace("-", " ") if singular(m.group(0).rsplit("-", 1)[1]) in known
                           and m.group(0).split("-", 1)[0] not in ("non", "un", "not", "anti", "ex") else m.group(0),
                           text)


# "…this year, and how many were critical?": a second question begins.
_SECOND_QUESTION = re.compile(r"(?:,\s*|;\s*|\s)(?:and|but|also|plus)\s+(?=(?:how many|how much|what|which|who|"
                              r"where|when|is|are|was|were|did|does|do)\b)")


def _second_question(text: str, question: str, spans: list[TimeSpan], time_starts: list[int], matches: list[dict],
                     reading: Reading) -> tuple[str, list[TimeSpan], list[int]]:
    """A second question that names a value ("…, and how many were critical?") is not folded into the first
    (that would answer neither): it is named as unusable, to be asked on its own."""
    found = _SECOND_QUESTION.search(text)
    if found is None or all(w in STOP for w in _WORD.findall(text[:found.start()])):
        return text, spans, time_starts  # ("ok and how many of those were in-store?": one question)
    start = found.start()
    rest = text[start:]
    if not _value_places(rest, matches):  # ("how many orders and how many units in 2024?": two measures of the
        # same rows, when "in 2024" may be said of both; "revenue in 2024 and what was it in 2023")
        return text, spans, time_starts
    again = _asked_again_of(text[:start], rest, matches)
    if again is not None:
        return text[:start] + again, spans, time_starts
    said = " ".join(rest.split()).strip(" ,;.?!")
    reading.unknown.append(said)
    reading.reasons[said] = "I answer one question at a time: ask this part on its own next"
    reading.asks_other_rows = True  # (no reading without it is the question asked)
    kept = [(span, at) for span, at in zip(spans, time_starts, strict=True) if at < start]
    return text[:start] + " " * len(rest), [span for span, _ in kept], [at for _, at in kept]


def _value_places(text: str, matches: list[dict]) -> list[tuple[re.Match, dict]]:
    """Where each matched value is said in `text` (as the match said it, or its plural), with its match."""
    return [(found, m) for m in matches for found in re.finditer(
        r"(?<!\w)" + re.escape((m.get("matched_text") or m["untrusted_value"]).lower()) + r"(?:e?s)?(?!\w)", text)]


def _asked_again_of(first: str, rest: str, matches: list[dict]) -> str | None:
    """"how many orders did enterprise accounts place, and how many did the SMBs place?": the same question
    again of another value of a field the first part names: the two side by side (the rest as "vs SMBs"),
    when every other word of the rest is one the first part said or one that says nothing. None otherwise."""
    named_first, named_rest = _value_places(first, matches), _value_places(rest, matches)
    fields = {m["field_id"] for _, m in named_rest}
    if len(fields) != 1 or fields - {m["field_id"] for _, m in named_first}:  # (two changed: two questions)
        return None
    left = rest
    for found, _ in named_rest:
        left = _blank(left, found.start(), found.end())
    if any(w not in STOP and w not in _WORD.findall(first) for w in _WORD.findall(left)):
        return None
    again = [" "] * len(rest)
    for found, _ in named_rest:
        again[found.start():found.end()] = rest[found.start():found.end()]
    first_at = min(found.start() for found, _ in named_rest)
    if first_at < 3:
        return None
    again[first_at - 3:first_at - 1] = "vs"
    return "".join(again)


def _unaccented(value: str) -> str:
    """`value` lower-cased without its accents ("Québec": "quebec")."""
    return "".join(c for c in unicodedata.normalize("NFKD", value.lower()) if not unicodedata.combining(c))


def _spelled_otherwise(said: str, value: str) -> bool:
    """The same word spelled another way by doubling a letter ("canceled", "cancelled"; "fulfilment")."""
    undoubled = [re.sub(r"(.)\1", r"\1", word.lower()) for word in (said, value)]
    return undoubled[0] == undoubled[1] and said.lower() != value.lower() and len(said) >= 6


def _framing(text: str, vocabulary: Vocabulary, reading: Reading, value_spans: list[tuple[int, int, str]],
             time_starts: list[int]) -> str:
    """The text without a framing before the question. A framing holds no value, period or number; its words
    are pointing and joining words, words of who asks and for what occasion (_OCCASION_WORDS, at least one:
    so "Revenue by channel: 2024" is a question, not a heading), possessives ("friday's"), or catalog words
    the question names again ("the channel review": the web channel). Any other word may say which rows
    ("For Europe,"), so the framing is then read as part of the question."""
    found = _FRAMING.match(text)
    if found is None:
        return text
    group = next(name for name in ("head", "intro", "purpose", "reporter") if found.group(name))
    start, end = found.span(group)
    rest = text[found.end():]
    if any(start <= at < end for at, _, _ in value_spans) or any(start <= at < end for at in time_starts) or \
            len(_WORD.findall(rest)) < 2:
        return text
    written = _WORD.findall(text[start:end])
    said = [plain(w) for w in written]
    tokens = [vocabulary.corrected(singular(w)) for w in said]
    named: set[str] = set()
    strange = False
    position = 0
    while position < len(tokens):
        entries = vocabulary.longest_at(tokens, position)
        if entries:
            named |= {e.item.get("entity_id", e.item["id"]) for e in entries}
            position += len(entries[0].phrase)
            continue
        word = said[position]
        partly = [item for kind in ("entity", "field", "metric") for item in vocabulary.partial(tokens[position], kind)]
        if partly:  # "support asked me": a word of a catalog name, to be named again
            named |= {item.get("entity_id", item["id"]) for item in partly}
        elif word in STOP and word in _FRAMING_WORDS:
            pass
        elif word in _OCCASION_WORDS or written[position].endswith("'s"):  # "for friday's pipeline call"
            strange = True
        else:  # any other word may say which rows ("For Europe,", "Weekends:", "Premium products -")
            return text
        position += 1
    rest_tokens = [vocabulary.corrected(singular(plain(w))) for w in _WORD.findall(rest)]
    again = {e.item.get("entity_id", e.item["id"]) for i in range(len(rest_tokens))
             for e in vocabulary.longest_at(rest_tokens, i)}
    again |= {f.field["entity_id"] for f in [*reading.filters, *filter(None, [reading.split, reading.share])]}
    if not strange or not named <= again:
        return text
    return _blank(text, 0, found.end())


_NOT_BEFORE = re.compile(r"\b(?:but not|and not|not (?:counting|including)|not|excluding|except|without|leaving out|"
                         r"ignoring)\s+(?:the\s+|any\s+)?$")


def _said_besides(text: str, found: list[tuple[int, str]]) -> tuple[str, list[tuple[int, str]]]:
    """"Only open, not pending": a value ruled out beside another value of the same field kept says nothing
    more than the kept one; its negating word is explained. Ruled out alone ("not web"), it stays unexplained."""
    first = next((i for i, (at, _) in enumerate(found) if _NOT_BEFORE.search(text[:at])), None)
    if first is None or first == 0:  # nothing ruled out, or nothing kept before it ("except web and phone")
        return text, found
    # the values ruled out: the first, and each joined to it by "and", "or", "nor" or a comma ("not store or phone")
    last = first
    while last + 1 < len(found) and re.fullmatch(r"[\s,]*(?:and|or|nor|&)?[\s,]*(?:the\s+)?",
                                                 _between(text, found[last], found[last + 1])):
        last += 1
    if last + 1 < len(found):  # a value after them: which way it goes is not plain
        return text, found
    kept, negated = found[:first], found[first:]
    if {v for _, v in negated} & {v for _, v in kept}:
        return text, found
    said = _NOT_BEFORE.search(text[:found[first][0]])
    return _blank(text, said.start(), said.end()), kept


def _between(text: str, one: tuple[int, str], other: tuple[int, str]) -> str:
    """The text between the end of one value said and the start of the next (values are blanked already)."""
    return text[one[0]:other[0]].strip()


_SENTENCE = re.compile(r"[^.!?;\u2013\u2014]+?(?:[.!?;]+|\s[-\u2013\u2014]\s|$)")
RESTRICTING = frozenset({"only", "just", "solely", "exclusively"})
_PEOPLE = frozenset({"i", "we", "you", "they"})


def _asides(text: str, vocabulary: Vocabulary, value_spans: list[tuple[int, int, str]], time_starts: list[int],
            reading: Reading, question: str) -> list[tuple[int, int]]:
    """Where, beside the question, a sentence asks nothing of the data ("felt busy", "I'm putting together a
    channel deck for Thursday -"): its words the catalog does not know are passed over. An aside names no
    value, period, number or measure, and nothing that restricts or turns something around; one in the
    person's own voice may name a field in passing ("a channel deck"). A first-person sentence that names
    more ("I joined in 2023.", "I'm only interested in web orders.") may or may not be part of the question,
    so it is said to be unusable rather than guessed at, unless each value it names is named again in the
    question ("I keep hearing the website is taking over. … through the web …"). The only sentence is never
    an aside."""
    sentences = [m.span() for m in _SENTENCE.finditer(text) if m.group(0).strip()]
    as_written = [m.group(0) for m in _SENTENCE.finditer(question) if m.group(0).strip()]
    if len(sentences) < 2:
        return []
    asides = []
    for index, (start, end) in enumerate(sentences):
        sentence = text[start:end]
        inside = {value for at, _, value in value_spans if start <= at < end}
        elsewhere = {value for at, _, value in value_spans if not start <= at < end}
        first_person = _FIRST_PERSON.match(sentence) is not None or _IMPRESSION.match(sentence) is not None
        values = inside - elsewhere if first_person else inside
        holds = any(start <= at < end for at in time_starts) or _restricts(sentence, vocabulary) or bool(
            values) or _lays_out(sentence, ranking=True)
        # (an aside of one or two words, "Weekends.", may well restrict: never passed over)
        if not holds and (first_person or (len(_WORD.findall(sentence)) >= 3
                                           and not _names_anything(sentence, vocabulary))):
            asides.append((start, end))
        elif first_person and values and not _restricts(sentence, vocabulary) and not _lays_out(
                sentence, ranking=False) and not any(start <= at < end for at in time_starts) and _shown_apart(
                values, text[:start] + text[end:], vocabulary, reading):
            # "return rate by category, highest first? I think apparel is the worst": every category is shown
            asides.append((start, end))
            reading.filters = [replace(f, values=kept) for f in reading.filters
                               if (kept := tuple(v for v in f.values if v not in values))]
        elif holds and first_person and (not _names_a_measure_in(sentence, vocabulary) or _names_a_measure_in(
                text[:start] + text[end:], vocabulary)) and (
                values or any(start <= at < end for at in time_starts) or _adds_a_restriction(
                    sentence, text[:start] + text[end:], vocabulary)):
            # (a measure there too, when the rest names one: "I want to see whether enterprise accounts spend
            # more. Compare the average order value …" is no more plainly part of it)
            # (one that only says how to lay the answer out, "I want the % change each month", is read with it)
            said = " ".join((as_written[index] if len(as_written) == len(sentences) else sentence).split()).strip(
                " .!?;-\u2013")
            reading.unknown.append(said)
            reading.reasons[said] = ("I cannot tell whether this sentence is part of what you ask: say it in the "
                                     "question itself")
    return asides if len(asides) < len(sentences) else []


def _lays_out(sentence: str, ranking: bool) -> bool:
    """Words that say how the answer is laid out: a grain ("show it per year"), a trend, a share, a change,
    a comparison, and with `ranking` a ranking ("the worst")."""
    said = set(_WORD.findall(sentence))
    shape = any(p.search(sentence) for p in (_BY_GRAIN, _TREND, _SHARE, _GROWTH)) or bool(said & set(_GRAIN_WORDS))
    ranks = bool(said & (SUPERLATIVE_HIGH | SUPERLATIVE_LOW)) or _TOP_N.search(sentence) is not None or bool(
        COMPARING.search(sentence) and said & {"which", "what", "who"})  # ("need more agents" ranks nothing)
    return shape or (ranking and ranks)


def _shown_apart(values: set[str], rest: str, vocabulary: Vocabulary, reading: Reading) -> bool:
    """Each value is of a field the rest of the question breaks the answer down by ("by product category"),
    so the answer shows it on its own row."""
    fields = {f.field["id"] for f in reading.filters if set(f.values) & values}
    if not fields or any(set(f.values) & values and not set(f.values) <= values for f in reading.filters):
        return False
    tokens = [vocabulary.corrected(singular(plain(w))) for w in _WORD.findall(rest)]
    broken_down = {e.item["id"] for i in range(len(tokens)) if _BREAKDOWN.search(" ".join(tokens[max(0, i - 3):i]))
                   for e in vocabulary.longest_at(tokens, i) if e.kind == "field"}
    return fields <= broken_down


_CLAUSE_AFTER_BUT = frozenset({"i", "we", "want", "wanted", "need", "it", "that", "this", "they", "you", "also",
                               "still", "i'm", "i'd", "maybe"})


def _restricts(sentence: str, vocabulary: Vocabulary) -> bool:
    """A number, a restricting or negating word, a measure, or a verb that dates rows."""
    return _restricting_word(sentence) or bool(_kinds_named(sentence, vocabulary) & {"metric", "event"})


def _adds_a_restriction(sentence: str, rest: str, vocabulary: Vocabulary) -> bool:
    """As `_restricts`, but a sentence naming only what the rest of the question names adds nothing ("… split
    by the channel? I need the number of orders for each one."); one naming a field the rest does not ("I need
    revenue by region instead") does."""
    if _restricting_word(sentence):
        return True
    named = _entries_named(sentence, vocabulary)
    return bool({e.kind for e in named} & {"metric", "event"}) and bool(
        {e.item["id"] for e in named} - {e.item["id"] for e in _entries_named(rest, vocabulary)})


def _restricting_word(sentence: str) -> bool:
    """A number, a restricting or negating word ("only", not "I just …", nor "but" starting a clause of the
    person's own: "… but want to check")."""
    said = [plain(w) for w in _WORD.findall(sentence)]
    return any(w.isdigit() or (w in NEGATIONS and not (w == "but" and i + 1 < len(said) and said[
        i + 1] in _CLAUSE_AFTER_BUT)) or (w in RESTRICTING and (i == 0 or said[i - 1] not in _PEOPLE))
               for i, w in enumerate(said))


def _names_a_measure_in(sentence: str, vocabulary: Vocabulary) -> bool:
    return "metric" in _kinds_named(sentence, vocabulary)


def _kinds_named(sentence: str, vocabulary: Vocabulary) -> set[str]:
    return {e.kind for e in _entries_named(sentence, vocabulary)}


def _entries_named(sentence: str, vocabulary: Vocabulary) -> list[_Entry]:
    tokens = [vocabulary.corrected(singular(plain(w))) for w in _WORD.findall(sentence)]
    return [e for i in range(len(tokens)) for e in vocabulary.longest_at(tokens, i)]


def _names_anything(sentence: str, vocabulary: Vocabulary) -> bool:
    """A catalog name (whole), or a field or an amount by one of its words ("segment", "discounts")."""
    tokens = [vocabulary.corrected(singular(plain(w))) for w in _WORD.findall(sentence)]
    return any(vocabulary.longest_at(tokens, i) or vocabulary.partial(token, "field") or vocabulary.partial(
        token, "amount") for i, token in enumerate(tokens))


def _inside(position: int, spans: list[tuple[int, int]]) -> bool:
    return any(start <= position < end for start, end in spans)


def _asking_word(word: str) -> bool:
    """A word questions use for themselves ("higher", "growth", "average"), never a value's near spelling."""
    return word in STOP or word in COMPARATIVE_HIGH | COMPARATIVE_LOW | AVERAGE_WORDS | _UNITS or any(
        pattern.fullmatch(word) for pattern in (COMPARING, _GROWTH, _SHARE, _TREND))


def _names_a_measure(text: str, start: int, vocabulary: Vocabulary) -> bool:
    """A value that begins a measure's name ("cancelled" of "net revenue and cancelled orders") is that
    measure, unless it says whose rows are meant ("revenue from cancelled orders")."""
    said = [vocabulary.corrected(singular(w)) for w in words(text[start:start + 80])]  # ("cancelld orders")
    entries = vocabulary.longest_at(said, 0) if said else []
    if not any(e.kind == "metric" and len(e.phrase) > 1 for e in entries):
        return False
    return not re.search(r"\b(from|of|for|on|in|with|among|across|to|by)\s+(?:the\s+|all\s+|our\s+)?$", text[:start])


def _ranking(text: str, reading: Reading) -> str:
    pace, text = _take(_PACE, text) if reading.compare else (None, text)
    if pace:  # "grew fastest": the groups ranked by their growth
        reading.direction, reading.ranks_change = "asc" if pace.group(0) == "slowest" else "desc", True
    order, text = _take(_ORDER, text)
    if order:  # "highest first", "from lowest to highest": the order, with or without a limit
        reading.direction = "asc" if (order.group(1) or order.group(2) or order.group(3)) in SUPERLATIVE_LOW | {
            "ascending", "asc", "smallest"} else "desc"
    top, text = _take(_TOP_N, text)
    count, word = (top.group(2), top.group(1)) if top else (None, None)
    if top is None:
        top, text = _take(_N_TOP, text)  # "the 10 largest regions"
        count, word = (top.group(1), top.group(2)) if top else (None, None)
    if top is None and (tokens := set(_WORD.findall(text))) & (SUPERLATIVE_HIGH | SUPERLATIVE_LOW):
        top, text = _take(_WHICH_N, text)  # "which 3 regions are the weakest"
        if top is None:
            top, text = _take(_N_WITH_MOST, text)  # "the 5 products with the biggest revenue"
        low = tokens & SUPERLATIVE_LOW and not tokens & SUPERLATIVE_HIGH
        count, word = (top.group(1), "lowest" if low else "highest") if top else (None, None)
    if top:
        reading.limit = int(count) if count.isdigit() else _NUMBER_WORDS[count]
        reading.direction = "asc" if word in SUPERLATIVE_LOW else "desc"
        if periods := _RANKED_PERIODS.match(text, top.end()):  # "the top 3 months": the periods themselves, ranked
            reading.grain = periods.group(1)
            text = _blank(text, periods.start(1), periods.end())
        if reading.limit == 0:  # nothing to show: said, not read as "all of them"
            reading.unknown.append(top.group(0).strip())
            reading.limit = None
    tokens = set(_WORD.findall(text))
    asks_which = re.search(r"\b(which|what|who)\b", text) and reading.split is None
    if reading.direction is None:
        if tokens & SUPERLATIVE_HIGH or (asks_which and tokens & COMPARATIVE_HIGH):
            reading.direction = "desc"
        elif tokens & SUPERLATIVE_LOW or (asks_which and tokens & COMPARATIVE_LOW):
            reading.direction = "asc"
    if reading.direction and re.search(r"\b(which|what|who)\b", text) and not reading.limit:
        reading.which = True
    if re.search(r"\brank(ed|ing)?\b", text) and reading.direction is None:
        reading.direction = "desc"
    return text


# "compare gross vs net sales": with two measures, the comparing word asks for nothing more than both
_COMPARE_WORD = re.compile(r"compare[ds]?|comparing|comparison")
# "total revenue for 2024, all channels": every value of a field taken together, one figure (never beside a
# ranking or a breakdown word: "rank all categories by return rate" lists them)
_ALL_OF = re.compile(r"\ball (?:the |of the |our )?([a-z][a-z' -]*?)(?: combined| together| included)?"
                     r"(?=\s*(?:[?.!,;]|$))")
# (and "what about phone and marketplace combined?": one figure for both, not side by side)
_TOGETHER = re.compile(r"\b(?:total|overall|combined|altogether|together|in all|summed|added up)\b")
# Words asking for the values apart: ", all channels" after them lists the channels ("list revenue, all channels")
_APART = re.compile(r"\b(?:list|listed|listing|each|every|break|broken|split|separately|respectively|apart|"
                    r"side by side)\b")


def _all_of_a_field(text: str, asked: str, vocabulary: Vocabulary, reading: Reading) -> str:
    """Passes over "all <a field's name>" said of a total ("what was total revenue, all channels?") or set off
    after the question ("what did we do in sales last year, all channels"): the total over every value is what
    the measure already is. (Set off with a grain, "revenue, all channels by month" lists them: the grain's
    words are gone from `text` by now, so where they stood cannot be told.)"""
    if _BREAKDOWN_AHEAD.search(text) or _OTHER_ORDER.search(text):
        return text
    together = _TOGETHER.search(text)
    set_off = reading.grain is None and not _APART.search(asked)  # (`text` has lost "break down" by now)
    for found in _ALL_OF.finditer(text):
        if not (together or (set_off and text[:found.start()].rstrip().endswith(","))):
            continue
        tokens = words(found.group(1))
        entries = vocabulary.longest_at(tokens, 0) if tokens else []
        if entries and len(entries[0].phrase) == len(tokens) and all(e.kind == "field" for e in entries):
            text = _blank(text, found.start(), found.end())
            reading.every_value_of.append(entries[0].item["id"])
    return text


def _grain(text: str, reading: Reading) -> str:
    """A dimension by time: "by month", "year by year", "quarterly"; a trend ("over time", "trended") is by
    month unless a grain is named."""
    trend, text = _take(_TREND, text)
    found, text = _take(_BY_GRAIN, text)
    period = None if found else _WHICH_PERIOD.search(text)
    if found:
        reading.grain = found.group(1) or found.group(2)
    elif period:
        reading.grain = period.group(1)
        text = _blank(text, period.start(1), period.end())
    else:
        for word, grain in _GRAIN_WORDS.items():
            hit = re.search(rf"\b{word}\b", text)
            if hit:
                reading.grain = grain
                text = _blank(text, hit.start(), hit.end())
                break
    if reading.grain:  # said twice ("the monthly number of orders, month by month"): one grain
        for again in [*_BY_GRAIN.finditer(text), *re.finditer(r"\b(?:" + "|".join(
                word for word, grain in _GRAIN_WORDS.items() if grain == reading.grain) + r")\b", text)]:
            if again.groups() == () or reading.grain in again.groups():
                text = _blank(text, again.start(), again.end())
    elif trend:
        reading.grain = reading.compare_grain or "month"
    return text


@dataclass
class _Words:
    """The question's remaining words as the catalog pass walks them."""

    raw: list[str]
    tokens: list[str]  # singular, typos corrected
    valued: set[str]  # fields a value already names ("in the web channel": the field word explains it)
    after_by: list[bool]  # after "by", "per", "across": a dimension is named
    after_per: list[bool]
    after_value: list[bool]  # a value was said just before ("by enterprise customers": done by, not grouped)
    before_value: list[bool]  # and just after ("through third-party marketplaces")
    breaks: list[bool]  # punctuation between a word and the one before ("enterprise accounts, … - and the change",
    # "… channel growing? sales")
    entities: list[_EntityWord] = field(default_factory=list)  # decided once every other word is read
    positions: dict[str, int] = field(default_factory=dict)  # where each measure was named: answers keep it
    averages: list[str] = field(default_factory=list)  # "average", "typical" as written
    amounts: list[_Amount] = field(default_factory=list)
    events: list[_EventWord] = field(default_factory=list)
    named_entities: list[dict] | None = None  # every entity the question names, once asked for


@dataclass(frozen=True)
class _EntityWord:
    """An entity named alone: counted, grouped by, or saying whose rows a measure is over."""

    entity: dict
    metric: dict | None  # the measure the word is also a name of ("orders")
    after_by: bool
    beside_and: bool
    written: str
    position: int
    counted: bool = False  # just after a word of quantity ("the most orders"): what is counted


@dataclass(frozen=True)
class _Amount:
    """A number only ever aggregated ("discount"): usable as its average."""

    items: list[dict]
    written: str
    position: int


@dataclass(frozen=True)
class _EventWord:
    """A verb that dates a row ("signed up"); `declared`: as the model wrote it, not another form of it;
    `describing`: just before its rows' name, as a word describing them ("new customers")."""

    date: dict
    written: str
    after_by: bool
    declared: bool
    describing: bool
    ever: bool = False  # "have placed", "ever bought": had at some time, not dated by the question's period
    never: bool = False  # "have never placed"


# Words between who did something and its verb ("people are sending stuff back")
_AUXILIARIES = frozenset({"are", "is", "were", "was", "have", "has", "had", "keep", "kept", "usually", "always"})
# Words before a verb saying its rows were had at some time ("have ever placed", "never bought")
_PERFECT = frozenset({"have", "has", "had", "ever", "never", "actually", "already", "yet", "not", "even",
                      "anything", "something", "any"})  # ("never had anything sent back")


def _catalog_words(text: str, reading: Reading, vocabulary: Vocabulary, value_spans: list[tuple[int, int, str]],
                   context: set[str], situation: list[tuple[int, int]]) -> None:
    """Measures, dimensions and entities named by the rest of the words; what is left is unknown. `context`:
    the entities an earlier question was about (a follow-up's verbs may be about them); `situation`: where
    the person says who they are or why they ask (words there that the catalog does not know are passed
    over, unless they turn something around)."""
    found = list(_WORD.finditer(text))
    seen = _words_of(text, found, reading, vocabulary, value_spans)
    raw = seen.raw
    position = 0
    ruled_out: list[tuple[str, str]] = []
    while position < len(seen.tokens):
        entries = vocabulary.longest_at(seen.tokens, position)
        if entries:
            _place(entries, position, seen, reading, vocabulary)
            position += len(entries[0].phrase)
            while position < len(seen.tokens) and not vocabulary.longest_at(seen.tokens, position) and \
                    _rest_of_label(seen.tokens[position], entries):
                position += 1  # "markdown rate": Discount rate by its other name, and the rest of its own
            continue
        word = seen.tokens[position]
        rather = _measure_ruled_out(position, seen, vocabulary)
        if rather:  # "by units not revenue": said to make the measure plain; checked once all are read
            metric = next(e for e in rather if e.kind == "metric")
            ruled_out.append((" ".join(raw[position:position + 1 + len(metric.phrase)]), metric.item["id"]))
            position += 1 + len(rather[0].phrase)
            continue
        if word == "name" and _shown_name(position, seen, vocabulary):
            pass  # "the 5 products with the biggest revenue? Name and revenue": the products' own names
        elif word in PERSONAL or raw[position] in PERSONAL:
            reading.personal.append(raw[position])
        elif word in AVERAGE_WORDS:
            seen.averages.append(raw[position])
        elif vocabulary.partial(word, "amount") and not vocabulary.partial(word, "field") and not \
                vocabulary.partial(word, "metric"):  # "discount" of Discount rate
            seen.amounts.append(_Amount(vocabulary.partial(word, "amount"), raw[position], position))
        elif _joins(position, seen, reading, vocabulary):
            pass  # "came through third-party marketplaces", "gross vs net revenue": the words around say it
        elif word in _UNITS and (reading.time or reading.grain):
            pass  # "how the year trended", "which quarter": the period read already says it
        elif _names_next(position, seen, vocabulary):
            pass  # "support cases": a word of the entity's own name before another of its names
        elif word not in STOP and raw[position] not in STOP and not _partial_word(
                word, reading, vocabulary, seen.after_by[position], seen.valued) and (
                raw[position] in NEGATIONS or not _inside(found[position].start(), situation)):
            reading.unknown.append(raw[position])
        position += 1
    _averaged_amounts(seen, reading, vocabulary)
    _implied_measure(text, seen, reading, vocabulary)
    for index, word in enumerate(seen.entities):
        added = _entity_word(word, index, text, reading, vocabulary)
        if added is not None:
            seen.positions.setdefault(added["id"], word.position)
    _event_words(seen, reading, vocabulary, context)
    for said, measure_id in ruled_out:
        if not reading.measures or any(m["id"] == measure_id for m in reading.measures):
            reading.unknown.append(said)  # nothing else asked for, or asked for after all: turned around
    _averages_of_nothing(seen, reading, vocabulary)
    reading.measures.sort(key=lambda m: seen.positions.get(m["id"], len(raw)))  # in the question's order


def _words_of(text: str, found: list[re.Match], reading: Reading, vocabulary: Vocabulary,
              value_spans: list[tuple[int, int, str]]) -> _Words:
    """The question's remaining words, each as written and as the catalog knows it, with what stands around it."""
    raw = [plain(m.group(0)) for m in found]
    gaps = [(found[i - 1].end() if i else 0, m.start()) for i, m in enumerate(found)]
    gaps.append((found[-1].end() if found else 0, len(text)))  # (after the last word)
    valued = [any(start <= a and b <= end for a, b, _ in value_spans) for start, end in gaps]
    return _Words(raw, [vocabulary.corrected(singular(w)) for w in raw],
                  {f.field["id"] for f in [*reading.filters, *filter(None, [reading.split, reading.share])]},
                  # the three words before each: a breakdown phrase is at most three words ("broken down by")
                  [bool(_BREAKDOWN.search(" ".join(raw[max(0, i - 3):i]))) for i in range(len(raw))],
                  [bool(_PER.search(" ".join(raw[max(0, i - 3):i]))) for i in range(len(raw))],
                  valued[:-1], valued[1:], [bool(re.search(r"[,;:()\u2013\u2014?!]|\s-+\s|\.\s", text[start:end]))
                                            for start, end in gaps[:-1]])


def _joins(position: int, seen: _Words, reading: Reading, vocabulary: Vocabulary) -> bool:
    """A word joining what stands around it, said by them: "through" or "via" before a value ("came through
    third-party marketplaces") or before the groups asked for ("sell through each channel", "through which
    channel"), "vs" between two measures ("gross vs net revenue")."""
    raw, following = seen.raw[position], position + 1
    if raw in ("through", "via"):
        return seen.before_value[position] or (following < len(seen.raw) and (seen.raw[following] in (
            "each", "every", "which", "what") or seen.raw[following] in ("the", "a", "an") and seen.before_value[
                following]))
    return raw in ("vs", "versus") and bool(reading.measures) and following < len(seen.tokens) and (any(
        e.kind == "metric" for e in vocabulary.longest_at(seen.tokens, following)) or bool(vocabulary.partial(
            seen.tokens[following], "metric")))


def _averages_of_nothing(seen: _Words, reading: Reading, vocabulary: Vocabulary) -> None:
    """An average word with nothing it is per, and no average measure: an average of what over what is not
    something to guess."""
    if seen.averages and not (reading.per or any(is_average(m) for m in reading.measures)):
        for word in seen.averages:
            reading.unknown.append(word)
            reading.reasons[word] = (f"I cannot average over periods: ask for it by {reading.grain} to see each "
                                     f"{reading.grain}") if reading.grain else \
                f"an average needs what it is per{_per_example(reading, vocabulary)}"


def _per_example(reading: Reading, vocabulary: Vocabulary) -> str:
    """", e.g. “net revenue per order”": the first measure over the nearest thing its rows belong to."""
    if not reading.measures:
        return ""
    measure = reading.measures[0]
    for entity_id in reachable(vocabulary.entities, measure["entity_id"])[1:]:
        entity = vocabulary.by_id.get(entity_id, {})
        if counts_of(entity):
            return f", e.g. \u201c{lower_first(measure['label'])} per {entity['label'].lower()}\u201d"
    return ""


def counts_of(entity: dict) -> list[dict]:
    """An entity's counts of its rows ("Number of orders"): what counting it, or dividing by it, uses."""
    return [{**m, "entity_id": entity["id"]} for m in entity.get("metrics", [])
            if words(m["label"])[:2] == ["number", "of"]]


def _names_next(position: int, seen: _Words, vocabulary: Vocabulary) -> bool:
    """A word of an entity's name ("support" of Support ticket) just before another of that entity's names
    ("cases")."""
    following = vocabulary.longest_at(seen.tokens, position + 1) if position + 1 < len(seen.tokens) else []
    owners = {e.item["id"] if e.kind == "entity" else e.item["entity_id"] for e in following
              if e.kind in ("entity", "metric")}
    return any(entry.kind == "entity" and entry.item["id"] in owners and seen.tokens[position] in entry.phrase
               for entry in vocabulary.entries)


def is_average(measure: dict) -> bool:
    """A measure that is an average already: an averaged amount, or a metric named as one."""
    return measure.get("aggregation") == "avg" or any(
        word in AVERAGE_WORDS for name in [measure["label"], *measure.get("synonyms", [])] for word in words(name))


# Words that, after the name of rows, ask how many of them there are ("ticket volume", "order count").
_HOW_MANY_WORDS = frozenset({"volume", "volumes", "count", "counts", "numbers"})


def _averaged_amounts(seen: _Words, reading: Reading, vocabulary: Vocabulary) -> None:
    """"Average discount": a number only ever aggregated, averaged. Without an average word it is unusable."""
    for found in seen.amounts:
        amount = _choose(found.items, reading, vocabulary)
        label = f"Average {lower_first(amount['label'])}"
        counted = next((word for word in seen.entities if word.position + len(words(word.written)) == found.position
                        and amount["entity_id"] not in reachable(vocabulary.entities, word.entity["id"])
                        and word.entity["id"] not in reachable(vocabulary.entities, amount["entity_id"])), None)
        if counted is not None and not seen.averages and found.written in _HOW_MANY_WORDS:
            continue  # "support ticket volume": how many tickets (their rows hold no quantity to add up)
        if not seen.averages:
            reading.unknown.append(found.written)
            reading.reasons[found.written] = (f"{lower_first(amount['label'])} is never shown as it is, only "
                                              f"averaged: ask for \u201c{lower_first(label)}\u201d")
            continue
        measure = {"id": amount["id"], "label": label, "type": "float", "entity_id": amount["entity_id"],
                   "aggregation": "avg"}
        seen.positions.setdefault(measure["id"], found.position)
        _add(reading.measures, measure)


def _event_words(seen: _Words, reading: Reading, vocabulary: Vocabulary, context: set[str]) -> None:
    """"Signed up", "placed": the date a row is counted by, when the question names what the verb is about
    (a customer for "signed up") and when ("in 2024", "by month"). "New orders" says nothing of a customer's
    signup; "new customers" with no period says nothing of when."""
    named = context | {m["entity_id"] for m in reading.measures} | {e.entity["id"] for e in seen.entities} | {
        reading.per["id"] for _ in [1] if reading.per} | {
        f.field["entity_id"] for f in [*reading.filters, *filter(None, [reading.split, reading.share])]} | {
        b["entity_id"] for b in reading.dimensions}
    _had_at_any_time(seen, reading, vocabulary)
    # (two dates said, "customers who signed up in 2024 and bought online": whose is the period? not read so)
    one_date = len({event.date["id"] for event in seen.events}) == 1 and not reading.had_ever
    for event in seen.events:
        had = _had(event, reading, vocabulary) if reading.time is None and one_date else None
        if had is not None:  # "customers who have ever ordered through the marketplace": with one such order
            reading.has_rows = had
            continue
        if not (reading.time or reading.grain or event.after_by):
            said = f" {' '.join(seen.raw)} "
            if not any(f" {m['label'].lower()} " in said for m in reading.measures) and _measure_of_event(
                    event.date, event.written, reading, vocabulary):  # ("units sold of returned products" keeps
                continue  # its measure; "which 10 SKUs had the most units sent back": Returned units, at any time
            # "new customers" with no period says nothing of when, and another form of a verb ("tickets still
            # open") is no verb at all; "orders placed", "units a customer buys" only say what the rows are.
            if event.declared and not event.describing:
                counted = all(m["id"] in {c["id"] for c in counts_of(vocabulary.by_id.get(m["entity_id"], {}))}
                              for m in reading.measures)  # (a count of records, not a rate or an amount)
                had = _had(event, reading, vocabulary, ever=True) if counted else None
                if had is not None and reading.has_rows is None:  # "how many customers bought": those with at
                    reading.has_rows, reading.had_ever = had, True  # least one, at any time (never all of them)
                continue
            reading.unknown.append(event.written)
            if event.declared:
                reading.reasons[event.written] = "say when, e.g. \u201clast year\u201d or \u201cin 2024\u201d"
            continue
        measured = any((time_field(vocabulary.entities, m["entity_id"]) or {}).get("id") == event.date["id"]
                       for m in reading.measures)  # "units SMB customers buy": the date units are counted by
        measured = measured or _measure_of_event(event.date, event.written, reading, vocabulary)
        had = None if measured or not one_date else _had(event, reading, vocabulary)
        if had is not None:  # "customers who bought this year": those with at least one order then
            reading.has_rows, reading.time_field = had, event.date
            continue
        if event.date["entity_id"] not in named and not measured:
            reading.unknown.append(event.written)
            reading.asks_other_rows = True  # ("customers who bought in 2024": without it, signups in 2024)
            continue
        reading.time_field = event.date
        if event.after_by:
            reading.grain = reading.grain or "month"
    if reading.has_rows is not None:  # "customers who placed an order this year": the rows they had, named
        had = {w.written for w in seen.entities if w.entity["id"] == reading.has_rows["id"]}
        reading.unknown = [w for w in reading.unknown if w not in had]


def _had(event: _EventWord, reading: Reading, vocabulary: Vocabulary, ever: bool = False) -> dict | None:
    """The entity of the verb's rows when the measured records each have many of them, one way, and the question
    says when ("customers who bought this year") or which ("… through the marketplace"): counted are those
    with at least one such row. Over time ("by month") a record would count in each month it had one: not
    read so. `ever`: had at any time ("who have placed an order"), whatever the question's period is of."""
    rows = vocabulary.by_id.get(event.date["entity_id"])
    if rows is None or not reading.measures or (reading.grain and not ever) or event.after_by:
        return None
    if not ever and reading.time is None and not _rows_filters(reading.filters, reading.measures[0]["entity_id"],
                                                               rows["id"], vocabulary.entities):
        return None
    for measure in reading.measures:
        owner = measure["entity_id"]
        ways = [r for r in rows.get("relationships", []) if r["from"] == rows["id"] and r["to"] == owner]
        if owner == rows["id"] or owner not in reachable(vocabulary.entities, rows["id"]) or len(ways) > 1:
            return None
    return rows


def had_filters(reading: Reading, entities: list[dict]) -> list[Filter]:
    """The filters on the rows the counted records must have ("customers who bought online this year": the
    channel of their orders), not on those records."""
    if reading.has_rows is None:
        return []
    return _rows_filters(reading.filters, reading.measures[0]["entity_id"], reading.has_rows["id"], entities)


def _rows_filters(filters: list[Filter], owner: str, rows: str, entities: list[dict]) -> list[Filter]:
    """The filters on what `rows` reach and the measure's own rows (`owner`) do not."""
    own = set(reachable(entities, owner))
    return [f for f in filters if f.field["entity_id"] not in own and f.field["entity_id"] in reachable(entities, rows)]


def _measure_of_event(date: dict, written: str, reading: Reading, vocabulary: Vocabulary) -> bool:
    """"How many units were returned": the measure named ("units") is the verb's own entity's measure of the
    same name (Returned units), not another's (Units sold). True when it was swapped."""
    verb = {form for word in words(written) for form in inflections(word)} | STOP  # "number of" names nothing
    rows = vocabulary.by_id.get(date["entity_id"], {})
    own = rows.get("metrics", [])
    rows_named = {singular(w) for name in [rows.get("label", ""), *rows.get("synonyms", [])] for w in words(name)}
    for index, measure in enumerate(reading.measures):
        named = set(words(measure["label"])) - verb
        if {singular(w) for w in named} & rows_named:  # ("return rate … sent back": named after those rows already)
            continue
        fitting = [m for m in own if named & (set(words(m["label"])) - verb)]
        if measure["entity_id"] != date["entity_id"] and len(fitting) == 1:
            reading.measures[index] = {**fitting[0], "entity_id": date["entity_id"]}
            return True
    return False


def lower_first(label: str) -> str:
    """A label inside a sentence: "Net revenue" as "net revenue"."""
    return label[:1].lower() + label[1:]


def _place(entries: list[_Entry], position: int, seen: _Words, reading: Reading, vocabulary: Vocabulary) -> None:
    """What a catalog phrase found at `position` stands for here."""
    entries = [e for e in entries if not (e.kind == "field" and e.item["id"] in seen.valued)] or entries
    written = " ".join(seen.raw[position:position + len(entries[0].phrase)])
    if all(e.kind == "event" for e in entries):
        _place_event(entries, position, written, seen, vocabulary)
        return
    if all(e.kind == "amount" for e in entries):
        seen.amounts.append(_Amount([e.item for e in entries], written, position))
        return
    entries = [e for e in entries if e.kind not in ("event", "amount")]  # a measure's or a field's name first
    kinds = {e.kind for e in entries}
    items = {kind: [e.item for e in entries if e.kind == kind] for kind in kinds}
    if kinds == {"field"} and all(item["id"] in seen.valued for item in items["field"]) and not seen.after_by[
            position]:  # ("web channel": the value's own field; "by channel for web and store": a dimension)
        return
    dated = [item for item in items.get("field", []) if item["type"] in ("date", "timestamp")]
    if dated and kinds == {"field"}:
        # A date is not a dimension by itself: it says which date time is counted by ("by order date").
        reading.time_field = dated[0]
        if seen.after_by[position]:
            reading.grain = reading.grain or "month"
        owner = vocabulary.by_id.get(dated[0]["entity_id"], {})
        if set(words(" ".join([owner.get("label", ""), *owner.get("synonyms", [])]))) & set(entries[0].phrase):
            # "tickets opened in 2024": the date's name holds its rows' name, which may be what is counted
            seen.entities.append(_EntityWord(owner, None, False, False, written, position))
    elif seen.after_per[position] and "entity" in kinds and "field" not in kinds:
        reading.per = items["entity"][0]
    elif seen.after_by[position] and "field" in kinds:
        _add(reading.dimensions, _choose(items["field"], reading, vocabulary))
    elif "entity" in kinds and "field" not in kinds and _doer(items["entity"][0], position, len(
            entries[0].phrase), seen, vocabulary):
        pass  # "people send stuff back", "sent back by customers": who did it, said by the verb's rows
    elif "entity" in kinds and "field" not in kinds and position and not seen.breaks[position] and any(
            e.item.get("entity_id", e.item["id"]) == items["entity"][0]["id"] and e.kind in ("entity", "field")
            for e in vocabulary.longest_at(seen.tokens, position - 1)):
        pass  # "regional market", "customer accounts": one name in two words (not "… channel growing? sales")
    elif "entity" in kinds and "field" not in kinds:
        # "orders" counts orders, groups by them, or says whose rows a measure is over ("web orders"):
        # decided once every other word is read.
        size = len(next(e.phrase for e in entries))
        after = position + size
        if after < len(seen.raw) and seen.raw[after] in _HOW_MANY_WORDS:
            after += 1  # "order count and revenue": the count of orders, beside revenue
        beside_and = (position > 0 and seen.raw[position - 1] == "and" and not seen.breaks[position]) or (
            after < len(seen.raw) and seen.raw[after] == "and" and not seen.breaks[after])
        metric = _choose(items["metric"], reading, vocabulary) if "metric" in kinds else None
        # "filed by enterprise customers": who did it, not a dimension by customer
        by = seen.after_by[position] and not seen.after_value[position]
        counted = position > 0 and seen.raw[position - 1] in ("most", "fewest", "more", "fewer", "many")
        seen.entities.append(_EntityWord(items["entity"][0], metric, by, beside_and,
                                         " ".join(seen.raw[position:position + size]), position, counted))
    elif "metric" in kinds:
        chosen = _choose(items["metric"], reading, vocabulary)
        seen.positions.setdefault(chosen["id"], position)
        _add(reading.measures, chosen)
    elif "field" in kinds:
        _add(reading.dimensions, _choose(items["field"], reading, vocabulary))


def _had_at_any_time(seen: _Words, reading: Reading, vocabulary: Vocabulary) -> None:
    """"Customers who signed up this year and have placed an order": the order had at any time, the period the
    signup's (with no period, "have ever placed" is had at any time); "… have bought but never returned anything":
    one verb's rows had and the other's none."""
    dating = [event for event in seen.events if not event.ever]
    ever = _had_at_some_time(seen, reading, vocabulary)
    if len(ever) == 1 and (dating or (reading.time is None and not reading.grain)):
        had = _had(ever[0], reading, vocabulary, ever=True)
        if had is not None:
            reading.has_rows, reading.had_ever, reading.had_none = had, True, ever[0].never
            if ever[0].never:
                reading.unknown = [w for w in reading.unknown if w != "never"]
            seen.events = dating
    elif len(ever) == 2 and sorted(e.never for e in ever) == [False, True] and not dating and \
            reading.time is None and not reading.grain:
        _had_one_never_other(ever, seen, reading, vocabulary)


def _had_one_never_other(ever: list[_EventWord], seen: _Words, reading: Reading, vocabulary: Vocabulary) -> None:
    """"Customers who have bought from us but never returned anything": those with at least one row of the one
    verb and none of the other's, both at any time (rows of the same entity twice are not read so)."""
    kept, lacked = sorted(ever, key=lambda event: event.never)
    had, lacks = _had(kept, reading, vocabulary, ever=True), _had(lacked, reading, vocabulary, ever=True)
    if had is None or lacks is None or had["id"] == lacks["id"]:
        return
    reading.has_rows, reading.had_ever, reading.lacks_rows = had, True, lacks
    reading.unknown = [w for w in reading.unknown if w != "never"]
    seen.events = []


def _had_at_some_time(seen: _Words, reading: Reading, vocabulary: Vocabulary) -> list[_EventWord]:
    """The verbs said as had at some time ("have placed", "never bought"); of several, not the one that makes
    the counted rows what they are ("people who have signed up but never ordered": being one of them)."""
    ever = [event for event in seen.events if event.ever]
    if len(ever) < 2:
        return ever
    counted = {m["entity_id"] for m in reading.measures}
    return [event for event in ever if not (event.date["entity_id"] in counted and _only_date(
        event.date, vocabulary))] or ever


def _only_date(date: dict, vocabulary: Vocabulary) -> bool:
    """The one date its rows have: when each began ("signed up" of a customer), true of every one of them (a
    second date, "churned", is something only some did)."""
    fields = vocabulary.by_id.get(date["entity_id"], {}).get("fields", [])
    return [f["id"] for f in fields if f["type"] in ("timestamp", "date")] == [date["id"]]


def _place_event(entries: list[_Entry], position: int, written: str, seen: _Words, vocabulary: Vocabulary) -> None:
    """A verb that dates rows ("signed up"), and for a noun of it ("signups") the rows it counts."""
    following = vocabulary.longest_at(seen.tokens, position + len(entries[0].phrase)) if position + len(
        entries[0].phrase) < len(seen.tokens) else []
    describing = any(e.kind == "entity" and e.item["id"] == entries[0].item["entity_id"] for e in following)
    before = []
    for word in reversed(seen.raw[max(0, position - 3):position]):
        if word not in _PERFECT:
            break
        before.append(word)
    ever = bool({"have", "has", "had", "ever", "never"} & set(before))
    seen.events.append(_EventWord(entries[0].item, written, seen.after_by[position],
                                  any(e.exact or e.noun for e in entries), describing, ever, "never" in before))
    if any(e.noun for e in entries):  # "signups by month": customers, counted by when they signed up
        owner = vocabulary.by_id.get(entries[0].item["entity_id"])
        if owner is not None:
            seen.entities.append(_EntityWord(owner, None, False, False, written, position))


def _doer(entity: dict, position: int, size: int, seen: _Words, vocabulary: Vocabulary) -> bool:
    """An entity named as who did what a verb of other rows says: just before the verb ("customers send
    back") or after "by" just after it ("sent back by customers"), when those rows reach it."""
    before = " ".join(seen.raw[max(0, position - 3):position])
    if before.endswith(("how many", "number of", "count of", "distinct", "total", "all", "unique", "most", "fewest",
                        "more", "fewer")):
        return False  # "how many customers placed orders", "the most customers placing orders": counted
    after = position + size
    if after + 1 < len(seen.tokens) and seen.raw[after] in _AUXILIARIES and not before.endswith(("which", "what")):
        after += 1  # "people are sending stuff back" (not "which customers are buying": what is asked about)
    verb = [e for e in vocabulary.longest_at(seen.tokens, after) if e.kind == "event"] if after < len(
        seen.tokens) else []
    if not verb and position >= 2 and seen.raw[position - 1] == "by" and seen.raw[position].endswith("s"):
        # ("sent back by customers": who; "orders placed by customer": a dimension)
        verb = [e for start in range(max(0, position - 3), position - 1)
                for e in vocabulary.longest_at(seen.tokens, start)
                if e.kind == "event" and start + len(e.phrase) == position - 1]
    return any(e.item["entity_id"] != entity["id"] and entity["id"] in reachable(
        vocabulary.entities, e.item["entity_id"]) for e in verb)


def shown_name(entity: dict) -> dict | None:
    """The field that names an entity's rows where it may be shown ("Product name"), if any."""
    return next((f for f in entity.get("fields", []) if f["exposure"] == "bounded-values" and f["type"] == "string"
                 and words(f["label"]) in (words(entity["label"]) + ["name"], ["name"])), None)


def _shown_name(position: int, seen: _Words, vocabulary: Vocabulary) -> bool:
    """"name" is the name of rows shown by name: of the entity it is said with ("customer names", "names of the
    customers"), else of every entity the question names; never a person's that is not shown."""
    def entities_at(start: int) -> list[dict]:
        return [e.item for e in vocabulary.longest_at(seen.tokens, start) if e.kind == "entity"] if 0 <= start < len(
            seen.tokens) else []
    after = position + 1 + (seen.tokens[position + 1:position + 2] == ["of"]) + (
        seen.tokens[position + 2:position + 3] == ["the"])
    attached = entities_at(position - 1) + (entities_at(after) if after > position + 1 else [])
    if attached:
        return all(shown_name(entity) is not None for entity in attached)
    if seen.named_entities is None:  # (worked out once per question: a question may say "name" many times)
        seen.named_entities = [item for start in range(len(seen.tokens)) for item in entities_at(start)]
    return bool(seen.named_entities) and all(shown_name(entity) is not None for entity in seen.named_entities)


def _measure_ruled_out(position: int, seen: _Words, vocabulary: Vocabulary) -> list[_Entry]:
    """"not revenue" at `position`: the measure's entries, else none."""
    skip = 1 if seen.raw[position] == "not" else 0
    if not skip or position + skip >= len(seen.tokens):
        return []
    entries = vocabulary.longest_at(seen.tokens, position + skip)
    kinds = {e.kind for e in entries}
    return entries if skip == 1 and "metric" in kinds and kinds <= {"metric", "entity", "event"} else []


def _rest_of_label(token: str, entries: list[_Entry]) -> bool:
    """A word of the label or of another name of the one item an other name of it was found for ("rate" after
    "markdown", "size" after "average basket": Average order value, also called "basket size")."""
    items = {e.item["id"]: e.item for e in entries if e.kind != "event"}
    if len(items) != 1 or token in STOP or token in entries[0].phrase:
        return False
    item = next(iter(items.values()))
    return any(token in words(name) for name in [item["label"], *item.get("synonyms", [])])


def _implied_measure(text: str, seen: _Words, reading: Reading, vocabulary: Vocabulary) -> None:
    """No measure named: "which return reason is most common" counts the dimension's own rows; "how many small
    businesses joined" ("… bought") counts the rows the value is said of, when a verb of those rows (or of rows
    belonging to them) says what they did ("how many apparel were returned" counts no products: they are what
    was returned, not who returned; "how many of those are smbs?" narrows the earlier answer)."""
    owners = {f.field["entity_id"] for f in reading.filters}
    if not reading.measures and not seen.entities and len(owners) == 1 and re.search(r"\bhow many\b", text) and \
            (any(_did(event, next(iter(owners)), text, vocabulary) for event in seen.events) or (
                reading.time_field is not None and reading.time_field["entity_id"] in owners)):
        counts = counts_of(vocabulary.by_id.get(next(iter(owners)), {}))
        if counts:
            reading.measures.append(counts[0])
        return
    if reading.measures or seen.entities or not reading.dimensions:
        return
    if re.search(r"\b(common|frequent|often|popular)\b", text):
        counts = counts_of(vocabulary.by_id.get(reading.dimensions[0]["entity_id"], {}))
        if counts:
            reading.measures.append(counts[0])
            reading.direction = reading.direction or "desc"


def _did(event: _EventWord, owner: str, text: str, vocabulary: Vocabulary) -> bool:
    """The verb says what `owner`'s rows did: it dates them ("joined"), or rows belonging to them ("how many SMBs
    bought"), unless they are what it was done to ("how many apparel were returned")."""
    if event.date["entity_id"] == owner:
        return True
    return owner in reachable(vocabulary.entities, event.date["entity_id"]) and not re.search(
        rf"\b(?:were|was|been|being|get|gets|got|getting) {re.escape(event.written)}\b", text)


def _partial_word(word: str, reading: Reading, vocabulary: Vocabulary, by: bool, valued: set[str]) -> bool:
    """A word that is part of one field's or one measure's label ("segment", "category") stands for it."""
    fields = vocabulary.partial(word, "field")
    if any(f["id"] in valued for f in fields) and not by:  # "high priority": the word names the value's own
        return True  # field ("by segment (consumer / SMB / enterprise)": a dimension, with the values it lists)
    if fields and all(f["type"] in ("date", "timestamp") for f in fields):
        # "tickets opened last quarter": the date the rows are counted by, not a dimension of its own
        reading.time_field = _choose(fields, reading, vocabulary)
        if by:
            reading.grain = reading.grain or "month"
        return True
    metrics = vocabulary.partial(word, "metric")
    if fields and (by or not metrics):
        _add(reading.dimensions, _choose(fields, reading, vocabulary))
        return True
    # Only a label's first word stands for the measure ("units" for Units sold), never another of its
    # words ("rate" is not Return rate: "cancellation rate" is no return rate).
    leading = [m for m in metrics if words(m["label"])[:1] == [word]]
    if len(leading) == 1:
        _add(reading.measures, leading[0])
        return True
    return False


def _entity_word(word: _EntityWord, index: int, text: str, reading: Reading, vocabulary: Vocabulary) -> dict | None:
    """An entity named alone. "by customer", "top customers by revenue", "which product …": it is what the
    answer is grouped by (its name field; with none, the word is unusable). "how many orders", "revenue and
    orders": it is counted. "revenue from enterprise customers": it says whose rows (nothing to add). A
    word for rows no measure is over is unusable, never dropped."""
    entity, metric, by, beside_and, written = word.entity, word.metric, word.after_by, word.beside_and, word.written
    ranking = (reading.which or reading.limit or reading.direction or reading.threshold) and not reading.listing and \
        reading.split is None  # ("which territories did under 15k": those, by name)
    if by and reading.dimensions and not reading.measures:
        by = False  # "top ten regions by orders": ranked by their count, the group is named already
    if by or (ranking and not reading.dimensions and index == 0 and not reading.grain and not word.counted):
        # ("the most orders": what is counted, never what is ranked)
        named = [f for f in entity["fields"] if f["exposure"] == "bounded-values" and f["type"] == "string"
                 and words(f["label"]) in (words(entity["label"]) + ["name"], ["name"])]
        if named:
            _add(reading.dimensions, {**named[0], "entity_id": entity["id"], "entity_label": entity["label"]})
        else:
            reading.unknown.append(written)
            reading.reasons[written] = (f"I cannot show each {entity['label'].lower()} on its own: nothing I may "
                                        "show names one, so I can only count them or break them down by what "
                                        "describes them")
        return None
    if not reading.measures or beside_and:
        counts = counts_of(entity)
        asked_count = re.search(r"\b(how many|number of|count of|count|common|frequent|often|usual)\b", text)
        chosen = counts[0] if counts and (asked_count or metric is None) else metric
        if chosen is None:
            reading.unknown.append(written)
            return None
        _add(reading.measures, chosen)
        reading.counted_by_name = not asked_count
        return chosen
    if word.counted and reading.counted_by_name and len(reading.measures) == 1 and counts_of(entity) and \
            reading.measures[0]["entity_id"] in reachable(vocabulary.entities, entity["id"]):
        # "did customers from Québec place the most orders": orders counted; the customers say whose
        reading.measures = [counts_of(entity)[0]]
        return reading.measures[0]
    dating = reading.time_field is not None and words(written) in [
        words(name) for name in [reading.time_field["label"], *reading.time_field.get("synonyms", [])]]
    if not dating and all(entity["id"] not in reachable(vocabulary.entities, m["entity_id"]) for m in reading.measures):
        reading.unknown.append(written)  # (a date the measure cannot follow is said when the draft is made)
    return None


def _choose(items: list[dict], reading: Reading, vocabulary: Vocabulary) -> dict:
    """Of several items a word may mean (Order status, Ticket status), the one nearest the measures."""
    owner = reading.measures[0]["entity_id"] if reading.measures else reading.owner_hint
    if len(items) == 1 or owner is None:
        return items[0]
    order = reachable(vocabulary.entities, owner)
    return min(items, key=lambda item: order.index(item["entity_id"]) if item["entity_id"] in order else 99)


def _add(items: list[dict], item: dict) -> None:
    if all(existing["id"] != item["id"] for existing in items):
        items.append(item)


def _part_from(said: str, value_spans: list[tuple[int, int, str]], reading: Reading) -> None:
    """"What share of our online sales came from enterprise accounts": the value after "from" is the part, the
    others say what it is a share of."""
    if not (_SHARE.search(said) and len(reading.filters) > 1 and reading.share is None):
        return
    came = [m.end() for m in re.finditer(r"\bfrom\b", said) if _SHARE.search(said[:m.start()])]
    if not came:
        return
    after = {value for start, _, value in value_spans if start >= came[-1]}
    parts = [f for f in reading.filters if set(f.values) <= after]
    if len(parts) == 1:
        reading.share = parts[0]
        reading.filters = [f for f in reading.filters if f is not parts[0]]


def _settle_shares(reading: Reading) -> None:
    """"What share of orders are cancelled" names its part: no share of a total besides. "What share of
    revenue comes from web" (each year, or in all) names its part with its only value."""
    if reading.share is None and reading.share_of_total and not reading.dimensions and len(reading.filters) == 1:
        reading.share = reading.filters.pop()
    if reading.share is not None:
        reading.share_of_total = False


def _dimensions_followed(earlier: Reading, new: Reading, merged: Reading, question: str) -> None:
    """The groups of a follow-up: its own instead of the earlier ones; the same ones against another period;
    a series over time after a ranking; within the earlier ones when split ("split that by segment")."""
    if not (new.dimensions or new.grain):
        return
    side_by_side_periods = earlier.time is not None and bool(earlier.time.parts) and not new.time
    # "and by region?" after "revenue in 2024 and 2025": the years stay apart
    merged.dimensions, merged.grain = list(new.dimensions), new.grain or (
        earlier.grain if side_by_side_periods else None)
    asked = question.lower()
    # "split that by quarter" after "sales by channel": each channel by quarter ("split it by quarter instead",
    # "just the total by quarter": quarters alone)
    splits_that = re.search(r"\b(?:split|break) (?:that|it|this|those|these|them)\b", asked) and not re.search(
        r"\b(?:instead|only|just|total|overall|altogether)\b", asked)
    if new.against_earlier:  # "how does that compare with 2023?": the same groups, two periods
        merged.dimensions = list(earlier.dimensions)
    elif new.grain and not new.dimensions and not earlier.grain and (earlier.limit or earlier.which or not splits_that):
        # "and by month?" after "the top 5 regions": the ranking was of regions; months are a series, all shown
        merged.limit, merged.direction, merged.which = None, None, False
    elif re.search(r"\b(?:also|too|as well|split|break (?:\w+ )?(?:down|out)|subdivided?)\b", asked) and not re.search(
            r"\bby (?:\w+ ){1,3}?instead\b", asked):  # ("split it by country instead": by country alone)
        # "split that by segment": within the earlier groups
        merged.dimensions = earlier.dimensions + [b for b in new.dimensions if b not in earlier.dimensions]
        merged.grain = new.grain or earlier.grain


def _set_beside_earlier(earlier: Reading, new: Reading) -> Reading:
    """"How does that stack up against the website?": the earlier value and the new one, side by side ("how does
    that compare with enterprise and consumer?" after SMB: all three)."""
    if not new.set_against:
        return new
    earlier_conditions = [*earlier.filters, *([earlier.split] if earlier.split else [])]
    if new.split is not None:
        before = next((b for b in earlier_conditions if b.field["id"] == new.split.field["id"]), None)
        return new if before is None else replace(new, split=Filter(new.split.field, tuple(dict.fromkeys(
            [*before.values, *new.split.values]))))
    added, before = next(((f, b) for f in new.filters for b in earlier_conditions
                          if b.field["id"] == f.field["id"]), (None, None))
    if added is not None:
        new = replace(new, split=Filter(added.field, tuple(dict.fromkeys([*before.values, *added.values]))),
                      filters=[f for f in new.filters if f is not added])
    return new


def _on_rows_of_a_ranking(earlier: Reading, new: Reading, merged: Reading, question: str) -> bool:
    """A follow-up about "those" rows of the earlier answer. Of a ranking: another measure beside the same ranking
    (True: nothing else changes); anything that would change which rows they are is refused (they are not seen).
    Of a dimension: "how many of those are still open?" is one number."""
    ranked = bool(earlier.limit or earlier.which)
    if new.points_at_rows and ranked and (new.filters or new.split or new.grain or new.time or new.limit or
                                          new.direction or new.compare or new.threshold or new.cumulative or [
            b for b in new.dimensions if b not in earlier.dimensions]):
        # "how many of those are small businesses?" after "which country has the most customers"
        merged.unknown.append("those")
        merged.reasons["those"] = "I do not see the earlier answer's rows: name the ones you mean"
    elif new.points_at_rows and ranked and new.measures:  # "the order counts for those same regions" after "the
        merged.measures = [*earlier.measures, *[m for m in new.measures if m not in earlier.measures]]  # 5 regions
        return True  # with the most revenue"
    elif new.points_at_rows and not ranked and new.filters and not (new.dimensions or new.grain or new.split) and \
            re.search(r"\bhow many of (?:those|them|these)\b", question.lower()):
        merged.dimensions = []  # "how many of those are still open?" after "tickets by priority": one number
    return False


# "… how many have placed an order": the earlier rows that have such rows
_HOW_MANY_HAVE = re.compile(r"\bhow many (?:of (?:them|those|these) )?(?:have|has|had|did|do|does|are|were|ever|"
                            r"never|actually|already)\b")


def _within_earlier_rows(earlier: Reading, new: Reading, merged: Reading, question: str,
                         vocabulary: Vocabulary) -> Reading:
    """"Of those, how many …" counts within the earlier answer's rows: "have placed an order" those of them with
    one (`merged` changed), "how many orders did they place" their orders, dated by the earlier rows' date (the
    follow-up's reading changed, and returned)."""
    asked = question.lower()
    among = re.search(r"\b(?:of|among) (?:the ones|those|them|these)\b", asked)
    rows = vocabulary.by_id.get(new.measures[0]["entity_id"]) if new.measures else None
    if among is None or rows is None or not earlier.measures or rows["id"] == earlier.measures[0]["entity_id"]:
        return new
    owner = earlier.measures[0]["entity_id"]
    dates = earlier.time_field or time_field(vocabulary.entities, owner) or {}
    if _HOW_MANY_HAVE.search(asked, among.end()) and len(earlier.measures) == 1 and not new.has_rows and \
            owner in reachable(vocabulary.entities, rows["id"]):
        # "of the ones who joined this year, how many have placed an order?": those of the earlier rows with at
        # least one such row, at any time (a period said with the earlier rows' own verb is theirs: "joined")
        own = dates if dates and any(re.search(rf"\b{re.escape(verb)}\b", asked)
                                     for verb in dates.get("event_verbs", [])) else None
        if new.time and earlier.time and own is None and not _same_span(new.time, earlier.time):
            merged.unknown.append(new.time.words.strip())  # (the earlier rows' period and another: whose is it?)
        merged.has_rows, merged.had_ever = rows, True
        merged.had_none = bool(re.search(r"\bnever\b", asked))  # ("… how many have never ordered")
        merged.unknown = [w for w in merged.unknown if not (merged.had_none and w == "never")]
        merged.grain = new.grain or (None if new.time else earlier.grain)
        return replace(new, measures=[], time_field=own, grain=merged.grain)
    if earlier.time is None or not _OF_THOSE.search(asked):
        return new
    # "of those, how many orders did they place?" after "how many people signed up in 2024": the orders of the
    # customers who signed up then (by their date), in no period of the orders' own
    if new.time:
        merged.unknown.append(new.time.words.strip())
        merged.reasons[new.time.words.strip()] = "the earlier period is of the earlier rows: say one period"
    return replace(new, time_field=dates or None)


def _date_rows_had(earlier: Reading, new: Reading, merged: Reading, vocabulary: Vocabulary) -> None:
    """The rows the counted records had, dated by a follow-up: "and in 2024?" after "customers who bought
    online" or "who have placed an order" (those with one then). After rows had at any time beside a period of
    the records' own, or by a grain, whose date it is is asked; a period said with the records' own verb ("of
    the ones who joined this year") is theirs."""
    own_verb = bool(new.time_field) and new.time_field.get("entity_id") == merged.measures[0]["entity_id"]
    if merged.had_ever and not own_verb and (new.grain or (
            new.time and not (earlier.time and _same_span(new.time, earlier.time)))):
        if earlier.time is None and not new.grain:
            merged.had_ever = False
            merged.time_field = time_field(vocabulary.entities, merged.has_rows["id"])
        else:
            said = new.time.words.strip() if new.time else (new.grain or "")
            merged.unknown.append(said)
            owner = vocabulary.by_id.get(merged.measures[0]["entity_id"], {}).get("label", "record")
            merged.reasons[said] = (f"say whose date it is: each {owner.lower()}'s own, or its "
                                    f"{merged.has_rows['label'].lower()} rows'")
    elif merged.time_field is None:
        merged.time_field = time_field(vocabulary.entities, merged.has_rows["id"])


def _bound_followed(earlier: Reading, new: Reading, merged: Reading) -> None:
    """A bound said now, or the earlier one kept; for another figure or other groups ("and what about orders?"
    after "regions under 15k in sales") the groups it kept are not seen: refused."""
    merged.threshold = new.threshold or earlier.threshold
    if earlier.threshold and not new.threshold and (new.measures or new.grain or new.dimensions):
        said = earlier.bound_said[0]
        merged.threshold = None
        merged.unknown.append(said)
        merged.reasons[said] = ("the groups kept by it were those of the earlier figure, which I do not see: ask "
                                "again with the bound on the figure you want")


def _change_between_earlier_periods(new: Reading, merged: Reading) -> None:
    """"Which category grew the most?", "break that growth out by channel" after "this year vs last year": the
    later period against the earlier."""
    if not (new.ranks_change or new.compare) or new.time or merged.time is None or len(merged.time.parts) != 2:
        return
    unit = merged.time.parts[0].calendar_unit
    compare = _change_between(merged.time, unit)
    if compare is not None:
        merged.time, merged.compare, merged.compare_grain = merged.time.parts[-1], compare, unit
        merged.grain = None if merged.grain == unit else merged.grain


def _share_of_that(earlier: Reading, new: Reading, merged: Reading, question: str, vocabulary: Vocabulary) -> None:
    """"What % of all orders is that?": after "how many orders were cancelled" the one earlier value is the part;
    after "how many cancellations" (some rows' count) a rate per row; after a dimension or two values, which
    part "that" is cannot be told: refused."""
    plain_earlier = not (new.dimensions or new.filters or merged.dimensions)
    entity = vocabulary.by_id.get(earlier.measures[0]["entity_id"]) if len(earlier.measures) == 1 else None
    pointing = _IS_THAT.search(question.lower())
    if plain_earlier and len(merged.filters) == 1 and merged.share is None:
        merged.share, merged.share_of_total, merged.filters = merged.filters[0], False, []
    elif plain_earlier and entity is not None and _counts_some_of(earlier.measures[0], entity):
        merged.measures, merged.per, merged.share_of_total = list(earlier.measures), entity, False
    elif pointing:
        merged.unknown.append(pointing.group(0).strip(" ?!."))


def _same_span(one: TimeSpan, other: TimeSpan) -> bool:
    """The same period, however it was written ("this year", "in 2025" once dated)."""
    return replace(one, words="") == replace(other, words="")


def _follow(earlier: Reading, new: Reading, question: str, vocabulary: Vocabulary) -> Reading:
    """A follow-up ("now only web", "same by region", "and last year?") changes the earlier reading."""
    merged = replace(earlier, unknown=list(new.unknown), personal=list(new.personal), follow_up=True,
                     which=new.which or (earlier.which and not new.dimensions), listing=False,
                     reasons=dict(new.reasons), needs_latest=new.needs_latest or earlier.needs_latest,
                     assumed=[*earlier.assumed, *new.assumed])
    # "now for enterprise customers", "canadian customers only": rows the earlier measure's rows belong to, said
    # with a value of theirs (or of what they belong to), say whose rows; they are not what to count
    whose_rows = new.counted_by_name and bool(new.filters) and all(
        any(m["entity_id"] in reachable(vocabulary.entities, before["entity_id"]) for before in earlier.measures)
        and any(f.field["entity_id"] in reachable(vocabulary.entities, m["entity_id"]) for f in new.filters)
        for m in new.measures)
    if _on_rows_of_a_ranking(earlier, new, merged, question):
        return merged  # (the same ranking, another measure beside it)
    new = _within_earlier_rows(earlier, new, merged, question, vocabulary)
    if new.measures and not whose_rows:  # "and units sold?", not "now for enterprise customers" (whose rows)
        merged.measures, merged.per, merged.share_of_total = list(new.measures), new.per, new.share_of_total
        merged.time_field = new.time_field  # another measure is dated by its own date, unless one is named
        merged.has_rows = new.has_rows  # (the rows customers had are not what revenue is over)
    elif merged.has_rows is not None:
        _date_rows_had(earlier, new, merged, vocabulary)
    _dimensions_followed(earlier, new, merged, question)
    new = _set_beside_earlier(earlier, new)
    replaced = {f.field["id"] for f in [*new.filters, *([new.split] if new.split else [])]} | set(new.every_value_of)
    merged.filters = [f for f in earlier.filters if f.field["id"] not in replaced] + list(new.filters)
    if merged.split is not None and merged.split.field["id"] in replaced and new.split is None:
        _split_named_again(new, merged, question)
    merged.time = None if new.whole_history and not new.time else new.time or earlier.time  # ("and for all time?")
    merged.time_field = new.time_field or merged.time_field
    if new.limit or new.direction:  # ("same list but ranked by units": as many as the earlier list had)
        same_list = _SAME_LIST.search(question.lower()) and not re.search(r"\b(?:all|every)\b", question.lower())
        merged.limit = new.limit or (earlier.limit if same_list else None)
        merged.direction = new.direction
    merged.compare = new.compare or earlier.compare
    merged.which_way = new.which_way or earlier.which_way
    merged.cumulative = new.cumulative or earlier.cumulative
    _bound_followed(earlier, new, merged)
    merged.ranks_change = new.ranks_change or (earlier.ranks_change and not new.direction)
    _change_between_earlier_periods(new, merged)
    merged.compare_grain = new.compare_grain or earlier.compare_grain
    merged.split = new.split or merged.split
    merged.share = new.share or earlier.share
    merged.share_of_total = merged.share_of_total or (new.share_of_total and merged.share is None)
    if new.share_of_total:
        _share_of_that(earlier, new, merged, question, vocabulary)
    nothing_new = not (new.measures or merged.has_rows is not earlier.has_rows or new.dimensions or new.grain
                       or new.filters or new.time or new.limit
                       or new.direction or new.compare or new.split or new.share or new.share_of_total
                       or new.cumulative or new.threshold or new.needs_latest or new.every_value_of
                       or (new.whole_history and earlier.time is not None))
    if nothing_new:  # "and?": nothing to change the earlier answer by; said, not answered again
        merged.unknown = merged.unknown or [w for w in _WORD.findall(question.lower()) if w not in STOP][:5] or [
            question.strip()[:40]]
    return merged


_SAME_LIST = re.compile(r"\bsame (?:list|ranking|top)\b")


def _split_named_again(new: Reading, merged: Reading, question: str) -> None:
    """A follow-up naming values of the earlier split's field: "now only phone" after "web vs store" is one channel
    now, not three; "what about phone and marketplace?" is those two side by side, as the earlier ones were
    (unless asked together: "combined")."""
    again = next((f for f in new.filters if f.field["id"] == merged.split.field["id"]), None)
    if again is not None and len(again.values) > 1 and not _TOGETHER.search(question.lower()):
        merged.filters.remove(again)
        merged.split = again
    else:
        merged.split = None


def _in_the_conversation_period(earlier: Reading, new: Reading, asked: str) -> None:
    """"What percentage of this year's orders were cancelled?" then "which channel had the most
    cancellations?": a new question about the same records that names no period of its own is asked within the
    conversation's, and the answer says so (another subject starts afresh: "revenue by channel in 2024", then
    "the three categories with the most returned units")."""
    same_records = {m["entity_id"] for m in new.measures} & {m["entity_id"] for m in earlier.measures}
    if same_records and new.time is None and earlier.time is not None and not (
            new.had_ever or new.had_none or new.compare or new.whole_history or new.grain
            or _NOW_OR_EVER.search(asked)):  # (periods side by side, "which year", "open right now", "ever")
        new.time, new.period_kept = earlier.time, True


def unexplained_words(text: str, entities: list[dict]) -> set[str]:
    """Words of `text` that are neither the slice's own nor asking words: candidates for values (looked for
    before any typo is corrected, so "refunded" is found as a value, not read as "refund")."""
    vocabulary = Vocabulary(entities)
    tokens = words(find_times(text)[1])
    found, start = [], 0
    while start < len(tokens):  # the phrases as the reading walks them: longest first, none overlapping
        entries = vocabulary.longest_at(tokens, start)
        if entries:
            found.append((start, entries))
        start += len(entries[0].phrase) if entries else 1
    measures = sum(any(e.kind == "metric" for e in entries) for _, entries in found)
    not_measures = {w for e in vocabulary.entries if e.kind not in ("metric", "event") for w in e.phrase}
    covered: set[int] = set()
    for start, entries in found:
        for index in range(start, start + len(entries[0].phrase)):
            # Beside another measure, a word of a measure's name may be a value: "revenue from cancelled orders".
            maybe_value = measures > 1 and len(entries[0].phrase) > 1 and all(e.kind == "metric" for e in entries) \
                and tokens[index] not in not_measures
            # A verb's form may be a state, too: "tickets still open".
            if not maybe_value and not all(e.kind == "event" for e in entries):
                covered.add(index)
    return {w for i, w in enumerate(tokens) if i not in covered and w not in STOP and w not in AVERAGE_WORDS}


def asks_to_change(question: str) -> bool:
    """"Move all our Québec customers into enterprise", "hey, can you delete …": an order to change data."""
    return CHANGE_VERBS.match(_GREETING.sub("", _EMOJI.sub(" ", question.lower()))) is not None


def is_follow_up(question: str) -> bool:
    """"and for 2024?", "same by month", "Thanks. Could you switch that to units sold": a change to the
    earlier answer, not a new question."""
    text = _GREETING.sub("", _EMOJI.sub(" ", question.lower()))
    return bool(FOLLOW_UP.match(text) or _CHANGE_THAT.search(text) or _REFERS_BACK.search(text) or re.match(
        rf"\s*(?:is|was|are|were) (?:that|it|this|those|these) (?:any )?(?:{_COMPARATIVE_WORDS})\b", text) or
                _OF_THOSE.search(text) or re.search(  # ("what does that look like for online orders only?")
                    r"\bits\b|\b(?:what|how) (?:does|do|did|would|is|are) (?:that|it|this|those|these) (?:look|compare|"
                    r"stack|measure|fare)\b", text))
