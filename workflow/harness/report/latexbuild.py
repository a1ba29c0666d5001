"""The paper's PDF: latexmk, with everything it prints kept in the rule's log.

    python -m harness latex --tex paper/main.tex --log logs/paper.log

The log is created before latexmk starts and holds all of its output, whether it
succeeds or not. When latexmk fails, no PDF is left beside the .tex (a partial one
is removed: nothing half-written), the exit status is 1, and stderr gets one line
that names the log and LaTeX's own .log, then the log's last lines.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

TAIL = 30   # the log's last lines shown on stderr when latexmk fails
LATEXMK = ["latexmk", "-pdf", "-cd", "-interaction=nonstopmode", "-halt-on-error"]


def build(tex: str, log: str) -> int:
    """latexmk on `tex` with stdout and stderr into `log`; 0 when the PDF was made."""
    tex_p, log_p = Path(tex), Path(log)
    pdf = tex_p.with_suffix(".pdf")
    log_p.parent.mkdir(parents=True, exist_ok=True)
    with open(log_p, "w") as out:
        out.write(f"$ {' '.join(LATEXMK)} {tex}\n")
        out.flush()
        try:
            rc = subprocess.run([*LATEXMK, str(tex_p)], stdout=out, stderr=subprocess.STDOUT).returncode
        except FileNotFoundError:
            out.write("latexmk: not found\n")
            rc = 127
    if rc == 0 and pdf.exists():
        return 0
    if pdf.exists():
        pdf.unlink()
    lines = log_p.read_text(errors="replace").splitlines()
    print(f"paper: latexmk failed (exit {rc}), no PDF: its whole output is in {log} (LaTeX's own log: "
          f"{tex_p.with_suffix('.log')}); the last {min(TAIL, len(lines))} lines:", file=sys.stderr)
    print("\n".join(lines[-TAIL:]), file=sys.stderr)
    return 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness latex", description=__doc__.splitlines()[0])
    ap.add_argument("--tex", required=True, help="the paper's main .tex (paper/main.tex)")
    ap.add_argument("--log", required=True, help="where latexmk's output goes (logs/paper.log)")
    args = ap.parse_args(argv)
    if not os.path.exists(args.tex):
        ap.error(f"--tex {args.tex}: not found")
    return build(args.tex, args.log)
