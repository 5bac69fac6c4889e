//! Parse cost of the thesis event into sluice's `Value`: serde path vs sonic
//! DOM + conversion, and the lazy path (validate, keep the text). `cargo run --release -p sluice-core --example parse_bench`
use std::time::Instant;

use sluice_core::value::{Object, Str, Value};
use sonic_rs::{JsonContainerTrait, JsonValueTrait};

const EV: &str = include_str!("../../../testdata/thesis/event.json");

fn convert(v: &sonic_rs::Value) -> Value {
    if let Some(s) = v.as_str() {
        return Value::from(s);
    }
    if let Some(o) = v.as_object() {
        let mut out = Object::with_capacity(o.len());
        for (k, x) in o.iter() {
            out.push_unique(Str::new(k), convert(x));
        }
        return Value::Object(out);
    }
    if let Some(a) = v.as_array() {
        return Value::Array(a.iter().map(convert).collect());
    }
    if let Some(i) = v.as_i64() {
        return Value::Int(i);
    }
    if let Some(f) = v.as_f64() {
        return Value::Float(f);
    }
    if let Some(b) = v.as_bool() {
        return Value::Bool(b);
    }
    Value::Null
}

fn main() {
    let n = 500_000;
    let bytes = EV.trim().as_bytes();
    let t = Instant::now();
    for _ in 0..n {
        let v: Value = sonic_rs::from_slice(bytes).unwrap();
        std::hint::black_box(v);
    }
    println!("serde into Value:        {:>9.0}/s", n as f64 / t.elapsed().as_secs_f64());
    let t = Instant::now();
    for _ in 0..n {
        let v: sonic_rs::Value = sonic_rs::from_slice(bytes).unwrap();
        std::hint::black_box(v);
    }
    println!("sonic DOM only:          {:>9.0}/s", n as f64 / t.elapsed().as_secs_f64());
    let t = Instant::now();
    for _ in 0..n {
        let v: sonic_rs::Value = sonic_rs::from_slice(bytes).unwrap();
        std::hint::black_box(convert(&v));
    }
    println!("sonic DOM + convert:     {:>9.0}/s", n as f64 / t.elapsed().as_secs_f64());
    let t = Instant::now();
    for _ in 0..n {
        let v: serde_json::Value = serde_json::from_slice(bytes).unwrap();
        std::hint::black_box(v);
    }
    println!("serde_json::Value:       {:>9.0}/s", n as f64 / t.elapsed().as_secs_f64());
    let line = bytes::Bytes::copy_from_slice(bytes);
    let t = Instant::now();
    for _ in 0..n {
        std::hint::black_box(sluice_core::raw::scan(std::hint::black_box(&line)).is_some());
    }
    println!("raw scan (validate only): {:>9.0}/s", n as f64 / t.elapsed().as_secs_f64());
    let t = Instant::now();
    for _ in 0..n {
        std::hint::black_box(sluice_core::codec::event_from_json_bytes(std::hint::black_box(&line)).is_ok());
    }
    println!("lazy event from line:    {:>9.0}/s", n as f64 / t.elapsed().as_secs_f64());
}
