//! The examples at the end of each command's `--help`.
//!
//! Every line that starts with `tally ` after the two-space indent is a command that runs as
//! written from the repository's root (the offline ones on the shipped `data/`), one per line;
//! a line starting with `#` says what the next one does. `tests/help_examples.rs` runs the
//! offline ones, and a unit test of `cli` parses all of them.

/// `tally plan sample-threshold`.
pub(crate) const PLAN_SAMPLE_THRESHOLD: &str = "\
Examples:
  # The sampling rate and threshold that meet (ε, δ) = (1, 1e-8)
  tally plan sample-threshold --epsilon 1 --delta 1e-8
  # The δ of a given sampling rate and threshold at ε = 1
  tally plan sample-threshold --epsilon 1 --sampling-rate 0.1 --threshold 20
  # An HTML report in out/plan, predicting the release on the shipped Shakespeare data
  tally plan sample-threshold --epsilon 1 --delta 1e-8 --report out/plan --dataset shakespeare";

/// `tally plan shuffle`.
pub(crate) const PLAN_SHUFFLE: &str = "\
Examples:
  # The central ε of 100,000 users' shuffled reports, each ε₀ = 4 locally private
  tally plan shuffle --local-epsilon 4 --users 100000 --delta 1e-8
  # The largest local ε₀ that gives a central ε of 1
  tally plan shuffle --epsilon 1 --users 100000 --delta 1e-8";

/// `tally plan compose`.
pub(crate) const PLAN_COMPOSE: &str = "\
Examples:
  # Ten (0.1, 1e-10)-DP rounds, composed optimally, at a total δ of 1e-8
  tally plan compose --epsilon 0.1 --delta 1e-10 --rounds 10 --target-delta 1e-8
  # The same rounds by basic composition
  tally plan compose --epsilon 0.1 --delta 1e-10 --rounds 10 --method basic";

/// `tally plan triehh++`.
pub(crate) const PLAN_TRIEHH_PLUS: &str = "\
Examples:
  # The per-level sampling rate and threshold of a 10-level TrieHH++ run at (1, 1e-8)
  tally plan triehh++ --epsilon 1 --delta 1e-8 --levels 10";

/// `tally plan histogram`.
pub(crate) const PLAN_HISTOGRAM: &str = "\
Examples:
  # Laplace noise over a public domain of 1,024 elements: its calibration and error
  tally plan histogram --mechanism laplace --domain 1024 --clients 100000 --epsilon 1 --delta 1e-8
  # Choose the mechanism and the items per client for a (generated) population
  tally plan histogram --synthetic zipf:n=100000,domain=1000,s=1.1 --epsilon 1 --delta 1e-8";

/// `tally plan quantiles`.
pub(crate) const PLAN_QUANTILES: &str = "\
Examples:
  # The rounds of a 10-level hierarchical histogram of branching 4 at (1, 1e-8)
  tally plan quantiles --epsilon 1 --delta 1e-8 --levels 10 --branching 4
  # Binary searches for the quartiles instead
  tally plan quantiles --algorithm binary-search --quantiles 0.25,0.5,0.75 --epsilon 1 --delta 1e-8";

/// `tally histogram`.
pub(crate) const HISTOGRAM: &str = "\
Examples:
  # The commonest words of Shakespeare's plays; a client is one spoken word
  tally histogram --dataset shakespeare --epsilon 1 --delta 1e-8 --seed 1 --top 10
  # A client is a speaker, who contributes up to 128 of their distinct words
  tally histogram --input data/shakespeare/shakespeare_speakers.tsv.gz --max-items-per-client 128 --epsilon 1 --delta 1e-8 --seed 1 --top 10
  # Laplace thresholding instead of sampling: noisy counts, nobody sampled
  tally histogram --dataset shakespeare --mechanism laplace-threshold --epsilon 1 --delta 1e-8 --seed 1 --top 10";

/// `tally heavy-hitters`.
pub(crate) const HEAVY_HITTERS: &str = "\
Examples:
  # TrieHH++ over the words of Shakespeare's plays; a client is one spoken word
  tally heavy-hitters --dataset shakespeare --algorithm triehh++ --epsilon 1 --delta 1e-8 --seed 1 --top 10
  # One sample-and-threshold round over whole words
  tally heavy-hitters --dataset shakespeare --algorithm single-round --epsilon 1 --delta 1e-8 --seed 1 --top 20";

