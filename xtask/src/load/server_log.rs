//! What the example server's own log (one JSON line per connection event and application
//! action, `examples/server.rs`) must show after a faults run: on every connection, each
//! admitted request is settled exactly once (`answered`), all of them before the connection's
//! `closed`, and `closed` releases the route the application published last (`route`); every
//! connection that began also ended.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::Value;

/// One connection as the log tells it.
#[derive(Default)]
struct Connection {
    admitted: HashSet<String>,
    settled: HashSet<String>,
    route: Value,
    closing: Option<String>,
    closed: bool,
}

/// The checks, fed one line at a time.
#[derive(Default)]
pub struct ServerLog {
    connections: HashMap<u64, Connection>,
    /// `closing` reasons, by kind (the text before the first colon).
    reasons: BTreeMap<String, u64>,
    admitted: u64,
    fenced: u64,
    lines: u64,
    errors: Vec<String>,
    error_count: u64,
}

impl ServerLog {
    fn fail(&mut self, message: String) {
        self.error_count += 1;
        if self.errors.len() < 20 {
            self.errors.push(message);
        }
    }

    /// Takes one line of the server's stdout (lines that are not JSON objects are skipped).
    pub fn line(&mut self, line: &str) {
        let Ok(entry) = serde_json::from_str::<Value>(line) else { return };
        let (Some(conn), Some(event)) = (entry["conn"].as_u64(), entry["event"].as_str()) else { return };
        self.lines += 1;
        let id = || entry["id"].as_str().map(str::to_owned).unwrap_or_default();
        let connection = self.connections.entry(conn).or_default();
        if connection.closed {
            let message = format!("connection {conn}: {event} after closed");
            return self.fail(message);
        }
        let problem = match event {
            "request" => {
                self.admitted += 1;
                let id = entry["message"]["id"].as_str().unwrap_or_default().to_owned();
                (!connection.admitted.insert(id.clone())).then(|| format!("request {id} admitted twice"))
            }
            "answered" => {
                let id = id();
                if !connection.admitted.contains(&id) {
                    Some(format!("answered {id}, which was never admitted"))
                } else if !connection.settled.insert(id.clone()) {
                    Some(format!("answered {id} twice"))
                } else {
                    None
                }
            }
            "route" => {
                connection.route = entry["route"].clone();
                None
            }
            "fenced" => {
                self.fenced += 1;
                None
            }
            "closing" => {
                let reason = entry["reason"].as_str().unwrap_or_default();
                let kind = reason.split(':').next().unwrap_or_default().to_owned();
                *self.reasons.entry(kind).or_default() += 1;
                connection.closing = Some(reason.to_owned());
                None
            }
            "closed" => {
                connection.closed = true;
                let unsettled = connection.admitted.difference(&connection.settled).count();
                if connection.closing.is_none() {
                    Some("closed without closing".to_owned())
                } else if unsettled != 0 {
                    Some(format!("closed with {unsettled} admitted requests unsettled"))
                } else if entry["release"] != connection.route {
                    Some(format!("released {} where the route was {}", entry["release"], connection.route))
                } else {
                    None
                }
            }
            _ => None,
        };
        if let Some(problem) = problem {
            self.fail(format!("connection {conn}: {problem}"));
        }
    }

    /// Connections that began and have not closed.
    pub fn open(&self) -> usize {
        self.connections.values().filter(|c| !c.closed).count()
    }

    /// The verdict, once the run is over: every connection must have closed.
    pub fn finish(mut self) -> Value {
        let open: Vec<u64> = self.connections.iter().filter(|(_, c)| !c.closed).map(|(n, _)| *n).take(10).collect();
        if !open.is_empty() {
            let message = format!("{} connections never closed, such as {open:?}", self.open());
            self.fail(message);
        }
        serde_json::json!({
            "lines": self.lines,
            "connections": self.connections.len(),
            "admitted": self.admitted,
            "fenced": self.fenced,
            "closing_reasons": self.reasons,
            "error_count": self.error_count,
            "errors": self.errors,
        })
    }
}
