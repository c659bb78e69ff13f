//! The wire types as TypeScript, for the web console (`web/src/lib/wire.ts`), written from
//! the same component schemas as the OpenAPI document.
//!
//! Only what the schemas use is read: `$ref`, `enum`, `const`, `anyOf`/`oneOf`, `type` (one or
//! a list), `properties` with `required`, `additionalProperties`, `items` and fixed-length
//! arrays. Anything else is `unknown`, so a schema this does not understand types loosely
//! rather than wrongly. A test keeps the committed file equal to what this writes.

use serde_json::{Map, Value};

/// The file: a header, then one exported type per component schema, in name order.
pub fn module(schemas: &Map<String, Value>) -> String {
    let mut out = String::from(
        "// Generated from the OpenAPI document's schemas (crates/wire): do not edit.\n\
         // After a change of a wire type: ATELIER_BLESS=1 cargo test -p atelier-api --test generated\n",
    );
    let mut names: Vec<&String> = schemas.keys().collect();
    names.sort();
    for name in names {
        let schema = &schemas[name];
        out.push('\n');
        out.push_str(&doc(schema, ""));
        if schema.get("properties").is_some() {
            out.push_str(&format!("export interface {name} {}\n", object(schema, "")));
        } else {
            out.push_str(&format!("export type {name} = {};\n", ty(schema, "")));
        }
    }
    out
}

/// A `/** … */` comment of the schema's description, at `indent`.
fn doc(schema: &Value, indent: &str) -> String {
    match schema.get("description").and_then(Value::as_str) {
        Some(text) if !text.is_empty() => {
            let text = text.replace("*/", "* /");
            let lines: Vec<&str> = text.lines().collect();
            if lines.len() == 1 {
                format!("{indent}/** {} */\n", lines[0])
            } else {
                let body: String = lines.iter().map(|l| format!("{indent} * {l}\n")).collect();
                format!("{indent}/**\n{body}{indent} */\n")
            }
        }
        _ => String::new(),
    }
}

/// The TypeScript type of a schema.
fn ty(schema: &Value, indent: &str) -> String {
    if let Some(target) = schema.get("$ref").and_then(Value::as_str) {
        return target.rsplit('/').next().unwrap_or("unknown").to_string();
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return union(values.iter().map(literal).collect());
    }
    if let Some(value) = schema.get("const") {
        return literal(value);
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(branches) = schema.get(key).and_then(Value::as_array) {
            return union(branches.iter().map(|b| ty(b, indent)).collect());
        }
    }
    match schema.get("type") {
        Some(Value::String(name)) => of_type(name, schema, indent),
        Some(Value::Array(names)) => {
            union(names.iter().filter_map(Value::as_str).map(|n| of_type(n, schema, indent)).collect())
        }
        _ => "unknown".to_string(),
    }
}

fn of_type(name: &str, schema: &Value, indent: &str) -> String {
    match name {
        "string" => "string".into(),
        "integer" | "number" => "number".into(),
        "boolean" => "boolean".into(),
        "null" => "null".into(),
        "array" => array(schema, indent),
        "object" if schema.get("properties").is_some() => object(schema, indent),
        "object" => match schema.get("additionalProperties") {
            Some(Value::Bool(false)) => "Record<string, never>".into(),
            Some(value @ Value::Object(_)) => format!("Record<string, {}>", ty(value, indent)),
            _ => "Record<string, unknown>".into(),
        },
        _ => "unknown".into(),
    }
}

fn array(schema: &Value, indent: &str) -> String {
    let item = schema.get("items").map_or_else(|| "unknown".to_string(), |i| ty(i, indent));
    let fixed = schema.get("minItems").and_then(Value::as_u64);
    match fixed {
        Some(n @ 1..=4) if schema.get("maxItems").and_then(Value::as_u64) == Some(n) => {
            format!("[{}]", vec![item; n as usize].join(", "))
        }
        _ if item.contains(' ') => format!("({item})[]"),
        _ => format!("{item}[]"),
    }
}

fn object(schema: &Value, indent: &str) -> String {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let inner = format!("{indent}  ");
    let mut out = String::from("{\n");
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            let optional = if required.contains(&name.as_str()) { "" } else { "?" };
            out.push_str(&doc(property, &inner));
            out.push_str(&format!("{inner}{name}{optional}: {};\n", ty(property, &inner)));
        }
    }
    out.push_str(indent);
    out.push('}');
    out
}

fn literal(value: &Value) -> String {
    value.to_string()
}

fn union(mut members: Vec<String>) -> String {
    members.dedup();
    if members.is_empty() {
        "never".into()
    } else {
        members.join(" | ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_keyword_the_schemas_use_has_its_typescript() {
        let schemas = json!({
            "State": {"type": "string", "enum": ["a", "b"], "description": "A state."},
            "Thing": {"type": "object", "required": ["id", "state"], "properties": {
                "id": {"type": "integer"},
                "state": {"$ref": "#/components/schemas/State"},
                "note": {"type": ["string", "null"], "description": "Why."},
                "tags": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
                "at": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
                "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
                "open": {"type": "object"},
                "kind": {"const": "node"},
                "any": {}
            }},
        });
        let text = module(schemas.as_object().unwrap());
        assert!(text.contains("/** A state. */\nexport type State = \"a\" | \"b\";\n"), "{text}");
        for line in [
            "export interface Thing {\n",
            "  id: number;\n",
            "  state: State;\n",
            "  /** Why. */\n  note?: string | null;\n",
            "  tags?: (string | null)[];\n",
            "  at?: [number, number];\n",
            "  counts?: Record<string, number>;\n",
            "  open?: Record<string, unknown>;\n",
            "  kind?: \"node\";\n",
            "  any?: unknown;\n",
        ] {
            assert!(text.contains(line), "{line:?} in\n{text}");
        }
    }
}
