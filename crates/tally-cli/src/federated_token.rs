//! `tally token`, `tally population` and `tally hpke-key`: the federated server's
//! credentials, populations and keys, in its database or through a running server.

use std::io::{self, Write};
use std::time::Duration;

use anyhow::{Context, Result};
use tally_client::Client;
use tally_messages::{
    Budget, CredentialInfo, CredentialSpec, IssuedCredential, PROTOCOL_VERSION, PopulationInfo,
    PopulationSpec, TaskBound,
};

use crate::cli::{
    DeviceCommand, DeviceEnrollArgs, HpkeKeyCommand, PopulationCommand, PopulationCreateArgs,
    ProvisionArgs, TokenCommand, TokenCreateArgs, TokenListArgs, TokenRevokeArgs,
};
use crate::federated::{connect, runtime};
use crate::output::{open_owner_only, print_serialized};

/// `tally token ...`.
pub(crate) fn run(command: &TokenCommand) -> Result<()> {
    match command {
        TokenCommand::Create(args) => create(args),
        TokenCommand::List(args) => list(args),
        TokenCommand::Revoke(args) => revoke(args),
    }
}

/// Where the credentials are: the database, or a server with an operator's credential.
enum Keeper {
    Database(String),
    Server(Client),
}

impl Keeper {
    fn of(args: &ProvisionArgs) -> Result<Self> {
        match (&args.db, &args.server) {
            (Some(db), _) => Ok(Self::Database(db.clone())),
            (None, Some(server)) => Ok(Self::Server(connect(
                server,
                args.ca_cert.as_deref(),
                args.token.as_deref(),
            )?)),
            // Unwrap safety: clap requires --db unless --server is given.
            (None, None) => unreachable!("clap requires --db or --server"),
        }
    }
}

fn create(args: &TokenCreateArgs) -> Result<()> {
    let spec = CredentialSpec {
        version: PROTOCOL_VERSION,
        role: args.role.into(),
        name: args.name.clone(),
        populations: args.populations.clone(),
    };
    let issued: IssuedCredential = match Keeper::of(&args.store)? {
        Keeper::Database(db) => runtime()?
            .block_on(tally_server::create_credential(&db, &spec))
            .context("cannot create the credential")?,
        Keeper::Server(client) => runtime()?.block_on(client.create_credential(&spec))?,
    };
    if args.json {
        return print_serialized(&issued);
    }
    // The token alone on stdout, for `TOKEN=$(tally token create ...)`; the rest on stderr.
    writeln!(io::stdout().lock(), "{}", issued.token)?;
    let credential = &issued.credential;
    eprintln!(
        "created {} credential {} ({}); its token is shown this once: keep it secret",
        credential.role.name(),
        credential.id,
        describe(credential)
    );
    Ok(())
}

fn list(args: &TokenListArgs) -> Result<()> {
    let credentials: Vec<CredentialInfo> = match Keeper::of(&args.store)? {
        Keeper::Database(db) => runtime()?
            .block_on(tally_server::credentials(&db))
            .context("cannot read the credentials")?,
        Keeper::Server(client) => runtime()?.block_on(client.credentials())?,
    };
    if args.json {
        return print_serialized(&credentials);
    }
    let mut out = io::stdout().lock();
    writeln!(
        out,
        "{:<16}  {:<8}  {:<7}  name (populations)",
        "id", "role", "state"
    )?;
    for credential in &credentials {
        writeln!(
            out,
            "{:<16}  {:<8}  {:<7}  {}",
            credential.id,
            credential.role.name(),
            if credential.revoked {
                "revoked"
            } else {
                "live"
            },
            describe(credential)
        )?;
    }
    Ok(())
}

fn revoke(args: &TokenRevokeArgs) -> Result<()> {
    let credential = match Keeper::of(&args.store)? {
        Keeper::Database(db) => runtime()?
            .block_on(tally_server::revoke_credential(&db, &args.id))
            .context("cannot revoke the credential")?,
        Keeper::Server(client) => runtime()?.block_on(client.revoke_credential(&args.id))?,
    };
    writeln!(
        io::stdout().lock(),
        "revoked {} credential {} ({})",
        credential.role.name(),
        credential.id,
        describe(&credential)
    )?;
    Ok(())
}

/// `tally device ...`.
pub(crate) fn run_device(command: &DeviceCommand) -> Result<()> {
    match command {
        DeviceCommand::Enroll(args) => enroll(args),
    }
}

/// The most devices one enrollment request makes (the server's limit).
const ENROLLMENT_CHUNK: u32 = 10_000;

fn enroll(args: &DeviceEnrollArgs) -> Result<()> {
    let keeper = Keeper::of(&args.store)?;
    let runtime = runtime()?;
    // The file first, so that no credential is made that could not be written.
    let file = open_owner_only(&args.out, true)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let mut out = io::BufWriter::new(file);
    let mut left = args.count;
    while left > 0 {
        let count = left.min(ENROLLMENT_CHUNK);
        let tokens = match &keeper {
            Keeper::Database(db) if args.relay => runtime
                .block_on(tally_relay::enroll_devices(db, &args.population, count))
                .context("cannot enroll the devices at the relay")?,
            Keeper::Database(db) => runtime
                .block_on(tally_server::enroll_devices(db, &args.population, count))
                .context("cannot enroll the devices")?,
            Keeper::Server(client) => {
                runtime
                    .block_on(client.enroll_devices(&args.population, count))?
                    .tokens
            }
        };
        for token in &tokens {
            writeln!(out, "{token}")?;
        }
        left -= count;
    }
    out.flush()?;
    eprintln!(
        "enrolled {} devices of population {}; their credentials are in {} (shown this \
         once: keep the file secret)",
        args.count,
        args.population,
        args.out.display()
    );
    Ok(())
}

