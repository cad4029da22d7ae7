//! The checks a catalog passes before anything is written: every record by the store's rules,
//! unique names, no `skills` in tools, acyclic dependencies; and the registration order.
//!
//! References the catalog does not satisfy itself (a dependency, `uses` or `pinned` entry
//! naming something outside it) are left to the loader, which sees the store.

use std::collections::HashMap;

use crate::bm25::hash::StrState;
use crate::skills::Skill;
use crate::store::RecordError;
use crate::tools::Tool;

use super::error::{CatalogError, CatalogErrorKind, pointer};
use super::{Catalog, CatalogSkill};

/// What the checks found out, for the loader and the exporter.
pub(super) struct Checked<'c> {
    /// Skill positions in registration order: dependencies first, then file order.
    pub order: Vec<usize>,
    /// Skill name → position in `skills`.
    pub skills: HashMap<&'c str, usize>,
    /// Qualified tool name → its place in the document.
    pub tools: HashMap<String, ToolAt, StrState>,
}

/// Where a tool is in the document: `(Some(i), j)` is `/skills/i/tools/j`, `(None, j)` is
/// `/tools/j`. The path is written out only for an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct ToolAt(pub Option<usize>, pub usize);

impl ToolAt {
    /// The JSON pointer of the tool.
    pub(super) fn pointer(self) -> String {
        match self {
            ToolAt(Some(i), j) => pointer("", &[&"skills", &i, &"tools", &j]),
            ToolAt(None, j) => pointer("", &[&"tools", &j]),
        }
    }
}

pub(super) fn check(catalog: &Catalog) -> Result<Checked<'_>, CatalogError> {
    // Sized once and hashed with the store's string hash: a registry-scale catalog grew a
    // SipHash map one tool at a time, a sizeable part of its check.
    let mut skills: HashMap<&str, usize> = HashMap::with_capacity(catalog.skills.len());
    let mut tools =
        HashMap::with_capacity_and_hasher(catalog.all_tools().count(), StrState::default());
    for (i, skill) in catalog.skills.iter().enumerate() {
        let base = pointer("", &[&"skills", &i]);
        check_skill(&base, skill)?;
        if let Some(&first) = skills.get(skill.name.as_str()) {
            return Err(CatalogError::at(
                base,
                Some(&skill.name),
                CatalogErrorKind::DuplicateSkill {
                    first: pointer("", &[&"skills", &first]),
                },
            ));
        }
        skills.insert(&skill.name, i);
        for (j, tool) in skill.tools.iter().enumerate() {
            add_tool(&mut tools, ToolAt(Some(i), j), tool)?;
        }
    }
    for (j, tool) in catalog.tools.iter().enumerate() {
        add_tool(&mut tools, ToolAt(None, j), tool)?;
    }
    check_names_list("pinned", "", &catalog.pinned, None)?;
    let order = registration_order(catalog, &skills)?;
    Ok(Checked {
        order,
        skills,
        tools,
    })
}

fn check_skill(base: &str, skill: &CatalogSkill) -> Result<(), CatalogError> {
    skill
        .record()
        .validate()
        .map_err(|e| skill_record_error(base, skill, e))?;
    check_names_list("uses", base, &skill.uses, Some(&skill.name))?;
    for (k, used) in skill.uses.iter().enumerate() {
        if skill.tools.iter().any(|t| t.qualified_name() == *used) {
            return Err(CatalogError::at(
                pointer(base, &[&"uses", &k]),
                Some(&skill.name),
                CatalogErrorKind::InvalidRecord(Box::new(RecordError::Invalid {
                    field: "uses",
                    reason: format!(
                        "`{used}` is bundled by this skill; `uses` is for tools it does not bundle"
                    ),
                })),
            ));
        }
    }
    Ok(())
}

/// A list of qualified tool names (`uses`, `pinned`): each a plausible name, none repeated.
fn check_names_list(
    field: &'static str,
    base: &str,
    names: &[String],
    owner: Option<&str>,
) -> Result<(), CatalogError> {
    for (k, name) in names.iter().enumerate() {
        let reason = if name.is_empty() || name.chars().any(char::is_control) {
            Some("must be a non-empty qualified tool name without control characters".to_string())
        } else if names[..k].contains(name) {
            Some(format!("`{name}` is listed twice"))
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(CatalogError::at(
                pointer(base, &[&field, &k]),
                owner,
                CatalogErrorKind::InvalidRecord(Box::new(RecordError::Invalid { field, reason })),
            ));
        }
    }
    Ok(())
}

