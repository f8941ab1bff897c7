use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use tally_messages::{Ask, PROTOCOL_VERSION, Sampling};

use super::*;

fn query(task: &str, round: &str, attempt: u32) -> RoundQuery {
    RoundQuery {
        version: PROTOCOL_VERSION,
        round_id: round.into(),
        task_id: task.into(),
        population: "p".into(),
        round: 1,
        attempt,
        deadline: 1_900_000_000,
        max_report_bytes: 64,
        min_cohort: 1,
        cohort_target: 100,
        ask: Ask::Item {
            sampling_rate: 0.25,
        },
        sampling: Sampling::Aggregator,
    }
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

/// RFC 9458 appendix A's gateway key: its secret key, and its key configuration, which lists
/// HKDF-SHA256 with AES-128-GCM and then with ChaCha20-Poly1305.
const RFC_9458_SECRET: &str = "3c168975674b2fa8e465970b79c8dcf09f1c741626480bd4c6162fc5b6a98e1a";
const RFC_9458_CONFIG: &str = "01002031e1f05a740102115220e9af918f738674aec95f54db6e04eb705aae8e\
                               79815500080001000100010003";

#[test]
fn key_configurations_read_rfc_9458s_example_and_round_trip() {
    let pair = KeyPair::from_secret_bytes(1, &unhex(RFC_9458_SECRET)).unwrap();
    let theirs = KeyConfig::decode(&unhex(RFC_9458_CONFIG)).unwrap();
    assert_eq!(theirs, pair.config());
    // Ours lists the one suite: the same key id, KEM and public key, then 4 bytes of
    // algorithms.
    let ours = pair.config().encode();
    assert_eq!(ours[..35], unhex(RFC_9458_CONFIG)[..35]);
    assert_eq!(ours[35..], [0, 4, 0, 1, 0, 3]);
    assert_eq!(KeyConfig::decode(&ours).unwrap(), pair.config());

    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let next = KeyPair::generate(2, &mut rng);
    let body = encode_key_configs(&[next.config(), pair.config()]);
    assert_eq!(body.len(), 2 * (2 + 41));
    assert_eq!(
        decode_key_configs(&body).unwrap(),
        [next.config(), pair.config()]
    );
}

#[test]
fn key_configurations_of_other_suites_are_skipped_and_bad_ones_refused() {
    let pair = KeyPair::generate(7, &mut ChaCha20Rng::seed_from_u64(2));
    let ours = pair.config().encode();
    // The same key offered with AES-128-GCM only, and a P-256 configuration (KEM 0x0010).
    let mut aes_only = ours.clone();
    aes_only[37..].copy_from_slice(&[0, 1, 0, 1]);
    let p256 = [vec![9, 0x00, 0x10], vec![4; 65], vec![0, 4, 0, 1, 0, 1]].concat();
    let entry = |config: &[u8]| {
        let mut bytes = u16::try_from(config.len()).unwrap().to_be_bytes().to_vec();
        bytes.extend_from_slice(config);
        bytes
    };
    let listed = [entry(&aes_only), entry(&p256), entry(&ours)].concat();
    assert_eq!(decode_key_configs(&listed).unwrap(), [pair.config()]);
    assert_eq!(
        decode_key_configs(&[entry(&aes_only), entry(&p256)].concat()),
        Err(KeyConfigError::NoSupportedSuite)
    );
    assert_eq!(
        KeyConfig::decode(&aes_only),
        Err(KeyConfigError::NoSupportedSuite)
    );
    assert_eq!(
        decode_key_configs(&[]),
        Err(KeyConfigError::NoSupportedSuite)
    );
    let body = entry(&ours);
    for cut in [1, 2, 10, body.len() - 1] {
        assert_eq!(
            decode_key_configs(&body[..cut]),
            Err(KeyConfigError::Truncated),
            "cut at {cut}"
        );
    }
    assert_eq!(
        KeyConfig::decode(&[ours.as_slice(), &[0]].concat()),
        Err(KeyConfigError::Truncated)
    );
}

#[test]
fn a_sealed_message_opens_only_under_its_own_binding() {
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let pair = KeyPair::generate(1, &mut rng);
    let keyring = Keyring::new(vec![pair.clone()]);
    let round = query("t-1", "r-1", 1);
    let sealed = seal(
        &pair.config(),
        &Binding::of(&round),
        "secret item",
        &mut rng,
    );
    assert!(sealed.len() <= max_sealed_len(round.max_report_bytes));
    assert!(!sealed.contains('=') && !sealed.contains('+') && !sealed.contains('/'));
    let opened = keyring.open(&Binding::of(&round), &sealed).unwrap();
    assert_eq!(opened.message, "secret item");

    // Moved to another round, task or attempt, or sealed for a query the relay altered.
    let mut altered = round.clone();
    altered.ask = Ask::Item { sampling_rate: 0.5 };
    for other in [
        query("t-1", "r-2", 1),
        query("t-2", "r-1", 1),
        query("t-1", "r-1", 2),
        altered,
    ] {
        assert_eq!(
            keyring.open(&Binding::of(&other), &sealed),
            Err(OpenError::NotOpened),
            "{other:?}"
        );
    }
    // Altered in flight.
    let mut bytes = URL_SAFE_NO_PAD.decode(&sealed).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    assert_eq!(
        keyring.open(&Binding::of(&round), &URL_SAFE_NO_PAD.encode(&bytes)),
        Err(OpenError::NotOpened)
    );
    // Sealed to another key (a relay's own), to a key id the aggregator does not hold, or not
    // a sealed message at all.
    let relays = KeyPair::generate(1, &mut rng);
    let to_relay = seal(
        &relays.config(),
        &Binding::of(&round),
        "secret item",
        &mut rng,
    );
    assert_eq!(
        keyring.open(&Binding::of(&round), &to_relay),
        Err(OpenError::NotOpened)
    );
    let retired = KeyPair::generate(9, &mut rng);
    let to_retired = seal(&retired.config(), &Binding::of(&round), "x", &mut rng);
    assert_eq!(
        keyring.open(&Binding::of(&round), &to_retired),
        Err(OpenError::UnknownKey(9))
    );
    for junk in ["", "!!", "AAAA", &sealed[..40]] {
        assert_eq!(
            keyring.open(&Binding::of(&round), junk),
            Err(OpenError::Malformed),
            "{junk:?}"
        );
    }
}

#[test]
fn every_message_gets_its_own_report_id_and_a_replay_keeps_it() {
    let mut rng = ChaCha20Rng::seed_from_u64(4);
    let pair = KeyPair::generate(1, &mut rng);
    let keyring = Keyring::new(vec![pair.clone()]);
    let binding = Binding::of(&query("t", "r", 1));
    let ids: std::collections::HashSet<[u8; REPORT_ID_BYTES]> = (0..100)
        .map(|_| {
            let sealed = seal(&pair.config(), &binding, "same", &mut rng);
            keyring.open(&binding, &sealed).unwrap().report_id
        })
        .collect();
    assert_eq!(ids.len(), 100);
    let resealed = seal_with_report_id(&pair.config(), &binding, [5; 16], "again", &mut rng);
    assert_eq!(
        keyring.open(&binding, &resealed).unwrap().report_id,
        [5; 16]
    );
}

#[test]
fn keys_survive_storage_and_old_keys_still_open() {
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    let old = KeyPair::generate(1, &mut rng);
    let current = KeyPair::generate(2, &mut rng);
    let stored = KeyPair::from_secret_bytes(1, &old.secret_bytes()).unwrap();
    assert_eq!(stored.config(), old.config());
    assert_eq!(
        KeyPair::from_secret_bytes(1, &[0; 31]).unwrap_err(),
        BadSecretKey(31)
    );
    let keyring = Keyring::new(vec![current.clone(), stored]);
    assert_eq!(keyring.configs(), [current.config(), old.config()]);
    let binding = Binding::of(&query("t", "r", 1));
    let sealed = seal(&old.config(), &binding, "before the rotation", &mut rng);
    assert_eq!(
        keyring.open(&binding, &sealed).unwrap().message,
        "before the rotation"
    );
    assert!(!format!("{current:?}").contains(&format!("{:?}", current.secret_bytes())));
}

#[test]
fn the_bound_on_sealed_lengths_is_exact() {
    let mut rng = ChaCha20Rng::seed_from_u64(6);
    let pair = KeyPair::generate(1, &mut rng);
    let binding = Binding::of(&query("t", "r", 1));
    for length in [0, 1, 2, 3, 31, 32, 33, 256] {
        let sealed = seal(&pair.config(), &binding, &"x".repeat(length), &mut rng);
        assert_eq!(
            sealed.len(),
            max_sealed_len(u32::try_from(length).unwrap()),
            "{length}"
        );
    }
}
