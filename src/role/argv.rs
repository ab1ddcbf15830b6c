//! A role's argv: the subcommand first, then its flags. `Argv::of` writes it from a role's
//! struct, so its flags are spelled only there; `flag`, `maybe` and `switch` add to one by hand.

use serde::ser::{self, Impossible, Serialize, SerializeMap, SerializeStruct};
use serde_json::Value;

/// An argv: the subcommand, then flags in the order they were added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Argv {
    role: &'static str,
    flags: Vec<String>,
}

impl Argv {
    pub fn new(role: &'static str) -> Argv {
        assert!(
            !role.is_empty() && !role.starts_with('-'),
            "a role is a subcommand"
        );
        Argv {
            role,
            flags: Vec::new(),
        }
    }

    /// `--name value`.
    pub fn flag(mut self, name: &str, value: impl ToString) -> Argv {
        debug_assert!(name.starts_with("--"));
        self.flags.push(name.to_string());
        self.flags.push(value.to_string());
        self
    }

    /// `--name value` when there is a value.
    pub fn maybe(self, name: &str, value: Option<impl ToString>) -> Argv {
        match value {
            Some(v) => self.flag(name, v),
            None => self,
        }
    }

    /// `--name` when `on`.
    pub fn switch(mut self, name: &str, on: bool) -> Argv {
        debug_assert!(name.starts_with("--"));
        if on {
            self.flags.push(name.to_string());
        }
        self
    }

