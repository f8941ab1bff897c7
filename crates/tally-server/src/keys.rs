//! The aggregator's HPKE keys (tally-seal's suite), kept in its database: the current key and
//! the keys rotated out within their grace period, all of which open sealed messages.
//!
//! A key is made when the database holds no current key (on the first start). Rotating
//! (`tally hpke-key rotate --db`, beside the running server) makes a new current key under an
//! RFC 9458 key id no live key uses, and gives every older key a retirement time `grace` later
//! at the latest (a grace of 0 retires them at once): devices that fetched an old
//! configuration (or a round whose devices sealed to it) keep being opened until then. A
//! running server reads the keys again every [`KEYS_POLL`], so a rotation is served within
//! that time, and a retired key stops opening within it too.
//!
//! # Privacy
//!
//! The private keys are what keeps a relay from reading reports: they stay in the database
//! (created 0600 on SQLite; on PostgreSQL, as protected as the database), are never logged or
//! served, and [`tally_seal::KeyPair`] never prints one.

use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use tally_seal::{KeyPair, Keyring, encode_key_configs};

use crate::ServerError;
use crate::store::{Store, StoredKey};

/// How often a running server reads its keys again.
pub(crate) const KEYS_POLL: Duration = Duration::from_secs(2);

/// How long a rotated key keeps opening messages by default: the longest a round may stay
/// open (a week), so that every round open at a rotation is opened whole.
pub const DEFAULT_KEY_GRACE: Duration = Duration::from_secs(7 * 24 * 3600);

/// The keys that open sealed messages now, and their public configurations as served.
#[derive(Debug)]
pub(crate) struct LiveKeys {
    /// The live key pairs, the current one first.
    pub(crate) keyring: Keyring,
    /// Their `application/ohttp-keys` body, the current key first.
    pub(crate) configs: Vec<u8>,
}

/// The live keys, replaced whole when they are read again.
#[derive(Debug)]
pub(crate) struct AggregatorKeys {
    live: RwLock<Arc<LiveKeys>>,
}

impl AggregatorKeys {
    /// Reads the live keys, making a current key first if the database has none.
    pub(crate) async fn load(store: &Store, now: i64) -> Result<Self, ServerError> {
        let stored = store.keys().await?;
        if !stored.iter().any(|k| k.retires_at.is_none()) {
            // The database's first key; replicas starting together store one of theirs.
            store.insert_first_key(&new_key(&stored, now)?).await?;
        }
        Ok(Self {
            live: RwLock::new(Arc::new(live_keys(store, now).await?)),
        })
    }

    /// The live keys.
    pub(crate) fn live(&self) -> Arc<LiveKeys> {
        Arc::clone(&self.live.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Reads the keys again (after a rotation, and every [`KEYS_POLL`]).
    pub(crate) async fn refresh(&self, store: &Store, now: i64) -> Result<(), ServerError> {
        let live = live_keys(store, now).await?;
        *self.live.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(live);
        Ok(())
    }
}

/// The keys of `store` that open messages at `now`, the current one first.
async fn live_keys(store: &Store, now: i64) -> Result<LiveKeys, ServerError> {
    let mut pairs = Vec::new();
    let mut keys = store.keys().await?;
    // The current key first, then the retiring ones, newest first.
    keys.sort_by_key(|k| (k.retires_at.is_some(), std::cmp::Reverse(k.created_at)));
    for key in keys
        .iter()
        .filter(|k| k.retires_at.is_none_or(|at| at > now))
    {
        let secret = URL_SAFE_NO_PAD
            .decode(&key.secret_key)
            .map_err(|_| ServerError::Corrupt(format!("HPKE key {}: not base64", key.key_id)))?;
        let pair = KeyPair::from_secret_bytes(key.key_id, &secret)
            .map_err(|e| ServerError::Corrupt(format!("HPKE key {}: {e}", key.key_id)))?;
        pairs.push(pair);
    }
    let keyring = Keyring::new(pairs);
    let configs = encode_key_configs(&keyring.configs());
    Ok(LiveKeys { keyring, configs })
}

/// Makes a new current key at `now` and retires the others `grace` later at the latest;
/// returns its key id. The new key's id is the smallest no key still opening messages uses.
///
/// # Errors
///
/// [`ServerError::Invalid`] if all 256 key ids are live (rotations faster than the grace
/// period), [`ServerError`] if the database fails.
pub(crate) async fn rotate(store: &Store, now: i64, grace: Duration) -> Result<u8, ServerError> {
    let key = new_key(&store.keys().await?, now)?;
    let key_id = key.key_id;
    let grace = i64::try_from(grace.as_secs()).unwrap_or(i64::MAX);
    store
        .rotate_key(&key, now, now.saturating_add(grace))
        .await?;
    Ok(key_id)
}

/// A new key pair made at `now`, under the first key id no key of `stored` still uses.
fn new_key(stored: &[StoredKey], now: i64) -> Result<StoredKey, ServerError> {
    let used = |id: u8| {
        stored
            .iter()
            .any(|k| k.key_id == id && k.retires_at.is_none_or(|at| at > now))
    };
    let key_id = (0..=u8::MAX).find(|&id| !used(id)).ok_or_else(|| {
        ServerError::Invalid(
            "every key id (0 to 255) belongs to a key still in its grace period: rotate with \
             a shorter --grace-secs, or wait for one to retire"
                .into(),
        )
    })?;
    let pair = KeyPair::generate(key_id, &mut rand::rng());
    Ok(StoredKey {
        key_id,
        secret_key: URL_SAFE_NO_PAD.encode(pair.secret_bytes()),
        created_at: now,
        retires_at: None,
    })
}
