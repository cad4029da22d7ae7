//! Writing a checked catalog into a store: references resolved first, then one all-or-nothing
//! group of writes.

#[cfg(test)]
use crate::skills::register_skill;
use crate::skills::{SKILLS, SkillError, dependency_closure};
use crate::store::{Snapshot, Store, WriteTxn};
use crate::tools::{TOOLS, Tool};

use super::check::{Checked, ToolAt, check};
use super::error::{CatalogError, CatalogErrorKind, pointer};
use super::{Catalog, CatalogSkill};

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

    /// [`load_into`](Self::load_into), moving the catalog's tools into the store rather than
    /// cloning them: the same checks, writes, errors and report, without a second copy of
    /// every tool while the store is written. For a large catalog that is read only to be
    /// loaded (the CLI's `--catalog`), this is the lighter way: a 1,000,000-tool catalog holds
    /// about 0.7 GB that `load_into` would copy. On error nothing is written and the catalog is
    /// dropped.
    ///
    /// ```
    /// use capstore::catalog::Catalog;
    /// use capstore::{Store, TOOLS};
    /// let catalog = Catalog::from_json_str(r#"{"format": "capstore.catalog/v1",
    ///     "skills": [{"name": "files", "tools": [{"name": "read_file", "source": "files"}]}]}"#)?;
    /// let store = Store::new();
    /// let report = catalog.move_into(&store)?;
    /// assert_eq!((report.version, report.tools.len()), (1, 1));
    /// assert_eq!(report.tools[0], "files/read_file");
    /// let snapshot = store.snapshot();
    /// let tool = snapshot.get(&TOOLS, "files/read_file")?.expect("loaded");
    /// assert_eq!(tool.skills, ["files"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn move_into(mut self, store: &Store) -> Result<LoadReport, CatalogError> {
        let mut tx = store.begin();
        let (mut report, plan) = self.prepare(tx.view())?;
        let bundled: Vec<Vec<Tool>> = self
            .skills
            .iter_mut()
            .map(|skill| std::mem::take(&mut skill.tools))
            .collect();
        let standalone = std::mem::take(&mut self.tools);
        let owned = self.skills.iter().zip(bundled).flat_map(|(skill, tools)| {
            tools.into_iter().map(|tool| Tool {
                skills: vec![skill.name.clone()],
                ..tool
            })
        });
        let tools = owned.chain(standalone);
        tx.all_or_nothing(|tx| write(&self.skills, &plan, &report.tools, tools, tx))?;
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
        let (report, plan) = self.prepare(tx.view())?;
        let bundled = self.skills.iter().flat_map(|skill| {
            skill.tools.iter().map(|tool| Tool {
                skills: vec![skill.name.clone()],
                ..tool.clone()
            })
        });
        let tools = bundled.chain(self.tools.iter().cloned());
        tx.all_or_nothing(|tx| write(&self.skills, &plan, &report.tools, tools, tx))?;
        Ok(report)
    }

    /// Everything before the writes: the checks, [`resolve`] against `view`, the report (its
    /// version the one a commit on `view` publishes) and the [`Plan`] of the writes.
    pub(super) fn prepare(&self, view: &Snapshot) -> Result<(LoadReport, Plan), CatalogError> {
        let checked = check(self)?;
        resolve(self, &checked, view)?;
        let wrote = !self.skills.is_empty() || !self.tools.is_empty();
        let report = LoadReport {
            version: view.version() + u64::from(wrote),
            skills: checked
                .order
                .iter()
                .map(|&i| self.skills[i].name.clone())
                .collect(),
            tools: self.all_tools().map(|(_, t)| t.qualified_name()).collect(),
            pinned: self.pinned.clone(),
        };
        let mut first = 0;
        let mut starts: Vec<usize> = Vec::with_capacity(self.skills.len() + 1);
        for skill in &self.skills {
            starts.push(first);
            first += skill.tools.len();
        }
        starts.push(first);
        let order = checked.order;
        Ok((report, Plan { order, starts }))
    }

    /// Every tool with its place, in document order: the skills' bundled tools, then
    /// standalone.
    pub(super) fn all_tools(&self) -> impl Iterator<Item = (ToolAt, &crate::tools::Tool)> {
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
    // A store without tools (a first load) holds none of them: no name to write and look up.
    if view.count(&TOOLS)? > 0 {
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

/// What the writes need to know besides the tools, worked out before any tool is moved.
pub(super) struct Plan {
    /// Skill positions in registration order (dependencies first).
    order: Vec<usize>,
    /// Where each skill's bundled tools start in document order (the tools of skill `i` are
    /// `starts[i]..starts[i + 1]`); the last entry is where the standalone tools start.
    starts: Vec<usize>,
}

impl Plan {
    /// The place in the document of the tool at `index` in document order.
    fn tool_at(&self, index: usize) -> ToolAt {
        let standalone = self.starts.last().copied().unwrap_or(0);
        if index >= standalone {
            return ToolAt(None, index - standalone);
        }
        let skill = self.starts.partition_point(|&start| start <= index) - 1;
        ToolAt(Some(skill), index - self.starts[skill])
    }
}

/// The catalog's tools, saying how many there are (`names` has one per tool), which a chain
/// of per-skill iterators cannot: the bulk insert then sizes its batch once, and knows a batch
/// large enough to make its text on a second thread from the start.
struct Counted<I> {
    items: I,
    left: usize,
}

impl<I: Iterator> Iterator for Counted<I> {
    type Item = I::Item;

    fn next(&mut self) -> Option<I::Item> {
        let item = self.items.next()?;
        self.left = self.left.saturating_sub(1);
        Some(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

/// The writes, in two bulk inserts ([`WriteTxn::insert_many`]): `tools`, every tool in
/// document order (its qualified name in `names`), each bundled one already owned by its
/// skill; then every skill, in registration order, its `tools` list being its `uses` followed
/// by its bundled tools. That is what inserting each tool and then registering each skill with
/// [`register_skill`](crate::skills::register_skill) writes (the same rows, change set and
/// errors: `one_by_one` below, which the tests compare it with), without writing each tool
/// twice. `skills` are read for their records only: their `tools` may have been moved out.
pub(super) fn write(
    skills: &[CatalogSkill],
    plan: &Plan,
    names: &[String],
    tools: impl Iterator<Item = Tool>,
    tx: &mut WriteTxn,
) -> Result<(), CatalogError> {
    let tools = Counted {
        items: tools,
        left: names.len(),
    };
    tx.insert_many_at(&TOOLS, tools).map_err(|(i, e)| {
        CatalogError::at(
            plan.tool_at(i).pointer(),
            names.get(i).map(String::as_str),
            CatalogErrorKind::Store(Box::new(e)),
        )
    })?;
    let skill_error = |i: usize, e: SkillError| {
        CatalogError::at(
            pointer("", &[&"skills", &i]),
            Some(&skills[i].name),
            CatalogErrorKind::Skill(Box::new(e)),
        )
    };
    let records = plan.order.iter().map(|&i| {
        let mut record = skills[i].record();
        let bundled = &names[plan.starts[i]..plan.starts[i + 1]];
        record.tools.extend(bundled.iter().cloned());
        record.tools.shrink_to_fit();
        record
    });
    tx.insert_many_at(&SKILLS, records)
        .map_err(|(k, e)| skill_error(plan.order[k], SkillError::Store(e)))?;
    // The catalog's checks and `resolve` leave no missing dependency and no cycle; a store
    // whose own skills break the rule is reported at the first skill whose closure fails.
    let order: Vec<&str> = plan
        .order
        .iter()
        .map(|&i| skills[i].name.as_str())
        .collect();
    if dependency_closure(tx.view(), &order).is_err() {
        for &i in &plan.order {
            if let Err(e) = dependency_closure(tx.view(), &[&skills[i].name]) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_is_found_by_its_place_in_document_order() {
        // Skills of 2, 0 and 3 tools, then standalone tools.
        let plan = Plan {
            order: vec![0, 1, 2],
            starts: vec![0, 2, 2, 5],
        };
        let places: Vec<ToolAt> = (0..7).map(|i| plan.tool_at(i)).collect();
        assert_eq!(
            places,
            [
                ToolAt(Some(0), 0),
                ToolAt(Some(0), 1),
                ToolAt(Some(2), 0),
                ToolAt(Some(2), 1),
                ToolAt(Some(2), 2),
                ToolAt(None, 0),
                ToolAt(None, 1),
            ]
        );
        let none = Plan {
            order: vec![],
            starts: vec![0],
        };
        assert_eq!(none.tool_at(3), ToolAt(None, 3));
    }
}
