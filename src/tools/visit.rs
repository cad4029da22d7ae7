//! Serde visitors shared by the input schema's two readers: [`super::schema`]'s walk of the
//! parameters and [`super::compact`]'s rewrite into stored text. Each reads any JSON value and
//! keeps only what it asks for; these are the parts they have in common.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, Visitor};

/// Implements a visitor's visits of the scalars other than strings, each giving `$nothing`.
macro_rules! anything_else {
    ($value:ty, $nothing:expr) => {
        fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<$value, E> {
            Ok($nothing)
        }
        fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<$value, E> {
            Ok($nothing)
        }
        fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<$value, E> {
            Ok($nothing)
        }
        fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<$value, E> {
            Ok($nothing)
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<$value, E> {
            Ok($nothing)
        }
        fn visit_none<E: serde::de::Error>(self) -> Result<$value, E> {
            Ok($nothing)
        }
    };
}

/// Implements the visit of a string, giving `$nothing`.
macro_rules! skip_strings {
    ($value:ty, $nothing:expr) => {
        fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<$value, E> {
            Ok($nothing)
        }
    };
}

/// Implements the visit of an array: skipped element by element, giving `$nothing`.
macro_rules! skip_seq {
    ($value:ty, $nothing:expr) => {
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<$value, A::Error> {
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
            Ok($nothing)
        }
    };
}

/// Implements the visit of an object: skipped member by member, giving `$nothing`.
macro_rules! skip_map {
    ($value:ty, $nothing:expr) => {
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<$value, A::Error> {
            while map
                .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                .is_some()
            {}
            Ok($nothing)
        }
    };
}

pub(super) use {anything_else, skip_map, skip_seq, skip_strings};

/// Reads a value that counts only when it is a string (borrowed from the text when it has no
/// escapes), and object keys.
pub(super) struct StringSeed;

impl<'de> DeserializeSeed<'de> for StringSeed {
    type Value = Option<Cow<'de, str>>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StringSeed {
    type Value = Option<Cow<'de, str>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    anything_else!(Self::Value, None);
    skip_seq!(Self::Value, None);
    skip_map!(Self::Value, None);

    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(Some(Cow::Borrowed(s)))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Some(Cow::Owned(s.to_string())))
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
        Ok(Some(Cow::Owned(s)))
    }
}
