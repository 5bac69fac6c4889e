//! A connection's read buffer: small while the peer is quiet, large while it
//! sends a lot, and gone while it is idle.
//!
//! Why: the line sources reserved 256 KiB (tcp) or 64 KiB (syslog_tcp) per
//! connection up front and kept it for the connection's life, so 10,000
//! mostly idle connections held 2.3 GB (issue #18). Here a quiet connection
//! waits with no buffer at all: the wait is a read into a
//! [`PROBE`]-byte array inside the connection's task. Only when data comes
//! is a buffer allocated, [`INITIAL`] bytes, doubled while reads fill it, up
//! to the caller's maximum, and halved again when reads stay small (a probe
//! that fills takes whatever else is ready at once, without waiting, so a
//! sender that wakes up is still read in one large chunk). Once it
//! is drained and the last read did not fill it, it is freed before the
//! next wait. A busy connection never waits on the probe: its reads go
//! straight into the large buffer, as before.
//!
//! The caller owns what was read: it takes the bytes out of [`ReadBuf::bytes`]
//! (`split().freeze()`: events may slice them) and puts back any incomplete
//! frame; an empty buffer is what lets the next wait free it.

use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::io::poll_read_buf;

/// Bytes a quiet connection's wait reads into (inside the task, no allocation).
pub const PROBE: usize = 512;
/// The first buffer allocated when a quiet connection starts sending.
pub const INITIAL: usize = 16 * 1024;

/// See the module docs.
#[derive(Debug)]
pub struct ReadBuf {
    buf: BytesMut,
    want: usize,
    max: usize,
    /// The last read filled what it was given: more is probably waiting.
    busy: bool,
    probe: [u8; PROBE],
}

impl ReadBuf {
    /// A buffer growing up to `max` bytes per read.
    pub fn new(max: usize) -> Self {
        let max = max.max(INITIAL);
        Self { buf: BytesMut::new(), want: INITIAL, max, busy: false, probe: [0; PROBE] }
    }

    /// What was read and not yet taken.
    pub fn bytes(&mut self) -> &mut BytesMut {
        &mut self.buf
    }

    /// Bytes allocated now (for tests and accounting).
    pub fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// Reads once from `s`, appending to [`ReadBuf::bytes`]; `Ok(0)` at end
    /// of stream. Cancel-safe as `AsyncRead::read` is.
    pub async fn read_from<S: AsyncRead + Unpin>(&mut self, s: &mut S) -> std::io::Result<usize> {
        if self.buf.is_empty() && !self.busy {
            // Quiet: give the buffer back and wait on the probe.
            self.buf = BytesMut::new();
            let n = s.read(&mut self.probe).await?;
            if n > 0 {
                self.buf.reserve(self.want);
                self.buf.extend_from_slice(&self.probe[..n]);
            }
            self.busy = n == PROBE;
            if !self.busy {
                return Ok(n);
            }
            // The probe filled: take what else is ready now, without waiting,
            // so a sender waking up is read in one large chunk as before.
            let mut cx = Context::from_waker(Waker::noop());
            return match poll_read_buf(Pin::new(s), &mut cx, &mut self.buf) {
                Poll::Ready(Ok(more)) => Ok(n + more),
                // The error (or the end of stream) shows again on the next read.
                Poll::Ready(Err(_)) | Poll::Pending => Ok(n),
            };
        }
        let free = self.buf.capacity() - self.buf.len();
        // Refill when little is left, or when a busy peer outgrew the buffer.
        if free < self.want / 4 || (self.busy && free < self.want) {
            self.buf.reserve(self.want);
        }
        let offered = self.buf.capacity() - self.buf.len();
        let n = s.read_buf(&mut self.buf).await?;
        self.busy = n == offered;
        if self.busy {
            self.want = (self.want * 2).min(self.max);
        } else if n < self.want / 4 {
            self.want = (self.want / 2).max(INITIAL);
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn quiet_connections_hold_no_buffer_and_busy_ones_grow() {
        let (mut tx, mut rx) = tokio::io::duplex(1 << 20);
        let mut rb = ReadBuf::new(256 * 1024);
        use tokio::io::AsyncWriteExt;
        // A small message: read through the probe.
        tx.write_all(b"hello\n").await.unwrap();
        assert_eq!(rb.read_from(&mut rx).await.unwrap(), 6);
        assert_eq!(&rb.bytes()[..], b"hello\n");
        rb.bytes().clear();
        // Drained and quiet: the next wait frees the buffer.
        tx.write_all(b"x").await.unwrap();
        assert_eq!(rb.read_from(&mut rx).await.unwrap(), 1);
        rb.bytes().clear();
        let before = rb.capacity();
        assert!(before >= INITIAL, "{before}");
        // A flood: reads fill the buffer, which doubles up to the maximum.
        tx.write_all(&vec![b'a'; 900_000]).await.unwrap();
        let mut got = 0;
        let mut largest = 0;
        while got < 900_000 {
            let n = rb.read_from(&mut rx).await.unwrap();
            got += n;
            largest = largest.max(n);
            rb.bytes().clear();
        }
        assert_eq!(got, 900_000);
        assert!(largest > 128 * 1024 && largest <= 256 * 1024, "{largest}");
        // Quiet again: after one small read the buffer is released before the wait.
        tx.write_all(b"y").await.unwrap();
        rb.read_from(&mut rx).await.unwrap();
        rb.bytes().clear();
        drop(tx);
        assert_eq!(rb.read_from(&mut rx).await.unwrap(), 0);
        assert_eq!(rb.capacity(), 0);
    }
}
