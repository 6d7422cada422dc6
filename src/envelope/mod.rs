//! envelope: the machine and environment record of a run.
