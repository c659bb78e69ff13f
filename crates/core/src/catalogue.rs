//! Items files: a catalogue's items as JSONL or CSV text (`atelier batch`, and a batch's
//! `items_file` upload).
//!
//! JSONL: one item a line, `{"input": {...}, "ref": "SKU-1"}`, or the inputs themselves with
//! an optional `ref`; blank lines are skipped. CSV (RFC 4180): a header row of input names
//! (`ref` for the item's reference), then one row per item; a quoted cell may hold commas,
//! quotes (`""`) and line breaks; an empty cell is left out, and every other cell is typed by
//! the caller (a number where the parameter is one).

use serde_json::{Map, Value};

/// One item: its reference and its input.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Item {
    pub reference: Option<String>,
    pub input: Map<String, Value>,
}

/// The two forms of an items file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemsFormat {
    Jsonl,
    Csv,
}

impl ItemsFormat {
    /// The file extension, as uploads keep it.
    pub fn extension(self) -> &'static str {
        match self {
            Self::Jsonl => "jsonl",
            Self::Csv => "csv",
        }
    }

    /// The format an extension names.
    pub fn from_extension(ext: &str) -> Option<Self> {
        match ext.to_ascii_lowercase().as_str() {
            "jsonl" | "ndjson" => Some(Self::Jsonl),
            "csv" => Some(Self::Csv),
            _ => None,
        }
    }

    /// The format a media type names (`application/jsonl`, `application/x-ndjson`,
    /// `text/csv`, …; parameters such as `charset` ignored).
    pub fn from_media_type(media_type: &str) -> Option<Self> {
        let essence = media_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
        match essence.as_str() {
            "application/jsonl"
            | "application/x-jsonl"
            | "application/x-ndjson"
            | "application/jsonlines"
            | "application/x-jsonlines" => Some(Self::Jsonl),
            "text/csv" | "application/csv" => Some(Self::Csv),
            _ => None,
        }
    }

    /// Reads `text`'s items; a CSV cell is typed by `typed(input name, cell)`.
    pub fn parse(self, text: &str, typed: impl Fn(&str, &str) -> Value) -> Result<Vec<Item>, String> {
        match self {
            Self::Jsonl => jsonl_items(text),
            Self::Csv => csv_items(text, typed),
        }
    }
}

fn jsonl_items(text: &str) -> Result<Vec<Item>, String> {
    let mut items = Vec::new();
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let at = |why: &str| format!("line {}: {why}", n + 1);
        let Value::Object(mut object) =
            serde_json::from_str(line).map_err(|e| at(&format!("not JSON ({e})")))?
        else {
            return Err(at("an item is a JSON object"));
        };
        let reference = match object.remove("ref") {
            None | Some(Value::Null) => None,
            Some(Value::String(r)) => Some(r),
            Some(other) => Some(other.to_string()),
        };
        let input = match object.remove("input") {
            Some(Value::Object(input)) if object.is_empty() => input,
            Some(_) => return Err(at("\"input\" is an object, beside \"ref\" only")),
            None => object,
        };
        items.push(Item { reference, input });
    }
    Ok(items)
}

fn csv_items(text: &str, typed: impl Fn(&str, &str) -> Value) -> Result<Vec<Item>, String> {
    let mut rows = csv_rows(text)?.into_iter();
    let header = rows.next().ok_or("the CSV text is empty")?;
    let mut items = Vec::new();
    for (n, row) in rows.enumerate() {
        if row.iter().all(String::is_empty) {
            continue;
        }
        if row.len() != header.len() {
            return Err(format!("CSV row {}: {} cells under a header of {}", n + 2, row.len(), header.len()));
        }
        let mut item = Item::default();
        for (name, cell) in header.iter().zip(row) {
            if cell.is_empty() {
                continue;
            }
            if name == "ref" {
                item.reference = Some(cell);
            } else {
                item.input.insert(name.clone(), typed(name, &cell));
            }
        }
        items.push(item);
    }
    Ok(items)
}

