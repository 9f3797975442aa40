//! Where a signing secret given to `inboxctl` comes from, so that it need not be on the command
//! line (where `ps` and the shell's history show it): `--secret`, else `INBOXCTL_SECRET`
//! (comma-separated for several), else asked for (on a terminal, without echo) or read from
//! standard input (one secret a line).

use crate::error::{usage, Result};
use inbox_core::config::{catalog, Env};
use std::io::{BufRead as _, IsTerminal as _, Write as _};

/// How a secret is asked for when neither the flag nor the variable gives one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ask {
    /// Ask (a terminal) or read standard input; none is a usage error.
    Required,
    /// Do not ask: none given is fine (the caller generates one).
    Never,
}

/// The secrets given: the flag's, else the variable's, else (with [`Ask::Required`]) `ask()`'s.
pub fn secrets_from(
    flag: &[String],
    env: &Env,
    ask: Ask,
    asked: impl FnOnce() -> Vec<String>,
) -> Result<Vec<String>> {
    if !flag.is_empty() {
        return Ok(flag.to_vec());
    }
    if let Some(value) = env.optional(&catalog::INBOXCTL_SECRET) {
        let listed: Vec<String> = value
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        if !listed.is_empty() {
            return Ok(listed);
        }
    }
    if ask == Ask::Never {
        return Ok(Vec::new());
    }
    let asked = asked();
    if asked.is_empty() {
        return Err(usage(
            "no signing secret: set INBOXCTL_SECRET, type it when asked, pipe it on standard \
             input, or pass --secret (visible to other users in the process list)",
        ));
    }
    Ok(asked)
}

/// Asks on the terminal (echo off while typing), or reads standard input's lines when it is not a
/// terminal.
pub fn ask_stdin() -> Vec<String> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return stdin
            .lock()
            .lines()
            .map_while(|l| l.ok())
            .map(|l| l.trim().to_owned())
            .filter(|l| !l.is_empty())
            .collect();
    }
    eprint!("signing secret (whsec_…): ");
    let _ = std::io::stderr().flush();
    let echo_off = stty("-echo");
    let mut line = String::new();
    let read = stdin.lock().read_line(&mut line);
    if echo_off {
        stty("echo");
        eprintln!();
    }
    match read {
        Ok(_) if !line.trim().is_empty() => vec![line.trim().to_owned()],
        _ => Vec::new(),
    }
}

/// Sets a terminal mode on standard input with `stty` (best effort: false if it did not run).
fn stty(mode: &str) -> bool {
    std::process::Command::new("stty")
        .arg(mode)
        .stdin(std::process::Stdio::inherit())
        .status()
        .is_ok_and(|s| s.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(secret: Option<&str>) -> Env {
        Env::from_pairs(secret.map(|s| ("INBOXCTL_SECRET", s)))
    }

    fn never_asked() -> Vec<String> {
        panic!("asked although given")
    }

    #[test]
    fn the_flag_then_the_variable_then_the_prompt() {
        let flag = vec!["whsec_flag".to_owned()];
        assert_eq!(
            secrets_from(&flag, &env(Some("whsec_env")), Ask::Required, never_asked).unwrap(),
            flag
        );
        assert_eq!(
            secrets_from(
                &[],
                &env(Some("whsec_a, whsec_b,")),
                Ask::Required,
                never_asked
            )
            .unwrap(),
            ["whsec_a", "whsec_b"]
        );
        assert_eq!(
            secrets_from(
                &[],
                &env(None),
                Ask::Required,
                || vec!["whsec_typed".into()]
            )
            .unwrap(),
            ["whsec_typed"]
        );
        assert_eq!(
            secrets_from(&[], &env(Some(" ")), Ask::Required, || vec![
                "whsec_typed".into()
            ])
            .unwrap(),
            ["whsec_typed"],
            "an empty variable is not a secret"
        );
    }

    #[test]
    fn none_given_is_a_usage_error_unless_optional() {
        let e = secrets_from(&[], &env(None), Ask::Required, Vec::new).unwrap_err();
        assert!(e.to_string().contains("INBOXCTL_SECRET"), "{e}");
        assert!(secrets_from(&[], &env(None), Ask::Never, never_asked)
            .unwrap()
            .is_empty());
    }
}
