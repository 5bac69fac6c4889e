//! Where generated lines go: TCP, UDP, a file, or the agent protocol (a
//! `sluice` sink), each behind [`super::Transport`].

use super::*;

/// Appends `n` in decimal.
pub(super) fn push_decimal(n: usize, out: &mut Vec<u8>) {
    let d = crate::template::digits(n as u64);
    let at = out.len();
    out.resize(at + d, b'0');
    let mut v = n;
    for b in out[at..].iter_mut().rev() {
        *b = b'0' + (v % 10) as u8;
        v /= 10;
    }
}

/// TCP, newline-delimited or octet-counted; reconnects on errors.
pub(super) struct TcpOut {
    pub(super) addr: String,
    pub(super) framing: Framing,
    pub(super) stream: Option<TcpStream>,
    pub(super) buf: Vec<u8>,
    pub(super) retry_for: Duration,
}

impl TcpOut {
    pub(super) fn write_buf(&mut self, rec: &Recorder) -> Result<(), BenchError> {
        let started = std::time::Instant::now();
        let mut backoff = Duration::from_millis(50);
        loop {
            let attempt = match self.stream.as_mut() {
                Some(s) => s.write_all(&self.buf),
                None => TcpStream::connect(self.addr.as_str()).and_then(|mut s| {
                    s.set_nodelay(true)?;
                    let r = s.write_all(&self.buf);
                    self.stream = Some(s);
                    r
                }),
            };
            match attempt {
                Ok(()) => return Ok(()),
                Err(e) => {
                    self.stream = None;
                    if started.elapsed() >= self.retry_for {
                        return Err(BenchError::Io(e));
                    }
                    rec.retry();
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                }
            }
        }
    }
}

impl Transport for TcpOut {
    fn send(&mut self, r: &mut Renderer, b: &Batch, rec: &Arc<Recorder>) -> Result<Completion, BenchError> {
        self.buf.clear();
        for seq in b.seqs() {
            if self.framing == Framing::OctetCounting {
                push_decimal(r.len_of(seq), &mut self.buf);
                self.buf.push(b' ');
                r.render(seq, &mut self.buf);
            } else {
                r.render(seq, &mut self.buf);
                self.buf.push(b'\n');
            }
        }
        self.write_buf(rec)?;
        rec.add_bytes(self.buf.len());
        Ok(Completion::Done)
    }

    fn finish(&mut self, _: &Arc<Recorder>) -> Result<(), BenchError> {
        if let Some(s) = self.stream.take() {
            s.shutdown(std::net::Shutdown::Write)?;
        }
        Ok(())
    }
}

/// UDP: one datagram per event.
pub(super) struct UdpOut {
    pub(super) socket: UdpSocket,
    pub(super) buf: Vec<u8>,
}

impl Transport for UdpOut {
    fn send(&mut self, r: &mut Renderer, b: &Batch, rec: &Arc<Recorder>) -> Result<Completion, BenchError> {
        for seq in b.seqs() {
            self.buf.clear();
            r.render(seq, &mut self.buf);
            // A full socket buffer (ENOBUFS) is retried, never skipped.
            loop {
                match self.socket.send(&self.buf) {
                    Ok(_) => break,
                    Err(e) if e.raw_os_error() == Some(105) => std::thread::yield_now(),
                    Err(e) => return Err(e.into()),
                }
            }
            rec.add_bytes(self.buf.len());
        }
        Ok(Completion::Done)
    }

    fn finish(&mut self, _: &Arc<Recorder>) -> Result<(), BenchError> {
        Ok(())
    }
}

/// Appends lines to a file.
pub(super) struct FileOut {
    pub(super) file: std::fs::File,
    pub(super) buf: Vec<u8>,
}

