//! Spend limits (`atelier_core::spend`): tokens per UTC day and month, per key and per
//! account, counted where tokens are reserved so that they hold under any concurrency.
//!
//! Each `accounts` and `api_keys` row keeps a counter per period: the start of the period
//! it counts (`day_start`, `month_start`) and the tokens reserved in it (`day_used`,
//! `month_used`). A counter whose start is not the current period's counts zero. A
//! reservation raises the counters in the same transaction, under the same row lock, that
//! takes the tokens from the balance, and only when every limit still holds afterwards;
//! tokens given back (a run's unspent reservation, a batch's unused hold) lower the
//! counters of the period they were counted in, and leave a later period's alone.
//!
//! Reaching 80% and 100% of a limit is announced to the account's own webhook endpoint
//! (`spend.threshold`), once per key or account, period and threshold: an alert row
//! ([`SpendAlert`]) whose uniqueness is the "once", recorded with its delivery in the
//! transaction that reserved the tokens that reached it ([`announce_thresholds`]); a
//! reservation refused by a limit reaches its 100% as well (`flows::alerts`, after the
//! refused transaction rolled back).
//!
//! A batch counts its whole price when it is accepted, on its key and account; the runs it
//! starts later do not count again (their `count` is false), and what they give back is
//! given back to the batch's period.

use atelier_core::spend::{effective, Holder, Period, Setting, UNLIMITED};
use atelier_core::time::Micros;

use crate::error::{Result, StoreError};
use crate::sql::{args, parse_text, Conn, FromRow, RowRead};

/// The configured defaults: the limit of every key or account whose own setting is unset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpendDefaults {
    pub account_daily: Option<i64>,
    pub account_monthly: Option<i64>,
    pub key_daily: Option<i64>,
    pub key_monthly: Option<i64>,
    /// Nodes one key may have running at once.
    pub key_concurrency: Option<i64>,
}

impl SpendDefaults {
    fn of(&self, holder: Holder) -> (Option<i64>, Option<i64>) {
        match holder {
            Holder::Key => (self.key_daily, self.key_monthly),
            Holder::Account => (self.account_daily, self.account_monthly),
        }
    }
}

/// New limit settings: each `Some` replaces the stored setting (whose own `None` follows
/// the configured default), each `None` leaves it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LimitChange {
    pub daily: Option<atelier_core::spend::Setting>,
    pub monthly: Option<atelier_core::spend::Setting>,
    pub concurrency: Option<atelier_core::spend::Setting>,
}

/// The limit settings of a key or an account, as stored (`atelier_core::spend::Setting`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    pub daily: Setting,
    pub monthly: Setting,
    /// Keys only: nodes running at once.
    pub concurrency: Setting,
}

/// One period's limit and usage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeriodUse {
    pub period: Period,
    /// The limit in force (the setting or the default); `None`: no limit.
    pub limit: Option<i64>,
    /// Tokens counted in the current period.
    pub used: i64,
    /// When the current period ends and its usage starts again from zero.
    pub resets_at: Micros,
}

/// A key's or an account's limits and what it used of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpendUse {
    pub holder: Holder,
    /// The stored settings (unset ones follow the defaults).
    pub settings: Limits,
    pub day: PeriodUse,
    pub month: PeriodUse,
    /// Keys: the cap on running nodes in force, and the nodes running now.
    pub concurrency: Option<i64>,
    pub running: Option<i64>,
}

/// The spend columns of an `accounts` or `api_keys` row: its settings and counters.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Counters {
    pub daily_limit: Setting,
    pub monthly_limit: Setting,
    pub concurrency_limit: Setting,
    pub day_start: Micros,
    pub day_used: i64,
    pub month_start: Micros,
    pub month_used: i64,
}

