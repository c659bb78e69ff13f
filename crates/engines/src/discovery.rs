//! The servers behind one `[engines.NAME]` entry: a [`Group`] of endpoints.
//!
//! A fixed entry is one endpoint for good. With `discover = "dns"` the group follows what its
//! URL's host name resolves to (a Kubernetes headless Service has one address per ready pod):
//! [`Group::refresh`] resolves it again, every `discover_interval_secs` from
//! [`crate::Engines::watch`], and
//!
//! - an address not seen before becomes an endpoint named `NAME@ADDRESS` that takes no node
//!   until a health check passes (its watch probes it at once);
//! - an address that is gone leaves the group: no new node is sent to it, and the nodes it
//!   runs finish (each holds its endpoint until it ends), so a server scaled down drains;
//! - a lookup that fails keeps the addresses found last: a resolver that hiccups must not
//!   empty a fleet, and a server that is really gone fails its health checks meanwhile.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::endpoint::Endpoint;
use crate::settings::{Discover, EndpointSettings};

/// One `[engines.NAME]`: its endpoints now.
pub struct Group {
    pub(crate) name: String,
    pub(crate) settings: EndpointSettings,
    members: Mutex<Members>,
    /// Notified when one of the group's endpoints becomes usable; given to every endpoint,
    /// those discovered later too.
    listeners: Mutex<Vec<Arc<Notify>>>,
}

struct Members {
    /// Keyed by address (`None` for a fixed entry's one endpoint).
    endpoints: Vec<(Option<SocketAddr>, Arc<Endpoint>)>,
    /// Since when the group has had no endpoint (a name that resolves to nothing).
    empty_since: Option<Instant>,
    /// Why the last lookup failed, while it does.
    lookup_failed: Option<String>,
}

/// What a [`Group::refresh`] changed.
#[derive(Default)]
pub(crate) struct Change {
    /// New endpoints: not usable until a health check passes.
    pub added: Vec<Arc<Endpoint>>,
    /// Endpoints that left the group (their running nodes finish).
    pub removed: Vec<Arc<Endpoint>>,
}

impl std::fmt::Debug for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group").field("name", &self.name).finish_non_exhaustive()
    }
}

impl Group {
    pub fn new(name: &str, settings: &EndpointSettings) -> Result<Arc<Self>, String> {
        let endpoints = match settings.discover {
            Discover::None => vec![(None, Endpoint::new(name, settings)?)],
            Discover::Dns => Vec::new(),
        };
        let empty_since = endpoints.is_empty().then(Instant::now);
        Ok(Arc::new(Self {
            name: name.to_string(),
            settings: settings.clone(),
            members: Mutex::new(Members { endpoints, empty_since, lookup_failed: None }),
            listeners: Mutex::new(Vec::new()),
        }))
    }

    fn members(&self) -> std::sync::MutexGuard<'_, Members> {
        self.members.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the group follows DNS.
    pub fn discovers(&self) -> bool {
        self.settings.discover == Discover::Dns
    }

    /// The endpoints now.
    pub fn endpoints(&self) -> Vec<Arc<Endpoint>> {
        self.members().endpoints.iter().map(|(_, e)| Arc::clone(e)).collect()
    }

    /// Since when the group has had no endpoint at all.
    pub(crate) fn empty_since(&self) -> Option<Instant> {
        self.members().empty_since
    }

    /// Why the group has no endpoint, in words (`None` while it has one).
    pub(crate) fn why_empty(&self) -> Option<String> {
        let members = self.members();
        if !members.endpoints.is_empty() {
            return None;
        }
        let host = self.host().unwrap_or_default();
        Some(match &members.lookup_failed {
            Some(why) => format!("{}: looking up {host} failed: {why}", self.name),
            None => format!("{}: {host} has no address", self.name),
        })
    }

