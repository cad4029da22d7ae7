//! Reading an input schema straight into its stored text: compact JSON with every object's keys
//! in sorted order (a repeated key keeping its last value), byte for byte what parsing it into a
//! `serde_json::Value` and writing that out gives, without building the `Value`.
//!
//! Objects are written as they come; one whose keys do not arrive in order (or repeat) is put
//! in order afterwards from the spans of its members, so sorted input (most schemas written
//! by programs) costs no second pass.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::visit::StringSeed;

/// What reading a schema found out, besides its text.
pub(super) struct Compacted {
    /// The compact text (valid UTF-8: written from `str`s and serde_json's number formats).
    pub text: String,
    /// Whether the top level is a JSON object.
    pub is_object: bool,
    /// For an object: whether its `type` member (the last, if repeated) is absent or the
    /// string `"object"`.
    pub type_is_object: bool,
    /// How deeply arrays and objects nest (a scalar is 0 deep).
    pub depth: usize,
}

/// Reads any JSON value from `deserializer` into [`Compacted`].
pub(super) fn compact<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Compacted, D::Error> {
    let mut state = State {
        // Most schemas fit in 512 bytes (the bundled catalog's median is 316), so the text is
        // written without growing its buffer, each growth a copy; `compact`'s caller copies
        // the text into its own allocation anyway.
        out: Vec::with_capacity(512),
        depth: 0,
        top_type: None,
    };
    Writer {
        state: &mut state,
        depth: 0,
    }
    .deserialize(deserializer)?;
    let is_object = state.out.first() == Some(&b'{');
    let text = String::from_utf8(state.out)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    Ok(Compacted {
        text,
        is_object,
        type_is_object: state.top_type.unwrap_or(true),
        depth: state.depth,
    })
}

/// Reads a `Value` as [`compact`] reads text: its keys sorted whether or not this build's
/// serde_json keeps a map's order (its `preserve_order`, which any crate in the build may turn
/// on: rig does).
pub(super) fn compact_value(value: &Value) -> Compacted {
    // Reading a `Value` cannot fail (its keys are strings, and the writer takes every element
    // and member it is given); were it ever to, the `Value`'s own text stands, its keys in the
    // map's order.
    compact(value).unwrap_or_else(|_| Compacted {
        text: value.to_string(),
        is_object: value.is_object(),
        type_is_object: value
            .get("type")
            .is_none_or(|t| t.as_str() == Some("object")),
        depth: depth(value),
    })
}

/// How deeply arrays and objects nest in `value` (a scalar is 0 deep).
fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// `value` as compact JSON text with every object's keys in sorted order: what serde_json
/// writes by default, and the same text in a build where a crate turned on its `preserve_order`
/// (rig does). For text that is sent, hashed or compared across builds.
pub(crate) fn canonical_json(value: &Value) -> String {
    compact_value(value).text
}

struct State {
    out: Vec<u8>,
    /// The deepest nesting seen.
    depth: usize,
    /// Whether the top-level object's last `type` member was the string `"object"`.
    top_type: Option<bool>,
}

/// Writes one value at nesting level `depth` (the number of arrays and objects around it).
struct Writer<'s> {
    state: &'s mut State,
    depth: usize,
}

impl Writer<'_> {
    fn number<T: serde::Serialize>(self, n: T) {
        // serde_json's own formats (itoa, ryu), as writing a `Value` uses.
        let _ = serde_json::to_writer(&mut self.state.out, &n);
    }

    fn child(&mut self) -> Writer<'_> {
        Writer {
            state: self.state,
            depth: self.depth + 1,
        }
    }

    fn opened(&mut self) {
        self.state.depth = self.state.depth.max(self.depth + 1);
    }
}

