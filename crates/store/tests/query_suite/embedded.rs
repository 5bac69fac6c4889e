//! The shared cases against the embedded store, with events given as parsed
//! fields and (`raw_`) as the JSON text line sources keep (ADR 0114).

use super::cases;
use super::engine::Engine;

#[test]
fn loghub_query_counts_match_independent_counts() {
    cases::loghub_query_counts_match_independent_counts(Engine::embedded());
}

#[test]
fn pagination_returns_every_hit_once_in_order() {
    cases::pagination_returns_every_hit_once_in_order(Engine::embedded());
}

#[test]
fn aggregations_are_exact() {
    cases::aggregations_are_exact(Engine::embedded());
}

#[test]
fn principal_isolation_on_every_path() {
    cases::principal_isolation_on_every_path(Engine::embedded());
}

#[test]
fn principal_filter_cannot_be_widened() {
    cases::principal_filter_cannot_be_widened(Engine::embedded());
}

#[test]
fn fields_come_from_every_event_in_range() {
    cases::fields_come_from_every_event_in_range(Engine::embedded());
}

#[test]
fn words_split_on_every_non_alphanumeric_character() {
    cases::words_split_on_every_non_alphanumeric_character(Engine::embedded());
}

#[test]
fn sort_by_field_pages_in_exact_order() {
    cases::sort_by_field_pages_in_exact_order(Engine::embedded());
}

#[test]
fn raw_loghub_query_counts_match_independent_counts() {
    cases::loghub_query_counts_match_independent_counts(Engine::embedded_raw());
}

#[test]
fn raw_pagination_returns_every_hit_once_in_order() {
    cases::pagination_returns_every_hit_once_in_order(Engine::embedded_raw());
}

#[test]
fn raw_aggregations_are_exact() {
    cases::aggregations_are_exact(Engine::embedded_raw());
}

#[test]
fn raw_principal_isolation_on_every_path() {
    cases::principal_isolation_on_every_path(Engine::embedded_raw());
}

#[test]
fn raw_principal_filter_cannot_be_widened() {
    cases::principal_filter_cannot_be_widened(Engine::embedded_raw());
}

#[test]
fn raw_fields_come_from_every_event_in_range() {
    cases::fields_come_from_every_event_in_range(Engine::embedded_raw());
}

#[test]
fn raw_words_split_on_every_non_alphanumeric_character() {
    cases::words_split_on_every_non_alphanumeric_character(Engine::embedded_raw());
}

#[test]
fn raw_sort_by_field_pages_in_exact_order() {
    cases::sort_by_field_pages_in_exact_order(Engine::embedded_raw());
}
