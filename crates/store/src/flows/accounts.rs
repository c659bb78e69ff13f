//! Accounts, API keys, the token ledger's grants, and reading an account's ledger and usage.

use async_trait::async_trait;
use atelier_core::ids;
use atelier_core::scopes::Scopes;
use atelier_core::status::{LedgerKind, Priority};
use atelier_core::time::{now_micros, Micros};

use crate::account::{Account, KeyInfo};
use crate::account::{KeyHolder, KeyRecord, LedgerEntry, LedgerQuery, Usage};
use crate::backend::Backend;
use crate::error::{Result, StoreError};
use crate::rows::{DayNodes, DayTokens, KeyRow, KeyUse, LedgerRow, ListedKey};
use crate::spend::LimitChange;
use crate::spend::{self, SpendUse};
use crate::sql::{args, Conn};
use crate::statements::*;
use crate::traits::Accounts;
use atelier_core::spend::Holder;

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
        let (key, _) = insert_key(&mut *tx, id, now, Scopes::ALL).await?;
        B::commit(tx).await?;
        Ok((
            Account {
                id,
                name: name.to_string(),
                priority: Priority::default(),
                retention_secs: None,
                key_id: None,
                key_prefix: None,
                scopes: Scopes::ALL,
            },
            key,
        ))
    }

    async fn account(&self, name: &str) -> Result<Account> {
        self.read().await?.fetch_optional(ACCOUNT_BY_NAME, args![name]).await?.ok_or(StoreError::NotFound)
    }

    async fn account_count(&self) -> Result<i64> {
        self.read().await?.fetch_one(COUNT_ACCOUNTS, args![]).await
    }

    async fn create_key(&self, account: &str, scopes: Scopes) -> Result<String> {
        let account = self.account(account).await?;
        let mut tx = self.begin().await?;
        let (key, _) = insert_key(&mut *tx, account.id, now_micros(), scopes).await?;
        B::commit(tx).await?;
        Ok(key)
    }

    async fn revoke_key(&self, key_or_prefix: &str) -> Result<KeyInfo> {
        let mut tx = self.begin().await?;
        let row = active_key(&mut *tx, key_or_prefix).await?;
        tx.execute(REVOKE_KEY, args![now_micros(), row.id]).await?;
        tx.execute(DELETE_KEY_SESSIONS, args![row.id]).await?;
        B::commit(tx).await?;
        self.feed().publish_keys();
        Ok(KeyInfo { revoked: true, ..row.info() })
    }

    async fn set_key_priority(&self, key_or_prefix: &str, priority: Option<Priority>) -> Result<KeyInfo> {
        let mut tx = self.begin().await?;
        let row = active_key(&mut *tx, key_or_prefix).await?;
        tx.execute(SET_KEY_PRIORITY, args![priority.map(Priority::as_str), row.id]).await?;
        B::commit(tx).await?;
        self.feed().publish_keys();
        Ok(row.info())
    }

    async fn set_key_retention(&self, key_or_prefix: &str, secs: Option<u64>) -> Result<KeyInfo> {
        let secs = secs.map(|s| i64::try_from(s).unwrap_or(i64::MAX));
        let mut tx = self.begin().await?;
        let row = active_key(&mut *tx, key_or_prefix).await?;
        tx.execute(SET_KEY_RETENTION, args![secs, row.id]).await?;
        B::commit(tx).await?;
        self.feed().publish_keys();
        Ok(row.info())
    }

    async fn set_key_scopes(&self, key_or_prefix: &str, scopes: Scopes) -> Result<KeyInfo> {
        let mut tx = self.begin().await?;
        let row = active_key(&mut *tx, key_or_prefix).await?;
        tx.execute(SET_KEY_SCOPES, args![&scopes.to_string(), row.id]).await?;
        B::commit(tx).await?;
        self.feed().publish_keys();
        Ok(KeyInfo { scopes, ..row.info() })
    }

    async fn authenticate(&self, key: &str) -> Result<Option<Account>> {
        Ok(self.authenticate_key(key).await?.map(|holder| holder.account))
    }

    async fn authenticate_key(&self, key: &str) -> Result<Option<KeyHolder>> {
        let digest = ids::key_digest(key);
        let found: Option<KeyUse> =
            self.read().await?.fetch_optional(AUTHENTICATE, args![&digest[..]]).await?;
        let Some(KeyUse { holder, last_used }) = found else { return Ok(None) };
        // `last_used` is kept to the minute: one write a minute per key in use, not one per
        // request. A failed write loses a timestamp, not the request.
        let now = now_micros();
        let stale = now - KEY_USE_RESOLUTION_MICROS;
        if last_used.is_none_or(|t| t < stale) {
            if let Err(e) = self.execute_alone(TOUCH_KEY, args![now, holder.key_id, stale]).await {
                tracing::warn!(error = %e, "recording when a key was last used failed");
            }
        }
        Ok(Some(holder))
    }

    async fn list_keys(&self, account_id: i64) -> Result<Vec<KeyRecord>> {
        let keys: Vec<ListedKey> = self.read().await?.fetch_all(&LIST_KEYS, args![account_id]).await?;
        let now = now_micros();
        Ok(keys.into_iter().map(|k| k.record(&self.settings().spend, now)).collect())
    }

    async fn add_key(&self, account_id: i64, scopes: Scopes) -> Result<(KeyRecord, String)> {
        let now = now_micros();
        let mut tx = self.begin().await?;
        let key = insert_key(&mut *tx, account_id, now, scopes).await?;
        let record: ListedKey = tx.fetch_one(&KEY_OF_ACCOUNT, args![key.1, account_id]).await?;
        B::commit(tx).await?;
        Ok((record.record(&self.settings().spend, now), key.0))
    }

    async fn revoke_account_key(&self, account_id: i64, key_id: i64) -> Result<KeyRecord> {
        let now = now_micros();
        let mut tx = self.begin().await?;
        let revoked = tx.execute(REVOKE_KEY_OF_ACCOUNT, args![now, key_id, account_id]).await?;
        let record: Option<ListedKey> = tx.fetch_optional(&KEY_OF_ACCOUNT, args![key_id, account_id]).await?;
        let record = record.ok_or(StoreError::NotFound)?.record(&self.settings().spend, now);
        if revoked == 0 {
            return Err(StoreError::Conflict("the key is revoked already".into()));
        }
        tx.execute(DELETE_KEY_SESSIONS, args![key_id]).await?;
        B::commit(tx).await?;
        self.feed().publish_keys();
        Ok(record)
    }

    async fn ledger(&self, account_id: i64, query: &LedgerQuery<'_>) -> Result<Vec<LedgerEntry>> {
        let before = query.before_id.unwrap_or(i64::MAX);
        let limit = query.limit.clamp(1, 1000);
        self.read()
            .await?
            .fetch_all(LEDGER_PAGE, args![account_id, before, query.kind, query.run_id, limit])
            .await
    }

    async fn usage(&self, account_id: i64, since: Micros) -> Result<Usage> {
        const DAY: i64 = 86_400_000_000;
        let mut read = self.read().await?;
        let tokens: Vec<DayTokens> = read.fetch_all(&USAGE_TOKENS, args![account_id, since]).await?;
        let nodes: Vec<DayNodes> = read.fetch_all(USAGE_NODES, args![account_id, since]).await?;
        Ok(Usage {
            tokens: tokens.into_iter().map(|DayTokens(day, n)| (day * DAY, n)).collect(),
            nodes: nodes.into_iter().map(|DayNodes(day, tool, n)| (day * DAY, tool, n)).collect(),
        })
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

    async fn spend(&self, account_id: i64, key_id: Option<i64>) -> Result<(SpendUse, Option<SpendUse>)> {
        let mut read = self.read().await?;
        spend::usage(&mut *read, &self.settings().spend, account_id, key_id, now_micros()).await
    }

    async fn set_key_limits(&self, key_or_prefix: &str, limits: LimitChange) -> Result<(KeyInfo, SpendUse)> {
        let mut tx = self.begin().await?;
        let row = active_key(&mut *tx, key_or_prefix).await?;
        spend::set_limits(&mut *tx, Holder::Key, row.id, limits).await?;
        B::commit(tx).await?;
        let account = self.account(&row.account).await?;
        let (_, key) = self.spend(account.id, Some(row.id)).await?;
        Ok((row.info(), key.ok_or(StoreError::NotFound)?))
    }

    async fn set_account_key_limits(
        &self,
        account_id: i64,
        key_id: i64,
        limits: LimitChange,
    ) -> Result<KeyRecord> {
        let now = now_micros();
        let mut tx = self.begin().await?;
        let record: Option<ListedKey> = tx.fetch_optional(&KEY_OF_ACCOUNT, args![key_id, account_id]).await?;
        record.ok_or(StoreError::NotFound)?;
        spend::set_limits(&mut *tx, Holder::Key, key_id, limits).await?;
        let record: ListedKey = tx.fetch_one(&KEY_OF_ACCOUNT, args![key_id, account_id]).await?;
        B::commit(tx).await?;
        Ok(record.record(&self.settings().spend, now))
    }

    async fn set_account_limits(&self, account: &str, limits: LimitChange) -> Result<SpendUse> {
        let account = self.account(account).await?;
        let mut tx = self.begin().await?;
        spend::set_limits(&mut *tx, Holder::Account, account.id, limits).await?;
        B::commit(tx).await?;
        Ok(self.spend(account.id, None).await?.0)
    }
}

