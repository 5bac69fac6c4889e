//! One agent connection: the `HELLO` handshake (token, identities), the
//! conversation of batches and credits, queueing and acknowledgements.

use super::*;

/// Tells a sender beyond `max_connections` why, spending at most a second.
pub(super) async fn refuse(mut stream: tokio::net::TcpStream, frame: Frame) {
    let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(&frame.to_bytes())).await;
}

/// Why a connection ends with an error frame.
pub(super) struct Refusal {
    pub(super) code: ErrorCode,
    pub(super) reason: String,
}

impl Refusal {
    pub(super) fn new(code: ErrorCode, reason: impl Into<String>) -> Self {
        Self { code, reason: reason.into() }
    }
}

impl From<ProtocolError> for Refusal {
    fn from(e: ProtocolError) -> Self {
        Self { code: e.code(), reason: e.to_string() }
    }
}

/// A decoded batch waiting for the queue.
pub(super) struct Pending {
    pub(super) id: u64,
    pub(super) events: Vec<Event>,
}

pub(super) async fn serve<S>(
    stream: S,
    peer: SocketAddr,
    cx: &SourceContext,
    s: &Arc<Settings>,
    counters: &Arc<Counters>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (rd, wr) = tokio::io::split(stream);
    let mut reader = FrameReader::new(rd, s.max_batch);
    // Frames to the sender go through one writer task.
    let (out_tx, out_rx) = mpsc::channel::<Frame>(64 + s.max_in_flight as usize);
    let writer = tokio::spawn(write_loop(wr, out_rx));
    let result = converse(&mut reader, &out_tx, peer, cx, s, counters).await;
    let failed = result.is_err();
    if let Err(r) = result {
        counters.count(r.code);
        tracing::debug!(source = %cx.id, %peer, code = %r.code, reason = %r.reason, "closing agent connection");
        let _ = out_tx.send(Frame::Error { code: r.code, reason: r.reason }).await;
    }
    drop(out_tx);
    let _ = writer.await;
    if failed {
        // Let the error frame reach the sender before the socket closes.
        reader.discard(1 << 20, Duration::from_millis(500)).await;
    }
}

