//! `atelier admin migrate-data`: moving an embedded installation (`{data_dir}/atelier.db`
//! and `{data_dir}/objects`) to PostgreSQL and object storage. The configuration's database
//! and storage (what `atelier serve` with the same settings would use) are the target.
//!
//! Order: every check that can refuse comes first (source present, target PostgreSQL,
//! target empty, storage answering), so a refusal writes nothing; then the objects, which
//! are immutable and copied idempotently; then the database, in one transaction that is
//! verified before it commits. A failure after the objects were copied leaves them in the
//! target and the database untouched: running the command again finishes the job.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context};
use atelier_blob::{BlobStore, Location};
use atelier_store::{PgStore, SqliteStore, StoreConfig};

use crate::config::{redact_password, Config, DatabaseKind};

/// How long the target storage has to answer its first request. object_store retries an
/// unreachable endpoint for minutes; an operator waiting on a command should hear sooner.
const STORAGE_TIMEOUT: Duration = Duration::from_secs(10);

/// What was copied and verified.
#[derive(Debug)]
pub struct Migration {
    /// The source data directory.
    pub source: PathBuf,
    /// The target database URL, password hidden.
    pub database: String,
    /// The target storage: its URL, or the local directory.
    pub storage: String,
    /// The objects are already where the target configuration keeps them (the same local
    /// directory); nothing was copied, their listing was checked.
    pub objects_in_place: bool,
    pub objects: atelier_blob::CopyReport,
    pub tables: atelier_store::CopyReport,
}

/// Copies the embedded installation in `from` to the database and storage `config` names.
pub async fn migrate_data(config: &Config, from: &Path) -> anyhow::Result<Migration> {
    if !from.is_dir() {
        bail!("no embedded installation at {}: the directory does not exist", from.display());
    }
    let db_path = from.join("atelier.db");
    if !db_path.is_file() {
        bail!("no embedded installation at {}: {} does not exist", from.display(), db_path.display());
    }
    let url = match config.database().map_err(anyhow::Error::msg)? {
        DatabaseKind::Postgres(url) => url,
        DatabaseKind::Sqlite(path) => bail!(
            "the target database is SQLite ({}), not PostgreSQL: migrate-data copies to PostgreSQL; \
             name it with --database-url postgres://… (or ATELIER__DATABASE__URL, database.url)",
            path.display()
        ),
    };
    let database = redact_password(&url);
    let location = config.storage_location()?;
    let storage = match &location {
        Location::Local(dir) => dir.display().to_string(),
        Location::S3 { .. } => config.storage.url.clone(),
    };
    let store_config = StoreConfig {
        retention: config.retention(),
        max_attempts: config.worker.max_attempts,
        ..StoreConfig::default()
    };

    let target = PgStore::connect(&url, store_config.clone())
        .await
        .with_context(|| format!("connecting to the target database {database}"))?;
    atelier_store::check_target_empty(&target).await?;
    let target_blob = crate::open_blob(config)?;
    match tokio::time::timeout(STORAGE_TIMEOUT, target_blob.ping()).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => bail!("the target storage {storage} is unreachable: {}", blob_detail(&e)),
        Err(_) => bail!(
            "the target storage {storage} is unreachable: no answer within {} s",
            STORAGE_TIMEOUT.as_secs()
        ),
    }

    let source = SqliteStore::open(&db_path, store_config)
        .await
        .with_context(|| format!("opening the source database {}", db_path.display()))?;
    let objects_dir = from.join("objects");
    let in_place = match &location {
        Location::Local(dir) => same_dir(dir, &objects_dir),
        Location::S3 { .. } => false,
    };
    let objects = if in_place {
        let listed = target_blob.list(None).await.map_err(|e| {
            anyhow::anyhow!("listing the objects in {}: {}", objects_dir.display(), blob_detail(&e))
        })?;
        atelier_blob::CopyReport {
            objects: listed.len() as u64,
            bytes: listed.iter().map(|o| o.size).sum(),
            copied: 0,
            already_present: listed.len() as u64,
        }
    } else if objects_dir.is_dir() {
        let source_blob = BlobStore::local(&objects_dir, &config.public_url())
            .map_err(|e| anyhow::anyhow!("opening {}: {}", objects_dir.display(), blob_detail(&e)))?;
        atelier_blob::copy_objects(&source_blob, &target_blob).await.map_err(|e| match e.detail() {
            Some(detail) => anyhow::anyhow!("copying objects: {e} ({detail})"),
            None => anyhow::anyhow!("copying objects: {e}"),
        })?
    } else {
        // An installation that never produced an output has no objects directory.
        atelier_blob::CopyReport::default()
    };

    let tables = atelier_store::copy_to_postgres(&source, &target).await.context("copying the database")?;
    Ok(Migration {
        source: from.to_path_buf(),
        database,
        storage,
        objects_in_place: in_place,
        objects,
        tables,
    })
}

