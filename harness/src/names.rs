//! One name per variant of the enums a user types and the run folder stores — the
//! workload, the fault kinds, the partition topologies, the scenarios, the planted
//! bugs, acks and truncation — taken from clap's `ValueEnum` derive. The command line,
//! `run.json` and `history.jsonl` spell each the same way, and no table of names is
//! written by hand.
//!
//! [`by_name!`] gives an enum `Display`, `Serialize` and `Deserialize` through its
//! names; [`Names`] parses a name on the command line (blanks around it ignored, as in
//! a comma-separated list) and lets `--help` list the names with their doc comments.

use std::ffi::OsStr;
use std::marker::PhantomData;

use clap::ValueEnum;
use clap::builder::{PossibleValue, TypedValueParser};

/// The name of `v`, as the command line spells it.
pub fn name<T: ValueEnum>(v: &T) -> String {
    v.to_possible_value()
        .map(|p| p.get_name().to_string())
        .unwrap_or_default()
}

/// Every name of `T`, comma-separated.
pub fn list<T: ValueEnum>() -> String {
    T::value_variants()
        .iter()
        .map(name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `s` (blanks around it ignored) as one of `T`'s names; the error names `what` was
/// asked for and lists the names.
pub fn parse<T: ValueEnum>(what: &str, s: &str) -> Result<T, String> {
    let s = s.trim();
    T::from_str(s, false).map_err(|_| format!("unknown {what} `{s}`; choose from {}", list::<T>()))
}

/// `Display`, `Serialize` and `Deserialize` through the `ValueEnum` names:
/// `by_name!(Bug => "bug")`, where `"bug"` is what an error calls a bad name.
macro_rules! by_name {
    ($($t:ty => $what:literal),+ $(,)?) => {$(
        impl ::std::fmt::Display for $t {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(&$crate::names::name(self))
            }
        }

        impl ::serde::Serialize for $t {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> ::std::result::Result<S::Ok, S::Error> {
                s.serialize_str(&$crate::names::name(self))
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $t {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> ::std::result::Result<Self, D::Error> {
                let s = <String as ::serde::Deserialize>::deserialize(d)?;
                $crate::names::parse($what, &s).map_err(::serde::de::Error::custom)
            }
        }
    )+};
}
pub(crate) use by_name;

/// A command-line parser for one name of `T` (see [`parse`]).
#[derive(Debug, Clone)]
pub struct Names<T> {
    what: &'static str,
    of: PhantomData<fn() -> T>,
}

impl<T> Names<T> {
    /// A parser of `T`'s names; `what` is what an error calls a bad one.
    pub fn new(what: &'static str) -> Names<T> {
        Names {
            what,
            of: PhantomData,
        }
    }

    /// Also accept `word` (described by `help`), which parses as `None`.
    pub fn or(self, word: &'static str, help: &'static str) -> OrWord<T> {
        OrWord {
            names: self,
            word,
            help,
        }
    }
}

impl<T: ValueEnum + Clone + Send + Sync + 'static> TypedValueParser for Names<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<T, clap::Error> {
        // A function from text parses with clap's own message naming the option.
        let what = self.what;
        (move |s: &str| parse::<T>(what, s)).parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            T::value_variants()
                .iter()
                .filter_map(ValueEnum::to_possible_value),
        ))
    }
}

/// [`Names`] and one more word, which parses as `None` (`none` in `--nemesis`).
#[derive(Debug, Clone)]
pub struct OrWord<T> {
    names: Names<T>,
    word: &'static str,
    help: &'static str,
}

impl<T: ValueEnum + Clone + Send + Sync + 'static> TypedValueParser for OrWord<T> {
    type Value = Option<T>;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<Option<T>, clap::Error> {
        let (what, word) = (self.names.what, self.word);
        let parse = move |s: &str| match s.trim() {
            s if s == word => Ok(None),
            s => parse::<T>(what, s)
                .map(Some)
                .map_err(|why| format!("{why}, or {word}")),
        };
        parse.parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        let extra = PossibleValue::new(self.word).help(self.help);
        Some(Box::new(self.names.possible_values()?.chain([extra])))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
    enum Colour {
        Red,
        DarkBlue,
    }
    by_name!(Colour => "colour");

    #[test]
    fn names_come_from_the_value_enum_and_parse_back() {
        assert_eq!(name(&Colour::DarkBlue), "dark-blue");
        assert_eq!(Colour::DarkBlue.to_string(), "dark-blue");
        assert_eq!(list::<Colour>(), "red, dark-blue");
        assert_eq!(parse::<Colour>("colour", " red "), Ok(Colour::Red));
        assert_eq!(
            parse::<Colour>("colour", "green"),
            Err("unknown colour `green`; choose from red, dark-blue".to_string())
        );
        let json = serde_json::to_string(&[Colour::Red, Colour::DarkBlue]).unwrap();
        assert_eq!(json, r#"["red","dark-blue"]"#);
        let back: Vec<Colour> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, [Colour::Red, Colour::DarkBlue]);
        let bad = serde_json::from_str::<Colour>(r#""green""#).unwrap_err();
        assert!(bad.to_string().contains("unknown colour `green`"), "{bad}");
    }

    #[test]
    fn the_parser_names_the_option_and_accepts_its_extra_word() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[arg(long, value_delimiter = ',', value_parser = Names::<Colour>::new("colour").or("none", "no colour"))]
            colours: Vec<Option<Colour>>,
        }
        let cli = Cli::try_parse_from(["t", "--colours", "red, dark-blue,none"]).unwrap();
        assert_eq!(
            cli.colours,
            [Some(Colour::Red), Some(Colour::DarkBlue), None]
        );
        let err = Cli::try_parse_from(["t", "--colours", "red,green"])
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("invalid value 'green' for '--colours <COLOURS>'")
                && err.contains("choose from red, dark-blue, or none"),
            "{err}"
        );
    }
}
