"""A generated block of a hand-written file (the README's tables): the text between
one begin marker and one end marker is replaced by a rendered block that carries both
markers itself; everything around it stays as written."""
from __future__ import annotations

from pathlib import Path

from harness import atomic


class MarkerError(Exception):
    pass


def splice(text: str, begin: str, end: str, block: str, where: str = "README") -> str:
    if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
        raise MarkerError(f"{where}: expected one {begin} before one {end}; add both markers where the table goes")
    return text[:text.index(begin)] + block + text[text.index(end) + len(end):]


def update(path: Path, begin: str, end: str, block: str, check: bool = False) -> bool:
    """Whether the file's block differs from `block`; unless `check`, write it in place
    (atomically, keeping the file's mode)."""
    path = Path(path)
    old = path.read_text()
    new = splice(old, begin, end, block, where=str(path))
    if new != old and not check:
        atomic.write_text(path, new)
    return new != old
