//! Dependency closure of skills: deterministic topological order, cycle-safe.

use std::collections::HashSet;
use std::sync::Arc;

use super::SKILLS;
use crate::bm25::hash::StrState;
use crate::skills::Skill;
use crate::store::{KeyList, RowLookup, Snapshot};

use super::error::SkillError;

/// The skills `roots` need, themselves included, each once, dependencies before the skills that
/// need them ([`Closure`]: their names, records and tools, printable). Roots are taken in the
/// order given and each skill's dependencies in the order it lists them, so the same input
/// always gives the same order.
///
/// Fails with [`SkillError::NotFound`] for an unknown root, [`SkillError::MissingDependency`]
/// or [`SkillError::DependencyCycle`], each naming the chain.
///
/// ```
/// use capstore::skills::{dependency_closure, register_skill};
/// use capstore::{Skill, Store, Tool};
/// let store = Store::new();
/// store.write(|tx| {
///     register_skill(tx, Skill::new("auth", ""), [Tool::new("login", "Sign in")])?;
///     register_skill(tx, Skill::new("http", "").with_dependencies(["auth"]), Vec::<Tool>::new())?;
///     register_skill(tx, Skill::new("github", "").with_dependencies(["http", "auth"]),
///         [Tool::new("open_issue", "Open an issue")])
/// })?;
/// let snap = store.snapshot();
/// let closure = dependency_closure(&snap, &["github"])?;
/// assert_eq!(closure.names().collect::<Vec<_>>(), ["auth", "http", "github"]);
/// assert_eq!(closure.tools().to_string(), "auth/login, github/open_issue");
/// assert_eq!(closure.to_string(), "auth → http → github");
/// # Ok::<(), capstore::skills::SkillError>(())
/// ```
pub fn dependency_closure<'s, S: AsRef<str>>(
    snapshot: &'s Snapshot,
    roots: &[S],
) -> Result<Closure<'s>, SkillError> {
    let mut walk = Walk::new(snapshot)?;
    for root in roots {
        walk.root(root.as_ref())?;
    }
    Ok(Closure(walk.order))
}

/// A dependency closure ([`dependency_closure`]): skills borrowed from a snapshot,
/// dependencies before the skills that need them, each once. `Display` prints the names in
/// that order, joined by arrows.
///
/// See [`dependency_closure`]'s example.
#[derive(Debug, Clone)]
pub struct Closure<'s>(Vec<(&'s Arc<str>, &'s Skill)>);

impl<'s> Closure<'s> {
    /// The skills' names, in order.
    ///
    /// See [`dependency_closure`]'s example.
    pub fn names(&self) -> impl ExactSizeIterator<Item = &'s str> + '_ {
        self.0.iter().map(|(name, _)| &***name)
    }

    /// The skills' records, in order.
    ///
    /// ```
    /// use capstore::skills::{dependency_closure, register_skill};
    /// use capstore::{Skill, Store, Tool};
    /// let store = Store::new();
    /// store.write(|tx| register_skill(tx, Skill::new("auth", "Sign in"), Vec::<Tool>::new()))?;
    /// let snap = store.snapshot();
    /// let closure = dependency_closure(&snap, &["auth"])?;
    /// assert_eq!(closure.skills().next().map(|s| s.description.as_str()), Some("Sign in"));
    /// # Ok::<(), capstore::skills::SkillError>(())
    /// ```
    pub fn skills(&self) -> impl ExactSizeIterator<Item = &'s Skill> + '_ {
        self.0.iter().map(|(_, skill)| *skill)
    }

    /// The keys of the tools the skills bundle or list, in the skills' order, each once: what
    /// an agent that needs the roots needs.
    ///
    /// See [`dependency_closure`]'s example.
    pub fn tools(&self) -> KeyList<'s> {
        let mut keys: Vec<&'s str> = Vec::new();
        for (_, skill) in &self.0 {
            for tool in &skill.tools {
                if !keys.contains(&tool.as_str()) {
                    keys.push(tool);
                }
            }
        }
        KeyList::from(keys)
    }

    /// How many skills.
    ///
    /// See [`dependency_closure`]'s example.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether it has no skill (the roots were none).
    ///
    /// ```
    /// let snap = capstore::Store::new().snapshot();
    /// assert!(capstore::skills::dependency_closure::<&str>(&snap, &[])?.is_empty());
    /// # Ok::<(), capstore::skills::SkillError>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Display for Closure<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, name) in self.names().enumerate() {
            if i > 0 {
                f.write_str(" → ")?;
            }
            f.write_str(name)?;
        }
        Ok(())
    }
}

