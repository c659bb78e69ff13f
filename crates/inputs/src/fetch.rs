//! Fetching image URLs with SSRF protection.

use std::error::Error as StdError;
use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::redirect;
use url::Url;

use crate::{
    check_ip_literal, check_port, check_scheme, forbid_nothing, is_forbidden_ip, Forbid, ImageSource,
    InputError, InputPolicy,
};

const USER_AGENT: &str = concat!("atelier/", env!("CARGO_PKG_VERSION"));
const MAX_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Loads image bytes from an [`ImageSource`] according to an
/// [`InputPolicy`].
///
/// Holds one HTTP client (connection pool, TLS configuration) built at
/// construction; create one `Fetcher` and share it.
#[derive(Clone)]
pub struct Fetcher {
    client: reqwest::Client,
    policy: InputPolicy,
    forbid: Forbid,
}

impl fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fetcher").field("policy", &self.policy).finish_non_exhaustive()
    }
}

impl Fetcher {
    /// Builds a fetcher (and its HTTP client) for `policy`.
    pub fn new(policy: InputPolicy) -> Result<Self, InputError> {
        let forbid: Forbid = if policy.allow_private_addresses { forbid_nothing } else { is_forbidden_ip };
        Self::with_filter(policy, forbid)
    }

    /// Like [`Fetcher::new`] with a custom "is this address forbidden"
    /// predicate, used instead of the one the policy implies.
    pub(crate) fn with_filter(policy: InputPolicy, forbid: Forbid) -> Result<Self, InputError> {
        let max_redirects = policy.max_redirects;
        let redirect_policy = redirect::Policy::custom(move |attempt| {
            // `previous` starts with the original URL, so the first redirect
            // sees a length of 1.
            if attempt.previous().len() > max_redirects {
                return attempt.error(Refusal::TooManyRedirects);
            }
            if let Err(refusal) = check_target(attempt.url(), forbid) {
                return attempt.error(refusal);
            }
            attempt.follow()
        });
        let client = reqwest::Client::builder()
            .no_proxy()
            .dns_resolver(Arc::new(GuardedResolver { forbid }))
            .redirect(redirect_policy)
            .referer(false)
            .timeout(policy.timeout)
            .connect_timeout(policy.timeout.min(MAX_CONNECT_TIMEOUT))
            .user_agent(USER_AGENT)
            .build()
            .map_err(|e| {
                tracing::error!(error = %e, "could not build the HTTP client");
                InputError::Fetch("the HTTP client could not be initialised".into())
            })?;
        Ok(Self { client, policy, forbid })
    }

    /// The policy this fetcher enforces.
    pub fn policy(&self) -> &InputPolicy {
        &self.policy
    }

    /// Returns the bytes of `source`.
    ///
    /// Inline data is checked against [`InputPolicy::max_bytes`]. URLs are
    /// fetched with `GET`: only `http`/`https`, only on allowed ports
    /// ([`crate::is_allowed_port`]), only to permitted addresses
    /// (IP literals checked up front, host names filtered by the client's
    /// resolver, every redirect re-checked), at most
    /// [`InputPolicy::max_redirects`] redirects, within
    /// [`InputPolicy::timeout`] in total, and at most
    /// [`InputPolicy::max_bytes`] of body. A non-2xx response gives
    /// `Fetch("HTTP <status>")`.
    pub async fn load(&self, source: &ImageSource) -> Result<Bytes, InputError> {
        match source {
            ImageSource::Inline(bytes) => {
                self.check_inline(bytes)?;
                Ok(bytes.clone())
            }
            ImageSource::Url(url) => match tokio::time::timeout(self.policy.timeout, self.fetch(url)).await {
                Ok(result) => result,
                Err(_) => Err(InputError::Timeout),
            },
        }
    }

    /// Checks inline bytes against [`InputPolicy::max_bytes`].
    pub fn check_inline(&self, bytes: &[u8]) -> Result<(), InputError> {
        if bytes.len() as u64 > self.policy.max_bytes {
            return Err(InputError::TooLarge { limit: self.policy.max_bytes });
        }
        Ok(())
    }

