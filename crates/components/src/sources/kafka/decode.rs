//! Decoding records: JSON events (with the identity members `write_json`
//! puts first) or plain messages, with the record's metadata.

use super::*;

// ---------------------------------------------------------------------------
// Decoding records.

/// Identity members found at the start of a record written by `write_json`.
#[derive(Default)]
pub(super) struct Prefix<'a> {
    pub(super) group: Option<&'a str>,
    pub(super) subgroup: Option<&'a str>,
    pub(super) host: Option<&'a str>,
    pub(super) source: Option<&'a str>,
}

/// Splits `{"@timestamp":"…","@group":"…",…,"@source":"…",REST}` (the layout
/// `codec::write_json` produces) into the identity members and the same
/// object without them, so the rest stays on the lazy JSON path. `None` when
/// the record has another shape (escapes in the values, reserved keys
/// elsewhere); the caller then parses it eagerly.
pub(super) fn split_identity(b: &[u8]) -> Option<(Prefix<'_>, Option<Vec<u8>>)> {
    let mut prefix = Prefix::default();
    if b.first() != Some(&b'{') {
        return None;
    }
    let mut i = 1;
    let mut ts: Option<(usize, usize)> = None;
    let mut any = false;
    loop {
        let rest = &b[i..];
        let key = [
            &b"\"@timestamp\":\""[..],
            &b"\"@group\":\""[..],
            &b"\"@subgroup\":\""[..],
            &b"\"@host\":\""[..],
            &b"\"@source\":\""[..],
        ]
        .iter()
        .position(|k| rest.starts_with(k));
        let Some(which) = key else { break };
        let kl = [14, 10, 13, 9, 11][which];
        let vstart = i + kl;
        let vlen = memchr::memchr2(b'"', b'\\', &b[vstart..])?;
        if b[vstart + vlen] != b'"' {
            return None;
        }
        let value = std::str::from_utf8(&b[vstart..vstart + vlen]).ok()?;
        match which {
            0 => ts = Some((i, vstart + vlen + 1)),
            1 => prefix.group = Some(value),
            2 => prefix.subgroup = Some(value),
            3 => prefix.host = Some(value),
            _ => prefix.source = Some(value),
        }
        if which > 0 {
            any = true;
        }
        i = vstart + vlen + 1;
        match b.get(i) {
            Some(b',') => i += 1,
            Some(b'}') => break,
            _ => return None,
        }
    }
    if !any {
        return Some((prefix, None));
    }
    // `{` + the @timestamp member + the rest after the identity members.
    let rest = &b[i..];
    let mut out = Vec::with_capacity(b.len());
    out.push(b'{');
    if let Some((a, e)) = ts {
        out.extend_from_slice(&b[a..e]);
        if rest != b"}" {
            out.push(b',');
        }
    }
    if rest.first() == Some(&b'}') && rest.len() == 1 {
        out.push(b'}');
    } else {
        out.extend_from_slice(rest);
    }
    Some((prefix, Some(out)))
}

/// Whether `b` may hold a reserved identity key.
pub(super) fn mentions_identity(b: &[u8]) -> bool {
    ["\"@group\"", "\"@subgroup\"", "\"@host\"", "\"@source\""]
        .iter()
        .any(|k| memchr::memmem::find(b, k.as_bytes()).is_some())
}

/// Turns records into events, sharing identity and source allocations
/// between consecutive records that carry the same ones.
pub(super) struct Decoder {
    pub(super) trust: bool,
    pub(super) last_identity: Option<(String, String, String, Arc<Identity>)>,
    pub(super) last_source: Option<Arc<str>>,
    pub(super) invalid: Arc<Counter>,
    pub(super) metrics: Arc<ComponentMetrics>,
}

impl Decoder {
    pub(super) fn identity(&mut self, g: &str, s: &str, h: &str) -> Arc<Identity> {
        if let Some((lg, ls, lh, id)) = &self.last_identity {
            if lg == g && ls == s && lh == h {
                return Arc::clone(id);
            }
        }
        let id = Arc::new(Identity::new(g, s, h));
        self.last_identity = Some((g.to_string(), s.to_string(), h.to_string(), Arc::clone(&id)));
        id
    }

    pub(super) fn source(&mut self, s: &str) -> Arc<str> {
        if let Some(l) = &self.last_source {
            if &**l == s {
                return Arc::clone(l);
            }
        }
        let a: Arc<str> = Arc::from(s);
        self.last_source = Some(Arc::clone(&a));
        a
    }

    pub(super) fn invalid(&self, payload: &[u8]) -> Event {
        self.metrics.events_failed.inc();
        self.invalid.inc();
        let mut e = Event::from_message(String::from_utf8_lossy(payload));
        e.add_tag("_jsonparsefailure");
        e
    }

    pub(super) fn decode(&mut self, payload: &[u8]) -> Event {
        let mut ident: Option<(String, String, String, String)> = None;
        // Trusted records with identity members elsewhere than at the start
        // (not written by the kafka sink) take the eager path below.
        let split = split_identity(payload)
            .filter(|(_, rebuilt)| !self.trust || rebuilt.is_some() || !mentions_identity(payload));
        let parsed = match split {
            Some((prefix, rebuilt)) => {
                if self.trust {
                    ident = Some((
                        prefix.group.unwrap_or_default().to_string(),
                        prefix.subgroup.unwrap_or_default().to_string(),
                        prefix.host.unwrap_or_default().to_string(),
                        prefix.source.unwrap_or_default().to_string(),
                    ));
                }
                let bytes = match rebuilt {
                    Some(v) => Bytes::from(v),
                    None => Bytes::copy_from_slice(payload),
                };
                event_from_json_bytes(&bytes)
            }
            None if self.trust => match sluice_core::json::parse_value(payload) {
                Ok(Value::Object(mut obj)) => {
                    let get = |k: &str| obj.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
                    ident = Some((get("@group"), get("@subgroup"), get("@host"), get("@source")));
                    Ok(event_from_object(&mut obj))
                }
                _ => event_from_json(payload),
            },
            None => event_from_json(payload),
        };
        let mut e = match parsed {
            Ok((e, bad_ts)) => {
                let mut e = e;
                if bad_ts {
                    e.add_tag("_timestampparsefailure");
                }
                e
            }
            Err(_) => return self.invalid(payload),
        };
        if let Some((g, s, h, src)) = ident {
            if !(g.is_empty() && s.is_empty() && h.is_empty()) {
                e.identity = self.identity(&g, &s, &h);
            }
            if !src.is_empty() {
                e.source = self.source(&src);
            }
        }
        e
    }
}
