//! Keyed sampling: each client's coin and its one row are functions of a secret key.
//!
//! A keyed coin is a pseudorandom function, SipHash-2-4 under a 128-bit key, of
//! `(round, client id)`: its 64 output bits, read as an integer `h`, select the client when
//! `h < t` with `t = ⌊p_s·2^64⌋`. The rate is thus rounded *down* to the PRF's resolution
//! `2^-64`, and [`keyed_rate`] gives the rate actually used, exactly. A client's one row among
//! several is the row of smallest keyed score, the same PRF of `(round, client id, item,
//! occurrence)`, where `occurrence` numbers the client's rows that hold the same item
//! (`0, 1, …`): every row of the client has its own score, so the choice is uniform over the
//! rows and does not depend on the order the rows arrive in. A client bounded to `k` distinct
//! items keeps the `k` of smallest item score, the PRF of `(round, client id, item)`
//! ([`choose_items`]): a uniform `k`-subset of its distinct items. A client of several items
//! flips one coin per item, the PRF of `(round, client id, item)` under another tag
//! ([`KeyedCoin::flip_item`]). A tag byte first in each message keeps coins and scores apart.
//!
//! The same key, round and data give the same sample everywhere: on the command line, in the
//! Python package and in every Spark task, retried or speculative.
//!
//! # Privacy
//!
//! SipHash-2-4 is designed as a PRF for short messages (Aumasson and Bernstein, 2012): under a
//! secret uniformly random 128-bit key its 64-bit outputs are assumed indistinguishable from a
//! random function's. Modelling it as a random function, each `h` is uniform on
//! `[0, 2^64)`, so the coins are independent `Ber(t/2^64)` variables, exactly, and the chosen
//! row is uniform among a client's rows, independently of the coins. The mechanism's guarantee
//! must be computed for the rounded rate [`keyed_rate`], never for the requested one. The
//! argument holds only while the key is secret: anyone who knows it can recompute who was
//! sampled (the same as knowing the seed of an unkeyed run).

use std::fmt;
use std::hash::Hasher as _;
use tally_accounting::naming::{Naming, naming};

use siphasher::sip::SipHasher24;

use crate::Error;

/// The context string of the key derivation: changing it changes every keyed coin.
/// Version 1 keyed BLAKE3 with a 256-bit key; version 2 is SipHash-2-4 with a 128-bit key.
const KEY_CONTEXT: &str = "tally 2026-11 keyed sampling key v2 siphash-2-4";

/// The domain-separation byte of a coin's input.
const COIN_TAG: u8 = 1;

/// The domain-separation byte of a row score's input.
const ROW_TAG: u8 = 2;

/// The domain-separation byte of an item score's input (the choice of `k` distinct items).
const ITEM_TAG: u8 = 3;

/// The domain-separation byte of a per-item coin's input.
const ITEM_COIN_TAG: u8 = 4;

/// The fewest hexadecimal digits a key's text may have ([`SamplingKey::from_hex_text`]): 32,
/// that is 128 bits, the SipHash-2-4 key's length.
pub const MIN_KEY_HEX_DIGITS: usize = 32;

/// The bytes of a generated key ([`SamplingKey::generate_hex_text`]): 256 bits, so that the
/// derived 128-bit key is uniform whatever the derivation loses.
pub const GENERATED_KEY_BYTES: usize = 32;

/// A secret sampling key: the 128-bit SipHash-2-4 key derived from the secret the user gave.
///
/// Its `Debug` form never shows the key.
#[derive(Clone)]
pub struct SamplingKey(SipHasher24);

impl SamplingKey {
    /// Derives the key from a secret of any length: the first 16 bytes of BLAKE3's key
    /// derivation with a fixed context string.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if `secret` is empty.
    pub fn derive(secret: &[u8]) -> Result<Self, Error> {
        if secret.is_empty() {
            return Err(Error::invalid("sampling key", "\"\"", "a non-empty secret"));
        }
        let mut key = [0u8; 16];
        blake3::Hasher::new_derive_key(KEY_CONTEXT)
            .update(secret)
            .finalize_xof()
            .fill(&mut key);
        Ok(Self(SipHasher24::new_with_key(&key)))
    }

