//! Every catalog error: a small bad document, the path and name the error gives, its message,
//! and a store that is exactly as it was.

use capstore::catalog::{Catalog, CatalogError, CatalogErrorKind};
use capstore::skills::{SkillError, register_skill};
use capstore::store::{RecordError, StoreBuilder};
use capstore::{SKILLS, Skill, Store, StoreError, TOOLS, Tool};

mod common;

use common::tables::tools_and_skills;

/// Everything a load could change: the version, every tool and every skill.
fn contents(store: &Store) -> (u64, (Vec<Tool>, Vec<Skill>)) {
    let snap = store.snapshot();
    (snap.version(), tools_and_skills(&snap))
}

/// A store with one skill (`contacts`, bundling `contacts/find_contact`) and one standalone
/// tool (`clock/now`), at version 1.
fn seeded_store() -> Store {
    let store = Store::new();
    store
        .write(|tx| {
            tx.insert(&TOOLS, Tool::new("now", "The time").with_source("clock"))?;
            register_skill(
                tx,
                Skill::new("contacts", "People"),
                vec![Tool::new("find_contact", "Find a person").with_source("contacts")],
            )
        })
        .expect("seed");
    store
}

/// `{"format": ..., BODY}`
fn doc(body: &str) -> String {
    format!(r#"{{"format": "capstore.catalog/v1", {body}}}"#)
}

fn parse_err(text: &str) -> CatalogError {
    match Catalog::from_json_str(text) {
        Ok(catalog) => panic!("expected an error, parsed {catalog:?}"),
        Err(e) => e,
    }
}

/// Parses `text` (which must pass the store-free checks), loads it into a seeded store, and
/// checks that the load failed without changing anything.
fn load_err(text: &str) -> CatalogError {
    let catalog = Catalog::from_json_str(text).expect("passes the checks without a store");
    let store = seeded_store();
    let before = contents(&store);
    let err = catalog.load_into(&store).expect_err("load must fail");
    assert_eq!(contents(&store), before, "a failed load changed the store");
    err
}

fn invalid_record(err: &CatalogError) -> &RecordError {
    match &err.kind {
        CatalogErrorKind::InvalidRecord(e) => e,
        other => panic!("expected InvalidRecord, got {other:?}"),
    }
}

fn format_message(err: &CatalogError) -> &str {
    match &err.kind {
        CatalogErrorKind::Format { message } => message,
        other => panic!("expected Format, got {other:?}"),
    }
}

#[test]
fn malformed_json_gives_line_and_column() {
    let err = parse_err("{\n  \"format\": \"capstore.catalog/v1\",\n  \"skills\": [}\n");
    match &err.kind {
        CatalogErrorKind::Syntax { line, column, .. } => assert_eq!((*line, *column), (3, 14)),
        other => panic!("expected Syntax, got {other:?}"),
    }
    assert!(
        err.to_string()
            .starts_with("catalog /skills/0: not well-formed JSON at line 3, column 14: "),
        "{err}"
    );
}

#[test]
fn trailing_text_after_the_document_is_a_syntax_error() {
    let err = parse_err(&format!("{} x", doc(r#""pinned": []"#)));
    assert!(matches!(err.kind, CatalogErrorKind::Syntax { line: 1, .. }));
}

#[test]
fn format_is_required_and_exact() {
    let missing = parse_err(r#"{"skills": []}"#);
    assert_eq!(missing.path, "");
    assert!(format_message(&missing).contains("missing field `format`"));

    let wrong = parse_err(r#"{"format": "capstore.catalog/v2"}"#);
    assert_eq!(wrong.path, "/format");
    assert!(
        format_message(&wrong).contains("capstore.catalog/v1"),
        "{wrong}"
    );
}

#[test]
fn unknown_fields_are_errors_at_every_level() {
    let top = parse_err(&doc(r#""pinnned": []"#));
    assert!(
        format_message(&top).contains("unknown field `pinnned`"),
        "{top}"
    );

    let in_skill = parse_err(&doc(
        r#""skills": [{"name": "a"}, {"name": "calendar", "dependency": ["a"]}]"#,
    ));
    assert_eq!(in_skill.path, "/skills/1/dependency");
    assert_eq!(in_skill.name.as_deref(), Some("calendar"));
    assert!(format_message(&in_skill).contains("unknown field `dependency`"));

    let in_tool = parse_err(&doc(r#""skills": [{"name": "web", "tools": [
            {"name": "fetch", "source": "web"},
            {"name": "search", "source": "web", "input_shema": {}}]}]"#));
    assert_eq!(in_tool.path, "/skills/0/tools/1/input_shema");
    assert_eq!(in_tool.name.as_deref(), Some("web/search"));
    assert_eq!(
        in_tool.to_string().split(": ").next(),
        Some(r#"catalog /skills/0/tools/1/input_shema ("web/search")"#)
    );
}

#[test]
fn a_value_of_the_wrong_type_names_its_place() {
    let err = parse_err(&doc(
        r#""tools": [{"name": "a"}, {"name": "b", "tags": "web"}]"#,
    ));
    assert_eq!(err.path, "/tools/1/tags");
    assert_eq!(err.name.as_deref(), Some("b"));
    assert!(format_message(&err).contains("invalid type"), "{err}");
}

#[test]
fn a_catalog_tool_must_not_name_its_skills() {
    let err = parse_err(&doc(
        r#""tools": [{"name": "read_file", "source": "files", "skills": ["files"]}]"#,
    ));
    assert_eq!(err.path, "/tools/0/skills");
    assert_eq!(err.name.as_deref(), Some("files/read_file"));
    assert!(format_message(&err).contains("`skills`"));
}

#[test]
fn names_breaking_the_rules_are_invalid_records() {
    let slash = parse_err(&doc(
        r#""skills": [{"name": "files", "tools": [{"name": "read/file"}]}]"#,
    ));
    assert_eq!(slash.path, "/skills/0/tools/0/name");
    assert!(matches!(
        invalid_record(&slash),
        RecordError::InvalidName { field: "name", .. }
    ));

    let blank_skill = parse_err(&doc(r#""skills": [{"name": " files"}]"#));
    assert_eq!(blank_skill.path, "/skills/0/name");
    assert_eq!(blank_skill.name.as_deref(), Some(" files"));

    let tag = parse_err(&doc(
        r#""skills": [{"name": "files", "tags": ["fs", " "]}]"#,
    ));
    assert_eq!(tag.path, "/skills/0/tags/1");
    assert_eq!(
        tag.to_string(),
        r#"catalog /skills/0/tags/1 ("files"): invalid tags " ": must not be empty"#
    );

    let source = parse_err(&doc(r#""tools": [{"name": "x", "source": ""}]"#));
    assert_eq!(source.path, "/tools/0/source");
}

#[test]
fn a_tool_input_schema_must_be_an_object_schema() {
    let err = parse_err(&doc(
        r#""skills": [{"name": "a"}, {"name": "web", "tools": [
            {"name": "fetch"}, {"name": "search", "inputSchema": {"type": "array"}}]}]"#,
    ));
    assert_eq!(err.path, "/skills/1/tools/1/input_schema");
    assert_eq!(err.name.as_deref(), Some("search"));
    assert!(matches!(
        invalid_record(&err),
        RecordError::Invalid {
            field: "input_schema",
            ..
        }
    ));
}

#[test]
fn a_skill_that_depends_on_itself_is_invalid() {
    let err = parse_err(&doc(
        r#""skills": [{"name": "git", "dependencies": ["files", "git"]}]"#,
    ));
    assert_eq!(err.path, "/skills/0/dependencies/1");
    assert_eq!(err.name.as_deref(), Some("git"));
}

#[test]
fn lists_of_tool_names_have_no_repeats() {
    let pinned = parse_err(&doc(
        r#""tools": [{"name": "a"}, {"name": "b"}], "pinned": ["a", "b", "a"]"#,
    ));
    assert_eq!(pinned.path, "/pinned/2");
    assert!(
        pinned.to_string().contains("`a` is listed twice"),
        "{pinned}"
    );

    let uses = parse_err(&doc(
        r#""tools": [{"name": "a"}], "skills": [{"name": "s", "uses": ["a", "a"]}]"#,
    ));
    assert_eq!(
        (uses.path.as_str(), uses.name.as_deref()),
        ("/skills/0/uses/1", Some("s"))
    );

    let own = parse_err(&doc(
        r#""skills": [{"name": "s", "tools": [{"name": "a", "source": "x"}], "uses": ["x/a"]}]"#,
    ));
    assert_eq!(own.path, "/skills/0/uses/0");
    assert!(own.to_string().contains("bundled by this skill"), "{own}");

    let empty = parse_err(&doc(r#""pinned": [""]"#));
    assert_eq!(empty.path, "/pinned/0");
}

#[test]
fn a_qualified_name_is_unique_across_the_catalog() {
    let err = parse_err(&doc(
        r#""skills": [{"name": "web", "tools": [{"name": "fetch", "source": "web"}]}],
           "tools": [{"name": "other"}, {"name": "fetch", "source": "web"}]"#,
    ));
    assert_eq!(err.path, "/tools/1");
    assert_eq!(err.name.as_deref(), Some("web/fetch"));
    assert_eq!(
        err.kind,
        CatalogErrorKind::DuplicateTool {
            first: "/skills/0/tools/0".into()
        }
    );
    assert_eq!(
        err.to_string(),
        r#"catalog /tools/1 ("web/fetch"): a tool with this qualified name is already defined at /skills/0/tools/0"#
    );

    // The same name from different sources is two tools.
    Catalog::from_json_str(&doc(
        r#""tools": [{"name": "search", "source": "web"}, {"name": "search", "source": "github"}]"#,
    ))
    .expect("distinct qualified names");
}

#[test]
fn a_skill_name_is_unique_in_the_catalog() {
    let err = parse_err(&doc(
        r#""skills": [{"name": "web"}, {"name": "git"}, {"name": "web"}]"#,
    ));
    assert_eq!(err.path, "/skills/2");
    assert_eq!(
        err.kind,
        CatalogErrorKind::DuplicateSkill {
            first: "/skills/0".into()
        }
    );
}

#[test]
fn a_dependency_cycle_is_found_before_any_store_is_involved() {
    let err = parse_err(&doc(r#""skills": [
            {"name": "a", "dependencies": ["b"]},
            {"name": "b", "dependencies": ["x", "c"]},
            {"name": "c", "dependencies": ["a"]},
            {"name": "x"}]"#));
    assert_eq!(
        err.kind,
        CatalogErrorKind::DependencyCycle {
            chain: vec!["a".into(), "b".into(), "c".into(), "a".into()]
        }
    );
    assert_eq!(err.path, "/skills/2/dependencies/0");
    assert_eq!(err.name.as_deref(), Some("c"));
    assert_eq!(
        err.to_string(),
        r#"catalog /skills/2/dependencies/0 ("c"): dependency cycle: a -> b -> c -> a"#
    );
}

#[test]
fn a_dependency_outside_catalog_and_store_is_unknown() {
    let err = load_err(&doc(
        r#""skills": [{"name": "mail"}, {"name": "people", "dependencies": ["contacts"]},
            {"name": "calendar", "dependencies": ["mail", "contact"]}]"#,
    ));
    assert_eq!(
        err.kind,
        CatalogErrorKind::UnknownDependency {
            dependency: "contact".into()
        }
    );
    assert_eq!(
        err.to_string(),
        r#"catalog /skills/2/dependencies/1 ("calendar"): dependency "contact" is not a skill in the catalog or the store"#
    );
}

#[test]
fn uses_and_pinned_must_name_a_tool_of_the_catalog_or_the_store() {
    let uses = load_err(&doc(
        r#""skills": [{"name": "people", "uses": ["contacts/find_contact", "clock/now", "clock/today"]}]"#,
    ));
    assert_eq!(
        (uses.path.as_str(), uses.name.as_deref()),
        ("/skills/0/uses/2", Some("people"))
    );
    assert_eq!(
        uses.kind,
        CatalogErrorKind::UnknownTool {
            tool: "clock/today".into()
        }
    );

    let pinned = load_err(&doc(
        r#""tools": [{"name": "a"}], "pinned": ["a", "clock/now", "b"]"#,
    ));
    assert_eq!(pinned.path, "/pinned/2");
    assert_eq!(
        pinned.to_string(),
        r#"catalog /pinned/2: tool "b" is not in the catalog or the store"#
    );
}

#[test]
fn a_skill_already_in_the_store_is_not_replaced() {
    let err = load_err(&doc(
        r#""skills": [{"name": "mail"}, {"name": "contacts", "tools": [{"name": "add_contact"}]}]"#,
    ));
    assert_eq!(
        (err.path.as_str(), err.name.as_deref(), &err.kind),
        (
            "/skills/1",
            Some("contacts"),
            &CatalogErrorKind::SkillExists
        )
    );
}

#[test]
fn a_tool_already_in_the_store_is_not_replaced() {
    let bundled = load_err(&doc(
        r#""skills": [{"name": "people", "tools": [{"name": "find_contact", "source": "contacts"}]}]"#,
    ));
    assert_eq!(
        (
            bundled.path.as_str(),
            bundled.name.as_deref(),
            &bundled.kind
        ),
        (
            "/skills/0/tools/0",
            Some("contacts/find_contact"),
            &CatalogErrorKind::ToolExists
        )
    );

    let standalone = load_err(&doc(
        r#""tools": [{"name": "a"}, {"name": "now", "source": "clock"}]"#,
    ));
    assert_eq!(standalone.path, "/tools/1");
    assert!(standalone.to_string().contains("already in the store"));
}

#[test]
fn a_store_refusal_is_wrapped_and_changes_nothing() {
    // A bare store has none of the built-in tables.
    let store = StoreBuilder::new().build();
    let catalog = Catalog::from_json_str(&doc(r#""tools": [{"name": "a"}]"#)).expect("valid");
    let err = catalog.load_into(&store).expect_err("no tools table");
    assert!(
        matches!(&err.kind, CatalogErrorKind::Store(e) if matches!(**e, StoreError::TableMismatch { .. })),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .starts_with("catalog: the store refused a write: ")
    );
    assert_eq!(store.version(), 0);
}

#[test]
fn a_skill_registration_refusal_is_wrapped_and_changes_nothing() {
    // A skill written straight into the table, around registration, with a missing dependency:
    // registering a catalog skill that depends on it fails in `register_skill`.
    let store = seeded_store();
    store
        .write(|tx| {
            tx.insert(
                &SKILLS,
                Skill::new("broken", "").with_dependencies(["ghost"]),
            )
        })
        .expect("raw insert");
    let before = contents(&store);
    let catalog = Catalog::from_json_str(&doc(
        r#""tools": [{"name": "t"}], "skills": [{"name": "ok"}, {"name": "needs_broken", "dependencies": ["broken"]}]"#,
    ))
    .expect("valid");
    let err = catalog
        .load_into(&store)
        .expect_err("missing transitive dependency");
    assert_eq!(err.path, "/skills/1");
    assert_eq!(err.name.as_deref(), Some("needs_broken"));
    assert!(
        matches!(&err.kind, CatalogErrorKind::Skill(e) if matches!(**e, SkillError::MissingDependency { .. })),
        "{err:?}"
    );
    assert_eq!(contents(&store), before);
}

#[test]
fn a_failed_apply_undoes_its_writes_and_keeps_the_callers() {
    let store = Store::new();
    let catalog = Catalog::from_json_str(&doc(
        r#""tools": [{"name": "a"}], "skills": [{"name": "s", "tools": [{"name": "c"}]},
            {"name": "needs_broken", "dependencies": ["broken"]}]"#,
    ))
    .expect("valid");
    let mut tx = store.begin();
    tx.insert(&TOOLS, Tool::new("mine", "")).expect("insert");
    tx.insert(
        &SKILLS,
        Skill::new("broken", "").with_dependencies(["ghost"]),
    )
    .expect("raw insert");
    // Fails while registering `needs_broken`, after `a`, `c` and `s` were written.
    let err = catalog
        .apply(&mut tx)
        .expect_err("missing transitive dependency");
    assert_eq!(err.path, "/skills/1");
    let tools: Vec<String> = tx
        .view()
        .iter(&TOOLS)
        .expect("tools")
        .keys()
        .map(|k| k.to_string())
        .collect();
    let skills: Vec<String> = tx
        .view()
        .iter(&SKILLS)
        .expect("skills")
        .keys()
        .map(|k| k.to_string())
        .collect();
    assert_eq!(
        (tools, skills),
        (vec!["mine".to_string()], vec!["broken".to_string()])
    );
    assert_eq!(tx.commit().version, 1);
}

#[test]
fn from_path_names_the_file() {
    let missing = Catalog::from_path("/nonexistent/catalog.json").expect_err("no file");
    assert!(matches!(
        missing.kind,
        CatalogErrorKind::Io {
            kind: std::io::ErrorKind::NotFound,
            ..
        }
    ));
    assert_eq!(
        missing.file.as_deref(),
        Some(std::path::Path::new("/nonexistent/catalog.json"))
    );

    let dir = std::env::temp_dir().join(format!("capstore-catalog-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("bad.json");
    std::fs::write(&file, doc(r#""skills": [{"name": "a", "tags": [""]}]"#)).expect("write");
    let err = Catalog::from_path(&file).expect_err("bad tag");
    std::fs::remove_dir_all(&dir).expect("clean up");
    assert_eq!(err.path, "/skills/0/tags/0");
    assert_eq!(
        err.to_string(),
        format!(
            r#"catalog {} /skills/0/tags/0 ("a"): invalid tags "": must not be empty"#,
            file.display()
        )
    );
}

#[test]
fn load_file_names_the_file_in_every_error_and_writes_nothing() {
    let dir = std::env::temp_dir().join(format!("capstore-load-file-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let store = seeded_store();
    let before = contents(&store);
    let missing = dir.join("missing.json");
    let unreadable = Catalog::load_file(&missing, &store).expect_err("no file");
    assert!(matches!(
        unreadable.kind,
        CatalogErrorKind::Io {
            kind: std::io::ErrorKind::NotFound,
            ..
        }
    ));
    // Each kind of failure: the file cannot be parsed, a record breaks a rule, the store
    // already holds a tool. Each error is the one the two-step path gives, with the file.
    let cases = [
        ("not_json.json", "{\"format\": ".to_string(), "/format"),
        (
            "bad_tag.json",
            doc(r#""skills": [{"name": "a", "tags": [""]}]"#),
            "/skills/0/tags/0",
        ),
        (
            "exists.json",
            doc(
                r#""tools": [{"name": "ok", "source": "fine"}, {"name": "now", "source": "clock"}]"#,
            ),
            "/tools/1",
        ),
    ];
    let mut errors = vec![(missing, unreadable)];
    for (name, text, path) in cases {
        let file = dir.join(name);
        std::fs::write(&file, text).expect("write");
        let err = Catalog::load_file(&file, &store).expect_err(name);
        let two_steps = Catalog::from_path(&file)
            .and_then(|catalog| catalog.move_into(&store))
            .expect_err(name);
        assert_eq!(err.path, two_steps.path, "{name}");
        assert_eq!(err.kind, two_steps.kind, "{name}");
        assert_eq!(err.path, path, "{name}");
        errors.push((file, err));
    }
    std::fs::remove_dir_all(&dir).expect("clean up");
    for (file, err) in &errors {
        assert_eq!(err.file.as_deref(), Some(file.as_path()));
        assert!(
            err.to_string()
                .starts_with(&format!("catalog {}", file.display())),
            "{err}"
        );
    }
    assert!(matches!(errors[1].1.kind, CatalogErrorKind::Syntax { .. }));
    assert!(matches!(
        errors[2].1.kind,
        CatalogErrorKind::InvalidRecord(_)
    ));
    assert!(matches!(errors[3].1.kind, CatalogErrorKind::ToolExists));
    assert_eq!(contents(&store), before);
}

#[test]
fn a_catalog_built_in_code_is_checked_again_when_loaded() {
    use capstore::catalog::CatalogSkill;
    // Built without parsing, so only the loader can refuse it.
    let catalog = Catalog {
        skills: vec![CatalogSkill {
            tools: vec![Tool::new("fetch", "").with_source("web")],
            ..CatalogSkill::new("web", "")
        }],
        tools: vec![Tool::new("fetch", "again").with_source("web")],
        ..Catalog::default()
    };
    let store = seeded_store();
    let before = contents(&store);
    let err = catalog.load_into(&store).expect_err("duplicate tool");
    assert_eq!(err.path, "/tools/0");
    assert_eq!(
        err.kind,
        CatalogErrorKind::DuplicateTool {
            first: "/skills/0/tools/0".into()
        }
    );
    assert_eq!(contents(&store), before);
}
