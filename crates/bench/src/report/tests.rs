//! Tests of the `report` module.

use super::html::nice;
use super::*;

fn ep(name: &str, per_second: Vec<u64>) -> EndpointReport {
    EndpointReport { name: name.into(), events: per_second.iter().sum(), unique: 0, duplicates: 0, per_second }
}

#[test]
fn even_split_has_zero_cv_and_exact_means() {
    let e = [ep("p1", vec![0, 50, 100, 100, 100, 50]), ep("p2", vec![0, 50, 100, 100, 100, 50])];
    let s = summarize(&e, 0, &[], &[]);
    assert_eq!(s.span_s, 5.0);
    assert_eq!(s.throughput_mean, 800.0 / 5.0);
    assert_eq!(s.throughput_p50, 200.0);
    assert_eq!(s.balance_cv, 0.0);
    assert_eq!(s.shares[0].share, 0.5);
    assert_eq!(s.shares[0].share_cv, 0.0);
    assert_eq!(s.shares[0].mean_rate, 80.0);
}

#[test]
fn bursty_alternation_shows_in_share_cv() {
    // One processor at a time, as the thesis saw with Filebeat's balancer.
    let e = [ep("p1", vec![100, 0, 100, 0]), ep("p2", vec![0, 100, 0, 100])];
    let s = summarize(&e, 0, &[], &[]);
    assert_eq!(s.balance_cv, 0.0, "even in total");
    assert_eq!(s.shares[0].share_cv, 1.0, "but never at the same time");
    let uneven = [ep("p1", vec![300]), ep("p2", vec![100])];
    assert_eq!(summarize(&uneven, 0, &[], &[]).balance_cv, 0.5);
}

#[test]
fn recovery_and_scale_out_times() {
    // p2 is killed at 3.5 s; p1 takes over fully from second 5.
    let e = [ep("p1", vec![50, 50, 50, 50, 60, 100, 100]), ep("p2", vec![50, 50, 50, 25, 0, 0, 0])];
    let s = summarize(&e, 0, &[(3.5, 1)], &[]);
    assert_eq!(s.recovery_s, Some(1.5));
    // A dispatcher in front of both is killed at 3.5 s: both endpoints
    // stall, and together reach 90 % of the rate before again at second 6.
    let e = [ep("p1", vec![50, 50, 50, 30, 0, 20, 46]), ep("p2", vec![50, 50, 50, 30, 0, 20, 45])];
    let s = summarize(&e, 0, &[(3.5, NOT_AN_ENDPOINT)], &[]);
    assert_eq!(s.recovery_s, Some(2.5));
    // p3 starts at 2 s and gets a third from second 4.
    let e = [
        ep("p1", vec![50, 50, 50, 40, 34, 33]),
        ep("p2", vec![50, 50, 50, 40, 33, 33]),
        ep("p3", vec![0, 0, 0, 20, 33, 34]),
    ];
    let s = summarize(&e, 0, &[], &[(2.0, 2)]);
    assert_eq!(s.scale_out_s, Some(3.0));
}

#[test]
fn warm_up_seconds_are_skipped_and_empty_runs_are_zero() {
    let e = [ep("p1", vec![1000, 10, 10, 10])];
    assert_eq!(summarize(&e, 1, &[], &[]).throughput_mean, 10.0);
    assert_eq!(summarize(&[], 0, &[], &[]), Summary::default());
}

#[test]
fn helpers() {
    assert_eq!(moving_average(&[10, 20, 30, 40], 2), vec![10.0, 15.0, 25.0, 35.0]);
    assert_eq!(fmt_num(1234567.0), "1,234,567");
    assert_eq!(fmt_num(0.5), "0.500");
    assert_eq!(nice(730.0), 1000.0);
    assert_eq!(nice(180.0), 200.0);
}

#[test]
fn share_moving_average_is_the_windowed_share() {
    // p1 gets 10 of 10, then 0 of 10, then 5 of 10: over 2 s windows
    // its share is 1.0, 0.5, 0.25; a window with no events is 0.
    let s = share_moving_average(&[10, 0, 5], &[10, 10, 10, 0, 0], 2);
    assert_eq!(s, vec![1.0, 0.5, 0.25, 0.5, 0.0]);
}

#[test]
fn html_is_self_contained_and_compare_prints_ratios() {
    let mut r = RunResult { case: "c".into(), count: 10, rate: 5.0, ..Default::default() };
    r.received =
        Some(CollectorReport { endpoints: vec![ep("p1", vec![5, 5]), ep("p2", vec![5, 0])], ..Default::default() });
    r.summary = summarize(&r.received.as_ref().unwrap().endpoints, 0, &[], &[]);
    r.processes.push(ProcessResult {
        name: "p1".into(),
        samples: vec![
            Sample { t: 0.0, cpu_s: 0.0, ..Default::default() },
            Sample { t: 1.0, cpu_s: 0.5, ..Default::default() },
        ],
        ..Default::default()
    });
    let page = html(&r);
    assert!(page.starts_with("<!doctype html>") && page.contains("<svg") && !page.contains("<script"));
    assert_eq!(page.matches("<svg").count(), 4, "per-processor rate, total rate, share and CPU charts");
    for h in ["Events per second at each processor", "Events per second, all processors", "share per second"] {
        assert!(page.contains(h), "{h}");
    }
    assert!(page.contains("p2 5 s avg") && page.contains("total 5 s avg"), "moving averages are labelled");
    r.quiescent = true;
    r.summary.lost = 0;
    assert!(matrix_table(std::slice::from_ref(&r)).contains("| 0 | 0 |"), "lost and dup of a quiescent run");
    let mut late = r.clone();
    (late.quiescent, late.summary.lost) = (false, 7);
    let t = matrix_table(&[late]);
    assert!(t.contains("| 7 unaccounted at the quiesce timeout |"), "{t}");
    let mut b = r.clone();
    b.summary.throughput_mean *= 2.0;
    let c = compare(&r, &b);
    assert!(c.contains("throughput mean (events/s)") && c.contains("2.00×"), "{c}");
}
