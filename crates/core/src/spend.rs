//! Spend limits: how many tokens a key, or an account, may reserve per UTC day and per UTC
//! month, and how many nodes a key may have running at once.
//!
//! A limit is kept as an optional number ([`Setting`]): none follows the operator's
//! configured default, [`UNLIMITED`] is no limit even where a default exists, and any other
//! value is the limit itself. Periods are calendar periods in UTC: a day starts at 00:00 UTC,
//! a month at 00:00 UTC on its first day.

use std::fmt;
use std::str::FromStr;

use chrono::{Datelike, TimeZone, Utc};

use crate::status::string_enum;
use crate::time::Micros;

/// A stored limit setting: `None` follows the configured default; [`UNLIMITED`] is no limit.
pub type Setting = Option<i64>;

/// The stored value of "no limit, whatever the default".
pub const UNLIMITED: i64 = -1;

/// The limit in force: the setting, or else the default; `None` when there is none.
pub fn effective(setting: Setting, default: Option<i64>) -> Option<i64> {
    setting.or(default).filter(|&n| n >= 0)
}

/// A period a token limit counts over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Period {
    Day,
    Month,
}

string_enum!(Period {
    Day => "day",
    Month => "month",
});

const DAY_MICROS: Micros = 86_400_000_000;

impl Period {
    /// When the period that holds `t` began.
    pub fn start(self, t: Micros) -> Micros {
        match self {
            Self::Day => t.div_euclid(DAY_MICROS) * DAY_MICROS,
            Self::Month => {
                let day = Utc.timestamp_micros(t).single().map(|d| d.date_naive());
                day.and_then(|d| d.with_day(1))
                    .and_then(|d| d.and_hms_opt(0, 0, 0))
                    .map_or(t, |d| d.and_utc().timestamp_micros())
            }
        }
    }

    /// When the period that holds `t` ends, and the next begins: when its usage resets.
    pub fn end(self, t: Micros) -> Micros {
        match self {
            Self::Day => self.start(t).saturating_add(DAY_MICROS),
            Self::Month => {
                let first = Utc.timestamp_micros(self.start(t)).single().map(|d| d.date_naive());
                first
                    .and_then(|d| d.checked_add_months(chrono::Months::new(1)))
                    .and_then(|d| d.and_hms_opt(0, 0, 0))
                    .map_or(i64::MAX, |d| d.and_utc().timestamp_micros())
            }
        }
    }
}

/// Whose limit: the key's own, or its account's (every key of it together).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Holder {
    Key,
    Account,
}

string_enum!(Holder {
    Key => "key",
    Account => "account",
});

/// A limit as an operator writes it: a number of tokens (or nodes), `none` for no limit, or
/// `default` to follow the configured default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitArg(pub Setting);

impl FromStr for LimitArg {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "none" => Ok(Self(Some(UNLIMITED))),
            "default" => Ok(Self(None)),
            n => n.parse::<i64>().ok().filter(|n| *n >= 0).map(|n| Self(Some(n))).ok_or_else(|| {
                format!("'{s}' is not a limit: give a whole number of 0 or more, 'none' or 'default'")
            }),
        }
    }
}

/// A setting in words: the number, `none` or `default`.
pub fn describe(setting: Setting) -> String {
    match setting {
        None => "default".into(),
        Some(n) if n < 0 => "none".into(),
        Some(n) => n.to_string(),
    }
}

impl fmt::Display for LimitArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&describe(self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::parse_time;

    fn at(text: &str) -> Micros {
        parse_time(text).unwrap()
    }

    #[test]
    fn days_and_months_are_utc_calendar_periods() {
        let t = at("2026-11-29T23:59:59.999999Z");
        assert_eq!(Period::Day.start(t), at("2026-11-29"));
        assert_eq!(Period::Day.end(t), at("2026-11-30"));
        assert_eq!(Period::Month.start(t), at("2026-11-01"));
        assert_eq!(Period::Month.end(t), at("2026-12-01"));
        // A December rolls into the next year; February's end in a leap year.
        assert_eq!(Period::Month.end(at("2026-12-31T12:00:00Z")), at("2027-01-01"));
        assert_eq!(Period::Month.end(at("2028-02-29T00:00:00Z")), at("2028-03-01"));
        assert_eq!(Period::Month.start(at("2028-03-01")), at("2028-03-01"));
        // An offset is only a way of writing the instant.
        assert_eq!(Period::Day.start(at("2026-11-30T00:30:00+01:00")), at("2026-11-29"));
        assert_eq!(Period::Day.start(-1), -DAY_MICROS);
    }

    #[test]
    fn a_setting_follows_the_default_unless_it_says_otherwise() {
        assert_eq!(effective(None, None), None);
        assert_eq!(effective(None, Some(100)), Some(100));
        assert_eq!(effective(Some(5), Some(100)), Some(5));
        assert_eq!(effective(Some(0), None), Some(0));
        assert_eq!(effective(Some(UNLIMITED), Some(100)), None);
    }

    #[test]
    fn limits_are_written_as_numbers_none_or_default() {
        assert_eq!("250".parse::<LimitArg>(), Ok(LimitArg(Some(250))));
        assert_eq!("none".parse::<LimitArg>(), Ok(LimitArg(Some(UNLIMITED))));
        assert_eq!("default".parse::<LimitArg>(), Ok(LimitArg(None)));
        for bad in ["", "-1", "1.5", "lots"] {
            assert!(bad.parse::<LimitArg>().is_err(), "{bad}");
        }
        for text in ["250", "none", "default"] {
            assert_eq!(text.parse::<LimitArg>().unwrap().to_string(), text);
        }
    }
}
