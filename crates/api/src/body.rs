//! A run's long `input` strings held once, behind placeholders.
//!
//! Parsing a body into JSON values copies every string out of it, so a run sent with a
//! 12 MiB inline image held 24 MiB until it was stored. [`RunBody`] parses the body the same
//! way except for the direct string values of its `input` object that are worth keeping
//! aside (longer than [`KEPT_INLINE_BYTES`], not blank) and need no unescaping: each stays a
//! slice of the body ([`BodySlices`]) and the value holds a placeholder naming it.
//! [`BodySlices::lift`] does the same for a request parsed otherwise (a v2 body, the
//! console's), taking the strings out of their values. The run is compiled on the
//! placeholders; `crate::inputs` then checks and stores the images from what they stand for
//! and puts every other placeholder back as its string. The idempotency fingerprint hashes
//! what a placeholder stands for. A placeholder carries a random token drawn for the
//! request, so no value a client sends can be taken for one.

use std::fmt;

use atelier_core::ids;
use axum::body::Bytes;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Inline images up to this length (as sent) stay in the run's row: a status read returns
/// string parameters of this length anyway (`STATUS_PARAM_MAX_BYTES`), and a node reads them
/// without a round trip to the object store. Longer strings are held as slices of the body
/// here, and moved to the object store at acceptance (`crate::inputs`).
pub const KEPT_INLINE_BYTES: usize = atelier_store::STATUS_PARAM_MAX_BYTES as usize;

const PLACEHOLDER_PREFIX: &str = "atelier-body:";

/// Whether a string value of `input` is held aside behind a placeholder: one long enough to
/// be moved to the object store if it is an image, and not blank (a blank value must read
/// as blank to the checks that run on placeholders).
fn kept_aside(text: &str) -> bool {
    text.len() > KEPT_INLINE_BYTES && !text.trim().is_empty()
}

/// The strings that placeholders in a request's values stand for: slices of its body, or
/// strings taken out of its values.
#[derive(Debug, Clone)]
pub struct BodySlices {
    /// The body the slices are cut from (empty when there is none).
    body: Bytes,
    /// `atelier-body:<random>:`; a placeholder is this and the string's index.
    prefix: String,
    values: Vec<Bytes>,
}

impl Default for BodySlices {
    /// Slices of no body, for the strings [`BodySlices::lift`] takes.
    fn default() -> Self {
        Self::new(Bytes::new())
    }
}

impl BodySlices {
    fn new(body: Bytes) -> Self {
        Self { body, prefix: format!("{PLACEHOLDER_PREFIX}{}:", ids::generation_id()), values: Vec::new() }
    }

    /// The bytes `value` stands for, when it is one of this request's placeholders.
    pub fn get(&self, value: &str) -> Option<Bytes> {
        if self.values.is_empty() {
            return None;
        }
        let index: usize = value.strip_prefix(self.prefix.as_str())?.parse().ok()?;
        self.values.get(index).cloned()
    }

    /// Takes each long string value of `input` out, leaving a placeholder in its place, as
    /// [`RunBody`] leaves for the strings it keeps in the body.
    pub fn lift(&mut self, input: &mut Map<String, Value>) {
        for value in input.values_mut() {
            let Value::String(text) = value else { continue };
            // A placeholder is short: it is never taken again.
            if kept_aside(text) {
                self.values.push(Bytes::from(std::mem::take(text).into_bytes()));
                *text = self.placeholder();
            }
        }
    }

    /// The placeholder of the last string kept.
    fn placeholder(&self) -> String {
        format!("{}{}", self.prefix, self.values.len() - 1)
    }

    /// `value` as sent: the string a placeholder stands for, or `value` itself.
    pub fn resolve(&self, value: &mut Value) {
        let Value::String(text) = value else { return };
        if let Some(bytes) = self.get(text) {
            // The slice was a JSON string's unescaped contents, so it is UTF-8.
            *text = String::from_utf8_lossy(&bytes).into_owned();
        }
    }

