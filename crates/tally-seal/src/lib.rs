//! Sealed reports of a split-trust deployment: each message a device sends is encrypted to the
//! aggregator's public key with HPKE (RFC 9180), bound to its task, round and attempt and to a
//! digest of the round's query, so that the relay that carries it can neither read it nor
//! move it to another round.
//!
//! # The suite
//!
//! One HPKE suite, in base mode: DHKEM(X25519, HKDF-SHA256) (KEM `0x0020`), HKDF-SHA256 (KDF
//! `0x0001`) and ChaCha20-Poly1305 (AEAD `0x0003`), through the `hpke` crate. ChaCha20-Poly1305
//! runs in constant time in software on every device, with or without AES instructions.
//!
//! # Encodings
//!
//! - A key configuration is RFC 9458 (Oblivious HTTP) section 3.1's: key id (1 byte), KEM id
//!   (2), the public key (32), the length of the symmetric algorithms (2) and each as a KDF id
//!   and an AEAD id (2 + 2). The aggregator serves its live ones as `application/ohttp-keys`
//!   (section 3.2: each preceded by its length in 2 bytes), the current key first
//!   ([`encode_key_configs`], [`decode_key_configs`]).
//! - A sealed message is, in base64url without padding, RFC 9458's header (key id, KEM, KDF and
//!   AEAD ids: 7 bytes), the encapsulated key (32) and the ciphertext of the plaintext: a
//!   random report id (16 bytes) followed by the message in UTF-8, plus the AEAD's 16-byte tag.
//!   The HPKE `info` is `"tally sealed report"`, a zero byte and the header (as RFC 9458 binds
//!   its header); the associated data is [`Binding::associated_data`].
//!
//! # Privacy
//!
//! Only the holder of the aggregator's private key opens a sealed message, and only under the
//! binding it was sealed with: a ciphertext moved to another task, round or attempt, or sealed
//! for another query (a relay that altered what it republished), fails to open and is counted,
//! never read. The report id, drawn by the device from a CSPRNG for each message on its own
//! (so that two messages of one report are not linked by it), lets the aggregator drop a
//! message it has seen in the round (a replay or a duplicate). The public key must reach the
//! device from the aggregator itself (over TLS, or pinned), never through the relay, which
//! could otherwise hand it a key of its own.
#![forbid(unsafe_code)]

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hpke::aead::ChaCha20Poly1305;
use hpke::kdf::HkdfSha256;
use hpke::kem::X25519HkdfSha256;
use hpke::{Deserializable, Kem as _, OpModeR, OpModeS, Serializable};
use rand::CryptoRng;
use sha2::{Digest, Sha256};
use tally_messages::RoundQuery;

type Kem = X25519HkdfSha256;
type PublicKey = <Kem as hpke::Kem>::PublicKey;
type PrivateKey = <Kem as hpke::Kem>::PrivateKey;

/// The KEM of the suite: DHKEM(X25519, HKDF-SHA256).
pub const KEM_ID: u16 = 0x0020;
/// The KDF of the suite: HKDF-SHA256.
pub const KDF_ID: u16 = 0x0001;
/// The AEAD of the suite: ChaCha20-Poly1305.
pub const AEAD_ID: u16 = 0x0003;

/// Bytes of an X25519 public key (and of an encapsulated key).
const PUBLIC_KEY_BYTES: usize = 32;
/// Bytes of an X25519 private key.
pub const SECRET_KEY_BYTES: usize = 32;
/// Bytes of a sealed message's header: key id, KEM, KDF and AEAD ids.
const HEADER_BYTES: usize = 7;
/// Bytes of the AEAD's tag.
const TAG_BYTES: usize = 16;
/// Bytes of a report id.
pub const REPORT_ID_BYTES: usize = 16;
/// Bytes a sealed message adds to its message before base64: header, encapsulated key, report
/// id and tag.
pub const SEAL_OVERHEAD: usize = HEADER_BYTES + PUBLIC_KEY_BYTES + REPORT_ID_BYTES + TAG_BYTES;
/// Bytes of an encoded key configuration of the suite.
const KEY_CONFIG_BYTES: usize = 1 + 2 + PUBLIC_KEY_BYTES + 2 + 4;
/// The label the HPKE `info` starts with.
const INFO_LABEL: &[u8] = b"tally sealed report";
/// The label the associated data starts with.
const BINDING_LABEL: &[u8] = b"tally round binding v1";

