//! Credentials: bearer tokens of three roles (operator, analyst, device), stored only as
//! SHA-256 hashes of their secrets and compared in constant time.
//!
//! A token is `tally_ID_SECRET`: the id (16 hex digits) finds the stored credential, the
//! secret (64 hex digits, 256 bits from the operating system's randomness through a CSPRNG)
//! proves it. The server keeps the id and `SHA-256(SECRET)`, never the secret, so a copy of
//! the database does not let anyone act as a credential; a token is shown once, when made.

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
pub(crate) struct Principal {
    /// The credential's id.
    pub(crate) id: String,
    /// Its role.
    pub(crate) role: Role,
    /// The populations it acts on.
    pub(crate) populations: Vec<String>,
}

impl Principal {
    /// Whether the credential acts on `population`.
    pub(crate) fn covers(&self, population: &str) -> bool {
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
    let mut rng = rand::rng();
    let id = format!("{:016x}", rng.next_u64());
    let mut secret = [0u8; SECRET_BYTES];
    rng.fill_bytes(&mut secret);
    let secret = hex(&secret);
    Minted {
        stored: StoredCredential {
            id: id.clone(),
            name: spec.name.clone(),
            role: spec.role.name().to_owned(),
            // Unwrap safety: a list of strings serializes.
            populations: serde_json::to_string(&spec.populations).expect("names serialize"),
            secret_hash: hex(&Sha256::digest(secret.as_bytes())),
            created_at,
            revoked_at: None,
        },
        token: format!("{TOKEN_PREFIX}{id}_{secret}"),
    }
}

/// Stores a new credential for a checked `spec` and returns it with its token.
pub(crate) async fn issue(
    store: &Store,
    spec: &CredentialSpec,
    created_at: i64,
) -> Result<IssuedCredential, ServerError> {
    let minted = mint(spec, created_at);
    store
        .insert_credentials(std::slice::from_ref(&minted.stored))
        .await?;
    let credential = info(&minted.stored)
        .ok_or_else(|| ServerError::Corrupt("a credential just made does not read back".into()))?;
    Ok(IssuedCredential {
        credential,
        token: minted.token,
    })
}

/// The most devices one enrollment makes.
pub(crate) const MAX_ENROLLMENT: u32 = 10_000;

/// Enrolls `count` devices of the (provisioned, checked) `population`: one device
/// credential each, stored in one transaction, their tokens returned in order.
pub(crate) async fn enroll(
    store: &Store,
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
    store.insert_credentials(&stored).await?;
    Ok(minted.into_iter().map(|m| m.token).collect())
}

/// The live credential `token` proves, if any. An unknown id costs the same hash and
/// comparison as a known one.
pub(crate) async fn authenticate(
    store: &Store,
    token: &str,
) -> Result<Option<Principal>, ServerError> {
    let Some((id, secret)) = split(token) else {
        return Ok(None);
    };
    let stored = store.credential(id).await?;
    let hash = stored
        .as_ref()
        .map_or(UNKNOWN_HASH, |c| c.secret_hash.as_str());
    if !secret_matches(secret, hash) {
        return Ok(None);
    }
    Ok(stored.as_ref().and_then(principal))
}

/// Compared against when the id is unknown: no secret hashes to it (not hex).
const UNKNOWN_HASH: &str = "----------------------------------------------------------------";

/// The id and secret of a well-formed token.
fn split(token: &str) -> Option<(&str, &str)> {
    let rest = token.strip_prefix(TOKEN_PREFIX)?;
    let (id, secret) = rest.split_once('_')?;
    let hex_digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
    (hex_digits(id, ID_DIGITS) && hex_digits(secret, 2 * SECRET_BYTES)).then_some((id, secret))
}

/// Whether `secret` hashes to `stored_hash`, compared in constant time.
fn secret_matches(secret: &str, stored_hash: &str) -> bool {
    let presented = hex(&Sha256::digest(secret.as_bytes()));
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
        (Role::Analyst, 1..=MAX_CREDENTIAL_POPULATIONS) => Ok(()),
        (Role::Operator, _) => Err("an operator credential names no population".into()),
        (Role::Device, _) => Err("a device credential names exactly one population".into()),
        (Role::Analyst, _) => Err(format!(
            "an analyst credential names 1 to {MAX_CREDENTIAL_POPULATIONS} populations"
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
    fn a_token_proves_only_its_own_hash() {
        let minted = mint(&spec(Role::Analyst, &["a"]), 0);
        let (id, secret) = split(&minted.token).unwrap();
        assert_eq!(id, minted.stored.id);
        assert!(!minted.stored.secret_hash.contains(secret));
        assert!(secret_matches(secret, &minted.stored.secret_hash));
        let other = mint(&spec(Role::Analyst, &["a"]), 0);
        let (_, other_secret) = split(&other.token).unwrap();
        assert!(!secret_matches(other_secret, &minted.stored.secret_hash));
        for bad in ["", "tally_", "tally_00_11", "bearer", "tally_x_y"] {
            assert!(split(bad).is_none(), "{bad}");
        }
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
