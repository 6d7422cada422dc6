#!/usr/bin/env python3
"""Reference values for the unit tests of src/stats/.

Every expected number in the stats tests comes from this script, computed with
numpy and scipy, never from proofbench itself. Run it with

    python3 src/stats/reference.py

and paste the printed values into the tests. The versions used are printed
first; the tests quote them.
"""

import numpy as np
import scipy
import scipy.special
import scipy.stats

print(f"# numpy {np.__version__}, scipy {scipy.__version__}")


def show(name, value):
    if isinstance(value, (list, tuple, np.ndarray)):
        body = ", ".join(repr(float(v)) if not isinstance(v, (int, np.integer)) else str(int(v))
                         for v in value)
        print(f"{name} = [{body}]")
    else:
        print(f"{name} = {float(value)!r}")


# HAKMEM report, "Random Mixed 256B" throughput, 10 runs (ops/s).
DATA_A = [15210985, 15456889, 15012939, 17126082, 17379136,
          17857934, 16785979, 16599301, 15534451, 15701903]
# A tight cluster with one clear outlier (index 7); odd n.
DATA_B = [100.2, 99.8, 100.5, 100.1, 99.9, 100.3, 100.0, 135.0, 99.7, 100.4, 100.2]
# MAD == 0: many equal values and one different (index 7).
DATA_C = [50.0, 50.0, 50.0, 50.0, 50.0, 50.0, 50.0, 62.0, 50.0]

QS = [0.0, 0.1, 0.25, 0.5, 0.9, 0.975, 1.0]


def modified_z(x):
    x = np.asarray(x, dtype=float)
    med = np.median(x)
    mad = np.median(np.abs(x - med))
    if mad != 0:
        return 0.6745 * (x - med) / mad
    mean_ad = np.mean(np.abs(x - med))
    if mean_ad != 0:
        return (x - med) / (1.253314 * mean_ad)
    return np.zeros_like(x)


for name, data in [("A", DATA_A), ("B", DATA_B), ("C", DATA_C)]:
    x = np.asarray(data, dtype=float)
    print(f"\n# ---- DATA_{name} (n = {len(x)})")
    show(f"{name}_MEDIAN  # numpy.median", np.median(x))
    show(f"{name}_MEAN    # numpy.mean", np.mean(x))
    show(f"{name}_STDDEV  # numpy.std(ddof=1)", np.std(x, ddof=1))
    show(f"{name}_STDDEV_POP  # numpy.std(ddof=0)", np.std(x, ddof=0))
    show(f"{name}_CV_POP  # numpy.std(ddof=0)/numpy.mean", np.std(x, ddof=0) / np.mean(x))
    show(f"{name}_MAD     # scipy.stats.median_abs_deviation(scale=1.0)",
         scipy.stats.median_abs_deviation(x, scale=1.0))
    show(f"{name}_CV      # numpy.std(ddof=1)/numpy.mean", np.std(x, ddof=1) / np.mean(x))
    show(f"{name}_MIN", np.min(x))
    show(f"{name}_MAX", np.max(x))
    show(f"{name}_RANGE   # numpy.ptp", np.ptp(x))
    show(f"{name}_RANGE_PCT_OF_MEAN  # 100*numpy.ptp/numpy.mean", 100 * np.ptp(x) / np.mean(x))
    show(f"{name}_QUANTILES at {QS}  # numpy.quantile(sorted, q), default method",
         [np.quantile(np.sort(x), q) for q in QS])
    z = modified_z(x)
    show(f"{name}_MODZ    # formula in numpy", z)
    show(f"{name}_OUT_MODZ  # numpy.nonzero(abs(modz) > 3.5)", np.nonzero(np.abs(z) > 3.5)[0])
    sd = np.std(x, ddof=1)
    show(f"{name}_OUT_2SIGMA  # numpy.nonzero(abs(x-mean) > 2*std(ddof=1))",
         np.nonzero(np.abs(x - np.mean(x)) > 2 * sd)[0] if sd > 0 else [])

