"""An id's readable part: the words of a summary or title as lowercase ASCII, hyphen-joined."""

from __future__ import annotations

import re

SLUG_MAX = 60

# Letters NFKD does not take apart into ASCII.
_TRANSLIT = str.maketrans(
    {
        "ß": "ss",
        "æ": "ae",
        "Æ": "AE",
        "ø": "o",
        "Ø": "O",
        "œ": "oe",
        "Œ": "OE",
        "þ": "th",
        "đ": "d",
        "Đ": "D",
        "ł": "l",
        "Ł": "L",
        "ı": "i",
    }
)

# Every ASCII character but [a-z0-9] as a space: the words of lowercased ASCII text are then what
# str.split() gives (the same as re.findall("[a-z0-9]+"), without compiling it on every write).
_NOT_ALNUM = str.maketrans(
    {chr(c): " " for c in range(128) if not (chr(c).isdigit() or "a" <= chr(c) <= "z")}
)


def slugify(text: str, limit: int = SLUG_MAX) -> str:
    """Lowercase ASCII words joined by hyphens, within ``limit``, never ending mid-word.

    A word's apostrophe joins it ("don't" is ``dont``, not ``don-t``; "Nygard's" ``nygards``), and
    a first word longer than ``limit`` is kept whole (ids allow 160 characters), since half a word
    reads as another word.
    """
    ascii_text = text
    if not text.isascii():  # ASCII is its own NFKD form: most summaries load no unicodedata
        import unicodedata  # deferred: start-up (only a write mints an id)

        text = text.translate(_TRANSLIT)
        ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    if "'" in ascii_text or "`" in ascii_text:
        ascii_text = re.sub(r"(?<=[A-Za-z0-9])['`](?=[A-Za-z])", "", ascii_text)
    words = ascii_text.lower().translate(_NOT_ALNUM).split()  # the runs of [a-z0-9]
    slug = ""
    for word in words:
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > limit:
            if not slug:
                slug = word[:100]
            break
        slug = candidate
    return slug or "entry"
