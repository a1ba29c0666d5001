"""What one claim row says (Result; missing, flagged) and the context a claim is
judged in (Context: the tidy data, the level, whether to decide). Moved whole from
harness.analysis.claimrules."""
from __future__ import annotations

from dataclasses import dataclass, field

from harness.analysis import blockverdict as BV
from harness.analysis import intervals as I
from harness.analysis import tidyread as T
from harness.analysis.claimrules import NOT_MEASURABLE, setting


@dataclass
class Result:
    """What one claim row says: the measured text, the verdict and its reason,
    and for a ratio claim its interval and the cells it came from."""
    measured: str
    verdict: str
    reason: str
    ci: I.Interval | None = None
    cross_check: float | None = None
    ns: tuple = ()
    cells: list = field(default_factory=list)
    sign: I.Interval | None = None   # the sign-test interval beside ci (not used for the verdict)
    look: str = ""                   # the look that froze the verdict, of the schedule's ("1/2")
    pending: bool = False            # undecided with fewer blocks than max: more blocks may decide it

    @classmethod
    def judged(cls, measured: str, j: "BV.Judged", cells=(), cross_check=None) -> "Result":
        return cls(measured, j.verdict, j.reason + flagged(cells), j.ci, cross_check, j.n, list(cells),
                   j.sign, j.look, j.pending)


def missing(what: str, detail: str, measured: str = "") -> Result:
    """NOT_MEASURABLE whose reason starts with what is missing (cores, build,
    experiment, scale, data)."""
    return Result(measured or "—", NOT_MEASURABLE, f"{what}: {detail}" if what else detail)


def flagged(cells) -> str:
    """'; unstable: <cell>, <cell>' for the flagged cells among `cells` (else '')."""
    parts = {}
    for c in cells:
        for f in c.flags:
            parts.setdefault(f, [])
            if c.name not in parts[f]:
                parts[f].append(c.name)
    return "".join(f"; {f}: {', '.join(names)}" for f, names in parts.items())


@dataclass
class Context:
    tidy: T.Tidy
    level: float
    decide: bool = True

    @classmethod
    def of(cls, tidy: T.Tidy) -> "Context":
        return cls(tidy, setting(tidy.config, "level"), setting(tidy.config, "decide"))

    def judge(self, experiment: str, va: dict, vb: dict, rule) -> "BV.Judged":
        """The verdict on two sides' {rep: value}, paired by repetition, looked at on the
        experiment's schedule (harness.analysis.blockverdict)."""
        return BV.judge_sides(va, vb, rule, self.level, BV.bounds_of(self.tidy, experiment), self.decide)
