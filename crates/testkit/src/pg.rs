//! A fresh PostgreSQL schema for one test, dropped with it (also when the test panics).
//!
//! The database is `ATELIER_TEST_DATABASE_URL` (default
//! `postgres://postgres@127.0.0.1:5432/test`, trust authentication); `psql` creates and drops
//! the schema. When PostgreSQL is unusable, [`PgSchema::create`] says why and returns `None`,
//! unless `ATELIER_REQUIRE_POSTGRES=1` (CI), where that is a panic.

use std::process::Command;
use std::str::FromStr;

use atelier_store::PgConnectOptions;
use rand::Rng;

pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// `ATELIER_TEST_DATABASE_URL`, or the default.
pub fn database_url() -> String {
    std::env::var("ATELIER_TEST_DATABASE_URL").unwrap_or_else(|_| DEFAULT_DATABASE_URL.to_string())
}

pub struct PgSchema {
    pub name: String,
    /// The database without the schema option (for psql and `DROP SCHEMA`).
    pub admin_url: String,
    /// The database URL that selects the schema (`?options=-c search_path=…`).
    pub url: String,
}

impl PgSchema {
    pub fn create() -> Option<PgSchema> {
        let admin_url = database_url();
        let name = format!("t_{:016x}", rand::thread_rng().gen::<u64>());
        let created = Command::new("psql")
            .args([admin_url.as_str(), "-v", "ON_ERROR_STOP=1", "-qc", &format!("CREATE SCHEMA {name}")])
            .output();
        match created {
            Ok(out) if out.status.success() => {}
            other => {
                let why = format!("PostgreSQL at {admin_url} is not usable: {other:?}");
                assert!(std::env::var("ATELIER_REQUIRE_POSTGRES").as_deref() != Ok("1"), "{why}");
                eprintln!("skipped: {why}");
                return None;
            }
        }
        let sep = if admin_url.contains('?') { '&' } else { '?' };
        let url = format!("{admin_url}{sep}options=-c%20search_path%3D{name}");
        Some(PgSchema { name, admin_url, url })
    }

    /// Connection options whose `search_path` is this schema.
    pub fn options(&self) -> PgConnectOptions {
        PgConnectOptions::from_str(&self.admin_url)
            .unwrap_or_else(|e| panic!("{}: {e}", self.admin_url))
            .options([("search_path", self.name.as_str())])
    }
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        let sql = format!("SET lock_timeout = '10s'; DROP SCHEMA {} CASCADE", self.name);
        let _ = Command::new("psql").args([self.admin_url.as_str(), "-qc", &sql]).output();
    }
}
