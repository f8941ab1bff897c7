//! Privacy guarantees as released next to every result.

use std::fmt;
use std::str::FromStr;

use crate::Error;

/// Which pairs of datasets a guarantee protects against telling apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Neighbours {
    /// One client present or absent.
    AddRemove,
    /// One client's data replaced by other data.
    ReplaceOne,
}

impl Neighbours {
    /// The name used on the command line and in JSON output.
    pub fn name(self) -> &'static str {
        match self {
            Self::AddRemove => "add-remove",
            Self::ReplaceOne => "replace-one",
        }
    }
}

impl fmt::Display for Neighbours {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Neighbours {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "add-remove" => Ok(Self::AddRemove),
            "replace-one" => Ok(Self::ReplaceOne),
            other => Err(Error::invalid(
                "neighbours",
                other,
                "add-remove or replace-one",
            )),
        }
    }
}

/// An approximate differential-privacy guarantee `(ε, δ)` with the neighbour relation it holds
/// for and the analysis that proved it.
#[derive(Clone, Debug, PartialEq)]
pub struct Guarantee {
    /// The privacy-loss bound ε.
    pub epsilon: f64,
    /// The failure probability δ, an upper bound.
    pub delta: f64,
    /// The neighbour relation.
    pub neighbours: Neighbours,
    /// The analysis that gives the guarantee, by name (for example `tight`).
    pub analysis: String,
}
