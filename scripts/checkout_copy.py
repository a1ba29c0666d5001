"""The repository as a fresh clone has it, copied: shared by scripts/reference-run.py (the
replot that makes results/claims.csv) and tests/conftest.py (the pipeline tests' clones), so
both copy the same files. Not a command: imported from scripts/ by path."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def copy_checkout(root: Path, dest: Path) -> Path:
    """`root`'s tracked and new (not ignored) files, no outputs, copied to `dest` with their
    modes: what a fresh clone holds, uncommitted changes included."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=root,
                           capture_output=True, text=True, check=True).stdout.split("\0")
    for f in filter(None, files):
        src = Path(root) / f
        if src.is_file():
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / f)
    return dest
