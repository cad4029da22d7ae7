//! Dependency closure of skills: deterministic topological order, cycle-safe.

use std::collections::BTreeSet;

use crate::store::Snapshot;
use crate::tables::SKILLS;

use super::error::SkillError;

/// The skills `roots` need, themselves included, each once, dependencies before the skills that
/// need them. Roots are taken in the order given and each skill's dependencies in the order it
/// lists them, so the same input always gives the same order.
///
/// Fails with [`SkillError::NotFound`] for an unknown root, [`SkillError::MissingDependency`]
/// or [`SkillError::DependencyCycle`], each naming the chain.
///
/// ```
/// use capstore::skills::{dependency_closure, register_skill};
/// use capstore::{Skill, Store};
/// let store = Store::new();
/// store.write(|tx| {
///     register_skill(tx, Skill::new("auth", ""), vec![])?;
///     register_skill(tx, Skill::new("http", "").with_dependencies(["auth"]), vec![])?;
///     register_skill(tx, Skill::new("github", "").with_dependencies(["http", "auth"]), vec![])
/// })?;
/// let order = dependency_closure(&store.snapshot(), &["github"])?;
/// assert_eq!(order, ["auth", "http", "github"]);
/// # Ok::<(), capstore::skills::SkillError>(())
/// ```
pub fn dependency_closure<S: AsRef<str>>(
    snapshot: &Snapshot,
    roots: &[S],
) -> Result<Vec<String>, SkillError> {
    let mut order = Vec::new();
    let mut done = BTreeSet::new();
    for root in roots {
        let root = root.as_ref();
        if !snapshot.contains(&SKILLS, root)? {
            return Err(SkillError::NotFound {
                skill: root.to_string(),
            });
        }
        let mut path = Vec::new();
        visit(snapshot, root, &mut path, &mut done, &mut order)?;
    }
    Ok(order)
}

/// Depth-first post-order walk. `path` is the chain from the root to `name` (for cycle and
/// missing-dependency messages). The recursion depth is bounded by the number of skills, since a
/// skill on the path is never entered again.
fn visit(
    snapshot: &Snapshot,
    name: &str,
    path: &mut Vec<String>,
    done: &mut BTreeSet<String>,
    order: &mut Vec<String>,
) -> Result<(), SkillError> {
    if done.contains(name) {
        return Ok(());
    }
    if let Some(start) = path.iter().position(|p| p == name) {
        let mut chain = path[start..].to_vec();
        chain.push(name.to_string());
        return Err(SkillError::DependencyCycle { chain });
    }
    path.push(name.to_string());
    // Borrowed from the snapshot, not copied: `path` and friends are separate borrows.
    let dependencies = match snapshot.get(&SKILLS, name)? {
        Some(skill) => &skill.dependencies,
        None => {
            let mut chain = path.clone();
            let dependency = chain.pop().unwrap_or_default();
            let skill = chain.last().cloned().unwrap_or_default();
            chain.push(dependency.clone());
            return Err(SkillError::MissingDependency {
                skill,
                dependency,
                chain,
            });
        }
    };
    for dependency in dependencies {
        visit(snapshot, dependency, path, done, order)?;
    }
    path.pop();
    done.insert(name.to_string());
    order.push(name.to_string());
    Ok(())
}
