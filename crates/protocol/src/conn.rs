//! Frames on an async byte stream (TCP or TLS): a buffered reader that checks
//! each header before reading its body, and a writer helper.

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};

use crate::error::ProtocolError;
use crate::frame::{decode_body, parse_header, Frame, HEADER_LEN};

/// Reads frames from a stream.
pub struct FrameReader<R> {
    inner: BufReader<R>,
    max_batch_bytes: u32,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    /// A reader accepting `BATCH` payloads up to `max_batch_bytes`.
    pub fn new(inner: R, max_batch_bytes: u32) -> Self {
        Self { inner: BufReader::with_capacity(64 << 10, inner), max_batch_bytes }
    }

    /// Changes the batch limit (after the handshake).
    pub fn set_max_batch_bytes(&mut self, max: u32) {
        self.max_batch_bytes = max;
    }

    /// Reads and discards input until end of stream, `max` bytes or
    /// `timeout`, whichever comes first. Used after sending an `ERROR`: closing
    /// a socket with unread input makes the kernel reset the connection, which
    /// can destroy the error frame before the peer reads it.
    pub async fn discard(&mut self, max: usize, timeout: std::time::Duration) {
        let mut buf = [0u8; 8192];
        let mut total = 0;
        let _ = tokio::time::timeout(timeout, async {
            while total < max {
                match self.inner.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => total += n,
                }
            }
        })
        .await;
    }

    /// The next frame; `Ok(None)` at a clean end of stream between frames.
    /// A header over the limits is an error before its body is read.
    pub async fn read(&mut self) -> Result<Option<Frame>, ProtocolError> {
        let mut head = [0u8; HEADER_LEN];
        let mut got = 0;
        while got < HEADER_LEN {
            let n = self.inner.read(&mut head[got..]).await?;
            if n == 0 {
                if got == 0 {
                    return Ok(None);
                }
                return Err(ProtocolError::Truncated { got, want: HEADER_LEN });
            }
            got += n;
            // Check the magic as soon as it is in, so garbage is named at once.
            if got >= 2 && head[..2] != crate::frame::MAGIC {
                return Err(ProtocolError::BadMagic([head[0], head[1]]));
            }
        }
        let header = parse_header(&head, self.max_batch_bytes)?;
        let len = header.len as usize;
        let mut body = vec![0u8; len];
        let mut filled = 0;
        while filled < len {
            let n = self.inner.read(&mut body[filled..]).await?;
            if n == 0 {
                return Err(ProtocolError::Truncated { got: HEADER_LEN + filled, want: HEADER_LEN + len });
            }
            filled += n;
        }
        decode_body(header.ty, body).map(Some)
    }
}

/// Writes one frame and flushes.
pub async fn write_frame<W: AsyncWrite + Unpin>(w: &mut W, frame: &Frame) -> std::io::Result<()> {
    let bytes = frame.to_bytes();
    w.write_all(&bytes).await?;
    w.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reads_frames_split_anywhere_and_reports_truncation() {
        let frames =
            [Frame::Ping { nonce: 1 }, Frame::Credit { credits: 3, fill: 7 }, Frame::Pong { nonce: 1, fill: 0 }];
        let mut bytes = Vec::new();
        for f in &frames {
            f.encode(&mut bytes);
        }
        let (mut a, b) = tokio::io::duplex(5);
        let writer = tokio::spawn(async move {
            for chunk in bytes.chunks(3) {
                a.write_all(chunk).await.unwrap();
            }
            a.write_all(b"SL\x06").await.unwrap();
        });
        let mut r = FrameReader::new(b, 1024);
        for f in &frames {
            assert_eq!(r.read().await.unwrap().as_ref(), Some(f));
        }
        writer.await.unwrap();
        let e = r.read().await.unwrap_err();
        assert_eq!(e.to_string(), "connection closed in the middle of a frame (3 of 8 bytes)");
    }

    #[tokio::test]
    async fn garbage_is_named_after_two_bytes() {
        let (mut a, b) = tokio::io::duplex(64);
        a.write_all(b"\x16\x03").await.unwrap(); // a TLS ClientHello's start
        let mut r = FrameReader::new(b, 1024);
        let e = r.read().await.unwrap_err();
        assert_eq!(e.to_string(), "bad magic [16, 03]: not a sluice agent protocol frame");
        drop(a);
    }
}
