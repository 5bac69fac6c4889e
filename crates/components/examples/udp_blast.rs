//! `udp_blast`: sends pre-built RFC 5424 datagrams at a fixed rate from one
//! thread, to measure a syslog UDP receiver (sluice's `syslog_udp`, rsyslog's
//! `imudp`) for loss.
//!
//! ```text
//! cargo run --release -p sluice-components --example udp_blast -- 127.0.0.1:5514 100000 10
//! scripts/udp-bench.sh sluice 100000 10 1    # sender + sluice + /proc drop count
//! ```
//! Arguments: target address, datagrams per second, seconds. Pacing is per
//! millisecond (rate/1000 datagrams, then sleep to the next tick), so bursts
//! are at most one millisecond's worth. Prints what was sent and the achieved
//! rate; the receiver's counters say what arrived.

use std::net::UdpSocket;
use std::time::{Duration, Instant};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let addr = args.get(1).map_or("127.0.0.1:5514", String::as_str).to_string();
    let rate: u64 = args.get(2).map_or(Ok(100_000), |s| s.parse())?;
    let secs: u64 = args.get(3).map_or(Ok(10), |s| s.parse())?;
    let sock = UdpSocket::bind("127.0.0.1:0")?;
    sock.connect(&addr)?;
    // 1024 distinct messages, ~150 bytes each, with structured data.
    let msgs: Vec<Vec<u8>> = (0..1024)
        .map(|i| {
            format!(
                "<134>1 2024-05-06T07:08:09.123456Z web-{:02} nginx {} ACCESS [req@32473 id=\"{i:08x}\" status=\"200\"] GET /api/v1/items/{i} 200 {}",
                i % 16,
                1000 + i % 50,
                i * 7
            )
            .into_bytes()
        })
        .collect();
    let total = rate * secs;
    let start = Instant::now();
    let mut sent: u64 = 0;
    let mut errors: u64 = 0;
    let mut tick: u64 = 0;
    while sent < total {
        tick += 1;
        let due = (rate * tick / 1000).min(total);
        while sent < due {
            match sock.send(&msgs[(sent % 1024) as usize]) {
                Ok(_) => sent += 1,
                Err(_) => {
                    errors += 1;
                    sent += 1;
                }
            }
        }
        let next = start + Duration::from_millis(tick);
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        }
    }
    let el = start.elapsed().as_secs_f64();
    println!("attempted {sent} datagrams ({errors} send errors) in {el:.2}s = {:.0}/s to {addr}", sent as f64 / el);
    Ok(())
}
