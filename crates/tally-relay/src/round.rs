//! One round as the relay runs it: the aggregator's query, republished verbatim, the upload
//! tokens the relay issued, and the sealed uploads it holds in memory until the round closes.

use std::collections::hash_map::Entry;
use std::sync::Mutex;
use std::time::Instant;

use rand::Rng;
use rustc_hash::FxHashMap;
use tally_core::sampling::PoissonSampler;
use tally_messages::{ErrorCode, Rejection, RoundQuery, Sampling, SealedUpload};
use tally_server::service::Principal;

use crate::cohort::{CohortRule, HeldUpload};

/// What one batch of sealed uploads did.
pub(crate) struct BatchOutcome {
    /// Uploads accepted (reports and abstentions).
    pub(crate) accepted: u32,
    /// Uploads refused, with why.
    pub(crate) rejected: Vec<Rejection>,
    /// Whether the round now holds as many uploads as it picks from, and should close.
    pub(crate) full: bool,
}

/// How the relay sizes a round's sealed messages.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SealedSize {
    /// The longest sealed message, in base64url characters.
    pub(crate) max_chars: usize,
    /// The bytes sealing adds to each message.
    pub(crate) overhead: usize,
}

/// A round the relay accepts uploads for.
pub(crate) struct RelayRound {
    /// The aggregator's query, exactly as it published it.
    pub(crate) query: RoundQuery,
    /// When the relay stops taking uploads and forwards: before the aggregator's deadline,
    /// by the relay's margin.
    pub(crate) closes_at: Instant,
    /// How many uploads the relay holds at most: it picks the cohort among them.
    pool: u64,
    sealed: SealedSize,
    state: Mutex<Held>,
}

/// What the relay holds of a round.
struct Held {
    /// `false` once the round closed.
    open: bool,
    /// Issued tokens: the relaying credential each was issued to, and whether it was used.
    tokens: FxHashMap<u128, Token>,
    /// The token of each device credential that checked in.
    devices: FxHashMap<String, u128>,
    /// The credentials that checked devices in, numbered within the round.
    relayers: FxHashMap<String, u32>,
    /// The uploads, each with its relaying credential's number: never a token, a time or an
    /// order that reaches the aggregator.
    uploads: Vec<HeldUpload>,
}

#[derive(Clone, Copy)]
struct Token {
    relayer: u32,
    used: bool,
}

impl RelayRound {
    /// A round publishing `query` until `closes_at`, holding at most `pool` uploads, whose
    /// sealed messages are sized by `sealed`.
    pub(crate) fn new(
        query: RoundQuery,
        closes_at: Instant,
        pool: u64,
        sealed: SealedSize,
    ) -> Self {
        Self {
            query,
            closes_at,
            pool,
            sealed,
            state: Mutex::new(Held {
                open: true,
                tokens: FxHashMap::default(),
                devices: FxHashMap::default(),
                relayers: FxHashMap::default(),
                uploads: Vec::new(),
            }),
        }
    }

    /// Upload tokens for `who`: a device credential's one token of the round (the same at
    /// every check-in, spent or not), or `devices` fresh ones for an operator relaying for
    /// many. `None` once the round closed.
    pub(crate) fn check_in<R: Rng + ?Sized>(
        &self,
        who: &Principal,
        devices: u32,
        device: bool,
        rng: &mut R,
    ) -> Option<Vec<String>> {
        let mut guard = self.lock();
        let held = &mut *guard;
        if !held.open {
            return None;
        }
        let next = u32::try_from(held.relayers.len()).unwrap_or(u32::MAX);
        let relayer = *held.relayers.entry(who.id.clone()).or_insert(next);
        if device {
            let token = match held.devices.get(&who.id) {
                Some(&token) => token,
                None => {
                    let token = fresh_token(&mut held.tokens, relayer, rng);
                    held.devices.insert(who.id.clone(), token);
                    token
                }
            };
            return Some(vec![format!("{token:032x}")]);
        }
        Some(
            (0..devices)
                .map(|_| format!("{:032x}", fresh_token(&mut held.tokens, relayer, rng)))
                .collect(),
        )
    }

