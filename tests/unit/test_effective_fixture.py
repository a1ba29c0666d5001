"""The recorded real cells (tests/fixtures/raw, README there) carry their servers'
effective settings: every throughput and steps manifest has an `effective` block that
agrees with its name (harness.measure.effective.check), study C's cells ran with the
Performance Schema off and, in its baseline, the flush relaxed (InnoDB and the
PostgreSQL stand-in alike), its per-commit experiment with a flush per commit; and a
copy of a recorded cell without the block, or with a value its name does not say, is
refused by tidy in one line naming the cell and the fix."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.analysis import tidywrite
from harness.measure import effective, kinds

RAW = Path(__file__).resolve().parents[1] / "fixtures" / "raw"
MANIFESTS = sorted(RAW.glob("*/*/*/manifest.json"))


def _m(path: Path) -> dict:
    return json.loads(path.read_text())


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_every_recorded_manifest_has_effective_settings_that_agree_with_its_name(path):
    m = _m(path)
    assert m["kind"] in ("throughput", "steps")
    shown = effective.check(m, kinds.named(m))
    assert set(shown) == set(kinds.named(m))


def _c(experiment):
    found = [_m(p) for p in MANIFESTS if p.parent.parent.name == experiment]
    assert found, f"no recorded {experiment} cell"
    return found


def test_study_c_baseline_relaxed_flush_and_no_performance_schema():
    for m in _c("test_drive"):
        eff = m["effective"]
        assert eff["variables"]["performance_schema"] == "OFF" and eff["factors"]["pfs"] == "off"
        assert eff["variables"]["innodb_flush_log_at_trx_commit"] == "2"
        assert eff["variables"]["autocommit"] == "ON"
        assert eff["postgres"]["synchronous_commit"] == "off"


def test_study_c_per_commit_experiment_flushes_every_commit():
    for m in _c("test_drive_per_commit"):
        eff = m["effective"]
        assert eff["variables"]["performance_schema"] == "OFF"
        assert eff["variables"]["innodb_flush_log_at_trx_commit"] == "1"
        assert eff["postgres"]["synchronous_commit"] == "on"


def _refused(src: Path, tmp_path: Path, change) -> str:
    dst = tmp_path / src.name
    shutil.copytree(src, dst)
    m = _m(dst / "manifest.json")
    change(m)
    (dst / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(effective.EffectiveError) as e:
        tidywrite.tidy([dst], tmp_path / "r.csv", tmp_path / "s.csv", tmp_path / "p.json", 0.05, "test")
    msg = str(e.value)
    assert "\n" not in msg and src.name in msg and "re-measure it" in msg
    return msg


def test_a_recorded_cell_without_effective_settings_is_refused(tmp_path):
    src = MANIFESTS[0].parent
    assert "has no effective settings" in _refused(src, tmp_path, lambda m: m.pop("effective"))


def test_a_recorded_cell_whose_server_showed_another_value_is_refused(tmp_path):
    src = next(p.parent for p in MANIFESTS if _m(p)["effective"]["factors"].get("ps") == "off")
    msg = _refused(src, tmp_path, lambda m: m["effective"]["factors"].__setitem__("ps", "on"))
    assert "ps: the name says off, the server shows on" in msg
