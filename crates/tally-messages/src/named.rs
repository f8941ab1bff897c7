//! Serde for the accounting crate's named choices (neighbour relation, analysis,
//! composition): written as their names, read with their `FromStr`.

use std::fmt::Display;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serializer, de};

pub(crate) fn serialize<T: Display, S: Serializer>(
    value: &T,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_str(value)
}

pub(crate) fn deserialize<'de, T, D>(deserializer: D) -> Result<T, D::Error>
where
    T: FromStr,
    T::Err: Display,
    D: Deserializer<'de>,
{
    let name = String::deserialize(deserializer)?;
    name.parse().map_err(de::Error::custom)
}

/// The same for an optional choice: a name or absent.
pub(crate) mod optional {
    use std::fmt::Display;
    use std::str::FromStr;

    use serde::{Deserializer, Serializer};

    pub(crate) fn serialize<T: Display, S: Serializer>(
        value: &Option<T>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(value) => super::serialize(value, serializer),
            None => serializer.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, T, D>(deserializer: D) -> Result<Option<T>, D::Error>
    where
        T: FromStr,
        T::Err: Display,
        D: Deserializer<'de>,
    {
        super::deserialize(deserializer).map(Some)
    }
}
