//! Parameter schemas and the validation they drive.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::RequestError;

/// The type of a tool parameter, as discovery names it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum ParamType {
    /// A public URL, a data URI or base64.
    Image,
    /// One of a fixed list of strings.
    Select {
        values: &'static [&'static str],
    },
    /// A number in `[min, max]`; `integer` numbers have no fraction;
    /// a non-empty `values` restricts it further to those values.
    Number {
        min: f64,
        max: f64,
        integer: bool,
        values: &'static [f64],
    },
    String,
    Boolean,
}

impl ParamType {
    /// The name used in descriptors: `image`, `select`, `number`, `string`, `boolean`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Image => "image",
            Self::Select { .. } => "select",
            Self::Number { .. } => "number",
            Self::String => "string",
            Self::Boolean => "boolean",
        }
    }
}

/// A default value, spelled statically so tool tables can be `const`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Default {
    None,
    Str(&'static str),
    Num(f64),
    Bool(bool),
}

impl Default {
    pub fn to_value(self) -> Option<Value> {
        match self {
            Self::None => None,
            Self::Str(s) => Some(Value::from(s)),
            Self::Num(n) => Some(number_value(n)),
            Self::Bool(b) => Some(Value::from(b)),
        }
    }
}

/// How a run's parameters refer to an image sent inline once it was moved to the object store
/// at acceptance: `atelier-input:<key>`. Never accepted from a client (its scheme is not an
/// image source: `InvalidInput`), only written by the service.
pub const STORED_INPUT_PREFIX: &str = "atelier-input:";

/// The parameter value that refers to the stored input `key`.
pub fn stored_input_reference(key: &str) -> String {
    format!("{STORED_INPUT_PREFIX}{key}")
}

/// The object-store key a parameter value refers to, when it is a stored-input reference.
pub fn stored_input_key(value: &str) -> Option<&str> {
    value.strip_prefix(STORED_INPUT_PREFIX)
}

/// Numbers without a fraction render as integers (`2`, not `2.0`).
pub fn number_value(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        Value::from(n as i64)
    } else {
        Value::from(n)
    }
}

/// One parameter of a tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamSpec {
    pub name: &'static str,
    pub ty: ParamType,
    /// Required parameters without a default must be supplied by the caller.
    pub required: bool,
    pub default: Default,
    pub description: &'static str,
}

impl ParamSpec {
    /// A value this parameter accepts, chosen without a caller: an image placeholder, the
    /// first allowed value, the least number. What a price "from" is computed with.
    pub fn placeholder(&self) -> Value {
        match &self.ty {
            ParamType::Image => Value::from("<image>"),
            ParamType::Select { values } => Value::from(values.first().copied().unwrap_or_default()),
            ParamType::Number { min, values, integer, .. } => {
                let n = values.first().copied().unwrap_or(if *integer { min.ceil() } else { *min });
                number_value(n)
            }
            ParamType::String => Value::from("x"),
            ParamType::Boolean => Value::from(false),
        }
    }

    /// A caller must supply this parameter (it has no default to fall back on).
    pub fn is_mandatory(&self) -> bool {
        self.required && self.default == Default::None
    }

    /// Checks one value against the parameter's type.
    pub fn check(&self, value: &Value) -> Result<(), RequestError> {
        let wrong = |expected: &str| {
            RequestError::invalid(self.name, format!("expected {expected}, got {}", kind_of(value)))
        };
        match &self.ty {
            ParamType::Image => match value {
                Value::String(s) if !s.trim().is_empty() => Ok(()),
                Value::String(_) => Err(RequestError::invalid(self.name, "image value is empty")),
                _ => Err(wrong("an image URL or base64 string")),
            },
            ParamType::Select { values } => {
                let text = value.as_str().ok_or_else(|| wrong("a string"))?;
                if values.contains(&text) {
                    Ok(())
                } else {
                    Err(RequestError::InvalidInput {
                        field: self.name.to_string(),
                        reason: format!("'{text}' is not one of the allowed values"),
                        allowed: Some(values.iter().map(|v| Value::from(*v)).collect()),
                    })
                }
            }
            ParamType::Number { min, max, integer, values } => {
                let n = value.as_f64().ok_or_else(|| wrong("a number"))?;
                if *integer && n.fract() != 0.0 {
                    return Err(RequestError::invalid(self.name, "expected a whole number"));
                }
                if !values.is_empty() && !values.contains(&n) {
                    return Err(RequestError::InvalidInput {
                        field: self.name.to_string(),
                        reason: format!("{n} is not one of the allowed values"),
                        allowed: Some(values.iter().map(|v| number_value(*v)).collect()),
                    });
                }
                if n < *min || n > *max {
                    return Err(RequestError::invalid(
                        self.name,
                        format!("must be between {} and {}", number_value(*min), number_value(*max)),
                    ));
                }
                Ok(())
            }
            ParamType::String => value.as_str().map(|_| ()).ok_or_else(|| wrong("a string")),
            ParamType::Boolean => value.as_bool().map(|_| ()).ok_or_else(|| wrong("true or false")),
        }
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Parameter values of one node, by name.
pub type Params = Map<String, Value>;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SCALE: ParamSpec = ParamSpec {
        name: "scale",
        ty: ParamType::Number { min: 2.0, max: 4.0, integer: true, values: &[2.0, 4.0] },
        required: false,
        default: Default::Num(2.0),
        description: "",
    };

    #[test]
    fn numbers_check_type_fraction_set_and_range() {
        assert!(SCALE.check(&json!(4)).is_ok());
        assert!(SCALE.check(&json!(4.0)).is_ok());
        let err = SCALE.check(&json!(3)).unwrap_err();
        assert!(
            matches!(err, RequestError::InvalidInput { allowed: Some(ref a), .. } if a == &vec![json!(2), json!(4)])
        );
        assert!(SCALE.check(&json!(2.5)).is_err());
        assert!(SCALE.check(&json!("2")).is_err());
    }

    #[test]
    fn selects_name_allowed_values() {
        let p = ParamSpec {
            name: "category",
            ty: ParamType::Select { values: &["tops", "bottoms"] },
            required: true,
            default: Default::Str("tops"),
            description: "",
        };
        match p.check(&json!("hats")).unwrap_err() {
            RequestError::InvalidInput { field, allowed, .. } => {
                assert_eq!(field, "category");
                assert_eq!(allowed, Some(vec![json!("tops"), json!("bottoms")]));
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(!p.is_mandatory());
    }

    #[test]
    fn defaults_render_integers_without_fraction() {
        assert_eq!(Default::Num(2.0).to_value(), Some(json!(2)));
        assert_eq!(Default::Num(0.5).to_value(), Some(json!(0.5)));
        assert_eq!(Default::None.to_value(), None);
    }
}
