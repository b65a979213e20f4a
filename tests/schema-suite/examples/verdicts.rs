//! Prints one JSON line per drawn instance: `{"case", "side", "value", "ours"}`, for comparing
//! the generated codecs with another validator (`xtask/oracle/typebox.mjs`).

use pi_protocol_gen::model::Side;
use pi_protocol_gen::sample::Sampler;
use pi_protocol_gen::Model;
use pi_protocol_runtime::Payload;
use pi_protocol_schema_suite::CASES;
use serde_json::json;

fn main() {
    if std::env::args().nth(1).as_deref() == Some("--stdin") {
        // Verdicts for given instances: `{"case", "side", "value"}` per line.
        for line in std::io::stdin().lines() {
            let mut probe: serde_json::Value = serde_json::from_str(&line.expect("stdin")).expect("JSON lines");
            let case = CASES.iter().find(|c| c.name == probe["case"]).expect("a known case");
            let decode = if probe["side"] == "client" { case.client } else { case.server };
            let ours = Payload::from_value(&probe["value"]).is_ok_and(|cbor| decode(cbor.as_cbor()).is_ok());
            probe["ours"] = ours.into();
            println!("{probe}");
        }
        return;
    }
    let cases: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(100);
    for case in CASES {
        let model = Model::from_json(case.schema, case.name).expect("generates");
        for side in Side::BOTH {
            let root = model.message_type(side).expect("both sides").rust_name.clone();
            let decode = match side {
                Side::Client => case.client,
                Side::Server => case.server,
            };
            for i in 0..cases {
                let mut sampler = Sampler::new(&model, i);
                let Some(valid) = sampler.message(side) else { continue };
                let mut value = valid;
                for _ in 0..4 {
                    if let Ok(cbor) = Payload::from_value(&value) {
                        let ours = decode(cbor.as_cbor()).is_ok();
                        println!("{}", json!({"case": case.name, "side": side.as_str(), "value": value, "ours": ours}));
                    }
                    value = sampler.mutate(&root, &value);
                }
            }
        }
    }
}
