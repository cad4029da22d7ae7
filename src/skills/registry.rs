//! Registering and unregistering skills with their tools, atomically.
//!
//! # Ownership rule
//! A tool is *owned* by the skills it was bundled with (its [`Tool::skills`] field, indexed as
//! `skill`). A skill may also *list* tools registered on their own or by other skills; listing
//! does not own. Unregistering a skill deletes the tools it alone owned (and their handlers,
//! if they were registered with code), drops it from the
//! `skills` of tools it shared, and leaves listed tools alone. A tool cannot be removed through
//! [`unregister_tool`] while a skill lists it.

use super::SKILLS;
use crate::skills::Skill;
use crate::store::{Snapshot, StoreError, WriteTxn};
use crate::tools::{Registration, TOOLS, Tool};

use super::deps::dependency_closure;
use super::error::SkillError;

/// What [`unregister_skill`] removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unregistered {
    /// The removed skill.
    pub skill: Skill,
    /// Qualified names of the tools deleted with it (it alone owned them).
    pub removed_tools: Vec<String>,
    /// Qualified names of the tools it shared with other skills, which stay.
    pub kept_tools: Vec<String>,
}

/// Registers `skill` with the tools it bundles, inside `tx`, all or nothing.
///
/// A bundled tool that names no [`source`](crate::Tool::source) takes the skill's name as
/// its source, so its key is `skill/name` (one that names one keeps it; `with_source("")`
/// keeps a tool unqualified). A [catalog](crate::catalog)'s tools say their own source, as
/// [`Catalog::from_snapshot`](crate::catalog::Catalog::from_snapshot) writes them.
///
/// The bundled tools are added (or, when a tool with the same qualified name exists, replaced
/// with the new definition and shared: both skills own it), each with its handler when it
/// comes with one ([`Tool::with_handler`](crate::Tool::with_handler)); plain [`Tool`]s and
/// [`Registration`]s mix in one list with `.into()`. The skill's `tools` list gets the
/// bundled tools' qualified names; any other name it lists must be a registered tool. Its
/// dependencies must be registered (in the store or earlier in `tx`) and free of cycles. On
/// error, `tx` is exactly as it was before the call.
///
/// ```
/// use capstore::skills::register_skill;
/// use capstore::{Skill, Store, Tool, TOOLS, TOOLS_BY_SKILL, TOOLS_BY_SOURCE};
/// let store = Store::new();
/// store.write(|tx| register_skill(
///     tx,
///     Skill::new("files", "Read and write files").with_tags(["fs"]),
///     vec![Tool::new("read_file", "Read a file"), Tool::new("write_file", "Write a file")],
/// ))?;
/// let snap = store.snapshot();
/// assert_eq!(snap.by(&TOOLS_BY_SKILL, "files")?.count(), 2);
/// // They come from the skill: found by source, keyed `files/…`.
/// assert_eq!(snap.by(&TOOLS_BY_SOURCE, "files")?.count(), 2);
/// assert!(snap.contains(&TOOLS, "files/read_file")?);
/// # Ok::<(), capstore::skills::SkillError>(())
/// ```
pub fn register_skill<T: Into<Registration>>(
    tx: &mut WriteTxn,
    skill: Skill,
    tools: impl IntoIterator<Item = T>,
) -> Result<(), SkillError> {
    let tools: Vec<Registration> = tools.into_iter().map(Into::into).collect();
    tx.all_or_nothing(|tx| register_inner(tx, skill, tools))
}

fn register_inner(
    tx: &mut WriteTxn,
    mut skill: Skill,
    tools: Vec<Registration>,
) -> Result<(), SkillError> {
    // Validate the skill record first, so a bad skill does not get as far as writing tools.
    skill.validate().map_err(|error| {
        SkillError::Store(StoreError::InvalidRecord {
            table: "skills".into(),
            key: skill.name.as_str().into(),
            error,
        })
    })?;
    if tx.view().contains(&SKILLS, &skill.name)? {
        return Err(SkillError::Store(StoreError::DuplicateKey {
            table: "skills".into(),
            key: skill.name.as_str().into(),
        }));
    }
    let mut bundled = Vec::with_capacity(tools.len());
    for registration in tools {
        let (mut tool, handler) = registration.into_parts();
        // A tool that names no source comes from its skill: its key is `skill/name`, and
        // `TOOLS_BY_SOURCE` finds it under the skill's name.
        if tool.source.is_none() {
            tool.source = Some(skill.name.clone());
        }
        let key = tool.qualified_name();
        let mut owners: Vec<String> = match tx.view().get(&TOOLS, &key)? {
            Some(existing) => existing.skills.clone(),
            None => Vec::new(),
        };
        for owner in tool.skills.drain(..) {
            push_unique(&mut owners, owner);
        }
        push_unique(&mut owners, skill.name.clone());
        // Stored for as long as the tool is: no spare capacity.
        owners.shrink_to_fit();
        tool.skills = owners;
        tx.upsert(&TOOLS, tool)?;
        if let Some(handler) = handler {
            handler(tx, &key)?;
        }
        bundled.push(key);
    }
    for listed in &skill.tools {
        if !bundled.contains(listed) && !tx.view().contains(&TOOLS, listed)? {
            return Err(SkillError::UnknownTool {
                skill: skill.name.clone(),
                tool: listed.clone(),
            });
        }
    }
    for key in bundled {
        push_unique(&mut skill.tools, key);
    }
    skill.tools.shrink_to_fit();
    let name = skill.name.clone();
    tx.insert(&SKILLS, skill)?;
    dependency_closure(tx.view(), &[name])?;
    Ok(())
}

