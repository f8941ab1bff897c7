//! Whether the tests have the components some of them need, as `cfg`s they are ignored
//! without: `tally_postgres` when `TALLY_TEST_POSTGRES_URL` names a PostgreSQL server (`source
//! .ci/postgres.sh`), `tally_browser` when `/usr/bin/chromium` and `/usr/bin/chromedriver` are
//! there (`source .ci/browser.sh`). `TALLY_REQUIRE_POSTGRES=1` and `TALLY_REQUIRE_BROWSER=1`
//! set them too, so that a missing component fails those tests instead.

use std::path::Path;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(tally_postgres)");
    println!("cargo::rustc-check-cfg=cfg(tally_browser)");
    println!("cargo::rerun-if-env-changed=TALLY_TEST_POSTGRES_URL");
    println!("cargo::rerun-if-env-changed=TALLY_REQUIRE_POSTGRES");
    println!("cargo::rerun-if-env-changed=TALLY_REQUIRE_BROWSER");
    // A directory: Cargo reruns this when anything in it changes (a missing file would rerun
    // it, and rebuild the crate, on every build).
    println!("cargo::rerun-if-changed=/usr/bin");
    let required = |variable: &str| std::env::var(variable).as_deref() == Ok("1");
    if std::env::var_os("TALLY_TEST_POSTGRES_URL").is_some() || required("TALLY_REQUIRE_POSTGRES") {
        println!("cargo::rustc-cfg=tally_postgres");
    }
    let browser = ["/usr/bin/chromium", "/usr/bin/chromedriver"]
        .iter()
        .all(|program| Path::new(program).exists());
    if browser || required("TALLY_REQUIRE_BROWSER") {
        println!("cargo::rustc-cfg=tally_browser");
    }
}
