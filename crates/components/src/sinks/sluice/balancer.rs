//! Per-batch load balancing across N receivers: which receiver gets the next
//! batch. Pure selection logic over a snapshot of each receiver's state, no
//! I/O, so the `sluice` sink (agents) and the future dispatcher share it and
//! it is tested deterministically.
//!
//! A receiver is *available* when it is connected and healthy; it has *room*
//! when `in_flight < window` and, for `credit`, it holds a credit.
//!
//! - `round_robin`: strictly in turn among the available receivers: when the
//!   receiver whose turn it is has no room, the pick waits for it (`None`)
//!   rather than skipping it — the textbook algorithm, blind to load, so a
//!   slow receiver slows every sender (use the load-aware ones below for
//!   unequal receivers);
//! - `weighted_round_robin`: smooth weighted round robin (nginx's) among the
//!   available receivers, strictly in turn as `round_robin`: over any run
//!   each receiver gets batches in proportion to its `weight`, interleaved
//!   rather than in bursts;
//!
//! The others choose among the receivers with room:
//!
//! - `random`: uniformly at random (xorshift; seedable for tests);
//! - `least_connections`: fewest batches in flight;
//! - `least_loaded`: lowest `fill + in_flight / window`, where `fill` is the
//!   queue fill (0–1) the receiver reported in its latest ack or pong;
//! - `credit`: the most credits held (the receiver grants credits as its
//!   queue has room: pull semantics).
//!
//! Ties go to the first candidate after the previous pick, so equal receivers
//! share the work. `None` means nobody can take a batch now: the caller waits
//! for an ack, a credit or a reconnection (back-pressure).

use serde::Deserialize;

/// How the next receiver is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Algorithm {
    /// In turn.
    RoundRobin,
    /// In turn, in proportion to weights.
    WeightedRoundRobin,
    /// At random.
    Random,
    /// Fewest batches in flight.
    LeastConnections,
    /// Lowest reported queue fill plus window use.
    LeastLoaded,
    /// Most credits granted by the receiver.
    Credit,
}

impl Algorithm {
    /// The config name.
    pub fn name(self) -> &'static str {
        match self {
            Self::RoundRobin => "round_robin",
            Self::WeightedRoundRobin => "weighted_round_robin",
            Self::Random => "random",
            Self::LeastConnections => "least_connections",
            Self::LeastLoaded => "least_loaded",
            Self::Credit => "credit",
        }
    }
}

/// One receiver as the balancer sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    /// Connected, handshake done, not failed.
    pub available: bool,
    /// Batches sent and not yet acknowledged.
    pub in_flight: u32,
    /// Most batches allowed in flight.
    pub window: u32,
    /// Relative share for `weighted_round_robin` (0 never picks it).
    pub weight: u32,
    /// Latest reported queue fill, 0.0–1.0.
    pub fill: Option<f64>,
    /// Credits held (credit mode).
    pub credits: u32,
}

impl Default for Candidate {
    fn default() -> Self {
        Self { available: true, in_flight: 0, window: 1, weight: 1, fill: None, credits: 0 }
    }
}

/// Picks receivers; keeps the rotation state between picks.
#[derive(Debug, Clone)]
pub struct Balancer {
    algorithm: Algorithm,
    cursor: usize,
    wrr: Vec<i64>,
    rng: u64,
}

impl Balancer {
    /// A balancer seeded from the clock (for `random`).
    pub fn new(algorithm: Algorithm) -> Self {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0x9E37_79B9_7F4A_7C15);
        Self::with_seed(algorithm, seed)
    }

    /// A balancer with a fixed seed (tests).
    pub fn with_seed(algorithm: Algorithm, seed: u64) -> Self {
        Self { algorithm, cursor: 0, wrr: Vec::new(), rng: seed | 1 }
    }

    /// The algorithm.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    fn eligible(&self, c: &Candidate) -> bool {
        match self.algorithm {
            // Strictly in turn: room is checked after the turn is decided.
            Algorithm::RoundRobin => c.available,
            Algorithm::WeightedRoundRobin => c.available && c.weight > 0,
            Algorithm::Credit => c.available && c.in_flight < c.window && c.credits > 0,
            _ => c.available && c.in_flight < c.window,
        }
    }

    fn next_random(&mut self) -> u64 {
        // xorshift64*
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// The receiver for the next batch, or `None` when none is eligible.
    pub fn pick(&mut self, cands: &[Candidate]) -> Option<usize> {
        let n = cands.len();
        if n == 0 {
            return None;
        }
        let order: Vec<usize> = (0..n).map(|k| (self.cursor + k) % n).filter(|i| self.eligible(&cands[*i])).collect();
        if order.is_empty() {
            return None;
        }
        let has_room = |i: usize| cands[i].in_flight < cands[i].window;
        let pick = match self.algorithm {
            Algorithm::RoundRobin => {
                if !has_room(order[0]) {
                    return None; // its turn: wait for it
                }
                order[0]
            }
            Algorithm::Random => order[(self.next_random() % order.len() as u64) as usize],
            Algorithm::WeightedRoundRobin => {
                if self.wrr.len() != n {
                    self.wrr = vec![0; n];
                }
                let mut next = self.wrr.clone();
                let total: i64 = order.iter().map(|i| i64::from(cands[*i].weight)).sum();
                let mut best = order[0];
                for &i in &order {
                    next[i] += i64::from(cands[i].weight);
                    if next[i] > next[best] {
                        best = i;
                    }
                }
                if !has_room(best) {
                    return None; // its turn: wait for it (state unchanged)
                }
                next[best] -= total;
                self.wrr = next;
                best
            }
            Algorithm::LeastConnections => best_by(&order, |i| f64::from(cands[i].in_flight)),
            Algorithm::LeastLoaded => best_by(&order, |i| {
                let c = &cands[i];
                c.fill.unwrap_or(0.0) + f64::from(c.in_flight) / f64::from(c.window.max(1))
            }),
            Algorithm::Credit => best_by(&order, |i| -f64::from(cands[i].credits)),
        };
        // Weighted round robin keeps its own rotation; the others continue
        // after the pick so ties rotate.
        if self.algorithm != Algorithm::WeightedRoundRobin {
            self.cursor = (pick + 1) % n;
        }
        Some(pick)
    }
}

