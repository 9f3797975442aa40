//! The item-size rules on the examples and statements of AWS's documentation ("Item sizes and
//! formats" and "Read and write operations" of the DynamoDB developer guide).

use super::*;
use aws_sdk_dynamodb::primitives::Blob;

fn attr(name: &str, v: AttributeValue) -> usize {
    attribute_size(name, &v)
}

#[test]
fn strings_count_the_utf8_bytes_of_name_and_value() {
    assert_eq!(attr("pk", AttributeValue::S("MSG".into())), 2 + 3);
    // "é" is two UTF-8 bytes, "€" three: bytes, not characters.
    assert_eq!(attr("é", AttributeValue::S("€".into())), 2 + 3);
}

#[test]
fn numbers_count_one_byte_per_two_significant_digits_plus_one() {
    // Leading and trailing zeroes are trimmed.
    assert_eq!(number_size("0"), 1);
    assert_eq!(number_size("7"), 2);
    assert_eq!(number_size("12"), 2);
    assert_eq!(number_size("123"), 3);
    assert_eq!(number_size("1000"), 2, "1 significant digit");
    assert_eq!(number_size("00120"), 2, "12");
    assert_eq!(number_size("-12345"), 4);
    assert_eq!(number_size("1.5"), 2);
    assert_eq!(number_size("0.000015"), 2);
    assert_eq!(number_size("1700000000123"), 8, "13 significant digits");
    // 38 significant digits, the most a number may have: 19 + 1.
    assert_eq!(number_size(&"9".repeat(38)), 20);
    assert_eq!(attr("n", AttributeValue::N("42".into())), 1 + 2);
}

#[test]
fn binary_counts_raw_bytes_not_base64() {
    let raw = vec![0u8; 300];
    assert_eq!(attr("body", AttributeValue::B(Blob::new(raw))), 4 + 300);
}

#[test]
fn null_and_boolean_are_one_byte() {
    assert_eq!(attr("flag", AttributeValue::Bool(true)), 4 + 1);
    assert_eq!(attr("none", AttributeValue::Null(true)), 4 + 1);
}

#[test]
fn lists_and_maps_have_three_bytes_plus_one_per_element() {
    // An empty list or map: the name + 3 bytes.
    assert_eq!(attr("l", AttributeValue::L(vec![])), 1 + 3);
    assert_eq!(attr("m", AttributeValue::M(Default::default())), 1 + 3);
    // Each element: 1 byte of overhead + its own size.
    let list = AttributeValue::L(vec![
        AttributeValue::S("ab".into()),
        AttributeValue::N("5".into()),
    ]);
    assert_eq!(attr("l", list), 1 + 3 + (1 + 2) + (1 + 2));
    // A map element is a name-value pair.
    let map = AttributeValue::M([("at".to_string(), AttributeValue::N("12".into()))].into());
    assert_eq!(attr("m", map), 1 + 3 + (1 + 2 + 2));
}

#[test]
fn sets_sum_their_elements() {
    let ss = AttributeValue::Ss(vec!["a".into(), "bcd".into()]);
    assert_eq!(attr("s", ss), 1 + 4);
    let ns = AttributeValue::Ns(vec!["1".into(), "100".into()]);
    assert_eq!(attr("n", ns), 1 + 2 + 2);
}

#[test]
fn an_item_is_the_sum_of_its_attributes() {
    let item = Item::from([
        ("pk".to_string(), AttributeValue::S("MSG#a#1".into())),
        ("sk".to_string(), AttributeValue::S("MSG".into())),
        ("version".to_string(), AttributeValue::N("0".into())),
    ]);
    assert_eq!(item_size(&item), (2 + 7) + (2 + 3) + (7 + 1));
}

#[test]
fn write_units_round_up_to_the_next_kilobyte() {
    // One write unit is one write of an item up to 1 KB.
    assert_eq!(write_units(0), 1);
    assert_eq!(write_units(500), 1);
    assert_eq!(write_units(1024), 1);
    assert_eq!(write_units(1025), 2);
    // A 2.5 KB item: 3 units.
    assert_eq!(write_units(2560), 3);
    // An update is billed on the larger of the item before and after it.
    assert_eq!(update_units(3000, 200), 3);
    assert_eq!(update_units(200, 1500), 2);
    // Inside TransactWriteItems: twice.
    assert_eq!(transactional_write_units(1024), 2);
    assert_eq!(transactional_write_units(2635), 6);
}

#[test]
fn read_units_round_up_to_four_kilobytes() {
    // "reading a 3,500-byte item consumes the same throughput as reading a 4 KB item"
    assert_eq!(strong_read_half_units(3500), 2);
    // "if your item size is 8 KB, you require 2 read units to sustain one strongly consistent
    // read ... 1 read unit if you choose eventually consistent reads"
    assert_eq!(strong_read_half_units(8 * 1024), 4);
    assert_eq!(strong_read_half_units(8 * 1024) / 2, 2);
    // "If you read a 10 KB item, DynamoDB rounds the item size to 12 KB."
    assert_eq!(strong_read_half_units(10 * 1024), 6);
}
