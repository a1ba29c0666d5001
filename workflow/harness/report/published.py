"""The published marks of every figure as one CSV (data/tidy/published.csv), so
the figure scripts draw the studies' numbers from the study modules
(PUBLISHED_MARKS, built with harness.analysis.marks) and never retype them.

    python -m harness published OUT.csv

Columns: figure, study, the key columns of harness.analysis.marks.KEYS (empty
where a key does not apply), value, label, source.
"""
from __future__ import annotations

import csv
import io
import math
import sys

from harness import atomic
from harness import registry as studies
from harness.analysis.marks import KEYS

PUBLISHED_TABLE = "published.csv"
PUBLISHED_FIELDS = ("figure", "study", *KEYS, "value", "label", "source")


def marks() -> list[dict]:
    """Every study's PUBLISHED_MARKS with its study; a mark naming a figure its study
    does not declare, or a value that is not a finite positive number, is an error."""
    out = []
    for study, mod in studies.all_studies().items():
        for m in getattr(mod, "PUBLISHED_MARKS", []):
            if m["figure"] not in mod.FIGURES:
                raise ValueError(f"study {study}: published mark for figure {m['figure']!r}, which is not in "
                                 f"its FIGURES ({', '.join(mod.FIGURES)})")
            v = m["value"]
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ValueError(f"study {study}, figure {m['figure']}: published value {v!r} is not a "
                                 f"finite positive number ({m['source']})")
            if "published.csv" not in mod.FIGURES[m["figure"]].get("extra", []):
                raise ValueError(f"study {study}: figure {m['figure']} has published marks but no "
                                 f"'published.csv' in its FIGURES extra")
            out.append({**m, "study": study})
    return out


def published_csv() -> str:
    """The marks as CSV text (value with 6 significant digits)."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=PUBLISHED_FIELDS, lineterminator="\n")
    w.writeheader()
    for m in marks():
        w.writerow({**m, "value": f"{m['value']:.6g}"})
    return buf.getvalue()


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m harness published OUT.csv", file=sys.stderr)
        return 2
    atomic.write_text(argv[0], published_csv())
    return 0