/// How precisely a key's `last_used` is kept.
const KEY_USE_RESOLUTION_MICROS: i64 = 60_000_000;

/// The active key given in full or by its prefix; `Conflict` when a prefix matches several.
async fn active_key(conn: &mut impl Conn, key_or_prefix: &str) -> Result<KeyRow> {
    let digest = ids::key_digest(key_or_prefix);
    let rows: Vec<KeyRow> = conn.fetch_all(ACTIVE_KEYS_MATCHING, args![&digest[..], key_or_prefix]).await?;
    let mut rows = rows.into_iter();
    match (rows.next(), rows.next()) {
        (Some(one), None) => Ok(one),
        (None, _) => Err(StoreError::NotFound),
        (Some(_), Some(_)) => {
            Err(StoreError::Conflict("that prefix matches several keys; give the whole key".into()))
        }
    }
}

/// A new key of `account_id` holding `scopes`: the key, shown once, and its row's id.
async fn insert_key(
    conn: &mut impl Conn,
    account_id: i64,
    now: i64,
    scopes: Scopes,
) -> Result<(String, i64)> {
    let key = ids::api_key();
    let digest = ids::key_digest(&key);
    let prefix = ids::key_prefix(&key);
    let id: i64 = conn
        .fetch_one(INSERT_KEY, args![account_id, &digest[..], prefix.as_str(), now, &scopes.to_string()])
        .await?;
    Ok((key, id))
}
