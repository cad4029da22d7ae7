//! Skill registration, removal and dependency resolution.

use capstore::skills::{
    SkillError, dependency_closure, register_skill, unregister_skill, unregister_tool,
};
use capstore::{SKILLS, Skill, Store, TOOLS, Tool};

fn tools_of(store: &Store, skill: &str) -> Vec<String> {
    store
        .snapshot()
        .by_index(&TOOLS, "skill", skill)
        .expect("index")
        .map(|(k, _)| k.to_string())
        .collect()
}

#[test]
fn a_missing_dependency_names_the_chain_and_changes_nothing() {
    let store = Store::new();
    store
        .write(|tx| {
            register_skill(
                tx,
                Skill::new("http", "").with_dependencies(["auth"]),
                Vec::<capstore::Tool>::new(),
            )
        })
        .unwrap_err();
    store
        .write(|tx| {
            register_skill(tx, Skill::new("auth", ""), Vec::<Tool>::new())?;
            register_skill(
                tx,
                Skill::new("http", "").with_dependencies(["auth"]),
                Vec::<capstore::Tool>::new(),
            )
        })
        .expect("valid chain");
    let before = store.version();
    let err = store
        .write(|tx| {
            register_skill(
                tx,
                Skill::new("deploy", "").with_dependencies(["http", "k8s"]),
                vec![Tool::new("apply", "")],
            )
        })
        .unwrap_err();
    assert_eq!(
        err,
        SkillError::MissingDependency {
            skill: "deploy".into(),
            dependency: "k8s".into(),
            chain: vec!["deploy".into(), "k8s".into()]
        }
    );
    assert_eq!(store.version(), before);
    assert!(
        store
            .snapshot()
            .get(&TOOLS, "apply")
            .expect("get")
            .is_none(),
        "no half-registered tool"
    );
}

#[test]
fn a_cycle_written_around_registration_is_caught_and_named() {
    let store = Store::new();
    // Raw table writes bypass registration's checks; resolution still refuses the cycle.
    store
        .write(|tx| {
            tx.insert(&SKILLS, Skill::new("a", "").with_dependencies(["b"]))?;
            tx.insert(&SKILLS, Skill::new("b", "").with_dependencies(["c"]))?;
            tx.insert(&SKILLS, Skill::new("c", "").with_dependencies(["a"]))
        })
        .expect("raw writes");
    let err = dependency_closure(&store.snapshot(), &["a"]).unwrap_err();
    assert_eq!(
        err,
        SkillError::DependencyCycle {
            chain: vec!["a".into(), "b".into(), "c".into(), "a".into()]
        }
    );
    assert_eq!(err.to_string(), "dependency cycle: a -> b -> c -> a");
    let before = store.version();
    let err = store
        .write(|tx| {
            register_skill(
                tx,
                Skill::new("d", "").with_dependencies(["b"]),
                vec![Tool::new("t", "")],
            )
        })
        .unwrap_err();
    assert!(matches!(err, SkillError::DependencyCycle { .. }));
    assert_eq!(store.version(), before);
}

#[test]
fn closure_order_is_deterministic_and_topological() {
    let store = Store::new();
    store
        .write(|tx| {
            register_skill(tx, Skill::new("base", ""), Vec::<Tool>::new())?;
            register_skill(
                tx,
                Skill::new("left", "").with_dependencies(["base"]),
                Vec::<capstore::Tool>::new(),
            )?;
            register_skill(
                tx,
                Skill::new("right", "").with_dependencies(["base"]),
                Vec::<capstore::Tool>::new(),
            )?;
            register_skill(
                tx,
                Skill::new("top", "").with_dependencies(["left", "right"]),
                Vec::<capstore::Tool>::new(),
            )
        })
        .expect("diamond");
    let snap = store.snapshot();
    for _ in 0..3 {
        assert_eq!(
            dependency_closure(&snap, &["top"])
                .expect("closure")
                .names()
                .collect::<Vec<_>>(),
            ["base", "left", "right", "top"]
        );
    }
    assert!(matches!(
        dependency_closure(&snap, &["nope"]),
        Err(SkillError::NotFound { .. })
    ));
}

#[test]
fn shared_tools_survive_the_removal_of_one_owner() {
    let store = Store::new();
    store
        .write(|tx| {
            // A tool two skills share names its source (each skill's tools would take its own).
            let shared = || Tool::new("shared", "").with_source("common");
            register_skill(
                tx,
                Skill::new("a", ""),
                vec![Tool::new("only_a", ""), shared()],
            )?;
            register_skill(tx, Skill::new("b", ""), vec![shared()])
        })
        .expect("register");
    assert_eq!(tools_of(&store, "a"), ["a/only_a", "common/shared"]);
    assert_eq!(tools_of(&store, "b"), ["common/shared"]);
    let mut tx = store.begin();
    let gone = unregister_skill(&mut tx, "a").expect("unregister");
    tx.commit();
    assert_eq!(gone.removed_tools, ["a/only_a"]);
    assert_eq!(gone.kept_tools, ["common/shared"]);
    let snap = store.snapshot();
    assert_eq!(
        snap.get(&TOOLS, "common/shared")
            .expect("get")
            .map(|t| t.skills.clone()),
        Some(vec!["b".to_string()])
    );
    assert!(snap.get(&TOOLS, "a/only_a").expect("get").is_none());
    assert_eq!(snap.text_index(&TOOLS).expect("index").len(), 1);
}

#[test]
fn listed_tools_are_not_owned_and_cannot_be_removed_while_listed() {
    let store = Store::new();
    store
        .write(|tx| {
            tx.insert(&TOOLS, Tool::new("free", "registered on its own"))?;
            register_skill(
                tx,
                Skill::new("s", "").with_tools(["free"]),
                Vec::<Tool>::new(),
            )
        })
        .expect("register");
    let mut tx = store.begin();
    assert_eq!(
        unregister_tool(&mut tx, "free").unwrap_err(),
        SkillError::ToolInUse {
            tool: "free".into(),
            skills: vec!["s".into()]
        }
    );
    let gone = unregister_skill(&mut tx, "s").expect("unregister");
    assert!(gone.removed_tools.is_empty(), "a listed tool is not owned");
    unregister_tool(&mut tx, "free").expect("now free");
    tx.commit();
    assert_eq!(store.snapshot().count(&TOOLS).expect("count"), 0);
}

#[test]
fn unknown_listed_tools_and_needed_skills_are_refused() {
    let store = Store::new();
    let err = store
        .write(|tx| {
            register_skill(
                tx,
                Skill::new("s", "").with_tools(["ghost"]),
                Vec::<Tool>::new(),
            )
        })
        .unwrap_err();
    assert_eq!(
        err,
        SkillError::UnknownTool {
            skill: "s".into(),
            tool: "ghost".into()
        }
    );
    store
        .write(|tx| {
            register_skill(tx, Skill::new("auth", ""), vec![Tool::new("token", "")])?;
            register_skill(
                tx,
                Skill::new("http", "").with_dependencies(["auth"]),
                Vec::<capstore::Tool>::new(),
            )
        })
        .expect("register");
    let mut tx = store.begin();
    let err = unregister_skill(&mut tx, "auth").unwrap_err();
    assert_eq!(
        err,
        SkillError::DependedOn {
            skill: "auth".into(),
            dependents: vec!["http".into()]
        }
    );
    assert!(
        tx.view().get(&TOOLS, "auth/token").expect("get").is_some(),
        "refusal changed nothing"
    );
    assert!(matches!(
        unregister_skill(&mut tx, "nope"),
        Err(SkillError::NotFound { .. })
    ));
}