    async fn fetch(&self, url: &Url) -> Result<Bytes, InputError> {
        check_scheme(url)?;
        // The resolver is not consulted for IP literals: check them here.
        check_ip_literal(url, self.forbid)?;
        check_port(url)?;

        let max = self.policy.max_bytes;
        let mut response = self
            .client
            .get(url.clone())
            .header(reqwest::header::ACCEPT, "image/*,*/*;q=0.8")
            .send()
            .await
            .map_err(|e| classify(&e))?;

        let status = response.status();
        if !status.is_success() {
            return Err(InputError::Fetch(format!("HTTP {}", status.as_u16())));
        }
        let declared = response.content_length();
        if declared.is_some_and(|len| len > max) {
            return Err(InputError::TooLarge { limit: max });
        }
        // Pre-allocate for a declared length (already known to be <= max).
        let capacity = declared.and_then(|len| usize::try_from(len).ok()).unwrap_or(0);
        let mut body = BytesMut::with_capacity(capacity);
        while let Some(chunk) = response.chunk().await.map_err(|e| classify(&e))? {
            if (body.len() as u64).saturating_add(chunk.len() as u64) > max {
                return Err(InputError::TooLarge { limit: max });
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body.freeze())
    }
}

/// Requests the service sends on its own (webhook deliveries), under the same address policy
/// as [`Fetcher`]: only `http`/`https` on allowed ports, only to permitted addresses (IP
/// literals checked up front, host names filtered by the client's resolver at connect time,
/// so a name that resolves elsewhere since it was checked is caught), no redirect followed,
/// and a time limit on the whole request.
#[derive(Clone)]
pub struct Sender {
    client: reqwest::Client,
    forbid: Forbid,
}

impl fmt::Debug for Sender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sender").finish_non_exhaustive()
    }
}

/// How a request sent by [`Sender`] ended, when the receiver answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
}

impl Sender {
    /// A sender for `policy`'s addresses, giving each request `timeout` in all.
    pub fn new(policy: &InputPolicy, timeout: Duration, user_agent: &str) -> Result<Self, InputError> {
        let forbid: Forbid = if policy.allow_private_addresses { forbid_nothing } else { is_forbidden_ip };
        let client = reqwest::Client::builder()
            .no_proxy()
            .dns_resolver(Arc::new(GuardedResolver { forbid }))
            .redirect(redirect::Policy::none())
            .referer(false)
            .timeout(timeout)
            .connect_timeout(timeout.min(MAX_CONNECT_TIMEOUT))
            .user_agent(user_agent)
            .build()
            .map_err(|e| {
                tracing::error!(error = %e, "could not build the HTTP client");
                InputError::Fetch("the HTTP client could not be initialised".into())
            })?;
        Ok(Self { client, forbid })
    }

    /// POSTs `body` (JSON) to `url` with `headers`; the receiver's status (any, redirects
    /// included: they are not followed), or why no answer came. The answer's body is read
    /// (up to 64 KiB) and dropped, so that the connection can be reused.
    pub async fn post_json(
        &self,
        url: &Url,
        headers: &[(&str, String)],
        body: Bytes,
    ) -> Result<Answer, InputError> {
        check_scheme(url)?;
        check_ip_literal(url, self.forbid)?;
        check_port(url)?;
        let mut request =
            self.client.post(url.clone()).header(reqwest::header::CONTENT_TYPE, "application/json");
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let mut response = request.body(body).send().await.map_err(|e| classify(&e))?;
        let status = response.status().as_u16();
        let mut read = 0usize;
        while let Ok(Some(chunk)) = response.chunk().await {
            read += chunk.len();
            if read > 64 * 1024 {
                break;
            }
        }
        Ok(Answer { status })
    }
}

/// Scheme, IP-literal and port check of a redirect target.
fn check_target(url: &Url, forbid: Forbid) -> Result<(), Refusal> {
    match check_scheme(url).and_then(|()| check_ip_literal(url, forbid)).and_then(|_| check_port(url)) {
        Ok(()) => Ok(()),
        Err(InputError::UnsupportedScheme(scheme)) => Err(Refusal::Scheme(scheme)),
        Err(InputError::ForbiddenAddress(host)) => Err(Refusal::Forbidden(host)),
        Err(InputError::ForbiddenPort(port)) => Err(Refusal::Port(port)),
        Err(_) => Err(Refusal::Forbidden(url.host_str().unwrap_or("(none)").to_string())),
    }
}

