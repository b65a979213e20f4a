//! The value constraints of a schema checked on a decoded value, in the order and with the
//! errors of the derive's checks (`pi-protocol-derive`'s `checks.rs`): string lengths and
//! pattern, numeric bounds, array sizes then each element, each record entry's key then value.
//! Lengths are counted and bounds compared with the runtime's own functions
//! (`pi_protocol_runtime::checks`, docs/PROTOCOL.md section 4).
//!
//! A value's checks run once the whole value is decoded (an array's elements all decode before
//! its size is checked), as the derive runs them on the decoded Rust value. `null` stands for
//! the `None` of a nullable value: nothing to check.

use pi_protocol_runtime::checks::{bound, has_max_length, has_min_length};
use pi_protocol_runtime::{ProtocolError, Rule};
use serde_json::Value;

use super::json::Json;
use super::program::{Bound, CheckTree, Program, TextChecks};

/// Checks `tree` on `value`; the error's path leads from `value` to the failing part.
pub(super) fn check(program: &Program, tree: &CheckTree, value: &Json<'_>) -> Result<(), ProtocolError> {
    match value {
        Json::Text(text) => check_text(program, &tree.text, text),
        Json::Array(items) => {
            check_items(tree, items.len())?;
            if let Some(element) = &tree.items {
                for (index, item) in items.iter().enumerate() {
                    check(program, element, item).map_err(|e| e.at_index(index as u64))?;
                }
            }
            Ok(())
        }
        Json::Object(entries) => {
            if tree.keys.is_none() && tree.values.is_none() {
                return Ok(());
            }
            for (index, (key, entry)) in entries.iter().enumerate() {
                if let Some(keys) = &tree.keys {
                    check_text(program, keys, key).map_err(|e| e.at_entry(index as u64))?;
                }
                if let Some(values) = &tree.values {
                    check(program, values, entry).map_err(|e| e.at_entry(index as u64))?;
                }
            }
            Ok(())
        }
        Json::Value(value) => check_value(program, tree, value),
        // A payload carries no constraint.
        Json::Payload(_) => Ok(()),
    }
}

/// `minItems` and `maxItems` on an array of `len` items.
fn check_items(tree: &CheckTree, len: usize) -> Result<(), ProtocolError> {
    let len = len as u64;
    if let Some(min) = tree.min_items.filter(|&min| len < min) {
        return Err(violation(Rule::MinItems { min }));
    }
    if let Some(max) = tree.max_items.filter(|&max| len > max) {
        return Err(violation(Rule::MaxItems { max }));
    }
    Ok(())
}

/// Checks `tree` on a `serde_json` value (a number, a literal, or a payload decoded whole).
fn check_value(program: &Program, tree: &CheckTree, value: &Value) -> Result<(), ProtocolError> {
    match value {
        Value::String(text) => check_text(program, &tree.text, text),
        Value::Number(number) => check_bounds(&tree.bounds, number.as_f64().unwrap_or(f64::NAN)),
        Value::Array(items) => {
            check_items(tree, items.len())?;
            if let Some(element) = &tree.items {
                for (index, item) in items.iter().enumerate() {
                    check_value(program, element, item).map_err(|e| e.at_index(index as u64))?;
                }
            }
            Ok(())
        }
        Value::Object(entries) => {
            if tree.keys.is_none() && tree.values.is_none() {
                return Ok(());
            }
            for (index, (key, entry)) in entries.iter().enumerate() {
                if let Some(keys) = &tree.keys {
                    check_text(program, keys, key).map_err(|e| e.at_entry(index as u64))?;
                }
                if let Some(values) = &tree.values {
                    check_value(program, values, entry).map_err(|e| e.at_entry(index as u64))?;
                }
            }
            Ok(())
        }
        Value::Null | Value::Bool(_) => Ok(()),
    }
}

/// The string constraints on `text`: `minLength`, `maxLength`, then `pattern`.
pub(super) fn check_text(program: &Program, checks: &TextChecks, text: &str) -> Result<(), ProtocolError> {
    if let Some(min) = checks.min_length.filter(|&min| !has_min_length(text, min)) {
        return Err(violation(Rule::MinLength { min }));
    }
    if let Some(max) = checks.max_length.filter(|&max| !has_max_length(text, max)) {
        return Err(violation(Rule::MaxLength { max }));
    }
    if checks.pattern.is_some_and(|pattern| !program.patterns[pattern].matches(text)) {
        return Err(violation(Rule::Pattern));
    }
    Ok(())
}

/// The numeric bounds on `number`, in order.
fn check_bounds(bounds: &[Bound], number: f64) -> Result<(), ProtocolError> {
    for &b in bounds {
        // Decoded numbers and schema bounds are finite, so `a < b` is the derive's `!(a >= b)`.
        let rule = match b {
            Bound::Minimum(min) if number < min => Rule::Minimum { min: bound(min) },
            Bound::Maximum(max) if number > max => Rule::Maximum { max: bound(max) },
            Bound::ExclusiveMinimum(min) if number <= min => Rule::ExclusiveMinimum { min: bound(min) },
            Bound::ExclusiveMaximum(max) if number >= max => Rule::ExclusiveMaximum { max: bound(max) },
            _ => continue,
        };
        return Err(violation(rule));
    }
    Ok(())
}

/// The `Schema` error for `rule`, without a path.
fn violation(rule: Rule) -> ProtocolError {
    pi_protocol_runtime::checks::violation(rule)
}
