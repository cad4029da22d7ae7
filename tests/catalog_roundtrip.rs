//! Loading catalogs (order, ownership, the report) and exporting them back: the export rule and
//! the round trips, on hand-written and on generated catalogs.

use capstore::catalog::{Catalog, CatalogErrorKind, CatalogSkill};
use capstore::skills::register_skill;
use capstore::{SKILLS, Skill, Store, TOOLS, Tool};
use proptest::prelude::*;
use serde_json::json;

mod common;

use common::tables::tools_and_skills as tables;

fn loaded(catalog: &Catalog) -> Store {
    let store = Store::new();
    catalog
        .load_into(&store)
        .expect("loads into an empty store");
    store
}

/// Skills listed before their dependencies, a `uses` of a tool bundled by a later skill, and a
/// `uses` of a standalone tool.
const OUT_OF_ORDER: &str = r#"{
  "format": "capstore.catalog/v1",
  "skills": [
    {"name": "github", "dependencies": ["git", "http"], "uses": ["web/fetch_url", "git/status"],
     "tools": [{"name": "create_pr", "source": "github", "description": "Open a pull request"},
               {"name": "list_issues", "source": "github"}]},
    {"name": "http", "dependencies": ["auth"], "tools": [{"name": "get", "source": "http"}]},
    {"name": "git", "tools": [{"name": "status", "source": "git"}]},
    {"name": "auth", "tools": [{"name": "login"}]}
  ],
  "tools": [{"name": "fetch_url", "source": "web"}, {"name": "clock"}],
  "pinned": ["clock", "git/status"]
}"#;

#[test]
fn skills_are_registered_after_their_dependencies_and_the_report_says_what_was_written() {
    let catalog = Catalog::from_json_str(OUT_OF_ORDER).expect("valid");
    let store = Store::new();
    let report = catalog.load_into(&store).expect("loads");
    assert_eq!(report.version, 1);
    assert_eq!(report.skills, ["git", "auth", "http", "github"]);
    assert_eq!(
        report.tools,
        [
            "github/create_pr",
            "github/list_issues",
            "http/get",
            "git/status",
            "login",
            "web/fetch_url",
            "clock"
        ]
    );
    assert_eq!(report.pinned, ["clock", "git/status"]);
    assert_eq!(catalog.policy().pinned_tools, report.pinned);

    let snap = store.snapshot();
    let github = snap.get(&SKILLS, "github").expect("read").expect("github");
    // `uses` first, then the bundled tools, as `register_skill` lists them.
    assert_eq!(
        github.tools,
        [
            "web/fetch_url",
            "git/status",
            "github/create_pr",
            "github/list_issues"
        ]
    );
    assert_eq!(github.dependencies, ["git", "http"]);
    let owners = |key: &str| {
        snap.get(&TOOLS, key)
            .expect("read")
            .expect(key)
            .skills
            .clone()
    };
    assert_eq!(owners("github/create_pr"), ["github"]);
    assert_eq!(owners("git/status"), ["git"]); // listed by github, owned by git
    assert!(owners("web/fetch_url").is_empty());
    assert_eq!(snap.count(&TOOLS).expect("count"), 7);
}

#[test]
fn a_catalog_loads_next_to_what_the_store_has_and_may_refer_to_it() {
    let store = Store::new();
    store
        .write(|tx| {
            tx.insert(&TOOLS, Tool::new("read_file", "").with_source("files"))?;
            register_skill(tx, Skill::new("auth", ""), vec![Tool::new("token", "")])
        })
        .expect("seed");
    let catalog = Catalog::from_json_str(
        r#"{"format": "capstore.catalog/v1",
            "skills": [{"name": "http", "dependencies": ["auth"], "uses": ["auth/token", "files/read_file"]}],
            "pinned": ["files/read_file"]}"#,
    )
    .expect("valid");
    let report = catalog.load_into(&store).expect("loads");
    assert_eq!((report.version, report.tools.len()), (2, 0));
    let http = store
        .snapshot()
        .get(&SKILLS, "http")
        .expect("read")
        .cloned()
        .expect("http");
    assert_eq!(http.tools, ["auth/token", "files/read_file"]);
}

