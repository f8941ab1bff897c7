//! How a message names a parameter the user sets: as the command line's flag (`--delta`, the
//! default) or as the Python package's keyword argument (`delta=`).
//!
//! Library errors say which parameter they are about ([`Parameter`], or the `name` of
//! [`crate::Error::InvalidParameter`]); the front end in use chooses, once per process, how
//! parameters are named ([`name_parameters_as`]), so one message serves every front end.

use std::fmt;
use std::sync::OnceLock;

/// How parameters are named in messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Naming {
    /// The command line's flags: `--sampling-rate`, `--sampling-rate 0.5` (the default).
    Flags,
    /// Python's keyword arguments: `sampling_rate=`, `sampling_rate=0.5`.
    Keywords,
}

static NAMING: OnceLock<Naming> = OnceLock::new();

/// Names parameters as `naming` for the rest of the process: a front end calls it once, before
/// any message is made.
///
/// # Errors
///
/// The naming already chosen, if it differs (a process has one front end).
pub fn name_parameters_as(naming: Naming) -> Result<(), Naming> {
    let chosen = *NAMING.get_or_init(|| naming);
    if chosen == naming {
        Ok(())
    } else {
        Err(chosen)
    }
}

/// How parameters are named in this process ([`Naming::Flags`] unless a front end chose).
#[must_use]
pub fn naming() -> Naming {
    NAMING.get().copied().unwrap_or(Naming::Flags)
}

/// A parameter the user sets, by its keyword (`"sampling_rate"`); shown as the front end in
/// use names it: `--sampling-rate` or `sampling_rate=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parameter(pub &'static str);

impl Parameter {
    /// The parameter set to `value`: `--lo 0.5` or `lo=0.5`.
    #[must_use]
    pub fn with(self, value: impl fmt::Display) -> impl fmt::Display {
        Valued(self, value.to_string(), false)
    }

    /// The parameter set to the named choice `choice`: `--method hierarchical` or
    /// `method="hierarchical"`.
    #[must_use]
    pub fn with_choice(self, choice: &str) -> impl fmt::Display {
        Valued(self, choice.to_owned(), true)
    }
}

impl fmt::Display for Parameter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match naming() {
            Naming::Flags => write!(f, "--{}", self.0.replace('_', "-")),
            Naming::Keywords => write!(f, "{}=", self.0),
        }
    }
}

/// A parameter with its value ([`Parameter::with`]); `quoted` for a named choice.
struct Valued(Parameter, String, bool);

impl fmt::Display for Valued {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self(parameter, value, quoted) = self;
        match (naming(), quoted) {
            (Naming::Flags, _) => write!(f, "{parameter} {value}"),
            (Naming::Keywords, false) => write!(f, "{parameter}{value}"),
            (Naming::Keywords, true) => write!(f, "{parameter}{value:?}"),
        }
    }
}

/// `invalid NAME = VALUE` for the command line (`name` in words, as the user knows it:
/// `sampling rate`), `invalid sampling_rate=VALUE` for Python: the head of every
/// invalid-parameter message.
#[must_use]
pub fn invalid(name: &str, value: &str) -> String {
    match naming() {
        Naming::Flags => format!("invalid {name} = {value}"),
        Naming::Keywords => format!("invalid {}={value}", name.replace(' ', "_")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_names_flags_by_default() {
        assert_eq!(naming(), Naming::Flags);
        assert_eq!(Parameter("sampling_rate").to_string(), "--sampling-rate");
        assert_eq!(Parameter("lo").with(0.5).to_string(), "--lo 0.5");
        assert_eq!(
            Parameter("method").with_choice("hierarchical").to_string(),
            "--method hierarchical"
        );
        assert_eq!(invalid("sampling rate", "2"), "invalid sampling rate = 2");
        assert_eq!(name_parameters_as(Naming::Flags), Ok(()));
        assert_eq!(name_parameters_as(Naming::Keywords), Err(Naming::Flags));
    }
}
