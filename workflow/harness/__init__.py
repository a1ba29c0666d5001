"""The measurement harness: builds, server lifecycle, placement, sysbench,
collectors, parsers, statistics and report generation. Rules call it
through `python -m harness`."""
__version__ = "0.1.0"