pub(super) async fn write_loop<W: AsyncWrite + Unpin>(mut w: W, mut rx: mpsc::Receiver<Frame>) {
    let mut buf = Vec::with_capacity(4096);
    while let Some(f) = rx.recv().await {
        buf.clear();
        f.encode(&mut buf);
        // Coalesce what is already waiting (acks of consecutive batches).
        while let Ok(f) = rx.try_recv() {
            f.encode(&mut buf);
        }
        if w.write_all(&buf).await.is_err() || w.flush().await.is_err() {
            return;
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(2), w.shutdown()).await;
}

/// Reads the `HELLO` and checks version, token and identity.
/// `Ok(None)`: the peer closed without sending anything (a TCP health
/// check), which is not an error.
pub(super) async fn handshake<R: AsyncRead + Unpin>(
    reader: &mut FrameReader<R>,
    s: &Settings,
) -> Result<Option<(Hello, usize)>, Refusal> {
    let frame = match tokio::time::timeout(s.handshake_timeout, reader.read()).await {
        Err(_) => return Err(Refusal::new(ErrorCode::Timeout, format!("no HELLO within {:?}", s.handshake_timeout))),
        Ok(r) => r?,
    };
    let hello = match frame {
        Some(Frame::Hello(h)) => h,
        Some(other) => {
            return Err(Refusal::new(ErrorCode::ProtocolViolation, format!("expected HELLO, got {}", other.kind())))
        }
        None => return Ok(None),
    };
    if !(hello.min_version..=hello.max_version).contains(&VERSION) {
        return Err(Refusal::new(
            ErrorCode::UnsupportedVersion,
            format!("sender speaks versions {}..={}, receiver speaks {VERSION}", hello.min_version, hello.max_version),
        ));
    }
    // Compare against every token so timing does not tell which one matched.
    let mut found = None;
    for (i, t) in s.tokens.iter().enumerate() {
        if ct_eq(t.secret.as_bytes(), hello.token.as_bytes()) {
            found = Some(i);
        }
    }
    let Some(ti) = found else {
        return Err(Refusal::new(ErrorCode::BadToken, "the token matches no configured token"));
    };
    let token = &s.tokens[ti];
    let id = Identity::new(&hello.group, &hello.subgroup, &hello.host);
    if !token.owns(&id) {
        return Err(Refusal::new(ErrorCode::IdentityNotOwned, not_owned(token, &id)));
    }
    Ok(Some((hello, ti)))
}

pub(super) fn not_owned(t: &Token, id: &Identity) -> String {
    format!(
        "identity group {:?} subgroup {:?} is not owned by token {:?} (group {:?}{})",
        id.group,
        id.subgroup,
        t.name,
        t.group,
        if t.subgroups.is_empty() { String::new() } else { format!(", subgroups {:?}", t.subgroups) }
    )
}

pub(super) async fn converse<R: AsyncRead + Unpin>(
    reader: &mut FrameReader<R>,
    out: &mpsc::Sender<Frame>,
    peer: SocketAddr,
    cx: &SourceContext,
    s: &Arc<Settings>,
    counters: &Arc<Counters>,
) -> Result<(), Refusal> {
    let (hello, ti) = tokio::select! {
        _ = cx.shutdown.cancelled() => return Err(Refusal::new(ErrorCode::ShuttingDown, "the receiver is stopping")),
        r = handshake(reader, s) => match r? {
            Some(h) => h,
            None => return Ok(()),
        },
    };
    let token = &s.tokens[ti];
    let mode = hello.mode;
    let hello_id = Arc::new(Identity::new(&hello.group, &hello.subgroup, &hello.host));
    tracing::debug!(source = %cx.id, %peer, token = %token.name, group = %hello.group, subgroup = %hello.subgroup, host = %hello.host, agent = %hello.agent, ?mode, "agent connected");
    let initial = if mode == Mode::Credit { s.initial_credits } else { 0 };
    counters.credits.add(u64::from(initial));
    let ok = Frame::HelloOk(HelloOk {
        version: VERSION,
        mode,
        max_batch_bytes: s.max_batch,
        max_in_flight: s.max_in_flight,
        initial_credits: initial,
        heartbeat_ms: u32::try_from(s.heartbeat.as_millis()).unwrap_or(u32::MAX),
        receiver: s.name.clone(),
    });
    if out.send(ok).await.is_err() {
        return Ok(());
    }

    // The queue task hands batches to the pipeline one at a time; the ack
    // task answers each when it is queued (or, in `delivered` mode, when the
    // pipeline's sinks acknowledged it).
    let (batch_tx, batch_rx) = mpsc::channel::<Pending>(s.max_in_flight as usize);
    let (done_tx, done_rx) = mpsc::unbounded_channel::<Done>();
    // Credits the sender holds (credit mode) and batches not yet acked.
    let held = Arc::new(AtomicUsize::new(initial as usize));
    let unacked = Arc::new(AtomicUsize::new(0));
    let stop_queue = CancellationToken::new();
    let stop_acks = CancellationToken::new();
    let queue_task = tokio::spawn(queue_loop(batch_rx, done_tx, cx.clone(), s.ack, stop_queue.clone()));
    let ack_task = tokio::spawn(ack_loop(
        done_rx,
        out.clone(),
        cx.clone(),
        Arc::clone(s),
        Arc::clone(counters),
        mode,
        Arc::clone(&held),
        Arc::clone(&unacked),
        stop_acks.clone(),
    ));
    let idle = s.heartbeat * 3;
    let mut cache: Option<Arc<Identity>> = None;
    let result = loop {
        let frame = tokio::select! {
            _ = cx.shutdown.cancelled() => break Err(Refusal::new(ErrorCode::ShuttingDown, "the receiver is stopping")),
            r = tokio::time::timeout(idle, reader.read()) => match r {
                Err(_) => break Err(Refusal::new(ErrorCode::Timeout, format!("no frame for {idle:?}"))),
                Ok(Err(e)) => break Err(e.into()),
                Ok(Ok(None)) => break Ok(()),
                Ok(Ok(Some(f))) => f,
            },
        };
        match frame {
            Frame::Batch(b) => {
                if unacked.load(Ordering::SeqCst) >= s.max_in_flight as usize {
                    break Err(Refusal::new(
                        ErrorCode::NoCredit,
                        format!("batch {} beyond max_in_flight ({})", b.id, s.max_in_flight),
                    ));
                }
                if mode == Mode::Credit {
                    let ok = held.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |h| h.checked_sub(1)).is_ok();
                    if !ok {
                        break Err(Refusal::new(ErrorCode::NoCredit, format!("batch {} sent without a credit", b.id)));
                    }
                }
                counters.batches.inc();
                cx.metrics.bytes_in.add(b.payload.len() as u64);
                let mut events = match decode_events(&b, s.max_batch) {
                    Ok(e) => e,
                    Err(e) => break Err(e.into()),
                };
                if let Err(r) = check_identities(&mut events, token, &hello_id, &mut cache) {
                    break Err(r);
                }
                cx.metrics.events_in.add(events.len() as u64);
                unacked.fetch_add(1, Ordering::SeqCst);
                if batch_tx.send(Pending { id: b.id, events }).await.is_err() {
                    break Ok(());
                }
            }
            Frame::Ping { nonce } => {
                let fill = fill_to_wire(cx.out.fill_ratio());
                if out.send(Frame::Pong { nonce, fill }).await.is_err() {
                    break Ok(());
                }
            }
            Frame::Pong { .. } => {}
            Frame::Error { code, reason } => {
                tracing::debug!(source = %cx.id, %peer, %code, %reason, "sender reported an error");
                break Ok(());
            }
            other => {
                break Err(Refusal::new(
                    ErrorCode::ProtocolViolation,
                    format!("unexpected {} frame from a sender", other.kind()),
                ))
            }
        }
    };
    // Batches already accepted are still queued and acknowledged (a closed
    // queue answers them with retry acks) before the connection closes.
    drop(batch_tx);
    if result.is_err() {
        stop_queue.cancel();
    }
    let _ = queue_task.await;
    // Acks already known go out; batches still waiting for their delivery
    // (`delivered` mode) are not waited for: the sender re-sends them.
    stop_acks.cancel();
    let _ = ack_task.await;
    result
}