#[test]
fn export_puts_a_shared_tool_under_the_first_owner_by_name() {
    let store = Store::new();
    let shared = || Tool::new("search", "Search").with_source("web");
    store
        .write(|tx| {
            register_skill(
                tx,
                Skill::new("zeta", "").with_category("z"),
                vec![shared()],
            )?;
            register_skill(
                tx,
                Skill::new("alpha", ""),
                vec![shared(), Tool::new("a1", "")],
            )?;
            tx.insert(&TOOLS, Tool::new("free", ""))?;
            // A tool naming a skill that does not exist is standalone in the export.
            tx.insert(&TOOLS, Tool::new("orphan", "").with_skills(["gone"]))?;
            Ok::<(), capstore::skills::SkillError>(())
        })
        .expect("seed");
    assert_eq!(
        store
            .snapshot()
            .get(&TOOLS, "web/search")
            .expect("read")
            .expect("tool")
            .skills,
        ["zeta", "alpha"]
    );
    let catalog = Catalog::from_snapshot(&store.snapshot(), &[]).expect("exports");
    let names: Vec<&str> = catalog.skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["alpha", "zeta"]);
    let alpha = &catalog.skills[0];
    let bundled: Vec<String> = alpha.tools.iter().map(Tool::qualified_name).collect();
    assert_eq!(bundled, ["web/search", "alpha/a1"]);
    assert!(alpha.tools.iter().all(|t| t.skills.is_empty()));
    assert!(alpha.uses.is_empty());
    let zeta = &catalog.skills[1];
    assert!(zeta.tools.is_empty());
    assert_eq!(zeta.uses, ["web/search"]);
    let standalone: Vec<String> = catalog.tools.iter().map(Tool::qualified_name).collect();
    assert_eq!(standalone, ["free", "orphan"]);

    // Loading the export gives one owner (a file expresses one), and the export is stable.
    let again = loaded(&catalog);
    let snap = again.snapshot();
    assert_eq!(
        snap.get(&TOOLS, "web/search")
            .expect("read")
            .expect("tool")
            .skills,
        ["alpha"]
    );
    assert_eq!(
        snap.get(&SKILLS, "zeta")
            .expect("read")
            .expect("zeta")
            .tools,
        ["web/search"]
    );
    assert_eq!(
        Catalog::from_snapshot(&snap, &[]).expect("exports"),
        catalog
    );
}

#[test]
fn export_refuses_what_it_cannot_write_as_a_complete_catalog() {
    let store = Store::new();
    store
        .write(|tx| tx.insert(&TOOLS, Tool::new("a", "")))
        .expect("seed");
    let err = Catalog::from_snapshot(&store.snapshot(), &["a".into(), "b".into()])
        .expect_err("b is not a tool");
    assert_eq!(err.path, "/pinned/1");
    assert_eq!(err.kind, CatalogErrorKind::UnknownTool { tool: "b".into() });

    // A skill written around registration, listing a tool that does not exist.
    store
        .write(|tx| tx.insert(&SKILLS, Skill::new("s", "").with_tools(["a", "missing"])))
        .expect("raw insert");
    let err = Catalog::from_snapshot(&store.snapshot(), &[]).expect_err("dangling tool");
    assert_eq!(
        (err.path.as_str(), err.name.as_deref()),
        ("/skills/0/uses/1", Some("s"))
    );
}

#[test]
fn a_file_round_trips_through_a_store() {
    let file = Catalog::from_json_str(OUT_OF_ORDER).expect("valid");
    let first = loaded(&file);
    let export = Catalog::from_snapshot(&first.snapshot(), &file.pinned).expect("exports");
    let second = loaded(&export);
    assert_eq!(tables(&second.snapshot()), tables(&first.snapshot()));
    assert_eq!(
        Catalog::from_snapshot(&second.snapshot(), &file.pinned).expect("exports"),
        export
    );
    let text = export.to_json_pretty().expect("json");
    assert_eq!(Catalog::from_json_str(&text).expect("parses"), export);
    assert_eq!(
        Catalog::from_json_str(&text)
            .expect("parses")
            .to_json_pretty()
            .expect("json"),
        text
    );
}

// ---- generated catalogs ----

/// The shape of one generated skill: how many tools it bundles, which earlier skills it
/// depends on (bit j: skill j), which tools of the whole catalog it lists (bit k: tool k).
#[derive(Debug, Clone)]
struct SkillShape {
    tools: usize,
    deps: u8,
    uses: u32,
}

#[derive(Debug, Clone)]
struct Shape {
    skills: Vec<SkillShape>,
    standalone: usize,
    pinned: u32,
    file_order: Vec<usize>,
}

fn shape() -> impl Strategy<Value = Shape> {
    (
        prop::collection::vec(
            (0..4usize, any::<u8>(), any::<u32>()).prop_map(|(tools, deps, uses)| SkillShape {
                tools,
                deps,
                uses,
            }),
            0..7,
        ),
        0..4usize,
        any::<u32>(),
    )
        .prop_flat_map(|(skills, standalone, pinned)| {
            let order: Vec<usize> = (0..skills.len()).collect();
            (
                Just(skills),
                Just(standalone),
                Just(pinned),
                Just(order).prop_shuffle(),
            )
        })
        .prop_map(|(skills, standalone, pinned, file_order)| Shape {
            skills,
            standalone,
            pinned,
            file_order,
        })
}

