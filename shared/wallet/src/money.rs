//! Money as a type: a [`Currency`] (ISO 4217 code with its minor-unit exponent) and an amount of
//! [`Money`] in that currency's minor unit, formatted the way operators read it (`12.34 USD`).
//!
//! Amounts are stored and computed as whole minor units (`i64`), with checked arithmetic
//! ([`checked_sum`], [`Money::checked_add`]): a sum that does not fit is an [`Overflow`], never a
//! wrapped or saturated number. The exponent only matters for display.

use std::fmt;
use std::str::FromStr;

/// A currency: its three-letter ISO 4217 code, lower case as Stripe writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Currency([u8; 3]);

/// Currencies without a minor unit (Stripe's zero-decimal list).
const ZERO_DECIMAL: [&str; 16] = [
    "bif", "clp", "djf", "gnf", "jpy", "kmf", "krw", "mga", "pyg", "rwf", "ugx", "vnd", "vuv",
    "xaf", "xof", "xpf",
];
/// Currencies with three decimal digits.
const THREE_DECIMAL: [&str; 7] = ["bhd", "iqd", "jod", "kwd", "lyd", "omr", "tnd"];

/// A currency code that is not three ASCII letters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("currency {0:?} is not a three-letter ISO 4217 code (usd, eur, jpy, …)")]
pub struct InvalidCurrency(pub String);

impl Currency {
    /// Parses a three-letter code (any case, surrounding spaces ignored).
    pub fn parse(code: &str) -> Result<Self, InvalidCurrency> {
        match code.trim().as_bytes() {
            [a, b, c] if [a, b, c].iter().all(|x| x.is_ascii_alphabetic()) => Ok(Self([
                a.to_ascii_lowercase(),
                b.to_ascii_lowercase(),
                c.to_ascii_lowercase(),
            ])),
            _ => Err(InvalidCurrency(code.to_owned())),
        }
    }

    /// The code in lower case (`usd`), as stored and as Stripe writes it.
    pub fn as_str(&self) -> &str {
        // Built from ASCII letters only: always UTF-8.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }

    /// Digits of the minor unit (as Stripe counts them): 0 for `jpy`, `krw`, …, 3 for `bhd`,
    /// `kwd`, …, 2 for every other currency.
    pub fn exponent(self) -> u32 {
        if ZERO_DECIMAL.contains(&self.as_str()) {
            0
        } else if THREE_DECIMAL.contains(&self.as_str()) {
            3
        } else {
            2
        }
    }

    /// `minor` minor units of this currency.
    pub fn amount(self, minor: i64) -> Money {
        Money::new(minor, self)
    }
}

/// The code in upper case (`USD`), as people write it.
impl fmt::Display for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.as_str().to_ascii_uppercase())
    }
}

impl FromStr for Currency {
    type Err = InvalidCurrency;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// A sum of amounts that does not fit in 64 bits (the ledger refuses it instead of wrapping).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0} overflows (does not fit in a 64-bit number of minor units)")]
pub struct Overflow(pub String);

/// `a + b`, or an [`Overflow`] naming `what`.
pub fn checked_add(a: i64, b: i64, what: &str) -> Result<i64, Overflow> {
    a.checked_add(b).ok_or_else(|| Overflow(what.to_owned()))
}

/// `a − b`, or an [`Overflow`] naming `what`.
pub fn checked_sub(a: i64, b: i64, what: &str) -> Result<i64, Overflow> {
    a.checked_sub(b).ok_or_else(|| Overflow(what.to_owned()))
}

/// The sum of `values`, or an [`Overflow`] naming `what`.
pub fn checked_sum(values: impl IntoIterator<Item = i64>, what: &str) -> Result<i64, Overflow> {
    values
        .into_iter()
        .try_fold(0_i64, |sum, v| checked_add(sum, v, what))
}

/// An amount in a currency's minor unit (cents for `usd`, yen for `jpy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Money {
    minor: i64,
    currency: Currency,
}

impl Money {
    pub fn new(minor: i64, currency: Currency) -> Self {
        Self { minor, currency }
    }

    /// The amount in minor units.
    pub fn minor(self) -> i64 {
        self.minor
    }

    pub fn currency(self) -> Currency {
        self.currency
    }

    /// `self + other` (same currency assumed: a wallet's amounts share one), or an [`Overflow`].
    pub fn checked_add(self, other: Money, what: &str) -> Result<Money, Overflow> {
        Ok(Self::new(
            checked_add(self.minor, other.minor, what)?,
            self.currency,
        ))
    }

    /// `self − other`, or an [`Overflow`].
    pub fn checked_sub(self, other: Money, what: &str) -> Result<Money, Overflow> {
        Ok(Self::new(
            checked_sub(self.minor, other.minor, what)?,
            self.currency,
        ))
    }

    /// The amount without the code: `12.34`, `-0.05`, `500` (zero-decimal currencies).
    pub fn decimal(self) -> String {
        let digits = self.currency.exponent();
        if digits == 0 {
            return self.minor.to_string();
        }
        let unit = 10_u64.pow(digits);
        let sign = if self.minor < 0 { "-" } else { "" };
        let abs = self.minor.unsigned_abs();
        format!(
            "{sign}{}.{:0width$}",
            abs / unit,
            abs % unit,
            width = digits as usize
        )
    }

    /// The amount as a change: `+20.00`, `-0.25`, or `0`.
    pub fn delta(self) -> String {
        match self.minor {
            0 => "0".to_owned(),
            d if d > 0 => format!("+{}", self.decimal()),
            _ => self.decimal(),
        }
    }
}

/// `12.34 USD`, `-0.05 EUR`, `500 JPY`.
impl fmt::Display for Money {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.decimal(), self.currency)
    }
}