impl Transport for FileOut {
    fn send(&mut self, r: &mut Renderer, b: &Batch, rec: &Arc<Recorder>) -> Result<Completion, BenchError> {
        self.buf.clear();
        for seq in b.seqs() {
            r.render(seq, &mut self.buf);
            self.buf.push(b'\n');
        }
        self.file.write_all(&self.buf)?;
        rec.add_bytes(self.buf.len());
        Ok(Completion::Done)
    }

    fn finish(&mut self, _: &Arc<Recorder>) -> Result<(), BenchError> {
        self.file.flush()?;
        Ok(())
    }
}

/// A sluice sink used as the generator's client: `sluice` (the agent
/// protocol, acknowledged asynchronously) or `elasticsearch` (`_bulk`,
/// done when the response arrives).
pub(super) struct SinkOut {
    pub(super) rt: tokio::runtime::Handle,
    pub(super) sink: Box<dyn Sink>,
    pub(super) acked: bool,
    pub(super) retry_for: Duration,
    pub(super) buf: Vec<u8>,
    pub(super) ends: Vec<usize>,
}

impl SinkOut {
    pub(super) fn new(
        rt: tokio::runtime::Handle,
        kind: &str,
        table: &str,
        acked: bool,
        retry_for: Duration,
    ) -> Result<Self, BenchError> {
        let spec = sluice_components::sinks::find(kind)
            .ok_or_else(|| BenchError::Invalid(format!("the {kind} sink is not in this build")))?;
        let value: toml::Value = toml::from_str(table).map_err(|e| BenchError::Invalid(e.to_string()))?;
        let cx = BuildContext::for_test("sink", &format!("bench.{kind}"));
        let sink = (spec.build)(value, &cx).map_err(|e| BenchError::Invalid(e.to_string()))?;
        Ok(Self { rt, sink, acked, retry_for, buf: Vec::new(), ends: Vec::new() })
    }

    pub(super) fn events(&mut self, r: &mut Renderer, b: &Batch) -> Result<Vec<Event>, BenchError> {
        self.buf.clear();
        self.ends.clear();
        for seq in b.seqs() {
            r.render(seq, &mut self.buf);
            self.ends.push(self.buf.len());
        }
        let bytes = bytes::Bytes::from(std::mem::take(&mut self.buf));
        let mut start = 0;
        let mut events = Vec::with_capacity(self.ends.len());
        for &end in &self.ends {
            let (e, _) = sluice_core::codec::event_from_json_bytes(&bytes.slice(start..end))
                .map_err(|e| BenchError::Invalid(format!("rendered event is not JSON: {e}")))?;
            events.push(e);
            start = end;
        }
        Ok(events)
    }
}

impl Transport for SinkOut {
    fn send(&mut self, r: &mut Renderer, b: &Batch, rec: &Arc<Recorder>) -> Result<Completion, BenchError> {
        let events = self.events(r, b)?;
        let raw: usize = self.ends.last().copied().unwrap_or(0);
        let started = std::time::Instant::now();
        let mut token = if self.acked {
            let (rec2, batch) = (Arc::clone(rec), *b);
            Some(AckToken::new(move |d| match d {
                sluice_core::ack::Delivery::Delivered => rec2.complete(&batch),
                sluice_core::ack::Delivery::Failed => rec2.fail(&batch),
            }))
        } else {
            None
        };
        loop {
            let res = if self.acked {
                self.rt.block_on(self.sink.write_acked(&events, &mut token))
            } else {
                self.rt.block_on(self.sink.write(&events))
            };
            match res {
                Ok(()) => break,
                Err(e) => {
                    if started.elapsed() >= self.retry_for {
                        return Err(BenchError::Invalid(format!("output failed for {:?}: {e}", self.retry_for)));
                    }
                    rec.retry();
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
        rec.add_bytes(raw);
        Ok(if self.acked { Completion::Pending } else { Completion::Done })
    }

    fn finish(&mut self, _: &Arc<Recorder>) -> Result<(), BenchError> {
        self.rt.block_on(self.sink.close()).map_err(|e| BenchError::Invalid(e.to_string()))
    }
}
