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

# ratio of medians, two independent samples (candidate about 10% slower).
RB = BOOT[:80]
RC = gen.lognormal(mean=np.log(1100.0), sigma=0.5, size=90)
show("RATIO_CAND  # same generator, then .lognormal(log(1100), 0.5, 90)", RC)
show("RATIO_POINT  # numpy.median(cand)/numpy.median(base), base = BOOT_DATA[:80]",
     np.median(RC) / np.median(RB))
res = scipy.stats.bootstrap((RB, RC), lambda b, c, axis: np.median(c, axis=axis) / np.median(b, axis=axis),
                            n_resamples=20000, method="percentile", confidence_level=0.95,
                            vectorized=True, paired=False, rng=np.random.default_rng(2))
show("RATIO_CI95  # scipy.stats.bootstrap((base, cand), median(c)/median(b), percentile, 20000)",
     [res.confidence_interval.low, res.confidence_interval.high])

# ---- Mann-Whitney U, asymptotic, continuity-corrected, two-sided
print("\n# ---- mann-whitney: scipy.stats.mannwhitneyu(x, y, alternative='two-sided',"
      " method='asymptotic', use_continuity=True)")
MW_TIES_X = [1, 2, 2, 3, 4, 4, 4, 5]
MW_TIES_Y = [2, 3, 3, 4, 5, 6, 6, 7, 8]
MW_DIFF_X = [100.1, 99.5, 101.2, 100.8, 99.9, 100.4, 100.0, 101.0, 99.7, 100.6, 100.3, 99.8]
MW_DIFF_Y = [110.2, 109.1, 111.0, 108.7, 110.5, 109.9, 110.8, 111.4, 109.3, 110.1,
             108.9, 110.6, 109.6, 111.2, 110.0]
MW_SAME = [3.1, 2.7, 5.0, 4.4, 3.9]
MW_ALLTIED_X = [5.0, 5.0, 5.0]
MW_ALLTIED_Y = [5.0, 5.0]
gen2 = np.random.default_rng(7)
MW_OVERLAP_X = np.round(gen2.normal(10.0, 1.0, 40), 1)
MW_OVERLAP_Y = np.round(gen2.normal(10.5, 1.0, 50), 1)
show("MW_OVERLAP_X  # numpy.round(default_rng(7).normal(10, 1, 40), 1)", MW_OVERLAP_X)
show("MW_OVERLAP_Y  # same generator, numpy.round(.normal(10.5, 1, 50), 1)", MW_OVERLAP_Y)
for name, x, y in [("TIES", MW_TIES_X, MW_TIES_Y), ("DIFF", MW_DIFF_X, MW_DIFF_Y),
                   ("SAME", MW_SAME, MW_SAME), ("ALLTIED", MW_ALLTIED_X, MW_ALLTIED_Y),
                   ("OVERLAP", MW_OVERLAP_X, MW_OVERLAP_Y),
                   ("DIFF_SWAPPED", MW_DIFF_Y, MW_DIFF_X)]:
    r = scipy.stats.mannwhitneyu(x, y, alternative="two-sided", method="asymptotic",
                                 use_continuity=True)
    show(f"MW_{name}  # (U, p)", [r.statistic, r.pvalue])

# ---- erfc
print("\n# ---- erfc: scipy.special.erfc")
ERFC_X = [-3.0, -1.0, -0.5, 0.0, 1e-10, 0.1, 0.3, 0.5, 0.75, 1.0, 1.5, 1.9, 1.99, 2.0,
          2.01, 2.5, 3.0, 4.0, 5.0, 7.0, 10.0, 15.0, 20.0, 26.0]
for v in ERFC_X:
    print(f"({v!r}, {float(scipy.special.erfc(v))!r}),")

# ---- standard normal survival function
print("\n# ---- scipy.stats.norm.sf")
for z in [0.0, 1.959963984540054, 5.0]:
    print(f"({z!r}, {float(scipy.stats.norm.sf(z))!r}),")