/// `tally quantiles` (the numbers: the frequencies, in centibels, of the 10,000 commonest
/// English words, one client each).
pub(crate) const QUANTILES: &str = "\
Examples:
  # The 0.1, 0.5 and 0.9 quantiles of the 10,000 commonest English words' frequencies (bash)
  tally quantiles --input <(tail -n +2 data/wordfreq/wordfreq_en_top10000.tsv | cut -f3) --min 0 --max 1000 --levels 5 --epsilon 1 --delta 1e-8 --seed 1
  # The same by binary searches
  tally quantiles --input <(tail -n +2 data/wordfreq/wordfreq_en_top10000.tsv | cut -f3) --min 0 --max 1000 --levels 5 --method binary-search --epsilon 1 --delta 1e-8 --seed 1";

/// `tally range`.
pub(crate) const RANGE: &str = "\
Examples:
  # How many of the 10,000 commonest English words have a frequency in [400, 500) centibels (bash)
  tally range --input <(tail -n +2 data/wordfreq/wordfreq_en_top10000.tsv | cut -f3) --min 0 --max 1000 --lo 400 --hi 500 --levels 5 --epsilon 1 --delta 1e-8 --seed 1";

/// `tally bench sample-threshold`.
pub(crate) const BENCH_SAMPLE_THRESHOLD: &str = "\
Examples:
  # Three timed runs over 100,000 generated clients
  tally bench sample-threshold --clients 100000 --repeats 3";

/// `tally bench triehh`.
pub(crate) const BENCH_TRIEHH: &str = "\
Examples:
  # Three timed TrieHH runs over 100,000 generated clients
  tally bench triehh --clients 100000 --repeats 3";

/// `tally bench mechanism`.
pub(crate) const BENCH_MECHANISM: &str = "\
Examples:
  # Three timed runs of the Laplace histogram over a domain of 1,024 elements
  tally bench mechanism --mechanism laplace --clients 100000 --domain 1024 --repeats 3";

/// `tally bench st-composition`.
pub(crate) const BENCH_ST_COMPOSITION: &str = "\
Examples:
  # Three timed compositions of 10 S&T rounds
  tally bench st-composition --repeats 3";

/// `tally repro sample-threshold`.
pub(crate) const REPRO_SAMPLE_THRESHOLD: &str = "\
Examples:
  # A reduced grid for a quick check; drop --quick for the paper's whole grid
  tally repro sample-threshold --quick --out out/sample-threshold";

/// `tally repro opt-prefix-tree`.
pub(crate) const REPRO_OPT_PREFIX_TREE: &str = "\
Examples:
  # A reduced grid for a quick check; drop --quick for the whole grid
  tally repro opt-prefix-tree --quick --out out/opt-prefix-tree";

/// `tally serve`.
#[cfg(feature = "federated")]
pub(crate) const SERVE: &str = "\
Examples:
  # A server on loopback, its database in the working directory
  tally serve --listen 127.0.0.1:8080 --db sqlite://tally.db
  # Over TLS, with a certificate made by `tally cert`
  tally serve --listen 127.0.0.1:8443 --tls-cert aggregator.pem --tls-key aggregator.key";

/// `tally relay`.
#[cfg(feature = "federated")]
pub(crate) const RELAY: &str = "\
Examples:
  # A relay over TLS in front of the aggregator, with its credential there in relay.token
  TALLY_AGGREGATOR_TOKEN=$(cat relay.token) tally relay --listen 127.0.0.1:8444 --db sqlite://relay.db --tls-cert relay.pem --tls-key relay.key --aggregator https://127.0.0.1:8443 --aggregator-ca-cert aggregator.pem";

/// `tally task create`.
#[cfg(feature = "federated")]
pub(crate) const TASK_CREATE: &str = "\
Examples:
  # TrieHH++ heavy hitters over the shakespeare population (an analyst's TALLY_TOKEN)
  tally task create --server https://127.0.0.1:8443 --ca-cert aggregator.pem --algorithm triehh++ --dataset shakespeare --epsilon 1 --delta 1e-8
  # A sample-and-threshold histogram over a population of 100,000 devices
  tally task create --server https://127.0.0.1:8443 --ca-cert aggregator.pem --mechanism sample-threshold --population phones --expected-population 100000 --epsilon 1 --delta 1e-8
  # Any kind the server runs, as the JSON of a spec's kind; here triehh.json holds
  # {\"type\": \"triehh\", \"levels\": 8, \"segment\": 1}
  tally task create --server https://127.0.0.1:8443 --ca-cert aggregator.pem --kind-json triehh.json --dataset shakespeare --epsilon 1 --delta 1e-8 --neighbours replace-one
  # Print only the new task's id, to keep it: TASK_ID=$(tally task create ... --id-only)
  tally task create --server https://127.0.0.1:8443 --ca-cert aggregator.pem --algorithm triehh++ --dataset shakespeare --epsilon 1 --delta 1e-8 --id-only";

/// `tally task list`.
#[cfg(feature = "federated")]
pub(crate) const TASK_LIST: &str = "\
Examples:
  tally task list --server https://127.0.0.1:8443 --ca-cert aggregator.pem";

