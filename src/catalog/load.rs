//! Writing a checked catalog into a store: references resolved first, then one all-or-nothing
//! group of writes.

use crate::Tool;
#[cfg(test)]
use crate::skills::register_skill;
use crate::skills::{SkillError, dependency_closure};
use crate::store::{Snapshot, Store, WriteTxn};
use crate::tables::{SKILLS, TOOLS};

use super::Catalog;
use super::check::{Checked, ToolAt, check};
use super::error::{CatalogError, CatalogErrorKind, pointer};

/// What [`Catalog::load_into`] or [`Catalog::apply`] wrote.
///
/// ```
/// use capstore::catalog::Catalog;
/// let report = Catalog::bundled()?.load_into(&capstore::Store::new())?;
/// assert_eq!(report.version, 1);
/// assert!(!report.skills.is_empty() && !report.tools.is_empty());
/// # Ok::<(), capstore::catalog::CatalogError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadReport {
    /// The version the commit published ([`Catalog::load_into`]); for [`Catalog::apply`], the
    /// version the transaction publishes when committed: its base version + 1, or the base
    /// version when the catalog has no skill and no tool.
    pub version: u64,
    /// The skills registered, in registration order (dependencies first).
    pub skills: Vec<String>,
    /// The qualified names of the tools added, in document order (bundled, then standalone).
    pub tools: Vec<String>,
    /// The pinned tools, as in the catalog.
    pub pinned: Vec<String>,
}

impl Catalog {
    /// Loads the catalog into `store` in one transaction, all or nothing: on error nothing is
    /// published and the store is exactly as it was. See the [module docs](super) for the rules.
    ///
    /// ```
    /// use capstore::catalog::{Catalog, CatalogErrorKind};
    /// use capstore::{Store, TOOLS};
    /// let catalog = Catalog::from_json_str(r#"{"format": "capstore.catalog/v1",
    ///     "tools": [{"name": "read_file", "source": "files", "description": "Read a file"}]}"#)?;
    /// let store = Store::new();
    /// assert_eq!(catalog.load_into(&store)?.tools, ["files/read_file"]);
    /// assert!(store.snapshot().contains(&TOOLS, "files/read_file")?);
    ///
    /// // Loading it again would replace the tool: refused, and nothing changes.
    /// let err = catalog.load_into(&store).unwrap_err();
    /// assert_eq!((err.path.as_str(), &err.kind), ("/tools/0", &CatalogErrorKind::ToolExists));
    /// assert_eq!(store.version(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn load_into(&self, store: &Store) -> Result<LoadReport, CatalogError> {
        let mut tx = store.begin();
        let mut report = self.apply(&mut tx)?;
        report.version = tx.commit().version;
        Ok(report)
    }

    /// Writes the catalog into a transaction the caller holds, all or nothing: on error every
    /// write of this call is undone and the writes made before it stay.
    ///
    /// ```
    /// use capstore::catalog::Catalog;
    /// use capstore::{Store, Tool, TOOLS};
    /// let catalog = Catalog::from_json_str(r#"{"format": "capstore.catalog/v1",
    ///     "skills": [{"name": "notes", "uses": ["search"]}]}"#)?;
    /// let store = Store::new();
    /// let mut tx = store.begin();
    /// tx.insert(&TOOLS, Tool::new("search", "Search notes"))?; // `uses` may name it
    /// let report = catalog.apply(&mut tx)?;
    /// assert_eq!((report.version, tx.commit().version), (1, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn apply(&self, tx: &mut WriteTxn) -> Result<LoadReport, CatalogError> {
        let checked = check(self)?;
        resolve(self, &checked, tx.view())?;
        tx.all_or_nothing(|tx| write(self, &checked, tx))?;
        let wrote = !self.skills.is_empty() || !self.tools.is_empty();
        Ok(LoadReport {
            version: tx.base_version() + u64::from(wrote),
            skills: checked
                .order
                .iter()
                .map(|&i| self.skills[i].name.clone())
                .collect(),
            tools: self.all_tools().map(|(_, t)| t.qualified_name()).collect(),
            pinned: self.pinned.clone(),
        })
    }

    /// Every tool with its place, in document order: the skills' bundled tools, then
    /// standalone.
    pub(super) fn all_tools(&self) -> impl Iterator<Item = (ToolAt, &crate::Tool)> {
        let bundled = self.skills.iter().enumerate().flat_map(|(i, skill)| {
            skill
                .tools
                .iter()
                .enumerate()
                .map(move |(j, tool)| (ToolAt(Some(i), j), tool))
        });
        let standalone = self
            .tools
            .iter()
            .enumerate()
            .map(|(j, tool)| (ToolAt(None, j), tool));
        bundled.chain(standalone)
    }
}