/// The longest sealed message (in base64url characters) of a message of at most
/// `max_message_bytes` bytes: what a relay checks each sealed message against, for a round
/// whose [`RoundQuery::max_report_bytes`] is `max_message_bytes`.
pub fn max_sealed_len(max_message_bytes: u32) -> usize {
    let bytes = max_message_bytes as usize + SEAL_OVERHEAD;
    (bytes * 4).div_ceil(3)
}

/// Why a key configuration (or a list of them) was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyConfigError {
    /// The bytes end before a configuration does, or run on after the last one.
    #[error("the key configuration is truncated or has trailing bytes")]
    Truncated,
    /// No configuration of the list uses this crate's suite.
    #[error(
        "no key configuration uses the suite DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, \
         ChaCha20-Poly1305 (KEM 0x0020, KDF 0x0001, AEAD 0x0003)"
    )]
    NoSupportedSuite,
    /// The public key is not a valid X25519 key.
    #[error("the key configuration's public key is not a valid X25519 key")]
    BadPublicKey,
}

/// One public key configuration of the aggregator (RFC 9458 section 3.1), of this crate's
/// suite.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyConfig {
    key_id: u8,
    public_key: PublicKey,
}

impl KeyConfig {
    /// Its key id.
    pub fn key_id(&self) -> u8 {
        self.key_id
    }

    /// Its RFC 9458 encoding.
    pub fn encode(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(KEY_CONFIG_BYTES);
        bytes.push(self.key_id);
        bytes.extend_from_slice(&KEM_ID.to_be_bytes());
        bytes.extend_from_slice(&self.public_key.to_bytes());
        bytes.extend_from_slice(&4u16.to_be_bytes());
        bytes.extend_from_slice(&KDF_ID.to_be_bytes());
        bytes.extend_from_slice(&AEAD_ID.to_be_bytes());
        bytes
    }

    /// Reads one configuration from the front of `bytes`: `Ok(None)` for a well-formed one of
    /// another suite (a client skips those), and the bytes it took either way.
    fn read(bytes: &[u8]) -> Result<(Option<Self>, usize), KeyConfigError> {
        let mut reader = Reader(bytes);
        let key_id = reader.take(1)?[0];
        let kem = reader.u16()?;
        let public_key_bytes = match kem {
            KEM_ID => PUBLIC_KEY_BYTES,
            // Another KEM's key length is not known here: its configuration cannot be skipped
            // within one list, and RFC 9458 lists one configuration per length-prefixed entry.
            _ => return Ok((None, bytes.len())),
        };
        let public_key = reader.take(public_key_bytes)?;
        let algorithms_length = usize::from(reader.u16()?);
        if algorithms_length < 4 || algorithms_length % 4 != 0 {
            return Err(KeyConfigError::Truncated);
        }
        let algorithms = reader.take(algorithms_length)?;
        let supported = algorithms.chunks_exact(4).any(|pair| {
            u16::from_be_bytes([pair[0], pair[1]]) == KDF_ID
                && u16::from_be_bytes([pair[2], pair[3]]) == AEAD_ID
        });
        let taken = bytes.len() - reader.0.len();
        if !supported {
            return Ok((None, taken));
        }
        let public_key =
            PublicKey::from_bytes(public_key).map_err(|_| KeyConfigError::BadPublicKey)?;
        Ok((Some(Self { key_id, public_key }), taken))
    }

    /// Parses one RFC 9458 key configuration, which must be of this crate's suite and nothing
    /// more.
    ///
    /// # Errors
    ///
    /// [`KeyConfigError`] if it is truncated or longer, of another suite, or its key invalid.
    pub fn decode(bytes: &[u8]) -> Result<Self, KeyConfigError> {
        match Self::read(bytes)? {
            (Some(config), taken) if taken == bytes.len() => Ok(config),
            (Some(_), _) => Err(KeyConfigError::Truncated),
            (None, _) => Err(KeyConfigError::NoSupportedSuite),
        }
    }
}