fn add_tool(
    tools: &mut HashMap<String, ToolAt, StrState>,
    at: ToolAt,
    tool: &Tool,
) -> Result<(), CatalogError> {
    let key = tool.qualified_name();
    let name = (!key.is_empty()).then_some(key.as_str());
    if !tool.skills.is_empty() {
        return Err(CatalogError::at(
            pointer(&at.pointer(), &[&"skills"]),
            name,
            CatalogErrorKind::Format {
                message: "a catalog tool has no `skills` field: loading fills it from the skill that bundles the tool".to_string(),
            },
        ));
    }
    tool.validate()
        .map_err(|e| tool_record_error(&at.pointer(), name, tool, e))?;
    if let Some(first) = tools.get(&key) {
        return Err(CatalogError::at(
            at.pointer(),
            name,
            CatalogErrorKind::DuplicateTool {
                first: first.pointer(),
            },
        ));
    }
    tools.insert(key, at);
    Ok(())
}

fn skill_record_error(base: &str, skill: &CatalogSkill, error: RecordError) -> CatalogError {
    let name = (!skill.name.is_empty()).then_some(skill.name.as_str());
    let path = match &error {
        RecordError::InvalidName { field, value, .. } => match *field {
            "tags" => entry_path(base, "tags", &skill.tags, value),
            "dependencies" => entry_path(base, "dependencies", &skill.dependencies, value),
            "tools" => entry_path(base, "uses", &skill.uses, value),
            other => pointer(base, &[&other]),
        },
        // The only list rule without a value: a skill that depends on itself.
        RecordError::Invalid { field, .. } if *field == "dependencies" => {
            entry_path(base, "dependencies", &skill.dependencies, &skill.name)
        }
        RecordError::Invalid { field, .. } => pointer(base, &[field]),
    };
    CatalogError::at(path, name, CatalogErrorKind::InvalidRecord(Box::new(error)))
}

fn tool_record_error(
    base: &str,
    name: Option<&str>,
    tool: &Tool,
    error: RecordError,
) -> CatalogError {
    let path = match &error {
        RecordError::InvalidName { field, value, .. } if *field == "tags" => {
            entry_path(base, "tags", &tool.tags, value)
        }
        RecordError::InvalidName { field, .. } | RecordError::Invalid { field, .. } => {
            pointer(base, &[field])
        }
    };
    CatalogError::at(path, name, CatalogErrorKind::InvalidRecord(Box::new(error)))
}

/// The path of the entry of `list` that `value` names (records cut values to 80 characters);
/// the list's own path when none does.
fn entry_path(base: &str, field: &str, list: &[String], value: &str) -> String {
    let matches = |entry: &String| entry == value || entry.chars().take(80).eq(value.chars());
    match list.iter().position(matches) {
        Some(k) => pointer(base, &[&field, &k]),
        None => pointer(base, &[&field]),
    }
}

/// Skills in the order they can be registered: each after the catalog skills it depends on;
/// otherwise in file order (a depth-first walk from each skill in turn, dependencies in the
/// order listed). Iterative, so a long dependency chain cannot overflow the stack.
fn registration_order(
    catalog: &Catalog,
    index: &HashMap<&str, usize>,
) -> Result<Vec<usize>, CatalogError> {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        New,
        OnPath,
        Done,
    }
    let skills = &catalog.skills;
    let mut state = vec![State::New; skills.len()];
    let mut order = Vec::with_capacity(skills.len());
    for root in 0..skills.len() {
        if state[root] != State::New {
            continue;
        }
        state[root] = State::OnPath;
        // (skill, position of the next dependency to visit)
        let mut path: Vec<(usize, usize)> = vec![(root, 0)];
        while let Some(&(skill, next)) = path.last() {
            let Some(dependency) = skills[skill].dependencies.get(next) else {
                state[skill] = State::Done;
                order.push(skill);
                path.pop();
                continue;
            };
            if let Some(top) = path.last_mut() {
                top.1 += 1;
            }
            let Some(&dep) = index.get(dependency.as_str()) else {
                continue; // not in the catalog: the loader looks for it in the store
            };
            match state[dep] {
                State::New => {
                    state[dep] = State::OnPath;
                    path.push((dep, 0));
                }
                State::OnPath => {
                    let start = path.iter().position(|&(s, _)| s == dep).unwrap_or(0);
                    let mut chain: Vec<String> = path[start..]
                        .iter()
                        .map(|&(s, _)| skills[s].name.clone())
                        .collect();
                    chain.push(skills[dep].name.clone());
                    return Err(CatalogError::at(
                        pointer("", &[&"skills", &skill, &"dependencies", &next]),
                        Some(&skills[skill].name),
                        CatalogErrorKind::DependencyCycle { chain },
                    ));
                }
                State::Done => {}
            }
        }
    }
    Ok(order)
}

impl CatalogSkill {
    /// The skill record this entry registers, listing its `uses` (registration adds the bundled
    /// tools after them).
    pub(super) fn record(&self) -> Skill {
        Skill {
            name: self.name.clone(),
            description: self.description.clone(),
            category: self.category.clone(),
            tags: self.tags.clone(),
            tools: self.uses.clone(),
            dependencies: self.dependencies.clone(),
            examples: self.examples.clone(),
        }
    }
}
