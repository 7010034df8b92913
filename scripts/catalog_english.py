"""Fill the English catalog's empty entries with their message ids (``make catalog`` runs this).

The ids are the English texts themselves, so a new entry's English is its id; the ``.po`` still exists so
that the English wording can be polished without touching the code, and so both editions are read the same
way (``words.catalog``). The Chinese catalog is never filled this way: an empty Chinese entry fails
``tests/test_catalog.py`` until a person translates it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from babel.messages.pofile import read_po, write_po

LOCALE = Path(__file__).resolve().parent.parent / "codeagent_lite" / "locale"
ENGLISH = LOCALE / "en" / "LC_MESSAGES" / "codeagent_lite.po"


def main() -> int:
    with ENGLISH.open("rb") as source:
        catalog = read_po(source, locale="en")
    filled = 0
    for message in catalog:
        if message.id and not message.string:
            message.string = message.id
            filled += 1
    with ENGLISH.open("wb") as target:
        write_po(target, catalog, width=0, sort_output=True, include_previous=False)
    print(f"{ENGLISH.name} (en): {filled} new entries filled with their English ids", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
