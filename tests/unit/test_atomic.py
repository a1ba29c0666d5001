"""harness.atomic.write_text: the file appears whole, with the mode an ordinary write gives."""
from __future__ import annotations

import os

from harness import atomic


def test_a_new_file_gets_the_mode_open_would_give_and_no_temp_file_is_left(tmp_path):
    old = os.umask(0o027)
    try:
        atomic.write_text(tmp_path / "d" / "f.txt", "one")
    finally:
        os.umask(old)
    assert (tmp_path / "d" / "f.txt").read_text() == "one"
    assert (tmp_path / "d" / "f.txt").stat().st_mode & 0o777 == 0o640
    assert os.listdir(tmp_path / "d") == ["f.txt"]


def test_a_replaced_file_keeps_its_mode(tmp_path):
    f = tmp_path / "README.md"
    f.write_text("old")
    f.chmod(0o664)
    atomic.write_text(f, "new")
    assert f.read_text() == "new" and f.stat().st_mode & 0o777 == 0o664
