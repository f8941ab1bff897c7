//! Credentials: bearer tokens of four roles (operator, analyst, device, relay), stored only as
//! SHA-256 hashes of their secrets and compared in constant time.
//!
//! A token is `tally_ID_SECRET`: the id (16 hex digits) finds the stored credential, the
//! secret (64 hex digits, 256 bits from the operating system's randomness through a CSPRNG)
//! proves it. The server keeps the id and `SHA-256(SECRET)`, never the secret, so a copy of
//! the database does not let anyone act as a credential; a token is shown once, when made.

use std::collections::HashMap;
use std::sync::{PoisonError, RwLock};
use std::time::{Duration, Instant};

use rand::Rng;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tally_messages::{CredentialInfo, CredentialSpec, IssuedCredential, Role};

use crate::ServerError;
use crate::store::{Store, StoredCredential};

/// What every token starts with.
const TOKEN_PREFIX: &str = "tally_";
/// Hex digits of a credential's id.
const ID_DIGITS: usize = 16;
/// Bytes of a token's secret.
const SECRET_BYTES: usize = 32;
/// The longest credential name.
const MAX_NAME_CHARS: usize = 128;
/// The most populations one analyst credential names.
pub(crate) const MAX_CREDENTIAL_POPULATIONS: usize = 64;
/// The longest population name.
const MAX_POPULATION_CHARS: usize = 64;

/// Who sent a request: an authenticated credential.
#[derive(Clone, Debug)]
pub struct Principal {
    /// The credential's id.
    pub id: String,
    /// Its role.
    pub role: Role,
    /// The populations it acts on.
    pub populations: Vec<String>,
}

impl Principal {
    /// Whether the credential acts on `population`.
    pub fn covers(&self, population: &str) -> bool {
        self.populations.iter().any(|p| p == population)
    }
}

/// A freshly made credential: what to store and the token to show once.
struct Minted {
    /// What the store keeps.
    stored: StoredCredential,
    /// The bearer token.
    token: String,
}

/// Makes a credential for a checked `spec`.
fn mint(spec: &CredentialSpec, created_at: i64) -> Minted {
    let id = format!("{:016x}", rand::rng().next_u64());
    let secret = random_secret();
    Minted {
        stored: StoredCredential {
            id: id.clone(),
            name: spec.name.clone(),
            role: spec.role.name().to_owned(),
            // Unwrap safety: a list of strings serializes.
            populations: serde_json::to_string(&spec.populations).expect("names serialize"),
            secret_hash: hash_secret(&secret),
            created_at,
            revoked_at: None,
        },
        token: format!("{TOKEN_PREFIX}{id}_{secret}"),
    }
}

/// [`SECRET_BYTES`] bytes from the operating system's randomness (through a CSPRNG), in hex:
/// a token's secret, or a console session's id.
pub(crate) fn random_secret() -> String {
    let mut secret = [0u8; SECRET_BYTES];
    rand::rng().fill_bytes(&mut secret);
    hex(&secret)
}

/// Stores new credentials, and puts them in the running server's `cache` (if any) at once.
async fn insert(
    store: &Store,
    cache: Option<&CredentialCache>,
    credentials: &[StoredCredential],
) -> Result<(), ServerError> {
    match cache {
        Some(cache) => cache.insert(store, credentials).await,
        None => store.insert_credentials(credentials).await.map(drop),
    }
}

/// Stores a new credential for a checked `spec` and returns it with its token; `cache` is
/// the running server's, `None` beside it.
pub(crate) async fn issue(
    store: &Store,
    cache: Option<&CredentialCache>,
    spec: &CredentialSpec,
    created_at: i64,
) -> Result<IssuedCredential, ServerError> {
    let minted = mint(spec, created_at);
    insert(store, cache, std::slice::from_ref(&minted.stored)).await?;
    let credential = info(&minted.stored)
        .ok_or_else(|| ServerError::Corrupt("a credential just made does not read back".into()))?;
    Ok(IssuedCredential {
        credential,
        token: minted.token,
    })
}

/// The most devices one enrollment makes.
pub(crate) const MAX_ENROLLMENT: u32 = 10_000;

