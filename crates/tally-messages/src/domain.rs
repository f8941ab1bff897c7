//! The parameters of a histogram over a public domain on the wire: the mechanism and the
//! domain. The registry (`tally-protocol`) builds each mechanism's round from them.

use serde::de::IntoDeserializer;
use serde::{Deserialize, Serialize};

/// The mechanisms over a public domain, as the simulator, the federated runtime and the command
/// line know them (with the `clap` feature, each variant's first doc line is its help text).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(any(test, feature = "clap"), derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum DomainHistogramMechanism {
    /// Generalized randomized response, k-RR (local, pure ε-LDP).
    Grr,
    /// Symmetric unary encoding, basic RAPPOR (local, pure ε-LDP).
    Sue,
    /// Optimized unary encoding (local, pure ε-LDP).
    Oue,
    /// Optimized local hashing (local, pure ε-LDP).
    Olh,
    /// Basic Hadamard response (local, pure ε-LDP).
    HadamardResponse,
    /// Subset selection, k ≈ B/(e^ε + 1) items per report (local, pure ε-LDP).
    SubsetSelection,
    /// Laplace noise on every count, exact discrete Laplace (central, pure ε).
    Laplace,
    /// Discrete Gaussian noise on every count (central, (ε, δ)).
    Gaussian,
    /// Balcer–Cheu Bernoulli-noise histogram, 1 + B·p messages per client (shuffle, (ε, δ)).
    BalcerCheu,
    /// k-RR reports amplified by shuffling, one message per client (shuffle, (ε, δ)).
    ShuffledGrr,
    /// Ghazi et al.'s private-coin multi-message Hadamard response (shuffle, (ε, δ); B a power
    /// of 2).
    GhaziHadamard,
    /// Ghazi et al.'s public-coin Count-Min sketch with binomial blanket noise (shuffle, (ε, δ)).
    GhaziCountMin,
}

impl DomainHistogramMechanism {
    /// Its name, as on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::Laplace => "laplace",
            Self::Gaussian => "gaussian",
            Self::BalcerCheu => "balcer-cheu",
            Self::ShuffledGrr => "shuffled-grr",
            Self::Grr => "grr",
            Self::Sue => "sue",
            Self::Olh => "olh",
            Self::HadamardResponse => "hadamard-response",
            Self::SubsetSelection => "subset-selection",
            Self::Oue => "oue",
            Self::GhaziHadamard => "ghazi-hadamard",
            Self::GhaziCountMin => "ghazi-count-min",
        }
    }

    /// The mechanism named `name` (its [`name`](Self::name)), if the runtime runs it.
    pub fn named(name: &str) -> Option<Self> {
        let name: serde::de::value::StrDeserializer<'_, serde::de::value::Error> =
            name.into_deserializer();
        Self::deserialize(name).ok()
    }

    /// Whether the mechanism publishes public coins with its query, drawn from the seed the
    /// registry calibrates it with (`tally_protocol::ShuffleCalibration::public_coins`) when it
    /// is built (Count-Min's hash functions).
    pub fn publishes_coins(self) -> bool {
        matches!(self, Self::GhaziCountMin)
    }

    /// Whether the mechanism adds its noise to the exact counts (central): its guarantee then
    /// holds under the neighbour relation it is calibrated for, where a local or shuffle
    /// mechanism's guarantee, from each report's randomizer, holds for replace-one neighbours.
    pub fn is_central(self) -> bool {
        matches!(self, Self::Laplace | Self::Gaussian)
    }

    /// Whether the mechanism's guarantee trusts a shuffler, and so holds only when at least
    /// the devices it was calibrated for report (`tally_protocol::ShuffleCalibration::clients`).
    pub fn is_shuffled(self) -> bool {
        matches!(
            self,
            Self::BalcerCheu | Self::ShuffledGrr | Self::GhaziHadamard | Self::GhaziCountMin
        )
    }
}

/// A public domain `0..B` and how a device places its item in it, fixed before any data are
/// seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum PublicDomain {
    /// Items are integers in `0..B`, written in decimal.
    Integers(u32),
    /// Any item goes to bucket `⌊xxh3_64(utf-8 bytes)·B/2^64⌋`.
    Buckets(u32),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Ask, TaskKind};

    #[test]
    fn a_domain_histogram_is_spelled_as_documented() {
        let kind: TaskKind = serde_json::from_str(
            r#"{"type": "domain-histogram", "mechanism": "gaussian", "domain": {"buckets": 64}}"#,
        )
        .unwrap();
        assert_eq!(
            kind,
            TaskKind::DomainHistogram {
                mechanism: DomainHistogramMechanism::Gaussian,
                domain: PublicDomain::Buckets(64),
                public_coins: None,
            }
        );
        let count_min: TaskKind = serde_json::from_str(
            r#"{"type": "domain-histogram", "mechanism": "ghazi-count-min",
                "domain": {"integers": 4}, "public_coins": 7}"#,
        )
        .unwrap();
        assert!(matches!(
            count_min,
            TaskKind::DomainHistogram {
                public_coins: Some(7),
                ..
            }
        ));
        let ask = Ask::DomainElement {
            domain: PublicDomain::Integers(16),
        };
        assert_eq!(
            serde_json::to_string(&ask).unwrap(),
            r#"{"type":"domain-element","domain":{"integers":16}}"#
        );
        assert!(serde_json::from_str::<PublicDomain>(r#"{"integers": 4, "buckets": 4}"#).is_err());
    }

    #[test]
    fn every_mechanism_is_named_as_on_the_command_line() {
        use clap::ValueEnum;
        for &mechanism in DomainHistogramMechanism::value_variants() {
            assert_eq!(
                DomainHistogramMechanism::named(mechanism.name()),
                Some(mechanism)
            );
            assert_eq!(
                serde_json::to_value(mechanism).unwrap(),
                mechanism.name(),
                "{mechanism:?}"
            );
            let option = mechanism.to_possible_value().unwrap();
            assert_eq!(option.get_name(), mechanism.name(), "{mechanism:?}");
        }
        assert_eq!(DomainHistogramMechanism::named("sample-threshold"), None);
    }
}