# ---- a quantile where numpy's "interpolate from the nearer end" matters in the last bit
DATA_Q = [0.17, 0.41, 2.7, 6.37]
show("Q_0_9  # numpy.quantile(DATA_Q, 0.9)", np.quantile(DATA_Q, 0.9))
show("Q_0_9_NAIVE  # a + (b - a) t, for contrast", 2.7 + (6.37 - 2.7) * ((3 * 0.9) - 2))

# ---- bootstrap percentile CI of the median
print("\n# ---- bootstrap")
gen = np.random.default_rng(20260601)
BOOT = gen.lognormal(mean=np.log(1000.0), sigma=0.5, size=200)
show("BOOT_DATA  # numpy.random.default_rng(20260601).lognormal(log(1000), 0.5, 200)", BOOT)
show("BOOT_MEDIAN", np.median(BOOT))
res = scipy.stats.bootstrap((BOOT,), np.median, n_resamples=20000, method="percentile",
                            confidence_level=0.95, rng=np.random.default_rng(1))
show("BOOT_CI95  # scipy.stats.bootstrap(percentile, median, 20000, rng=default_rng(1))",
     [res.confidence_interval.low, res.confidence_interval.high])

# ---- trial-level estimates (src/stats/trials.rs)
print("\n# ---- scipy.stats.t.ppf(p, df)")
for p, df in [(0.975, 1), (0.975, 2), (0.975, 4), (0.975, 9), (0.975, 2.5), (0.975, 1e6), (0.5, 3), (0.025, 4)]:
    print(f"({p!r}, {df!r}, {float(scipy.stats.t.ppf(p, df))!r}),")

# How much more the median of n normal values varies than their mean,
# sd(median) / sd(mean) = sqrt(n var(median of n standard normals)), from the
# order statistics' densities integrated numerically (odd n: the middle one;
# even n: the mean of the two middle ones, through their joint density).
from math import factorial
from scipy import integrate

def var_median(n):
    phi, Phi = scipy.stats.norm.pdf, scipy.stats.norm.cdf
    if n <= 2:
        return 1.0 / n
    if n % 2 == 1:
        k = n // 2
        c = factorial(n) / factorial(k) ** 2
        return integrate.quad(lambda x: x * x * c * Phi(x) ** k * (1 - Phi(x)) ** k * phi(x), -12, 12,
                              epsabs=1e-13, epsrel=1e-12, limit=200)[0]
    k = n // 2
    c = factorial(n) / factorial(k - 1) ** 2
    f = lambda y, x: ((x + y) / 2) ** 2 * c * Phi(x) ** (k - 1) * (1 - Phi(y)) ** (k - 1) * phi(x) * phi(y)
    return integrate.dblquad(f, -10, 10, lambda x: x, lambda x: 10, epsabs=1e-11, epsrel=1e-10)[0]

MEDIAN_FACTOR = [np.sqrt(n * var_median(n)) for n in range(1, 31)]
show("MEDIAN_FACTOR  # n = 1..30: sqrt(n var(median of n N(0, 1)))", MEDIAN_FACTOR)
F = lambda n: MEDIAN_FACTOR[n - 1]

# Three trial medians, one process 38% slower: a t interval on the logs,
# centred on the log of their median, half-width t.ppf(0.975, 2) f(3) s / sqrt(3).
TM = np.log([231.0, 167.0, 170.0])
hw = scipy.stats.t.ppf(0.975, 2) * F(3) * np.std(TM, ddof=1) / np.sqrt(3)
show("TRIAL_CI95  # exp(log median(x) -+ t.ppf(0.975, 2) f(3) std(log x, ddof=1) / sqrt(3))",
     [np.exp(np.median(TM) - hw), np.exp(np.median(TM) + hw)])
show("TRIAL_SD_LOG  # numpy.std(log x, ddof=1)", np.std(TM, ddof=1))

# How often one run's interval (n_a trials) holds the median of another run
# of the same build (n_b trials) when they differ only as trials do:
# 2 t.cdf(t.ppf(0.975, n_a - 1) k, n_a - 1) - 1, k = (f_a / sqrt n_a) / sqrt(f_a^2 / n_a + f_b^2 / n_b).
def expected_hold(na, nb):
    fa, fb = F(na) / np.sqrt(na), F(nb) / np.sqrt(nb)
    k = scipy.stats.t.ppf(0.975, na - 1) * fa / np.sqrt(fa * fa + fb * fb)
    return 2 * scipy.stats.t.cdf(k, na - 1) - 1