/// Whether one enrollment may make `count` devices, or why not.
pub(crate) fn check_enrollment(count: u32) -> Result<(), String> {
    if (1..=MAX_ENROLLMENT).contains(&count) {
        Ok(())
    } else {
        Err(format!(
            "count {count}: 1 to {MAX_ENROLLMENT} devices per enrollment"
        ))
    }
}

/// Enrolls `count` devices of the (provisioned, checked) `population`: one device
/// credential each, stored in one transaction, their tokens returned in order; `cache` is the
/// running server's, `None` beside it.
pub(crate) async fn enroll(
    store: &Store,
    cache: Option<&CredentialCache>,
    population: &str,
    count: u32,
    created_at: i64,
) -> Result<Vec<String>, ServerError> {
    let spec = CredentialSpec {
        version: tally_messages::PROTOCOL_VERSION,
        role: Role::Device,
        name: format!("enrolled device of {population}"),
        populations: vec![population.to_owned()],
    };
    let minted: Vec<Minted> = (0..count).map(|_| mint(&spec, created_at)).collect();
    let stored: Vec<StoredCredential> = minted.iter().map(|m| m.stored.clone()).collect();
    insert(store, cache, &stored).await?;
    Ok(minted.into_iter().map(|m| m.token).collect())
}

/// How long the credentials held in memory are trusted after the database last confirmed
/// them: a credential revoked beside the running server (`tally token revoke --db`) is
/// refused at most this long after the revocation commits. Past it (the database did not
/// answer the last polls), every request reads its credential from the database.
pub(crate) const CREDENTIALS_STALENESS: Duration = Duration::from_secs(1);

/// How often the server asks the database whether its credentials changed.
pub(crate) const CREDENTIALS_POLL: Duration = Duration::from_millis(250);

/// The credentials in memory, so that a request is authenticated without a database round
/// trip, kept in step with the database: changes through the API at once, changes made
/// beside the server (the `--db` commands) within [`CREDENTIALS_STALENESS`], through the
/// database's credential generation (bumped in the transaction of every change).
#[derive(Debug, Default)]
pub(crate) struct CredentialCache {
    /// The credentials as of the last refresh.
    state: RwLock<Snapshot>,
    /// Held by a refresh and by a revocation through the API, so that a refresh that read
    /// the database before a revocation cannot install its older view after it.
    writer: tokio::sync::Mutex<()>,
}

#[derive(Debug, Default)]
struct Snapshot {
    /// Every stored credential by id (revoked ones too, without a principal).
    entries: HashMap<String, Entry>,
    /// The credential generation they were read at; `None` before the first load.
    generation: Option<i64>,
    /// When the database last confirmed them: the time the generation was asked for.
    confirmed_at: Option<Instant>,
}

#[derive(Debug)]
struct Entry {
    secret_hash: String,
    /// `None` when the credential is revoked (or its stored role or populations unreadable).
    principal: Option<Principal>,
}

impl Snapshot {
    /// Takes in the server's own change, which made the credentials' `generation` and has
    /// been applied to the entries: when the entries were those of the generation just
    /// before it, they are now those of `generation`, and the next poll need not reload them.
    /// Otherwise (a change was made beside the server in between) the next poll reloads.
    fn follow(&mut self, generation: i64) {
        if self.generation == Some(generation - 1) {
            self.generation = Some(generation);
        }
    }
}

/// What the cache says of a credential id.
enum Lookup {
    /// The cache is confirmed and holds the id: whether the secret matches, and its principal.
    Known(bool, Option<Principal>),
    /// The cache is stale, or does not hold the id (made beside the server since the last
    /// refresh, or unknown): the database answers.
    Ask,
}