/// The `application/ohttp-keys` body of `configs` (RFC 9458 section 3.2): each configuration
/// preceded by its length in two bytes, in the order given (the current key first).
pub fn encode_key_configs(configs: &[KeyConfig]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(configs.len() * (2 + KEY_CONFIG_BYTES));
    for config in configs {
        let encoded = config.encode();
        // Unwrap safety: a configuration of this suite is 41 bytes.
        let length = u16::try_from(encoded.len()).expect("a key configuration fits 2^16 bytes");
        bytes.extend_from_slice(&length.to_be_bytes());
        bytes.extend_from_slice(&encoded);
    }
    bytes
}

/// The configurations of this crate's suite in an `application/ohttp-keys` body, in their
/// order (the first is the one to seal to); configurations of other suites are skipped.
///
/// # Errors
///
/// [`KeyConfigError::Truncated`] if the body is not a list of length-prefixed configurations,
/// [`KeyConfigError::NoSupportedSuite`] if none is of this suite, and
/// [`KeyConfigError::BadPublicKey`] for an invalid key.
pub fn decode_key_configs(bytes: &[u8]) -> Result<Vec<KeyConfig>, KeyConfigError> {
    let mut reader = Reader(bytes);
    let mut configs = Vec::new();
    while !reader.0.is_empty() {
        let length = usize::from(reader.u16()?);
        let entry = reader.take(length)?;
        let (config, taken) = KeyConfig::read(entry)?;
        if let Some(config) = config {
            if taken != entry.len() {
                return Err(KeyConfigError::Truncated);
            }
            configs.push(config);
        }
    }
    if configs.is_empty() {
        return Err(KeyConfigError::NoSupportedSuite);
    }
    Ok(configs)
}

/// Reads big-endian fields off the front of a slice.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], KeyConfigError> {
        if self.0.len() < n {
            return Err(KeyConfigError::Truncated);
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u16(&mut self) -> Result<u16, KeyConfigError> {
        let bytes = self.take(2)?;
        Ok(u16::from_be_bytes([bytes[0], bytes[1]]))
    }
}

/// One of the aggregator's key pairs. Its private key is never shown ([`std::fmt::Debug`]
/// prints the key id alone).
#[derive(Clone)]
pub struct KeyPair {
    key_id: u8,
    secret: PrivateKey,
    public_key: PublicKey,
}

impl std::fmt::Debug for KeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyPair")
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

/// Why a stored private key was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a private key of the suite is {SECRET_KEY_BYTES} bytes; this one is {0}")]
pub struct BadSecretKey(pub usize);

impl KeyPair {
    /// A fresh key pair with id `key_id`, from the CSPRNG `rng`.
    pub fn generate<R: CryptoRng + ?Sized>(key_id: u8, rng: &mut R) -> Self {
        let mut ikm = [0u8; SECRET_KEY_BYTES];
        rng.fill_bytes(&mut ikm);
        Self::derive(key_id, &ikm)
    }

    /// The key pair RFC 9180's `DeriveKeyPair` makes of `ikm`.
    pub fn derive(key_id: u8, ikm: &[u8]) -> Self {
        let (secret, public_key) = Kem::derive_keypair(ikm);
        Self {
            key_id,
            secret,
            public_key,
        }
    }

    /// The key pair of the stored private key `secret` ([`KeyPair::secret_bytes`]).
    ///
    /// # Errors
    ///
    /// [`BadSecretKey`] if `secret` is not a private key of the suite.
    pub fn from_secret_bytes(key_id: u8, secret: &[u8]) -> Result<Self, BadSecretKey> {
        let secret = PrivateKey::from_bytes(secret).map_err(|_| BadSecretKey(secret.len()))?;
        let public_key = Kem::sk_to_pk(&secret);
        Ok(Self {
            key_id,
            secret,
            public_key,
        })
    }

    /// Its key id.
    pub fn key_id(&self) -> u8 {
        self.key_id
    }

    /// Its private key's bytes, to store (with the care a private key needs).
    pub fn secret_bytes(&self) -> Vec<u8> {
        self.secret.to_bytes().to_vec()
    }

    /// Its public key configuration.
    pub fn config(&self) -> KeyConfig {
        KeyConfig {
            key_id: self.key_id,
            public_key: self.public_key.clone(),
        }
    }
}

