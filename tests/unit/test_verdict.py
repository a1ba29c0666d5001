"""harness.analysis.verdict: the published side (Rule) and the one comparison every verdict
and every check of one asks (sides): the whole closed interval on the published side, on the
other, or neither."""
import pytest

from harness.analysis import claims, intervals
from harness.analysis.verdict import NOT_REPRODUCED, REPRODUCED, Rule, sides


@pytest.mark.parametrize("lo,hi,rule,want", [
    (1.05, 1.2, Rule("above", 1.0), (True, False)),
    (1.0, 1.2, Rule("above", 1.0), (False, False)),       # touching the threshold is not above it
    (0.9, 1.0, Rule("above", 1.0), (False, True)),        # all of it <= 1: not above
    (0.9, 1.1, Rule("above", 1.0), (False, False)),
    (0.8, 0.95, Rule("below", 1.0), (True, False)),
    (0.8, 1.0, Rule("below", 1.0), (False, False)),
    (1.0, 1.1, Rule("below", 1.0), (False, True)),
    (0.9, 1.1, Rule("within", 0.9, 1.1), (True, False)),  # closed band
    (1.15, 1.3, Rule("within", 0.9, 1.1), (False, True)),
    (0.7, 0.85, Rule("within", 0.9, 1.1), (False, True)),
    (1.1, 1.3, Rule("within", 0.9, 1.1), (False, False)),  # touching the band's edge from outside
    (0.8, 1.4, Rule("within", 0.9, 1.1), (False, False)),
])
def test_sides(lo, hi, rule, want):
    assert sides(lo, hi, rule) == want


def test_a_band_needs_its_lower_end_below_its_upper():
    with pytest.raises(ValueError, match="threshold < threshold_hi"):
        sides(1.0, 2.0, Rule("within", 1.1, 0.9))


@pytest.mark.parametrize("args,match", [(("sideways", 1.0), "one of"), (("within", 1.0), "threshold_hi"),
                                        (("above", 1.0, 2.0), "threshold_hi")])
def test_a_rule_names_a_side_and_a_band_only_for_within(args, match):
    with pytest.raises(ValueError, match=match):
        Rule(*args)


def test_a_rule_says_its_side():
    assert (Rule("above", 1.5).text(), Rule("below", 0.8).text(), Rule("within", 0.8, 1.25).text()) == (
        "> 1.5", "< 0.8", "in [0.8, 1.25]")


@pytest.mark.parametrize("lo,hi,rule", [(1.05, 1.2, ("above", 1.0)), (0.9, 1.0, ("above", 1.0)),
                                        (1.0, 1.1, ("below", 1.0)), (0.95, 1.05, ("within", 0.9, 1.1)),
                                        (1.15, 1.3, ("within", 0.9, 1.1)), (0.9, 1.1, ("above", 1.0))])
def test_the_verdict_and_the_check_of_a_claim_row_read_the_same_comparison(lo, hi, rule):
    """intervals.rule_verdict (what decides) and claims.invariant_violations (what checks
    claims.csv) agree with sides on every interval: a row is flagged exactly when its verdict
    is not the comparison's."""
    on, off = sides(lo, hi, Rule(*rule))
    ci = intervals.Interval(lo, hi, (lo + hi) / 2, 0.95, 0.9, intervals.PAIRED, 8)
    assert intervals.rule_verdict(ci, rule) == (REPRODUCED if on else NOT_REPRODUCED if off else "inconclusive")
    for verdict, ok in ((REPRODUCED, on), (NOT_REPRODUCED, off)):
        row = {"claim": "x", "build": "b", "verdict": verdict, "side": rule[0], "ratio_lo": lo, "ratio_hi": hi,
               "threshold": rule[1], "threshold_hi": rule[2] if len(rule) > 2 else "", "coverage": 0.95,
               "level": 0.9}
        assert (claims.invariant_violations([row]) == []) is ok