    fn keep(&mut self, text: &str) -> Option<String> {
        let start = (text.as_ptr() as usize).checked_sub(self.body.as_ptr() as usize)?;
        let end = start.checked_add(text.len())?;
        if end > self.body.len() {
            return None;
        }
        self.values.push(self.body.slice(start..end));
        Some(self.placeholder())
    }
}

/// A v3 run body: its fields as JSON values, long `input` strings kept as [`BodySlices`].
#[derive(Debug)]
pub struct RunBody {
    pub fields: Map<String, Value>,
    pub slices: BodySlices,
}

impl RunBody {
    /// Parses `body` (a JSON object, or `None` for anything else, with the parser's error).
    pub fn parse(body: Bytes) -> Result<Option<Self>, serde_json::Error> {
        let mut slices = BodySlices::new(body.clone());
        let mut deserializer = serde_json::Deserializer::from_slice(&body);
        let fields = Top { slices: &mut slices }.deserialize(&mut deserializer)?;
        deserializer.end()?;
        Ok(fields.map(|fields| Self { fields, slices }))
    }
}

/// The top level: an object whose `input` is read by [`Input`]; `None` for a non-object.
struct Top<'s> {
    slices: &'s mut BodySlices,
}

impl<'de> DeserializeSeed<'de> for Top<'_> {
    type Value = Option<Map<String, Value>>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Top<'_> {
    type Value = Option<Map<String, Value>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut fields = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = if key == "input" {
                map.next_value_seed(Input { slices: &mut *self.slices })?
            } else {
                map.next_value::<Value>()?
            };
            fields.insert(key, value);
        }
        Ok(Some(fields))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// The visits of a visitor whose value is a `Value`, for everything but maps: as `Value`'s own
/// parse reads them.
macro_rules! plain_values {
    () => {
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Value, A::Error> {
            Plain.visit_seq(seq)
        }
        fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
            Ok(Value::Bool(v))
        }
        fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
            Ok(v.into())
        }
        fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
            Ok(v.into())
        }
        fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
            Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
        }
        fn visit_str<E>(self, v: &str) -> Result<Value, E> {
            Ok(Value::String(v.to_owned()))
        }
        fn visit_unit<E>(self) -> Result<Value, E> {
            Ok(Value::Null)
        }
    };
}

/// The `input` field: an object whose direct string values may be kept as slices; any other
/// value as it is.
struct Input<'s> {
    slices: &'s mut BodySlices,
}

impl<'de> DeserializeSeed<'de> for Input<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Input<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut input = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(InputValue { slices: &mut *self.slices })?;
            input.insert(key, value);
        }
        Ok(Value::Object(input))
    }

    plain_values!();
}

/// A value of `input`: a long string borrowed from the body becomes a placeholder.
struct InputValue<'s> {
    slices: &'s mut BodySlices,
}

impl<'de> DeserializeSeed<'de> for InputValue<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for InputValue<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Value, E> {
        if kept_aside(v) {
            if let Some(placeholder) = self.slices.keep(v) {
                return Ok(Value::String(placeholder));
            }
        }
        Ok(Value::String(v.to_owned()))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Value, A::Error> {
        Plain.visit_map(map)
    }

    plain_values!();
}

/// Collects a map or a sequence into a value, as `Value`'s own parse does.
struct Plain;

