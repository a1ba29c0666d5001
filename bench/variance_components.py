"""Benchmark (prints figures, asserts nothing): where the variance of a cell's QPS comes
from on this host, and which warm-up and window length buy a paired ratio's power for
the least wall time.

At a profile's scale (config/<profile>.yaml merged onto config/default.yaml: its
sysbench warm-up and duration, its experiment_defaults' table size, users and tables),
Point-Selects on the pinned MySQL 5.6.24, InnoDB and MyISAM. A run is `--blocks` blocks;
a block holds the host's measurement lock and makes `--starts` server starts per engine
(the engines in a seeded random order within each start slot); a start copies the
engine's prepared dataset, starts mysqld as a cell does (harness.measure.frame.Frame:
the pipeline's CPUs, labelled, reaped), runs the profile's discarded warm-up, then
`--windows` windows of the profile's duration back to back, each a sysbench run of its
own with 1 s intermediate reports. Log QPS is split into (nested, method of moments):

- within a window: the 1 s intervals about their window's mean, with their lag-1
  autocorrelation (so the effective number of independent seconds n_eff(T) is known);
- between windows of one start, beyond what the within-window scatter explains (the
  windows' positions after the start are a fixed effect, removed first: that is the bias);
- between starts within a block; between blocks.

Bias of short windows: the claim-like ratio InnoDB/MyISAM from the first window after
the warm-up (and from its first s seconds) against the same start pair's later windows.
Shorter cells: every candidate warm-up W' and window T' (CANDIDATES) cut from each start's
recorded seconds (the warm-up run, then window 1), its ratio against the same start
pair's later windows (exact signed-rank interval over start pairs) and its model
saving; a candidate is eligible when that interval lies inside +-3 % and it saves
>= 1.15x at both ends of b's interval; the eligible one saving most is printed.

Recommendation: Var(log ratio per block) ~= 2 (s2_within / n_eff(T) + s2_window + s2_start)
(the block's own offset cancels in a pair); blocks needed at equal power scale with it;
time per cell = c + W + T (c: the frame's copy + start + stop, measured). Minimising
(c + W + T) * Var over T gives T* = sqrt((c + W) * a / b), a = s2_within (1 + rho) / (1 - rho),
b = s2_window + s2_start. W is the shortest warm-up whose measured ratio bias is within
--bias-tol.

    python bench/variance_components.py [--profiles smoke,default] [--cores 1] [--users N] [--blocks 4] [--starts 2]
                                        [--windows 3] [--tsv raw.tsv] [--seed 1] [--backend host]
    python bench/variance_components.py --from-tsv raw.tsv --blocks 4 --starts 2 --windows 3
                                        [--cell-overhead 2.5]   (re-analyse, no server)
"""
from __future__ import annotations

import argparse
import contextlib
import math
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import BUILD, ROOT, per_start, per_start_text, pinned_build, point_select_cell, run_settings, sbtest_datasets  # noqa: E402
from harness.measure import topology

ENGINES = ("InnoDB", "MyISAM")
LEVEL = 0.90


# -- the profile's scale -----------------------------------------------------------------
def profile_scale(name: str, backend: str = "host", cores: int = 1, users: int | None = None,
                  check_cores: bool = True) -> dict:
    """The warm-up, window, table size, users and tables a profile's cells run with
    (bench/common.py run_settings with the profile's warm-up and window; users its first
    level unless given), mysqld on `cores` of this host (the pipeline's core plan: a
    one-line error before any server when they do not fit)."""
    import yaml

    from harness.plan import config
    path = ROOT / "config" / f"{name}.yaml"
    if not path.exists():
        raise SystemExit(f"--profiles: no config/{name}.yaml; name profiles from config/ (e.g. smoke,default)")
    cfg = config.with_defaults(yaml.safe_load(path.read_text()))
    ed = cfg["experiment_defaults"]
    settings = run_settings(warmup_s=cfg["sysbench"]["warmup_s"], duration_s=cfg["sysbench"]["duration_s"],
                            backend=backend)
    from harness.measure import coreplan
    if check_cores:  # not when re-analysing a TSV measured on another host
        try:
            coreplan.resolve_cores([cores], topology.Topology.live(), key="--cores",
                                    client_min=settings["client_cpus"])
        except coreplan.CoresError as e:
            raise SystemExit(f"error: {e}") from None
    return {"profile": name, "warmup_s": int(settings["warmup_s"]), "duration_s": int(settings["duration_s"]),
            "table_size": int(ed["table_size"]), "users": users or int(ed["users"][0]), "cores": cores,
            "tables": int(ed["tables"][0]), "settings": settings}


