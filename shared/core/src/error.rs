//! What every error shares: its chain of causes, read in one place.
//!
//! [`chain`] walks an error and its `source()`s, outermost first (to find a cause of one type);
//! [`one_line`] writes them as `error: cause: cause`, the form of a message's history entries, a
//! delivery attempt's error, the functions' logs and `inboxctl`'s errors: the one place that
//! formats a cause chain (no other `source()` loop, no anyhow `{:#}`). A cause whose text the
//! line already holds is left out: many errors repeat their cause in their own message
//! (`#[error("{0}")]` wrappers, hyper's and the AWS SDK's errors), and the line would otherwise
//! say it twice.

use std::error::Error;

/// `error` and each of its causes, outermost first.
pub fn chain<'a>(
    error: &'a (dyn Error + 'static),
) -> impl Iterator<Item = &'a (dyn Error + 'static)> {
    std::iter::successors(Some(error), |&e| e.source())
}

/// `error: cause: cause …` on one line, each text once.
pub fn one_line(error: &(dyn Error + 'static)) -> String {
    let mut text = error.to_string();
    for cause in chain(error).skip(1) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("the root cause")]
    struct Root;

    #[derive(Debug, thiserror::Error)]
    #[error("{what}")]
    struct Wrap {
        what: String,
        #[source]
        cause: Box<dyn Error + Send + Sync>,
    }

    fn wrap(what: &str, cause: impl Error + Send + Sync + 'static) -> Wrap {
        Wrap {
            what: what.into(),
            cause: Box::new(cause),
        }
    }

    #[test]
    fn one_line_names_every_cause_outermost_first() {
        let e = wrap("the store is unavailable", wrap("dispatch failure", Root));
        assert_eq!(
            one_line(&e),
            "the store is unavailable: dispatch failure: the root cause"
        );
        assert_eq!(
            one_line(&Root),
            "the root cause",
            "no causes: the error alone"
        );
    }

    #[test]
    fn a_cause_the_line_already_says_is_left_out() {
        // A wrapper that prints its cause (`#[error("{0}")]`, hyper's `client error (Connect)`).
        let e = wrap("connect failed: the root cause", Root);
        assert_eq!(one_line(&e), "connect failed: the root cause");
        let e = wrap("outer", wrap("the root cause", Root));
        assert_eq!(one_line(&e), "outer: the root cause");
    }

    #[test]
    fn chain_finds_a_cause_of_one_type() {
        let e = wrap("outer", wrap("middle", Root));
        assert_eq!(chain(&e).count(), 3);
        assert!(chain(&e).any(|c| c.downcast_ref::<Root>().is_some()));
        assert!(chain(&Root).nth(1).is_none());
    }
}