/// A blob error with its backend detail: this is an operator's command, not an HTTP answer.
fn blob_detail(e: &atelier_blob::BlobError) -> String {
    match e {
        atelier_blob::BlobError::Backend(detail) => detail.clone(),
        other => other.to_string(),
    }
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

impl Migration {
    /// The machine-readable summary (`--json`).
    pub fn to_json(&self) -> serde_json::Value {
        let tables: serde_json::Map<String, serde_json::Value> =
            self.tables.tables.iter().map(|t| (t.table.clone(), t.rows.into())).collect();
        let sum =
            |f: fn(&atelier_store::AccountTotals) -> i64| self.tables.accounts.iter().map(f).sum::<i64>();
        serde_json::json!({
            "source": self.source,
            "database": self.database,
            "storage": self.storage,
            "tables": tables,
            "accounts": self.tables.accounts,
            "ledger": {
                "balance": sum(|a| a.balance),
                "granted": sum(|a| a.granted),
                "reserved": sum(|a| a.reserved),
                "charged": sum(|a| a.charged),
                "released": sum(|a| a.released),
                "entries": sum(|a| a.entries),
            },
            "requeued_tasks": self.tables.requeued_tasks,
            "replaced_templates": self.tables.replaced_templates,
            "objects": {
                "count": self.objects.objects,
                "bytes": self.objects.bytes,
                "copied": self.objects.copied,
                "already_present": self.objects.already_present,
                "in_place": self.objects_in_place,
            },
            "verified": true,
        })
    }

    /// The summary for people.
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "Copied the embedded installation in {} to {} and {}.\n\nDatabase (row counts verified):\n",
            self.source.display(),
            self.database,
            self.storage
        );
        for t in &self.tables.tables {
            out.push_str(&format!("  {:<12} {:>8}\n", t.table, t.rows));
        }
        if self.tables.requeued_tasks > 0 {
            out.push_str(&format!(
                "  {} running task(s) handed back to the queue (the attempt is not counted)\n",
                self.tables.requeued_tasks
            ));
        }
        out.push_str("\nAccounts (balances and ledger sums verified):\n");
        for a in &self.tables.accounts {
            out.push_str(&format!(
                "  {:<16} balance {:>8}  granted {:>8}  reserved {:>8}  charged {:>8}  released {:>8}\n",
                a.name, a.balance, a.granted, a.reserved, a.charged, a.released
            ));
        }
        let o = &self.objects;
        if self.objects_in_place {
            out.push_str(&format!(
                "\nObjects: {} ({} bytes) stay where they are ({}).\n",
                o.objects, o.bytes, self.storage
            ));
        } else {
            out.push_str(&format!(
                "\nObjects (count and every size verified): {} ({} bytes); {} copied, {} already there.\n",
                o.objects, o.bytes, o.copied, o.already_present
            ));
        }
        out
    }
}
