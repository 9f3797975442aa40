//! How an environment variable is documented: [`Var`] (its name, who reads it, what applies when it
//! is unset, what it means), declared once beside the code that reads it and passed to
//! [`super::env::Env`] to read it. `docs/configuration.md`'s tables are rendered from these
//! declarations ([`table`], [`read_by`]) and kept in step by [`splice`]: the text between
//! `<!-- config:begin KIND -->` and `<!-- config:end -->` is what the declarations render.
//!
//! Kinds: `table` (every variable given, one row each) and `read-by NAME` (the variables `NAME`
//! reads, with their defaults, on one line).
//!
//! The core names its own functions only ([`readers`]): a variable every function reads says so
//! ([`ReadBy::EveryFunction`]), and which functions the deployment has (the applications' among
//! them) is told by whoever renders the page ([`splice`]'s `functions`).

/// One environment variable, documented where it is declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Var {
    pub name: &'static str,
    pub read_by: ReadBy,
    pub unset: Unset,
    /// What it means: one line of Markdown (no `|`).
    pub meaning: &'static str,
}

/// Who reads a variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadBy {
    /// Every function and the CLI (`inboxctl`).
    Everyone,
    /// Every function of the deployment (not `inboxctl`): those of the applications built on the
    /// core too, which the core does not name; the page's renderer lists them.
    EveryFunction,
    /// Every function of the deployment but these (not `inboxctl`).
    EveryFunctionBut(&'static [&'static str]),
    /// These only: functions by their name in `template.yaml` (`ingest`, `process`, …) or
    /// `inboxctl`.
    Only(&'static [&'static str]),
    /// A library, not this code (the AWS SDK, `lambda_runtime`); the text says who links it.
    /// Documented for completeness, never read through [`super::env::Env`].
    Library(&'static str),
}

/// What applies when a variable is unset (or empty, or only blanks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unset {
    /// Reading it fails, naming it.
    Required,
    /// Reading it fails unless the other variable is set.
    RequiredUnless(&'static str),
    /// This value, parsed as a set value would be.
    Default(&'static str),
    /// Nothing: the meaning says what happens.
    Optional,
}

/// The function names as `template.yaml` calls them, and the CLI, for [`ReadBy::Only`]: the
/// core's (an application names its own functions in its crate).
pub mod readers {
    pub const INGEST: &str = "ingest";
    pub const PROCESS: &str = "process";
    pub const REAPER: &str = "reaper";
    pub const RECONCILE: &str = "reconcile";
    pub const DELIVER: &str = "deliver";
    /// The scheduled Stripe catch-up (`functions/catch-up`): it stores events as ingest does.
    pub const CATCH_UP: &str = "catch-up";
    pub const INBOXCTL: &str = "inboxctl";
}

impl Var {
    /// The documented default, if any.
    pub fn default_value(&self) -> Option<&'static str> {
        match self.unset {
            Unset::Default(v) => Some(v),
            _ => None,
        }
    }

    /// Whether `reader` (a function, or `inboxctl`) reads it itself (library variables
    /// excluded).
    pub fn is_read_by(&self, reader: &str) -> bool {
        match self.read_by {
            ReadBy::Everyone => true,
            ReadBy::EveryFunction => reader != readers::INBOXCTL,
            ReadBy::EveryFunctionBut(but) => reader != readers::INBOXCTL && !but.contains(&reader),
            ReadBy::Only(names) => names.contains(&reader),
            ReadBy::Library(_) => false,
        }
    }
}

