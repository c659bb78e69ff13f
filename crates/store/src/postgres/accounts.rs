//! Accounts, API keys and the token ledger's grants (PostgreSQL).

use atelier_core::ids;
use sqlx::{Postgres, Row, Transaction};

use super::PgStore;
use crate::{now_micros, Account, KeyInfo, Result, StoreError};

impl PgStore {
    pub async fn create_account(&self, name: &str, tokens: i64) -> Result<(Account, String)> {
        if tokens < 0 {
            return Err(StoreError::Conflict("tokens must not be negative".into()));
        }
        let now = now_micros();
        let mut tx = self.begin().await?;
        // `ON CONFLICT DO NOTHING`: a concurrent creation of the same name
        // waits for the other to commit and then inserts nothing.
        let id: Option<i64> = sqlx::query_scalar(
            "INSERT INTO accounts (name, balance, created_at) VALUES ($1, $2, $3)
             ON CONFLICT (name) DO NOTHING RETURNING id",
        )
        .bind(name)
        .bind(tokens)
        .bind(now)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(id) = id else {
            return Err(StoreError::Conflict(format!("account '{name}' already exists")));
        };
        if tokens > 0 {
            sqlx::query(
                "INSERT INTO ledger (account_id, kind, amount, created_at) VALUES ($1, 'grant', $2, $3)",
            )
            .bind(id)
            .bind(tokens)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        }
        let key = insert_key(&mut tx, id, now).await?;
        tx.commit().await?;
        Ok((Account { id, name: name.to_string() }, key))
    }

    pub async fn account(&self, name: &str) -> Result<Account> {
        sqlx::query("SELECT id, name FROM accounts WHERE name = $1")
            .bind(name)
            .fetch_optional(&self.pool)
            .await?
            .map(|r| Account { id: r.get("id"), name: r.get("name") })
            .ok_or(StoreError::NotFound)
    }

    pub async fn account_count(&self) -> Result<i64> {
        Ok(sqlx::query_scalar("SELECT COUNT(*) FROM accounts").fetch_one(&self.pool).await?)
    }

    pub async fn create_key(&self, account: &str) -> Result<String> {
        let account = self.account(account).await?;
        let mut tx = self.begin().await?;
        let key = insert_key(&mut tx, account.id, now_micros()).await?;
        tx.commit().await?;
        Ok(key)
    }

    pub async fn revoke_key(&self, key_or_prefix: &str) -> Result<KeyInfo> {
        let mut tx = self.begin().await?;
        let digest = ids::key_digest(key_or_prefix);
        // Locked, so that of two concurrent revocations of one key the second
        // sees it revoked and answers `NotFound`, as it would on SQLite.
        let rows = sqlx::query(
            "SELECT k.id, k.prefix, a.name FROM api_keys k JOIN accounts a ON a.id = k.account_id
             WHERE k.revoked_at IS NULL AND (k.digest = $1 OR k.prefix = $2)
             FOR UPDATE OF k",
        )
        .bind(&digest[..])
        .bind(key_or_prefix)
        .fetch_all(&mut *tx)
        .await?;
        let row = match rows.as_slice() {
            [] => return Err(StoreError::NotFound),
            [one] => one,
            _ => {
                return Err(StoreError::Conflict(
                    "that prefix matches several keys; give the whole key".into(),
                ))
            }
        };
        let id: i64 = row.get("id");
        sqlx::query("UPDATE api_keys SET revoked_at = $1 WHERE id = $2")
            .bind(now_micros())
            .bind(id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(KeyInfo { prefix: row.get("prefix"), account: row.get("name"), revoked: true })
    }

    pub async fn authenticate(&self, key: &str) -> Result<Option<Account>> {
        let digest = ids::key_digest(key);
        Ok(sqlx::query(
            "SELECT a.id, a.name FROM api_keys k JOIN accounts a ON a.id = k.account_id
             WHERE k.digest = $1 AND k.revoked_at IS NULL",
        )
        .bind(&digest[..])
        .fetch_optional(&self.pool)
        .await?
        .map(|r| Account { id: r.get("id"), name: r.get("name") }))
    }

    pub async fn grant(&self, account: &str, tokens: i64) -> Result<i64> {
        if tokens <= 0 {
            return Err(StoreError::Conflict("a grant must be a positive number of tokens".into()));
        }
        let account = self.account(account).await?;
        let now = now_micros();
        let mut tx = self.begin().await?;
        let balance: i64 =
            sqlx::query_scalar("UPDATE accounts SET balance = balance + $1 WHERE id = $2 RETURNING balance")
                .bind(tokens)
                .bind(account.id)
                .fetch_one(&mut *tx)
                .await?;
        sqlx::query("INSERT INTO ledger (account_id, kind, amount, created_at) VALUES ($1, 'grant', $2, $3)")
            .bind(account.id)
            .bind(tokens)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(balance)
    }

    pub async fn balance(&self, account_id: i64) -> Result<i64> {
        sqlx::query_scalar("SELECT balance FROM accounts WHERE id = $1")
            .bind(account_id)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound)
    }

    pub async fn ledger_for_run(&self, run_id: &str) -> Result<Vec<(String, i64)>> {
        let rows = sqlx::query("SELECT kind, amount FROM ledger WHERE run_id = $1 ORDER BY id")
            .bind(run_id)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.into_iter().map(|r| (r.get("kind"), r.get("amount"))).collect())
    }
}

async fn insert_key(tx: &mut Transaction<'static, Postgres>, account_id: i64, now: i64) -> Result<String> {
    let key = ids::api_key();
    sqlx::query("INSERT INTO api_keys (account_id, digest, prefix, created_at) VALUES ($1, $2, $3, $4)")
        .bind(account_id)
        .bind(&ids::key_digest(&key)[..])
        .bind(ids::key_prefix(&key))
        .bind(now)
        .execute(&mut **tx)
        .await?;
    Ok(key)
}
