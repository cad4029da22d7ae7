//! The gateways' clients shared through PostgreSQL (`capstore::sync::{add_client,
//! revoke_client}`, `Replica::clients`), against a real PostgreSQL (`scripts/postgres.sh run`):
//! added once, every replica knows the client and its scope; revoked once, every replica refuses
//! its token; a name is taken once; a replica opened after compaction knows the clients too.

mod pg;

use std::time::Duration;

use capstore::gateway::Scope;
use capstore::sync::{Replica, SyncError, add_client, compact, list_clients, revoke_client};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_added_or_revoked_once_is_known_or_refused_on_every_replica() {
    let (url, options) = (pg::url(), pg::options("clients"));
    let a = Replica::open(&url, options.clone()).await.expect("open a");
    let b = Replica::open(&url, options.clone()).await.expect("open b");
    let (on_a, on_b) = (a.clients(), b.clients());
    assert!(on_a.is_empty() && on_b.is_empty());

    let scope = Scope {
        servers: vec!["github".into()],
        tools: vec![],
        deny_tags: vec!["destructive".into()],
    };
    let (token, version) = add_client(&url, &options, "ci", scope.clone())
        .await
        .expect("add");
    let (other, _) = add_client(&url, &options, "nightly", Scope::default())
        .await
        .expect("add another");
    let taken = add_client(&url, &options, "ci", Scope::default()).await;
    assert!(
        matches!(&taken, Err(SyncError::Client(why)) if why.contains("exists")),
        "{taken:?}"
    );
    for (replica, clients) in [(&a, &on_a), (&b, &on_b)] {
        replica
            .wait_for(version + 1, pg::SEE)
            .await
            .expect("applied");
        let client = clients.authenticate(&token).expect("known");
        assert_eq!((&*client.name, &*client.scope), ("ci", &scope));
        assert!(clients.authenticate(&other).is_some());
        assert!(clients.authenticate("cst_unknown").is_none());
    }
    let listed = list_clients(&url, &options).await.expect("list");
    let names: Vec<&str> = listed.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["ci", "nightly"]);
    assert!(listed.iter().all(|c| !c.token_sha256.contains(&token[4..])));

    let version = revoke_client(&url, &options, "ci").await.expect("revoke");
    for (replica, clients) in [(&a, &on_a), (&b, &on_b)] {
        replica.wait_for(version, pg::SEE).await.expect("applied");
        assert!(clients.authenticate(&token).is_none(), "revoked");
        assert!(clients.authenticate(&other).is_some(), "the other stays");
    }
    let gone = revoke_client(&url, &options, "ci").await;
    assert!(
        matches!(&gone, Err(SyncError::Client(why)) if why.contains("no client named `ci`")),
        "{gone:?}"
    );

    // A replica opened from the compacted snapshot knows the clients as they are.
    compact(&url, &options).await.expect("compact");
    let c = Replica::open(&url, options.clone()).await.expect("open c");
    let on_c = c.clients();
    assert!(on_c.authenticate(&other).is_some());
    assert!(on_c.authenticate(&token).is_none());
    assert_eq!(on_c.list().len(), 1);
    // Clients are changed where they are kept, not through a replica's handle.
    assert!(on_c.revoke("nightly").is_err());
    tokio::time::sleep(Duration::from_millis(1)).await;
}
