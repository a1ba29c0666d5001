"""harness.plan.cluster: a run under profiles/slurm as the rule files know it, from the
profile's set-resources parsed by Snakemake itself (the real profile, Snakemake's own parser).
The two-node cluster test runs the real case (tests/e2e/test_slurm_e2e.py)."""
import pytest
import yaml
from conftest import ROOT
from snakemake.cli import parse_set_resources

from harness.plan import cluster

SLURM = yaml.safe_load((ROOT / "profiles" / "slurm" / "config.v8+.yaml").read_text())["set-resources"]


def parsed(set_resources: dict) -> dict:
    """What `snakemake --profile P` puts in workflow.resource_settings.overwrite_resources."""
    return parse_set_resources([f"{rule}:{k}={v}" for rule, res in set_resources.items() for k, v in res.items()])


def test_the_slurm_profile_is_a_cluster_run_and_a_local_one_is_not():
    assert cluster.on_cluster(parsed(SLURM))
    assert not cluster.on_cluster(parsed({"run_cell": {"bench": 1}}))
    assert not cluster.on_cluster({}) and not cluster.on_cluster(None)


@pytest.mark.parametrize("value,ok", [("64", True), ("1", True), ("", False), ("0", False), ("x", False),
                                      ("٣", False)])
def test_the_slurm_profile_needs_the_nodes_cpu_count(value, ok):
    why = cluster.node_cpus_problem(parsed(SLURM), value)
    if ok:
        assert why is None
    else:
        assert why.startswith("set-resources bootstrap_template: cpus_per_task (profiles/slurm) needs "
                              "MYSQLBENCH_NODE_CPUS") and "\n" not in why
        assert ("unset" if not value else repr(value)) in why


def test_a_profile_that_does_not_ask_for_the_count_needs_none():
    assert cluster.node_cpus_problem(parsed({"run_cell": {"bench": 0, "cpus_per_task": 8}}), "") is None
    assert cluster.node_cpus_problem({}, "") is None
