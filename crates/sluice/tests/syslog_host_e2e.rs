//! Issue #22: for syslog sources with a tenant group, `@host` was the
//! receiving machine, so every sender collapsed into one host. Through the
//! binary: a `syslog_udp` source with `group` (host not pinned) keeps each
//! sender's header HOSTNAME as `@host` (RFC 5424 and RFC 3164; a NILVALUE
//! falls back to this machine's name), and a `syslog_tcp` source that pins
//! `host` overrides it.

use std::io::Write;
use std::net::{TcpStream, UdpSocket};
use std::time::Duration;

mod common;
use common::{free_port, source, wait_until, Dir};

#[test]
fn syslog_host_comes_from_the_header_unless_the_source_pins_it() {
    let dir = Dir::new("syslog-host");
    let (tcp, udp) = (free_port(), free_port());
    let sources = [
        source("udp", "syslog_udp", udp, "group = \"acme\"\nsubgroup = \"net\""),
        source("tcp", "syslog_tcp", tcp, "group = \"acme\"\nhost = \"gateway\""),
    ];
    let (mut p, out) = common::start_file_node(&dir, &sources.concat(), tcp);
    // The TCP port accepting says nothing of the UDP socket: a datagram sent
    // before it is bound is gone.
    let log = dir.path("log");
    wait_until("the syslog_udp socket", &mut p, || {
        std::fs::read_to_string(&log).unwrap_or_default().contains("syslog_udp source listening")
    });
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let datagrams = [
        "<34>1 2026-11-27T05:00:00Z router-1 sshd 1 - - u1",
        "<34>1 2026-11-27T05:00:01Z router-1 sshd 1 - - u2",
        "<34>Nov 27 05:00:02 router-2 su[9]: u3",
        "<34>1 2026-11-27T05:00:03Z - app - - - u4",
    ];
    for d in datagrams {
        sock.send_to(d.as_bytes(), ("127.0.0.1", udp)).unwrap();
    }
    let mut s = TcpStream::connect(("127.0.0.1", tcp)).unwrap();
    s.write_all(b"<34>1 2026-11-27T05:00:04Z router-3 app - - - t1\n").unwrap();
    drop(s);

    let read = || -> Vec<serde_json::Value> {
        std::fs::read_to_string(&out).unwrap_or_default().lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
    };
    wait_until("5 events", &mut p, || read().len() >= 5);
    std::thread::sleep(Duration::from_millis(300));
    let mut got: Vec<(String, String, String, String)> = read()
        .iter()
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap_or("").to_string();
            (s("message"), s("@group"), s("@subgroup"), s("@host"))
        })
        .collect();
    got.sort();
    let me = String::from_utf8(std::process::Command::new("hostname").output().unwrap().stdout).unwrap();
    let me = me.trim().to_string();
    let row = |m: &str, g: &str, sg: &str, h: &str| (m.to_string(), g.to_string(), sg.to_string(), h.to_string());
    assert_eq!(
        got,
        vec![
            row("t1", "acme", "", "gateway"),
            row("u1", "acme", "net", "router-1"),
            row("u2", "acme", "net", "router-1"),
            row("u3", "acme", "net", "router-2"),
            row("u4", "acme", "net", &me),
        ]
    );
    p.term();
}
