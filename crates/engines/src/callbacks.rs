//! Callbacks from model servers to this process: `POST {server.public_url}/internal/engines/
//! callback/{id}/{token}` (Cog calls them webhooks; here that word is kept for the
//! notifications Atelier sends its users). Cog does not sign them, so each prediction gets its
//! own random token in the URL; a callback whose token does not match is refused (404) and
//! changes nothing. Callbacks go to the adapter waiting in this process.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::mpsc;

/// The path under which callbacks are received (the API routes it).
pub const CALLBACK_PATH: &str = "/internal/engines/callback";

#[derive(Debug, Default)]
pub struct CallbackHub {
    waiting: Mutex<HashMap<String, (String, mpsc::UnboundedSender<Value>)>>,
}

/// A prediction's callback, registered while it lives.
pub(crate) struct Subscription {
    hub: Arc<CallbackHub>,
    id: String,
    pub url: String,
    pub events: mpsc::UnboundedReceiver<Value>,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Ok(mut waiting) = self.hub.waiting.lock() {
            waiting.remove(&self.id);
        }
    }
}

impl CallbackHub {
    /// Registers `id` for deliveries at `{base}{CALLBACK_PATH}/{id}/{token}`.
    pub(crate) fn subscribe(self: &Arc<Self>, base: &str, id: &str) -> Subscription {
        let token = hex::encode(rand_bytes());
        let (tx, events) = mpsc::unbounded_channel();
        if let Ok(mut waiting) = self.waiting.lock() {
            waiting.insert(id.to_string(), (token.clone(), tx));
        }
        let url = format!("{}{CALLBACK_PATH}/{id}/{token}", base.trim_end_matches('/'));
        Subscription { hub: Arc::clone(self), id: id.to_string(), url, events }
    }

    /// Hands a delivery to the adapter waiting for `id`; `false` when none waits or the token
    /// is wrong.
    pub fn deliver(&self, id: &str, token: &str, body: Value) -> bool {
        let Ok(waiting) = self.waiting.lock() else { return false };
        match waiting.get(id) {
            Some((expected, tx))
                if atelier_core::ids::constant_time_eq(expected.as_bytes(), token.as_bytes()) =>
            {
                tx.send(body).is_ok()
            }
            _ => false,
        }
    }
}

/// 16 bytes from a cryptographically secure generator (`rand`'s thread generator, seeded by
/// the operating system).
fn rand_bytes() -> [u8; 16] {
    rand::random()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delivery_reaches_its_subscriber_only_with_the_right_token() {
        let hub = Arc::new(CallbackHub::default());
        let mut sub = hub.subscribe("http://atelier:8080/", "pred-1");
        let token = sub.url.rsplit('/').next().unwrap_or_default().to_string();
        assert!(sub.url.starts_with("http://atelier:8080/internal/engines/callback/pred-1/"));
        assert_eq!(token.len(), 32);
        assert!(!hub.deliver("pred-1", "wrong", Value::Null));
        assert!(!hub.deliver("pred-2", &token, Value::Null));
        assert!(hub.deliver("pred-1", &token, serde_json::json!({"status": "processing"})));
        assert_eq!(sub.events.try_recv().ok(), Some(serde_json::json!({"status": "processing"})));
        // Tokens differ per subscription; a dropped subscription takes no more deliveries.
        let other = hub.subscribe("http://atelier:8080", "pred-2");
        assert_ne!(other.url.rsplit('/').next(), Some(token.as_str()));
        drop(sub);
        assert!(!hub.deliver("pred-1", &token, Value::Null));
    }
}
