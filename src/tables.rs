//! The built-in tables, `tools`, `skills`, `hooks`, `handlers`, `hook_handlers`, `vectors` and
//! `usage`, in the order every store declares them, and the stores that have them
//! ([`Store::new`], [`Store::builder`], [`Store::with_tool_text`]). Each table's handle
//! ([`TOOLS`](crate::tools::TOOLS), [`SKILLS`](crate::skills::SKILLS), ...) stands beside its
//! record and names its position in this order.

use crate::embed;
use crate::exec;
use crate::hooks;
use crate::skills;
use crate::store::{SchemaError, Store, StoreBuilder};
use crate::tools::{self, ToolTextOptions};
use crate::usage;

/// How many built-in tables come first in every store made by [`Store::new`] or
/// [`Store::builder`]; given to the store, which knows them only by this count.
const BUILTIN_TABLES: usize = 7;

fn declare_builtins(builder: &mut StoreBuilder) -> Result<(), SchemaError> {
    declare_builtins_with(builder, ToolTextOptions::default())
}

fn declare_builtins_with(
    builder: &mut StoreBuilder,
    options: ToolTextOptions,
) -> Result<(), SchemaError> {
    let tokenizer = options.tokenizer.clone();
    // The order fixes the positions that the constant handles (TOOLS, ..., USAGE) name.
    builder.table(tools::tools_schema_with(options))?;
    builder.table(skills::schema(tokenizer))?;
    builder.table(hooks::schema())?;
    builder.table(exec::handler_schema())?;
    builder.table(exec::hook_handler_schema())?;
    builder.table(embed::vectors_schema())?;
    builder.table(usage::schema())?;
    Ok(())
}

impl Store {
    /// An empty store with the built-in tables (`tools`, `skills`, `hooks`, `handlers`,
    /// `hook_handlers`, `vectors`, `usage`).
    ///
    /// ```
    /// let store = capstore::Store::new();
    /// assert_eq!(store.version(), 0);
    /// ```
    pub fn new() -> Store {
        Store::builder().build()
    }

    /// A builder that starts with the built-in tables, to which you may add your own.
    ///
    /// ```
    /// use capstore::store::TableSchema;
    /// let mut builder = capstore::Store::builder();
    /// let notes = builder.table(TableSchema::new("notes", |n: &String| n.clone()))?;
    /// let store = builder.build();
    /// store.write(|tx| tx.insert(&notes, "hello".to_string()))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder() -> StoreBuilder {
        // The built-in declarations are constants, checked by the tests below; were one ever to
        // fail, a bare builder is returned and every built-in handle reports TableMismatch,
        // rather than the library panicking.
        StoreBuilder::with_builtins(BUILTIN_TABLES, declare_builtins).unwrap_or_default()
    }
}

impl Store {
    /// An empty store like [`Store::new`], whose tools table indexes text with `options`
    /// (tokenizer, BM25 parameters, field weights) instead of the defaults.
    ///
    /// Fails if the options are out of range (a negative `k1`, `b` above 1, a negative weight).
    ///
    /// ```
    /// use capstore::tools::ToolTextOptions;
    /// use capstore::{Store, Tool, TOOLS};
    /// let mut options = ToolTextOptions::default();
    /// options.index.params.k1 = 0.9;
    /// let store = Store::with_tool_text(options)?;
    /// store.write(|tx| tx.insert(&TOOLS, Tool::new("get_weather", "Weather")))?;
    /// assert_eq!(store.snapshot().text_index(&TOOLS)?.config().params.k1, 0.9);
    ///
    /// let mut bad = ToolTextOptions::default();
    /// bad.index.params.b = 2.0;
    /// assert!(Store::with_tool_text(bad).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_tool_text(options: ToolTextOptions) -> Result<Store, SchemaError> {
        StoreBuilder::with_builtins(BUILTIN_TABLES, |b| declare_builtins_with(b, options))
            .map(StoreBuilder::build)
    }
}

impl Default for Store {
    fn default() -> Self {
        Store::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::VECTORS;
    use crate::exec::{HANDLERS, HOOK_HANDLERS};
    use crate::hooks::HOOKS;
    use crate::skills::SKILLS;
    use crate::tools::TOOLS;
    use crate::usage::USAGE;

    #[test]
    fn builtin_schema_is_valid_and_in_order() {
        let builder =
            StoreBuilder::with_builtins(BUILTIN_TABLES, declare_builtins).expect("valid built-ins");
        let snap = builder.build().snapshot();
        // The count the store is given must be the tables declared, or a built-in handle
        // past it would not fit.
        assert_eq!(snap.table_names().count(), BUILTIN_TABLES);
        assert_eq!(
            snap.table_names().collect::<Vec<_>>(),
            [
                "tools",
                "skills",
                "hooks",
                "handlers",
                "hook_handlers",
                "vectors",
                "usage"
            ]
        );
        assert_eq!(snap.table_name(&TOOLS).expect("tools"), "tools");
        assert_eq!(snap.table_name(&SKILLS).expect("skills"), "skills");
        assert_eq!(snap.table_name(&HOOKS).expect("hooks"), "hooks");
        assert_eq!(snap.table_name(&HANDLERS).expect("handlers"), "handlers");
        assert_eq!(
            snap.table_name(&HOOK_HANDLERS).expect("hook_handlers"),
            "hook_handlers"
        );
        assert_eq!(snap.table_name(&VECTORS).expect("vectors"), "vectors");
        assert_eq!(snap.table_name(&USAGE).expect("usage"), "usage");
    }

    #[test]
    fn builtin_handles_do_not_fit_a_bare_store() {
        let bare = StoreBuilder::new().build();
        assert!(bare.snapshot().count(&TOOLS).is_err());
    }
}