impl FromRow for Counters {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(Counters {
            daily_limit: row.opt_int("daily_limit")?,
            monthly_limit: row.opt_int("monthly_limit")?,
            concurrency_limit: row.opt_int("concurrency_limit")?,
            day_start: row.int("day_start")?,
            day_used: row.int("day_used")?,
            month_start: row.int("month_start")?,
            month_used: row.int("month_used")?,
        })
    }
}

/// An account's [`Counters`] ([`ACCOUNT_COUNTERS`]), and whether the account has a webhook
/// endpoint (spend alerts are recorded only then).
struct AccountCounters {
    counters: Counters,
    endpoint: bool,
}

impl FromRow for AccountCounters {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(AccountCounters { counters: Counters::from_row(row)?, endpoint: row.int("endpoint")? != 0 })
    }
}

/// The columns [`Counters`] reads; accounts have no concurrency limit, keys no endpoint.
const ACCOUNT_COUNTERS: &str =
    "SELECT daily_limit, monthly_limit, NULL AS concurrency_limit, day_start, day_used,
            month_start, month_used, CAST(CASE WHEN webhook_url IS NULL THEN 0 ELSE 1 END AS BIGINT) AS endpoint
     FROM accounts WHERE id = $1";
const KEY_COUNTERS: &str = "SELECT daily_limit, monthly_limit, concurrency_limit, day_start, day_used,
            month_start, month_used
     FROM api_keys WHERE id = $1";

/// Raises the counters of a row by `$1` tokens in the periods starting `$2` (day) and `$3`
/// (month); `{table}` is `accounts` or `api_keys`, `$4` the row.
const COUNT: &str = "UPDATE {table} SET
        day_used = CASE WHEN day_start = $2 THEN day_used ELSE 0 END + $1, day_start = $2,
        month_used = CASE WHEN month_start = $3 THEN month_used ELSE 0 END + $1, month_start = $3
     WHERE id = $4";
/// Lowers the counters of a row by `$1` tokens where they still count the periods starting
/// `$2` (day) and `$3` (month), never below zero.
const UNCOUNT: &str = "UPDATE {table} SET
        day_used = CASE WHEN day_start = $2 THEN CASE WHEN day_used > $1 THEN day_used - $1 ELSE 0 END
                        ELSE day_used END,
        month_used = CASE WHEN month_start = $3 THEN CASE WHEN month_used > $1 THEN month_used - $1 ELSE 0 END
                          ELSE month_used END
     WHERE id = $4";

fn table(holder: Holder) -> &'static str {
    match holder {
        Holder::Key => "api_keys",
        Holder::Account => "accounts",
    }
}

impl Counters {
    /// What this row used of each period at `now`, against the limits in force.
    pub(crate) fn usage(
        &self,
        holder: Holder,
        defaults: &SpendDefaults,
        now: Micros,
    ) -> (PeriodUse, PeriodUse) {
        let (daily, monthly) = defaults.of(holder);
        let period = |period: Period, start: Micros, used: i64, limit: Option<i64>| PeriodUse {
            period,
            limit,
            used: if start == period.start(now) { used } else { 0 },
            resets_at: period.end(now),
        };
        (
            period(Period::Day, self.day_start, self.day_used, effective(self.daily_limit, daily)),
            period(Period::Month, self.month_start, self.month_used, effective(self.monthly_limit, monthly)),
        )
    }

    /// The first limit that `tokens` more would cross at `now`.
    fn refusal(
        &self,
        holder: Holder,
        defaults: &SpendDefaults,
        tokens: i64,
        now: Micros,
    ) -> Option<StoreError> {
        let (day, month) = self.usage(holder, defaults, now);
        [day, month].into_iter().find_map(|use_| {
            let limit = use_.limit?;
            (use_.used.saturating_add(tokens) > limit).then_some(StoreError::SpendLimitReached {
                holder,
                period: use_.period,
                limit,
                used: use_.used,
                required: tokens,
                resets_at: use_.resets_at,
            })
        })
    }

