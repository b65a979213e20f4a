//! Prints one JSON line per drawn instance: `{"case", "side", "value", "ours"}`, for comparing
//! the generated codecs with another validator (`xtask/oracle/typebox-verdicts.mjs` adds the
//! reference's verdict to each line).
//!
//! `cargo run -p pi-protocol-schema-suite --example verdicts [N]` draws N valid messages per
//! schema and side (default 100), each followed by three mutations; with `--stdin` it reads
//! `{"case", "side", "value"}` lines instead and adds our verdict to each.

use pi_protocol::runtime::Payload;
use pi_protocol_gen::model::Side;
use pi_protocol_gen::sample::Sampler;
use pi_protocol_gen::Model;
use pi_protocol_schema_suite::{accepts, for_each_schema, Schema, Visitor};
use serde_json::{json, Value};

/// Our verdict on `value` as a message of `side` of the schema `name`.
fn ours(name: &str, side: &str, value: &Value) -> bool {
    Payload::from_value(value).is_ok_and(|cbor| accepts(name, side, cbor.as_cbor()).expect("a known schema and side"))
}

struct Draw {
    cases: u64,
}

impl Visitor for Draw {
    fn visit<S: Schema>(&mut self) {
        let model = Model::from_json(S::TEXT, S::NAME).expect("generates");
        for side in Side::BOTH {
            let root = model.message_type(side).expect("both sides").rust_name.clone();
            for i in 0..self.cases {
                let mut sampler = Sampler::new(&model, i);
                let Some(mut value) = sampler.message(side) else { continue };
                for _ in 0..4 {
                    let ours = ours(S::NAME, side.as_str(), &value);
                    println!("{}", json!({"case": S::NAME, "side": side.as_str(), "value": value, "ours": ours}));
                    value = sampler.mutate(&root, &value);
                }
            }
        }
    }
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some("--stdin") {
        for line in std::io::stdin().lines() {
            let mut probe: Value = serde_json::from_str(&line.expect("stdin")).expect("JSON lines");
            let (name, side) = (probe["case"].as_str().unwrap_or(""), probe["side"].as_str().unwrap_or(""));
            probe["ours"] = ours(name, side, &probe["value"]).into();
            println!("{probe}");
        }
        return;
    }
    let cases = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(100);
    for_each_schema(&mut Draw { cases });
}