    /// Holds a batch of sealed uploads the credential `uploader` sent, or `None` once the
    /// round closed. Each token is good for one upload, spent by its first (accepted or not),
    /// and only in the hands of the credential it was issued to (another's is
    /// [`ErrorCode::UnknownToken`] and stays unspent); a round holds at most its pool, and
    /// refuses the rest as [`ErrorCode::ClosedRound`] with their tokens unspent.
    ///
    /// # Privacy
    ///
    /// A sealed message is checked only for its alphabet and its length, against the
    /// round's `max_report_bytes` plus the seal's overhead; it is never opened, parsed,
    /// logged or written anywhere, and a refusal names its code alone.
    pub(crate) fn upload(
        &self,
        uploader: &Principal,
        uploads: Vec<SealedUpload>,
    ) -> Option<BatchOutcome> {
        let mut guard = self.lock();
        let held = &mut *guard;
        if !held.open {
            return None;
        }
        let uploader = held.relayers.get(&uploader.id).copied();
        let mut outcome = BatchOutcome {
            accepted: 0,
            rejected: Vec::new(),
            full: false,
        };
        for (index, upload) in uploads.into_iter().enumerate() {
            let token = parse_token(&upload.token)
                .and_then(|t| held.tokens.get_mut(&t))
                .filter(|token| Some(token.relayer) == uploader);
            let verdict = match token {
                _ if held.uploads.len() as u64 >= self.pool => Err(ErrorCode::ClosedRound),
                None => Err(ErrorCode::UnknownToken),
                Some(token) if token.used => Err(ErrorCode::ReusedToken),
                Some(token) => {
                    token.used = true;
                    self.check(&upload.messages).map(|()| token.relayer)
                }
            };
            match verdict {
                Ok(relayer) => {
                    held.uploads.push(HeldUpload {
                        relayer,
                        messages: upload.messages,
                    });
                    outcome.accepted += 1;
                }
                Err(code) => outcome.rejected.push(Rejection {
                    // Unwrap safety: batches are capped far below 2^32 uploads.
                    index: u32::try_from(index).expect("batch index fits u32"),
                    code,
                }),
            }
        }
        outcome.full = held.uploads.len() as u64 >= self.pool;
        Some(outcome)
    }

    /// Whether `messages` could be a sealed report of this round: base64url without padding,
    /// each at most the longest sealed message, and the messages they seal together no
    /// longer than `max_report_bytes` once joined with commas (as a report's messages are).
    fn check(&self, messages: &[String]) -> Result<(), ErrorCode> {
        let max_bytes = self.query.max_report_bytes as usize;
        if messages.len() > max_bytes + 1 {
            return Err(ErrorCode::Oversized);
        }
        let mut joined = 0;
        for message in messages {
            if message.len() > self.sealed.max_chars {
                return Err(ErrorCode::Oversized);
            }
            let bytes = base64url_bytes(message).ok_or(ErrorCode::Malformed)?;
            joined += bytes
                .checked_sub(self.sealed.overhead)
                .ok_or(ErrorCode::Malformed)?;
        }
        if joined + messages.len().saturating_sub(1) > max_bytes {
            return Err(ErrorCode::Oversized);
        }
        Ok(())
    }

    /// Closes the round: no more check-ins or uploads, every token forgotten. Its uploads,
    /// or `None` if it was closed already.
    pub(crate) fn close(&self) -> Option<Vec<HeldUpload>> {
        let mut held = self.lock();
        if !held.open {
            return None;
        }
        held.open = false;
        held.tokens = FxHashMap::default();
        held.devices = FxHashMap::default();
        held.relayers = FxHashMap::default();
        Some(std::mem::take(&mut held.uploads))
    }