# -- measuring ---------------------------------------------------------------------------
def one_start(sc: dict, engine: str, windows: int, rep: int, build: tuple, ds: Path, work: Path) -> dict:
    """One server start as a cell makes it, the warm-up, then `windows` windows; its
    per-second QPS per window (0 = the warm-up), the windows' QPS and the frame's phases."""
    from harness.measure import sysbench, throughput
    from harness.measure import factors
    frame, spec, d, values = point_select_cell(engine, sc, sc["users"], rep, build, ds, work, sc["cores"])
    s = sc["settings"]
    out = {"seconds": {}, "qps": {}}
    with frame as fr:
        common = throughput._driver_common(spec, fr.server, d)
        throughput._table_captures(fr, spec, d, values)  # as a cell: key caches, tables read into memory
        for k in range(windows + 1):
            dur = sc["warmup_s"] if k == 0 else sc["duration_s"]
            argv = sysbench.command("point_select", common, sysbench.run_args(
                threads=sc["users"], duration=dur, seed=s["seed"] + rep * 100 + k, rand_type=s["rand_type"],
                interval=1) + factors.driver_args(values), "run")
            text = sysbench.run(argv, cpus=fr.client_cpus, run_id=fr.run_id, timeout=dur + 300,
                                memcg=fr.server.client_memcg())
            out["seconds"][k] = [r["qps"] for r in sysbench.parse_intervals(text, threads=sc["users"])]
            out["qps"][k] = sysbench.parse_report(text)["qps"]
        fr.finish()
        out["phases"] = dict(fr.timing["phases"])
    return out


def measure(sc: dict, blocks: int, starts: int, windows: int, rng: random.Random, work: Path) -> dict:
    """{(block, start, engine): one_start(...)} over the whole design, and the load averages."""
    from harness.measure import hostlock
    build = pinned_build()
    ds = sbtest_datasets(sc, build, work, ENGINES)
    data, load, waited = {}, [], 0.0
    for b in range(1, blocks + 1):
        t0 = time.monotonic()
        with hostlock.measuring(f"bench variance_components {sc['profile']} block {b}"):
            waited += time.monotonic() - t0
            load.append(os.getloadavg()[0])
            for s in range(1, starts + 1):
                order = list(ENGINES)
                rng.shuffle(order)
                for e in order:
                    rep = b * 10 + s
                    data[(b, s, e)] = one_start(sc, e, windows, rep, build, ds[e], work)
                    load.append(os.getloadavg()[0])
                    print(f"  {sc['profile']} block {b} start {s} {e}: windows "
                          + ", ".join(f"{data[(b, s, e)]['qps'][k]:,.0f}" for k in range(1, windows + 1))
                          + " QPS", flush=True)
            load.append(os.getloadavg()[0])
    return {"data": data, "load": load, "lock_wait_s": waited, "shape": {"cores": sc["cores"], "users": sc["users"]}}


# -- the estimator (pure: tests/unit/test_variance_components.py) ------------------------------
def within(series: list[list[float]]) -> dict:
    """Pooled variance of log QPS of 1 s intervals about their window's mean, and the
    pooled lag-1 autocorrelation (raw; and corrected for the bias of a mean estimated
    from T points, E[r] ~= rho - (1 + 3 rho) / T (Kendall) where T >= 5, else by the
    white-noise bias -1/T alone), clipped to [0, 0.95]."""
    ss = cov = 0.0
    dof = 0
    lens = []
    for xs in series:
        x = [math.log(v) for v in xs if v > 0]
        if len(x) < 2:
            continue
        m = statistics.fmean(x)
        dev = [v - m for v in x]
        ss += sum(v * v for v in dev)
        cov += sum(a * b for a, b in zip(dev, dev[1:]))
        dof += len(x) - 1
        lens.append(len(x))
    if not dof or not ss:
        return {"s2": float("nan"), "rho_raw": float("nan"), "rho": float("nan"), "T": 0, "dof": 0}
    t = statistics.fmean(lens)
    r = cov / ss
    rho = (t * r + 1) / (t - 3) if t >= 5 else r + 1 / t  # short: corrected as if white noise
    return {"s2": ss / dof, "rho_raw": r, "rho": min(0.95, max(0.0, rho)), "T": t, "dof": dof}


def n_eff(t: float, rho: float) -> float:
    """Independent seconds in a window of t seconds of an AR(1) series (large-t form)."""
    return max(1.0, t * (1 - rho) / (1 + rho))


