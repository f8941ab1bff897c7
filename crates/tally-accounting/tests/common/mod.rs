//! Helpers shared by the vector tests.

use serde::{Deserialize, Deserializer};

/// A double, written in the JSON as its shortest decimal string and parsed exactly here, so
/// that ulp-exact checks do not depend on a JSON number parser.
#[derive(Clone, Copy, Debug)]
pub(crate) struct X(pub(crate) f64);

impl<'de> Deserialize<'de> for X {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map(X).map_err(serde::de::Error::custom)
    }
}