/// What a sealed message is bound to: its round's task, id and attempt, and the SHA-256 digest
/// of the round's query as the aggregator published it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    task_id: String,
    round_id: String,
    attempt: u32,
    query_digest: [u8; 32],
}

impl Binding {
    /// The binding of a message answering `query`: its digest is that of the query's JSON
    /// (tally-messages' encoding, which a relay republishes verbatim).
    pub fn of(query: &RoundQuery) -> Self {
        // Unwrap safety: a round query serializes to JSON infallibly (no map with non-string
        // keys, no failing serializer).
        let json = serde_json::to_vec(query).expect("round queries serialize");
        Self {
            task_id: query.task_id.clone(),
            round_id: query.round_id.clone(),
            attempt: query.attempt,
            query_digest: Sha256::digest(&json).into(),
        }
    }

    /// The associated data: `"tally round binding v1"`, then the task id and the round id,
    /// each preceded by its length in two bytes, the attempt in four bytes (all big-endian),
    /// and the query's digest.
    pub fn associated_data(&self) -> Vec<u8> {
        let mut data = Vec::with_capacity(
            BINDING_LABEL.len() + 4 + self.task_id.len() + self.round_id.len() + 4 + 32,
        );
        data.extend_from_slice(BINDING_LABEL);
        for id in [&self.task_id, &self.round_id] {
            // Ids longer than 2^16 bytes are cut at that length: the digest binds them whole.
            let length = u16::try_from(id.len()).unwrap_or(u16::MAX);
            data.extend_from_slice(&length.to_be_bytes());
            data.extend_from_slice(&id.as_bytes()[..usize::from(length)]);
        }
        data.extend_from_slice(&self.attempt.to_be_bytes());
        data.extend_from_slice(&self.query_digest);
        data
    }
}

/// The header of a message sealed to `key_id`.
fn header(key_id: u8) -> [u8; HEADER_BYTES] {
    let [k0, k1] = KEM_ID.to_be_bytes();
    let [f0, f1] = KDF_ID.to_be_bytes();
    let [a0, a1] = AEAD_ID.to_be_bytes();
    [key_id, k0, k1, f0, f1, a0, a1]
}

/// The HPKE `info` of a message with `header`.
fn info(header: &[u8; HEADER_BYTES]) -> Vec<u8> {
    let mut info = Vec::with_capacity(INFO_LABEL.len() + 1 + HEADER_BYTES);
    info.extend_from_slice(INFO_LABEL);
    info.push(0);
    info.extend_from_slice(header);
    info
}

/// Seals `message` to the key of `config` under `binding`, with a fresh report id; both the
/// report id and the HPKE ephemeral key come from the CSPRNG `rng`. The answer is base64url
/// without padding, [`SEAL_OVERHEAD`] bytes longer than the message before base64.
pub fn seal<R: CryptoRng + ?Sized>(
    config: &KeyConfig,
    binding: &Binding,
    message: &str,
    rng: &mut R,
) -> String {
    let mut report_id = [0u8; REPORT_ID_BYTES];
    rng.fill_bytes(&mut report_id);
    seal_with_report_id(config, binding, report_id, message, rng)
}

/// [`seal`] with the report id given: for a test that replays one.
fn seal_with_report_id<R: CryptoRng + ?Sized>(
    config: &KeyConfig,
    binding: &Binding,
    report_id: [u8; REPORT_ID_BYTES],
    message: &str,
    rng: &mut R,
) -> String {
    let header = header(config.key_id);
    let mut plaintext = Vec::with_capacity(REPORT_ID_BYTES + message.len());
    plaintext.extend_from_slice(&report_id);
    plaintext.extend_from_slice(message.as_bytes());
    // Unwrap safety: sealing fails only past the AEAD's message limit (one message per
    // context here) or for an invalid public key, which a KeyConfig never holds.
    let (encapsulated, ciphertext) =
        hpke::single_shot_seal_with_rng::<ChaCha20Poly1305, HkdfSha256, Kem>(
            &OpModeS::Base,
            &config.public_key,
            &info(&header),
            &plaintext,
            &binding.associated_data(),
            &mut Unsized(rng),
        )
        .expect("sealing to a valid key cannot fail");
    let mut sealed = Vec::with_capacity(HEADER_BYTES + PUBLIC_KEY_BYTES + ciphertext.len());
    sealed.extend_from_slice(&header);
    sealed.extend_from_slice(&encapsulated.to_bytes());
    sealed.extend_from_slice(&ciphertext);
    URL_SAFE_NO_PAD.encode(sealed)
}

