//! Batch payloads: events in the core binary batch encoding
//! (`sluice_core::codec::encode_batch`), compressed with zstd, lz4 (block
//! format) or not at all.
//!
//! Decompression is bounded: the `BATCH` header declares the raw length, a
//! declared length above the receiver's limit is refused before any work,
//! the decompressor never writes more than the declared length, and a result
//! of any other length is corrupt — so a decompression bomb costs at most
//! `max_batch_bytes` of memory.

use sluice_core::codec::{decode_batch, encode_batch};
use sluice_core::Event;

use crate::error::ProtocolError;
use crate::frame::{encode_batch_frame, Batch};

/// A payload codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compression {
    /// Raw batch encoding.
    None,
    /// One zstd frame.
    Zstd,
    /// One lz4 block (no frame header).
    Lz4,
}

impl Compression {
    /// The wire byte.
    pub fn byte(self) -> u8 {
        match self {
            Self::None => 0,
            Self::Zstd => 1,
            Self::Lz4 => 2,
        }
    }

    /// From the wire byte.
    pub fn from_byte(b: u8) -> Option<Self> {
        match b {
            0 => Some(Self::None),
            1 => Some(Self::Zstd),
            2 => Some(Self::Lz4),
            _ => None,
        }
    }

    /// From its config name (`none`, `zstd`, `lz4`).
    pub fn from_name(s: &str) -> Option<Self> {
        match s {
            "none" => Some(Self::None),
            "zstd" => Some(Self::Zstd),
            "lz4" => Some(Self::Lz4),
            _ => None,
        }
    }

    /// The config name.
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Zstd => "zstd",
            Self::Lz4 => "lz4",
        }
    }

    /// The `HELLO` capability bit.
    pub fn bit(self) -> u8 {
        1 << self.byte()
    }
}

/// Compresses batches into complete `BATCH` frames, reusing its buffers and
/// zstd context between batches.
pub struct BatchEncoder {
    compression: Compression,
    zstd: Option<zstd::bulk::Compressor<'static>>,
    raw: Vec<u8>,
}

/// What [`BatchEncoder::encode`] produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Encoded {
    /// Length of the uncompressed payload.
    pub raw_len: usize,
    /// Length of the payload on the wire.
    pub wire_len: usize,
}

impl BatchEncoder {
    /// An encoder for `compression` (`level` is zstd's, 1–22; ignored otherwise).
    pub fn new(compression: Compression, level: i32) -> std::io::Result<Self> {
        let zstd = match compression {
            Compression::Zstd => Some(zstd::bulk::Compressor::new(level)?),
            _ => None,
        };
        Ok(Self { compression, zstd, raw: Vec::new() })
    }

    /// The codec.
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// Appends a whole `BATCH` frame with id `id` holding `events` to `out`.
    pub fn encode(&mut self, id: u64, events: &[Event], out: &mut Vec<u8>) -> std::io::Result<Encoded> {
        self.raw.clear();
        encode_batch(events, &mut self.raw);
        let raw_len = self.raw.len();
        let raw_u32 = u32::try_from(raw_len)
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "batch larger than 4 GiB"))?;
        let count = events.len() as u32;
        let wire_len = match (self.compression, self.zstd.as_mut()) {
            (Compression::Zstd, Some(z)) => {
                let c = z.compress(&self.raw)?;
                encode_batch_frame(id, count, Compression::Zstd, raw_u32, &c, out);
                c.len()
            }
            (Compression::Lz4, _) => {
                let c = lz4_flex::block::compress(&self.raw);
                encode_batch_frame(id, count, Compression::Lz4, raw_u32, &c, out);
                c.len()
            }
            _ => {
                encode_batch_frame(id, count, Compression::None, raw_u32, &self.raw, out);
                raw_len
            }
        };
        Ok(Encoded { raw_len, wire_len })
    }
}

/// Decompresses `batch`'s payload, refusing more than `max_raw` bytes.
pub fn decompress(batch: &Batch, max_raw: u32) -> Result<Vec<u8>, ProtocolError> {
    if batch.raw_len > max_raw {
        return Err(ProtocolError::PayloadTooLarge { len: u64::from(batch.raw_len), max: u64::from(max_raw) });
    }
    let want = batch.raw_len as usize;
    let raw = match batch.compression {
        Compression::None => batch.payload.clone(),
        Compression::Zstd => zstd::bulk::decompress(&batch.payload, want)
            .map_err(|e| ProtocolError::Corrupt(format!("zstd: {e} (declared raw length {want})")))?,
        Compression::Lz4 => lz4_flex::block::decompress(&batch.payload, want)
            .map_err(|e| ProtocolError::Corrupt(format!("lz4: {e} (declared raw length {want})")))?,
    };
    if raw.len() != want {
        return Err(ProtocolError::Corrupt(format!(
            "payload decompressed to {} bytes, header declared {want}",
            raw.len()
        )));
    }
    Ok(raw)
}

