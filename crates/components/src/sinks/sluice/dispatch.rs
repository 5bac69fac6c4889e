//! The dispatcher: one task per sink that picks a receiver per batch
//! ([`super::balancer`]), keeps the pool (slow start, backoff, drain on
//! reload) and fails batches over when a connection dies.

use super::*;

/// A frame for a connection task, tagged with the session it was meant for.
pub(super) struct Outgoing {
    pub(super) session: u64,
    /// The batch's id (its `ACK` names it).
    pub(super) id: u64,
    pub(super) frame: Arc<Vec<u8>>,
}

/// What connection tasks tell the dispatcher (`key` names the slot).
pub(super) enum ConnEvent {
    Connected { key: u64, session: u64, window: u32, credits: u32 },
    Acked { key: u64, session: u64, id: u64, status: AckStatus, fill: u16, credits: u32 },
    Credit { key: u64, session: u64, credits: u32, fill: u16 },
    Fill { key: u64, session: u64, fill: u16 },
    Disconnected { key: u64, session: u64 },
}

/// One member of the pool as the dispatcher sees it.
pub(super) struct Slot {
    pub(super) key: u64,
    pub(super) receiver: Arc<Receiver>,
    pub(super) weight: u32,
    /// `false`: draining (no new batch; removed once nothing is in flight).
    pub(super) wanted: bool,
    pub(super) available: bool,
    pub(super) connected_before: bool,
    pub(super) session: u64,
    pub(super) window: u32,
    pub(super) credits: u32,
    pub(super) fill: Option<f64>,
    pub(super) in_flight: HashMap<u64, Job>,
    pub(super) conn: mpsc::UnboundedSender<Outgoing>,
    pub(super) cancel: CancellationToken,
    pub(super) health: Health,
}

pub(super) struct Dispatcher {
    pub(super) balancer: Balancer,
    pub(super) slots: Vec<Slot>,
    pub(super) next_key: u64,
    /// Batches whose receiver failed: sent before new ones.
    pub(super) retry: VecDeque<Job>,
    /// A new batch waiting for room.
    pub(super) held: Option<Job>,
    pub(super) counters: Arc<SinkCounters>,
    pub(super) settings: Arc<Settings>,
    pub(super) pool: Arc<Pool>,
    pub(super) receivers: ReceiverCache,
    pub(super) cx: BuildContext,
    pub(super) events: mpsc::UnboundedSender<ConnEvent>,
    pub(super) cancel: CancellationToken,
    pub(super) rng: u64,
    /// Members joining after the start begin with a slow-start.
    pub(super) started: bool,
}

impl Dispatcher {
    pub(super) fn slot(&mut self, key: u64) -> Option<usize> {
        self.slots.iter().position(|s| s.key == key)
    }

    /// Brings the slots in line with the pool's wanted members: connects new
    /// ones, drains the ones no longer wanted, removes drained ones.
    pub(super) fn reconcile(&mut self) {
        let wanted = self.pool.wanted();
        let now = Instant::now();
        for m in &wanted {
            if let Some(s) = self.slots.iter_mut().find(|s| s.receiver.address == m.address) {
                if !s.wanted {
                    tracing::info!(sink = %self.settings.sink_id, receiver = %m.address, "receiver wanted again; drain cancelled");
                }
                s.wanted = true;
                s.weight = m.weight;
                continue;
            }
            let receiver = Arc::clone(
                self.receivers
                    .lock()
                    .entry(m.address.clone())
                    .or_insert_with(|| Arc::new(Receiver::new(&m.address, &self.cx))),
            );
            let key = self.next_key;
            self.next_key += 1;
            let (tx, rx) = mpsc::unbounded_channel::<Outgoing>();
            let cancel = self.cancel.child_token();
            tokio::spawn(connection_task(
                key,
                Arc::clone(&receiver),
                Arc::clone(&self.settings),
                rx,
                self.events.clone(),
                cancel.clone(),
            ));
            let mut health = Health::default();
            if self.started {
                health.returned(now);
                tracing::info!(sink = %self.settings.sink_id, receiver = %m.address, weight = m.weight, "receiver added");
            }
            self.slots.push(Slot {
                key,
                receiver,
                weight: m.weight,
                wanted: true,
                available: false,
                connected_before: false,
                session: 0,
                window: 0,
                credits: 0,
                fill: None,
                in_flight: HashMap::new(),
                conn: tx,
                cancel,
                health,
            });
        }
        for s in self.slots.iter_mut() {
            if s.wanted && !wanted.iter().any(|m| m.address == s.receiver.address) {
                s.wanted = false;
                tracing::info!(sink = %self.settings.sink_id, receiver = %s.receiver.address, in_flight = s.in_flight.len(), "draining receiver: no new batches");
            }
        }
        self.remove_drained();
    }