/// Every variable given, as a Markdown table (`variable | read by | default | meaning`), one line
/// per row, ending with a newline. `functions`: the deployment's functions, in the order a
/// variable every function reads lists them.
pub fn table(vars: &[&Var], functions: &[&str]) -> String {
    let mut out = String::from("| variable | read by | default | meaning |\n|---|---|---|---|\n");
    for v in vars {
        let read_by = match v.read_by {
            ReadBy::Everyone => "every function, inboxctl".to_owned(),
            ReadBy::EveryFunction | ReadBy::EveryFunctionBut(_) => functions
                .iter()
                .filter(|f| v.is_read_by(f))
                .copied()
                .collect::<Vec<_>>()
                .join(", "),
            ReadBy::Only(names) => names.join(", "),
            ReadBy::Library(who) => who.to_owned(),
        };
        let default = match v.unset {
            Unset::Required => "required".to_owned(),
            Unset::RequiredUnless(other) => format!("required unless `{other}` is set"),
            Unset::Default(value) => format!("`{value}`"),
            Unset::Optional => "none".to_owned(),
        };
        let cells = [
            format!("`{}`", v.name),
            read_by,
            default,
            v.meaning.to_owned(),
        ];
        out.push('|');
        for cell in cells {
            out.push(' ');
            out.push_str(&cell.replace('|', "\\|").replace('\n', " "));
            out.push_str(" |");
        }
        out.push('\n');
    }
    out
}