/// Our reasons for stopping a request, carried through reqwest's error
/// chain from the resolver and the redirect policy.
#[derive(Debug)]
enum Refusal {
    Forbidden(String),
    Scheme(String),
    Port(u16),
    TooManyRedirects,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Forbidden(host) => write!(f, "address of '{host}' is forbidden"),
            Refusal::Scheme(scheme) => write!(f, "scheme '{scheme}' is not allowed"),
            Refusal::Port(port) => write!(f, "port {port} is not allowed"),
            Refusal::TooManyRedirects => f.write_str("too many redirects"),
        }
    }
}

impl StdError for Refusal {}

/// Maps a reqwest error to an [`InputError`] without leaking internals.
fn classify(err: &reqwest::Error) -> InputError {
    let mut source: Option<&(dyn StdError + 'static)> = Some(err);
    while let Some(e) = source {
        if let Some(refusal) = e.downcast_ref::<Refusal>() {
            return match refusal {
                Refusal::Forbidden(host) => InputError::ForbiddenAddress(host.clone()),
                Refusal::Scheme(scheme) => InputError::UnsupportedScheme(scheme.clone()),
                Refusal::Port(port) => InputError::ForbiddenPort(*port),
                Refusal::TooManyRedirects => InputError::TooManyRedirects,
            };
        }
        source = e.source();
    }
    tracing::debug!(error = ?err, "image fetch failed");
    if err.is_timeout() {
        InputError::Timeout
    } else if err.is_redirect() {
        InputError::Fetch("invalid redirect".into())
    } else if err.is_connect() {
        InputError::Fetch("connection failed".into())
    } else if err.is_body() || err.is_decode() {
        InputError::Fetch("error while reading the response".into())
    } else {
        InputError::Fetch("request failed".into())
    }
}

/// DNS resolver that drops forbidden addresses, so that connections only go
/// to addresses that passed the check.
struct GuardedResolver {
    forbid: Forbid,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let forbid = self.forbid;
        let host = name.as_str().to_string();
        Box::pin(async move {
            let resolved: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let total = resolved.len();
            let allowed: Vec<SocketAddr> = resolved.into_iter().filter(|addr| !forbid(addr.ip())).collect();
            if allowed.is_empty() {
                if total == 0 {
                    return Err(format!("no addresses found for {host}").into());
                }
                tracing::info!(host = %host, "refusing host that resolves only to forbidden addresses");
                return Err(Box::new(Refusal::Forbidden(host)) as _);
            }
            if allowed.len() < total {
                tracing::info!(host = %host, "dropped forbidden addresses from DNS answer");
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};
    use std::sync::atomic::{AtomicUsize, Ordering};

    use axum::body::Body;
    use axum::extract::{Path, State};
    use axum::http::{header, StatusCode};
    use axum::response::{IntoResponse, Response};
    use axum::routing::get;
    use axum::Router;

    use super::*;

    #[derive(Clone)]
    struct Server {
        addr: SocketAddr,
        hits: Arc<AtomicUsize>,
    }

    impl Server {
        fn url(&self, path: &str) -> Url {
            Url::parse(&format!("http://{}{path}", self.addr)).unwrap()
        }
        fn hits(&self) -> usize {
            self.hits.load(Ordering::SeqCst)
        }
    }

    #[derive(Clone)]
    struct AppState {
        hits: Arc<AtomicUsize>,
        /// Where `/elsewhere` redirects to.
        elsewhere: Arc<String>,
    }

    const IMAGE: &[u8] = b"\x89PNG\r\n\x1a\nnot really a png";

    async fn redirect_chain(Path(n): Path<u32>) -> Response {
        if n == 0 {
            return IMAGE.into_response();
        }
        (StatusCode::FOUND, [(header::LOCATION, format!("/redirect/{}", n - 1))]).into_response()
    }

    async fn redirect_elsewhere(State(state): State<AppState>) -> Response {
        (StatusCode::FOUND, [(header::LOCATION, state.elsewhere.as_str().to_string())]).into_response()
    }

    /// `n` redirects on this server, then one to `elsewhere`.
    async fn chain_elsewhere(State(state): State<AppState>, Path(n): Path<u32>) -> Response {
        let next = if n == 0 { state.elsewhere.as_str().to_string() } else { format!("/chain/{}", n - 1) };
        (StatusCode::FOUND, [(header::LOCATION, next)]).into_response()
    }

    /// 64 KiB chunks for ever.
    async fn endless_chunked() -> Response {
        let chunks =
            futures::stream::repeat_with(|| Ok::<_, std::io::Error>(Bytes::from(vec![7u8; 64 * 1024])));
        Body::from_stream(chunks).into_response()
    }

    async fn big() -> Response {
        vec![7u8; 5000].into_response()
    }

    async fn big_chunked() -> Response {
        let chunks = futures::stream::unfold(0u32, |i| async move {
            if i == 5 {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
            Some((Ok::<_, std::io::Error>(Bytes::from(vec![7u8; 1000])), i + 1))
        });
        Body::from_stream(chunks).into_response()
    }

    async fn slow() -> Response {
        tokio::time::sleep(Duration::from_secs(3)).await;
        IMAGE.into_response()
    }

    async fn slow_body() -> Response {
        let chunks = futures::stream::unfold(0u32, |i| async move {
            if i > 0 {
                tokio::time::sleep(Duration::from_secs(3)).await;
            }
            if i == 2 {
                return None;
            }
            Some((Ok::<_, std::io::Error>(Bytes::from_static(b"chunk")), i + 1))
        });
        Body::from_stream(chunks).into_response()
    }

    /// Serves the test routes on `ip:0`, counting every request.
    async fn serve_on(ip: IpAddr, elsewhere: String) -> Option<Server> {
        let listener = tokio::net::TcpListener::bind((ip, 0)).await.ok()?;
        let addr = listener.local_addr().ok()?;
        let hits = Arc::new(AtomicUsize::new(0));
        let state = AppState { hits: hits.clone(), elsewhere: Arc::new(elsewhere) };
        let app = Router::new()
            .route("/img", get(|| async { IMAGE }))
            .route("/404", get(|| async { StatusCode::NOT_FOUND }))
            .route("/503", get(|| async { StatusCode::SERVICE_UNAVAILABLE }))
            .route("/big", get(big))
            .route("/big-chunked", get(big_chunked))
            .route("/redirect/{n}", get(redirect_chain))
            .route("/elsewhere", get(redirect_elsewhere))
            .route("/chain/{n}", get(chain_elsewhere))
            .route("/endless", get(endless_chunked))
            .route("/slow", get(slow))
            .route("/slow-body", get(slow_body))
            .layer(axum::middleware::from_fn_with_state(
                state.clone(),
                |State(state): State<AppState>,
                 request: axum::extract::Request,
                 next: axum::middleware::Next| async move {
                    state.hits.fetch_add(1, Ordering::SeqCst);
                    next.run(request).await
                },
            ))
            .with_state(state);
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Some(Server { addr, hits })
    }

    async fn serve(elsewhere: String) -> Server {
        serve_on(IpAddr::V4(Ipv4Addr::LOCALHOST), elsewhere).await.unwrap()
    }

    fn lax() -> InputPolicy {
        InputPolicy { allow_private_addresses: true, ..InputPolicy::default() }
    }

    fn only_127_0_0_2(ip: IpAddr) -> bool {
        ip == IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2))
    }

    fn loopback(ip: IpAddr) -> bool {
        ip.is_loopback()
    }

    #[tokio::test]
    async fn default_policy_refuses_loopback_without_sending() {
        let server = serve(String::new()).await;
        let fetcher = Fetcher::new(InputPolicy::default()).unwrap();
        let err = fetcher.load(&ImageSource::Url(server.url("/img"))).await.unwrap_err();
        assert_eq!(err, InputError::ForbiddenAddress("127.0.0.1".into()));
        assert!(!err.is_retryable());
        assert_eq!(server.hits(), 0);

        // Same via a host name: the resolver drops 127.0.0.1 / ::1.
        let by_name = Url::parse(&format!("http://localhost:{}/img", server.addr.port())).unwrap();
        let err = fetcher.load(&ImageSource::Url(by_name)).await.unwrap_err();
        assert_eq!(err, InputError::ForbiddenAddress("localhost".into()));
        assert_eq!(server.hits(), 0);
    }

    #[tokio::test]
    async fn fetches_body_when_private_allowed() {
        let server = serve(String::new()).await;
        let fetcher = Fetcher::new(lax()).unwrap();
        let bytes = fetcher.load(&ImageSource::Url(server.url("/img"))).await.unwrap();
        assert_eq!(bytes, IMAGE);
        assert_eq!(server.hits(), 1);
    }

    #[tokio::test]
    async fn http_errors_map_to_fetch() {
        let server = serve(String::new()).await;
        let fetcher = Fetcher::new(lax()).unwrap();
        let not_found = fetcher.load(&ImageSource::Url(server.url("/404"))).await.unwrap_err();
        assert_eq!(not_found, InputError::Fetch("HTTP 404".into()));
        assert!(!not_found.is_retryable());

        let unavailable = fetcher.load(&ImageSource::Url(server.url("/503"))).await.unwrap_err();
        assert_eq!(unavailable, InputError::Fetch("HTTP 503".into()));
        assert!(unavailable.is_retryable());
    }

    #[tokio::test]
    async fn connection_refused_is_retryable_fetch_error() {
        // Bind then drop to get a port nobody listens on.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let fetcher = Fetcher::new(lax()).unwrap();
        let url = Url::parse(&format!("http://127.0.0.1:{port}/img")).unwrap();
        let err = fetcher.load(&ImageSource::Url(url)).await.unwrap_err();
        assert!(matches!(err, InputError::Fetch(_)), "{err:?}");
        assert!(err.is_retryable());
    }

    #[tokio::test]
    async fn oversized_bodies_are_refused() {
        let server = serve(String::new()).await;
        let fetcher = Fetcher::new(InputPolicy { max_bytes: 1000, ..lax() }).unwrap();
        for path in ["/big", "/big-chunked"] {
            let err = fetcher.load(&ImageSource::Url(server.url(path))).await.unwrap_err();
            assert_eq!(err, InputError::TooLarge { limit: 1000 }, "{path}");
            assert!(!err.is_retryable());
        }
        // Exactly at the limit is fine.
        let fetcher = Fetcher::new(InputPolicy { max_bytes: 5000, ..lax() }).unwrap();
        for path in ["/big", "/big-chunked"] {
            let bytes = fetcher.load(&ImageSource::Url(server.url(path))).await.unwrap();
            assert_eq!(bytes.len(), 5000, "{path}");
        }
    }

    #[tokio::test]
    async fn redirects_are_limited() {
        let server = serve(String::new()).await;
        let fetcher = Fetcher::new(lax()).unwrap();
        assert_eq!(fetcher.policy().max_redirects, 3);

        let err = fetcher.load(&ImageSource::Url(server.url("/redirect/4"))).await.unwrap_err();
        assert_eq!(err, InputError::TooManyRedirects);
        assert!(!err.is_retryable());

        let bytes = fetcher.load(&ImageSource::Url(server.url("/redirect/3"))).await.unwrap();
        assert_eq!(bytes, IMAGE);
        let bytes = fetcher.load(&ImageSource::Url(server.url("/redirect/2"))).await.unwrap();
        assert_eq!(bytes, IMAGE);

        let no_redirects = Fetcher::new(InputPolicy { max_redirects: 0, ..lax() }).unwrap();
        assert_eq!(
            no_redirects.load(&ImageSource::Url(server.url("/redirect/1"))).await,
            Err(InputError::TooManyRedirects)
        );
    }

    #[tokio::test]
    async fn slow_server_times_out() {
        let server = serve(String::new()).await;
        let fetcher = Fetcher::new(InputPolicy { timeout: Duration::from_millis(300), ..lax() }).unwrap();
        for path in ["/slow", "/slow-body"] {
            let started = std::time::Instant::now();
            let err = fetcher.load(&ImageSource::Url(server.url(path))).await.unwrap_err();
            assert_eq!(err, InputError::Timeout, "{path}");
            assert!(err.is_retryable());
            assert!(started.elapsed() < Duration::from_secs(2), "{path}");
        }
    }

    #[tokio::test]
    async fn redirect_to_forbidden_ip_literal_is_refused() {
        // The target: a server on 127.0.0.2 (where the platform allows it).
        let target = serve_on(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)), String::new()).await;
        let target_port = target.as_ref().map_or(9, |t| t.addr.port());
        let origin = serve(format!("http://127.0.0.2:{target_port}/img")).await;

        let fetcher = Fetcher::with_filter(lax(), only_127_0_0_2).unwrap();
        // The origin itself is allowed...
        assert_eq!(fetcher.load(&ImageSource::Url(origin.url("/img"))).await.unwrap(), IMAGE);
        // ...but its redirect to the forbidden literal is not followed.
        let err = fetcher.load(&ImageSource::Url(origin.url("/elsewhere"))).await.unwrap_err();
        assert_eq!(err, InputError::ForbiddenAddress("127.0.0.2".into()));
        assert_eq!(origin.hits(), 2);
        if let Some(target) = target {
            assert_eq!(target.hits(), 0);
        }
    }

    #[tokio::test]
    async fn redirect_to_unsupported_scheme_is_refused() {
        let origin = serve("ftp://127.0.0.1/x".into()).await;
        let fetcher = Fetcher::new(lax()).unwrap();
        let err = fetcher.load(&ImageSource::Url(origin.url("/elsewhere"))).await.unwrap_err();
        assert_eq!(err, InputError::UnsupportedScheme("ftp".into()));
    }

    #[tokio::test]
    async fn resolver_drops_forbidden_addresses() {
        let server = serve(String::new()).await;
        let port = server.addr.port();
        let by_name = ImageSource::Url(Url::parse(&format!("http://localhost:{port}/img")).unwrap());

        // localhost resolves only to loopback addresses: nothing remains.
        let strict = Fetcher::with_filter(lax(), loopback).unwrap();
        let err = strict.load(&by_name).await.unwrap_err();
        assert_eq!(err, InputError::ForbiddenAddress("localhost".into()));
        assert_eq!(server.hits(), 0);

        // A predicate that does not cover localhost lets it through.
        let lenient = Fetcher::with_filter(lax(), only_127_0_0_2).unwrap();
        assert_eq!(lenient.load(&by_name).await.unwrap(), IMAGE);
        assert_eq!(server.hits(), 1);
    }

    #[tokio::test]
    async fn redirect_to_forbidden_host_name_goes_through_resolver() {
        // Origin on 127.0.0.2, redirecting to localhost (127.0.0.1 / ::1).
        let target = serve(String::new()).await;
        let Some(origin) = serve_on(
            IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)),
            format!("http://localhost:{}/img", target.addr.port()),
        )
        .await
        else {
            // Platform without 127.0.0.0/8 loopback; nothing to test.
            return;
        };
        fn forbid_localhost(ip: IpAddr) -> bool {
            ip.is_loopback() && ip != IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2))
        }
        let fetcher = Fetcher::with_filter(lax(), forbid_localhost).unwrap();
        let err = fetcher.load(&ImageSource::Url(origin.url("/elsewhere"))).await.unwrap_err();
        assert_eq!(err, InputError::ForbiddenAddress("localhost".into()));
        assert_eq!(origin.hits(), 1);
        assert_eq!(target.hits(), 0);
    }

    /// A bare TCP server on 127.0.0.1 for responses no HTTP library would
    /// send: it reads each request's head, then plays `script` on the socket.
    /// Returns its address and a count of the connections it accepted.
    async fn raw_server<F, Fut>(script: F) -> (SocketAddr, Arc<AtomicUsize>)
    where
        F: Fn(tokio::net::TcpStream) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        use tokio::io::AsyncReadExt as _;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let hits = Arc::new(AtomicUsize::new(0));
        let counted = hits.clone();
        let script = Arc::new(script);
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
                let script = script.clone();
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match socket.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    script(socket).await;
                });
            }
        });
        (addr, hits)
    }

    /// Writes `head`, then `body_byte` `count` times (`None`: for ever), one
    /// write each, sleeping `every` between writes.
    async fn play(
        mut socket: tokio::net::TcpStream,
        head: &'static [u8],
        piece: &'static [u8],
        count: Option<usize>,
        every: Duration,
    ) {
        use tokio::io::AsyncWriteExt as _;
        if socket.write_all(head).await.is_err() {
            return;
        }
        let mut written = 0;
        while count.is_none_or(|c| written < c) {
            if socket.write_all(piece).await.is_err() {
                return;
            }
            written += 1;
            if !every.is_zero() {
                tokio::time::sleep(every).await;
            }
        }
        let _ = socket.shutdown().await;
    }

    fn raw_url(addr: SocketAddr) -> ImageSource {
        ImageSource::Url(Url::parse(&format!("http://{addr}/img")).unwrap())
    }

    #[tokio::test]
    async fn lying_content_lengths_never_yield_more_than_the_cap() {
        let max = 1000;
        let fetcher =
            Fetcher::new(InputPolicy { max_bytes: max, timeout: Duration::from_secs(5), ..lax() }).unwrap();
        let started = std::time::Instant::now();

        // Declares 10 bytes, sends 5000: exactly the declared 10 are read.
        let (addr, _) = raw_server(|s| {
            play(s, b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", &[7u8; 1000], Some(5), Duration::ZERO)
        })
        .await;
        assert_eq!(fetcher.load(&raw_url(addr)).await.unwrap(), &[7u8; 10][..]);

        // Declares 999 (under the cap), then streams for ever: only 999 are read.
        let (addr, _) = raw_server(|s| {
            play(s, b"HTTP/1.1 200 OK\r\nContent-Length: 999\r\n\r\n", &[7u8; 4096], None, Duration::ZERO)
        })
        .await;
        assert_eq!(fetcher.load(&raw_url(addr)).await.unwrap().len(), 999);

        // Declares more than it sends, then closes: a (retryable) read error, not a short image.
        let (addr, _) = raw_server(|s| {
            play(s, b"HTTP/1.1 200 OK\r\nContent-Length: 800\r\n\r\n", &[7u8; 10], Some(1), Duration::ZERO)
        })
        .await;
        let err = fetcher.load(&raw_url(addr)).await.unwrap_err();
        assert!(matches!(err, InputError::Fetch(_)) && err.is_retryable(), "{err:?}");

        // Declares a terabyte: refused before the body is read.
        let (addr, _) = raw_server(|s| {
            play(
                s,
                b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000000\r\n\r\n",
                &[7u8; 4096],
                None,
                Duration::ZERO,
            )
        })
        .await;
        assert_eq!(fetcher.load(&raw_url(addr)).await, Err(InputError::TooLarge { limit: max }));
        // Declares more than 64 bits hold: a malformed response.
        let (addr, _) = raw_server(|s| {
            play(
                s,
                b"HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551616\r\n\r\n",
                &[7u8; 4096],
                None,
                Duration::ZERO,
            )
        })
        .await;
        assert!(matches!(fetcher.load(&raw_url(addr)).await, Err(InputError::Fetch(_))));

        // Two different lengths: a malformed response.
        let (addr, _) = raw_server(|s| {
            play(
                s,
                b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\nContent-Length: 5000\r\n\r\n",
                &[7u8; 1000],
                Some(5),
                Duration::ZERO,
            )
        })
        .await;
        assert!(matches!(fetcher.load(&raw_url(addr)).await, Err(InputError::Fetch(_))));

        // A small length beside chunked encoding, chunks for ever: chunked wins, and the cap stops it.
        let (addr, _) = raw_server(|s| {
            play(
                s,
                b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\nTransfer-Encoding: chunked\r\n\r\n",
                b"100\r\n________________________________________________________________\
                  ________________________________________________________________\
                  ________________________________________________________________\
                  ________________________________________________________________\r\n",
                None,
                Duration::ZERO,
            )
        })
        .await;
        assert_eq!(fetcher.load(&raw_url(addr)).await, Err(InputError::TooLarge { limit: max }));

        // No length at all, the body read until the server closes, which it never does.
        let (addr, _) = raw_server(|s| {
            play(s, b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", &[7u8; 4096], None, Duration::ZERO)
        })
        .await;
        assert_eq!(fetcher.load(&raw_url(addr)).await, Err(InputError::TooLarge { limit: max }));
        assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());
    }

    #[tokio::test]
    async fn an_endless_chunked_body_stops_at_the_cap() {
        let server = serve(String::new()).await;
        let max = 1024 * 1024;
        let fetcher = Fetcher::new(InputPolicy { max_bytes: max, ..lax() }).unwrap();
        let started = std::time::Instant::now();
        let err = fetcher.load(&ImageSource::Url(server.url("/endless"))).await.unwrap_err();
        assert_eq!(err, InputError::TooLarge { limit: max });
        assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
        assert_eq!(server.hits(), 1);
    }

    #[tokio::test]
    async fn a_source_trickling_one_byte_a_second_hits_the_total_timeout() {
        // Each byte arrives long before any idle timeout would fire: only a
        // bound on the whole transfer stops these.
        let timeout = Duration::from_millis(2500);
        let fetcher = Fetcher::new(InputPolicy { timeout, ..lax() }).unwrap();
        let second = Duration::from_secs(1);
        let (chunked, _) = raw_server(move |s| {
            play(s, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", b"1\r\nx\r\n", None, second)
        })
        .await;
        let (declared, _) = raw_server(move |s| {
            play(s, b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", b"x", None, second)
        })
        .await;
        // The status line and headers themselves, a byte every 200 ms.
        let (headers, _) = raw_server(move |s| {
            play(s, b"HTTP/1.1 200 OK\r\nX-Slow: ", b"x", None, Duration::from_millis(200))
        })
        .await;
        let started = std::time::Instant::now();
        let results = futures::future::join3(
            fetcher.load(&raw_url(chunked)),
            fetcher.load(&raw_url(declared)),
            fetcher.load(&raw_url(headers)),
        )
        .await;
        let took = started.elapsed();
        assert_eq!(results.0, Err(InputError::Timeout));
        assert_eq!(results.1, Err(InputError::Timeout));
        assert_eq!(results.2, Err(InputError::Timeout));
        assert!(took >= timeout && took < timeout + Duration::from_millis(1500), "{took:?}");
    }

    #[tokio::test]
    async fn redirect_chains_to_any_spelling_of_a_forbidden_address_are_refused() {
        fn forbid_127_0_0_2(ip: IpAddr) -> bool {
            ip.to_canonical() == IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2))
        }
        let Some(target) = serve_on(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)), String::new()).await else {
            // Platform without 127.0.0.0/8 loopback; nothing to test.
            return;
        };
        let p = target.addr.port();
        let fetcher = Fetcher::with_filter(lax(), forbid_127_0_0_2).unwrap();
        for spelling in [
            format!("http://127.0.0.2:{p}/img"),
            format!("http://2130706434:{p}/img"),
            format!("http://0x7f000002:{p}/img"),
            format!("http://0x7f.0.0.2:{p}/img"),
            format!("http://0177.0.0.02:{p}/img"),
            format!("http://127.2:{p}/img"),
            format!("http://127.0.0.2.:{p}/img"),
            format!("http://user:pass@127.0.0.2:{p}/img"),
            format!("http://[::ffff:127.0.0.2]:{p}/img"),
            format!("http://[::ffff:7f00:2]:{p}/img"),
        ] {
            let origin = serve(spelling.clone()).await;
            // Two hops on the origin, then the forbidden one.
            let err = fetcher.load(&ImageSource::Url(origin.url("/chain/2"))).await.unwrap_err();
            assert!(matches!(err, InputError::ForbiddenAddress(_)), "{spelling}: {err:?}");
            assert_eq!(origin.hits(), 3, "{spelling}");
        }
        assert_eq!(target.hits(), 0, "the forbidden address was never contacted");
        eprintln!(
            "redirect chains: 10 spellings of 127.0.0.2 refused after two hops, target contacted 0 times"
        );
        // The target itself is reachable when allowed: the refusals above were the policy's.
        let open = Fetcher::new(lax()).unwrap();
        assert_eq!(open.load(&ImageSource::Url(target.url("/img"))).await.unwrap(), IMAGE);
    }

    #[tokio::test]
    async fn ports_outside_the_allow_list_are_refused_directly_and_in_redirects() {
        let fetcher = Fetcher::new(lax()).unwrap();
        let direct = Url::parse("http://127.0.0.1:25/x").unwrap();
        assert_eq!(fetcher.load(&ImageSource::Url(direct)).await, Err(InputError::ForbiddenPort(25)));
        let origin = serve("http://127.0.0.1:6667/x".into()).await;
        let err = fetcher.load(&ImageSource::Url(origin.url("/chain/1"))).await.unwrap_err();
        assert_eq!(err, InputError::ForbiddenPort(6667));
        assert!(!err.is_retryable());
    }

    #[tokio::test]
    async fn inline_sources_are_size_checked() {
        let fetcher = Fetcher::new(InputPolicy { max_bytes: 4, ..InputPolicy::default() }).unwrap();
        let ok = ImageSource::Inline(Bytes::from_static(b"1234"));
        assert_eq!(fetcher.load(&ok).await.unwrap(), &b"1234"[..]);
        let big = ImageSource::Inline(Bytes::from_static(b"12345"));
        assert_eq!(fetcher.load(&big).await, Err(InputError::TooLarge { limit: 4 }));
        assert_eq!(fetcher.check_inline(b"1234"), Ok(()));
        assert_eq!(fetcher.check_inline(b"12345"), Err(InputError::TooLarge { limit: 4 }));
    }

    #[tokio::test]
    async fn unsupported_schemes_are_refused_by_load() {
        let fetcher = Fetcher::new(lax()).unwrap();
        let url = Url::parse("file:///etc/passwd").unwrap();
        assert_eq!(
            fetcher.load(&ImageSource::Url(url)).await,
            Err(InputError::UnsupportedScheme("file".into()))
        );
    }
}
