//! The `tally` command. Its commands are the binary's (`src/main.rs`); this library names the
//! commands of the federated runtime, which the `federated` feature adds: a build without it
//! refuses them with the way to build them, and the tests tell them apart.
#![forbid(unsafe_code)]

/// The commands of the federated runtime (the `federated` feature), by name.
pub const FEDERATED_COMMANDS: [&str; 11] = [
    "serve",
    "relay",
    "task",
    "ledger",
    "client",
    "fleet",
    "token",
    "population",
    "device",
    "cert",
    "hpke-key",
];
