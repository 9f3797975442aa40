//! The fast scan against serde_json: it accepts only what serde_json accepts, keeps the same raw
//! member values, and refuses what serde_json refuses (or leaves the subtle cases to it).

use super::*;
use proptest::prelude::*;
use serde_json::value::RawValue;
use std::collections::HashMap;

/// serde_json's verdict: the top-level members (last of duplicates), or refused.
fn serde(body: &str) -> Option<HashMap<String, String>> {
    let map: HashMap<Cow<'_, str>, &RawValue> = serde_json::from_str(body).ok()?;
    Some(
        map.into_iter()
            .map(|(k, v)| (k.into_owned(), v.get().to_owned()))
            .collect(),
    )
}

fn fast(body: &str) -> Option<HashMap<String, String>> {
    members(body.as_bytes(), &["*"]).ok().map(|m| {
        m.into_iter()
            .map(|(k, v)| (k.into_owned(), v.to_owned()))
            .collect()
    })
}

#[test]
fn valid_documents_agree_with_serde_json() {
    for body in [
        r#"{}"#,
        r#"  { "id" : "evt_1" , "type":"a.b" }  "#,
        r#"{"id":"evt_1","n":-0.5e+10,"z":0,"big":123456789012345678901234567890,"t":true,"f":false,"x":null}"#,
        r#"{"a":{"b":[1,2,{"c":"d"}],"e":{}},"l":[],"s":"q\"uote\\back\/slash\b\f\n\r\t\u00e9\ud83d\ude00"}"#,
        "{\"k\u{e9}y\":\"v\u{20ac}lue\",\"e\\u0073caped\":1}",
        r#"{"id":"a","id":"b"}"#,
        "{\n\t\"id\": \"x\"\r\n}",
    ] {
        assert_eq!(fast(body), serde(body), "{body}");
        assert!(fast(body).is_some(), "{body}");
    }
}

#[test]
fn invalid_documents_are_refused() {
    for body in [
        "",
        " ",
        "[]",
        "\"s\"",
        "1",
        "{",
        "}",
        r#"{"a"}"#,
        r#"{"a":}"#,
        r#"{"a":1,}"#,
        r#"{"a":1 "b":2}"#,
        r#"{a:1}"#,
        r#"{"a":01}"#,
        r#"{"a":1.}"#,
        r#"{"a":.5}"#,
        r#"{"a":1e}"#,
        r#"{"a":-}"#,
        r#"{"a":+1}"#,
        r#"{"a":tru}"#,
        r#"{"a":nul}"#,
        r#"{"a":"unterminated}"#,
        r#"{"a":"bad \q escape"}"#,
        r#"{"a":"\u12"}"#,
        r#"{"a":[1,2}"#,
        r#"{"a":{"b":1]}"#,
        r#"{"a":1} x"#,
        r#"{"a":1}{}"#,
        "{\"a\":\"tab\there\"}",
        "{\"a\":\"nl\nhere\"}",
    ] {
        assert_eq!(fast(body), None, "{body:?}");
        assert_eq!(serde(body), None, "serde_json refuses {body:?} too");
    }
}