/// A `?Sized` CSPRNG as the sized one `hpke` takes.
struct Unsized<'a, R: ?Sized>(&'a mut R);

impl<R: CryptoRng + ?Sized> rand::TryRng for Unsized<'_, R> {
    type Error = std::convert::Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        Ok(self.0.next_u32())
    }

    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        Ok(self.0.next_u64())
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
        self.0.fill_bytes(dst);
        Ok(())
    }
}

impl<R: CryptoRng + ?Sized> rand::TryCryptoRng for Unsized<'_, R> {}

/// A message opened: its report id and the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Opened {
    /// The id its device drew for it.
    pub report_id: [u8; REPORT_ID_BYTES],
    /// The message, as the device's report encodes it.
    pub message: String,
}

/// Why a sealed message was not opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// Not base64url, shorter than a sealed message, or of another suite.
    #[error("not a sealed message of the suite")]
    Malformed,
    /// Sealed to a key id the aggregator does not hold (retired past its grace period, or
    /// never the aggregator's).
    #[error("sealed to key id {0}, which is not a live key of the aggregator")]
    UnknownKey(u8),
    /// Does not open under the round's binding: moved from another task, round or attempt,
    /// sealed for another query, or altered.
    #[error("does not open under this round's binding")]
    NotOpened,
    /// Opens, but the message is not UTF-8.
    #[error("the message is not UTF-8")]
    NotText,
}

/// The aggregator's live key pairs, by key id: what opens sealed messages.
#[derive(Clone, Debug, Default)]
pub struct Keyring {
    keys: Vec<KeyPair>,
}

impl Keyring {
    /// A keyring of `keys` (the current key first, as [`Keyring::configs`] lists them).
    pub fn new(keys: Vec<KeyPair>) -> Self {
        Self { keys }
    }

    /// The public configurations, in order: what `GET /v1/hpke-keys` serves.
    pub fn configs(&self) -> Vec<KeyConfig> {
        self.keys.iter().map(KeyPair::config).collect()
    }

    /// Opens `sealed` (as [`seal`] made it) under `binding`.
    ///
    /// # Errors
    ///
    /// [`OpenError`] says why it was not opened; nothing of the message is read then.
    pub fn open(&self, binding: &Binding, sealed: &str) -> Result<Opened, OpenError> {
        let bytes = URL_SAFE_NO_PAD
            .decode(sealed)
            .map_err(|_| OpenError::Malformed)?;
        if bytes.len() < SEAL_OVERHEAD {
            return Err(OpenError::Malformed);
        }
        let (head, rest) = bytes.split_at(HEADER_BYTES);
        let key_id = head[0];
        if head != header(key_id) {
            return Err(OpenError::Malformed);
        }
        let key = self
            .keys
            .iter()
            .find(|k| k.key_id == key_id)
            .ok_or(OpenError::UnknownKey(key_id))?;
        let (encapsulated, ciphertext) = rest.split_at(PUBLIC_KEY_BYTES);
        let encapsulated = <Kem as hpke::Kem>::EncappedKey::from_bytes(encapsulated)
            .map_err(|_| OpenError::Malformed)?;
        // Unwrap safety: the header was checked to be the one sealing builds.
        let header: [u8; HEADER_BYTES] = head.try_into().expect("a header is 7 bytes");
        let plaintext = hpke::single_shot_open::<ChaCha20Poly1305, HkdfSha256, Kem>(
            &OpModeR::Base,
            &key.secret,
            &encapsulated,
            &info(&header),
            ciphertext,
            &binding.associated_data(),
        )
        .map_err(|_| OpenError::NotOpened)?;
        let (report_id, message) = plaintext.split_at(REPORT_ID_BYTES);
        let message = String::from_utf8(message.to_vec()).map_err(|_| OpenError::NotText)?;
        Ok(Opened {
            // Unwrap safety: the plaintext is at least a report id long (checked above).
            report_id: report_id.try_into().expect("a report id is 16 bytes"),
            message,
        })
    }
}

#[cfg(test)]
mod tests;