def nested(y: list[list[list[float]]], within_var_of_mean: float = 0.0) -> dict:
    """Method-of-moments components of a balanced nested design y[block][start][window]
    (log QPS of a window). Window positions are a fixed effect, removed first (their
    means are returned as `position`). `within_var_of_mean` (s2_within / n_eff(T)) is
    taken off the windows' residual variance to leave s2_window. Each component comes
    with its mean squares, coefficients and dofs for `satterthwaite`."""
    nb, ns, nk = len(y), len(y[0]), len(y[0][0])
    grand = statistics.fmean(v for blk in y for st in blk for v in st)
    pos = [statistics.fmean(y[b][s][k] for b in range(nb) for s in range(ns)) for k in range(nk)]
    z = [[[y[b][s][k] - pos[k] + grand for k in range(nk)] for s in range(ns)] for b in range(nb)]
    m_bs = [[statistics.fmean(z[b][s]) for s in range(ns)] for b in range(nb)]
    m_b = [statistics.fmean(m_bs[b]) for b in range(nb)]
    df_w = nb * ns * (nk - 1) - (nk - 1)
    ms_w = sum((z[b][s][k] - m_bs[b][s]) ** 2 for b in range(nb) for s in range(ns) for k in range(nk)) / df_w \
        if df_w > 0 else float("nan")
    df_s = nb * (ns - 1)
    ms_s = nk * sum((m_bs[b][s] - m_b[b]) ** 2 for b in range(nb) for s in range(ns)) / df_s \
        if df_s > 0 else float("nan")
    df_b = nb - 1
    ms_b = ns * nk * sum((m - grand) ** 2 for m in m_b) / df_b if df_b > 0 else float("nan")
    return {
        "window": {"est": ms_w - within_var_of_mean, "terms": [(1.0, ms_w, df_w)], "offset": -within_var_of_mean},
        "start": {"est": (ms_s - ms_w) / nk, "terms": [(1 / nk, ms_s, df_s), (-1 / nk, ms_w, df_w)]},
        "block": {"est": (ms_b - ms_s) / (ns * nk), "terms": [(1 / (ns * nk), ms_b, df_b),
                                                            (-1 / (ns * nk), ms_s, df_s)]},
        "position": [p - pos[-1] for p in pos], "ms": (ms_w, ms_s, ms_b), "df": (df_w, df_s, df_b),
    }


def _gamma_p(a: float, x: float) -> float:
    """Regularised lower incomplete gamma P(a, x): series below a + 1, else Lentz's
    continued fraction (Numerical Recipes 6.2)."""
    if x <= 0:
        return 0.0
    lead = math.exp(a * math.log(x) - x - math.lgamma(a))
    if x < a + 1:
        term = total = 1 / a
        n = a
        while abs(term) > abs(total) * 1e-14:
            n += 1
            term *= x / n
            total += term
        return total * lead
    b, c, d = x + 1 - a, 1e300, 1 / (x + 1 - a)
    h = d
    for i in range(1, 500):
        an = -i * (i - a)
        b += 2
        d = 1 / (an * d + b if abs(an * d + b) > 1e-300 else 1e-300)
        c = b + an / c if abs(b + an / c) > 1e-300 else 1e-300
        h *= d * c
        if abs(d * c - 1) < 1e-14:
            break
    return 1 - lead * h


def chi2_quantile(p: float, df: float) -> float:
    """The chi-square quantile (bisection on its CDF, P(df/2, x/2))."""
    lo, hi = 0.0, max(10.0, df * 10 + 100)
    for _ in range(200):
        mid = (lo + hi) / 2
        if _gamma_p(df / 2, mid / 2) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def satterthwaite(comp: dict, level: float = LEVEL) -> tuple[float, float, float]:
    """(lo, hi, dof): approximate interval of a component (a linear combination of mean
    squares) by Satterthwaite's dof and chi-square quantiles (normal effects assumed)."""
    terms = comp["terms"]
    est = sum(c * ms for c, ms, _ in terms)
    if not est > 0 or any(df <= 0 or ms != ms for _, ms, df in terms):
        return float("nan"), float("nan"), float("nan")
    dof = est ** 2 / sum((c * ms) ** 2 / df for c, ms, df in terms)
    if dof < 1:  # the approximation says nothing useful below one degree of freedom
        return float("nan"), float("nan"), dof
    a = (1 - level) / 2
    off = comp.get("offset", 0.0)
    return (max(0.0, dof * est / chi2_quantile(1 - a, dof) + off),
            max(0.0, dof * est / chi2_quantile(a, dof) + off), dof)