#[test]
fn subtle_cases_are_left_to_serde_json() {
    // A lone surrogate escape, invalid UTF-8 and nesting past 128 levels: the scan refuses, and
    // serde_json decides.
    assert_eq!(fast(r#"{"a":"\ud800"}"#), None);
    assert_eq!(fast(r#"{"a":"\udc00x"}"#), None);
    assert!(members(b"{\"a\":\"\xff\"}", &["*"]).is_err());
    let deep = format!("{{\"a\":{}{}}}", "[".repeat(200), "]".repeat(200));
    assert_eq!(
        fast(&deep),
        None,
        "serde_json decides (a skipped raw value is not depth-limited)"
    );
    let ok_depth = format!("{{\"a\":{}{}}}", "[".repeat(100), "]".repeat(100));
    assert_eq!(fast(&ok_depth), serde(&ok_depth));
}

#[test]
fn only_wanted_members_are_kept() {
    let body = br#"{"id":"evt_1","data":{"x":[1,{"id":"inner"}]},"type":"t","pad":"xxxx"}"#;
    let kept = members(body, &["id", "type"]).unwrap();
    assert_eq!(
        kept,
        vec![
            (Cow::Borrowed("id"), "\"evt_1\""),
            (Cow::Borrowed("type"), "\"t\"")
        ]
    );
}

/// JSON-ish text: valid documents and their corruptions.
fn json_value(depth: u32) -> BoxedStrategy<String> {
    let leaf = prop_oneof![
        Just("null".to_owned()),
        Just("true".to_owned()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| f.to_string()),
        "[a-z\\\\\"/\\u{e9}\\u{1F600} ]{0,12}".prop_map(|s| serde_json::to_string(&s).unwrap()),
    ];
    leaf.prop_recursive(depth, 32, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
            prop::collection::vec(("[a-z]{1,3}", inner), 0..4).prop_map(|v| {
                let members: Vec<String> = v
                    .into_iter()
                    .map(|(k, v)| format!("\"{k}\" : {v}"))
                    .collect();
                format!("{{ {} }}", members.join(","))
            }),
        ]
    })
    .boxed()
}

proptest! {
    #[test]
    fn agrees_with_serde_json_on_documents_and_their_corruptions(
        members in prop::collection::vec(("[a-z]{1,4}", json_value(3)), 0..5),
        cut in any::<prop::sample::Index>(),
        junk in prop::sample::select(vec!["", "}", ",", "\"", "\\", "x", "]", " ", "\u{1}", "0"]),
    ) {
        let doc = format!(
            "{{{}}}",
            members.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect::<Vec<_>>().join(",")
        );
        prop_assert_eq!(fast(&doc), serde(&doc), "{}", doc);
        prop_assert!(fast(&doc).is_some());
        // Insert junk somewhere: whatever the scan accepts, serde_json accepts with the same members.
        let mut at = cut.index(doc.len() + 1);
        while !doc.is_char_boundary(at) { at -= 1; }
        let corrupt = format!("{}{junk}{}", &doc[..at], &doc[at..]);
        if let Some(m) = fast(&corrupt) {
            prop_assert_eq!(Some(m), serde(&corrupt), "{}", corrupt);
        }
    }
}

#[test]
fn control_characters_are_found_anywhere_in_a_long_string() {
    for at in [0, 1, 63, 64, 65, 1000, 4095] {
        let mut text = vec![b'x'; 4096];
        assert!(!has_control(&text));
        text[at] = 0x1f;
        assert!(has_control(&text), "{at}");
    }
    assert!(!has_control(b""));
}

/// The word-at-a-time check agrees with the byte-by-byte definition for every byte value at
/// every place of a word and in the tail, beside every neighbour class (control, space, high).
#[test]
fn control_check_agrees_with_the_definition_on_every_byte() {
    let naive = |t: &[u8]| t.iter().any(|&c| c < 0x20);
    for b in 0..=255u8 {
        for neighbour in [0x00, 0x1f, 0x20, b'x', 0x7f, 0x80, 0xa0, 0xe0, 0xff] {
            for len in [1, 7, 8, 9, 16, 19] {
                for at in 0..len {
                    let mut text = vec![neighbour; len];
                    text[at] = b;
                    assert_eq!(has_control(&text), naive(&text), "{text:?}");
                }
            }
        }
    }
}

/// Pieces of JSON and of its edge cases, for the fuzz target.
fn json_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "{",
            "}",
            "[",
            "]",
            ":",
            ",",
            "\"",
            "\\",
            "\\u",
            "\\ud83d",
            "\\ude00",
            "\\ud800",
            "\\u00e9",
            "\\n",
            "\\x",
            "0",
            "-",
            "1e",
            "1e+",
            "-0.5",
            ".5",
            "01",
            "1.",
            "true",
            "tru",
            "null",
            "nul",
            "false",
            " ",
            "\t",
            "\n",
            "\u{1}",
            "\u{7f}",
            "\u{e9}",
            "\u{ffff}",
            "\"id\"",
            "\"id\":\"evt_1\"",
            "\"type\"",
            "[[[[[[[[",
            "]]]]]]]]",
        ])
        .prop_map(str::to_owned),
        "[a-z0-9]{0,6}",
    ]
}

proptest! {
    #![proptest_config(crate::fuzz::config(256))]

    #[test]
    fn fuzz_the_scan_takes_any_bytes_and_accepts_only_what_serde_json_accepts(
        bytes in prop::collection::vec(any::<u8>(), 0..128),
        pieces in prop::collection::vec(json_piece(), 0..24),
        raw in any::<bool>(),
    ) {
        let body = if raw { bytes } else { pieces.concat().into_bytes() };
        let scanned = members(&body, &["*"]);
        let named = members(&body, &["id", "type"]);
        prop_assert_eq!(scanned.is_ok(), named.is_ok());
        if let Ok(found) = scanned {
            let text = std::str::from_utf8(&body).unwrap();
            let found: HashMap<String, String> =
                found.into_iter().map(|(k, v)| (k.into_owned(), v.to_owned())).collect();
            prop_assert_eq!(Some(found), serde(text), "{:?}", text);
        }
    }

}

proptest! {
    #![proptest_config(crate::fuzz::config(32))]

    #[test]
    fn fuzz_deep_nesting_is_refused_or_agreed_without_overflowing_the_stack(
        depth in 0usize..4000,
        open in prop::sample::select(vec!["[", "{\"a\":"]),
    ) {
        let body = format!("{{\"x\":{}1", open.repeat(depth));
        let _ = members(body.as_bytes(), &["*"]);
    }
}
