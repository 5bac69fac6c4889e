//! Tests of the `date` module.

use super::*;

#[test]
fn civil_epoch() {
    assert_eq!(days_from_civil(1970, 1, 1), 0);
    assert_eq!(days_from_civil(2000, 3, 1), 11_017);
    assert_eq!(days_from_civil(1969, 12, 31), -1);
}

#[test]
fn year_rollover() {
    let at = |year, month, day, hour| Civil { year, month, day, hour, ..Civil::default() };
    // December seen in January: last year; January seen on 31 Dec: next year.
    assert_eq!(infer_year(at(0, 12, 31, 23), at(2024, 1, 1, 0)), 2023);
    assert_eq!(infer_year(at(0, 1, 1, 0), at(2024, 12, 31, 23)), 2025);
    assert_eq!(infer_year(at(0, 6, 1, 0), at(2024, 7, 1, 0)), 2024);
    // Issue 22: `Dec 10` received on 26 Nov is last December.
    assert_eq!(infer_year(at(0, 12, 10, 6), at(2026, 11, 26, 12)), 2025);
    // Up to a day ahead stays this year; more goes back a year.
    assert_eq!(infer_year(at(0, 11, 27, 12), at(2026, 11, 26, 12)), 2026);
    assert_eq!(infer_year(at(0, 11, 27, 13), at(2026, 11, 26, 12)), 2025);
    // A January message seen in early December is last January, not next.
    assert_eq!(infer_year(at(0, 1, 5, 0), at(2026, 12, 1, 0)), 2026);
}
