"""One layer of defaults (HOUSE): config/default.yaml holds every default value. The schema
only checks types and ranges (no `default:`), every key the schema knows is present once a
profile is merged onto default.yaml, no code in workflow/ restates a default as
`.get(<config key>, <literal>)`, and a profile's experiment_defaults reach every experiment
that does not set the key itself (smoke's corpus reaches fts: one corpus, not two).
"""
import ast
import copy
from pathlib import Path

import pytest
import yaml

from harness.plan import config
from harness import paths

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "workflow"
PROFILES = ["default.yaml", "smoke.yaml", "midsize.yaml", "paper.yaml"]
SCHEMA = config._schema()  # with the factor table's variants filled in

# Experiment keys that have no default by nature (each experiment states them, or, for
# builds, the top-level `builds` stands in): the schema requires the first four per kind.
PER_EXPERIMENT = {"study": "which study it reproduces", "workload": "throughput: its driver",
                  "script": "steps: its script", "engines": "what it compares",
                  "builds": "optional: the top-level builds otherwise (not a literal)"}
# Keys whose absence is a setting: corpus.archive only for source ohsumed (a local file);
# corpus.size/sha256 only for another copy of the archive than NIST's.
OPTIONAL = {("corpus", "archive"): "the path of an archive already on this machine, else downloaded",
            ("corpus", "size"): "NIST's archive's size unless another copy is named",
            ("corpus", "sha256"): "NIST's archive's sha256 unless another copy is named"}


def merged(profile: str) -> dict:
    cfg = {}
    for f in ("default.yaml", profile):
        config.deep_merge(cfg, yaml.safe_load((ROOT / "config" / f).read_text()))
    return cfg


def resolved(profile: str) -> dict:
    return config.resolve(merged(profile), cpus=list(range(16)))


def _deref(schema: dict) -> dict:
    if "$ref" in schema:
        return SCHEMA["$defs"][schema["$ref"].split("/")[-1]]
    return schema


def _missing(schema: dict, node, path: tuple, skip=()) -> list[str]:
    """Dotted paths of schema properties absent from `node` (recursively)."""
    schema = _deref(schema)
    out = []
    if not isinstance(node, dict):
        return out
    for key, sub in schema.get("properties", {}).items():
        if key in skip or (path[-1:] + (key,)) in OPTIONAL:
            continue
        if key not in node:
            out.append(".".join(path + (key,)))
        elif key != "variants":  # variants: the factors crossed, none of them needed
            out += _missing(sub, node[key], path + (key,))
    return out


# -- the schema ------------------------------------------------------------------------

def test_the_schema_has_no_default():
    raw = yaml.safe_load(paths.SCHEMA.read_text())
    found = []

    def walk(node, path):
        if isinstance(node, dict):
            if "default" in node and path[-1:] != ("properties",):
                found.append(".".join(map(str, path)))
            for k, v in node.items():
                walk(v, path + (k,))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, path + (i,))
    walk(raw, ())
    assert found == [], f"schema default: at {found}; put the value in config/default.yaml"
    assert "default:" not in paths.SCHEMA.read_text().replace("(default the", "")


# -- every key present ------------------------------------------------------------------

@pytest.mark.parametrize("profile", PROFILES)
def test_every_schema_key_is_present_after_merging_onto_default_yaml(profile):
    out = resolved(profile)
    missing = _missing(SCHEMA, out, (), skip=("experiments",))
    ed_schema = SCHEMA["$defs"]["experiment"]
    missing += _missing(ed_schema, out["experiment_defaults"], ("experiment_defaults",), skip=PER_EXPERIMENT)
    for exp, spec in out["experiments"].items():
        uses = config.kind_keys(spec["kind"]) | {"kind", "study"}
        props = {k: v for k, v in ed_schema["properties"].items() if k in uses}
        missing += _missing({"properties": props}, spec, ("experiments", exp), skip=("builds",))
    assert missing == [], f"keys without a value in config/default.yaml: {missing}"


def test_required_keys_are_a_profiles_own_never_filled_in():
    """A hand-made config without `builds` is still an error: only defaults are merged in."""
    cfg = {"profile": "t", "experiments": {"x": {"study": "A3", "workload": "point_select",
                                                 "engines": ["InnoDB"], "cores": [1]}}}
    with pytest.raises(config.ConfigError, match=r"^builds: required key is missing"):
        config.resolve(cfg, cpus=[0, 1])


def test_resolve_is_the_same_on_a_profile_and_on_it_merged_onto_default_yaml():
    smoke = yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())
    smoke["builds"] = ["mysql-5.6.24"]
    smoke["experiments"] = copy.deepcopy(merged("smoke.yaml")["experiments"])
    assert config.resolve(smoke, cpus=[0, 1]) == config.resolve(merged("smoke.yaml"), cpus=[0, 1])


# -- experiment_defaults reach every experiment -------------------------------------------