    /// Parses a key given as text, as the command line, the Python package and Spark take it:
    /// at least [`MIN_KEY_HEX_DIGITS`] hexadecimal digits (128 bits), then derived as
    /// [`SamplingKey::derive`] derives the text's bytes.
    ///
    /// # Privacy
    ///
    /// A keyed sample is private only while nobody can guess the key: a short or memorable
    /// string (a word, `a`) is found by trying candidates, and with it who was sampled. The
    /// digits should be drawn uniformly by a cryptographic generator (`tally sampling-key`,
    /// Python's `secrets.token_hex(32)`); their count bounds the key's entropy, so at least 128
    /// bits are asked for.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `text` is at least [`MIN_KEY_HEX_DIGITS`] hexadecimal
    /// digits and nothing else. The message gives the text's length, never the text.
    pub fn from_hex_text(text: &str) -> Result<Self, Error> {
        if text.len() < MIN_KEY_HEX_DIGITS || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(Error::invalid(
                "sampling key",
                format!("<{} characters, not shown>", text.chars().count()),
                match naming() {
                    Naming::Flags => {
                        "at least 32 hexadecimal digits (128 bits) drawn at random and kept \
                         secret: make one with `tally sampling-key --output FILE` and pass \
                         --sampling-key-file FILE, or in Python `secrets.token_hex(32)`"
                    }
                    Naming::Keywords => {
                        "at least 32 hexadecimal digits (128 bits) drawn at random and kept \
                         secret: make one with `secrets.token_hex(32)` and pass it as \
                         sampling_key="
                    }
                },
            ));
        }
        Self::derive(text.as_bytes())
    }

    /// A fresh key's text: [`GENERATED_KEY_BYTES`] bytes from `rng` as lowercase hexadecimal
    /// digits, accepted by [`SamplingKey::from_hex_text`].
    pub fn generate_hex_text<R: rand::CryptoRng + ?Sized>(rng: &mut R) -> String {
        let mut bytes = [0u8; GENERATED_KEY_BYTES];
        rng.fill_bytes(&mut bytes);
        bytes.iter().map(|byte| format!("{byte:02x}")).collect()
    }

    /// SipHash-2-4 of `message`.
    fn prf(&self, message: &[u8]) -> u64 {
        self.0.hash(message)
    }

    /// SipHash-2-4 of the concatenation of `parts`, without copying them together.
    fn prf_of_parts(&self, parts: &[&[u8]]) -> u64 {
        let mut hasher = self.0;
        for part in parts {
            hasher.write(part);
        }
        hasher.finish()
    }
}

impl PartialEq for SamplingKey {
    fn eq(&self, other: &Self) -> bool {
        self.0.keys() == other.0.keys()
    }
}

impl Eq for SamplingKey {}

impl fmt::Debug for SamplingKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SamplingKey(<secret>)")
    }
}

/// The rate a keyed coin uses for the requested `rate`: `⌊rate·2^64⌋ / 2^64`, exactly (the
/// result is an `f64` with at most 53 significant bits, so no rounding happens).
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless `0 ≤ rate < 1`.
pub fn keyed_rate(rate: f64) -> Result<f64, Error> {
    Ok(coin_threshold(rate)? as f64 * 2f64.powi(-64))
}

/// `⌊rate·2^64⌋` for `0 ≤ rate < 1`, computed exactly from the rate's dyadic form.
fn coin_threshold(rate: f64) -> Result<u64, Error> {
    if !(rate.is_finite() && (0.0..1.0).contains(&rate)) {
        return Err(Error::invalid(
            "sampling rate",
            rate,
            "a probability in [0, 1) for a keyed coin",
        ));
    }
    let (mantissa, exponent) = super::decompose(rate);
    if mantissa == 0 {
        return Ok(0);
    }
    // rate = mantissa·2^exponent < 1, so rate·2^64 = mantissa·2^(exponent + 64) < 2^64.
    let shift = exponent + 64;
    Ok(if shift >= 0 {
        mantissa << shift
    } else {
        mantissa.checked_shr(shift.unsigned_abs()).unwrap_or(0)
    })
}