fn tool(name: String, salt: usize) -> Tool {
    let mut tool = Tool::new(name, format!("does thing number {salt}"));
    if !salt.is_multiple_of(3) {
        tool = tool.with_source(format!("src{}", salt % 2));
    }
    if salt.is_multiple_of(2) {
        tool = tool.with_tags(["read"]).with_input_schema(json!({
            "type": "object",
            "properties": {"path": {"type": "string", "description": "a path"}},
            "required": ["path"]
        }));
    }
    if salt % 4 == 1 {
        tool = tool.with_annotations(json!({"readOnlyHint": true}));
    }
    tool
}

/// A valid catalog of the shape: dependencies only on earlier skills (so acyclic), skills
/// written to the file in a shuffled order.
fn build(shape: &Shape) -> Catalog {
    let mut skills: Vec<CatalogSkill> = Vec::new();
    let mut salt = 0;
    for (i, s) in shape.skills.iter().enumerate() {
        let mut skill = CatalogSkill::new(format!("skill{i}"), format!("skill number {i}"));
        if i % 2 == 0 {
            skill.category = "even".into();
            skill.tags = vec!["generated".into()];
            skill.examples = vec![format!("use skill {i}")];
        }
        skill.dependencies = (0..i.min(8))
            .filter(|j| s.deps & (1 << j) != 0)
            .map(|j| format!("skill{j}"))
            .collect();
        skill.tools = (0..s.tools)
            .map(|j| {
                salt += 1;
                tool(format!("t{i}_{j}"), salt)
            })
            .collect();
        skills.push(skill);
    }
    let standalone: Vec<Tool> = (0..shape.standalone)
        .map(|k| {
            salt += 1;
            tool(format!("free{k}"), salt)
        })
        .collect();
    let all: Vec<(Option<usize>, String)> = skills
        .iter()
        .enumerate()
        .flat_map(|(i, s)| s.tools.iter().map(move |t| (Some(i), t.qualified_name())))
        .chain(standalone.iter().map(|t| (None, t.qualified_name())))
        .collect();
    for (i, s) in shape.skills.iter().enumerate() {
        skills[i].uses = all
            .iter()
            .enumerate()
            .filter(|(k, (owner, _))| *k < 32 && s.uses & (1 << k) != 0 && *owner != Some(i))
            .map(|(_, (_, key))| key.clone())
            .collect();
    }
    let pinned = all
        .iter()
        .enumerate()
        .filter(|(k, _)| *k < 32 && shape.pinned & (1 << k) != 0)
        .map(|(_, (_, key))| key.clone())
        .collect();
    Catalog {
        skills: shape
            .file_order
            .iter()
            .map(|&i| skills[i].clone())
            .collect(),
        tools: standalone,
        pinned,
        ..Catalog::default()
    }
}

/// What exporting a loaded catalog gives, by the export rule: skills by name, standalone
/// tools by qualified name, everything else as written.
fn normalized(catalog: &Catalog) -> Catalog {
    let mut out = catalog.clone();
    out.skills.sort_by(|a, b| a.name.cmp(&b.name));
    out.tools.sort_by_key(Tool::qualified_name);
    out
}