impl CredentialCache {
    /// The live credential `token` proves, if any: from memory while the cache is confirmed
    /// and holds its id, from the database otherwise. Either way the secret's hash is
    /// compared in constant time, and an unknown id costs the same hash and comparison as a
    /// known one.
    pub(crate) async fn authenticate(
        &self,
        store: &Store,
        token: &str,
    ) -> Result<Option<Principal>, ServerError> {
        let Some((id, secret)) = split(token) else {
            return Ok(None);
        };
        let presented = hash_secret(secret);
        if let Lookup::Known(matches, principal) = self.lookup(id, &presented, Instant::now()) {
            return Ok(if matches { principal } else { None });
        }
        let stored = store.credential(id).await?;
        let hash = stored
            .as_ref()
            .map_or(UNKNOWN_HASH, |c| c.secret_hash.as_str());
        if !hashes_match(&presented, hash) {
            return Ok(None);
        }
        Ok(stored.as_ref().and_then(principal))
    }

    fn lookup(&self, id: &str, presented: &str, now: Instant) -> Lookup {
        self.confirmed(id, now, |entry| {
            Lookup::Known(
                hashes_match(presented, &entry.secret_hash),
                entry.principal.clone(),
            )
        })
        .unwrap_or(Lookup::Ask)
    }

    /// What `read` makes of the entry of credential `id`, if the cache is confirmed at `now`
    /// and holds it.
    fn confirmed<T>(&self, id: &str, now: Instant, read: impl FnOnce(&Entry) -> T) -> Option<T> {
        let state = self.read();
        let confirmed = state
            .confirmed_at
            .is_some_and(|at| now.saturating_duration_since(at) <= CREDENTIALS_STALENESS);
        state.entries.get(id).filter(|_| confirmed).map(read)
    }

    /// The credential `id` if it is live (a console session's, already authenticated): from
    /// memory while the cache is confirmed and holds it, from the database otherwise.
    pub(crate) async fn live(
        &self,
        store: &Store,
        id: &str,
    ) -> Result<Option<Principal>, ServerError> {
        if let Some(principal) = self.confirmed(id, Instant::now(), |entry| entry.principal.clone())
        {
            return Ok(principal);
        }
        Ok(store.credential(id).await?.as_ref().and_then(principal))
    }

    /// Brings the cache in step with the database: reads the credential generation and, when
    /// it changed since the last load, every credential. Called at start and every
    /// [`CREDENTIALS_POLL`].
    pub(crate) async fn refresh(&self, store: &Store) -> Result<(), ServerError> {
        let _writer = self.writer.lock().await;
        // Everything committed before this instant is in the generation read next.
        let asked_at = Instant::now();
        let generation = store.credential_generation().await?;
        let known = self.read().generation;
        if known != Some(generation) {
            let entries = store
                .credentials()
                .await?
                .iter()
                .map(|c| {
                    let entry = Entry {
                        secret_hash: c.secret_hash.clone(),
                        principal: principal(c),
                    };
                    (c.id.clone(), entry)
                })
                .collect();
            let mut state = self.write();
            state.entries = entries;
            state.generation = Some(generation);
        }
        self.write().confirmed_at = Some(asked_at);
        Ok(())
    }

    /// Stores new credentials in the database and, at once, in memory.
    async fn insert(
        &self,
        store: &Store,
        credentials: &[StoredCredential],
    ) -> Result<(), ServerError> {
        let _writer = self.writer.lock().await;
        let generation = store.insert_credentials(credentials).await?;
        let mut state = self.write();
        for c in credentials {
            let entry = Entry {
                secret_hash: c.secret_hash.clone(),
                principal: principal(c),
            };
            state.entries.insert(c.id.clone(), entry);
        }
        state.follow(generation);
        Ok(())
    }

