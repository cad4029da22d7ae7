//! A snapshot's catalog tables as plain values, for comparing stores.

use capstore::{SKILLS, Skill, Snapshot, TOOLS, Tool};

/// Every tool and every skill of `snap`, in key order.
pub fn tools_and_skills(snap: &Snapshot) -> (Vec<Tool>, Vec<Skill>) {
    (
        snap.iter(&TOOLS)
            .expect("tools")
            .records()
            .cloned()
            .collect(),
        snap.iter(&SKILLS)
            .expect("skills")
            .records()
            .cloned()
            .collect(),
    )
}
