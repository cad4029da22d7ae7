//! From a snapshot back to a catalog (the export rule is in the module docs).

use std::collections::{BTreeMap, BTreeSet};

use crate::skills::{SKILLS, Skill};
use crate::store::{Snapshot, Store};
use crate::tools::{TOOLS, Tool};

use super::check::check;
use super::error::{CatalogError, CatalogErrorKind};
use super::load::resolve;
use super::{Catalog, CatalogFormat, CatalogSkill};

impl Catalog {
    /// The catalog of everything in `snapshot`'s tools and skills, with `pinned` as its pinned
    /// tools: skills by name, each with the tools it owns; standalone tools by qualified name.
    /// A tool owned by several skills is bundled by the first of them by name and listed in the
    /// others' `uses` (see the [module docs](super)).
    ///
    /// The result is checked like a parsed file and must be complete in itself (every
    /// dependency, `uses` and `pinned` entry inside it), so it loads into an empty store.
    ///
    /// ```
    /// use capstore::catalog::Catalog;
    /// use capstore::skills::register_skill;
    /// use capstore::{Skill, Store, Tool, TOOLS};
    /// let store = Store::new();
    /// store.write(|tx| {
    ///     tx.insert(&TOOLS, Tool::new("read_file", "Read a file").with_source("files"))?;
    ///     register_skill(tx, Skill::new("notes", "Take notes"), vec![Tool::new("add_note", "Add a note")])
    /// })?;
    /// let catalog = Catalog::from_snapshot(&store.snapshot(), &["files/read_file".into()])?;
    /// assert_eq!(catalog.skills[0].tools[0].name, "add_note");
    /// assert_eq!(catalog.tools[0].qualified_name(), "files/read_file");
    /// assert_eq!(catalog.pinned, ["files/read_file"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_snapshot(snapshot: &Snapshot, pinned: &[String]) -> Result<Catalog, CatalogError> {
        let skill_names: BTreeSet<&str> = snapshot.iter(&SKILLS)?.keys().map(|k| &**k).collect();
        // Owner of each owned tool: the first (by name) of its skills that exists.
        let mut owned: BTreeMap<&str, Vec<&Tool>> = BTreeMap::new();
        let mut standalone = Vec::new();
        for tool in snapshot.iter(&TOOLS)?.records() {
            let owner = tool
                .skills
                .iter()
                .map(String::as_str)
                .filter(|s| skill_names.contains(s))
                .min();
            match owner {
                Some(owner) => owned.entry(owner).or_default().push(tool),
                None => standalone.push(exported(tool)),
            }
        }
        let skills = snapshot
            .iter(&SKILLS)?
            .records()
            .map(|skill| {
                export_skill(
                    skill,
                    owned
                        .get(skill.name.as_str())
                        .map_or(&[][..], Vec::as_slice),
                )
            })
            .collect();
        let catalog = Catalog {
            format: CatalogFormat::V1,
            skills,
            tools: standalone,
            pinned: pinned.to_vec(),
        };
        catalog.check_complete()?;
        Ok(catalog)
    }

    /// The catalog as pretty-printed JSON, in the file format.
    ///
    /// ```
    /// use capstore::catalog::Catalog;
    /// let catalog = Catalog::bundled()?;
    /// assert_eq!(Catalog::from_json_str(&catalog.to_json_pretty()?)?, catalog);
    /// # Ok::<(), capstore::catalog::CatalogError>(())
    /// ```
    pub fn to_json_pretty(&self) -> Result<String, CatalogError> {
        let mut text = serde_json::to_string_pretty(self).map_err(|e| {
            CatalogError::at(
                "",
                None,
                CatalogErrorKind::Format {
                    message: e.to_string(),
                },
            )
        })?;
        text.push('\n');
        Ok(text)
    }

    /// Checks the catalog and that it needs nothing outside itself: the load-time checks
    /// against an empty store.
    fn check_complete(&self) -> Result<(), CatalogError> {
        let checked = check(self)?;
        resolve(self, &checked, &Store::new().snapshot())
    }
}

/// A skill with the tools it owns: bundled in the order its `tools` list names them, then any
/// owned tool it does not list, by qualified name; `uses` is the rest of its list, in order.
fn export_skill(skill: &Skill, owned: &[&Tool]) -> CatalogSkill {
    let owned_keys: BTreeMap<String, &Tool> =
        owned.iter().map(|t| (t.qualified_name(), *t)).collect();
    let mut tools = Vec::new();
    let mut uses = Vec::new();
    let mut placed = BTreeSet::new();
    for key in &skill.tools {
        if !placed.insert(key.as_str()) {
            continue;
        }
        match owned_keys.get(key) {
            Some(tool) => tools.push(exported(tool)),
            None => uses.push(key.clone()),
        }
    }
    for (key, tool) in &owned_keys {
        if !placed.contains(key.as_str()) {
            tools.push(exported(tool));
        }
    }
    CatalogSkill {
        name: skill.name.clone(),
        description: skill.description.clone(),
        category: skill.category.clone(),
        tags: skill.tags.clone(),
        dependencies: skill.dependencies.clone(),
        examples: skill.examples.clone(),
        tools,
        uses,
    }
}

/// The tool as a catalog writes it: without `skills`, which loading fills in.
fn exported(tool: &Tool) -> Tool {
    Tool {
        skills: Vec::new(),
        ..tool.clone()
    }
}
