//! The shared cases against a real OpenSearch node (`scripts/opensearch.sh`;
//! an index per test and run, deleted after).

use super::cases;
use super::engine::Engine;

#[test]
fn loghub_query_counts_match_independent_counts() {
    cases::loghub_query_counts_match_independent_counts(Engine::opensearch("loghub_query_counts_matc"));
}

#[test]
fn pagination_returns_every_hit_once_in_order() {
    cases::pagination_returns_every_hit_once_in_order(Engine::opensearch("pagination_returns_every"));
}

#[test]
fn aggregations_are_exact() {
    cases::aggregations_are_exact(Engine::opensearch("aggregations_are_exact"));
}

#[test]
fn principal_isolation_on_every_path() {
    cases::principal_isolation_on_every_path(Engine::opensearch("principal_isolation_on_e"));
}

#[test]
fn principal_filter_cannot_be_widened() {
    cases::principal_filter_cannot_be_widened(Engine::opensearch("principal_filter_cannot_"));
}

#[test]
fn fields_come_from_every_event_in_range() {
    cases::fields_come_from_every_event_in_range(Engine::opensearch("fields_come_from_every_e"));
}

#[test]
fn words_split_on_every_non_alphanumeric_character() {
    cases::words_split_on_every_non_alphanumeric_character(Engine::opensearch("words_split"));
}

#[test]
fn sort_by_field_pages_in_exact_order() {
    cases::sort_by_field_pages_in_exact_order(Engine::opensearch("sort_by_field_pages_in_e"));
}
