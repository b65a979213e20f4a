//! The Rust types a service reads the workloads' calls into (and writes them from), for the
//! typed-payload benchmarks (`benches/payload_serde.rs`): what `serviceId`/`member`/`args`
//! dispatch code declares, owned strings, an enum for a closed set of strings, `Option` for
//! nullable fields.

#![allow(dead_code)]

use serde::{Deserialize, Serialize};

/// The `small` call: `{"serviceId": "session", "member": "prompt", "args": ["hi"]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptCall {
    /// Which service.
    pub service_id: String,
    /// Which member.
    pub member: String,
    /// The prompt text(s).
    pub args: Vec<String>,
}

/// The `medium` and `large` calls: `appendItems` with one argument `{items, cursor}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AppendItemsCall {
    /// Which service.
    pub service_id: String,
    /// Which member.
    pub member: String,
    /// The one argument.
    pub args: (AppendItems,),
}

/// `{items, cursor}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AppendItems {
    /// The items to append.
    pub items: Vec<Item>,
    /// Where to continue, if anywhere.
    pub cursor: Option<String>,
}

/// One item of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    /// Its id.
    pub id: String,
    /// Who wrote it.
    pub role: Role,
    /// Its text.
    pub text: String,
    /// Its length in tokens.
    pub tokens: u32,
    /// A relevance score.
    pub score: f64,
    /// Whether it is pinned.
    pub pinned: bool,
    /// The item it answers, if any.
    pub parent: Option<String>,
}

/// Who wrote an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user.
    User,
    /// The assistant.
    Assistant,
}

/// The `blob` call: `write(path, contents)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WriteCall {
    /// Which service.
    pub service_id: String,
    /// Which member.
    pub member: String,
    /// Path and contents.
    pub args: (String, String),
}