/// [`dependency_closure`] of one root, borrowed from the snapshot: each skill's stored key (the
/// name, shared rather than copied into what the selection reports) and record, in the same
/// order (the per-turn selection walks a few closures a turn).
pub(crate) fn closure_of<'s>(
    snapshot: &'s Snapshot,
    root: &str,
) -> Result<Vec<(&'s Arc<str>, &'s Skill)>, SkillError> {
    let mut walk = Walk::new(snapshot)?;
    walk.root(root)?;
    Ok(walk.order)
}

/// Above this many skills, a walk keeps a set of those done rather than scanning its order.
const SCAN_DONE: usize = 16;

/// A depth-first post-order walk over skills, names borrowed from the snapshot.
struct Walk<'s> {
    /// The snapshot's skills.
    skills: RowLookup<'s, Skill>,
    /// The chain from the current root to the skill being visited (for cycle and
    /// missing-dependency messages).
    path: Vec<&'s str>,
    /// The skills done, dependencies before the skills that need them.
    order: Vec<(&'s Arc<str>, &'s Skill)>,
    /// The names in `order`, once there are more than [`SCAN_DONE`].
    done: HashSet<&'s str, StrState>,
}

impl<'s> Walk<'s> {
    fn new(snapshot: &'s Snapshot) -> Result<Self, SkillError> {
        Ok(Walk {
            skills: snapshot.lookup(&SKILLS)?,
            // A skill and a few dependencies, most walks.
            path: Vec::with_capacity(4),
            order: Vec::with_capacity(4),
            done: HashSet::default(),
        })
    }

    fn root(&mut self, root: &str) -> Result<(), SkillError> {
        let Some(entry) = self.skills.entry(root) else {
            return Err(SkillError::NotFound {
                skill: root.to_string(),
            });
        };
        self.path.clear();
        if self.is_done(entry.key) {
            return Ok(());
        }
        // Looked up once: `visit` would look the root up again.
        self.path.push(entry.key);
        self.visit_found(entry.key, entry.record)
    }

    fn is_done(&self, name: &str) -> bool {
        if self.order.len() > SCAN_DONE {
            self.done.contains(name)
        } else {
            self.order.iter().any(|(n, _)| &***n == name)
        }
    }

    fn mark_done(&mut self, name: &'s Arc<str>, skill: &'s Skill) {
        self.order.push((name, skill));
        if self.order.len() > SCAN_DONE {
            if self.done.is_empty() {
                self.done.extend(self.order.iter().map(|(n, _)| &***n));
            } else {
                self.done.insert(name);
            }
        }
    }

    /// Visits `name` and, first, its dependencies. The recursion depth is bounded by the number
    /// of skills, since a skill on the path is never entered again.
    fn visit(&mut self, name: &'s str) -> Result<(), SkillError> {
        if self.is_done(name) {
            return Ok(());
        }
        if let Some(start) = self.path.iter().position(|p| *p == name) {
            let mut chain: Vec<String> = self.path[start..].iter().map(|p| p.to_string()).collect();
            chain.push(name.to_string());
            return Err(SkillError::DependencyCycle { chain });
        }
        self.path.push(name);
        let Some(entry) = self.skills.entry(name) else {
            let chain: Vec<String> = self.path.iter().map(|p| p.to_string()).collect();
            let skill = match self.path.len().checked_sub(2) {
                Some(parent) => self.path[parent].to_string(),
                None => String::new(),
            };
            return Err(SkillError::MissingDependency {
                skill,
                dependency: name.to_string(),
                chain,
            });
        };
        self.visit_found(entry.key, entry.record)
    }

    /// The rest of [`visit`](Self::visit), once `name` (on the path) is found as `skill`.
    fn visit_found(&mut self, name: &'s Arc<str>, skill: &'s Skill) -> Result<(), SkillError> {
        for dependency in &skill.dependencies {
            self.visit(dependency)?;
        }
        self.path.pop();
        self.mark_done(name, skill);
        Ok(())
    }
}
