//! Console sessions: a browser signs in with an API key and gets a session, whose token only
//! the cookie holds (the store keeps its SHA-256). A session ends when signed out, when
//! unused for `SessionLimits::idle`, `SessionLimits::absolute` after sign-in, or when the
//! key it was made with is revoked.

use async_trait::async_trait;
use atelier_core::ids;
use atelier_core::time::now_micros;

use crate::account::{KeyHolder, NewSession, Session, SessionLimits};
use crate::backend::Backend;
use crate::error::Result;
use crate::rows::SessionRow;
use crate::sql::{args, Conn};
use crate::statements::*;
use crate::traits::Sessions;

/// How precisely a session's `last_seen` is kept: one write a minute while it is used.
const SEEN_RESOLUTION_MICROS: i64 = 60_000_000;

fn micros(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

#[async_trait]
impl<B: Backend> Sessions for B {
    async fn create_session(&self, holder: &KeyHolder, limits: SessionLimits) -> Result<NewSession> {
        let now = now_micros();
        let token = ids::session_token();
        let csrf_token = ids::csrf_token();
        let expires_at = now.saturating_add(micros(limits.absolute));
        let digest = ids::key_digest(&token);
        let mut tx = self.begin().await?;
        // The account's sessions that are over go as a new one comes: the table holds live
        // sessions and the few that ended since the account last signed in.
        let idle_cutoff = now.saturating_sub(micros(limits.idle));
        tx.execute(DELETE_ENDED_SESSIONS, args![holder.account.id, now, idle_cutoff]).await?;
        tx.execute(
            INSERT_SESSION,
            args![&digest[..], holder.account.id, holder.key_id, csrf_token.as_str(), now, expires_at],
        )
        .await?;
        B::commit(tx).await?;
        Ok(NewSession { token, csrf_token, expires_at })
    }

    async fn session(&self, token: &str, limits: SessionLimits) -> Result<Option<Session>> {
        let now = now_micros();
        let digest = ids::key_digest(token);
        let idle_cutoff = now.saturating_sub(micros(limits.idle));
        let found: Option<SessionRow> = self
            .read()
            .await?
            .fetch_optional(SESSION_BY_DIGEST, args![&digest[..], now, idle_cutoff])
            .await?;
        let Some(SessionRow { session, last_seen }) = found else { return Ok(None) };
        if last_seen < now - SEEN_RESOLUTION_MICROS {
            self.execute_alone(TOUCH_SESSION, args![now, session.id]).await?;
        }
        Ok(Some(session))
    }

    async fn end_session(&self, token: &str) -> Result<bool> {
        let digest = ids::key_digest(token);
        Ok(self.execute_alone(END_SESSION, args![&digest[..]]).await? > 0)
    }
}