    /// `notify` is notified whenever an endpoint of the group becomes usable.
    pub(crate) fn notify_when_usable(&self, notify: Arc<Notify>) {
        for endpoint in self.endpoints() {
            endpoint.notify_when_usable(notify.clone());
        }
        let mut listeners = self.listeners.lock().unwrap_or_else(PoisonError::into_inner);
        if !listeners.iter().any(|l| Arc::ptr_eq(l, &notify)) {
            listeners.push(notify);
        }
    }

    fn host(&self) -> Option<String> {
        url::Url::parse(&self.settings.url).ok()?.host_str().map(str::to_owned)
    }

    /// Resolves the host name again and applies what it gives ([`Group::apply`]). A fixed
    /// entry never changes.
    pub(crate) async fn refresh(&self) -> Change {
        if !self.discovers() {
            return Change::default();
        }
        match self.lookup().await {
            Ok(addresses) => self.apply(addresses),
            Err(why) => {
                tracing::warn!(engine = %self.name, why, "looking up the engine's servers failed; keeping the last found");
                self.members().lookup_failed = Some(why);
                Change::default()
            }
        }
    }

    async fn lookup(&self) -> Result<BTreeSet<SocketAddr>, String> {
        let url = url::Url::parse(&self.settings.url).map_err(|e| e.to_string())?;
        let host = url.host_str().ok_or("no host name")?.to_string();
        let port = url.port_or_known_default().ok_or("no port")?;
        let limit = Duration::from_secs(self.settings.connect_timeout_secs);
        let found =
            tokio::time::timeout(limit, tokio::net::lookup_host((host.trim_matches(['[', ']']), port)))
                .await
                .map_err(|_| "timed out".to_string())?
                .map_err(|e| e.to_string())?;
        Ok(found.collect())
    }

    /// Makes `addresses` the group's endpoints: new ones join (unusable until checked), gone
    /// ones leave.
    pub(crate) fn apply(&self, addresses: BTreeSet<SocketAddr>) -> Change {
        let mut change = Change::default();
        let listeners = self.listeners.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let mut members = self.members();
        members.lookup_failed = None;
        members.endpoints.retain(|(address, endpoint)| {
            let kept = address.is_some_and(|a| addresses.contains(&a));
            if !kept {
                change.removed.push(Arc::clone(endpoint));
            }
            kept
        });
        for address in addresses {
            if members.endpoints.iter().any(|(a, _)| *a == Some(address)) {
                continue;
            }
            match self.member(address) {
                Ok(endpoint) => {
                    for listener in &listeners {
                        endpoint.notify_when_usable(listener.clone());
                    }
                    change.added.push(Arc::clone(&endpoint));
                    members.endpoints.push((Some(address), endpoint));
                }
                Err(why) => {
                    tracing::warn!(engine = %self.name, %address, why, "a discovered address is unusable")
                }
            }
        }
        members.endpoints.sort_by_key(|(address, _)| *address);
        members.empty_since = match (members.endpoints.is_empty(), members.empty_since) {
            (false, _) => None,
            (true, Some(since)) => Some(since),
            (true, None) => Some(Instant::now()),
        };
        drop(members);
        for endpoint in &change.added {
            tracing::info!(endpoint = %endpoint.name, "engine server discovered");
        }
        for endpoint in &change.removed {
            tracing::info!(endpoint = %endpoint.name, "engine server gone; its running nodes finish");
        }
        change
    }

