//! The partition-key patterns units are attributed to: a table key's ([`pattern`]), an
//! open-index partition's ([`index_pattern`]), and the sort-key group of an item
//! ([`sort_group`]) that tells one item and a time-ordered run from items by id.

/// The partition-key pattern of a table key: one per event (`MSG#{source}#{event_id}`), per
/// tenant (`WALLET#{tenant}`), one for the stack (`DESTINATIONS`), ….
pub fn pattern(pk: &str) -> String {
    const PATTERNS: [(&str, &str); 10] = [
        ("MSG#", "MSG#{source}#{event_id}"),
        ("OUT#", "OUT#{destination}#{source}#{event_id}"),
        ("FAN#", "FAN#{source}#{event_id}"),
        ("DEST#", "DEST#{id}"),
        ("PROVIDER#", "PROVIDER#{provider}"),
        ("PAYMENT_METHOD#", "PAYMENT_METHOD#{payment method}"),
        ("PAYMENT#", "PAYMENT#{payment intent}"),
        ("EFFECT#", "EFFECT#{event id} (test handler)"),
        ("DESTINATIONS", "DESTINATIONS"),
        ("WALLETS", "WALLETS"),
    ];
    if let Some(rest) = pk.strip_prefix("WALLET#") {
        // A shard item of the balance: `S` and a number after the tenant (`items::shards`).
        let shard = rest.rsplit_once('#').is_some_and(|(_, n)| {
            n.strip_prefix('S')
                .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        });
        return if shard {
            "WALLET#{tenant}#{shard}".into()
        } else {
            "WALLET#{tenant}".into()
        };
    }
    PATTERNS
        .iter()
        .find(|(prefix, _)| pk.starts_with(prefix))
        .map_or_else(|| format!("other: {pk}"), |(_, p)| (*p).to_owned())
}

/// The pattern of an open-index partition (`open_shard`).
pub fn index_pattern(shard: &str) -> String {
    const SHARDED: [&str; 6] = [
        "OUTBOX#DONE#",
        "OUTBOX#",
        "OPEN#",
        "AUTOPAY#ATTEMPT#",
        "AUTOPAY#RECURRING#",
        "WALLET#HOLDS#",
    ];
    if shard.starts_with("PARKED#") {
        return "open-index PARKED#{destination}".to_owned();
    }
    match SHARDED.iter().find(|p| {
        shard
            .strip_prefix(**p)
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    }) {
        Some(p) => format!("open-index {p}{{shard}}"),
        None => format!("open-index {shard}"),
    }
}

/// The group of a sort key: the item itself when it has no `#` (`WALLET`, `STATE`, `MSG`),
/// `ENTRY#{ms}…` (time-ordered: a 13-digit time first), or `EMAIL#{id}` (one per id).
pub fn sort_group(sk: &str) -> String {
    match sk.split_once('#') {
        None => sk.to_owned(),
        Some((prefix, rest)) => {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            if digits >= 13 {
                format!("{prefix}#{{ms}}…")
            } else {
                format!("{prefix}#{{id}}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_map_to_their_patterns() {
        for (pk, want) in [
            ("MSG#mailer#msg_1", "MSG#{source}#{event_id}"),
            (
                "OUT#bench#stripe#evt_1",
                "OUT#{destination}#{source}#{event_id}",
            ),
            ("DEST#bench", "DEST#{id}"),
            ("DESTINATIONS", "DESTINATIONS"),
            ("WALLET#acme", "WALLET#{tenant}"),
            ("WALLET#acme#S3", "WALLET#{tenant}#{shard}"),
            ("WALLET#acme#3", "WALLET#{tenant}"),
            ("WALLET#acme#S", "WALLET#{tenant}"),
            ("WALLET#a#b", "WALLET#{tenant}"),
            ("WALLETS", "WALLETS"),
            ("PAYMENT#pi_1", "PAYMENT#{payment intent}"),
            ("PAYMENT_METHOD#pm_1", "PAYMENT_METHOD#{payment method}"),
            ("PROVIDER#stripe", "PROVIDER#{provider}"),
            ("ZZZ", "other: ZZZ"),
        ] {
            assert_eq!(pattern(pk), want, "{pk}");
        }
        assert_eq!(index_pattern("OPEN#7"), "open-index OPEN#{shard}");
        assert_eq!(index_pattern("OUTBOX#15"), "open-index OUTBOX#{shard}");
        assert_eq!(
            index_pattern("OUTBOX#DONE#2"),
            "open-index OUTBOX#DONE#{shard}"
        );
        assert_eq!(index_pattern("OUTBOX#DONE"), "open-index OUTBOX#DONE");
        assert_eq!(
            index_pattern("PARKED#crm"),
            "open-index PARKED#{destination}"
        );
        assert_eq!(index_pattern("UNMATCHED"), "open-index UNMATCHED");
        assert_eq!(sort_group("WALLET"), "WALLET");
        assert_eq!(sort_group("ENTRY#1764547200000#ab12"), "ENTRY#{ms}…");
        assert_eq!(sort_group("EMAIL#m-1"), "EMAIL#{id}");
        assert_eq!(sort_group("DLV#count"), "DLV#{id}");
    }
}
