//! Whether the storage tests have a PostgreSQL server to run on: `cfg(tally_postgres)` when
//! `TALLY_TEST_POSTGRES_URL` names one (`source .ci/postgres.sh`) or `TALLY_REQUIRE_POSTGRES=1`
//! (then a missing server fails those tests instead of leaving them ignored).

fn main() {
    println!("cargo::rustc-check-cfg=cfg(tally_postgres)");
    println!("cargo::rerun-if-env-changed=TALLY_TEST_POSTGRES_URL");
    println!("cargo::rerun-if-env-changed=TALLY_REQUIRE_POSTGRES");
    if std::env::var_os("TALLY_TEST_POSTGRES_URL").is_some()
        || std::env::var("TALLY_REQUIRE_POSTGRES").as_deref() == Ok("1")
    {
        println!("cargo::rustc-cfg=tally_postgres");
    }
}