    /// The endpoint at `address`: the entry's settings with the address in its URL.
    fn member(&self, address: SocketAddr) -> Result<Arc<Endpoint>, String> {
        let mut url = url::Url::parse(&self.settings.url).map_err(|e| e.to_string())?;
        url.set_ip_host(address.ip()).map_err(|()| "not a host URL".to_string())?;
        url.set_port(Some(address.port())).map_err(|()| "not a host URL".to_string())?;
        let settings = EndpointSettings { url: url.to_string(), ..self.settings.clone() };
        Endpoint::discovered(&format!("{}@{address}", self.name), &settings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::endpoint::Health;
    use crate::pool::Pool;
    use atelier_tools::{Capacity, ToolError};

    fn group(url: &str) -> Arc<Group> {
        let settings: EndpointSettings = serde_json::from_value(serde_json::json!({
            "kind": "cog", "url": url, "discover": "dns", "max_concurrency": 1
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        Group::new("idm", &settings).unwrap_or_else(|e| panic!("{e}"))
    }

    fn addresses(list: &[&str]) -> BTreeSet<SocketAddr> {
        list.iter().map(|a| a.parse().unwrap_or_else(|e| panic!("{a}: {e}"))).collect()
    }

    fn names(endpoints: &[Arc<Endpoint>]) -> Vec<String> {
        endpoints.iter().map(|e| e.name.clone()).collect()
    }

    #[tokio::test]
    async fn addresses_join_once_checked_and_leave_after_their_running_nodes() {
        let group = group("http://models.gpu.svc:5000/base");
        let pool = Pool::new("virtual_tryon", vec![group.clone()]);
        assert!(matches!(pool.capacity(), Capacity::Down { .. }), "nothing resolved yet");
        match pool.acquire().await {
            Err(ToolError::Lost(why)) => assert!(why.contains("idm: models.gpu.svc has no address"), "{why}"),
            other => panic!("{:?}", other.map(|s| s.endpoint.name.clone())),
        }

        let change = group.apply(addresses(&["10.0.0.5:5000", "10.0.0.6:5000"]));
        assert_eq!(names(&change.added), ["idm@10.0.0.5:5000", "idm@10.0.0.6:5000"]);
        assert_eq!(change.added[0].base, "http://10.0.0.5:5000/base", "the entry's URL with the address");
        assert!(matches!(pool.capacity(), Capacity::Down { .. }), "not used before a health check passes");
        change.added[0].set_health(Health::Healthy);
        assert!(matches!(pool.capacity(), Capacity::Slots { total: 1, free: 1 }));
        let running = pool.acquire().await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(running.endpoint.name, "idm@10.0.0.5:5000");

        // The address goes: no new node is sent to it, its running node keeps its slot.
        change.added[1].set_health(Health::Healthy);
        let gone = group.apply(addresses(&["10.0.0.6:5000"]));
        assert_eq!(
            (names(&gone.added), names(&gone.removed)),
            (vec![], vec!["idm@10.0.0.5:5000".to_string()])
        );
        for _ in 0..3 {
            let slot = pool.acquire().await.unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(slot.endpoint.name, "idm@10.0.0.6:5000");
        }
        assert_eq!(running.endpoint.report().busy, 1, "the drained endpoint still runs its node");
        drop(running);

        // The same address back is a new endpoint, checked again.
        let back = group.apply(addresses(&["10.0.0.5:5000", "10.0.0.6:5000"]));
        assert_eq!(names(&back.added), ["idm@10.0.0.5:5000"]);
        assert!(!back.added[0].report().healthy);

        // Nothing resolved: the tool is down since then, and says why.
        group.apply(BTreeSet::new());
        match pool.capacity() {
            Capacity::Down { why, .. } => {
                assert!(why.contains("idm: models.gpu.svc has no address"), "{why}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn a_name_resolves_to_its_addresses_and_a_failed_lookup_keeps_them() {
        let local = group("http://localhost:5000");
        let change = local.refresh().await;
        assert!(!change.added.is_empty(), "localhost resolves");
        assert!(names(&change.added).iter().all(|n| n.starts_with("idm@") && n.ends_with(":5000")));
        assert!(local.refresh().await.added.is_empty(), "nothing new the second time");

        let nowhere = group("http://no-such-host.invalid:5000");
        nowhere.apply(addresses(&["10.0.0.7:5000"]));
        let change = nowhere.refresh().await;
        assert!(change.added.is_empty() && change.removed.is_empty(), "the last addresses are kept");
        assert_eq!(names(&nowhere.endpoints()), ["idm@10.0.0.7:5000"]);
    }
}