def boot_within(per_start: list[list[list[float]]], reps: int = 400, seed: int = 7,
                level: float = LEVEL) -> dict:
    """Percentile bootstrap over starts (each start's windows kept together) of `within`'s
    s2 and rho: {key: (lo, hi)}."""
    rng = random.Random(seed)
    got = {"s2": [], "rho": []}
    for _ in range(reps):
        pick = [w for _ in per_start for w in rng.choice(per_start)]
        r = within(pick)
        for k in got:
            got[k].append(r[k])
    out = {}
    for k, v in got.items():
        v = sorted(x for x in v if x == x)
        a = (1 - level) / 2
        out[k] = (v[int(a * (len(v) - 1))], v[int((1 - a) * (len(v) - 1))]) if v else (float("nan"),) * 2
    return out


def optimal_window(c_plus_w: float, a: float, b: float, t_max: float) -> float:
    """T minimising (c + W + T)(a / T + b): sqrt((c + W) a / b), capped at t_max."""
    return 1.0 if b == math.inf else t_max if b <= 0 else min(t_max, max(1.0, math.sqrt(c_plus_w * a / b)))


def relative_cost(t: float, w: float, c: float, a: float, b: float) -> float:
    """Wall time at equal power, up to a constant: time per cell x Var(log ratio per block)."""
    return (c + w + t) * 2 * (a / t + b) if b != math.inf else math.nan


# -- analysis of one profile ------------------------------------------------------------
def components(sc: dict, run: dict, blocks: int, starts: int, windows: int) -> dict:
    """Per engine: within-window figures, nested components, warm-up bias by position."""
    data, out = run["data"], {}
    for e in ENGINES:
        st = [[data[(b, s, e)]["seconds"][k] for k in range(1, windows + 1)]
              for b in range(1, blocks + 1) for s in range(1, starts + 1)]
        w = within([x for one in st for x in one])
        w["ci"] = boot_within(st)
        vm = w["s2"] / n_eff(sc["duration_s"], w["rho"])
        y = [[[math.log(data[(b, s, e)]["qps"][k]) for k in range(1, windows + 1)]
              for s in range(1, starts + 1)] for b in range(1, blocks + 1)]
        out[e] = {"within": w, "nested": nested(y, vm), "var_of_mean": vm}
    return out


def ratio_bias(sc: dict, run: dict, windows: int) -> dict:
    """Per start pair, log(InnoDB/MyISAM) of the first window (and of its first s seconds)
    minus that of windows 2..K: {label: [differences]}."""
    data = run["data"]
    pairs = sorted({(b, s) for b, s, _ in data})
    out: dict[str, list[float]] = {}

    def lr(b, s, pick):
        return math.log(pick(data[(b, s, "InnoDB")]) / pick(data[(b, s, "MyISAM")]))

    def late(x):
        return statistics.fmean(x["qps"][k] for k in range(2, windows + 1))
    for b, s in pairs:
        ref = lr(b, s, late)
        if sc["warmup_s"]:
            out.setdefault(f"warm-up run itself ({sc['warmup_s']} s)", []).append(
                lr(b, s, lambda x: x["qps"][0]) - ref)
        out.setdefault(f"first window ({sc['duration_s']} s)", []).append(lr(b, s, lambda x: x["qps"][1]) - ref)
        for n in range(1, min(3, sc["duration_s"]) + 1):
            out.setdefault(f"first {n} s of it", []).append(
                lr(b, s, lambda x: statistics.fmean(x["seconds"][1][:n])) - ref)
    return out


def phases(run: dict) -> dict:
    ph = [v["phases"] for v in run["data"].values() if v.get("phases")]
    return {k: statistics.fmean(p[k] for p in ph) if ph else float("nan") for k in ("copy_s", "start_s", "stop_s")}


# -- printing ----------------------------------------------------------------------------
def _sd(v: float) -> str:
    return "n/a" if v != v else f"{math.sqrt(max(0.0, v)):.2%}"


def _ci(lo: float, hi: float) -> str:
    return "n/a" if lo != lo else f"[{_sd(lo)}, {_sd(hi)}]"


