//! Accounts, API keys and the token ledger's grants.

use atelier_core::ids;
use sqlx::Row;

use crate::{now_micros, Result, SqliteStore, StoreError};

#[derive(Debug, Clone, PartialEq)]
pub struct Account {
    pub id: i64,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct KeyInfo {
    pub prefix: String,
    pub account: String,
    pub revoked: bool,
}

impl SqliteStore {
    pub async fn create_account(&self, name: &str, tokens: i64) -> Result<(Account, String)> {
        if tokens < 0 {
            return Err(StoreError::Conflict("tokens must not be negative".into()));
        }
        let now = now_micros();
        let mut tx = self.begin().await?;
        let exists: Option<i64> = sqlx::query_scalar("SELECT id FROM accounts WHERE name = ?")
            .bind(name)
            .fetch_optional(&mut *tx)
            .await?;
        if exists.is_some() {
            return Err(StoreError::Conflict(format!("account '{name}' already exists")));
        }
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO accounts (name, balance, created_at) VALUES (?, ?, ?) RETURNING id",
        )
        .bind(name)
        .bind(tokens)
        .bind(now)
        .fetch_one(&mut *tx)
        .await?;
        if tokens > 0 {
            sqlx::query(
                "INSERT INTO ledger (account_id, kind, amount, created_at) VALUES (?, 'grant', ?, ?)",
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
        sqlx::query("SELECT id, name FROM accounts WHERE name = ?")
            .bind(name)
            .fetch_optional(&mut *self.reader().await?)
            .await?
            .map(|r| Account { id: r.get("id"), name: r.get("name") })
            .ok_or(StoreError::NotFound)
    }

    pub async fn account_count(&self) -> Result<i64> {
        Ok(sqlx::query_scalar("SELECT COUNT(*) FROM accounts").fetch_one(&mut *self.reader().await?).await?)
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
        let rows = sqlx::query(
            "SELECT k.id, k.prefix, a.name FROM api_keys k JOIN accounts a ON a.id = k.account_id
             WHERE k.revoked_at IS NULL AND (k.digest = ? OR k.prefix = ?)",
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
        sqlx::query("UPDATE api_keys SET revoked_at = ? WHERE id = ?")
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
             WHERE k.digest = ? AND k.revoked_at IS NULL",
        )
        .bind(&digest[..])
        .fetch_optional(&mut *self.reader().await?)
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
            sqlx::query_scalar("UPDATE accounts SET balance = balance + ? WHERE id = ? RETURNING balance")
                .bind(tokens)
                .bind(account.id)
                .fetch_one(&mut *tx)
                .await?;
        sqlx::query("INSERT INTO ledger (account_id, kind, amount, created_at) VALUES (?, 'grant', ?, ?)")
            .bind(account.id)
            .bind(tokens)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(balance)
    }

    pub async fn balance(&self, account_id: i64) -> Result<i64> {
        sqlx::query_scalar("SELECT balance FROM accounts WHERE id = ?")
            .bind(account_id)
            .fetch_optional(&mut *self.reader().await?)
            .await?
            .ok_or(StoreError::NotFound)
    }

    pub async fn ledger_for_run(&self, run_id: &str) -> Result<Vec<(String, i64)>> {
        let rows = sqlx::query("SELECT kind, amount FROM ledger WHERE run_id = ? ORDER BY id")
            .bind(run_id)
            .fetch_all(&mut *self.reader().await?)
            .await?;
        Ok(rows.into_iter().map(|r| (r.get("kind"), r.get("amount"))).collect())
    }
}

async fn insert_key(tx: &mut crate::WriteTx, account_id: i64, now: i64) -> Result<String> {
    let key = ids::api_key();
    sqlx::query("INSERT INTO api_keys (account_id, digest, prefix, created_at) VALUES (?, ?, ?, ?)")
        .bind(account_id)
        .bind(&ids::key_digest(&key)[..])
        .bind(ids::key_prefix(&key))
        .bind(now)
        .execute(&mut **tx)
        .await?;
    Ok(key)
}
