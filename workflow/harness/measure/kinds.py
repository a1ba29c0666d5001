"""Measurement kinds: what a cell measures inside the shared frame (harness.measure.frame).

A kind module gives: combos(spec, build, variant) -> cell factors without rep;
unsupported(spec, cell, lock entry) -> reason | None; name(cell) / parse(name);
server_options(spec, cell, factor values, family); measure(frame, spec, cell,
factor values, settings) -> its part of the manifest; and its tidy columns
(KEY_HEAD, KEY_TAIL, METRICS, SUMMARY_METRICS); SYSBENCH (its cells run a sysbench
driver for the timed windows), DATASET (its cells copy a prepared dataset's datadir),
SCALE_KEY (the spec key of its own scale, None: its dataset's), NAMED_BY (the spec key
naming its driver or script) and named_settings(variant, factors) (what its server must show).
harness.plugins.KindPlugin states it as a Protocol (tests/unit/test_plugins.py checks every kind).
"""
from harness.measure import factors, steps, throughput

KINDS = {"throughput": throughput, "steps": steps}


def of(manifest: dict):
    """The kind of a cell's manifest (schema 1 recorded none: throughput)."""
    return KINDS[manifest.get("kind") or "throughput"]


def named(manifest: dict) -> dict:
    """The factor values a cell's name says, each factor's baseline where the name does not
    vary it: what its server must show (harness.measure.effective.check compares them)."""
    f = manifest.get("factors") or {}
    return of(manifest).named_settings(factors.parse(str(f.get("variant", "base"))), f)
