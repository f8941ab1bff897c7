//! `tally cert`: a self-signed certificate and key for `tally serve --tls-cert --tls-key`,
//! for a demo or a test (clients trust it with `--ca-cert`).

use anyhow::{Context, Result};

use crate::cli::CertArgs;
use crate::output::write_owner_only;

/// `tally cert`.
pub(crate) fn run(args: &CertArgs) -> Result<()> {
    let made = rcgen::generate_simple_self_signed(args.names.clone())
        .context("cannot make the certificate")?;
    std::fs::write(&args.cert, made.cert.pem())
        .with_context(|| format!("cannot write {}", args.cert.display()))?;
    // The key is readable by its owner only.
    write_owner_only(&args.key, made.signing_key.serialize_pem().as_bytes())
        .with_context(|| format!("cannot write {}", args.key.display()))?;
    eprintln!(
        "self-signed certificate for {} in {} (key in {}); clients trust it with --ca-cert {}",
        args.names.join(", "),
        args.cert.display(),
        args.key.display(),
        args.cert.display()
    );
    Ok(())
}