def print_components(sc: dict, comp: dict) -> dict:
    """Per engine, then the engines' mean (the model's inputs): {a, b, b_lo, b_hi, vm, rho}."""
    acc = {k: [] for k in ("a", "b", "b_lo", "b_hi", "vm", "rho", "s_start", "s_window")}
    for e, c in comp.items():
        w, n = c["within"], c["nested"]
        print(f"  {e}: within a window sd {_sd(w['s2'])} per 1 s interval {_ci(*w['ci']['s2'])} "
              f"(percentile bootstrap over starts, nominal {LEVEL:.0%}); lag-1 autocorrelation "
              f"{w['rho_raw']:+.2f} raw, {w['rho']:.2f} used "
              f"{'(Kendall-corrected for ' + format(w['T'], '.0f') + ' s windows)' if w['T'] >= 5 else '(' + format(w['T'], '.0f') + ' s windows: corrected by +1/T only, as if white noise; clipped at 0)'}"
              f" [{w['ci']['rho'][0]:.2f}, {w['ci']['rho'][1]:.2f}]; n_eff({sc['duration_s']} s) = "
              f"{n_eff(sc['duration_s'], w['rho']):.1f}; sd of a window's mean from it {_sd(c['var_of_mean'])}")
        for k, lab in (("window", "between windows of a start (beyond within)"),
                       ("start", "between starts in a block"), ("block", "between blocks")):
            lo, hi, dof = satterthwaite(n[k])
            print(f"    {lab}: sd {_sd(n[k]['est'])} {_ci(lo, hi)} (Satterthwaite chi-square, "
                  f"~{dof:.1f} dof, nominal {LEVEL:.0%}, assumes normal effects; negative -> 0)")
        print("    position effect (log QPS of window k minus the last, mean over starts): "
              + ", ".join(f"{k + 1}: {p:+.2%}" for k, p in enumerate(n["position"])))
        lo_w, hi_w, _ = satterthwaite(n["window"])
        lo_s, hi_s, _ = satterthwaite(n["start"])
        acc["a"].append(w["s2"] * (1 + w["rho"]) / (1 - w["rho"]))
        acc["b"].append(max(0.0, n["window"]["est"]) + max(0.0, n["start"]["est"]))
        acc["b_lo"].append((lo_w if lo_w == lo_w else 0.0) + (lo_s if lo_s == lo_s else 0.0))
        acc["b_hi"].append(hi_w + hi_s if hi_w == hi_w and hi_s == hi_s else math.inf)  # n/a: unbounded
        acc["vm"].append(c["var_of_mean"])
        acc["rho"].append(w["rho"])
        acc["s_start"].append(max(0.0, n["start"]["est"]))
        acc["s_window"].append(max(0.0, n["window"]["est"]))
    return {k: statistics.fmean(v) for k, v in acc.items()}


def bias_interval(d: list[float]):
    """(point, lo, hi) of the ratio's bias (a fraction) by the exact signed-rank interval
    over start pairs; None below 6 pairs."""
    from harness.analysis import intervals
    if len(d) < 6:
        return None
    ci = intervals.paired_interval([math.exp(x) for x in d], [1.0] * len(d), level=LEVEL)
    return ci.point - 1, ci.lo - 1, ci.hi - 1, ci.coverage


def print_bias(bias: dict) -> None:
    for lab, d in bias.items():
        ci = bias_interval(d)
        txt = (f"{ci[0]:+.2%} [{ci[1]:+.2%}, {ci[2]:+.2%}] ({ci[3]:.1%} exact signed-rank interval "
               f"over {len(d)} start pairs)" if ci else
               f"mean {math.expm1(statistics.fmean(d)):+.2%} over {len(d)} start pairs (too few for an interval)")
        print(f"    InnoDB/MyISAM from the {lab} vs from the later windows: {txt}")


def warmup_verdict(sc: dict, bias: dict, tol: float) -> str:
    """Shorter, longer or the same warm-up, from the bias intervals: shorter only if the
    warm-up run itself is shown within +-tol, longer only if the first window is shown
    biased beyond it; else the same (the data do not decide)."""
    first = bias_interval(bias.get(f"first window ({sc['duration_s']} s)", []))
    warm = bias_interval(bias.get(f"warm-up run itself ({sc['warmup_s']} s)", []))
    if first and (first[1] > tol or first[2] < -tol):
        return "longer (the first window after it is shown biased beyond the tolerance)"
    if warm and -tol <= warm[1] and warm[2] <= tol:
        return "shorter (even the warm-up run's own ratio is shown within the tolerance)"
    return "unchanged (neither a bias beyond the tolerance nor its absence is shown)"


