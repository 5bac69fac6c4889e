//! The timeouts of the HTTP ingest sources that listen on a port of their
//! own (`http`, `splunk_hec`, `loki`): the optional `header_timeout`,
//! `body_timeout` and `idle_timeout` of a source's config over
//! `sluice_net`'s defaults, each refused when 0.

use sluice_core::component::BuildContext;
use sluice_core::config::{ConfigError, HumanDuration};
use sluice_net::HttpTimeouts;

/// The listener's timeouts; a zero one is an error naming its key.
pub fn timeouts(
    cx: &BuildContext,
    header: Option<HumanDuration>,
    body: Option<HumanDuration>,
    idle: Option<HumanDuration>,
) -> Result<HttpTimeouts, ConfigError> {
    let d = HttpTimeouts::default();
    let t = HttpTimeouts {
        header: header.map_or(d.header, |t| t.0),
        body: body.map_or(d.body, |t| t.0),
        idle: idle.map_or(d.idle, |t| t.0),
    };
    for (key, v) in [("header_timeout", t.header), ("body_timeout", t.body), ("idle_timeout", t.idle)] {
        if v.is_zero() {
            return Err(cx.error(key, "must be greater than 0"));
        }
    }
    Ok(t)
}
