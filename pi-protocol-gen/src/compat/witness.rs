//! Evidence for the verdicts: messages drawn from one schema and decoded with the other.
//!
//! For every message type and direction, the writer's schema draws random valid messages of
//! that type ([`Sampler`]) and the reader's schema decodes them ([`Interpreter`]). A message the
//! reader refuses is the witness of a break. Where the rules found a break, the search stops at
//! the first witness; where they found none, the whole budget is spent, and a refused message
//! overturns the verdict (a reason of [`Change::Undetected`] with the witness), so a report
//! never says "holds" against the evidence. A rule that cannot decide alone (a changed pattern
//! may tighten, loosen or both) stands only with a witness.

use crate::error::Result;
use crate::interpret::Interpreter;
use crate::model::{Model, Side};
use crate::sample::Sampler;
use pi_protocol_runtime::CodecOptions;

use super::{Change, Direction, Reason, Report, Verdict, Witness};

/// How hard [`Report::find_witnesses`] looks.
///
/// ```
/// let search = pi_protocol_gen::compat::WitnessSearch::new().attempts(500).seed(7);
/// assert_eq!(search.attempts_per_verdict(), 500);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct WitnessSearch {
    attempts: u64,
    seed: u64,
}

impl Default for WitnessSearch {
    fn default() -> Self {
        WitnessSearch { attempts: 2000, seed: 0x5eed }
    }
}

impl WitnessSearch {
    /// 2,000 messages per verdict, a fixed seed.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The most messages drawn for one message type and direction.
    #[must_use]
    pub fn attempts(mut self, attempts: u64) -> Self {
        self.attempts = attempts;
        self
    }

    /// The seed of the draws (the same seed finds the same witnesses).
    #[must_use]
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// The most messages drawn for one message type and direction.
    #[must_use]
    pub fn attempts_per_verdict(&self) -> u64 {
        self.attempts
    }
}

impl Report {
    /// Looks for a witness of every break, and for a counterexample to every "holds", by
    /// sampling (see the module documentation). `old` and `new` are the models the report was
    /// made from.
    ///
    /// # Errors
    /// A [`GenError`](crate::GenError) when a model cannot be interpreted (a type that holds
    /// itself with nothing in between).
    pub fn find_witnesses(&mut self, old: &Model, new: &Model, search: &WitnessSearch) -> Result<()> {
        let interpreters = (Interpreter::new(old)?, Interpreter::new(new)?);
        for side_report in &mut self.sides {
            let side = side_report.side;
            for (index, message) in side_report.messages.iter_mut().enumerate() {
                for direction in [Direction::Backward, Direction::Forward] {
                    let (writer, reader, writer_model, type_name) = match direction {
                        Direction::Backward => (&interpreters.0, &interpreters.1, old, message.old_type.clone()),
                        Direction::Forward => (&interpreters.1, &interpreters.0, new, message.new_type.clone()),
                    };
                    let Some(type_name) = type_name else { continue };
                    let verdict = match direction {
                        Direction::Backward => &mut message.backward,
                        Direction::Forward => &mut message.forward,
                    };
                    if verdict.witness.is_some() {
                        continue;
                    }
                    let seed = search.seed ^ (index as u64).wrapping_mul(0x9E37_79B9) ^ direction as u64;
                    let found = search_one(writer_model, writer, reader, side, &type_name, search.attempts, seed);
                    // A rule that cannot be sure (a changed pattern may only loosen) needs the
                    // evidence: without a witness it is dropped.
                    if found.is_none() && verdict.reasons.iter().all(|r| !r.change.is_certain()) {
                        verdict.reasons.clear();
                    }
                    if let Some(witness) = found {
                        if verdict.holds() {
                            verdict.reasons.push(Reason {
                                change: Change::Undetected,
                                old_pointer: None,
                                new_pointer: None,
                                detail: "a message the writer's schema accepts is refused by the reader's; no rule explains \
                                         it (the witness shows it)"
                                    .to_string(),
                            });
                        }
                        verdict.witness = Some(witness);
                    }
                }
            }
        }
        Ok(())
    }
}

/// Draws up to `attempts` messages of type `type_name` from the writer's schema and returns the
/// first the reader refuses.
fn search_one(
    writer_model: &Model,
    writer: &Interpreter,
    reader: &Interpreter,
    side: Side,
    type_name: &str,
    attempts: u64,
    seed: u64,
) -> Option<Witness> {
    // A member of the message union that is not a named type is drawn through the whole union.
    let named = writer_model.by_rust_name(type_name).is_some();
    let mut sampler = Sampler::new(writer_model, seed);
    for _ in 0..attempts {
        let drawn = if named { sampler.value(type_name) } else { sampler.message(side) };
        let Some(message) = drawn else { continue };
        // Only messages the writer really sends count (a member drawn alone is a whole message).
        if writer.validate_json(side, &message).is_err() {
            continue;
        }
        if let Err(refusal) = reader.validate_json(side, &message) {
            let frame = writer.encode_json_frame(side, &message, &CodecOptions::default()).ok()?;
            return Some(Witness { message, frame, refused_because: refusal.to_string() });
        }
    }
    None
}

impl Verdict {
    /// Whether the verdict has evidence: a witness for a break; for "holds", nothing to show.
    #[must_use]
    pub fn has_evidence(&self) -> bool {
        self.holds() || self.witness.is_some()
    }
}
