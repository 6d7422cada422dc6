//! stats: pure estimators over samples. No I/O, no clocks.