    /// How the round's cohort is picked, with at most `per_credential` devices from one
    /// relaying credential. The relay flips the sample-and-threshold coins of a round whose
    /// ask has a sampling rate and whose devices do not flip them themselves.
    pub(crate) fn rule(&self, per_credential: u64) -> CohortRule {
        let sampling = match self.query.sampling {
            Sampling::Aggregator => self.query.ask.sampling_rate(),
            Sampling::Device => None,
        };
        CohortRule {
            target: self.query.cohort_target,
            per_credential,
            // A rate the aggregator published is a probability (it was calibrated as one); a
            // rate that is not is forwarded unsampled, never guessed at.
            sampling: sampling.and_then(|p| PoissonSampler::new(p).ok()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Held> {
        // A panic while holding the lock leaves counts that may be half-updated; refusing
        // to go on is the only safe answer.
        self.state.lock().expect("relay round lock poisoned")
    }
}

/// Draws a token not issued before and records it as unused, issued to `relayer`.
fn fresh_token<R: Rng + ?Sized>(
    tokens: &mut FxHashMap<u128, Token>,
    relayer: u32,
    rng: &mut R,
) -> u128 {
    loop {
        let token: u128 = u128::from(rng.next_u64()) | (u128::from(rng.next_u64()) << 64);
        if let Entry::Vacant(slot) = tokens.entry(token) {
            slot.insert(Token {
                relayer,
                used: false,
            });
            return token;
        }
    }
}

fn parse_token(token: &str) -> Option<u128> {
    if token.len() != 32 {
        return None;
    }
    u128::from_str_radix(token, 16).ok()
}

/// The bytes a base64url text without padding encodes, or `None` if it is not one.
fn base64url_bytes(text: &str) -> Option<usize> {
    let alphabet = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
    (text.len() % 4 != 1 && text.bytes().all(alphabet)).then_some(text.len() * 3 / 4)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;
    use tally_messages::{Ask, PROTOCOL_VERSION};

    use super::*;

    /// A round of items of at most 16 bytes, sealed with 10 bytes of overhead, holding at
    /// most `pool` uploads.
    fn round(pool: u64) -> RelayRound {
        let query = RoundQuery {
            version: PROTOCOL_VERSION,
            round_id: "r".into(),
            task_id: "t".into(),
            population: "p".into(),
            round: 1,
            attempt: 1,
            deadline: 0,
            max_report_bytes: 16,
            min_cohort: 1,
            cohort_target: 100,
            ask: Ask::Item { sampling_rate: 0.5 },
            sampling: Sampling::Aggregator,
        };
        let sealed = SealedSize {
            max_chars: (26 * 4_usize).div_ceil(3),
            overhead: 10,
        };
        RelayRound::new(
            query,
            Instant::now() + Duration::from_secs(60),
            pool,
            sealed,
        )
    }

    fn who(id: &str, role: tally_messages::Role) -> Principal {
        Principal {
            id: id.into(),
            role,
            populations: vec!["p".into()],
        }
    }

    /// The base64url text of `bytes` bytes.
    fn sealed(bytes: usize) -> String {
        "A".repeat((bytes * 4).div_ceil(3))
    }

    fn upload(token: &str, messages: Vec<String>) -> SealedUpload {
        SealedUpload {
            token: token.into(),
            messages,
        }
    }

    #[test]
    fn a_device_holds_one_token_per_round_and_each_token_one_upload() {
        let round = round(100);
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let device = who("d1", tally_messages::Role::Device);
        let first = round.check_in(&device, 1, true, &mut rng).unwrap();
        let again = round.check_in(&device, 1, true, &mut rng).unwrap();
        assert_eq!(first, again);
        let outcome = round
            .upload(
                &device,
                vec![
                    upload(&first[0], vec![sealed(14)]),
                    upload(&first[0], vec![sealed(14)]),
                    upload(&"0".repeat(32), vec![sealed(14)]),
                    upload("not a token", Vec::new()),
                ],
            )
            .unwrap();
        assert_eq!(outcome.accepted, 1);
        let codes: Vec<_> = outcome.rejected.iter().map(|r| (r.index, r.code)).collect();
        assert_eq!(
            codes,
            [
                (1, ErrorCode::ReusedToken),
                (2, ErrorCode::UnknownToken),
                (3, ErrorCode::UnknownToken)
            ]
        );
        let operator = who("o1", tally_messages::Role::Operator);
        let relayed = round.check_in(&operator, 5, false, &mut rng).unwrap();
        assert_eq!(relayed.len(), 5);
        let held = round.close().unwrap();
        assert_eq!(held.len(), 1);
        assert!(round.close().is_none());
        assert!(round.check_in(&device, 1, true, &mut rng).is_none());
        assert!(
            round
                .upload(&operator, vec![upload(&relayed[0], Vec::new())])
                .is_none()
        );
    }

    /// A token is good only in the hands of the credential it was issued to: another device's
    /// (or operator's) upload with it is refused as unknown and leaves it unspent for its
    /// holder. Without the check, device B uploaded with device A's token.
    #[test]
    fn a_token_is_good_only_for_the_credential_it_was_issued_to() {
        let round = round(100);
        let mut rng = ChaCha20Rng::seed_from_u64(4);
        let alice = who("d1", tally_messages::Role::Device);
        let bob = who("d2", tally_messages::Role::Device);
        let operator = who("o1", tally_messages::Role::Operator);
        let token = round.check_in(&alice, 1, true, &mut rng).unwrap().remove(0);
        // Bob holds a token of his own; the operator and a third device hold none.
        round.check_in(&bob, 1, true, &mut rng).unwrap();
        let stranger = who("d3", tally_messages::Role::Device);
        for thief in [&bob, &operator, &stranger] {
            let outcome = round
                .upload(thief, vec![upload(&token, vec![sealed(14)])])
                .unwrap();
            assert_eq!(outcome.accepted, 0, "{}", thief.id);
            assert_eq!(outcome.rejected[0].code, ErrorCode::UnknownToken);
        }
        let outcome = round
            .upload(&alice, vec![upload(&token, vec![sealed(14)])])
            .unwrap();
        assert_eq!(outcome.accepted, 1);
    }

    /// Sealed messages are checked for their alphabet and length alone: each at most the
    /// longest sealed message, and together sealing no more than `max_report_bytes` once
    /// joined with commas. An abstention (no message) is an upload.
    #[test]
    fn sealed_messages_are_checked_for_their_length_and_alphabet_only() {
        let round = round(100);
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        let operator = who("o1", tally_messages::Role::Operator);
        let tokens = round.check_in(&operator, 8, false, &mut rng).unwrap();
        let messages = [
            vec![sealed(26)],
            vec![sealed(27)],
            vec![sealed(9)],
            vec!["AAA=".into()],
            vec![sealed(15), sealed(15), sealed(14)],
            vec![sealed(15), sealed(15), sealed(15)],
            Vec::new(),
            vec![sealed(10)],
        ];
        let uploads = tokens
            .iter()
            .zip(messages)
            .map(|(t, m)| upload(t, m))
            .collect();
        let outcome = round.upload(&operator, uploads).unwrap();
        let codes: Vec<_> = outcome.rejected.iter().map(|r| (r.index, r.code)).collect();
        assert_eq!(
            codes,
            [
                (1, ErrorCode::Oversized),
                (2, ErrorCode::Malformed),
                (3, ErrorCode::Malformed),
                (5, ErrorCode::Oversized)
            ]
        );
        assert_eq!(outcome.accepted, 4);
    }

    /// A round holds at most its pool: past it the rest of the batch is refused as closed,
    /// tokens unspent, and the round says it is full.
    #[test]
    fn a_round_holds_at_most_its_pool() {
        let round = round(3);
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let operator = who("o1", tally_messages::Role::Operator);
        let tokens = round.check_in(&operator, 5, false, &mut rng).unwrap();
        let uploads = tokens.iter().map(|t| upload(t, Vec::new())).collect();
        let outcome = round.upload(&operator, uploads).unwrap();
        assert_eq!(outcome.accepted, 3);
        assert!(outcome.full);
        assert!(
            outcome
                .rejected
                .iter()
                .all(|r| r.code == ErrorCode::ClosedRound)
        );
        assert_eq!(round.close().unwrap().len(), 3);
    }
}