    pub(super) fn remove_drained(&mut self) {
        let sink = &self.settings.sink_id;
        self.slots.retain(|s| {
            if s.wanted || !s.in_flight.is_empty() {
                return true;
            }
            s.cancel.cancel();
            s.receiver.g_state.set(4);
            s.receiver.g_in_flight.set(0);
            tracing::info!(sink = %sink, receiver = %s.receiver.address, "receiver drained and removed");
            false
        });
    }

    pub(super) fn candidates(&mut self, now: Instant) -> Vec<Candidate> {
        self.slots
            .iter_mut()
            .map(|s| {
                let ejected = s.health.ejected(now);
                Candidate {
                    available: s.available && s.wanted && !ejected,
                    in_flight: s.in_flight.len() as u32,
                    window: s.window,
                    weight: s.weight,
                    fill: s.fill,
                    credits: s.credits,
                }
            })
            .collect()
    }

    pub(super) fn random01(&mut self) -> f64 {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        (x >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Sends `job` to a receiver, or gives it back when none can take it.
    pub(super) fn place(&mut self, mut job: Job) -> Option<Job> {
        let now = Instant::now();
        let mut cands = self.candidates(now);
        let Some(mut idx) = self.balancer.pick(&cands) else { return Some(job) };
        // Slow-start: a returning receiver takes only part of what it is given.
        let admission = self.slots[idx].health.admission(now, self.settings.slow_start);
        if admission < 1.0 && self.random01() >= admission {
            cands[idx].available = false;
            if let Some(other) = self.balancer.pick(&cands) {
                idx = other;
            }
        }
        let s = &mut self.slots[idx];
        if self.balancer.algorithm() == Algorithm::Credit {
            s.credits = s.credits.saturating_sub(1);
        }
        if s.conn.send(Outgoing { session: s.session, id: job.id, frame: Arc::clone(&job.frame) }).is_err() {
            // The task is gone (cancelled): keep the job.
            s.available = false;
            return Some(job);
        }
        s.receiver.sent.inc();
        job.sent_at = Instant::now();
        s.in_flight.insert(job.id, job);
        None
    }

    /// Places retried batches first, then the held new one.
    pub(super) fn place_all(&mut self) {
        while let Some(job) = self.retry.pop_front() {
            if let Some(back) = self.place(job) {
                self.retry.push_front(back);
                return;
            }
        }
        if let Some(job) = self.held.take() {
            self.held = self.place(job);
        }
    }

    pub(super) fn fail_over(&mut self, i: usize) {
        let s = &mut self.slots[i];
        s.available = false;
        s.credits = 0;
        s.fill = None;
        let n = s.in_flight.len() as u64;
        if n > 0 {
            s.receiver.failed.add(n);
            self.counters.resent.add(n);
            tracing::warn!(sink = %self.settings.sink_id, receiver = %s.receiver.address, batches = n, "receiver failed; re-sending its unacknowledged batches to the others");
        }
        let mut jobs: Vec<Job> = s.in_flight.drain().map(|(_, j)| j).collect();
        jobs.sort_by_key(|j| j.id);
        for j in jobs.into_iter().rev() {
            self.retry.push_front(j);
        }
    }

    /// Counts a failure of slot `i`; ejects it when it reached the
    /// threshold and the pool can spare it.
    pub(super) fn failure(&mut self, i: usize) {
        let Some(cfg) = self.settings.outlier.clone() else { return };
        if !self.slots[i].health.failure(&cfg) {
            return;
        }
        let now = Instant::now();
        let members = self.slots.iter().filter(|s| s.wanted).count();
        let ejected = self.slots.iter().filter(|s| s.wanted && s.health.is_ejected(now)).count();
        let s = &mut self.slots[i];
        if s.health.is_ejected(now) {
            return;
        }
        if ejected >= cfg.max_ejected(members) {
            tracing::debug!(sink = %self.settings.sink_id, receiver = %s.receiver.address, "outlier not ejected: max_ejected_percent reached");
            return;
        }
        let d = s.health.eject(now, &cfg);
        s.receiver.ejections.inc();
        tracing::warn!(sink = %self.settings.sink_id, receiver = %s.receiver.address, for_ = ?d, "receiver ejected: too many failures or slow acks in a row");
    }

    pub(super) fn handle(&mut self, ev: ConnEvent) {
        match ev {
            ConnEvent::Connected { key, session, window, credits } => {
                let Some(i) = self.slot(key) else { return };
                let s = &mut self.slots[i];
                s.available = true;
                s.session = session;
                s.window = window;
                s.credits = credits;
                s.fill = None;
                if s.connected_before {
                    s.health.returned(Instant::now());
                }
                s.connected_before = true;
            }
            ConnEvent::Acked { key, session, id, status, fill, credits } => {
                let Some(i) = self.slot(key) else { return };
                let slow_ack = self.settings.outlier.as_ref().map(|o| o.slow_ack.0).filter(|d| !d.is_zero());
                let s = &mut self.slots[i];
                if s.session != session {
                    return;
                }
                s.fill = fill_from_wire(fill);
                s.credits = s.credits.saturating_add(credits);
                let Some(job) = s.in_flight.remove(&id) else { return };
                match status {
                    AckStatus::Queued => {
                        let r = &s.receiver;
                        let lat = job.sent_at.elapsed();
                        r.acked.inc();
                        r.metrics.events_out.add(job.events);
                        r.latency_total.add(u64::try_from(lat.as_micros()).unwrap_or(u64::MAX));
                        r.latency.record(lat);
                        if let Some(t) = job.ack {
                            t.delivered();
                        }
                        if slow_ack.is_some_and(|d| lat > d) {
                            self.failure(i);
                        } else {
                            s.health.success();
                        }
                    }
                    AckStatus::Retry => {
                        s.receiver.retry_acks.inc();
                        self.counters.resent.inc();
                        self.retry.push_back(job);
                        self.failure(i);
                    }
                }
            }
            ConnEvent::Credit { key, session, credits, fill } => {
                let Some(i) = self.slot(key) else { return };
                let s = &mut self.slots[i];
                if s.session == session {
                    s.credits = s.credits.saturating_add(credits);
                    s.fill = fill_from_wire(fill);
                }
            }
            ConnEvent::Fill { key, session, fill } => {
                let Some(i) = self.slot(key) else { return };
                let s = &mut self.slots[i];
                if s.session == session {
                    s.fill = fill_from_wire(fill);
                }
            }
            ConnEvent::Disconnected { key, session } => {
                let Some(i) = self.slot(key) else { return };
                if self.slots[i].session == session {
                    self.fail_over(i);
                    self.failure(i);
                }
            }
        }
    }

    /// Refreshes the per-receiver gauges and the members API's report.
    pub(super) fn publish(&mut self) {
        let now = Instant::now();
        let total: u64 = self.receivers.lock().values().map(|r| r.metrics.events_out.get()).sum();
        let mut status = Vec::with_capacity(self.slots.len());
        for s in self.slots.iter_mut() {
            let r = &s.receiver;
            let events = r.metrics.events_out.get();
            let (_, p50, _, p99, _) = r.latency.summary();
            let ejected = s.health.is_ejected(now);
            let admission = (s.health.admission(now, self.settings.slow_start) * 100.0).round() as u32;
            let (state, code) = match (s.wanted, ejected, s.available) {
                (false, _, _) => ("draining", 3),
                (true, true, _) => ("ejected", 2),
                (true, false, true) => ("up", 1),
                (true, false, false) => ("down", 0),
            };
            let share = if total == 0 { 0.0 } else { events as f64 * 100.0 / total as f64 };
            r.g_in_flight.set(s.in_flight.len() as u64);
            r.g_share.set((share * 10.0).round() as u64);
            r.g_p50.set(p50);
            r.g_p99.set(p99);
            r.g_state.set(code);
            r.g_admission.set(u64::from(admission));
            status.push(MemberStatus {
                address: r.address.clone(),
                weight: s.weight,
                state,
                in_flight: s.in_flight.len(),
                events,
                share_pct: share,
                ack_p50_us: p50,
                ack_p99_us: p99,
                ejections: s.health.ejections(),
                admission_pct: admission,
            });
        }
        self.pool.publish(status);
    }

    pub(super) fn idle(&self) -> bool {
        self.held.is_none() && self.retry.is_empty() && self.slots.iter().all(|s| s.in_flight.is_empty())
    }

    pub(super) async fn run(
        mut self,
        mut input: mpsc::Receiver<Job>,
        mut events: mpsc::UnboundedReceiver<ConnEvent>,
        cancel: CancellationToken,
        done: oneshot::Sender<()>,
    ) {
        let mut input_open = true;
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let pool = Arc::clone(&self.pool);
        loop {
            self.place_all();
            if !input_open && self.idle() {
                self.publish();
                let _ = done.send(());
                return;
            }
            tokio::select! {
                _ = cancel.cancelled() => return,
                Some(ev) = events.recv() => {
                    self.handle(ev);
                    // Take every event already waiting before placing again.
                    while let Ok(ev) = events.try_recv() {
                        self.handle(ev);
                    }
                    self.remove_drained();
                }
                _ = pool.changed.notified() => self.reconcile(),
                _ = tick.tick() => {
                    self.remove_drained();
                    self.publish();
                }
                job = input.recv(), if input_open && self.held.is_none() && self.retry.is_empty() => match job {
                    Some(j) => self.held = Some(j),
                    None => input_open = false,
                },
            }
        }
    }
}

/// A small xorshift for backoff jitter.
pub(super) struct Jitter(pub(super) u64);
impl Jitter {
    pub(super) fn factor(&mut self) -> f64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        0.5 + (x % 1000) as f64 / 1000.0
    }
}
