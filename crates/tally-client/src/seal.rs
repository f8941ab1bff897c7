//! A device of a split-trust population: it seals every message of its report to the
//! aggregator's public key (tally-seal: HPKE, RFC 9180), bound to the round, and uploads the
//! sealed messages to the relay, which cannot read them.
//!
//! # Privacy
//!
//! The relay sees who uploads and never what: that holds only if the key is the aggregator's.
//! A relay that handed devices a key of its own could open everything, so the key never comes
//! through the relay: [`AggregatorKey::fetch`] reads it from the aggregator's own address
//! (refusing the relay's, and plain HTTP anywhere but loopback, where the network or the
//! relay could answer in the aggregator's place), and [`AggregatorKey::pinned`] takes it from
//! the device's configuration. Each message is sealed with fresh randomness from the operating
//! system (its ephemeral key and its report id), never from a fleet's seeded coins.

use tally_messages::RoundQuery;
use tally_seal::{Binding, KeyConfig, decode_key_configs};

use crate::client::Client;
use crate::error::ClientError;

/// The aggregator's public key configuration a device seals to: the first of those the
/// aggregator serves (its current key).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AggregatorKey {
    config: KeyConfig,
}

impl AggregatorKey {
    /// The aggregator's current key, fetched from `aggregator` (`GET /v1/hpke-keys`), the
    /// aggregator's own address: the device reports through `relay`, which must be another.
    ///
    /// # Errors
    ///
    /// [`ClientError::AggregatorKey`] if `aggregator` is the relay's address or plain HTTP
    /// beyond loopback, or serves no key of tally-seal's suite; [`ClientError`] if the
    /// request fails.
    pub async fn fetch(aggregator: &Client, relay: &Client) -> Result<Self, ClientError> {
        let refuse = |reason: String| Err(ClientError::AggregatorKey { reason });
        let address = aggregator.base_url();
        if origin(address) == origin(relay.base_url()) {
            return refuse(format!(
                "{address} is the relay's address: the key must come from the aggregator \
                 itself (give the aggregator's own address, or pin its key), or the relay \
                 could hand devices a key of its own and read their reports"
            ));
        }
        if address.starts_with("http://") && !loopback(address) {
            return refuse(format!(
                "{address} is plain HTTP: fetch the key over TLS (https://), or pin it, so \
                 that no one on the way can hand devices a key of their own"
            ));
        }
        Self::first(aggregator.hpke_keys().await?)
    }

    /// The key pinned in the device's configuration: the aggregator's `application/ohttp-keys`
    /// body (as `GET /v1/hpke-keys` serves it), its first configuration.
    ///
    /// # Errors
    ///
    /// [`ClientError::AggregatorKey`] if `body` holds no key configuration of tally-seal's
    /// suite.
    pub fn pinned(body: &[u8]) -> Result<Self, ClientError> {
        let configs = decode_key_configs(body).map_err(|e| ClientError::AggregatorKey {
            reason: format!("the pinned key configuration: {e}"),
        })?;
        Self::first(configs)
    }

    fn first(configs: Vec<KeyConfig>) -> Result<Self, ClientError> {
        let config = configs
            .into_iter()
            .next()
            .ok_or_else(|| ClientError::AggregatorKey {
                reason: "the aggregator serves no key".into(),
            })?;
        Ok(Self { config })
    }

    /// Its RFC 9458 key id.
    pub fn key_id(&self) -> u8 {
        self.config.key_id()
    }

    /// A sealer of `round`'s messages to this key.
    pub fn sealer(&self, round: &RoundQuery) -> RoundSealer {
        RoundSealer {
            config: self.config.clone(),
            binding: Binding::of(round),
        }
    }
}

/// Seals the messages of one round's reports, bound to the round.
#[derive(Clone, Debug)]
pub struct RoundSealer {
    config: KeyConfig,
    binding: Binding,
}

impl RoundSealer {
    /// Every message of a report sealed on its own (base64url), with fresh randomness from
    /// the operating system; none for an abstention.
    pub fn seal(&self, messages: Vec<String>) -> Vec<String> {
        let mut rng = rand::rng();
        messages
            .iter()
            .map(|message| tally_seal::seal(&self.config, &self.binding, message, &mut rng))
            .collect()
    }
}

/// A base URL's scheme, host and port, without case.
fn origin(base_url: &str) -> String {
    base_url.trim_end_matches('/').to_ascii_lowercase()
}

/// Whether a base URL's host is a loopback address (`127.0.0.0/8`, `[::1]` or `localhost`).
fn loopback(base_url: &str) -> bool {
    let rest = base_url
        .split_once("://")
        .map_or(base_url, |(_, rest)| rest);
    let host = match rest.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => rest.split([':', '/']).next().unwrap_or(""),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_hosts_are_loopback() {
        for yes in [
            "http://127.0.0.1:8080",
            "http://127.9.9.9",
            "http://localhost:1",
            "http://[::1]:80",
        ] {
            assert!(loopback(yes), "{yes}");
        }
        for no in [
            "http://10.0.0.1:8080",
            "http://localhost.example:1",
            "http://[::2]:80",
            "http://example.com",
            "http://127.0.0.1.example.com",
        ] {
            assert!(!loopback(no), "{no}");
        }
    }
}
