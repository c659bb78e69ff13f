//! A small Server-Sent Events parser (the WHATWG `text/event-stream` format), fed bytes as
//! they arrive.
//!
//! - Lines end with CRLF, LF or CR; a line ending, or a multi-byte UTF-8 character, may be
//!   split across chunks.
//! - A line that starts with `:` is a comment (the server's keep-alive) and is ignored.
//! - `field: value` (one space after the colon is dropped), or `field` alone (empty value).
//! - `data` lines are joined with `\n`; `event` sets the type (`message` when none);
//!   `id` sets the last event id, which lasts across events (ignored when it holds NUL);
//!   `retry` (digits only) sets the reconnection delay in milliseconds; other fields are
//!   ignored.
//! - An empty line dispatches the event; an event without `data` is not dispatched (its `id`
//!   still counts). An event the stream ends in the middle of is dropped.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` type; `message` when none was given.
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// The last event id in force when the event was dispatched.
    pub id: Option<String>,
}

/// The incremental parser: [`SseParser::feed`] each chunk, read the events it completed.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of a line not ended yet.
    line: Vec<u8>,
    /// The previous chunk ended with CR: a LF at the start of the next one belongs to it.
    after_cr: bool,
    /// Whether the first line was seen (a byte order mark before it is dropped).
    started: bool,
    event: String,
    data: Vec<String>,
    has_data: bool,
    last_event_id: Option<String>,
    retry_ms: Option<u64>,
}

impl SseParser {
    /// A parser that starts from `last_event_id` (the id a reconnection resumes after).
    pub fn new(last_event_id: Option<String>) -> Self {
        Self { last_event_id, ..Self::default() }
    }

    /// The last event id seen (or given to [`SseParser::new`]).
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// The latest `retry:` value, in milliseconds.
    pub fn retry_ms(&self) -> Option<u64> {
        self.retry_ms
    }

    /// Parses `chunk`; returns the events it completed, in order.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        let mut rest = chunk;
        if self.after_cr {
            if let Some(after) = rest.strip_prefix(b"\n") {
                rest = after;
            }
            if !chunk.is_empty() {
                self.after_cr = false;
            }
        }
        while let Some(end) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.line.extend_from_slice(&rest[..end]);
            let ending = rest[end];
            rest = &rest[end + 1..];
            if ending == b'\r' {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    // The LF of a CRLF may come in the next chunk.
                    None => self.after_cr = true,
                }
            }
            let line = std::mem::take(&mut self.line);
            if let Some(event) = self.line_done(&line) {
                events.push(event);
            }
        }
        self.line.extend_from_slice(rest);
        events
    }

    fn line_done(&mut self, bytes: &[u8]) -> Option<SseEvent> {
        let mut bytes = bytes;
        if !self.started {
            self.started = true;
            bytes = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes);
        }
        // Lines are split at ASCII bytes only, so a whole line is whole UTF-8 (or invalid).
        let line = String::from_utf8_lossy(bytes);
        if line.is_empty() {
            return self.dispatch();
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        match field {
            "data" => {
                self.data.push(value.to_string());
                self.has_data = true;
            }
            "event" => self.event = value.to_string(),
            "id" if !value.contains('\0') => self.last_event_id = Some(value.to_string()),
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                self.retry_ms = value.parse().ok();
            }
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = std::mem::take(&mut self.event);
        let data = std::mem::take(&mut self.data);
        if !std::mem::take(&mut self.has_data) {
            return None;
        }
        Some(SseEvent {
            event: if event.is_empty() { "message".to_string() } else { event },
            data: data.join("\n"),
            id: self.last_event_id.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(parser: &mut SseParser, chunks: &[&[u8]]) -> Vec<SseEvent> {
        chunks.iter().flat_map(|c| parser.feed(c)).collect()
    }

    fn event(event: &str, data: &str, id: Option<&str>) -> SseEvent {
        SseEvent { event: event.into(), data: data.into(), id: id.map(Into::into) }
    }

    #[test]
    fn reads_events_with_types_ids_and_multi_line_data() {
        let mut parser = SseParser::default();
        let stream = b"event: node\nid: s.r420\ndata: {\"a\":\ndata: 1}\n\n:keep-alive\n\ndata:plain\n\n";
        let events = parser.feed(stream);
        assert_eq!(
            events,
            vec![event("node", "{\"a\":\n1}", Some("s.r420")), event("message", "plain", Some("s.r420"))]
        );
        assert_eq!(parser.last_event_id(), Some("s.r420"), "an id lasts until another one");
    }

    #[test]
    fn comments_and_events_without_data_dispatch_nothing_but_ids_count() {
        let mut parser = SseParser::default();
        assert!(parser.feed(b": a comment\n\n:another\n").is_empty());
        assert!(parser.feed(b"id: 7\nevent: node\n\n").is_empty());
        assert_eq!(parser.last_event_id(), Some("7"));
        // The type of the empty event does not leak into the next one.
        assert_eq!(parser.feed(b"data: x\n\n"), vec![event("message", "x", Some("7"))]);
    }

    #[test]
    fn every_line_ending_and_any_split_of_the_bytes_gives_the_same_events() {
        let text = "\u{feff}event: status\r\nid: end\rdata: caf\u{e9} \u{1f457}\r\ndata:\n\r\ndata: two\n\n";
        let expected =
            vec![event("status", "caf\u{e9} \u{1f457}\n", Some("end")), event("message", "two", Some("end"))];
        let bytes = text.as_bytes();
        assert_eq!(SseParser::default().feed(bytes), expected);
        for split in 0..=bytes.len() {
            let mut parser = SseParser::default();
            assert_eq!(all(&mut parser, &[&bytes[..split], &bytes[split..]]), expected, "split at {split}");
        }
        let mut parser = SseParser::default();
        let one_by_one: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(all(&mut parser, &one_by_one), expected);
    }

    #[test]
    fn a_cr_at_the_end_of_a_chunk_ends_the_line_once() {
        let mut parser = SseParser::default();
        assert!(parser.feed(b"data: a\r").is_empty());
        // The LF that follows belongs to the CR: it is not a second (empty) line.
        assert!(parser.feed(b"\n").is_empty());
        assert_eq!(parser.feed(b"\r\n"), vec![event("message", "a", None)]);
    }

    #[test]
    fn fields_are_read_as_the_format_says() {
        let mut parser = SseParser::new(Some("resume".into()));
        assert_eq!(parser.last_event_id(), Some("resume"));
        let events = parser.feed(b"data\n\nid: bad\0id\ndata:  two spaces\nretry: 2500\nunknown: x\n\n");
        assert_eq!(
            events,
            vec![event("message", "", Some("resume")), event("message", " two spaces", Some("resume"))]
        );
        assert_eq!(parser.retry_ms(), Some(2500));
        parser.feed(b"retry: soon\n\n");
        assert_eq!(parser.retry_ms(), Some(2500), "a retry that is not digits is ignored");
        parser.feed(b"id\n\n");
        assert_eq!(parser.last_event_id(), Some(""), "an empty id resets it");
    }

    #[test]
    fn an_event_cut_off_by_the_end_of_the_stream_is_not_dispatched() {
        let mut parser = SseParser::default();
        assert!(parser.feed(b"event: node\ndata: {\"half\":").is_empty());
        assert!(parser.feed(b" true}\n").is_empty());
    }
}