def recommend(sc: dict, m: dict, c: float, bias: dict, tol: float) -> dict:
    """The window that minimises wall time at equal power, and whether it clearly beats
    the profile's (at both ends of the between-window+start interval)."""
    w, t0 = sc["warmup_s"], sc["duration_s"]
    t_star = round(optimal_window(c + w, m["a"], m["b"], 600))
    saves = [relative_cost(t0, w, c, m["a"], b) / relative_cost(t_star, w, c, m["a"], b)
             for b in (m["b_lo"], m["b"], m["b_hi"])]
    model_sd = math.sqrt(2 * (m["vm"] + m["s_window"] + m["s_start"]))
    change = t_star != t0 and all(x == x and x >= 1.15 for x in saves)
    print(f"  model: Var(log ratio per block) ~= 2 (s2_within/n_eff(T) + s2_window + s2_start) -> sd "
          f"{model_sd:.2%} at T = {t0} s; a = s2_within (1+rho)/(1-rho) = {m['a']:.2e}, "
          f"b = s2_window + s2_start = {m['b']:.2e} (interval ends summed: {m['b_lo']:.2e} .. {m['b_hi']:.2e})")
    print(f"  time per cell = c + W + T, c = {c:.2f} s, W = {w} s: T* = sqrt((c + W) a / b) = {t_star} s; "
          f"wall time at equal power, T = {t0} s over T = {t_star} s: {saves[1]:.2f}x (at b's interval "
          f"ends {saves[0]:.2f}x .. " + (f"{saves[2]:.2f}x)" if saves[2] == saves[2] else "n/a: b unbounded)"))
    print(f"  warm-up: {warmup_verdict(sc, bias, tol)} (tolerance {tol:.0%}); window: "
          + (f"{t_star} s (>= 1.15x less wall time at both ends of b's interval)" if change else
             f"keep {t0} s (the saving is not >= 1.15x at both ends of b's interval)"))
    return {"t_star": t_star, "saves": saves, "change": change, "model_sd": model_sd}


def empirical_ratio_sd(run: dict) -> tuple[float, int]:
    """The sd over start pairs of the first window's log(InnoDB/MyISAM) with each block's
    mean removed (what a pair of cells gives, the block's offset cancelled)."""
    data = run["data"]
    by: dict[int, list[float]] = {}
    for b, s in sorted({(b, s) for b, s, _ in data}):
        by.setdefault(b, []).append(math.log(data[(b, s, "InnoDB")]["qps"][1] / data[(b, s, "MyISAM")]["qps"][1]))
    dev = [x - statistics.fmean(v) for v in by.values() for x in v]
    dof = sum(len(v) - 1 for v in by.values())
    return (math.sqrt(sum(x * x for x in dev) / dof) if dof else float("nan")), dof


# -- shorter cells: warm-up W' and window T' cut from the recorded seconds ----------------
CANDIDATES = [(w, t) for w in (5, 10, 15, 20, 30) for t in (10, 15, 20, 30, 60)]
EQUIV = 0.03   # a short cell's ratio must be shown within +-3 % of the long windows' (as bench/group_vs_fresh.py)


def timeline(v: dict) -> list[float]:
    """A start's per-second QPS from the server's start: the warm-up run, then window 1."""
    return list(v["seconds"].get(0, [])) + list(v["seconds"].get(1, []))


def short_ratio(run: dict, windows: int, w: int, t: int) -> dict | None:
    """Per start pair (b, s): (log InnoDB/MyISAM over seconds [w, w + t) of the timeline,
    the same over windows 2..K: the reference, later than any candidate's seconds); None if
    a start's timeline is shorter than w + t."""
    data, out = run["data"], {}
    for b, s in sorted({(b, s) for b, s, _ in data}):
        x, y = data[(b, s, "InnoDB")], data[(b, s, "MyISAM")]
        tx, ty = timeline(x), timeline(y)
        if min(len(tx), len(ty)) < w + t:
            return None
        ref = [statistics.fmean(v["qps"][k] for k in range(2, windows + 1)) for v in (x, y)]
        out[(b, s)] = (math.log(statistics.fmean(tx[w:w + t]) / statistics.fmean(ty[w:w + t])),
                       math.log(ref[0] / ref[1]))
    return out


def pair_sd(pairs: dict) -> float:
    """sd over start pairs of a short cell's log ratio, each block's mean removed (what a
    block's pair of cells sees: the block's offset cancels)."""
    by: dict = {}
    for (b, _), (lr, _) in pairs.items():
        by.setdefault(b, []).append(lr)
    dev = [x - statistics.fmean(v) for v in by.values() for x in v]
    dof = sum(len(v) - 1 for v in by.values())
    return math.sqrt(sum(x * x for x in dev) / dof) if dof else float("nan")