    pub(crate) fn settings(&self) -> Limits {
        Limits { daily: self.daily_limit, monthly: self.monthly_limit, concurrency: self.concurrency_limit }
    }
}

/// The counters of account `account_id` (with whether it has an endpoint) and key `key_id`,
/// each row locked with `lock` (`Backend::FOR_NO_KEY_UPDATE`, as the account's row is
/// everywhere; nothing on SQLite's one writer).
async fn counters(
    conn: &mut impl Conn,
    lock: &str,
    account_id: i64,
    key_id: Option<i64>,
) -> Result<(AccountCounters, Option<Counters>)> {
    let account = conn.fetch_one(&format!("{ACCOUNT_COUNTERS} {lock}"), args![account_id]).await?;
    let key = match key_id {
        Some(key_id) => conn.fetch_optional(&format!("{KEY_COUNTERS} {lock}"), args![key_id]).await?,
        None => None,
    };
    Ok((account, key))
}

/// Who pays for a reservation: an account, and the key it was made with (none for work
/// made by account name).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Payer {
    pub account_id: i64,
    pub key_id: Option<i64>,
}

/// Takes `price` tokens from the payer's balance, counting them against its key's and its
/// account's limits when `count`; in the caller's transaction, nothing changed when it
/// fails. Refusals, in this order: the key's limits, the account's, the balance
/// (`SpendLimitReached`, `InsufficientTokens`).
pub(crate) async fn reserve(
    conn: &mut impl Conn,
    lock: &str,
    defaults: &SpendDefaults,
    payer: Payer,
    price: i64,
    count: bool,
    now: Micros,
) -> Result<()> {
    let Payer { account_id, key_id } = payer;
    let mut endpoint = false;
    if count {
        let (account, key) = counters(conn, lock, account_id, key_id).await?;
        let refused = key
            .and_then(|k| k.refusal(Holder::Key, defaults, price, now))
            .or_else(|| account.counters.refusal(Holder::Account, defaults, price, now));
        if let Some(refused) = refused {
            return Err(refused);
        }
        endpoint = account.endpoint;
    }
    if conn.execute(crate::statements::RESERVE, args![price, account_id]).await? == 0 {
        let balance = conn.fetch_one(crate::statements::BALANCE, args![account_id]).await?;
        return Err(StoreError::InsufficientTokens { required: price, balance });
    }
    if count {
        add(conn, account_id, key_id, price, now).await?;
        if endpoint {
            announce_thresholds(conn, defaults, payer, now).await?;
        }
    }
    Ok(())
}

/// Counts `tokens` reserved at `now` for account `account_id` and key `key_id`.
async fn add(
    conn: &mut impl Conn,
    account_id: i64,
    key_id: Option<i64>,
    tokens: i64,
    now: Micros,
) -> Result<()> {
    let (day, month) = (Period::Day.start(now), Period::Month.start(now));
    let holders = std::iter::once((Holder::Account, account_id)).chain(key_id.map(|k| (Holder::Key, k)));
    for (holder, id) in holders {
        conn.execute(&COUNT.replace("{table}", table(holder)), args![tokens, day, month, id]).await?;
    }
    Ok(())
}

/// Gives back `tokens` counted at `counted_at` to account `account_id` and key `key_id`: the
/// counters that still count that period go down; a later period's are left alone. The
/// account's row first, as everywhere that holds both.
pub(crate) async fn give_back(
    conn: &mut impl Conn,
    account_id: i64,
    key_id: Option<i64>,
    tokens: i64,
    counted_at: Micros,
) -> Result<()> {
    if tokens <= 0 {
        return Ok(());
    }
    let (day, month) = (Period::Day.start(counted_at), Period::Month.start(counted_at));
    let holders = std::iter::once((Holder::Account, account_id)).chain(key_id.map(|k| (Holder::Key, k)));
    for (holder, id) in holders {
        conn.execute(&UNCOUNT.replace("{table}", table(holder)), args![tokens, day, month, id]).await?;
    }
    Ok(())
}