show("EXPECTED_HOLD  # (3, 3), (3, 7), (7, 3), (10, 10), (30, 30)",
     [expected_hold(3, 3), expected_hold(3, 7), expected_hold(7, 3), expected_hold(10, 10), expected_hold(30, 30)])

# Two runs' trial medians: the ratio of their medians, with a Welch interval
# centred on its log, each side's variance f(n)^2 s^2 / n (that of a median),
# its degrees of freedom Welch-Satterthwaite's of those variances.
WB, WC = np.log([100.0, 103.0, 98.0]), np.log([110.0, 108.0, 113.0, 111.0])
vb = (F(3) * np.std(WB, ddof=1)) ** 2 / 3
vc = (F(4) * np.std(WC, ddof=1)) ** 2 / 4
wdf = (vb + vc) ** 2 / (vb ** 2 / 2 + vc ** 2 / 3)
d = np.log(np.median([110.0, 108.0, 113.0, 111.0]) / np.median([100.0, 103.0, 98.0]))
whw = scipy.stats.t.ppf(0.975, wdf) * np.sqrt(vb + vc)
show("WELCH_DF  # (vb + vc)^2 / (vb^2 / (nb - 1) + vc^2 / (nc - 1)), v = f(n)^2 std(log x, ddof=1)^2 / n", wdf)
show("WELCH_RATIO_CI95  # exp(log(median C / median B) -+ t.ppf(0.975, df) sqrt(vb + vc))", [np.exp(d - whw), np.exp(d + whw)])

# ---- variants and noise floors (src/stats/change.rs)
# Paired trials: the trial of each variant in one round; the median of the
# log ratios with a t interval centred on it, half-width t f(n) s / sqrt(n).
PB, PC = np.log([100.0, 103.0, 98.0, 101.0]), np.log([106.0, 108.5, 103.0, 107.0])
PD = PC - PB
phw = scipy.stats.t.ppf(0.975, 3) * F(4) * np.std(PD, ddof=1) / np.sqrt(4)
show("PAIRED_RATIO_CI95  # exp(median(d)), exp(median(d) -+ t.ppf(0.975, 3) f(4) std(d, ddof=1) / 2), d = log C - log B",
     [np.exp(np.median(PD)), np.exp(np.median(PD) - phw), np.exp(np.median(PD) + phw)])
show("PAIRED_SD  # numpy.std(d, ddof=1)", np.std(PC - PB, ddof=1))

# A noise floor from two builds' repeated runs: the pooled sd of the log
# medians within builds, and the 95% prediction bound for the ratio of two
# new runs of one build, exp(t.ppf(0.975, df) sqrt(2) s) - 1.
G1, G2 = np.log([100.0, 102.0, 99.0, 101.0, 103.0]), np.log([110.0, 111.5])
ss = ((G1 - G1.mean()) ** 2).sum() + ((G2 - G2.mean()) ** 2).sum()
s = np.sqrt(ss / 5)
show("FLOOR_SD_AND_VALUE  # pooled sd (df 5), exp(t.ppf(0.975, 5) sqrt(2) sd) - 1", [s, np.exp(scipy.stats.t.ppf(0.975, 5) * np.sqrt(2) * s) - 1])

# A verdict's p-value: the two one-sided t tests of "the log ratio is beyond
# the band" (ln 1.06 with standard error 0.01, 4 df, band 2%), two-sided.
M, SE, DF, L = np.log(1.06), 0.01, 4, np.log(1.02)
p_up = 1 - scipy.stats.t.cdf((M - L) / SE, DF)
p_dn = scipy.stats.t.cdf((M + L) / SE, DF)
show("BAND_P  # min(1, 2 min(P(T > (m - L) / se), P(T < (m + L) / se)))", min(1.0, 2 * min(p_up, p_dn)))
# Benjamini-Hochberg adjusted p-values.
show("BH_ADJUSTED  # scipy.stats.false_discovery_control([0.01, 0.04, 0.03, 0.005, 0.5, 0.2], method='bh')",
     scipy.stats.false_discovery_control([0.01, 0.04, 0.03, 0.005, 0.5, 0.2], method="bh"))