def shorter_cells(sc: dict, run: dict, windows: int, m: dict, c: float) -> list[dict]:
    """Each candidate (W', T'): its bias against the later windows (exact signed-rank over
    start pairs), its ratio's sd over start pairs, its model saving against the profile's
    (W, T) at b's point and interval ends, and whether it is eligible: saving >= 1.15x at
    both ends and the bias interval inside +-EQUIV."""
    w0, t0, out = sc["warmup_s"], sc["duration_s"], []
    for w, t in CANDIDATES:
        pairs = short_ratio(run, windows, w, t)
        if not pairs:
            continue
        ci = bias_interval([lr - ref for lr, ref in pairs.values()])
        saves = [relative_cost(t0, w0, c, m["a"], b) / relative_cost(t, w, c, m["a"], b)
                 for b in (m["b_lo"], m["b"], m["b_hi"])]
        ok = bool(ci and -EQUIV <= ci[1] and ci[2] <= EQUIV and all(x == x and x >= 1.15 for x in saves))
        out.append({"w": w, "t": t, "bias": ci, "sd": pair_sd(pairs), "saves": saves, "eligible": ok})
    return out


def print_shorter(sc: dict, rows: list[dict], c: float) -> dict | None:
    """The candidates' table and the choice: the eligible one with the largest saving at b's point."""
    print(f"  shorter cells, cut from each start's recorded seconds (warm-up run + window 1) against its "
          f"later windows; cell = c + W' + T' with c = {c:.2f} s; eligible: bias interval inside "
          f"+-{EQUIV:.0%} and >= 1.15x saving at both ends of b's interval")
    for r in rows:
        b = r["bias"]
        bias = f"{b[0]:+.2%} [{b[1]:+.2%}, {b[2]:+.2%}] ({b[3]:.1%})" if b else "n/a (< 6 start pairs)"
        lo, mid, hi = (f"{x:.2f}x" if x == x else "n/a" for x in r["saves"])
        print(f"    W' {r['w']:>2} s, T' {r['t']:>2} s: {c + r['w'] + r['t']:5.1f} s a cell; ratio bias {bias}; "
              f"ratio sd over start pairs {r['sd']:.2%}; saving {mid} ({lo} .. {hi})"
              + ("  eligible" if r["eligible"] else ""))
    best = max((r for r in rows if r["eligible"]), key=lambda r: r["saves"][1], default=None)
    print("  shorter cell: " + (f"W' {best['w']} s + T' {best['t']} s ({best['saves'][1]:.2f}x less wall time at "
                                 f"equal power at b's point)" if best else
                                 f"none eligible: keep {sc['warmup_s']} s + {sc['duration_s']} s"))
    return best


def write_tsv(path: Path, runs: dict) -> None:
    """Raw figures: one row per 1 s interval (window 0 = the warm-up), per window
    (second = 'window'), per start's frame phase (window = 'phase', second = its name),
    the load averages (engine = 'load') and the cell's shape (engine = 'shape': cores, users);
    `read_tsv` reads it back."""
    with open(path, "w") as f:
        f.write("profile\tblock\tstart\tengine\twindow\tsecond\tqps\n")
        for prof, run in runs.items():
            for i, x in enumerate(run["load"]):
                f.write(f"{prof}\t0\t0\tload\t{i}\tload\t{x}\n")
            f.write(f"{prof}\t0\t0\tlock\t0\twait\t{run['lock_wait_s']}\n")
            for k, x in run["shape"].items():  # the cell's shape: mysqld's cores, the users
                f.write(f"{prof}\t0\t0\tshape\t0\t{k}\t{x}\n")
            for (b, s, e), v in sorted(run["data"].items()):
                for k, xs in v["seconds"].items():
                    for i, q in enumerate(xs, 1):
                        f.write(f"{prof}\t{b}\t{s}\t{e}\t{k}\t{i}\t{q}\n")
                    f.write(f"{prof}\t{b}\t{s}\t{e}\t{k}\twindow\t{v['qps'][k]}\n")
                for k, x in v["phases"].items():
                    if not isinstance(x, (int, float)):  # a note, e.g. how the server ended
                        continue
                    f.write(f"{prof}\t{b}\t{s}\t{e}\tphase\t{k}\t{x}\n")


