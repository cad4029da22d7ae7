//! A tool to register, with what comes with it: its handler ([`Tool::with_handler`]).

use std::fmt;

use crate::store::{StoreError, WriteTxn};

use super::record::Tool;

/// What writes a tool's companion rows once the tool is in the transaction (its handler), given
/// the tool's key.
pub(crate) type Then = Box<dyn FnOnce(&mut WriteTxn, &str) -> Result<(), StoreError> + Send>;

/// A tool to register, and its handler when it has one: what
/// [`register_skill`](crate::skills::register_skill) and [`register`](crate::exec::register)
/// take, so that a tool and the code that runs it are written in one call, under one key
/// written once. A plain [`Tool`] converts into one without a handler;
/// [`Tool::with_handler`] makes one with.
///
/// ```
/// use capstore::skills::register_skill;
/// use capstore::{Skill, Store, Tool, HANDLERS};
/// let store = Store::new();
/// store.write(|tx| register_skill(tx, Skill::new("weather", "Forecasts"), [
///     Tool::new("get_forecast", "Forecast for a city").with_source("weather")
///         .with_handler(|args| async move { Ok(args) }),
///     Tool::new("get_alerts", "Storm alerts").with_source("weather").into(),
/// ]))?;
/// let snap = store.snapshot();
/// assert!(snap.contains(&HANDLERS, "weather/get_forecast")?);
/// assert!(!snap.contains(&HANDLERS, "weather/get_alerts")?);
/// # Ok::<(), capstore::skills::SkillError>(())
/// ```
pub struct Registration {
    /// The tool.
    pub tool: Tool,
    pub(crate) then: Option<Then>,
}

impl Registration {
    /// Whether it comes with a handler.
    ///
    /// ```
    /// let plain: capstore::tools::Registration = capstore::Tool::new("a", "b").into();
    /// assert!(!plain.has_handler());
    /// ```
    pub fn has_handler(&self) -> bool {
        self.then.is_some()
    }

    /// The tool and what writes its handler, apart.
    pub(crate) fn into_parts(self) -> (Tool, Option<Then>) {
        (self.tool, self.then)
    }
}

/// A tool without a handler.
impl From<Tool> for Registration {
    fn from(tool: Tool) -> Self {
        Registration { tool, then: None }
    }
}

impl fmt::Debug for Registration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registration")
            .field("tool", &self.tool)
            .field("handler", &self.has_handler())
            .finish()
    }
}