# ---- decided verdicts (src/stats/decide.rs)
# Five trial pairs' summaries (each the median of that pair's sample log ratios
# B over A). At the first look (5 pairs) of a design with 8 planned looks (5 to
# 12 pairs) and alpha 0.05, weighted Bonferroni gives the first look half of
# alpha, alpha_1 = 0.025 (each later look 0.025 / 7): DIFFERENT reads
# the two-sided (1 - alpha_k) interval, SAME (two one-sided tests at alpha_k
# each) the (1 - 2 alpha_k) interval; both centred on the median, half-width
# t f(n) sd / sqrt(n), exponentiated. A record written before the first look's
# share existed splits alpha equally: alpha_k = 0.05 / 8 at every look.
DD = np.array([0.0123, 0.0087, 0.0151, 0.0102, 0.0069])
ak = 0.025
dse = F(5) * np.std(DD, ddof=1) / np.sqrt(5)
show("DECIDE_ACROSS_CI95  # exp(median(d) -+ t.ppf(0.975, 4) f(5) std(d, ddof=1) / sqrt(5))",
     [np.exp(np.median(DD) - scipy.stats.t.ppf(0.975, 4) * dse), np.exp(np.median(DD) + scipy.stats.t.ppf(0.975, 4) * dse)])
show("DECIDE_DIFFERENT_CI  # exp(median(d) -+ t.ppf(1 - 0.025 / 2, 4) f(5) std(d, ddof=1) / sqrt(5))",
     [np.exp(np.median(DD) - scipy.stats.t.ppf(1 - ak / 2, 4) * dse), np.exp(np.median(DD) + scipy.stats.t.ppf(1 - ak / 2, 4) * dse)])
show("DECIDE_TOST_CI  # exp(median(d) -+ t.ppf(1 - 0.025, 4) f(5) std(d, ddof=1) / sqrt(5))",
     [np.exp(np.median(DD) - scipy.stats.t.ppf(1 - ak, 4) * dse), np.exp(np.median(DD) + scipy.stats.t.ppf(1 - ak, 4) * dse)])
show("DECIDE_EQUAL_SPLIT_CI  # exp(median(d) -+ t.ppf(1 - 0.05 / 16, 4) f(5) std(d, ddof=1) / sqrt(5))",
     [np.exp(np.median(DD) - scipy.stats.t.ppf(1 - 0.05 / 16, 4) * dse), np.exp(np.median(DD) + scipy.stats.t.ppf(1 - 0.05 / 16, 4) * dse)])
# The TOST's p-values against the 2% band: the larger one is below alpha_k
# exactly when the (1 - 2 alpha_k) interval lies inside the band.
tl = (np.median(DD) + np.log(1.02)) / dse
tu = (np.median(DD) - np.log(1.02)) / dse
show("DECIDE_TOST_P  # max(P(T > (m + ln 1.02) / se), P(T < (m - ln 1.02) / se)), T ~ t(4)",
     max(1 - scipy.stats.t.cdf(tl, 4), scipy.stats.t.cdf(tu, 4)))
# One trial pair alone: the t interval over its sample log ratios.
WP = np.array([0.021, -0.004, 0.013, 0.030, 0.008, 0.017, 0.002])
wse = F(7) * np.std(WP, ddof=1) / np.sqrt(7)
show("DECIDE_WITHIN_CI95  # exp(median(w) -+ t.ppf(0.975, 6) f(7) std(w, ddof=1) / sqrt(7))",
     [np.exp(np.median(WP) - scipy.stats.t.ppf(0.975, 6) * wse), np.exp(np.median(WP) + scipy.stats.t.ppf(0.975, 6) * wse)])

