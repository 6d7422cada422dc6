//! Claims tests: parsing (forms, suffixes, errors with line and key) and the
//! status of each claim against synthetic rows.
