#!/usr/bin/env python3
"""Writes the synchronous client, ``src/atelier_client/client.py``, from the asynchronous one,
``src/atelier_client/async_client.py``, the only one written by hand (httpcore's ``unasync``
way: the same code, with the asynchronous words taken out).

    python3 unasync.py          # writes client.py
    python3 unasync.py --check  # exits 1 when client.py is not what this would write

``run-tests.sh`` runs the check, so a change to one client alone fails the tests.
"""

import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "src", "atelier_client", "async_client.py")
TARGET = os.path.join(HERE, "src", "atelier_client", "client.py")

DOCSTRING = '''"""The synchronous client: :class:`Client`, and the run handles :class:`Run` and :class:`V2Run`.

Generated from ``async_client.py`` by ``clients/python/unasync.py``: change that file, then
run ``python3 unasync.py``.
"""'''

# Whole words, in this order.
WORDS = [
    ("async def", "def"),
    ("async with", "with"),
    ("async for", "for"),
    ("await ", ""),
    ("_AsyncRunBase", "_RunBase"),
    ("AsyncV2Run", "V2Run"),
    ("AsyncRun", "Run"),
    ("AsyncClient", "Client"),
    ("AsyncIterator", "Iterator"),
    ("__aenter__", "__enter__"),
    ("__aexit__", "__exit__"),
    ("aclose", "close"),
    ("aread", "read"),
    ("aiter_bytes", "iter_bytes"),
    ("anyio.sleep", "time.sleep"),
    ("anyio.move_on_after", "calls.no_cancel_scope"),
    ("An asynchronous client", "A synchronous client"),
]


def unasync(text):
    # The module's docstring is the synchronous client's own.
    end = text.index('"""', 3) + 3
    text = DOCSTRING + text[end:]
    text = text.replace("import anyio\n", "")
    # An async generator's type has one parameter fewer than a generator's.
    text = re.sub(r"AsyncGenerator\[(.+?), None\]", r"Generator[\1, None, None]", text)
    for old, new in WORDS:
        text = re.sub(r"(?<!\w)" + re.escape(old) + (r"\b" if old[-1].isalnum() else ""), new, text)

    # The typing names, sorted again once renamed.
    def typing(m):
        names = sorted(n.strip().replace("AsyncGenerator", "Generator") for n in m.group(1).split(","))
        return "from typing import " + ", ".join(names) + "\n"

    return re.sub(r"^from typing import (.+)\n", typing, text, count=1, flags=re.M)


def main():
    with open(SOURCE, encoding="utf-8") as f:
        wanted = unasync(f.read())
    if "--check" in sys.argv[1:]:
        with open(TARGET, encoding="utf-8") as f:
            if f.read() != wanted:
                sys.exit(
                    "clients/python/src/atelier_client/client.py is not generated from async_client.py: "
                    "run `python3 clients/python/unasync.py`"
                )
        return
    with open(TARGET, "w", encoding="utf-8") as f:
        f.write(wanted)


if __name__ == "__main__":
    main()