    /// Revokes the credential `id` in the database and, at once, in memory; returns it.
    pub(crate) async fn revoke(
        &self,
        store: &Store,
        id: &str,
        at: i64,
    ) -> Result<Option<StoredCredential>, ServerError> {
        let _writer = self.writer.lock().await;
        let (stored, generation) = store.revoke_credential(id, at).await?;
        let mut state = self.write();
        if let Some(entry) = state.entries.get_mut(id) {
            entry.principal = None;
        }
        state.follow(generation);
        Ok(stored)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Snapshot> {
        // The snapshot is only replaced field by field under the lock: a poisoned one is
        // still consistent.
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Snapshot> {
        self.state.write().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Compared against when the id is unknown: no secret hashes to it (not hex).
const UNKNOWN_HASH: &str = "----------------------------------------------------------------";

/// The id and secret of a well-formed token.
fn split(token: &str) -> Option<(&str, &str)> {
    let rest = token.strip_prefix(TOKEN_PREFIX)?;
    let (id, secret) = rest.split_once('_')?;
    (hex_digits(id, ID_DIGITS) && is_random_secret(secret)).then_some((id, secret))
}

/// Whether `text` has the shape of a [`random_secret`]: a token's secret, or a console
/// session's id.
pub(crate) fn is_random_secret(text: &str) -> bool {
    hex_digits(text, 2 * SECRET_BYTES)
}

/// Whether `text` is `n` hex digits.
fn hex_digits(text: &str, n: usize) -> bool {
    text.len() == n && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The stored form of a token's secret (or a console session's id): `SHA-256(SECRET)` in hex.
pub(crate) fn hash_secret(secret: &str) -> String {
    hex(&Sha256::digest(secret.as_bytes()))
}

/// Whether a presented secret's hash is `stored_hash`, compared in constant time.
fn hashes_match(presented: &str, stored_hash: &str) -> bool {
    presented.as_bytes().ct_eq(stored_hash.as_bytes()).into()
}

/// The credential `stored` as an authenticated principal, if it is live.
fn principal(stored: &StoredCredential) -> Option<Principal> {
    if stored.revoked_at.is_some() {
        return None;
    }
    Some(Principal {
        id: stored.id.clone(),
        role: Role::from_name(&stored.role)?,
        populations: serde_json::from_str(&stored.populations).ok()?,
    })
}

/// The credential `stored` as the API shows it.
pub(crate) fn info(stored: &StoredCredential) -> Option<CredentialInfo> {
    Some(CredentialInfo {
        id: stored.id.clone(),
        name: stored.name.clone(),
        role: Role::from_name(&stored.role)?,
        populations: serde_json::from_str(&stored.populations).ok()?,
        created_at: stored.created_at,
        revoked: stored.revoked_at.is_some(),
    })
}

/// What a credential request must respect, or why it is refused.
pub(crate) fn check_spec(spec: &CredentialSpec) -> Result<(), String> {
    let name_chars = spec.name.chars().count();
    if name_chars == 0 || name_chars > MAX_NAME_CHARS || spec.name.chars().any(char::is_control) {
        return Err(format!(
            "name: 1 to {MAX_NAME_CHARS} characters, no control characters"
        ));
    }
    for population in &spec.populations {
        check_population_name(population)?;
    }
    match (spec.role, spec.populations.len()) {
        (Role::Operator, 0) | (Role::Device, 1) => Ok(()),
        (Role::Analyst | Role::Relay, 1..=MAX_CREDENTIAL_POPULATIONS) => Ok(()),
        (Role::Operator, _) => Err("an operator credential names no population".into()),
        (Role::Device, _) => Err("a device credential names exactly one population".into()),
        (role, _) => Err(format!(
            "a{} {} credential names 1 to {MAX_CREDENTIAL_POPULATIONS} populations",
            if role == Role::Analyst { "n" } else { "" },
            role.name()
        )),
    }
}

/// A population's name is exact: 1 to 64 of `a-z`, `0-9`, `.`, `_` and `-`, starting with a
/// letter or a digit, so that no two spellings (case, spaces, look-alikes) name one
/// population and no name can forge a log line.
pub(crate) fn check_population_name(name: &str) -> Result<(), String> {
    let allowed = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b);
    let starts_well = name
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    if starts_well && name.len() <= MAX_POPULATION_CHARS && name.bytes().all(allowed) {
        Ok(())
    } else {
        Err(format!(
            "population {name:?}: 1 to {MAX_POPULATION_CHARS} of a-z, 0-9, '.', '_' and '-', \
             starting with a letter or a digit"
        ))
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut out, b| {
        // Unwrap safety: writing to a String cannot fail.
        write!(out, "{b:02x}").expect("writing to a String");
        out
    })
}

#[cfg(test)]
mod tests {
    use tally_messages::PROTOCOL_VERSION;

    use super::*;

    fn spec(role: Role, populations: &[&str]) -> CredentialSpec {
        CredentialSpec {
            version: PROTOCOL_VERSION,
            role,
            name: "n".into(),
            populations: populations.iter().map(|p| (*p).to_owned()).collect(),
        }
    }

    #[test]
    fn the_servers_own_changes_advance_the_generation_only_when_nothing_came_between() {
        let mut snapshot = Snapshot {
            generation: Some(5),
            ..Snapshot::default()
        };
        snapshot.follow(6);
        assert_eq!(snapshot.generation, Some(6));
        // Generation 7 was a change made beside the server: its entries are not held, so the
        // next poll must reload them.
        snapshot.follow(8);
        assert_eq!(snapshot.generation, Some(6));
        let mut unloaded = Snapshot::default();
        unloaded.follow(1);
        assert_eq!(unloaded.generation, None);
    }

    #[test]
    fn a_token_proves_only_its_own_hash() {
        let minted = mint(&spec(Role::Analyst, &["a"]), 0);
        let (id, secret) = split(&minted.token).unwrap();
        assert_eq!(id, minted.stored.id);
        assert!(!minted.stored.secret_hash.contains(secret));
        assert!(hashes_match(
            &hash_secret(secret),
            &minted.stored.secret_hash
        ));
        let other = mint(&spec(Role::Analyst, &["a"]), 0);
        let (_, other_secret) = split(&other.token).unwrap();
        assert!(!hashes_match(
            &hash_secret(other_secret),
            &minted.stored.secret_hash
        ));
        for bad in ["", "tally_", "tally_00_11", "bearer", "tally_x_y"] {
            assert!(split(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn credentials_in_memory_are_trusted_only_within_the_staleness_bound() {
        let minted = mint(&spec(Role::Analyst, &["a"]), 0);
        let (id, secret) = split(&minted.token).unwrap();
        let presented = hash_secret(secret);
        let confirmed_at = Instant::now();
        let cache = CredentialCache::default();
        {
            let mut state = cache.write();
            state.entries.insert(
                id.to_owned(),
                Entry {
                    secret_hash: minted.stored.secret_hash.clone(),
                    principal: principal(&minted.stored),
                },
            );
            state.confirmed_at = Some(confirmed_at);
        }
        let at_bound = confirmed_at + CREDENTIALS_STALENESS;
        assert!(matches!(
            cache.lookup(id, &presented, at_bound),
            Lookup::Known(true, Some(ref p)) if p.id == id
        ));
        assert!(matches!(
            cache.lookup(id, &hash_secret(&"0".repeat(64)), at_bound),
            Lookup::Known(false, _)
        ));
        // Past the bound, or for an id it does not hold, the database answers.
        let past = at_bound + Duration::from_nanos(1);
        assert!(matches!(cache.lookup(id, &presented, past), Lookup::Ask));
        assert!(matches!(
            cache.lookup("0123456789abcdef", &presented, at_bound),
            Lookup::Ask
        ));
        // Never confirmed: the database answers.
        cache.write().confirmed_at = None;
        assert!(matches!(
            cache.lookup(id, &presented, at_bound),
            Lookup::Ask
        ));
    }

    #[test]
    fn population_names_are_exact() {
        for good in ["hist1", "shakespeare", "a", "a.b_c-d"] {
            assert!(check_population_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "hist1 ",
            "HIST1",
            " hist1",
            "-a",
            "a\nb",
            "é",
            &"a".repeat(65),
        ] {
            assert!(check_population_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn roles_name_the_populations_they_need() {
        assert!(check_spec(&spec(Role::Operator, &[])).is_ok());
        assert!(check_spec(&spec(Role::Operator, &["a"])).is_err());
        assert!(check_spec(&spec(Role::Analyst, &[])).is_err());
        assert!(check_spec(&spec(Role::Analyst, &["a", "b"])).is_ok());
        assert!(check_spec(&spec(Role::Device, &["a", "b"])).is_err());
        assert!(check_spec(&spec(Role::Device, &["a"])).is_ok());
        assert!(check_spec(&spec(Role::Device, &["A"])).is_err());
    }
}
