"""A cell name from a template, both ways: `{build}_{engine}_..._r{rep}` gives
name(cell) and parse(text); integer fields come back as ints."""
from __future__ import annotations

import re

PARTS = {
    "build": r"[a-z0-9][a-z0-9.-]*",
    "engine": r"[A-Za-z]+(?:-[A-Za-z]+)?",
    "variant": r"[a-z0-9.-]+",
}
INTS = ("tables", "cores", "users", "rep")
DIGITS = r"\d+"


class CellName:
    def __init__(self, template: str):
        self.template = template
        rx, pos = "", 0
        for m in re.finditer(r"\{(\w+)\}", template):
            part = PARTS.get(m[1], DIGITS)
            rx += re.escape(template[pos:m.start()]) + f"(?P<{m[1]}>{part})"
            pos = m.end()
        self.regex = re.compile(rx + re.escape(template[pos:]))
        self.expected = re.sub(r"\{(\w+)\}", lambda m: f"<{m[1]}>", template)

    def name(self, d: dict) -> str:
        return self.template.format(**d)

    def parse(self, text: str) -> dict:
        m = self.regex.fullmatch(text)
        if not m:
            raise ValueError(f"cell name '{text}': expected {self.expected}")
        return {k: int(v) if k in INTS else v for k, v in m.groupdict().items()}
