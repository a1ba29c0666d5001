"""Measurement kinds: what a cell measures inside the shared frame (harness.measure.frame).

A kind module gives: combos(spec, build, variant) -> cell factors without rep;
unsupported(spec, cell, lock entry) -> reason | None; name(cell) / parse(name);
server_options(spec, cell, factor values, family); measure(frame, spec, cell,
factor values, settings) -> its part of the manifest; and its tidy columns
(KEY_HEAD, KEY_TAIL, METRICS, SUMMARY_METRICS); SYSBENCH (its cells run a sysbench
driver for the timed windows) and NAMED_BY (the spec key naming its driver or script).
"""
from harness.measure import steps, throughput

KINDS = {"throughput": throughput, "steps": steps}


def of(manifest: dict):
    """The kind of a cell's manifest (schema 1 recorded none: throughput)."""
    return KINDS[manifest.get("kind") or "throughput"]