/// `tally hpke-key ...`.
pub(crate) fn run_hpke_key(command: &HpkeKeyCommand) -> Result<()> {
    match command {
        HpkeKeyCommand::Rotate(args) => {
            let grace = args
                .grace_secs
                .map_or(tally_server::DEFAULT_KEY_GRACE, Duration::from_secs);
            let key_id = runtime()?
                .block_on(tally_server::rotate_hpke_key(&args.db, grace))
                .context("cannot rotate the HPKE key")?;
            writeln!(
                io::stdout().lock(),
                "key {key_id} is current; older keys open reports for {} s more",
                grace.as_secs()
            )?;
            Ok(())
        }
    }
}

/// `tally population ...`.
pub(crate) fn run_population(command: &PopulationCommand) -> Result<()> {
    match command {
        PopulationCommand::Create(args) => create_population(args),
        PopulationCommand::List(args) => list_populations(args),
    }
}

fn create_population(args: &PopulationCreateArgs) -> Result<()> {
    let spec = PopulationSpec {
        version: PROTOCOL_VERSION,
        name: args.name.clone(),
        budget: Budget {
            epsilon: args.budget_epsilon,
            delta: args.budget_delta,
        },
        min_cohort: args.min_cohort,
        max_task_epsilon: args.max_task_epsilon,
        trust: args.trust.into(),
        allow_device_sampling: args.allow_device_sampling,
        colluding_fraction: args.colluding_fraction,
        task_bound: args.task_bound_rate.zip(args.task_bound_threshold).map(
            |(sampling_rate, threshold)| TaskBound {
                sampling_rate,
                threshold,
                share: args
                    .task_bound_epsilon
                    .zip(args.task_bound_delta)
                    .map(|(epsilon, delta)| Budget { epsilon, delta }),
            },
        ),
        neighbours: args.neighbours.into(),
    };
    let created = match Keeper::of(&args.store)? {
        Keeper::Database(db) => runtime()?
            .block_on(tally_server::create_population(&db, &spec))
            .context("cannot create the population")?,
        Keeper::Server(client) => runtime()?.block_on(client.create_population(&spec))?,
    };
    if args.json {
        return print_serialized(&created);
    }
    writeln!(io::stdout().lock(), "created {}", population_line(&created))?;
    Ok(())
}

fn list_populations(args: &TokenListArgs) -> Result<()> {
    let populations: Vec<PopulationInfo> = match Keeper::of(&args.store)? {
        Keeper::Database(db) => runtime()?
            .block_on(tally_server::populations(&db))
            .context("cannot read the populations")?,
        Keeper::Server(client) => runtime()?.block_on(client.populations())?,
    };
    if args.json {
        return print_serialized(&populations);
    }
    let mut out = io::stdout().lock();
    for population in &populations {
        writeln!(out, "{}", population_line(population))?;
    }
    Ok(())
}

fn population_line(population: &PopulationInfo) -> String {
    let cap = population
        .max_task_epsilon
        .map_or_else(String::new, |cap| format!(", at most ε = {cap} per task"));
    format!(
        "population {}: budget (ε = {}, δ = {:e}) under {} neighbours, minimum cohort at least \
         {}{cap}, trust model {}, device-side sampling {}{}, {}",
        population.name,
        population.budget.epsilon,
        population.budget.delta,
        population.neighbours,
        population.min_cohort,
        population.trust.name(),
        if population.allow_device_sampling {
            "allowed"
        } else {
            "not allowed"
        },
        population.task_bound.map_or_else(
            || ", no declared pair (every task charged its own (ε, δ))".to_owned(),
            |bound| format!(
                ", declared pair p_s ≤ {}, τ ≥ {} covering {} rounds within (ε = {}, δ = {:e})",
                bound.sampling_rate,
                bound.threshold,
                bound.rounds,
                bound.share.epsilon,
                bound.share.delta
            )
        ),
        colluding_policy(population.colluding_fraction)
    )
}

/// A population's colluding fraction in words, as `population list` and `ledger` show it.
fn colluding_policy(colluding_fraction: f64) -> String {
    if colluding_fraction > 0.0 {
        format!(
            "shuffle tasks charged their guarantee against a fraction {colluding_fraction} of \
             devices colluding"
        )
    } else {
        "budget assumes honest devices (colluding fraction 0)".to_owned()
    }
}

/// A credential's name and populations, its name quoted so that no name forges a line.
fn describe(credential: &CredentialInfo) -> String {
    if credential.populations.is_empty() {
        format!("{:?}", credential.name)
    } else {
        format!(
            "{:?}, populations {}",
            credential.name,
            credential.populations.join(", ")
        )
    }
}
