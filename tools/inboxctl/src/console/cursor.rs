//! The Events page's cursor in its URL (`before=…` for the older page, `after=…` for the newer
//! one): a place in the events index, opaque and checked. `c1.` + the place (base64url) + `.` +
//! the first 8 bytes of the SHA-256 of the filters it was made under and the place (hex). A
//! cursor that was edited, cut, or carried to other filters is refused with a 400 naming the
//! problem; it is a checksum, not a secret: a forged one could only name a place in time, which
//! the `since`/`until` filters name anyway.

use super::http::Params;
use crate::error::{usage, Result};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use inbox_core::store::events::{Direction, Position};
use sha2::{Digest, Sha256};

/// The filters a cursor belongs to (those that decide which entries the index walk meets).
const BOUND_TO: [&str; 5] = ["source", "type", "since", "until", "q"];

fn check(params: &Params, place: &str) -> String {
    let mut h = Sha256::new();
    for f in BOUND_TO {
        h.update(f.as_bytes());
        h.update(b"=");
        h.update(params.get(f).unwrap_or("").as_bytes());
        h.update(b"&");
    }
    h.update(place.as_bytes());
    let digest = h.finalize();
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// The cursor of `place` under `params`' filters.
pub fn encode(params: &Params, place: &Position) -> String {
    format!(
        "c1.{}.{}",
        URL_SAFE_NO_PAD.encode(place.as_str()),
        check(params, place.as_str())
    )
}

/// The place a cursor names, checked against `params`' filters.
pub fn decode(params: &Params, cursor: &str) -> Result<Position> {
    let bad = |why: &str| {
        usage(format!(
            "this page's cursor {why}: open the Events page again from its first page"
        ))
    };
    let mut parts = cursor.split('.');
    let (Some("c1"), Some(place), Some(sum), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad("is not one this console made"));
    };
    let place = URL_SAFE_NO_PAD
        .decode(place)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| bad("is damaged"))?;
    if check(params, &place) != sum {
        return Err(bad("was altered, or belongs to other filters"));
    }
    Position::parse(&place).map_err(|e| bad(&format!("names no place ({e})")))
}

/// Where the page starts: `before` (older than it) or `after` (newer than it), not both.
pub fn from_params(params: &Params) -> Result<Option<(Direction, Position)>> {
    match (params.get("before"), params.get("after")) {
        (Some(_), Some(_)) => Err(usage(
            "a page starts either before or after its cursor, not both",
        )),
        (Some(c), None) => Ok(Some((Direction::Older, decode(params, c)?))),
        (None, Some(c)) => Ok(Some((Direction::Newer, decode(params, c)?))),
        (None, None) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_comes_back_only_as_it_was_made() {
        let params = Params::parse("source=stripe&status=failed");
        let place = Position::parse("1796032800123#stripe#evt_1").unwrap();
        let c = encode(&params, &place);
        assert_eq!(decode(&params, &c).unwrap(), place);
        let from = from_params(&params.with("before", &c)).unwrap();
        assert_eq!(from, Some((Direction::Older, place.clone())));
        let from = from_params(&params.with("after", &c)).unwrap();
        assert_eq!(from, Some((Direction::Newer, place.clone())));
        // The status is filtered within the page: a cursor survives its change.
        assert!(decode(&params.with("status", "processed"), &c).is_ok());

        let other = Position::parse("1796032800124#stripe#evt_1").unwrap();
        let forged = c.replace(
            &URL_SAFE_NO_PAD.encode(place.as_str()),
            &URL_SAFE_NO_PAD.encode(other.as_str()),
        );
        for (bad, why) in [
            (forged.as_str(), "altered"),
            ("c1.x", "is not one"),
            ("c2.AAAA.00", "is not one"),
            ("c1.!!!.00", "damaged"),
            (c.as_str(), "other filters"),
        ] {
            let under = if bad == c {
                params.with("source", "github")
            } else {
                params.clone()
            };
            let e = decode(&under, bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
        let e = from_params(&params.with("before", &c).with("after", &c)).unwrap_err();
        assert!(e.to_string().contains("not both"));
    }
}
