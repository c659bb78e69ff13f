//! Webhooks as the store keeps them: where a run's events go, each account's signing secrets,
//! the deliveries (queued by triggers in the transaction that makes the change, so a delivery
//! exists exactly when its change committed) and every attempt to make one.

use std::fmt;
use std::str::FromStr;

use atelier_core::time::Micros;

/// Which of a run's events are sent to its webhook.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WebhookEvents {
    /// The run finished, in any end state (the final status).
    pub completed: bool,
    /// A node's state changed.
    pub node: bool,
}

impl WebhookEvents {
    const COMPLETED: i64 = 1;
    const NODE: i64 = 2;

    /// As stored: a set of bits, which the triggers test.
    pub(crate) fn bits(self) -> i64 {
        (if self.completed { Self::COMPLETED } else { 0 }) | (if self.node { Self::NODE } else { 0 })
    }
}

/// A run's webhook, given when the run is accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunWebhook<'a> {
    pub url: &'a str,
    pub events: WebhookEvents,
}

/// A signing secret of an account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookSecret {
    /// `whsec_…`.
    pub secret: String,
    pub created_at: Micros,
    /// When a rotated-out secret stops being used; `None` for the current one.
    pub expires_at: Option<Micros>,
}

/// What a delivery tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryEvent {
    /// The run finished; the body is its final status.
    Completed,
    /// A node's state changed.
    Node,
    /// A batch ended (finished or canceled); the body is its status.
    Batch,
    /// A key or an account reached a threshold of a spend limit (`spend.threshold`).
    Spend,
}

/// What a delivery is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeliverySubject {
    /// A run (`completed` and `node` events).
    Run(String),
    /// A batch (`batch` events).
    Batch(String),
    /// A spend alert (`spend` events): its row id.
    Alert(i64),
}

/// As logs name it: the run or batch id, or `alert_{id}`.
impl fmt::Display for DeliverySubject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Run(id) | Self::Batch(id) => f.write_str(id),
            Self::Alert(id) => write!(f, "alert_{id}"),
        }
    }
}

/// Where a delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryState {
    /// Not delivered yet: an attempt is due, or being made.
    Pending,
    /// A 2xx answer was received.
    Delivered,
    /// Attempts stopped: the retry window passed.
    Failed,
}

macro_rules! text_enum {
    ($ty:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        impl $ty {
            pub fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $text),+ }
            }
        }
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
        impl FromStr for $ty {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($text => Ok(Self::$variant),)+
                    other => Err(format!("unknown {} '{other}'", stringify!($ty))),
                }
            }
        }
    };
}

text_enum!(DeliveryEvent { Completed => "completed", Node => "node", Batch => "batch", Spend => "spend" });
text_enum!(DeliveryState { Pending => "pending", Delivered => "delivered", Failed => "failed" });

/// A delivery claimed for an attempt (`Webhooks::claim_deliveries`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub id: i64,
    /// The `webhook-id` of every attempt.
    pub message_id: String,
    pub subject: DeliverySubject,
    pub account_id: i64,
    pub url: String,
    pub event: DeliveryEvent,
    /// For node events: the node and the state it reached.
    pub node: Option<String>,
    pub node_status: Option<String>,
    /// This attempt's number, from 1; the attempt's end is fenced by it.
    pub attempt: u32,
    pub created_at: Micros,
    /// The W3C `traceparent` of the run or batch ([`crate::NewRun::trace_parent`]).
    pub trace_parent: Option<String>,
}

/// One attempt, as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryAttempt {
    pub attempt: u32,
    pub at: Micros,
    /// The receiver's HTTP status, when it answered.
    pub status_code: Option<u16>,
    /// Why the attempt failed, when it did.
    pub error: Option<String>,
    pub duration_ms: i64,
}

/// What follows an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptEnd {
    Delivered,
    /// Try again at this time.
    RetryAt(Micros),
    /// No attempt is left: the delivery failed.
    GaveUp,
}

/// A delivery as its run's owner reads it (`GET /api/v3/runs/{id}/webhooks`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryRecord {
    pub message_id: String,
    pub event: DeliveryEvent,
    pub node: Option<String>,
    pub node_status: Option<String>,
    pub url: String,
    pub state: DeliveryState,
    pub created_at: Micros,
    pub finished_at: Option<Micros>,
    /// When the next attempt is due, while pending.
    pub next_at: Option<Micros>,
    pub attempts: Vec<DeliveryAttempt>,
    /// How often it was replayed (sent again on request).
    pub replays: u32,
}
