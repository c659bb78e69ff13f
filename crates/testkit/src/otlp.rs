//! An OTLP/HTTP trace collector for tests: it takes what an exporter posts to `/v1/traces`
//! (protobuf bodies, as Atelier sends them) and keeps every span with its resource's
//! attributes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::common::v1::KeyValue;
pub use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;

/// A span as received, and the attributes of the resource that exported it.
#[derive(Debug, Clone)]
pub struct Received {
    pub resource: HashMap<String, String>,
    pub span: Span,
}

impl Received {
    pub fn trace_id(&self) -> String {
        hex(&self.span.trace_id)
    }

    pub fn span_id(&self) -> String {
        hex(&self.span.span_id)
    }

    /// The parent's span id; empty for a root.
    pub fn parent_id(&self) -> String {
        hex(&self.span.parent_span_id)
    }

    /// The span's attributes, each value as text.
    pub fn attributes(&self) -> HashMap<String, String> {
        attributes(&self.span.attributes)
    }
}

/// Every span posted to it since it started. Clones share the spans.
#[derive(Clone, Default)]
pub struct Collector(Arc<Mutex<Vec<Received>>>);

impl Collector {
    /// Listens on a free port of 127.0.0.1; returns the base URL to configure an exporter with
    /// (`/v1/traces` is where it takes spans). Needs a Tokio runtime.
    pub async fn start(&self) -> String {
        let spans = self.0.clone();
        let app = axum::Router::new().route(
            "/v1/traces",
            axum::routing::post(move |headers: axum::http::HeaderMap, body: bytes::Bytes| async move {
                assert_eq!(headers["content-type"], "application/x-protobuf");
                let request = ExportTraceServiceRequest::decode(body).expect("an OTLP protobuf body");
                let mut spans = spans.lock().unwrap();
                for resource_spans in request.resource_spans {
                    let resource =
                        resource_spans.resource.map(|r| attributes(&r.attributes)).unwrap_or_default();
                    for span in resource_spans.scope_spans.into_iter().flat_map(|s| s.spans) {
                        spans.push(Received { resource: resource.clone(), span });
                    }
                }
                axum::http::StatusCode::OK
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        url
    }

    /// The spans received so far, in the order they arrived.
    pub fn spans(&self) -> Vec<Received> {
        self.0.lock().unwrap().clone()
    }
}

/// OTLP attributes as text: strings as they are, numbers and booleans printed.
pub fn attributes(attributes: &[KeyValue]) -> HashMap<String, String> {
    attributes
        .iter()
        .filter_map(|kv| {
            let value = match kv.value.as_ref()?.value.as_ref()? {
                Value::StringValue(s) => s.clone(),
                Value::IntValue(i) => i.to_string(),
                Value::BoolValue(b) => b.to_string(),
                other => format!("{other:?}"),
            };
            Some((kv.key.clone(), value))
        })
        .collect()
}

/// Lower-case hex of an id's bytes, as `traceparent` writes it.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