impl Plain {
    fn visit_map<'de, A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some((key, value)) = map.next_entry::<String, Value>()? {
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }

    fn visit_seq<'de, A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(value) = seq.next_element::<Value>()? {
            out.push(value);
        }
        Ok(Value::Array(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> RunBody {
        RunBody::parse(Bytes::from(text.to_owned())).unwrap().unwrap()
    }

    /// Every value as sent: the fields with each placeholder put back.
    fn resolved(body: &RunBody) -> Value {
        let mut fields = body.fields.clone();
        if let Some(Value::Object(input)) = fields.get_mut("input") {
            for value in input.values_mut() {
                body.slices.resolve(value);
            }
        }
        Value::Object(fields)
    }

    #[test]
    fn long_plain_input_strings_are_slices_and_everything_else_is_parsed_as_usual() {
        let long = "QUJD".repeat(400);
        let escaped = format!("{}\\/x", "a".repeat(2000));
        let text = serde_json::json!({
            "type": "node",
            "target": "upscale",
            "note": long,
            "input": {"image": long, "short": "abc", "escaped": "PLACEHOLDER", "n": 2.5, "list": [1, {"k": long}], "flag": true, "none": null},
        })
        .to_string()
        .replace("PLACEHOLDER", &escaped);
        let body = parse(&text);
        let input = body.fields["input"].as_object().unwrap();
        let image = input["image"].as_str().unwrap();
        assert!(image.starts_with(PLACEHOLDER_PREFIX), "a long plain string is a slice: {}", &image[..40]);
        assert_eq!(&body.slices.get(image).unwrap()[..], long.as_bytes());
        assert_eq!(input["short"], "abc");
        assert_eq!(
            input["escaped"].as_str().unwrap(),
            format!("{}/x", "a".repeat(2000)),
            "unescaped, not a slice"
        );
        assert_eq!(body.fields["note"], long.as_str(), "only `input` values are kept as slices");
        assert_eq!(input["list"][1]["k"], long.as_str(), "only direct values of `input`");
        let expected: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(resolved(&body), expected, "resolved, the body parses as serde_json parses it");
    }

    #[test]
    fn placeholders_cannot_be_sent() {
        let long = "Zm9v".repeat(300);
        let first = parse(&serde_json::json!({"input": {"image": long}}).to_string());
        let sent = first.fields["input"]["image"].as_str().unwrap().to_owned();
        // The same placeholder text sent by a client in another request is only a string.
        let second = parse(&serde_json::json!({"input": {"image": long, "forged": sent}}).to_string());
        assert!(second.slices.get(&sent).is_none(), "another request's token means nothing here");
        assert_eq!(second.fields["input"]["forged"], sent.as_str());
        let forged_index = format!("{}{}", second.slices.prefix, 7);
        assert!(second.slices.get(&forged_index).is_none(), "an index past the slices");
    }

    #[test]
    fn blank_strings_stay_values_and_lifted_strings_read_back() {
        let blank = " ".repeat(KEPT_INLINE_BYTES + 10);
        let long = "QUJD".repeat(400);
        let body = parse(&serde_json::json!({"input": {"blank": blank, "image": long}}).to_string());
        assert_eq!(body.fields["input"]["blank"], blank.as_str(), "a blank string is checked as blank");

        // A request parsed otherwise: its long strings are taken out of the values.
        let mut slices = body.slices;
        let mut input = serde_json::json!({"prompt": long, "short": "abc", "blank": blank, "n": 1});
        let input = input.as_object_mut().unwrap();
        slices.lift(input);
        let placeholder = input["prompt"].as_str().unwrap().to_owned();
        assert!(placeholder.starts_with(PLACEHOLDER_PREFIX));
        assert_eq!(&slices.get(&placeholder).unwrap()[..], long.as_bytes());
        assert_eq!(
            (&input["short"], &input["blank"], &input["n"]),
            (&Value::from("abc"), &Value::from(blank), &Value::from(1))
        );
        slices.lift(input);
        assert_eq!(input["prompt"], placeholder.as_str(), "a placeholder is not lifted again");
        let mut value = input["prompt"].clone();
        slices.resolve(&mut value);
        assert_eq!(value, long.as_str());
    }

    #[test]
    fn bodies_that_are_not_objects_or_not_json() {
        for text in ["[1, 2]", "\"text\"", "3", "null", "true"] {
            assert!(RunBody::parse(Bytes::from(text)).unwrap().is_none(), "{text}");
        }
        for text in ["", "{", "{\"input\": {\"a\": 1}} x", "{\"input\": {\"a\": }}"] {
            assert!(RunBody::parse(Bytes::from(text)).is_err(), "{text}");
        }
        let odd = parse("{\"input\": [1, \"x\"], \"type\": \"node\"}");
        assert_eq!(
            odd.fields["input"],
            serde_json::json!([1, "x"]),
            "a non-object input is kept for the checks"
        );
    }
}
