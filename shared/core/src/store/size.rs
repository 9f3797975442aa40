//! What DynamoDB bills for an item: its size by the published rules ("Item sizes and formats",
//! <https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html>)
//! and the write and read units a request on it consumes ("Read and write operations").
//!
//! - A string: the UTF-8 bytes of the attribute name + the UTF-8 bytes of the value.
//! - A number: the name + 1 byte per two significant digits (leading and trailing zeroes
//!   trimmed) + 1 byte.
//! - A binary: the name + the raw bytes (not their base64).
//! - A null or a boolean: the name + 1 byte.
//! - A list or a map: the name + 3 bytes + the elements, each with 1 byte of overhead (a map's
//!   elements are name-value pairs, so a map element counts its key as an attribute name).
//! - A set: the name + the sum of its elements' sizes (the rules above, without a name).
//!
//! Writes: 1 write unit per started 1 KB (1,024 bytes) of the item; an update (or a put that
//! replaces an item, or a failed conditional write) on the larger of the item before and after;
//! an item written inside `TransactWriteItems` twice that. Reads: 1 unit per started 4 KB
//! (strongly consistent), half that eventually consistent, twice that transactional. The
//! benchmark figures (`pipeline_figures`) compute the write units of each webhook with these
//! functions from the items as stored.

use super::Item;
use aws_sdk_dynamodb::types::AttributeValue;

/// The size in bytes DynamoDB counts for an item.
pub fn item_size(item: &Item) -> usize {
    item.iter().map(|(name, v)| attribute_size(name, v)).sum()
}

/// One attribute: its name and its value.
pub fn attribute_size(name: &str, value: &AttributeValue) -> usize {
    name.len() + value_size(value)
}

/// A value without its name (a list element, a set element); list and map element overhead
/// (1 byte each) is counted by the enclosing list or map.
pub fn value_size(value: &AttributeValue) -> usize {
    match value {
        AttributeValue::S(s) => s.len(),
        AttributeValue::N(n) => number_size(n),
        AttributeValue::B(b) => b.as_ref().len(),
        AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
        AttributeValue::L(items) => 3 + items.iter().map(|v| 1 + value_size(v)).sum::<usize>(),
        AttributeValue::M(map) => {
            3 + map
                .iter()
                .map(|(k, v)| 1 + k.len() + value_size(v))
                .sum::<usize>()
        }
        AttributeValue::Ss(v) => v.iter().map(String::len).sum(),
        AttributeValue::Ns(v) => v.iter().map(|n| number_size(n)).sum(),
        AttributeValue::Bs(v) => v.iter().map(|b| b.as_ref().len()).sum(),
        _ => 0,
    }
}

/// A number's size: 1 byte per two significant digits (leading and trailing zeroes trimmed),
/// plus 1.
pub fn number_size(text: &str) -> usize {
    let mantissa = text
        .trim_start_matches(['-', '+'])
        .split(['e', 'E'])
        .next()
        .unwrap_or_default();
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let significant = digits.trim_start_matches('0').trim_end_matches('0').len();
    significant.div_ceil(2) + 1
}

/// Write units of a standard write of an item of `bytes` (at least 1: a delete of nothing, or a
/// write of an empty item, costs one unit).
pub fn write_units(bytes: usize) -> u64 {
    (bytes.div_ceil(1024) as u64).max(1)
}

/// Write units of an update (or a replacing put): billed on the larger of before and after.
pub fn update_units(before: usize, after: usize) -> u64 {
    write_units(before.max(after))
}

/// Write units of one item written inside `TransactWriteItems`.
pub fn transactional_write_units(bytes: usize) -> u64 {
    2 * write_units(bytes)
}

/// Read units of a strongly consistent read of an item of `bytes` (in half units: 2 = one unit),
/// so an eventually consistent read (half of it) stays a whole number.
pub fn strong_read_half_units(bytes: usize) -> u64 {
    2 * (bytes.div_ceil(4096) as u64).max(1)
}

#[cfg(test)]
mod tests;