impl<'de> DeserializeSeed<'de> for Writer<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Writer<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        let text: &[u8] = if v { b"true" } else { b"false" };
        self.state.out.extend_from_slice(text);
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.number(v);
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.number(v);
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        // A `Value` holds a float as a `Number` only when finite, else `Null`.
        if v.is_finite() {
            self.number(v);
        } else {
            self.state.out.extend_from_slice(b"null");
        }
        Ok(())
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        let _ = serde_json::to_writer(&mut self.state.out, v);
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.state.out.extend_from_slice(b"null");
        Ok(())
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        self.opened();
        self.state.out.push(b'[');
        let mut first = true;
        loop {
            let at = self.state.out.len();
            if !first {
                self.state.out.push(b',');
            }
            if seq.next_element_seed(self.child())?.is_none() {
                self.state.out.truncate(at);
                break;
            }
            first = false;
        }
        self.state.out.push(b']');
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        self.opened();
        let start = self.state.out.len();
        self.state.out.push(b'{');
        // Each member's key and the span of its `"key":value` text.
        let mut members: Vec<(Cow<'de, str>, usize, usize)> = Vec::new();
        let mut in_order = true;
        while let Some(key) = map.next_key_seed(StringSeed)? {
            // (JSON keys are strings.)
            let key = key.unwrap_or_default();
            if members.last().is_some_and(|(last, _, _)| *last >= key) {
                in_order = false;
            }
            if !members.is_empty() {
                self.state.out.push(b',');
            }
            let from = self.state.out.len();
            let _ = serde_json::to_writer(&mut self.state.out, &*key);
            self.state.out.push(b':');
            let value_at = self.state.out.len();
            map.next_value_seed(self.child())?;
            if self.depth == 0 && key == "type" {
                self.state.top_type = Some(&self.state.out[value_at..] == b"\"object\"");
            }
            members.push((key, from, self.state.out.len()));
        }
        if !in_order {
            // Sort by key, keeping the last of a repeated key, and write the members again.
            let body = self.state.out.split_off(start + 1);
            let offset = start + 1;
            let mut order: Vec<usize> = (0..members.len()).collect();
            order.sort_by(|&a, &b| members[a].0.cmp(&members[b].0).then(b.cmp(&a)));
            order.dedup_by(|later, kept| members[*later].0 == members[*kept].0);
            for (n, &i) in order.iter().enumerate() {
                if n > 0 {
                    self.state.out.push(b',');
                }
                let (_, from, to) = &members[i];
                self.state
                    .out
                    .extend_from_slice(&body[from - offset..to - offset]);
            }
        }
        self.state.out.push(b'}');
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::{compact, compact_value};

    #[test]
    fn the_text_a_parsed_value_writes() {
        let inputs = [
            r#"{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"integer"}}}"#,
            r#"{"z":1,"a":2,"z":3,"m":[1,-2,3.5,1e300,-0.0,0,true,null,"x\"y\\\u00e9\n"]}"#,
            r#"{"a":{"c":[{"e":1,"d":2},[]],"b":{}},"a":5,"":"empty","\u0000":"nul"}"#,
            r#"[{"b":1,"a":2},"s",12345678901234567890,-9223372036854775808]"#,
            r#""just a string""#,
            r#"{"type":"array","items":{"type":"object"}}"#,
            r#"{"type":"object","type":"string"}"#,
            r#"{"type":"string","type":"object"}"#,
            r#"{"k":0.1,"l":100000000000000000000000.0,"m":1.5e-7}"#,
            r#"{"é":1,"e":2,"ée":3,"\ud83d\ude00":4}"#,
        ];
        for input in inputs {
            let value: Value = serde_json::from_str(input).expect("valid JSON");
            let mut de = serde_json::Deserializer::from_str(input);
            let got = compact(&mut de).expect("compacts");
            // Keys sorted, as serde_json writes them unless a crate turned on its
            // `preserve_order` (rig does).
            let mut sorted = value.clone();
            sorted.sort_all_objects();
            assert_eq!(
                got.text,
                serde_json::to_string(&sorted).expect("writes"),
                "{input}"
            );
            // Read from the `Value` (`InputSchema::from`), whatever its keys' order.
            assert_eq!(compact_value(&value).text, got.text, "{input}");
            assert_eq!(got.is_object, value.is_object(), "{input}");
            let type_is_object = value
                .get("type")
                .is_none_or(|t| t.as_str() == Some("object"));
            assert_eq!(got.type_is_object, type_is_object, "{input}");
        }
    }

    #[test]
    fn depth_counts_arrays_and_objects() {
        for (input, depth) in [
            ("1", 0),
            ("[]", 1),
            (r#"{"a":[{}]}"#, 3),
            (r#"[[1],[[2]]]"#, 3),
        ] {
            let mut de = serde_json::Deserializer::from_str(input);
            assert_eq!(compact(&mut de).expect("compacts").depth, depth, "{input}");
            // As `compact_value` measures a `Value` were reading it ever to fail.
            let value: Value = serde_json::from_str(input).expect("valid JSON");
            assert_eq!(super::depth(&value), depth, "{input}");
        }
    }
}