    /// The argv of a role's values: `--field value` for each field in order (a field
    /// `consumer_id` is the flag `--consumer-id`), `--field` alone for a true bool; a field
    /// that is None, false, or equal to its flag's default in `command` is left out, and a
    /// list gives its flag once per item.
    pub fn of(name: &'static str, command: &clap::Command, role: &impl Serialize) -> Argv {
        let mut fields = Fields(Vec::new());
        role.serialize(&mut fields)
            .unwrap_or_else(|e| panic!("role {name}: its fields are flags: {e}"));
        let mut argv = Argv::new(name);
        for (field, value) in fields.0 {
            let flag = format!("--{}", field.replace('_', "-"));
            let default: Vec<String> = command
                .get_arguments()
                .find(|a| a.get_id() == field.as_str())
                .map(|a| {
                    a.get_default_values()
                        .iter()
                        .map(|d| d.to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            let words: Vec<String> = match value {
                Value::Null | Value::Bool(false) => continue,
                Value::Bool(true) => {
                    argv.flags.push(flag);
                    continue;
                }
                Value::Array(items) => items.iter().map(word).collect(),
                other => vec![word(&other)],
            };
            if !default.is_empty() && default == words {
                continue;
            }
            for w in words {
                argv.flags.push(flag.clone());
                argv.flags.push(w);
            }
        }
        argv
    }

    /// The subcommand.
    pub fn role(&self) -> &'static str {
        self.role
    }

    /// The flags after the subcommand.
    pub fn args(&self) -> &[String] {
        &self.flags
    }

    /// The whole argv after `crashlab`: the subcommand, then its flags.
    pub fn into_vec(self) -> Vec<String> {
        std::iter::once(self.role.to_string())
            .chain(self.flags)
            .collect()
    }
}

/// A flag's value as its one word.
fn word(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The fields of a role's struct, in order, each as a JSON value: what `Argv::of` reads.
struct Fields(Vec<(String, Value)>);

/// Why a role's struct is not a list of flags (a nested struct, say).
#[derive(Debug)]
struct NotFlags(String);

impl std::fmt::Display for NotFlags {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotFlags {}

impl ser::Error for NotFlags {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        NotFlags(msg.to_string())
    }
}

fn value(v: &(impl Serialize + ?Sized)) -> Result<Value, NotFlags> {
    serde_json::to_value(v).map_err(|e| NotFlags(e.to_string()))
}

impl SerializeStruct for &mut Fields {
    type Ok = ();
    type Error = NotFlags;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        v: &T,
    ) -> Result<(), NotFlags> {
        self.0.push((key.to_string(), value(v)?));
        Ok(())
    }

    fn end(self) -> Result<(), NotFlags> {
        Ok(())
    }
}

/// A struct with a `#[serde(flatten)]` field comes as a map.
impl SerializeMap for &mut Fields {
    type Ok = ();
    type Error = NotFlags;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), NotFlags> {
        let Value::String(key) = value(key)? else {
            return Err(NotFlags("a flag's name is a string".into()));
        };
        self.0.push((key, Value::Null));
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), NotFlags> {
        let last = self
            .0
            .last_mut()
            .ok_or_else(|| NotFlags("a value before its key".into()))?;
        last.1 = value(v)?;
        Ok(())
    }

    fn end(self) -> Result<(), NotFlags> {
        Ok(())
    }
}

/// Only a struct (or a map, for a flattened field) is a role's list of flags.
impl ser::Serializer for &mut Fields {
    type Ok = ();
    type Error = NotFlags;
    type SerializeSeq = Impossible<(), NotFlags>;
    type SerializeTuple = Impossible<(), NotFlags>;
    type SerializeTupleStruct = Impossible<(), NotFlags>;
    type SerializeTupleVariant = Impossible<(), NotFlags>;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Impossible<(), NotFlags>;

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, NotFlags> {
        Ok(self)
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self, NotFlags> {
        Ok(self)
    }

    fn serialize_unit_struct(self, _: &'static str) -> Result<(), NotFlags> {
        Ok(())
    }

    fn serialize_bool(self, _: bool) -> Result<(), NotFlags> {
        not_flags()
    }
    fn serialize_i8(self, _: i8) -> Result<(), NotFlags> {
        not_flags()
    }
    fn serialize_i16(self, _: i16) -> Result<(), NotFlags> {
        not_flags()
    }
    fn serialize_i32(self, _: i32) -> Result<(), NotFlags> {
        not_flags()
    }
    fn serialize_i64(self, _: i64) -> Result<(), NotFlags> {
        not_flags()
    }
    fn serialize_u8(self, _: u8) -> Result<(), NotFlags> {
        not_flags()
    }
    fn serialize_u16(self, _: u16) -> Result<(), NotFlags> {
        not_flags()
    }
    fn serialize_u32(self, _: u32) -> Result<(), NotFlags> {
        not_flags()
    }
    fn serialize_u64(self, _: u64) -> Result<(), NotFlags> {
        not_flags()
    }
    fn serialize_f32(self, _: f32) -> Result<(), NotFlags> {
        not_flags()
    }
    fn serialize_f64(self, _: f64) -> Result<(), NotFlags> {
        not_flags()
    }
    fn serialize_char(self, _: char) -> Result<(), NotFlags> {
        not_flags()
    }
    fn serialize_str(self, _: &str) -> Result<(), NotFlags> {
        not_flags()
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<(), NotFlags> {
        not_flags()
    }
    fn serialize_none(self) -> Result<(), NotFlags> {
        not_flags()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<(), NotFlags> {
        not_flags()
    }
    fn serialize_unit(self) -> Result<(), NotFlags> {
        not_flags()
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
    ) -> Result<(), NotFlags> {
        not_flags()
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<(), NotFlags> {
        not_flags()
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), NotFlags> {
        not_flags()
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, NotFlags> {
        not_flags()
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, NotFlags> {
        not_flags()
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, NotFlags> {
        not_flags()
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, NotFlags> {
        not_flags()
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, NotFlags> {
        not_flags()
    }
}

fn not_flags<T>() -> Result<T, NotFlags> {
    Err(NotFlags("a role is a struct of flags".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_follow_the_role_in_order() {
        let argv = Argv::new("sender")
            .flag("--db", "a.db")
            .maybe("--seed", Some(3))
            .maybe("--batch", None::<u32>)
            .switch("--json", true)
            .switch("--quiet", false);
        assert_eq!(argv.role(), "sender");
        assert_eq!(argv.args(), ["--db", "a.db", "--seed", "3", "--json"]);
        assert_eq!(
            argv.into_vec().join(" "),
            "sender --db a.db --seed 3 --json"
        );
    }
}
