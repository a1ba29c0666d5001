"""Host provenance: CPU, kernel, governor, SMT, as recorded in every manifest."""
from __future__ import annotations

import os
import platform
import subprocess

from harness import paths
from pathlib import Path

ROOT = paths.ROOT


def _read(path: str, default: str = "unknown") -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return default


def cpu_model() -> str:
    for line in _read("/proc/cpuinfo", "").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def governor() -> str:
    return _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "unavailable")


def smt() -> str:
    return _read("/sys/devices/system/cpu/smt/control", "unavailable")


def git_commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def host() -> dict:
    return {
        "cpu_model": cpu_model(),
        "n_cpus": os.cpu_count(),
        "allowed_cpus": len(os.sched_getaffinity(0)),
        "kernel": platform.release(),
        "governor": governor(),
        "smt": smt(),
        "thp": _read("/sys/kernel/mm/transparent_hugepage/enabled", "unavailable"),
        "hostname": platform.node(),
    }