/// Why a reservation that changed nothing was refused, read after the fact (PostgreSQL's
/// one-statement accept): the first limit or the balance that `price` more crosses now;
/// `None` when nothing does any longer (tokens came back in between).
pub(crate) async fn why_refused(
    conn: &mut impl Conn,
    defaults: &SpendDefaults,
    account_id: i64,
    key_id: Option<i64>,
    price: i64,
    now: Micros,
) -> Result<Option<StoreError>> {
    let (account, key) = counters(conn, "", account_id, key_id).await?;
    if let Some(refused) = key
        .and_then(|k| k.refusal(Holder::Key, defaults, price, now))
        .or_else(|| account.counters.refusal(Holder::Account, defaults, price, now))
    {
        return Ok(Some(refused));
    }
    let balance: i64 = conn.fetch_one(crate::statements::BALANCE, args![account_id]).await?;
    Ok((balance < price).then_some(StoreError::InsufficientTokens { required: price, balance }))
}

/// The usage of account `account_id` and, with one, key `key_id` at `now`.
pub(crate) async fn usage(
    conn: &mut impl Conn,
    defaults: &SpendDefaults,
    account_id: i64,
    key_id: Option<i64>,
    now: Micros,
) -> Result<(SpendUse, Option<SpendUse>)> {
    let (account, key) = counters(conn, "", account_id, key_id).await?;
    let account = spend_use(&account.counters, Holder::Account, defaults, None, now);
    let key = match (key, key_id) {
        (Some(key), Some(key_id)) => {
            let running: i64 = conn.fetch_one(&RUNNING_OF_KEY, args![key_id]).await?;
            Some(spend_use(&key, Holder::Key, defaults, Some(running), now))
        }
        _ => None,
    };
    Ok((account, key))
}

/// The thresholds, in percent of a limit, whose reaching is announced.
pub const ALERT_THRESHOLDS: [i64; 2] = [80, 100];

/// A threshold of a limit reached, as recorded (and sent as a `spend.threshold` webhook).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpendAlert {
    pub id: i64,
    pub holder: Holder,
    /// The key's prefix (a key's limit), `None` for the account's.
    pub key_prefix: Option<String>,
    pub period: Period,
    /// 80 or 100 (percent of the limit).
    pub threshold: i64,
    pub limit: i64,
    /// Tokens counted in the period when it was reached.
    pub used: i64,
    pub resets_at: Micros,
    pub created_at: Micros,
}

/// An alert with its account's id.
impl FromRow for (i64, SpendAlert) {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok((row.int("account_id")?, SpendAlert::from_row(row)?))
    }
}

impl FromRow for SpendAlert {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(SpendAlert {
            id: row.int("id")?,
            holder: parse_text(row.text("holder")?)?,
            key_prefix: row.opt_text("key_prefix")?.map(str::to_owned),
            period: parse_text(row.text("period")?)?,
            threshold: row.int("threshold")?,
            limit: row.int("spend_limit")?,
            used: row.int("used")?,
            resets_at: row.int("resets_at")?,
            created_at: row.int("created_at")?,
        })
    }
}

/// Alert `$1` with the prefix of its key.
pub(crate) const SPEND_ALERT: &str =
    "SELECT a.id, a.account_id, a.holder, k.prefix AS key_prefix, a.period, a.threshold, a.spend_limit, a.used, a.resets_at,
            a.created_at
     FROM spend_alerts a LEFT JOIN api_keys k ON a.holder = 'key' AND k.id = a.holder_id
     WHERE a.id = $1";