/// `tally task status`.
#[cfg(feature = "federated")]
pub(crate) const TASK_STATUS: &str = "\
Examples:
  tally task status --server https://127.0.0.1:8443 --ca-cert aggregator.pem TASK_ID";

/// `tally task result`.
#[cfg(feature = "federated")]
pub(crate) const TASK_RESULT: &str = "\
Examples:
  # The release's 10 first items, then the whole document as JSON
  tally task result --server https://127.0.0.1:8443 --ca-cert aggregator.pem TASK_ID --top 10
  tally task result --server https://127.0.0.1:8443 --ca-cert aggregator.pem TASK_ID --json";

/// `tally task cancel`.
#[cfg(feature = "federated")]
pub(crate) const TASK_CANCEL: &str = "\
Examples:
  tally task cancel --server https://127.0.0.1:8443 --ca-cert aggregator.pem TASK_ID";

/// `tally ledger`.
#[cfg(feature = "federated")]
pub(crate) const LEDGER: &str = "\
Examples:
  tally ledger --server https://127.0.0.1:8443 --ca-cert aggregator.pem";

/// `tally client`.
#[cfg(feature = "federated")]
pub(crate) const CLIENT: &str = "\
Examples:
  # One device, with its credential from `tally device enroll`, holding the word in word.txt
  tally client --server https://127.0.0.1:8443 --ca-cert aggregator.pem --credentials device.txt --input word.txt";

/// `tally fleet`.
#[cfg(feature = "federated")]
pub(crate) const FLEET: &str = "\
Examples:
  # The shakespeare population's devices, relayed by an operator's TALLY_TOKEN
  tally fleet --server https://127.0.0.1:8443 --ca-cert aggregator.pem --dataset shakespeare
  # Split trust: through the relay, each report sealed to the aggregator's key
  tally fleet --server https://127.0.0.1:8444 --ca-cert relay.pem --aggregator https://127.0.0.1:8443 --aggregator-ca-cert aggregator.pem --dataset shakespeare";

/// `tally token create`.
#[cfg(feature = "federated")]
pub(crate) const TOKEN_CREATE: &str = "\
Examples:
  # The first operator, in the server's database
  tally token create --db sqlite://tally.db --role operator --name ops
  # An analyst of the shakespeare population
  tally token create --db sqlite://tally.db --role analyst --population shakespeare --name alice";

/// `tally token list`.
#[cfg(feature = "federated")]
pub(crate) const TOKEN_LIST: &str = "\
Examples:
  tally token list --db sqlite://tally.db";

/// `tally token revoke`.
#[cfg(feature = "federated")]
pub(crate) const TOKEN_REVOKE: &str = "\
Examples:
  tally token revoke --db sqlite://tally.db 0123456789abcdef";

/// `tally population create`.
#[cfg(feature = "federated")]
pub(crate) const POPULATION_CREATE: &str = "\
Examples:
  # A population of budget (10, 1e-5) whose tasks need at least 100 devices per round
  tally population create --db sqlite://tally.db shakespeare --budget-epsilon 10 --budget-delta 1e-5 --min-cohort 100
  # Its reports go through a relay run by another party
  tally population create --db sqlite://tally.db phones --budget-epsilon 10 --budget-delta 1e-5 --trust split
  # A budget kept under replace-one neighbours, which the shuffle and local tasks need
  tally population create --db sqlite://tally.db shuffled --budget-epsilon 10 --budget-delta 1e-5 --neighbours replace-one";

/// `tally population list`.
#[cfg(feature = "federated")]
pub(crate) const POPULATION_LIST: &str = "\
Examples:
  tally population list --db sqlite://tally.db";

/// `tally device enroll`.
#[cfg(feature = "federated")]
pub(crate) const DEVICE_ENROLL: &str = "\
Examples:
  # 1,000 devices of the shakespeare population, their credentials in devices.txt
  tally device enroll --db sqlite://tally.db --population shakespeare --count 1000 --out devices.txt";

/// `tally cert`.
#[cfg(feature = "federated")]
pub(crate) const CERT: &str = "\
Examples:
  # A self-signed certificate for 127.0.0.1 and localhost
  tally cert --cert aggregator.pem --key aggregator.key";

/// `tally hpke-key rotate`.
#[cfg(feature = "federated")]
pub(crate) const HPKE_KEY_ROTATE: &str = "\
Examples:
  tally hpke-key rotate --db sqlite://tally.db";

/// `tally sampling-key`.
pub(crate) const SAMPLING_KEY: &str = "\
Examples:
  # A fresh key in key.txt (never over an existing file), for --sampling-key-file key.txt
  tally sampling-key --output key.txt";