/// A client's keyed coin: heads with probability exactly [`KeyedCoin::rate`] when the PRF is
/// modelled as a random function.
#[derive(Clone, Debug)]
pub struct KeyedCoin {
    key: SamplingKey,
    threshold: u64,
}

impl KeyedCoin {
    /// The coin of `key` for the requested `rate`, which is rounded down to a multiple of
    /// `2^-64` ([`keyed_rate`]).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `0 ≤ rate < 1`.
    pub fn new(key: SamplingKey, rate: f64) -> Result<Self, Error> {
        Ok(Self {
            key,
            threshold: coin_threshold(rate)?,
        })
    }

    /// The rate actually used, `t/2^64`.
    pub fn rate(&self) -> f64 {
        self.threshold as f64 * 2f64.powi(-64)
    }

    /// Whether the client with id `client` (its bytes, for example the UTF-8 of its text id)
    /// is sampled in `round`.
    pub fn flip(&self, round: u64, client: &[u8]) -> bool {
        // The message `COIN_TAG ‖ round ‖ client`, hashed in one call from the stack when it
        // fits a short block (ids of up to 55 bytes), in parts otherwise: no allocation.
        let round = round.to_le_bytes();
        let length = 9 + client.len();
        let mut block = [0u8; 64];
        let hash = if length <= block.len() {
            block[0] = COIN_TAG;
            block[1..9].copy_from_slice(&round);
            block[9..length].copy_from_slice(client);
            self.key.prf(&block[..length])
        } else {
            self.key.prf_of_parts(&[&[COIN_TAG], &round, client])
        };
        hash < self.threshold
    }

    /// Whether the item `item` of the client `client` is sampled in `round`: the coin of one
    /// (client, item) pair, independent of the client's other items' coins and of
    /// [`KeyedCoin::flip`].
    pub fn flip_item(&self, round: u64, client: &[u8], item: &[u8]) -> bool {
        keyed_item_hash(&self.key, ITEM_COIN_TAG, round, client, item) < self.threshold
    }

    /// The key, for choosing the sampled clients' rows with [`choose_row`].
    pub fn key(&self) -> &SamplingKey {
        &self.key
    }
}

/// The keyed score of the `occurrence`-th row of `client` holding `item` in `round`.
pub fn row_score(
    key: &SamplingKey,
    round: u64,
    client: &[u8],
    item: &[u8],
    occurrence: u64,
) -> u64 {
    key.prf_of_parts(&[
        &[ROW_TAG],
        &round.to_le_bytes(),
        &occurrence.to_le_bytes(),
        &(client.len() as u64).to_le_bytes(),
        client,
        item,
    ])
}

/// The PRF of `tag ‖ round ‖ len(client) ‖ client ‖ item` (the length as 8 bytes little-endian).
fn keyed_item_hash(key: &SamplingKey, tag: u8, round: u64, client: &[u8], item: &[u8]) -> u64 {
    key.prf_of_parts(&[
        &[tag],
        &round.to_le_bytes(),
        &(client.len() as u64).to_le_bytes(),
        client,
        item,
    ])
}

/// The keyed score of the item `item` of `client` in `round`, by which [`choose_items`] keeps
/// a client's `k` items.
pub fn item_score(key: &SamplingKey, round: u64, client: &[u8], item: &[u8]) -> u64 {
    keyed_item_hash(key, ITEM_TAG, round, client, item)
}

/// The positions in `items` of the at most `max_items` distinct items `client` contributes in
/// `round`: the distinct items of smallest [`item_score`] (ties to the smaller item), each at
/// the first position holding it, in increasing order of position. Modelling the PRF as a
/// random function, the scores of distinct items are independent and uniform, so the kept
/// items are a uniform `max_items`-subset of the client's distinct items, whatever the order
/// of its rows.
pub fn choose_items<T: AsRef<[u8]> + Ord>(
    key: &SamplingKey,
    round: u64,
    client: &[u8],
    items: &[T],
    max_items: u32,
) -> Vec<usize> {
    let mut scored: Vec<(u64, &[u8], usize)> = super::contribution::first_positions(items)
        .into_iter()
        .map(|position| {
            let item = items[position].as_ref();
            (item_score(key, round, client, item), item, position)
        })
        .collect();
    scored.sort_unstable();
    let mut kept: Vec<usize> = scored
        .into_iter()
        .take(max_items as usize)
        .map(|(_, _, position)| position)
        .collect();
    kept.sort_unstable();
    kept
}

