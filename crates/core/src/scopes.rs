//! What an API key may do: its scopes. Every keyed operation needs exactly one
//! ([`Scope`]); a key holds a set of them ([`Scopes`]), kept as text (`run,read`) in the
//! database and on the wire.
//!
//! Keys made before scopes existed hold every scope; a new key holds [`Scopes::NEW_KEY`]
//! unless its maker names others, and a key can only make keys with scopes it holds itself.

use std::fmt;
use std::str::FromStr;

use crate::status::string_enum;

/// One thing a key may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    Run,
    Read,
    Workflows,
    Webhooks,
    Keys,
}

string_enum!(Scope {
    Run => "run",
    Read => "read",
    Workflows => "workflows",
    Webhooks => "webhooks",
    Keys => "keys",
});

impl Scope {
    /// What the scope allows, in words (the OpenAPI document and the docs show it).
    pub fn describe(self) -> &'static str {
        match self {
            Self::Run => "submit, cancel and delete runs and batches, upload images",
            Self::Read => "read runs, batches, outputs, events, estimates, tools, workflows, the balance",
            Self::Workflows => "save and delete workflows",
            Self::Webhooks => "read and rotate the webhook secret, read delivery logs, replay deliveries",
            Self::Keys => "create, list and revoke the account's keys (never with scopes beyond its own)",
        }
    }

    const fn bit(self) -> u8 {
        match self {
            Self::Run => 1,
            Self::Read => 2,
            Self::Workflows => 4,
            Self::Webhooks => 8,
            Self::Keys => 16,
        }
    }
}

/// A set of [`Scope`]s. Text form: the names joined by `,` in [`Scope::ALL`]'s order
/// (`run,read`); the empty set is the empty string.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Scopes(u8);

impl Scopes {
    /// Every scope: what keys made before scopes existed, and the operator, hold.
    pub const ALL: Self = Self(31);
    /// What a new key holds unless its maker names others.
    pub const NEW_KEY: Self = Self(Scope::Run.bit() | Scope::Read.bit());
    pub const NONE: Self = Self(0);

    pub fn contains(self, scope: Scope) -> bool {
        self.0 & scope.bit() != 0
    }

    pub fn with(self, scope: Scope) -> Self {
        Self(self.0 | scope.bit())
    }

    pub fn iter(self) -> impl Iterator<Item = Scope> {
        Scope::ALL.iter().copied().filter(move |s| self.contains(*s))
    }

    /// The scopes of `self` that `holder` lacks (empty when `holder` has them all).
    pub fn beyond(self, holder: Self) -> Self {
        Self(self.0 & !holder.0)
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl FromIterator<Scope> for Scopes {
    fn from_iter<I: IntoIterator<Item = Scope>>(iter: I) -> Self {
        iter.into_iter().fold(Self::NONE, Self::with)
    }
}

impl fmt::Display for Scopes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, scope) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            f.write_str(scope.as_str())?;
        }
        Ok(())
    }
}

impl fmt::Debug for Scopes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Scopes({self})")
    }
}

/// `run,read` (spaces around names allowed, order and repeats free). An unknown name is an
/// error that lists the known ones; the empty string is the empty set.
impl FromStr for Scopes {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        text.split(',').map(str::trim).filter(|name| !name.is_empty()).try_fold(Self::NONE, |set, name| {
            name.parse::<Scope>()
                .map(|scope| set.with(scope))
                .map_err(|_| format!("unknown scope '{name}' (known: {})", Scope::NAMES.join(", ")))
        })
    }
}

impl serde::Serialize for Scopes {
    /// As the list of names: `["run", "read"]`.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> serde::Deserialize<'de> for Scopes {
    /// A list of names (`["run", "read"]`) or the text form (`"run,read"`).
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Form {
            List(Vec<Scope>),
            Text(String),
        }
        match Form::deserialize(deserializer)? {
            Form::List(list) => Ok(list.into_iter().collect()),
            Form::Text(text) => text.parse().map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips_in_a_fixed_order() {
        let scopes: Scopes = "keys, run,read,run".parse().unwrap();
        assert_eq!(scopes.to_string(), "run,read,keys");
        assert_eq!(scopes.to_string().parse::<Scopes>().unwrap(), scopes);
        assert_eq!(Scopes::ALL.to_string(), "run,read,workflows,webhooks,keys");
        assert_eq!(Scopes::NEW_KEY.to_string(), "run,read");
        assert_eq!("".parse::<Scopes>().unwrap(), Scopes::NONE);
        assert_eq!(Scopes::NONE.to_string(), "");
    }

    #[test]
    fn an_unknown_name_is_refused_with_the_known_ones() {
        let err = "run,admin".parse::<Scopes>().unwrap_err();
        assert_eq!(err, "unknown scope 'admin' (known: run, read, workflows, webhooks, keys)");
    }

    #[test]
    fn beyond_compares_sets() {
        let read: Scopes = "read".parse().unwrap();
        assert!(Scopes::NEW_KEY.beyond(Scopes::ALL).is_empty());
        assert!(read.beyond(Scopes::NEW_KEY).is_empty());
        assert!(!Scopes::NEW_KEY.beyond(read).is_empty());
        assert_eq!(Scopes::NEW_KEY.beyond(read).to_string(), "run");
        assert!(read.beyond(Scopes::ALL).is_empty());
        assert_eq!(Scope::ALL.iter().copied().collect::<Scopes>(), Scopes::ALL);
    }

    #[test]
    fn serde_writes_a_list_and_reads_both_forms() {
        assert_eq!(serde_json::to_string(&Scopes::NEW_KEY).unwrap(), r#"["run","read"]"#);
        let from_list: Scopes = serde_json::from_str(r#"["webhooks","run"]"#).unwrap();
        let from_text: Scopes = serde_json::from_str(r#""run,webhooks""#).unwrap();
        assert_eq!(from_list, from_text);
        assert!(serde_json::from_str::<Scopes>(r#"["root"]"#).is_err());
    }
}
