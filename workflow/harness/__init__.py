"""The measurement harness: builds, server lifecycle, placement, sysbench,
collectors, parsers, statistics and report generation. Rules call it
through `python -m harness`."""
__version__ = "0.1.0"

# The stages of the house, lowest first: a module imports only from its own stage and the
# stages before it (docs/architecture.md draws this order; tests/unit/test_house.py keeps it,
# function-level imports and importlib loads included). Why this order: a cell is measured
# from a build (builds -> measure: the factor table and the core placement are what a
# server is started with); the statistics read measured cells (measure -> analysis); the
# plan sizes its design from both (the kinds, datasets and factors it can ask for, the
# blocks an interval needs: analysis -> plan); the report reads the plan and the analysis;
# the studies bring their parts to all of them through harness.registry (base), and the
# entry point (cli, __main__) imports the studies first.
STAGES = (
    ("base", ("harness", "harness.paths", "harness.atomic", "harness.markers", "harness.registry",
              "harness.keptlogs", "harness.plugins")),
    ("builds", ("harness.builds",)),
    ("measure", ("harness.measure",)),
    ("analysis", ("harness.analysis",)),
    ("plan", ("harness.plan",)),
    ("report", ("harness.report",)),
    ("studies", ("harness.studies",)),
    ("entry", ("harness.cli", "harness.__main__")),
)


def stage_of(module: str) -> int:
    """The index in STAGES of a dotted harness module (a package's modules are its stage's)."""
    for i, (_, members) in enumerate(STAGES):
        if any(module == m or (m != "harness" and module.startswith(m + ".")) for m in members):
            return i
    raise KeyError(f"{module}: in no stage of harness.STAGES; add it to one")