/// A number of minor units without its currency: what the stored records keep beside a wallet
/// whose one currency the wallet item names (an email row's amount and its entries' amounts and
/// deltas, a shard's balance, held amount and floor). A type of its own rather than a bare `i64`,
/// so that an amount is never mistaken for a count, a time or a version, and its arithmetic is
/// checked ([`Minor::checked_add`], [`Minor::checked_sub`]: an [`Overflow`], never a wrapped
/// number); [`Minor::of`] gives it its wallet's currency as [`Money`]. Stored as the same number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Minor(i64);

impl Minor {
    /// No amount.
    pub const ZERO: Minor = Minor(0);

    /// `minor` minor units.
    pub const fn new(minor: i64) -> Self {
        Self(minor)
    }

    /// The number of minor units (as stored, and for the store's conditions).
    pub const fn get(self) -> i64 {
        self.0
    }

    /// The amount in `currency` (its wallet's).
    pub fn of(self, currency: Currency) -> Money {
        currency.amount(self.0)
    }

    /// `self + other`, or an [`Overflow`] naming `what`.
    pub fn checked_add(self, other: Minor, what: &str) -> Result<Minor, Overflow> {
        checked_add(self.0, other.0, what).map(Self)
    }

    /// `self − other`, or an [`Overflow`] naming `what`.
    pub fn checked_sub(self, other: Minor, what: &str) -> Result<Minor, Overflow> {
        checked_sub(self.0, other.0, what).map(Self)
    }
}

/// The amount's minor units, without its currency (a record that keeps the currency elsewhere).
impl From<Money> for Minor {
    fn from(money: Money) -> Self {
        Self(money.minor())
    }
}

/// The bare number (`-25`), as the items and the operator's tables write it.
impl fmt::Display for Minor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn money(minor: i64, code: &str) -> String {
        Currency::parse(code).unwrap().amount(minor).to_string()
    }

    #[test]
    fn amounts_are_formatted_in_the_currency() {
        assert_eq!(money(1234, "usd"), "12.34 USD");
        assert_eq!(money(5, "eur"), "0.05 EUR");
        assert_eq!(money(-5, "eur"), "-0.05 EUR");
        assert_eq!(money(-1234, "usd"), "-12.34 USD");
        assert_eq!(money(0, "usd"), "0.00 USD");
        assert_eq!(money(500, "jpy"), "500 JPY");
        assert_eq!(money(-500, "JPY"), "-500 JPY");
        assert_eq!(money(1234, "kwd"), "1.234 KWD");
        assert_eq!(money(i64::MIN, "usd"), "-92233720368547758.08 USD");
        let usd = Currency::parse("usd").unwrap();
        assert_eq!(usd.amount(2000).delta(), "+20.00");
        assert_eq!(usd.amount(-25).delta(), "-0.25");
        assert_eq!(usd.amount(0).delta(), "0");
        assert_eq!(usd.amount(-25).decimal(), "-0.25");
        assert_eq!(usd.amount(7).minor(), 7);
    }

    #[test]
    fn sums_are_checked() {
        let usd = Currency::parse("usd").unwrap();
        assert_eq!(checked_sum([1, 2, -4], "x"), Ok(-1));
        assert_eq!(checked_sum([], "x"), Ok(0));
        assert_eq!(
            checked_sum([i64::MAX, 1], "the balance"),
            Err(Overflow("the balance".into()))
        );
        assert_eq!(
            Overflow("the balance".into()).to_string(),
            "the balance overflows (does not fit in a 64-bit number of minor units)"
        );
        assert!(checked_sub(i64::MIN, 1, "x").is_err());
        assert_eq!(
            usd.amount(5).checked_add(usd.amount(7), "x"),
            Ok(usd.amount(12))
        );
        assert!(usd
            .amount(i64::MIN)
            .checked_sub(usd.amount(1), "x")
            .is_err());
        assert_eq!(
            Minor::new(5).checked_add(Minor::new(7), "x"),
            Ok(Minor::new(12))
        );
        assert_eq!(
            Minor::new(i64::MAX).checked_add(Minor::new(1), "the balance"),
            Err(Overflow("the balance".into()))
        );
        assert!(Minor::new(i64::MIN)
            .checked_sub(Minor::new(1), "x")
            .is_err());
        assert_eq!(Minor::new(-25).of(usd), usd.amount(-25));
        assert_eq!(Minor::from(usd.amount(7)), Minor::new(7));
        assert_eq!(Minor::new(-25).to_string(), "-25");
    }

    #[test]
    fn currencies_are_three_letters_lower_cased_with_their_exponent() {
        let c = |s: &str| Currency::parse(s).map(|c| (c.as_str().to_owned(), c.exponent()));
        assert_eq!(c("USD"), Ok(("usd".to_owned(), 2)));
        assert_eq!(c(" eur "), Ok(("eur".to_owned(), 2)));
        assert_eq!(c("jpy"), Ok(("jpy".to_owned(), 0)));
        assert_eq!(c("KRW"), Ok(("krw".to_owned(), 0)));
        assert_eq!(c("bhd"), Ok(("bhd".to_owned(), 3)));
        assert_eq!(c("Kwd"), Ok(("kwd".to_owned(), 3)));
        for bad in ["", "us", "usdx", "u$d", "€€€", "u d"] {
            assert_eq!(c(bad), Err(InvalidCurrency(bad.to_owned())), "{bad:?}");
        }
        assert_eq!(
            InvalidCurrency("dollars".into()).to_string(),
            "currency \"dollars\" is not a three-letter ISO 4217 code (usd, eur, jpy, …)"
        );
        assert_eq!(
            "chf".parse::<Currency>().map(|c| c.to_string()),
            Ok("CHF".to_owned())
        );
    }
}