/// The first index in `order` with the lowest `score`.
fn best_by(order: &[usize], score: impl Fn(usize) -> f64) -> usize {
    let mut best = order[0];
    let mut best_score = score(best);
    for &i in &order[1..] {
        let s = score(i);
        if s < best_score {
            best = i;
            best_score = s;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cands(n: usize) -> Vec<Candidate> {
        vec![Candidate { window: 4, ..Default::default() }; n]
    }

    /// Picks `k` batches that are acknowledged at once; returns counts per receiver.
    fn shares(b: &mut Balancer, c: &[Candidate], k: usize) -> Vec<usize> {
        let mut counts = vec![0; c.len()];
        for _ in 0..k {
            counts[b.pick(c).unwrap()] += 1;
        }
        counts
    }

    #[test]
    fn round_robin_rotates_skips_unavailable_and_waits_for_a_full_turn() {
        let mut b = Balancer::new(Algorithm::RoundRobin);
        let mut c = cands(3);
        let picks: Vec<usize> = (0..6).map(|_| b.pick(&c).unwrap()).collect();
        assert_eq!(picks, [0, 1, 2, 0, 1, 2]);
        c[1].available = false;
        let picks: Vec<usize> = (0..4).map(|_| b.pick(&c).unwrap()).collect();
        assert_eq!(picks, [0, 2, 0, 2]);
        // It is 0's turn and 0 is full: wait, do not skip to 2.
        c[0].in_flight = 4;
        assert_eq!(b.pick(&c), None);
        assert_eq!(b.pick(&c), None);
        c[0].in_flight = 3;
        assert_eq!(b.pick(&c), Some(0));
        assert_eq!(b.pick(&c), Some(2));
        assert_eq!(b.pick(&[]), None);
    }

    #[test]
    fn weighted_round_robin_is_proportional_and_smooth() {
        let mut b = Balancer::new(Algorithm::WeightedRoundRobin);
        let mut c = cands(3);
        c[0].weight = 5;
        c[1].weight = 1;
        c[2].weight = 1;
        let picks: Vec<usize> = (0..7).map(|_| b.pick(&c).unwrap()).collect();
        // nginx's smooth sequence for 5:1:1.
        assert_eq!(picks, [0, 0, 1, 0, 2, 0, 0]);
        assert_eq!(shares(&mut b, &c, 700), [500, 100, 100]);
        // The heavy one full on its turn: wait, and the sequence resumes unchanged.
        c[0].in_flight = 4;
        assert_eq!(b.pick(&c), None);
        c[0].in_flight = 0;
        let picks: Vec<usize> = (0..7).map(|_| b.pick(&c).unwrap()).collect();
        assert_eq!(picks, [0, 0, 1, 0, 2, 0, 0]);
        c[0].weight = 0;
        assert_eq!(shares(&mut b, &c, 10), [0, 5, 5]);
    }

    #[test]
    fn random_is_roughly_uniform_and_only_eligible() {
        let mut b = Balancer::with_seed(Algorithm::Random, 7);
        let mut c = cands(4);
        let s = shares(&mut b, &c, 4000);
        for n in &s {
            assert!((850..1150).contains(n), "{s:?}");
        }
        c[3].available = false;
        assert_eq!(shares(&mut b, &c, 300)[3], 0);
    }

    #[test]
    fn least_connections_prefers_fewest_in_flight_then_rotates() {
        let mut b = Balancer::new(Algorithm::LeastConnections);
        let mut c = cands(3);
        c[0].in_flight = 2;
        c[1].in_flight = 1;
        c[2].in_flight = 1;
        assert_eq!(b.pick(&c), Some(1));
        assert_eq!(b.pick(&c), Some(2));
        assert_eq!(b.pick(&c), Some(1));
        c[1].in_flight = 3;
        assert_eq!(b.pick(&c), Some(2));
    }

    #[test]
    fn least_loaded_uses_reported_fill_and_window_use() {
        let mut b = Balancer::new(Algorithm::LeastLoaded);
        let mut c = cands(2);
        c[0].fill = Some(0.9);
        c[1].fill = Some(0.1);
        assert_eq!(shares(&mut b, &c, 10), [0, 10]);
        // Window use counts too: 0.1 + 3/4 > 0.5 + 0/4.
        c[0].fill = Some(0.5);
        c[1].in_flight = 3;
        assert_eq!(b.pick(&c), Some(0));
        // Unknown fill counts as empty.
        c[0].fill = None;
        c[0].in_flight = 0;
        c[1].fill = Some(0.0);
        c[1].in_flight = 0;
        assert_eq!(shares(&mut b, &c, 10), [5, 5]);
    }

    #[test]
    fn credit_needs_a_credit_and_prefers_the_most() {
        let mut b = Balancer::new(Algorithm::Credit);
        let mut c = cands(3);
        assert_eq!(b.pick(&c), None, "no credits, no batch");
        c[0].credits = 1;
        c[2].credits = 3;
        assert_eq!(b.pick(&c), Some(2));
        c[2].credits = 1;
        assert_eq!(b.pick(&c), Some(0));
        assert_eq!(b.pick(&c), Some(2));
    }
}