/// Decompresses and decodes `batch` into events, checking the event count.
pub fn decode_events(batch: &Batch, max_raw: u32) -> Result<Vec<Event>, ProtocolError> {
    let raw = decompress(batch, max_raw)?;
    let events = decode_batch(&raw).map_err(|e| ProtocolError::Corrupt(e.to_string()))?;
    if events.len() != batch.events as usize {
        return Err(ProtocolError::Corrupt(format!(
            "batch {} holds {} events, header says {}",
            batch.id,
            events.len(),
            batch.events
        )));
    }
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{decode, Frame};
    use std::sync::Arc;

    fn events(n: usize) -> Vec<Event> {
        (0..n)
            .map(|i| {
                let mut e = Event::from_message(format!("2016-05-18 10:44:30:045 INFO LogGenerator lognumber {i}"));
                e.identity = Arc::new(sluice_core::Identity::new("acme", "web", "h1"));
                e.source = Arc::from("generator:gen");
                e
            })
            .collect()
    }

    fn frame_of(c: Compression, evs: &[Event]) -> (Batch, Encoded) {
        let mut enc = BatchEncoder::new(c, 3).unwrap();
        let mut out = Vec::new();
        let info = enc.encode(9, evs, &mut out).unwrap();
        let Some((Frame::Batch(b), used)) = decode(&out, 1 << 24).unwrap() else { panic!("not a batch") };
        assert_eq!(used, out.len());
        (b, info)
    }

    #[test]
    fn every_codec_roundtrips() {
        let evs = events(200);
        for c in [Compression::None, Compression::Zstd, Compression::Lz4] {
            let (b, info) = frame_of(c, &evs);
            assert_eq!(b.compression, c);
            assert_eq!(b.raw_len as usize, info.raw_len);
            assert_eq!(b.payload.len(), info.wire_len);
            if c != Compression::None {
                assert!(info.wire_len * 3 < info.raw_len, "{c:?} {info:?}");
            }
            assert_eq!(decode_events(&b, 1 << 24).unwrap(), evs);
        }
    }

    #[test]
    fn bombs_lies_and_garbage_are_errors() {
        let evs = events(50);
        // A declared raw length over the limit is refused before decompressing.
        let (b, _) = frame_of(Compression::Zstd, &evs);
        let e = decode_events(&b, 100).unwrap_err();
        assert!(e.to_string().starts_with("batch payload of "), "{e}");
        // A payload that expands beyond its declared length (a bomb) stops there.
        let bomb = zstd::bulk::compress(&vec![0u8; 10 << 20], 3).unwrap();
        let lie = Batch { id: 1, events: 1, compression: Compression::Zstd, raw_len: 1000, payload: bomb };
        assert!(decode_events(&lie, 1 << 24).unwrap_err().to_string().contains("zstd"), "bomb");
        let lz_bomb = lz4_flex::block::compress(&vec![0u8; 10 << 20]);
        let lie = Batch { id: 1, events: 1, compression: Compression::Lz4, raw_len: 1000, payload: lz_bomb };
        assert!(decode_events(&lie, 1 << 24).unwrap_err().to_string().contains("lz4"));
        // Fewer bytes than declared.
        let (mut b, _) = frame_of(Compression::None, &evs);
        b.raw_len += 1;
        assert!(decode_events(&b, 1 << 24).unwrap_err().to_string().contains("decompressed to"));
        // A wrong count.
        let (mut b, _) = frame_of(Compression::Lz4, &evs);
        b.events = 49;
        assert_eq!(
            decode_events(&b, 1 << 24).unwrap_err().to_string(),
            "corrupt batch payload: batch 9 holds 50 events, header says 49"
        );
        // Garbage.
        let g = Batch { id: 1, events: 1, compression: Compression::None, raw_len: 3, payload: vec![1, 200, 7] };
        assert!(decode_events(&g, 1 << 24).is_err());
        let g = Batch { id: 1, events: 1, compression: Compression::Zstd, raw_len: 3, payload: vec![1, 200, 7] };
        assert!(decode_events(&g, 1 << 24).is_err());
    }
}