def read_tsv(path: Path) -> dict:
    """`write_tsv`'s file back as {profile: run}."""
    runs: dict = {}
    for line in Path(path).read_text().splitlines()[1:]:
        prof, b, s, e, k, sec, v = line.split("\t")
        run = runs.setdefault(prof, {"data": {}, "load": [], "lock_wait_s": 0.0, "shape": {}})
        if e == "load":
            run["load"].append(float(v))
            continue
        if e == "lock":
            run["lock_wait_s"] = float(v)
            continue
        if e == "shape":
            run["shape"][sec] = int(v)
            continue
        st = run["data"].setdefault((int(b), int(s), e), {"seconds": {}, "qps": {}, "phases": {}})
        if k == "phase":
            with contextlib.suppress(ValueError):  # notes (files written before they were skipped)
                st["phases"][sec] = float(v)
        elif sec == "window":
            st["qps"][int(k)] = float(v)
        else:
            st["seconds"].setdefault(int(k), []).append(float(v))
    return runs


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--profiles", default="smoke,default")
    p.add_argument("--blocks", type=int, default=4)
    p.add_argument("--starts", type=int, default=2, help="server starts per engine per block")
    p.add_argument("--windows", type=int, default=3, help="windows per start, after the warm-up")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--bias-tol", type=float, default=0.01, help="largest acceptable first-window ratio bias")
    p.add_argument("--tsv", type=Path, help="write the raw per-second and per-window QPS here")
    p.add_argument("--backend", default="host", choices=["host", "docker"],
                   help="the servers' backend (the pipeline's default is docker)")
    p.add_argument("--cell-overhead", type=float, help="c, a cell's seconds beyond its windows "
                   "(default: the measured copy + start + stop)")
    p.add_argument("--from-tsv", type=Path, help="analyse a --tsv file instead of measuring")
    p.add_argument("--cores", type=int, default=1, help="mysqld's cores, placed by the pipeline's core plan "
                   "(a paper cell's 16 or 32 on a many-core host)")
    p.add_argument("--users", type=int, help="sysbench's users (default: the profile's first level)")
    a = p.parse_args()
    if a.blocks < 2 or a.starts < 2 or a.windows < 2:
        p.error("--blocks, --starts and --windows: each at least 2 (else a component is not separable)")
    if a.users is not None and a.users < 1:
        p.error("--users: at least 1")
    if a.cores < 1:
        p.error("--cores: at least 1")
    profiles = [profile_scale(x, a.backend, a.cores, a.users, check_cores=not a.from_tsv)  # fail before any server
                for x in a.profiles.split(",")]
    rng = random.Random(a.seed)
    runs = read_tsv(a.from_tsv) if a.from_tsv else {}
    with contextlib.nullcontext() if a.from_tsv else tempfile.TemporaryDirectory(prefix="variance-components-", dir=ROOT) as work:
        for sc in ([] if a.from_tsv else profiles):
            print(f"{sc['profile']}: measuring {a.blocks} blocks x {a.starts} starts x {len(ENGINES)} engines, "
                  f"each {sc['warmup_s']} s warm-up + {a.windows} x {sc['duration_s']} s", flush=True)
            runs[sc["profile"]] = measure(sc, a.blocks, a.starts, a.windows, rng, Path(work))
    if a.tsv and not a.from_tsv:
        write_tsv(a.tsv, runs)
    for sc in profiles:
        run = runs[sc["profile"]]
        if run["shape"]:  # a TSV says what it measured; one written before it did: the flags' values
            sc = {**sc, **run["shape"]}
        print(f"\n== {sc['profile']}: {BUILD} Point-Selects, {sc['tables']} x {sc['table_size']:,} rows, "
              f"mysqld on {sc['cores']} core(s), {sc['users']} users, warm-up {sc['warmup_s']} s, window {sc['duration_s']} s; "
              f"{a.blocks} blocks x {a.starts} starts x {a.windows} windows per engine; load average "
              f"(1 min) during it {min(run['load'] or [math.nan]):.2f}..{max(run['load'] or [math.nan]):.2f}; lock waits "
              f"{run['lock_wait_s']:.0f} s")
        m = print_components(sc, components(sc, run, a.blocks, a.starts, a.windows))
        units = {(b, s): [(v["qps"][k], run["data"][(b, s, "MyISAM")]["qps"][k]) for k in range(1, a.windows + 1)]
                 for (b, s, e), v in run["data"].items() if e == "InnoDB"}
        print("  " + per_start_text(*per_start(units), "InnoDB/MyISAM (every window)"))
        emp, dof = empirical_ratio_sd(run)
        print(f"  first-window log(InnoDB/MyISAM), sd over start pairs within blocks: {emp:.2%} "
              f"({dof} dof; the model's prediction follows)")
        bias = ratio_bias(sc, run, a.windows)
        print_bias(bias)
        ph = phases(run)
        c = a.cell_overhead if a.cell_overhead is not None else sum(ph.values())
        print(f"  per start in the frame: copy {ph['copy_s']:.2f} s, start {ph['start_s']:.2f} s, stop "
              f"{ph['stop_s']:.2f} s (backend {sc['settings']['backend']}); c = {c:.2f} s"
              + (" (--cell-overhead)" if a.cell_overhead is not None else " (these three)"))
        recommend(sc, m, c, bias, a.bias_tol)
        print_shorter(sc, shorter_cells(sc, run, a.windows, m, c), c)
    return 0


if __name__ == "__main__":
    sys.exit(main())
