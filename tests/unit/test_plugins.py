"""Every registered plugin against its Protocol (harness.plugins): the kinds, the datasets,
the studies and their step scripts define every required name, and each required function
takes the parameters its callers pass (names and kinds, in order)."""
import inspect
import types

import pytest

from harness import plugins, registry
from harness.measure import datasets, kinds


def _members(proto) -> tuple[list[str], list[str]]:
    """(required data names, required function names) of a Protocol."""
    funcs = [n for n, v in vars(proto).items() if inspect.isfunction(v) and not n.startswith("_")]
    data = [n for n in getattr(proto, "__annotations__", {}) if not n.startswith("_")]
    return data, funcs


def _params(fn, drop_self: bool) -> list[tuple[str, object]]:
    ps = list(inspect.signature(fn).parameters.values())
    return [(p.name, p.kind) for p in (ps[1:] if drop_self else ps)]


def conformance(module, proto) -> list[str]:
    """What `module` lacks of `proto`, or takes otherwise: one line each."""
    data, funcs = _members(proto)
    out = [f"{module.__name__}: no {n}" for n in data + funcs if not hasattr(module, n)]
    for n in funcs:
        fn = getattr(module, n, None)
        if fn is None:
            continue
        if not callable(fn):
            out.append(f"{module.__name__}.{n} is not callable")
            continue
        want, got = _params(getattr(proto, n), True), _params(fn, False)
        if want != got:
            out.append(f"{module.__name__}.{n}{inspect.signature(fn)}: the callers pass "
                       f"{[w for w, _ in want]} ({proto.__name__}.{n})")
    return out


def registered():
    yield from ((f"kind {k}", m, plugins.KindPlugin) for k, m in kinds.KINDS.items())
    yield from ((f"dataset {k}", m, plugins.DatasetPlugin) for k, m in datasets.all_datasets().items())
    yield from ((f"study {k}", m, plugins.StudyPlugin) for k, m in registry.all_studies().items())
    yield from ((f"step script {k}", m, plugins.StepScriptPlugin) for k, m in registry.step_scripts().items())


@pytest.mark.parametrize("what,module,proto", list(registered()), ids=lambda x: x if isinstance(x, str) else "")
def test_every_registered_plugin_implements_its_protocol(what, module, proto):
    assert isinstance(module, proto), f"{what}: {conformance(module, proto)}"
    assert conformance(module, proto) == []


def test_each_kind_of_plugin_is_registered():
    kinds_seen = {p for _, _, p in registered()}
    assert kinds_seen == {plugins.KindPlugin, plugins.DatasetPlugin, plugins.StudyPlugin, plugins.StepScriptPlugin}


def test_the_check_reports_a_missing_name_and_other_parameters():
    """The checker itself: a kind without `measure` and with a `name` of other parameters."""
    fake = types.ModuleType("fake_kind")
    for n in plugins.KindPlugin.__annotations__:
        setattr(fake, n, None)
    for n in ("combos", "unsupported", "parse", "server_options", "named_settings"):
        setattr(fake, n, getattr(kinds.KINDS["throughput"], n))
    fake.name = lambda cell, extra: ""
    assert not isinstance(fake, plugins.KindPlugin)
    lines = conformance(fake, plugins.KindPlugin)
    assert lines[0] == "fake_kind: no measure" and "fake_kind.name(cell, extra)" in lines[1], lines