/// Gives every event an owned identity: empty groups take the `HELLO`
/// identity, others must belong to the token.
pub(super) fn check_identities(
    events: &mut [Event],
    token: &Token,
    hello_id: &Arc<Identity>,
    cache: &mut Option<Arc<Identity>>,
) -> Result<(), Refusal> {
    for e in events.iter_mut() {
        if e.identity.group.is_empty() {
            e.identity = Arc::clone(hello_id);
            continue;
        }
        if cache.as_ref().is_some_and(|c| Arc::ptr_eq(c, &e.identity) || **c == *e.identity) {
            continue;
        }
        if !token.may_carry(&e.identity) {
            return Err(Refusal::new(ErrorCode::IdentityNotOwned, not_owned(token, &e.identity)));
        }
        *cache = Some(Arc::clone(&e.identity));
    }
    Ok(())
}

/// A batch's outcome, for the ack task.
pub(super) struct Done {
    pub(super) id: u64,
    pub(super) events: u64,
    pub(super) queued: bool,
}

/// Hands batches to the pipeline one at a time and reports each outcome to
/// the ack task: at once after `send` (`queued`), or when the batch's token
/// resolves (`delivered`).
pub(super) async fn queue_loop(
    mut rx: mpsc::Receiver<Pending>,
    done: mpsc::UnboundedSender<Done>,
    cx: SourceContext,
    ack: AckMode,
    stop: CancellationToken,
) {
    while let Some(p) = rx.recv().await {
        let (id, events) = (p.id, p.events.len() as u64);
        let sent = match ack {
            AckMode::Queued => tokio::select! {
                r = cx.out.send(p.events) => r.is_ok(),
                // The connection failed: the sender will resend; nothing more to queue.
                _ = stop.cancelled() => return,
            },
            AckMode::Delivered => {
                let tx = done.clone();
                let token = sluice_core::AckToken::new(move |d| {
                    let _ = tx.send(Done { id, events, queued: d == sluice_core::Delivery::Delivered });
                });
                tokio::select! {
                    // On `Err` the token was failed: the callback reports a retry.
                    r = cx.out.send_acked(p.events, token) => { let _ = r; continue; }
                    _ = stop.cancelled() => return,
                }
            }
        };
        if done.send(Done { id, events, queued: sent }).is_err() {
            return;
        }
    }
}

/// Answers every batch with an `ACK` carrying the queue fill and, in credit
/// mode, a credit (withheld while the queue is above the high-water mark and
/// granted with a `CREDIT` frame once it drains).
#[allow(clippy::too_many_arguments)]
pub(super) async fn ack_loop(
    mut rx: mpsc::UnboundedReceiver<Done>,
    out: mpsc::Sender<Frame>,
    cx: SourceContext,
    s: Arc<Settings>,
    counters: Arc<Counters>,
    mode: Mode,
    held: Arc<AtomicUsize>,
    unacked: Arc<AtomicUsize>,
    stop: CancellationToken,
) {
    let mut withheld: u32 = 0;
    let mut tick = tokio::time::interval(Duration::from_millis(50));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut stopping = false;
    loop {
        let d = if stopping {
            // Answer what is already known, then end.
            match rx.try_recv() {
                Ok(d) => d,
                Err(_) => return,
            }
        } else {
            tokio::select! {
                d = rx.recv() => match d { Some(d) => d, None => return },
                _ = stop.cancelled() => { stopping = true; continue; }
                _ = tick.tick(), if withheld > 0 => {
                    let fill = cx.out.fill_ratio().unwrap_or(0.0);
                    if fill < s.high_water {
                        held.fetch_add(withheld as usize, Ordering::SeqCst);
                        counters.credits.add(u64::from(withheld));
                        let f = Frame::Credit { credits: withheld, fill: fill_to_wire(Some(fill)) };
                        withheld = 0;
                        if out.send(f).await.is_err() { return; }
                    }
                    continue;
                }
            }
        };
        let fill = cx.out.fill_ratio();
        let status = if d.queued {
            cx.metrics.events_out.add(d.events);
            counters.acks.inc();
            AckStatus::Queued
        } else {
            counters.retry_acks.inc();
            AckStatus::Retry
        };
        let mut credits = 0;
        if mode == Mode::Credit {
            if fill.unwrap_or(0.0) < s.high_water && withheld == 0 {
                credits = 1;
                held.fetch_add(1, Ordering::SeqCst);
                counters.credits.inc();
            } else {
                withheld += 1;
            }
        }
        unacked.fetch_sub(1, Ordering::SeqCst);
        if out.send(Frame::Ack(Ack { id: d.id, status, fill: fill_to_wire(fill), credits })).await.is_err() {
            return;
        }
    }
}
