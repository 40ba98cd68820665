"""The stopping rule: its defaults (RULE) and the windows' statistics, as
workloads/measure.cpp computes them (tests/support/stop_rule_vectors.json
keeps the two in step)."""

import math


# The built-in harness's defaults (workloads/pipeline_knobs.cpp,
# workloads/cuda_workload_info.cpp): one rule, documented once.
RULE = {
    "warmup_s": 1.5,
    "warmup_until_drained": True,
    "warmup_floor_s": 0.5,
    "drained_wait_share": 0.1,
    "window_s": 0.3,
    "window_min_steps": 2,
    "rsd_windows": 5,
    "target_rsd": 0.05,
    "fewest_windows": 3,
    "stop_on_scatter": True,
    "target_ci90": 0.03,
    "max_s": 10.0,
}


# One-sided 95% Student t quantiles for 1..20 degrees of freedom, as the
# harness's (workloads/measure.cpp student_t95).
_T95 = (6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812,
        1.796, 1.782, 1.771, 1.761, 1.753, 1.746, 1.740, 1.734, 1.729, 1.725)


def _t95(dof):
    """The one-sided 95% quantile for `dof` degrees of freedom; past 20, each
    span's largest, so never below the true one."""
    dof = max(1, dof)
    if dof <= 20:
        return _T95[dof - 1]
    return 1.721 if dof <= 30 else 1.697 if dof <= 60 else 1.671 if dof <= 120 else 1.658


def surely_below(rates, bar, floor_rsd=0.02):
    """Whether windows with these rates are below `bar` with 95% confidence
    (the harness's racing rule, workloads/measure.hpp): the one-sided t upper
    bound of their mean, the spread taken as at least floor_rsd of the mean,
    is under the bar. Needs two windows or more."""
    n = len(rates)
    if n < 2 or bar <= 0:
        return False
    mean = sum(rates) / n
    sd = max(_rsd(rates), floor_rsd) * mean
    return mean + _t95(n - 1) * sd / math.sqrt(n) < bar


# Two-sided 95% Student t quantiles for 1..10 degrees of freedom.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228)


def drifting(rates):
    """Whether the windows' rates trend (the harness's rule,
    workloads/measure.hpp): the least-squares slope over their index differs
    from 0 at 95% (two-sided t, n - 2 degrees of freedom). Needs 3 or more."""
    n = len(rates)
    if n < 3:
        return False
    xm = (n - 1) / 2
    ym = sum(rates) / n
    sxx = sum((i - xm) ** 2 for i in range(n))
    slope = sum((i - xm) * (y - ym) for i, y in enumerate(rates)) / sxx
    sse = sum((y - ym - slope * (i - xm)) ** 2 for i, y in enumerate(rates))
    dof = n - 2
    t = _T975[dof - 1] if dof <= 10 else _T975[-1]
    return abs(slope) > t * math.sqrt(sse / dof / sxx)


# Lower 10% quantiles of chi-squared with 2..9 degrees of freedom.
_CHI2_LOW10 = (0.2107, 0.5844, 1.0636, 1.6103, 2.2041, 2.8331, 3.4895, 4.1682)


def spread_settled(rates, target_rsd, rsd_windows=5, fewest_windows=3):
    """The stop on the spread (the harness's rule, workloads/measure.hpp):
    with `rsd_windows` windows or more, the last ones spread by at most
    `target_rsd`; with m of them, fewest_windows <= m < rsd_windows (m >= 3,
    m <= 10), the 90% upper bound on their true spread, rsd * sqrt((m-1) /
    chi2_0.10(m-1)), over sqrt(m), is at most target_rsd / sqrt(rsd_windows)."""
    n, k = len(rates), max(2, rsd_windows)
    if n >= k:
        return _rsd(rates[-k:]) <= target_rsd
    if n < max(3, fewest_windows) or n > 10:
        return False
    bound = _rsd(rates) * math.sqrt((n - 1) / _CHI2_LOW10[n - 3])
    return bound / math.sqrt(n) <= target_rsd / math.sqrt(k)


def counted_from(rates, rsd_windows=5):
    """Where the windows a result counts begin (the harness's rule,
    workloads/measure.hpp): all of them, unless 5 or more trend (drifting),
    then from the first start whose windows to the end do not, keeping at
    least `rsd_windows` (a warm-up effect still fading is left behind; a
    trend to the end keeps the last `rsd_windows`)."""
    n, k = len(rates), max(3, rsd_windows)
    if n < k:
        return 0
    for start in range(n - k + 1):
        if not drifting(rates[start:]):
            return start
    return n - k


def ci90(rates):
    """The 90% confidence half-width of the windows' mean rate, relative to
    it (one-sided 95% t, n - 1 degrees of freedom); None under 2 windows."""
    n = len(rates)
    return _t95(n - 1) * _rsd(rates) / math.sqrt(n) if n >= 2 else None


def precise_enough(rates, target_ci90, rsd_windows=5, fewest_windows=3):
    """The stop on precision (the harness's rule, workloads/measure.hpp): the
    windows the result counts (counted_from), at least `fewest_windows` of
    them, give its mean rate +-target_ci90 or better at 90%."""
    counted = rates[counted_from(rates, rsd_windows):]
    return len(counted) >= max(3, fewest_windows) and ci90(counted) <= target_ci90


def _rsd(values):
    n = len(values)
    if n < 2:
        return 0.0
    mean = sum(values) / n
    if mean == 0:
        return 0.0
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) / abs(mean)
