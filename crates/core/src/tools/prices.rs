//! What each tool costs: the built-in table and the numbers `[prices]` changes ([`Prices`]),
//! and the rule in words that discovery shows.

use serde::{Deserialize, Serialize};

use std::str::FromStr;

use super::id::ToolId;
use super::spec::{Lit, ToolSpec};
use super::table::TOOLS;
use crate::params::{Default, Params};

/// The price of every tool: the built-in table, with the numbers `[prices]` in the
/// configuration changes. Built once at start ([`Prices::configured`]) and used for every
/// plan, estimate and `GET /api/v3/tools`.
#[derive(Debug, Clone, PartialEq)]
pub struct Prices {
    /// By `ToolId as usize`: the base price, and the price of each case of `Price::by`.
    tariffs: Vec<(i64, Vec<i64>)>,
}

impl std::default::Default for Prices {
    fn default() -> Self {
        let tariffs = ToolId::ALL
            .iter()
            .map(|id| {
                let price = id.spec().price;
                (
                    price.base,
                    price.by.map(|(_, cases)| cases.iter().map(|c| c.1).collect()).unwrap_or_default(),
                )
            })
            .collect();
        Self { tariffs }
    }
}

/// A tool's price as `[prices]` sets it: one number (the base price), or a table with
/// `base` and one key per priced value of the parameter the price depends on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PriceSetting {
    Base(i64),
    Table(std::collections::BTreeMap<String, i64>),
}

impl Prices {
    /// The built-in table with `settings` (tool name → setting) applied; an error names the
    /// key that is wrong and says what it may be.
    pub fn configured<'a>(
        settings: impl IntoIterator<Item = (&'a String, &'a PriceSetting)>,
    ) -> Result<Self, String> {
        let mut prices = Self::default();
        for (name, setting) in settings {
            let id = ToolId::from_str(name).map_err(|_| {
                let names: Vec<&str> = TOOLS.iter().map(|t| t.name).collect();
                format!("prices.{name}: no such tool (tools: {})", names.join(", "))
            })?;
            let spec = id.spec();
            let (base, cases) = &mut prices.tariffs[id as usize];
            let check = |key: &str, tokens: i64| {
                if tokens < 0 {
                    Err(format!("prices.{name}.{key}: a price is a whole number of tokens, 0 or more"))
                } else {
                    Ok(tokens)
                }
            };
            match setting {
                PriceSetting::Base(tokens) => *base = check("base", *tokens)?,
                PriceSetting::Table(table) => {
                    for (key, tokens) in table {
                        let tokens = check(key, *tokens)?;
                        if key == "base" {
                            *base = tokens;
                            continue;
                        }
                        let known = spec.price.by.map(|(_, c)| c).unwrap_or(&[]);
                        let Some(i) = known.iter().position(|(lit, _)| lit.key() == *key) else {
                            let mut keys = vec!["base".to_string()];
                            keys.extend(known.iter().map(|(lit, _)| lit.key()));
                            return Err(format!(
                                "prices.{name}.{key}: not a priced case of {name} (keys: {})",
                                keys.join(", ")
                            ));
                        };
                        cases[i] = tokens;
                    }
                }
            }
        }
        Ok(prices)
    }

    /// Tokens for one execution of `spec` with resolved `params`.
    pub fn unit_price(&self, spec: &ToolSpec, params: &Params) -> i64 {
        let (base, cases) = &self.tariffs[spec.id as usize];
        let matched = spec.price.by.and_then(|(param, lits)| {
            lits.iter().position(|(lit, _)| lit.matches(params.get(param))).map(|i| cases[i])
        });
        let per = matched.unwrap_or(*base);
        if spec.price.per_output {
            per.saturating_mul(i64::from(spec.outputs_per_run(params)))
        } else {
            per
        }
    }

    /// The price as discovery shows it: `1 per run, 2 at scale 4`, `per output: 1 on Standard,
    /// 2 on Pro, 3 on Plus`.
    pub fn rule(&self, spec: &ToolSpec) -> String {
        let (base, cases) = &self.tariffs[spec.id as usize];
        let unit = if spec.price.per_output { "output" } else { "run" };
        let Some((param, lits)) = spec.price.by else { return format!("{base} per {unit}") };
        let phrase = |lit: Lit| match lit {
            Lit::Bool(_) => format!("with {param}"),
            Lit::Num(_) => format!("at {param} {}", lit.key()),
            Lit::Str(s) => format!("on {s}"),
        };
        let mut rule = if spec.price.per_output {
            let default = match spec.param(param).map(|p| p.default) {
                Some(Default::Str(s)) => format!(" on {s}"),
                _ => String::new(),
            };
            format!("per {unit}: {base}{default}")
        } else {
            format!("{base} per {unit}")
        };
        for (lit, tokens) in lits.iter().map(|(lit, _)| *lit).zip(cases) {
            rule.push_str(&format!(", {tokens} {}", phrase(lit)));
        }
        rule
    }
}
