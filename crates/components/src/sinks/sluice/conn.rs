//! A connection task: connect (TCP, TLS, `HELLO`), run one session of
//! frames and acknowledgements, and report to the dispatcher why it ended.

use super::*;

pub(super) async fn connection_task(
    key: u64,
    r: Arc<Receiver>,
    s: Arc<Settings>,
    mut rx: mpsc::UnboundedReceiver<Outgoing>,
    events: mpsc::UnboundedSender<ConnEvent>,
    cancel: CancellationToken,
) {
    let mut backoff = s.backoff_min;
    let seed =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1);
    let mut jitter = Jitter((seed ^ (key + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1);
    let mut session = 0u64;
    let mut failures = 0u64;
    loop {
        let attempt = tokio::select! {
            _ = cancel.cancelled() => return,
            a = tokio::time::timeout(s.connect_timeout, connect(&r.address, &s)) => a,
        };
        match attempt {
            Ok(Ok(conn)) => {
                session += 1;
                r.connects.inc();
                if failures > 0 {
                    tracing::info!(sink = %s.sink_id, receiver = %r.address, after_failures = failures, "receiver reconnected");
                }
                failures = 0;
                backoff = s.backoff_min;
                let Conn { reader, writer, window, credits } = conn;
                if events.send(ConnEvent::Connected { key, session, window, credits }).is_err() {
                    return;
                }
                let reason = run_session(key, session, reader, writer, &mut rx, &events, &s, &r, &cancel).await;
                let _ = events.send(ConnEvent::Disconnected { key, session });
                if cancel.is_cancelled() {
                    return;
                }
                r.metrics.errors.inc();
                tracing::warn!(sink = %s.sink_id, receiver = %r.address, reason = %reason, "receiver connection lost");
            }
            Ok(Err(e)) => {
                failures += 1;
                r.metrics.errors.inc();
                // Log the first failure and then every 10th, not every retry.
                if failures == 1 || failures.is_multiple_of(10) {
                    if e.starts_with("refused: bad_token") || e.starts_with("refused: identity_not_owned") {
                        tracing::error!(sink = %s.sink_id, receiver = %r.address, error = %e, failures, "receiver refused this agent");
                    } else {
                        tracing::warn!(sink = %s.sink_id, receiver = %r.address, error = %e, failures, "cannot connect to receiver");
                    }
                }
            }
            Err(_) => {
                failures += 1;
                r.metrics.errors.inc();
                if failures == 1 || failures.is_multiple_of(10) {
                    tracing::warn!(sink = %s.sink_id, receiver = %r.address, timeout = ?s.connect_timeout, failures, "connecting to receiver timed out");
                }
            }
        }
        let wait = backoff.mul_f64(jitter.factor());
        backoff = (backoff * 2).min(s.backoff_max);
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

pub(super) type BoxRead = Box<dyn AsyncRead + Unpin + Send>;
pub(super) type BoxWrite = Box<dyn AsyncWrite + Unpin + Send>;

pub(super) struct Conn {
    pub(super) reader: FrameReader<BoxRead>,
    pub(super) writer: BoxWrite,
    pub(super) window: u32,
    pub(super) credits: u32,
}

/// Connects, runs TLS if configured, and does the `HELLO` exchange.
pub(super) async fn connect(address: &str, s: &Settings) -> Result<Conn, String> {
    let tcp = TcpStream::connect(address).await.map_err(|e| format!("connect {address}: {e}"))?;
    let _ = tcp.set_nodelay(true);
    let (rd, mut wr): (BoxRead, BoxWrite) = match &s.tls {
        None => {
            let (r, w) = tcp.into_split();
            (Box::new(r), Box::new(w))
        }
        Some((conn, name)) => {
            let name = match name {
                Some(n) => n.clone(),
                None => {
                    let h = address.rsplit_once(':').map_or(address, |(h, _)| h);
                    let h = h.trim_start_matches('[').trim_end_matches(']').to_string();
                    ServerName::try_from(h).map_err(|e| format!("tls name for {address}: {e}"))?
                }
            };
            let tls = conn.connect(name, tcp).await.map_err(|e| format!("tls handshake with {address}: {e}"))?;
            let (r, w) = tokio::io::split(tls);
            (Box::new(r), Box::new(w))
        }
    };
    wr.write_all(&Frame::Hello(s.hello.clone()).to_bytes()).await.map_err(|e| format!("send HELLO: {e}"))?;
    wr.flush().await.map_err(|e| format!("send HELLO: {e}"))?;
    let mut reader = FrameReader::new(rd, 1 << 16);
    match reader.read().await {
        Ok(Some(Frame::HelloOk(ok))) => {
            if ok.version != VERSION {
                return Err(format!("receiver chose version {} (we speak {VERSION})", ok.version));
            }
            let window = s.window.min(ok.max_in_flight.max(1));
            let credits = if s.hello.mode == Mode::Credit { ok.initial_credits } else { 0 };
            Ok(Conn { reader, writer: wr, window, credits })
        }
        Ok(Some(Frame::Error { code, reason })) => Err(format!("refused: {code}: {reason}")),
        Ok(Some(other)) => Err(format!("expected HELLO_OK, got {}", other.kind())),
        Ok(None) => Err("closed before HELLO_OK".into()),
        Err(e) => Err(format!("reading HELLO_OK: {e}")),
    }
}

/// Runs one connected session until it fails; returns why.
#[allow(clippy::too_many_arguments)]
pub(super) async fn run_session(
    key: u64,
    session: u64,
    mut reader: FrameReader<BoxRead>,
    mut writer: BoxWrite,
    rx: &mut mpsc::UnboundedReceiver<Outgoing>,
    events: &mpsc::UnboundedSender<ConnEvent>,
    s: &Settings,
    r: &Receiver,
    cancel: &CancellationToken,
) -> String {
    // Reading a frame is not cancel-safe: a task reads and forwards.
    let (ftx, mut frx) = mpsc::channel::<Result<Option<Frame>, String>>(64);
    let read_task = tokio::spawn(async move {
        loop {
            let r = reader.read().await.map_err(|e| e.to_string());
            let end = !matches!(r, Ok(Some(_)));
            if ftx.send(r).await.is_err() || end {
                return;
            }
        }
    });
    let mut ping = tokio::time::interval(s.heartbeat);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_heard = Instant::now();
    let mut nonce = 0u64;
    // Batches written in this session and not acknowledged yet, oldest first.
    let mut unacked: VecDeque<(u64, Instant)> = VecDeque::new();
    let reason = loop {
        tokio::select! {
            _ = cancel.cancelled() => break "sink stopped".to_string(),
            f = frx.recv() => {
                last_heard = Instant::now();
                let ev = match f {
                    Some(Ok(Some(Frame::Ack(a)))) => {
                        if let Some(i) = unacked.iter().position(|(id, _)| *id == a.id) {
                            unacked.remove(i);
                        }
                        ConnEvent::Acked { key, session, id: a.id, status: a.status, fill: a.fill, credits: a.credits }
                    }
                    Some(Ok(Some(Frame::Credit { credits, fill }))) => ConnEvent::Credit { key, session, credits, fill },
                    Some(Ok(Some(Frame::Pong { fill, .. }))) => ConnEvent::Fill { key, session, fill },
                    Some(Ok(Some(Frame::Ping { nonce }))) => {
                        let pong = Frame::Pong { nonce, fill: sluice_protocol::FILL_UNKNOWN }.to_bytes();
                        if let Err(e) = write(&mut writer, &pong, s.write_timeout).await { break e; }
                        continue;
                    }
                    Some(Ok(Some(Frame::Error { code, reason }))) => break format!("receiver error {code}: {reason}"),
                    Some(Ok(Some(other))) => break format!("unexpected {} frame from the receiver", other.kind()),
                    Some(Ok(None)) | None => break "closed by the receiver".to_string(),
                    Some(Err(e)) => break e,
                };
                if events.send(ev).is_err() { break "sink stopped".to_string(); }
            }
            out = rx.recv() => {
                let Some(out) = out else { break "sink stopped".to_string() };
                if out.session != session {
                    continue; // meant for an earlier, failed session: already re-queued
                }
                if let Err(e) = write(&mut writer, &out.frame, s.write_timeout).await { break e; }
                unacked.push_back((out.id, Instant::now()));
            }
            _ = ping.tick() => {
                if last_heard.elapsed() > s.heartbeat * 3 {
                    break format!("no frame from the receiver for {:?}", last_heard.elapsed());
                }
                if let (Some(limit), Some((id, sent))) = (s.ack_timeout, unacked.front()) {
                    if sent.elapsed() > limit {
                        r.ack_timeouts.inc();
                        break format!("batch {id} not acknowledged within ack_timeout ({limit:?})");
                    }
                }
                nonce += 1;
                if let Err(e) = write(&mut writer, &Frame::Ping { nonce }.to_bytes(), s.write_timeout).await { break e; }
            }
        }
    };
    read_task.abort();
    reason
}

pub(super) async fn write(w: &mut BoxWrite, bytes: &[u8], timeout: Duration) -> Result<(), String> {
    match tokio::time::timeout(timeout, async {
        w.write_all(bytes).await?;
        w.flush().await
    })
    .await
    {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(format!("write: {e}")),
        Err(_) => Err(format!("write timed out after {timeout:?}")),
    }
}