fn push_unique(list: &mut Vec<String>, item: String) {
    if !list.contains(&item) {
        list.push(item);
    }
}

/// Removes a skill and the tools it alone owned, inside `tx`, all or nothing. Fails with
/// [`SkillError::NotFound`], or [`SkillError::DependedOn`] while other skills depend on it.
///
/// ```
/// use capstore::skills::{register_skill, unregister_skill};
/// use capstore::{Skill, Store, Tool, TOOLS};
/// let store = Store::new();
/// store.write(|tx| {
///     let shared = Tool::new("shared", "").with_source("common");
///     register_skill(tx, Skill::new("a", ""), vec![Tool::new("only_a", ""), shared.clone()])?;
///     register_skill(tx, Skill::new("b", ""), vec![shared])
/// })?;
/// let mut tx = store.begin();
/// let gone = unregister_skill(&mut tx, "a")?;
/// tx.commit();
/// assert_eq!((gone.removed_tools, gone.kept_tools), (vec!["a/only_a".to_string()], vec!["common/shared".to_string()]));
/// assert!(store.snapshot().get(&TOOLS, "common/shared")?.is_some());
/// # Ok::<(), capstore::skills::SkillError>(())
/// ```
pub fn unregister_skill(tx: &mut WriteTxn, name: &str) -> Result<Unregistered, SkillError> {
    tx.all_or_nothing(|tx| unregister_inner(tx, name))
}

fn unregister_inner(tx: &mut WriteTxn, name: &str) -> Result<Unregistered, SkillError> {
    let dependents: Vec<String> = tx
        .view()
        .by_index(&SKILLS, "dependency", name)?
        .map(|(key, _)| key.to_string())
        .collect();
    if !dependents.is_empty() {
        return Err(SkillError::DependedOn {
            skill: name.to_string(),
            dependents,
        });
    }
    let skill = match tx.delete(&SKILLS, name) {
        Ok(skill) => skill,
        Err(StoreError::NotFound { .. }) => {
            return Err(SkillError::NotFound {
                skill: name.to_string(),
            });
        }
        Err(e) => return Err(e.into()),
    };
    let owned: Vec<Tool> = tx
        .view()
        .by_index(&TOOLS, "skill", name)?
        .map(|(_, tool)| tool.clone())
        .collect();
    let mut removed_tools = Vec::new();
    let mut kept_tools = Vec::new();
    for mut tool in owned {
        let key = tool.qualified_name();
        tool.skills.retain(|s| s != name);
        if tool.skills.is_empty() && !listed_by_any_skill(tx.view(), &key)? {
            // Its handler, if it has one, goes with it (the `handlers` table's rule).
            tx.delete(&TOOLS, &key)?;
            removed_tools.push(key);
        } else {
            tx.update(&TOOLS, tool)?;
            kept_tools.push(key);
        }
    }
    Ok(Unregistered {
        skill: (*skill).clone(),
        removed_tools,
        kept_tools,
    })
}

fn listed_by_any_skill(snapshot: &Snapshot, tool: &str) -> Result<bool, SkillError> {
    Ok(snapshot.count_by_index(&SKILLS, "tool", tool)? > 0)
}

/// Removes a tool, unless a skill lists it ([`SkillError::ToolInUse`] names them).
///
/// ```
/// use capstore::skills::{register_skill, unregister_tool, SkillError};
/// use capstore::{Skill, Store, Tool, TOOLS};
/// let store = Store::new();
/// store.write(|tx| {
///     tx.insert(&TOOLS, Tool::new("free", ""))?;
///     register_skill(tx, Skill::new("s", ""), vec![Tool::new("bound", "")])
/// })?;
/// let mut tx = store.begin();
/// unregister_tool(&mut tx, "free")?;
/// assert!(matches!(unregister_tool(&mut tx, "s/bound"), Err(SkillError::ToolInUse { .. })));
/// # Ok::<(), SkillError>(())
/// ```
pub fn unregister_tool(tx: &mut WriteTxn, key: &str) -> Result<Tool, SkillError> {
    let skills = skills_listing(tx.view(), key)?;
    if !skills.is_empty() {
        return Err(SkillError::ToolInUse {
            tool: key.to_string(),
            skills,
        });
    }
    Ok((*tx.delete(&TOOLS, key)?).clone())
}

/// The skills that list the tool under `key` (which may not be removed while any does).
pub(crate) fn skills_listing(snapshot: &Snapshot, key: &str) -> Result<Vec<String>, StoreError> {
    Ok(snapshot
        .by_index(&SKILLS, "tool", key)?
        .map(|(skill, _)| skill.to_string())
        .collect())
}
