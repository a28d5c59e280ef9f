"""Which languages' rules of the read-path screen a text needs (§8): shared/safety/screen.py reads every text with
these first, in one RE2 Set pass, and then runs only those languages' rules (shared/safety/screen_languages.py).

A Latin-script language: two of its common short words anywhere in the text, written in its own spelling
(the screen reads them accents undone, as it reads the text), and none that English text often holds ("to",
"as", "per", "com", "mit", "non", "die"): a false cue costs one more pass, never a match. Another script: one
letter of it. A short text is read with every Latin-script language's rules whatever its words.
"""

from __future__ import annotations

MARKERS: dict[str, list[str]] = {
    "fr": ["les", "des", "est", "une", "pour", "avec", "vous", "dans", "sur", "pas", "qui", "cette", "sont", "aux",
           "nous", "tu", "votre", "vos", "mais", "très", "été", "l'", "d'", "n'", "qu'", "et", "la", "le", "tes",
           "ton", "ta", "ces", "du", "au", "ou", "ne"],
    "de": ["der", "das", "und", "nicht", "ist", "sie", "ein", "eine", "dem", "zu", "auf", "für", "bitte", "ich",
           "du", "wir", "ihr", "sich", "auch", "oder", "aber", "wenn", "dass", "alle", "deine", "dein", "ihre",
           "keine", "mir", "dich", "uns"],
    "es": ["el", "los", "las", "del", "una", "por", "para", "que", "es", "en", "se", "su", "sus", "como", "más",
           "pero", "usted", "tu", "tus", "este", "esta", "todos", "la", "lo", "y"],
    "pt": ["uma", "para", "não", "que", "da", "das", "por", "você", "seu", "sua", "mais", "isso", "este",
           "esta", "ao", "dos", "suas", "seus", "nem"],
    "it": ["il", "lo", "gli", "una", "con", "che", "della", "dei", "di", "da", "sono", "questo", "questa", "tutti",
           "tu", "lei", "anche", "l'", "un'", "le", "la", "tue", "tuoi", "alla"],
    "nl": ["de", "het", "een", "en", "niet", "voor", "dat", "je", "jij", "uw", "zijn", "naar", "ook", "maar",
           "alle", "wordt"],
    "tr": ["ve", "bir", "bu", "için", "ile", "değil", "çok", "da", "de", "gibi", "tüm", "sen", "siz", "lütfen",
           "olarak", "daha", "kullanıcı"],
    "pl": ["nie", "jest", "się", "że", "jak", "dla", "od", "ale", "wszystkie", "proszę", "ty", "pani", "lub",
           "oraz"],
    "sv": ["och", "att", "det", "som", "en", "ett", "är", "inte", "på", "av", "du", "ni", "alla", "har"],
    "vi": ["của", "và", "các", "là", "không", "cho", "với", "được", "những", "một", "người", "tôi", "trong"],
}
SCRIPTS: dict[str, str] = {
    "zh": r"\p{Han}", "ja": r"[\p{Hiragana}\p{Katakana}]", "ru": r"\p{Cyrillic}", "uk": r"\p{Cyrillic}",
    "ko": r"\p{Hangul}", "ar": r"\p{Arabic}", "fa": r"\p{Arabic}", "hi": r"\p{Devanagari}",
}
