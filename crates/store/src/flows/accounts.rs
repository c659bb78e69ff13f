//! Accounts, API keys and the token ledger's grants.

use async_trait::async_trait;
use atelier_core::ids;
use atelier_core::status::LedgerKind;
use atelier_core::time::now_micros;

use crate::backend::Backend;
use crate::rows::{KeyRow, LedgerRow};
use crate::sql::{args, Conn};
use crate::statements::*;
use crate::{Account, Accounts, KeyInfo, Result, StoreError};

#[async_trait]
impl<B: Backend> Accounts for B {
    async fn create_account(&self, name: &str, tokens: i64) -> Result<(Account, String)> {
        if tokens < 0 {
            return Err(StoreError::Conflict("tokens must not be negative".into()));
        }
        let now = now_micros();
        let mut tx = self.begin().await?;
        // `ON CONFLICT DO NOTHING`: a concurrent creation of the same name (PostgreSQL) waits
        // for the other to commit and then inserts nothing.
        let id: Option<i64> = tx.fetch_optional(CREATE_ACCOUNT, args![name, tokens, now]).await?;
        let Some(id) = id else {
            return Err(StoreError::Conflict(format!("account '{name}' already exists")));
        };
        if tokens > 0 {
            tx.execute(INSERT_LEDGER, args![id, None::<&str>, LedgerKind::Grant.as_str(), tokens, now])
                .await?;
        }
        let key = insert_key(&mut *tx, id, now).await?;
        B::commit(tx).await?;
        Ok((Account { id, name: name.to_string() }, key))
    }

    async fn account(&self, name: &str) -> Result<Account> {
        self.read().await?.fetch_optional(ACCOUNT_BY_NAME, args![name]).await?.ok_or(StoreError::NotFound)
    }

    async fn account_count(&self) -> Result<i64> {
        self.read().await?.fetch_one(COUNT_ACCOUNTS, args![]).await
    }

    async fn create_key(&self, account: &str) -> Result<String> {
        let account = self.account(account).await?;
        let mut tx = self.begin().await?;
        let key = insert_key(&mut *tx, account.id, now_micros()).await?;
        B::commit(tx).await?;
        Ok(key)
    }

    async fn revoke_key(&self, key_or_prefix: &str) -> Result<KeyInfo> {
        let mut tx = self.begin().await?;
        let digest = ids::key_digest(key_or_prefix);
        let rows: Vec<KeyRow> = tx.fetch_all(ACTIVE_KEYS_MATCHING, args![&digest[..], key_or_prefix]).await?;
        let row = match rows.as_slice() {
            [] => return Err(StoreError::NotFound),
            [one] => one,
            _ => {
                return Err(StoreError::Conflict(
                    "that prefix matches several keys; give the whole key".into(),
                ))
            }
        };
        tx.execute(REVOKE_KEY, args![now_micros(), row.id]).await?;
        B::commit(tx).await?;
        Ok(KeyInfo { prefix: row.prefix.clone(), account: row.account.clone(), revoked: true })
    }

    async fn authenticate(&self, key: &str) -> Result<Option<Account>> {
        let digest = ids::key_digest(key);
        self.read().await?.fetch_optional(AUTHENTICATE, args![&digest[..]]).await
    }

    async fn grant(&self, account: &str, tokens: i64) -> Result<i64> {
        if tokens <= 0 {
            return Err(StoreError::Conflict("a grant must be a positive number of tokens".into()));
        }
        let account = self.account(account).await?;
        let now = now_micros();
        let mut tx = self.begin().await?;
        let balance: i64 = tx.fetch_one(ADD_TO_BALANCE, args![tokens, account.id]).await?;
        let grant = LedgerKind::Grant.as_str();
        tx.execute(INSERT_LEDGER, args![account.id, None::<&str>, grant, tokens, now]).await?;
        B::commit(tx).await?;
        Ok(balance)
    }

    async fn balance(&self, account_id: i64) -> Result<i64> {
        self.read().await?.fetch_optional(BALANCE, args![account_id]).await?.ok_or(StoreError::NotFound)
    }

    async fn ledger_for_run(&self, run_id: &str) -> Result<Vec<(String, i64)>> {
        let rows: Vec<LedgerRow> = self.read().await?.fetch_all(LEDGER_FOR_RUN, args![run_id]).await?;
        Ok(rows.into_iter().map(|LedgerRow(kind, amount)| (kind, amount)).collect())
    }
}

async fn insert_key(conn: &mut impl Conn, account_id: i64, now: i64) -> Result<String> {
    let key = ids::api_key();
    let digest = ids::key_digest(&key);
    conn.execute(INSERT_KEY, args![account_id, &digest[..], ids::key_prefix(&key).as_str(), now]).await?;
    Ok(key)
}
