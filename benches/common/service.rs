//! The two calls of the load workload (`$chord.service catalogue` and `session echo`), answered
//! as the example server answers them: the call read with `Payload::deserialize` (service and
//! member borrowed, the arguments kept as a payload), the catalogue built once. Shared by the
//! driver benchmark (`benches/server_driver.rs`) and the bare server of the load harness
//! (`examples/load/bare.rs`), so that both baselines do the application work of the example.

use pi_protocol::{ErrorBody, Payload};
use serde::Deserialize;
use serde_json::json;

/// What a call asks for.
#[derive(Deserialize, Default)]
struct Call<'a> {
    #[serde(rename = "serviceId", default)]
    service_id: &'a str,
    #[serde(default)]
    member: &'a str,
    #[serde(default)]
    args: Option<Payload>,
}

/// Answers the two calls; anything else is `unknown_member`.
pub struct Service {
    catalogue: Payload,
    unknown: ErrorBody,
}

impl Default for Service {
    fn default() -> Self {
        Service {
            catalogue: Payload::from_value(&json!([
                {"serviceId": "demo.echo", "mode": "singleton"},
                {"serviceId": "demo.slow", "mode": "singleton"},
                {"serviceId": "demo.counter", "mode": "singleton"},
            ]))
            .expect("a valid payload"),
            unknown: ErrorBody::from_code("unknown_member", "No such service member").expect("a code"),
        }
    }
}

impl Service {
    /// The answer to `call`.
    pub fn answer(&self, call: &Payload) -> Result<Option<Payload>, ErrorBody> {
        let call: Call = call.deserialize().unwrap_or_default();
        match (call.service_id, call.member) {
            ("$chord.service", "catalogue") => Ok(Some(self.catalogue.clone())),
            ("session", "echo") => {
                let args = call.args.unwrap_or_else(Payload::null);
                Ok(Some(Payload::object(&[("echo", &args)]).expect("a payload")))
            }
            _ => Err(self.unknown.clone()),
        }
    }
}
