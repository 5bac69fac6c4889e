//! sluice-net: what every listening port of a node shares so that hostile or
//! merely numerous clients cannot take the node down (issue #18).
//!
//! - [`fdlimit`]: the soft `RLIMIT_NOFILE` raised to the hard limit at start;
//! - [`throttle`]: a log line repeated at most once per interval, with the
//!   number of repeats it stood for;
//! - [`listener`]: an accept loop that backs off on `EMFILE`/`ENFILE`
//!   instead of spinning, and a per-listener `max_connections` that refuses
//!   politely and counts;
//! - [`readbuf`]: a connection's read buffer that is small while the peer is
//!   quiet and freed while it is idle;
//! - [`http`]: an HTTP/1.1 server over such a listener with header, body and
//!   idle keep-alive timeouts (the API listener and the `http` source's own
//!   port), and the same over HTTP/2 cleartext for gRPC (`otlp`'s gRPC port).
//!
//! Why a crate: the API (`sluice-api`), the sources (`sluice-components`)
//! and the binary all need it, and none of them may import the others.

pub mod fdlimit;
pub mod http;
pub mod listener;
pub mod readbuf;
pub mod throttle;

pub use http::HttpTimeouts;
pub use listener::{ConnectionGuard, Incoming, Listener, ListenerCounters};
pub use readbuf::ReadBuf;
pub use throttle::Throttle;