fn check_round_trip(shape: &Shape) -> Result<(), TestCaseError> {
    let catalog = build(shape);
    let text = catalog
        .to_json_pretty()
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let parsed = Catalog::from_json_str(&text).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(&parsed, &catalog);

    let store = Store::new();
    let report = catalog
        .load_into(&store)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    for skill in &catalog.skills {
        let at = |name: &str| report.skills.iter().position(|s| s == name);
        for dependency in &skill.dependencies {
            prop_assert!(
                at(dependency) < at(&skill.name),
                "{} before {}",
                dependency,
                skill.name
            );
        }
    }
    let snap = store.snapshot();
    // Read from its file in one step, the catalog writes the same tables and report.
    let file = std::env::temp_dir().join(format!(
        "capstore-roundtrip-{}-{:?}.json",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::write(&file, &text).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let from_file = Store::new();
    let read = Catalog::load_file(&file, &from_file);
    std::fs::remove_file(&file).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(
        read.map_err(|e| TestCaseError::fail(e.to_string()))?,
        report.clone()
    );
    prop_assert_eq!(tables(&from_file.snapshot()), tables(&snap));
    for skill in &catalog.skills {
        let stored = snap.get(&SKILLS, &skill.name)?.cloned();
        let mut expected: Vec<String> = skill.uses.clone();
        expected.extend(skill.tools.iter().map(Tool::qualified_name));
        prop_assert_eq!(stored.map(|s| s.tools), Some(expected));
        for tool in &skill.tools {
            let owners = snap
                .get(&TOOLS, &tool.qualified_name())?
                .map(|t| t.skills.clone());
            prop_assert_eq!(owners, Some(vec![skill.name.clone()]));
        }
    }

    let export = Catalog::from_snapshot(&snap, &catalog.pinned)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(&export, &normalized(&catalog));
    let again = Store::new();
    export
        .load_into(&again)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(tables(&again.snapshot()), tables(&snap));
    let export_again = Catalog::from_snapshot(&again.snapshot(), &catalog.pinned)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(export_again, export);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]
    #[test]
    fn generated_catalogs_load_and_round_trip(shape in shape()) {
        check_round_trip(&shape)?;
    }
}

/// Breaks a generated catalog one way (`how`): a repeated tool, a bad tag, an unknown
/// dependency, an unknown pinned tool, a tool the store already holds, text cut short. Returns
/// the file's text and a store to load it into.
fn broken(shape: &Shape, how: usize) -> (String, Store) {
    let mut catalog = build(shape);
    let store = Store::new();
    catalog.tools.push(Tool::new("extra", "one more"));
    match how {
        0 => {
            let again = catalog.tools[0].clone();
            catalog.tools.push(again);
        }
        1 => catalog.tools[0].tags = vec![" ".into()],
        2 => match catalog.skills.first_mut() {
            Some(skill) => skill.dependencies.push("no-such-skill".into()),
            None => catalog.pinned.push("no/such_tool".into()),
        },
        3 => catalog.pinned.push("no/such_tool".into()),
        4 => {
            store
                .write(|tx| tx.insert(&TOOLS, Tool::new("extra", "already here")))
                .expect("seed");
        }
        _ => {}
    }
    let mut text = serde_json::to_string(&catalog).expect("json");
    if how >= 5 {
        text.truncate(text.len() / 2);
    }
    (text, store)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn a_broken_file_gives_load_file_the_two_steps_error_and_writes_nothing(
        shape in shape(),
        how in 0..6usize,
    ) {
        let (text, store) = broken(&shape, how);
        let file = std::env::temp_dir().join(format!(
            "capstore-broken-{}-{:?}.json",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::write(&file, &text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let before = (store.version(), tables(&store.snapshot()));
        let one_step = Catalog::load_file(&file, &store);
        let two_steps = Catalog::from_path(&file).and_then(|catalog| catalog.move_into(&store));
        std::fs::remove_file(&file).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let (Err(one), Err(two)) = (one_step, two_steps) else {
            return Err(TestCaseError::fail(format!("breakage {how} loaded")));
        };
        prop_assert_eq!((&one.path, &one.name, &one.kind), (&two.path, &two.name, &two.kind));
        let expected = match how {
            0 => matches!(one.kind, CatalogErrorKind::DuplicateTool { .. }),
            1 => matches!(one.kind, CatalogErrorKind::InvalidRecord(_)),
            2 => matches!(
                one.kind,
                CatalogErrorKind::UnknownDependency { .. } | CatalogErrorKind::UnknownTool { .. }
            ),
            3 => matches!(one.kind, CatalogErrorKind::UnknownTool { .. }),
            4 => matches!(one.kind, CatalogErrorKind::ToolExists),
            _ => matches!(one.kind, CatalogErrorKind::Syntax { .. }),
        };
        prop_assert!(expected, "breakage {}: {}", how, one);
        prop_assert_eq!(one.file.as_deref(), Some(file.as_path()));
        prop_assert_eq!((store.version(), tables(&store.snapshot())), before);
    }
}

/// One fixed, busy shape, so a broken round trip fails readably before proptest shrinks.
#[test]
fn a_fixed_generated_catalog_round_trips() {
    let shape = Shape {
        skills: vec![
            SkillShape {
                tools: 2,
                deps: 0,
                uses: 0b1_0000_0000,
            },
            SkillShape {
                tools: 3,
                deps: 0b1,
                uses: 0b1,
            },
            SkillShape {
                tools: 0,
                deps: 0b11,
                uses: 0b1110,
            },
            SkillShape {
                tools: 1,
                deps: 0b100,
                uses: 0,
            },
        ],
        standalone: 3,
        pinned: 0b1010_0001,
        file_order: vec![3, 1, 0, 2],
    };
    check_round_trip(&shape).expect("round trip");
}
