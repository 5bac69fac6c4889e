//! The timeouts of the HTTP ingest sources that listen on a port of their
//! own (`http`, `splunk_hec`, `loki`): the optional `header_timeout`,
//! `body_timeout` and `idle_timeout` of a source's config over
//! `sluice_net`'s defaults (a zero one is refused when the config is parsed,
//! by [`Positive`]).

use sluice_core::config::{HumanDuration, Positive};
use sluice_net::HttpTimeouts;

/// The listener's timeouts: each given one, else `sluice_net`'s default.
pub fn timeouts(
    header: Option<Positive<HumanDuration>>,
    body: Option<Positive<HumanDuration>>,
    idle: Option<Positive<HumanDuration>>,
) -> HttpTimeouts {
    let d = HttpTimeouts::default();
    HttpTimeouts {
        header: header.map_or(d.header, |t| t.duration_value()),
        body: body.map_or(d.body, |t| t.duration_value()),
        idle: idle.map_or(d.idle, |t| t.duration_value()),
    }
}
