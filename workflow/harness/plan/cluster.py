"""A run on a SLURM cluster (profiles/slurm), as the rule files see it while they are read.

It is known by the profile's resources: Snakemake's `--set-resources` (the profile's
`set-resources:`, read from `workflow.resource_settings.overwrite_resources`) names slurm_*
keys. The executor plugin is not chosen yet while the Snakefile is read
(`workflow.executor_plugin` is None then, with `--executor slurm` too), so this is what a
rule file can ask: no lanes then, every block opens at once, a block is one job of a node.
A measurement job's step gets the node's CPUs (`cpus_per_task: $MYSQLBENCH_NODE_CPUS`):
a run whose profile asks for that variable stops before anything runs when it is not a
positive count.
"""
from __future__ import annotations

from collections.abc import Mapping

NODE_CPUS = "MYSQLBENCH_NODE_CPUS"


def _items(set_resources: Mapping | None):
    """(rule, {resource: value}) of `--set-resources` (plain values or Snakemake's Resource)."""
    for rule, res in (set_resources or {}).items():
        yield rule, dict(res or {})


def on_cluster(set_resources: Mapping | None) -> bool:
    """Does this run's `--set-resources` name a slurm_* resource (profiles/slurm)?"""
    return any("slurm" in str(k) for _, res in _items(set_resources) for k in res)


def node_cpus_problem(set_resources: Mapping | None, node_cpus: str) -> str | None:
    """None, unless a rule's cpus_per_task is $MYSQLBENCH_NODE_CPUS and `node_cpus` (that
    variable's value, "" when unset) is not a positive count: then one line naming the
    resource and the fix."""
    need = sorted(rule for rule, res in _items(set_resources)
                  if f"${NODE_CPUS}" in str(getattr(res.get("cpus_per_task"), "raw", res.get("cpus_per_task", ""))))
    if not need or (node_cpus.isascii() and node_cpus.isdigit() and int(node_cpus) > 0):
        return None
    return (f"set-resources {need[0]}: cpus_per_task (profiles/slurm) needs {NODE_CPUS}, the compute "
            f"nodes' CPU count (" + (f"got {node_cpus!r}" if node_cpus else "unset")
            + f"): run with {NODE_CPUS}=<CPUs per node> (e.g. from `sinfo -h -o %c -p PARTITION`)")