# Many pairs (12 or more): the median's interval from order statistics. The
# j-th smallest and j-th largest of n values cover the median with probability
# 1 - 2 P(Bin(n, 1/2) <= j - 1); k is the largest j covering the level, and the
# bounds are interpolated towards the next pair in (Hettmansperger and Sheather
# 1986): lambda = (n - k) I / (k + (n - 2k) I), I = (g_k - level) / (g_k - g_k+1).
def hs_interval(x, level):
    x = np.sort(np.asarray(x))
    n = len(x)
    g = lambda j: 1 - 2 * scipy.stats.binom.cdf(j - 1, n, 0.5)
    k = max(j for j in range(1, n // 2 + 1) if g(j) >= level)
    i = (g(k) - level) / (g(k) - g(k + 1))
    lam = (n - k) * i / (k + (n - 2 * k) * i)
    return [(1 - lam) * x[k - 1] + lam * x[k], (1 - lam) * x[n - k] + lam * x[n - k - 1]], k


OD = np.array([0.012, 0.009, 0.61, 0.011, 0.014, 0.010, -0.29, 0.013, 0.008, 0.015, 0.011, 0.012])
# A --lockstep design (3 to 30 pairs) looks at 3, 6, 12 and 30: alpha_k at 12 is 0.025 / 3.
(lo, hi), k = hs_interval(OD, 1 - 0.025 / 3)
show(f"DECIDE_ORDER_CI  # 12 pairs, two far out, at 1 - 0.025 / 3: k = {k}, exp of the interpolated bounds", np.exp([lo, hi]))
(lo, hi), k = hs_interval(OD, 0.95)
show(f"DECIDE_ORDER_CI95  # the same at 95%: k = {k}", np.exp([lo, hi]))

# ---- change points (src/stats/changepoint.rs)
# The exact optimal partition of a short series under a penalty, by the plain
# O(n^2) dynamic programme over every partition (no pruning): the cost of a
# level is the sum of squared deviations of its logs from their mean over
# sigma^2, each level of at least 2 values, 21.4 per change. Then each
# change's ratio (exp of the difference of the levels' mean logs) with its 95%
# interval exp(d -+ t.ppf(0.975, n - k) s sqrt(1/n1 + 1/n2)), s the pooled
# standard deviation of the logs around the k levels' means.
CP = np.log([100.0, 101.0, 99.0, 100.5, 99.5, 100.0, 104.0, 103.0, 104.5, 103.5, 97.0, 96.5, 97.5, 96.8])
CP_SIGMA, CP_PEN, CP_MIN = 0.005, 21.4, 2
def cp_cost(s, t):
    seg = CP[s:t]
    return float(np.sum((seg - seg.mean()) ** 2)) / CP_SIGMA ** 2
best, last = [-CP_PEN] + [np.inf] * len(CP), [0] * (len(CP) + 1)
for t in range(1, len(CP) + 1):
    for s in range(0, t - CP_MIN + 1):
        c = best[s] + cp_cost(s, t) + CP_PEN
        if c < best[t]:
            best[t], last[t] = c, s
cuts, t = [], len(CP)
while t > 0:
    t = last[t]
    if t > 0:
        cuts.insert(0, t)
show("CP_CUTS  # the starts of the levels after the first", cuts)
bounds = [0] + cuts + [len(CP)]
ratios = []
# The runs' pooled spread around the levels named, n - levels degrees of freedom.
CP_DF = len(CP) - (len(bounds) - 1)
CP_RESID = np.sqrt(sum(float(np.sum((CP[a:b] - CP[a:b].mean()) ** 2)) for a, b in zip(bounds, bounds[1:])) / CP_DF)
for a, b, c in zip(bounds, bounds[1:], bounds[2:]):
    d = CP[b:c].mean() - CP[a:b].mean()
    h = scipy.stats.t.ppf(0.975, CP_DF) * CP_RESID * np.sqrt(1 / (b - a) + 1 / (c - b))
    ratios += [np.exp(d), np.exp(d - h), np.exp(d + h)]
show("CP_RATIOS  # (ratio, lo, hi) of each change", ratios)
show("CP_NORM_975  # scipy.stats.norm.ppf(0.975)", scipy.stats.norm.ppf(0.975))