/// Account `$1`'s webhook endpoint, when it has one.
const ENDPOINT: &str = "SELECT webhook_url FROM accounts WHERE id = $1 AND webhook_url IS NOT NULL";
/// Records a threshold reached, once: `$1` account, `$2` holder, `$3` its id, `$4` period,
/// `$5` its start, `$6` threshold, `$7` limit, `$8` used, `$9` resets at, `$10` now; the new
/// row's id, none when it was recorded before.
const RECORD_ALERT: &str = "INSERT INTO spend_alerts
        (account_id, holder, holder_id, period, period_start, threshold, spend_limit, used, resets_at, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
     ON CONFLICT (holder, holder_id, period, period_start, threshold) DO NOTHING RETURNING id";
/// Queues alert `$1`'s delivery to account `$2`'s endpoint, at `$3`.
const QUEUE_ALERT: &str = "INSERT INTO webhook_deliveries (alert_id, account_id, url, event, created_at)
     SELECT $1, id, webhook_url, 'spend', $3 FROM accounts WHERE id = $2 AND webhook_url IS NOT NULL";

/// Account `account_id`'s webhook endpoint.
pub(crate) async fn endpoint(conn: &mut impl Conn, account_id: i64) -> Result<Option<String>> {
    conn.fetch_optional(ENDPOINT, args![account_id]).await
}

/// One threshold of one holder's period reached.
pub(crate) struct Reached {
    pub holder: Holder,
    pub holder_id: i64,
    pub threshold: i64,
    pub usage: PeriodUse,
}

/// Records `reached` and queues its delivery to the account's endpoint, unless it was
/// recorded before in the same period; whether a delivery was queued.
pub(crate) async fn record(
    conn: &mut impl Conn,
    account_id: i64,
    reached: Reached,
    now: Micros,
) -> Result<bool> {
    let Reached { holder, holder_id, threshold, usage } = reached;
    let Some(limit) = usage.limit else { return Ok(false) };
    let id: Option<i64> = conn
        .fetch_optional(
            RECORD_ALERT,
            args![
                account_id,
                holder.as_str(),
                holder_id,
                usage.period.as_str(),
                usage.period.start(now),
                threshold,
                limit,
                usage.used,
                usage.resets_at,
                now
            ],
        )
        .await?;
    let Some(id) = id else { return Ok(false) };
    Ok(conn.execute(QUEUE_ALERT, args![id, account_id, now]).await? > 0)
}

/// Announces every threshold that the payer's key and account have reached in the current
/// periods and not announced yet, to the account's endpoint (which it has); in the caller's
/// transaction, which has just counted a reservation and holds the account's row. Whether
/// anything was queued.
pub(crate) async fn announce_thresholds(
    conn: &mut impl Conn,
    defaults: &SpendDefaults,
    payer: Payer,
    now: Micros,
) -> Result<bool> {
    let Payer { account_id, key_id } = payer;
    let (account, key) = counters(conn, "", account_id, key_id).await?;
    let holders = std::iter::once((Holder::Account, account_id, account.counters))
        .chain(key_id.zip(key).map(|(id, key)| (Holder::Key, id, key)));
    let mut reached = Vec::new();
    for (holder, holder_id, counters) in holders {
        let (day, month) = counters.usage(holder, defaults, now);
        for usage in [day, month] {
            let Some(limit) = usage.limit else { continue };
            for threshold in ALERT_THRESHOLDS {
                // A limit of 0 is reached only by a refusal (nothing is counted against it).
                if usage.used > 0 && usage.used.saturating_mul(100) >= limit.saturating_mul(threshold) {
                    reached.push(Reached { holder, holder_id, threshold, usage });
                }
            }
        }
    }
    let mut queued = false;
    for reached in reached {
        queued |= record(conn, account_id, reached, now).await?;
    }
    Ok(queued)
}

/// Nodes of key `$1` running now.
static RUNNING_OF_KEY: crate::statements::Sql = crate::statements::sql!(
    "SELECT COUNT(*) FROM tasks WHERE key_id = $1 AND state = '{}'",
    atelier_core::status::TaskState::Running
);

pub(crate) fn spend_use(
    counters: &Counters,
    holder: Holder,
    defaults: &SpendDefaults,
    running: Option<i64>,
    now: Micros,
) -> SpendUse {
    let (day, month) = counters.usage(holder, defaults, now);
    SpendUse {
        holder,
        settings: counters.settings(),
        day,
        month,
        concurrency: match holder {
            Holder::Key => effective(counters.concurrency_limit, defaults.key_concurrency),
            Holder::Account => None,
        },
        running,
    }
}

/// Stores new settings for a key or an account (each `None` in `change`: unchanged).
pub(crate) async fn set_limits(
    conn: &mut impl Conn,
    holder: Holder,
    id: i64,
    change: LimitChange,
) -> Result<()> {
    let columns = [
        ("daily_limit", change.daily),
        ("monthly_limit", change.monthly),
        ("concurrency_limit", change.concurrency),
    ];
    for (column, setting) in columns {
        let Some(setting) = setting else { continue };
        if setting.is_some_and(|n| n < UNLIMITED) {
            return Err(StoreError::Conflict(format!("a limit is 0 or more, or {UNLIMITED} for none")));
        }
        if column == "concurrency_limit" && setting == Some(0) {
            return Err(StoreError::Conflict(
                "a key's cap on running nodes is 1 or more (a spend limit of 0 stops its runs)".into(),
            ));
        }
        if holder == Holder::Account && column == "concurrency_limit" {
            return Err(StoreError::Conflict(
                "an account has no concurrency limit; set it on its keys".into(),
            ));
        }
        let sql = format!("UPDATE {} SET {column} = $1 WHERE id = $2", table(holder));
        conn.execute(&sql, args![setting, id]).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use atelier_core::time::parse_time;

    #[test]
    fn a_counter_of_an_earlier_period_counts_zero_and_the_month_goes_on() {
        let day = |text: &str| parse_time(text).unwrap();
        let counters = Counters {
            daily_limit: Some(10),
            monthly_limit: Some(25),
            concurrency_limit: None,
            day_start: day("2026-11-28"),
            day_used: 9,
            month_start: day("2026-11-01"),
            month_used: 20,
        };
        let defaults = SpendDefaults::default();
        // The same day: 9 used of 10.
        let same_day = day("2026-11-28T23:00:00Z");
        assert!(counters.refusal(Holder::Key, &defaults, 1, same_day).is_none());
        match counters.refusal(Holder::Key, &defaults, 2, same_day) {
            Some(StoreError::SpendLimitReached {
                period: Period::Day,
                used: 9,
                limit: 10,
                resets_at,
                ..
            }) => {
                assert_eq!(resets_at, day("2026-11-29"));
            }
            other => panic!("{other:?}"),
        }
        // The next day starts from zero; the month still counts 20 of 25.
        let next_day = day("2026-11-29T00:00:00Z");
        let (today, month) = counters.usage(Holder::Key, &defaults, next_day);
        assert_eq!((today.used, month.used, month.resets_at), (0, 20, day("2026-12-01")));
        assert!(counters.refusal(Holder::Key, &defaults, 5, next_day).is_none());
        assert!(matches!(
            counters.refusal(Holder::Key, &defaults, 6, next_day),
            Some(StoreError::SpendLimitReached { period: Period::Month, used: 20, .. })
        ));
        // The next month starts from zero as well.
        let (today, month) = counters.usage(Holder::Key, &defaults, day("2026-12-01T08:00:00Z"));
        assert_eq!((today.used, month.used), (0, 0));
        // An account's limits come from the account defaults, a key's from the key defaults.
        let unset = Counters { daily_limit: None, monthly_limit: None, ..counters };
        let defaults =
            SpendDefaults { key_daily: Some(3), account_daily: Some(30), ..SpendDefaults::default() };
        assert_eq!(unset.usage(Holder::Key, &defaults, same_day).0.limit, Some(3));
        assert_eq!(unset.usage(Holder::Account, &defaults, same_day).0.limit, Some(30));
    }
}
