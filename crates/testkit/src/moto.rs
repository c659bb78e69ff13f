//! moto's S3-compatible server (`moto_server`, from PyPI's `moto[server]`) started on a free
//! loopback port: for tests, and for trying S3 storage locally.
//!
//! [`MotoServer::start`] returns `None` (after printing why) where moto is not installed,
//! unless `ATELIER_REQUIRE_S3=1` (set by `.ci/run`), where that is a panic: CI must not skip.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running moto server with one bucket; stopped when dropped.
pub struct MotoServer {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
}

impl Drop for MotoServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One raw HTTP/1.1 request without a body; returns the status code.
fn http(port: u16, method: &str, path: &str) -> Option<u16> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    response.split_whitespace().nth(1)?.parse().ok()
}

impl MotoServer {
    /// Starts a server and creates `bucket` in it.
    ///
    /// # Panics
    /// When the server does not answer within 30 s or refuses the bucket, and when moto is
    /// missing while `ATELIER_REQUIRE_S3=1`.
    pub fn start(bucket: &str) -> Option<MotoServer> {
        let required = std::env::var("ATELIER_REQUIRE_S3").is_ok_and(|v| v == "1");
        let skip = |why: String| {
            assert!(!required, "ATELIER_REQUIRE_S3=1 but {why}");
            eprintln!("skipped: {why}; pip install 'moto[server]' to run this test");
        };
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).ok()?;
        let args = ["-H".to_string(), "127.0.0.1".to_string(), "-p".to_string(), port.to_string()];
        // The console script, or the module where the script is not on PATH.
        let spawn = |program: &str, pre: &[&str]| {
            Command::new(program).args(pre).args(&args).stdout(Stdio::null()).stderr(Stdio::null()).spawn()
        };
        let child = match spawn("moto_server", &[]).or_else(|_| spawn("python3", &["-m", "moto.server"])) {
            Ok(child) => child,
            Err(e) => {
                skip(format!("moto_server could not start ({e})"));
                return None;
            }
        };
        let mut server = MotoServer { child, endpoint: format!("http://127.0.0.1:{port}") };
        let deadline = Instant::now() + Duration::from_secs(30);
        while http(port, "GET", "/").is_none() {
            if let Ok(Some(status)) = server.child.try_wait() {
                skip(format!("moto's server exited at start ({status})"));
                return None;
            }
            assert!(Instant::now() < deadline, "moto_server did not answer on port {port} within 30 s");
            std::thread::sleep(Duration::from_millis(100));
        }
        // moto accepts unsigned requests.
        assert_eq!(http(port, "PUT", &format!("/{bucket}")), Some(200), "creating bucket {bucket}");
        Some(server)
    }

    /// Settings for this server (test credentials, path style).
    pub fn settings(&self) -> atelier_blob::S3Settings {
        atelier_blob::S3Settings {
            endpoint: Some(self.endpoint.clone()),
            region: Some("us-east-1".into()),
            access_key_id: Some("test".into()),
            secret_access_key: Some("test".into()),
            path_style: None,
        }
    }
}