/// Checks, before any write, that the catalog fits the store: its skills and tools are new,
/// and every dependency, `uses` and `pinned` entry names something in the catalog or the store.
pub(super) fn resolve(
    catalog: &Catalog,
    checked: &Checked<'_>,
    view: &Snapshot,
) -> Result<(), CatalogError> {
    for (i, skill) in catalog.skills.iter().enumerate() {
        let base = pointer("", &[&"skills", &i]);
        let name = Some(skill.name.as_str());
        if view.contains(&SKILLS, &skill.name)? {
            return Err(CatalogError::at(base, name, CatalogErrorKind::SkillExists));
        }
        for (k, dependency) in skill.dependencies.iter().enumerate() {
            if !checked.skills.contains_key(dependency.as_str())
                && !view.contains(&SKILLS, dependency)?
            {
                return Err(CatalogError::at(
                    pointer(&base, &[&"dependencies", &k]),
                    name,
                    CatalogErrorKind::UnknownDependency {
                        dependency: dependency.clone(),
                    },
                ));
            }
        }
        for (k, used) in skill.uses.iter().enumerate() {
            if !checked.tools.contains_key(used) && !view.contains(&TOOLS, used)? {
                return Err(CatalogError::at(
                    pointer(&base, &[&"uses", &k]),
                    name,
                    CatalogErrorKind::UnknownTool { tool: used.clone() },
                ));
            }
        }
    }
    for (at, tool) in catalog.all_tools() {
        let key = tool.qualified_name();
        if view.contains(&TOOLS, &key)? {
            return Err(CatalogError::at(
                at.pointer(),
                Some(&key),
                CatalogErrorKind::ToolExists,
            ));
        }
    }
    for (k, pinned) in catalog.pinned.iter().enumerate() {
        if !checked.tools.contains_key(pinned) && !view.contains(&TOOLS, pinned)? {
            return Err(CatalogError::at(
                pointer("", &[&"pinned", &k]),
                None,
                CatalogErrorKind::UnknownTool {
                    tool: pinned.clone(),
                },
            ));
        }
    }
    Ok(())
}

/// The writes, in two bulk inserts ([`WriteTxn::insert_many`]): every tool, in document order,
/// each bundled one already owned by its skill; then every skill, in registration order, its
/// `tools` list being its `uses` followed by its bundled tools. That is what inserting each
/// tool and then registering each skill with [`register_skill`](crate::skills::register_skill)
/// writes (the same rows, change set and errors: `one_by_one` below, which the tests compare
/// it with), without writing each tool twice.
pub(super) fn write(
    catalog: &Catalog,
    checked: &Checked<'_>,
    tx: &mut WriteTxn,
) -> Result<(), CatalogError> {
    let bundled = catalog.skills.iter().flat_map(|skill| {
        skill.tools.iter().map(|tool| Tool {
            skills: vec![skill.name.clone()],
            ..tool.clone()
        })
    });
    let tools = bundled.chain(catalog.tools.iter().cloned());
    tx.insert_many_at(&TOOLS, tools).map_err(|(i, e)| {
        let (at, tool) = catalog.all_tools().nth(i).unzip();
        CatalogError::at(
            at.map(ToolAt::pointer).unwrap_or_default(),
            tool.map(Tool::qualified_name).as_deref(),
            CatalogErrorKind::Store(Box::new(e)),
        )
    })?;
    let skill_error = |i: usize, e: SkillError| {
        let skill = &catalog.skills[i];
        CatalogError::at(
            pointer("", &[&"skills", &i]),
            Some(&skill.name),
            CatalogErrorKind::Skill(Box::new(e)),
        )
    };
    let skills = checked.order.iter().map(|&i| {
        let skill = &catalog.skills[i];
        let mut record = skill.record();
        record
            .tools
            .extend(skill.tools.iter().map(Tool::qualified_name));
        record.tools.shrink_to_fit();
        record
    });
    tx.insert_many_at(&SKILLS, skills)
        .map_err(|(k, e)| skill_error(checked.order[k], SkillError::Store(e)))?;
    // The catalog's checks and `resolve` leave no missing dependency and no cycle; a store
    // whose own skills break the rule is reported at the first skill whose closure fails.
    let names: Vec<&str> = checked
        .order
        .iter()
        .map(|&i| catalog.skills[i].name.as_str())
        .collect();
    if dependency_closure(tx.view(), &names).is_err() {
        for &i in &checked.order {
            if let Err(e) = dependency_closure(tx.view(), &[&catalog.skills[i].name]) {
                return Err(skill_error(i, e));
            }
        }
    }
    Ok(())
}

/// The writes one record at a time: each tool inserted, then each skill registered with
/// [`register_skill`]. [`write`] must write exactly what this does.
#[cfg(test)]
pub(super) fn one_by_one(
    catalog: &Catalog,
    checked: &Checked<'_>,
    tx: &mut WriteTxn,
) -> Result<(), CatalogError> {
    for (at, tool) in catalog.all_tools() {
        tx.insert(&TOOLS, tool.clone()).map_err(|e| {
            CatalogError::at(
                at.pointer(),
                Some(&tool.qualified_name()),
                CatalogErrorKind::Store(Box::new(e)),
            )
        })?;
    }
    for &i in &checked.order {
        let skill = &catalog.skills[i];
        register_skill(tx, skill.record(), skill.tools.clone()).map_err(|e| {
            CatalogError::at(
                pointer("", &[&"skills", &i]),
                Some(&skill.name),
                CatalogErrorKind::Skill(Box::new(e)),
            )
        })?;
    }
    Ok(())
}
