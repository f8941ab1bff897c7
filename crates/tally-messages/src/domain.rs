//! The parameters of a histogram over a public domain: the mechanism and the domain.

use serde::{Deserialize, Serialize};
use tally_core::histogram::DomainMap;

/// The mechanisms over a public domain the federated runtime runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DomainHistogramMechanism {
    /// Central discrete Laplace noise on every count: pure `ε`.
    Laplace,
    /// Central discrete Gaussian noise on every count: `(ε, δ)`.
    Gaussian,
    /// Balcer–Cheu's multi-message shuffle protocol: `(ε, δ)` in the shuffle model.
    BalcerCheu,
    /// Generalized randomized response behind a shuffler: `(ε, δ)` in the shuffle model.
    ShuffledGrr,
}

impl DomainHistogramMechanism {
    /// Its name, as on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::Laplace => "laplace",
            Self::Gaussian => "gaussian",
            Self::BalcerCheu => "balcer-cheu",
            Self::ShuffledGrr => "shuffled-grr",
        }
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

impl From<PublicDomain> for DomainMap {
    fn from(domain: PublicDomain) -> Self {
        match domain {
            PublicDomain::Integers(size) => Self::Integers(size),
            PublicDomain::Buckets(size) => Self::Buckets(size),
        }
    }
}

impl From<DomainMap> for PublicDomain {
    fn from(map: DomainMap) -> Self {
        match map {
            DomainMap::Integers(size) => Self::Integers(size),
            DomainMap::Buckets(size) => Self::Buckets(size),
        }
    }
}

#[cfg(test)]
mod tests {
    use rand_chacha::ChaCha20Rng;
    use rand_chacha::rand_core::SeedableRng;

    use super::*;
    use crate::{Ask, Sampling, TaskKind};

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
            }
        );
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
    fn a_device_answers_with_its_element_and_refuses_a_domain_of_one() {
        let ask = Ask::DomainElement {
            domain: PublicDomain::Integers(16),
        };
        let responder = ask.responder(Sampling::Aggregator).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(0);
        assert_eq!(responder.respond("15", 8, &mut rng), Some("15".to_owned()));
        assert_eq!(responder.respond("16", 8, &mut rng), None);
        let tiny = Ask::DomainElement {
            domain: PublicDomain::Buckets(1),
        };
        assert!(tiny.responder(Sampling::Aggregator).is_err());
    }
}