def test_smokes_corpus_reaches_fts():
    smoke = yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())
    out = resolved("smoke.yaml")
    corpora = {k: v["corpus"] for k, v in out["experiments"].items() if v.get("dataset") == "fulltext"}
    assert "fts" in corpora and len(corpora) >= 2
    for exp, corpus in corpora.items():
        assert corpus["rows"] == smoke["experiment_defaults"]["corpus"]["rows"], exp
    assert len({yaml.safe_dump(c) for c in corpora.values()}) == 1, "smoke builds one corpus"


def test_a_corpus_an_experiment_sets_takes_the_keys_it_leaves_out():
    cfg = merged("smoke.yaml")
    cfg["experiments"]["fts"]["corpus"] = {"seed": 7}
    fts = config.resolve(cfg, cpus=[0, 1])["experiments"]["fts"]
    assert fts["corpus"] == {"source": "standin", "rows": 13353, "seed": 7}


# -- no literal fallback for a config key ---------------------------------------------------

def _schema_keys(node) -> set[str]:
    keys = set()
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "properties" and isinstance(v, dict):
                keys |= set(v)
            keys |= _schema_keys(v)
    elif isinstance(node, list):
        for v in node:
            keys |= _schema_keys(v)
    return keys


CONFIG_KEYS = _schema_keys(SCHEMA)

# (file under workflow/, receiver, key): a .get on a dict that is not a resolved config,
# where the key merely shares a config key's name. Each says what the dict is.
NOT_CONFIG = {
    ("harness/analysis/tidywrite.py", "m", "kind"): "a recorded cell's manifest.json (older ones have no kind)",
    ("harness/analysis/tidywrite.py", "r", "rows"): "an EXPLAIN row of a recorded cell",
    ("harness/analysis/tidyread.py", "v", "enabled"):
        "a recorded config.resolved.yaml (or a test's partial one), read by the analysis of any tidy",
    ("harness/report/tables.py", "tidy.spec(e)", "study"):
        "a recorded config.resolved.yaml's experiment, {} when the profile lacks it",
    ("harness/studies/a1/__init__.py", "corpus", "source"):
        "a recorded config.resolved.yaml's fts corpus, {} when the profile has no fts",
    ("harness/report/tables.py", "provenance", "builds"): "the tidy provenance (builds measured), not config",
    ("harness/measure/cell.py", "d", "users"): "a parsed cell name (kinds.parse): steps cells have no users",
    ("harness/measure/throughput.py", "entry", "engines"): "a config/builds.lock.yaml entry",
    ("harness/studies/a1/fts_export.py", "ld", "rows"): "a dataset's dataset.json load record",
}


def _literal(node) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp):
        return _literal(node.operand)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return all(_literal(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _literal(k) for k in node.keys) and all(_literal(v) for v in node.values)
    return False


def literal_config_fallbacks() -> list[tuple[str, str, str, int]]:
    found = []
    for path in sorted(WORKFLOW.rglob("*.py")):
        rel = path.relative_to(WORKFLOW).as_posix()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                    and len(node.args) == 2 and isinstance(node.args[0], ast.Constant)
                    and node.args[0].value in CONFIG_KEYS and _literal(node.args[1])):
                found.append((rel, ast.unparse(node.func.value), node.args[0].value, node.lineno))
    return found


def test_config_keys_are_the_schemas():
    assert {"warmup_s", "backend", "mechanism", "rows", "corpus", "level", "key_cache"} <= CONFIG_KEYS


def test_no_literal_fallback_for_a_config_key_in_workflow():
    found = literal_config_fallbacks()
    bad = [f"{f}:{line}: {recv}.get({key!r}, ...)" for f, recv, key, line in found
           if (f, recv, key) not in NOT_CONFIG]
    assert bad == [], "a default belongs in config/default.yaml; use cfg[key]: " + "; ".join(bad)
    # and the exemptions are each still there (a stale one would hide nothing, but says so)
    stale = set(NOT_CONFIG) - {(f, recv, key) for f, recv, key, _ in found}
    assert stale == set(), f"exemptions no longer needed: {sorted(stale)}"


def test_the_scan_finds_a_literal_fallback():
    tree = ast.parse("x = settings.get('warmup_s', 5)\ny = cfg.get('profile')\nz = r.get('other', '')\n")
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and len(n.args) == 2
             and n.args[0].value in CONFIG_KEYS and _literal(n.args[1])]
    assert [c.args[0].value for c in calls] == ["warmup_s"]


def test_snakemake_rules_have_no_literal_fallback_for_a_config_key():
    """The rules are not Python the ast module parses: the same check on their text."""
    import re
    pat = re.compile(r"\.get\(\s*[\"'](\w+)[\"']\s*,\s*([\"'\d\[\{(]|True|False|None|-)")
    bad = [(p.name, m.group(1)) for p in [ROOT / "Snakefile", *sorted((WORKFLOW / "rules").glob("*.smk"))]
           for m in pat.finditer(p.read_text()) if m.group(1) in CONFIG_KEYS]
    assert bad == []
