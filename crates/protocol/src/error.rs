//! Protocol errors: what goes wrong decoding frames and payloads, and the
//! error codes carried by `ERROR` frames.

/// The codes of an `ERROR` frame (see the spec's table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// No common protocol version.
    UnsupportedVersion,
    /// The token matches no configured token.
    BadToken,
    /// A claimed identity is not owned by the token.
    IdentityNotOwned,
    /// A frame or payload over the limits.
    Oversized,
    /// An undecodable payload, bad compression, or a count mismatch.
    CorruptPayload,
    /// Bad magic, unknown type, unexpected frame, malformed body.
    ProtocolViolation,
    /// A batch without credit or beyond the in-flight window.
    NoCredit,
    /// The receiver is stopping.
    ShuttingDown,
    /// The receiver is at its connection limit.
    TooManyConnections,
    /// Handshake or idle timeout.
    Timeout,
    /// A code this version does not know (kept for messages).
    Other(u16),
}

impl ErrorCode {
    /// The wire value.
    pub fn code(self) -> u16 {
        match self {
            Self::UnsupportedVersion => 1,
            Self::BadToken => 2,
            Self::IdentityNotOwned => 3,
            Self::Oversized => 4,
            Self::CorruptPayload => 5,
            Self::ProtocolViolation => 6,
            Self::NoCredit => 7,
            Self::ShuttingDown => 8,
            Self::TooManyConnections => 9,
            Self::Timeout => 10,
            Self::Other(c) => c,
        }
    }

    /// From the wire value.
    pub fn from_code(c: u16) -> Self {
        match c {
            1 => Self::UnsupportedVersion,
            2 => Self::BadToken,
            3 => Self::IdentityNotOwned,
            4 => Self::Oversized,
            5 => Self::CorruptPayload,
            6 => Self::ProtocolViolation,
            7 => Self::NoCredit,
            8 => Self::ShuttingDown,
            9 => Self::TooManyConnections,
            10 => Self::Timeout,
            c => Self::Other(c),
        }
    }

    /// The snake_case name used in the spec, logs and counters.
    pub fn name(self) -> &'static str {
        match self {
            Self::UnsupportedVersion => "unsupported_version",
            Self::BadToken => "bad_token",
            Self::IdentityNotOwned => "identity_not_owned",
            Self::Oversized => "oversized",
            Self::CorruptPayload => "corrupt_payload",
            Self::ProtocolViolation => "protocol_violation",
            Self::NoCredit => "no_credit",
            Self::ShuttingDown => "shutting_down",
            Self::TooManyConnections => "too_many_connections",
            Self::Timeout => "timeout",
            Self::Other(_) => "unknown_error",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Other(c) => write!(f, "unknown_error({c})"),
            _ => f.write_str(self.name()),
        }
    }
}

/// A protocol problem found while decoding, with the error code the
/// receiving side answers with.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    /// The frame does not start with `SL`.
    #[error("bad magic {0:02x?}: not a sluice agent protocol frame")]
    BadMagic([u8; 2]),
    /// A frame type this version does not know.
    #[error("unknown frame type {0:#04x}")]
    UnknownType(u8),
    /// A frame longer than allowed for its type.
    #[error("{kind} frame of {len} bytes exceeds the limit of {max} bytes")]
    FrameTooLarge {
        /// Frame type name.
        kind: &'static str,
        /// Announced body length.
        len: u64,
        /// The limit.
        max: u64,
    },
    /// A body that does not match its frame type's layout.
    #[error("malformed {kind} frame: {reason}")]
    Malformed {
        /// Frame type name.
        kind: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// A batch payload that is too large once decompressed.
    #[error("batch payload of {len} bytes exceeds max_batch_bytes ({max})")]
    PayloadTooLarge {
        /// Declared or actual length.
        len: u64,
        /// The limit.
        max: u64,
    },
    /// A payload that does not decompress or decode.
    #[error("corrupt batch payload: {0}")]
    Corrupt(String),
    /// The stream ended in the middle of a frame.
    #[error("connection closed in the middle of a frame ({got} of {want} bytes)")]
    Truncated {
        /// Bytes received.
        got: usize,
        /// Bytes the frame needed.
        want: usize,
    },
    /// An I/O error on the stream.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
}

impl ProtocolError {
    /// The `ERROR` code a receiver answers this problem with.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::BadMagic(_) | Self::UnknownType(_) | Self::Malformed { .. } | Self::Truncated { .. } => {
                ErrorCode::ProtocolViolation
            }
            Self::FrameTooLarge { .. } | Self::PayloadTooLarge { .. } => ErrorCode::Oversized,
            Self::Corrupt(_) => ErrorCode::CorruptPayload,
            Self::Io(_) => ErrorCode::ProtocolViolation,
        }
    }
}