/// The rows of a CSV text (RFC 4180; CRLF or LF ends a row; a leading byte-order mark is
/// skipped).
pub fn csv_rows(text: &str) -> Result<Vec<Vec<String>>, String> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut cell = String::new();
    let mut chars = text.trim_start_matches('\u{feff}').chars().peekable();
    let mut quoted = false;
    let mut any = false;
    while let Some(c) = chars.next() {
        any = true;
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                cell.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => cell.push(c),
            (false, '"') if cell.is_empty() => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut cell)),
            (false, '\r') if chars.peek() == Some(&'\n') => {}
            (false, '\n') => {
                row.push(std::mem::take(&mut cell));
                rows.push(std::mem::take(&mut row));
                any = false;
            }
            (false, c) => cell.push(c),
        }
    }
    if quoted {
        return Err("the CSV text ends inside a quoted cell".into());
    }
    if any {
        row.push(cell);
        rows.push(row);
    }
    Ok(rows)
}

/// A CSV cell as a parameter of type `ty` wants it: a JSON number or boolean where the
/// parameter is one and the cell reads as one, else the string.
pub fn typed_cell(cell: &str, ty: Option<&crate::params::ParamType>) -> Value {
    use crate::params::ParamType;
    match ty {
        Some(ParamType::Number { .. }) => {
            if let Ok(n) = cell.parse::<i64>() {
                return Value::from(n);
            }
            match cell.parse::<f64>().ok().and_then(serde_json::Number::from_f64) {
                Some(n) => Value::Number(n),
                None => Value::String(cell.to_string()),
            }
        }
        Some(ParamType::Boolean) => match cell {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => Value::String(cell.to_string()),
        },
        _ => Value::String(cell.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn csv_cells_may_be_quoted_hold_commas_quotes_and_line_breaks() {
        let rows =
            csv_rows("ref,image,scale\r\n\"SKU, 1\",@a.png,2\n\"say \"\"hi\"\"\",\"x\ny\",\n").unwrap();
        assert_eq!(
            rows,
            vec![
                vec!["ref", "image", "scale"],
                vec!["SKU, 1", "@a.png", "2"],
                vec!["say \"hi\"", "x\ny", ""]
            ]
        );
        assert!(csv_rows("a,\"b").is_err());
        assert_eq!(csv_rows("\u{feff}a\n").unwrap(), vec![vec!["a"]]);
    }

    #[test]
    fn csv_items_are_typed_by_the_caller_and_empty_cells_left_out() {
        let typed = |name: &str, cell: &str| {
            if name == "scale" {
                json!(cell.parse::<i64>().unwrap())
            } else {
                json!(cell)
            }
        };
        let items = ItemsFormat::Csv.parse("ref,image,scale\nA,u,2\nB,v,\n\n", typed).unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!((items[0].reference.as_deref(), &items[0].input["scale"]), (Some("A"), &json!(2)));
        assert!(!items[1].input.contains_key("scale"));
        assert!(ItemsFormat::Csv.parse("ref,image\nA\n", typed).unwrap_err().contains("row 2"));
        assert!(ItemsFormat::Csv.parse("", typed).is_err());
    }

    #[test]
    fn jsonl_items_are_items_or_their_inputs() {
        let text = "{\"input\": {\"image\": \"u\"}, \"ref\": \"A\"}\n\n{\"image\": \"v\", \"ref\": 7}\n";
        let items = ItemsFormat::Jsonl.parse(text, |_, c| json!(c)).unwrap();
        assert_eq!((items[0].reference.as_deref(), items[0].input["image"].as_str()), (Some("A"), Some("u")));
        assert_eq!((items[1].reference.as_deref(), items[1].input["image"].as_str()), (Some("7"), Some("v")));
        for bad in ["[1]", "{\"input\": {}, \"x\": 1}", "nope"] {
            assert!(ItemsFormat::Jsonl.parse(bad, |_, c| json!(c)).is_err(), "{bad}");
        }
    }

    #[test]
    fn formats_are_named_by_extension_and_media_type() {
        assert_eq!(ItemsFormat::from_extension("CSV"), Some(ItemsFormat::Csv));
        assert_eq!(
            ItemsFormat::from_media_type("application/x-ndjson; charset=utf-8"),
            Some(ItemsFormat::Jsonl)
        );
        assert_eq!(ItemsFormat::from_media_type("image/png"), None);
    }
}