/// The index in `items` of the row `client` contributes in `round`: the row of smallest
/// [`row_score`], where rows holding equal items are numbered in their order in `items`
/// (which row of equal items is returned does not matter: they hold the same item). Ties of
/// the score go to the smaller item. `None` if `items` is empty.
pub fn choose_row<T: AsRef<[u8]>>(
    key: &SamplingKey,
    round: u64,
    client: &[u8],
    items: &[T],
) -> Option<usize> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by(|&a, &b| items[a].as_ref().cmp(items[b].as_ref()));
    let mut best: Option<(u64, usize)> = None;
    let mut occurrence = 0u64;
    for (position, &row) in order.iter().enumerate() {
        let item = items[row].as_ref();
        occurrence = match position.checked_sub(1) {
            Some(previous) if items[order[previous]].as_ref() == item => occurrence + 1,
            _ => 0,
        };
        let score = row_score(key, round, client, item, occurrence);
        // Rows are visited by increasing item, so keeping the first minimum breaks ties
        // towards the smaller item.
        if best.is_none_or(|(lowest, _)| score < lowest) {
            best = Some((score, row));
        }
    }
    best.map(|(_, row)| row)
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    fn key() -> SamplingKey {
        SamplingKey::derive(b"test key").unwrap()
    }

    #[test]
    fn rates_round_down_to_the_prf_resolution() {
        assert_eq!(keyed_rate(0.5).unwrap().to_bits(), 0.5f64.to_bits());
        assert_eq!(keyed_rate(0.0).unwrap().to_bits(), 0.0f64.to_bits());
        // 0.1 = m·2^-56 with a 53-bit m: a multiple of 2^-64, kept exactly.
        assert_eq!(keyed_rate(0.1).unwrap().to_bits(), 0.1f64.to_bits());
        // Below 2^-11 the rate's last bits fall under 2^-64 and are dropped.
        let small = 1e-5;
        let used = keyed_rate(small).unwrap();
        assert!(used <= small && small - used < 2f64.powi(-64), "{used}");
        assert!(used < small);
        assert_eq!(
            keyed_rate(2f64.powi(-70)).unwrap().to_bits(),
            0.0f64.to_bits()
        );
        let below_one = 1.0 - f64::EPSILON / 2.0;
        assert_eq!(
            keyed_rate(below_one).unwrap().to_bits(),
            below_one.to_bits()
        );
        assert_eq!(
            coin_threshold(0.25).unwrap(),
            1u64 << 62,
            "0.25·2^64 exactly"
        );
        for bad in [1.0, -0.1, f64::NAN, f64::INFINITY] {
            assert!(keyed_rate(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_empty_secret_is_rejected_and_the_key_is_not_shown() {
        assert!(SamplingKey::derive(b"").is_err());
        assert_eq!(format!("{:?}", key()), "SamplingKey(<secret>)");
        assert_ne!(
            SamplingKey::derive(b"a").unwrap(),
            SamplingKey::derive(b"b").unwrap()
        );
    }

    #[test]
    fn a_key_text_needs_128_bits_of_hexadecimal_digits_and_is_never_echoed() {
        let short = "0123456789abcdef0123456789abcde";
        for bad in ["", "a", "secret", short, "0123456789abcdef0123456789abcdeg"] {
            let error = SamplingKey::from_hex_text(bad).unwrap_err().to_string();
            assert!(error.contains("at least 32 hexadecimal digits"), "{error}");
            assert!(bad.len() < 8 || !error.contains(bad), "{error}");
        }
        let text = format!("{short}F");
        assert_eq!(
            SamplingKey::from_hex_text(&text).unwrap(),
            SamplingKey::derive(text.as_bytes()).unwrap()
        );
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(7);
        let generated = SamplingKey::generate_hex_text(&mut rng);
        assert_eq!(generated.len(), 2 * GENERATED_KEY_BYTES);
        assert!(SamplingKey::from_hex_text(&generated).is_ok());
        assert_ne!(generated, SamplingKey::generate_hex_text(&mut rng));
    }

    #[test]
    fn coins_are_deterministic_and_depend_on_key_round_and_client() {
        let coin = KeyedCoin::new(key(), 0.5).unwrap();
        let flips = |coin: &KeyedCoin, round| -> Vec<bool> {
            (0..256)
                .map(|c: u32| coin.flip(round, c.to_string().as_bytes()))
                .collect()
        };
        let first = flips(&coin, 0);
        assert_eq!(first, flips(&coin.clone(), 0));
        assert_ne!(first, flips(&coin, 1));
        let other = KeyedCoin::new(SamplingKey::derive(b"other").unwrap(), 0.5).unwrap();
        assert_ne!(first, flips(&other, 0));
        // Rate 0 never samples.
        let never = KeyedCoin::new(key(), 0.0).unwrap();
        assert!(flips(&never, 0).iter().all(|&heads| !heads));
    }

    #[test]
    fn a_coin_hashes_its_message_whatever_the_length_of_the_id() {
        // Ids around 55 bytes, where the message stops fitting one block on the stack: the
        // coin is the PRF of `COIN_TAG ‖ round ‖ id` built the plain way, on either side.
        let coin = KeyedCoin::new(key(), 0.5).unwrap();
        let mut heads = 0;
        for length in 40..80 {
            let id: Vec<u8> = (0..length).map(|i| b'a' + (i % 26) as u8).collect();
            for round in [0u64, 9] {
                let mut message = vec![COIN_TAG];
                message.extend_from_slice(&round.to_le_bytes());
                message.extend_from_slice(&id);
                let expected = key().prf(&message) < coin.threshold;
                assert_eq!(coin.flip(round, &id), expected, "length {length}");
                heads += usize::from(expected);
            }
        }
        assert!((10..70).contains(&heads), "{heads}");
    }

    #[test]
    fn item_choice_ignores_the_order_and_multiplicity_of_the_rows() {
        let rows = ["b", "a", "c", "a", "d", "b"];
        let reversed = ["b", "d", "a", "c", "a", "b"];
        for client in 0..50u32 {
            let client = client.to_string();
            let chosen: Vec<&str> = choose_items(&key(), 1, client.as_bytes(), &rows, 2)
                .into_iter()
                .map(|p| rows[p])
                .collect();
            let mut again: Vec<&str> = choose_items(&key(), 1, client.as_bytes(), &reversed, 2)
                .into_iter()
                .map(|p| reversed[p])
                .collect();
            let mut sorted = chosen.clone();
            sorted.sort_unstable();
            again.sort_unstable();
            assert_eq!(sorted, again, "client {client}");
            assert_eq!(chosen.len(), 2);
            assert_ne!(chosen[0], chosen[1]);
        }
        assert_eq!(choose_items(&key(), 0, b"x", &["a", "a"], 3), [0]);
        let coin = KeyedCoin::new(key(), 0.5).unwrap();
        let flips: Vec<bool> = (0..64u32)
            .map(|i| coin.flip_item(0, b"client", i.to_string().as_bytes()))
            .collect();
        assert!(flips.iter().any(|&h| h) && flips.iter().any(|&h| !h));
    }

    #[test]
    fn row_choice_ignores_the_order_of_the_rows() {
        let rows = ["b", "a", "c", "a", "b", "b"];
        let mut reversed = rows;
        reversed.reverse();
        for client in 0..100u32 {
            let client = client.to_string();
            let chosen = choose_row(&key(), 3, client.as_bytes(), &rows).unwrap();
            let again = choose_row(&key(), 3, client.as_bytes(), &reversed).unwrap();
            assert_eq!(rows[chosen], reversed[again], "client {client}");
        }
        assert_eq!(choose_row::<&str>(&key(), 0, b"x", &[]), None);
        assert_eq!(choose_row(&key(), 0, b"x", &["only"]), Some(0));
    }
}