/// The variables `reader` reads, in the order given, on one line: `` `A`, `B` (5), `C` (`x`) ``
/// (numeric defaults bare, others as code).
pub fn read_by(reader: &str, vars: &[&Var]) -> String {
    vars.iter()
        .filter(|v| v.is_read_by(reader))
        .map(|v| match v.default_value() {
            Some(d) if !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()) => {
                format!("`{}` ({d})", v.name)
            }
            Some(d) => format!("`{}` (`{d}`)", v.name),
            None => format!("`{}`", v.name),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

const BEGIN: &str = "<!-- config:begin ";
const END: &str = "<!-- config:end -->";

/// A marked section that cannot be rendered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpliceError {
    #[error("a `{BEGIN}…-->` marker is not closed by `-->`")]
    UnclosedBegin,
    #[error("the section `{0}` has no `{END}`")]
    MissingEnd(String),
    #[error("unknown section kind `{0}` (expected `table` or `read-by NAME`)")]
    UnknownKind(String),
    #[error("the section `read-by {0}` names no reader: no variable is read by `{0}` alone")]
    UnknownReader(String),
}

/// `text` with every marked section re-rendered from `vars`: a `table` section becomes the table
/// on lines of its own, a `read-by NAME` section the list inline. Text outside the sections is
/// kept byte for byte. `functions`: the deployment's functions (the core's and its
/// applications'), for the variables every function reads.
pub fn splice(text: &str, vars: &[&Var], functions: &[&str]) -> Result<String, SpliceError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(BEGIN) {
        let after = &rest[at + BEGIN.len()..];
        let close = after.find("-->").ok_or(SpliceError::UnclosedBegin)?;
        let kind = after[..close].trim();
        let body_start = at + BEGIN.len() + close + "-->".len();
        let end = rest[body_start..]
            .find(END)
            .ok_or_else(|| SpliceError::MissingEnd(kind.to_owned()))?;
        let rendered = match kind.split_whitespace().collect::<Vec<_>>()[..] {
            ["table"] => format!("\n{}", table(vars, functions)),
            ["read-by", reader] => {
                let known = functions.contains(&reader)
                    || vars.iter().any(
                        |v| matches!(v.read_by, ReadBy::Only(names) if names.contains(&reader)),
                    );
                if !known {
                    return Err(SpliceError::UnknownReader(reader.to_owned()));
                }
                read_by(reader, vars)
            }
            _ => return Err(SpliceError::UnknownKind(kind.to_owned())),
        };
        out.push_str(&rest[..body_start]);
        out.push_str(&rendered);
        out.push_str(END);
        rest = &rest[body_start + end + END.len()..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Var = Var {
        name: "A_URL",
        read_by: ReadBy::Everyone,
        unset: Unset::Required,
        meaning: "where | it is",
    };
    const B: Var = Var {
        name: "B_MAX",
        read_by: ReadBy::Only(&["process", "inboxctl"]),
        unset: Unset::Default("5"),
        meaning: "how many",
    };
    const C: Var = Var {
        name: "C_NAME",
        read_by: ReadBy::Only(&["process"]),
        unset: Unset::Default("stripe"),
        meaning: "which",
    };
    const D: Var = Var {
        name: "D_LOG",
        read_by: ReadBy::Library("every function (`lib`)"),
        unset: Unset::Optional,
        meaning: "logs",
    };
    const E: Var = Var {
        name: "E_LEVEL",
        read_by: ReadBy::EveryFunction,
        unset: Unset::Optional,
        meaning: "level",
    };
    const F: Var = Var {
        name: "F_STAGE",
        read_by: ReadBy::EveryFunctionBut(&["reaper"]),
        unset: Unset::Optional,
        meaning: "stage",
    };
    /// The deployment's functions, as the page's renderer supplies them.
    const FUNCTIONS: &[&str] = &["process", "reaper", "app"];

    #[test]
    fn renders_a_table_and_reader_lists() {
        assert_eq!(
            table(&[&A, &B, &D], FUNCTIONS),
            "| variable | read by | default | meaning |\n|---|---|---|---|\n\
             | `A_URL` | every function, inboxctl | required | where \\| it is |\n\
             | `B_MAX` | process, inboxctl | `5` | how many |\n\
             | `D_LOG` | every function (`lib`) | none | logs |\n"
        );
        let all = [&A, &B, &C, &D];
        assert_eq!(
            read_by("process", &all),
            "`A_URL`, `B_MAX` (5), `C_NAME` (`stripe`)"
        );
        assert_eq!(read_by("reaper", &all), "`A_URL`");
        assert!(!D.is_read_by("process"), "library variables are not ours");
    }

    #[test]
    fn variables_every_function_reads_list_the_functions_the_renderer_gives() {
        assert_eq!(
            table(&[&E, &F], FUNCTIONS),
            "| variable | read by | default | meaning |\n|---|---|---|---|\n\
             | `E_LEVEL` | process, reaper, app | none | level |\n\
             | `F_STAGE` | process, app | none | stage |\n"
        );
        let all = [&A, &E, &F];
        assert_eq!(read_by("reaper", &all), "`A_URL`, `E_LEVEL`");
        assert_eq!(read_by("app", &all), "`A_URL`, `E_LEVEL`, `F_STAGE`");
        assert_eq!(
            read_by("inboxctl", &all),
            "`A_URL`",
            "the CLI is no function"
        );
        let text = "App: <!-- config:begin read-by app --><!-- config:end -->";
        assert_eq!(
            splice(text, &all, FUNCTIONS).unwrap(),
            "App: <!-- config:begin read-by app -->`A_URL`, `E_LEVEL`, `F_STAGE`<!-- config:end -->",
            "a function the renderer names is a known reader"
        );
    }

    #[test]
    fn splices_marked_sections_and_keeps_the_rest() {
        let text = "# T\n<!-- config:begin table -->\nstale\n<!-- config:end -->\n\
                    Process: <!-- config:begin read-by process -->old<!-- config:end -->.\n";
        let out = splice(text, &[&A, &B], FUNCTIONS).unwrap();
        assert_eq!(
            out,
            format!(
                "# T\n<!-- config:begin table -->\n{}<!-- config:end -->\n\
                 Process: <!-- config:begin read-by process -->`A_URL`, `B_MAX` (5)<!-- config:end -->.\n",
                table(&[&A, &B], FUNCTIONS)
            )
        );
        assert_eq!(
            splice(&out, &[&A, &B], FUNCTIONS).unwrap(),
            out,
            "idempotent"
        );
        assert_eq!(
            splice("no markers", &[&A], FUNCTIONS).unwrap(),
            "no markers"
        );
    }

    #[test]
    fn bad_sections_are_refused() {
        let e = |t: &str| splice(t, &[&A, &B], FUNCTIONS).unwrap_err();
        assert_eq!(
            e("<!-- config:begin table -->"),
            SpliceError::MissingEnd("table".into())
        );
        assert_eq!(
            e("<!-- config:begin tabel --><!-- config:end -->"),
            SpliceError::UnknownKind("tabel".into())
        );
        assert_eq!(
            e("<!-- config:begin read-by nobody --><!-- config:end -->"),
            SpliceError::UnknownReader("nobody".into())
        );
        assert_eq!(e("<!-- config:begin table"), SpliceError::UnclosedBegin);
    }
}
