//! Shared sources (a monorepo followed by many ApplySets) against a real git smart-HTTP server
//! on loopback: one repository and one listing of the remote serve every ApplySet with the same
//! URL, ref and credentials; a listing is reused only when it is recent enough for the asker;
//! other credentials never share.

mod git;
mod support;

use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use applyset::source::{Artifact, CacheKey, Credentials, GitRef, GitSource, SourceSpec, SyncOptions};
use git::{Fixture, GitHttpServer, HttpAuth};

const T: Duration = Duration::from_secs(60);

fn app(url: &str, path: &str) -> SourceSpec {
    let main = GitRef { branch: Some("main".into()), ..Default::default() };
    SourceSpec {
        url: url.to_owned(),
        reference: Some(main),
        path: Some(path.to_owned()),
        secret_ref: None,
        proxy_secret_ref: None,
    }
}

fn within(interval: Duration) -> SyncOptions<'static> {
    SyncOptions { listed_since: SystemTime::now().checked_sub(interval), ..SyncOptions::default() }
}

/// The sync of ApplySet `team/<name>` following `path` of `url`.
async fn follow(src: &GitSource, url: &str, name: &str, path: &str, options: SyncOptions<'_>) -> Artifact {
    src.sync_with(&CacheKey::new("team", name), &app(url, path), None, T, options).await.unwrap()
}

/// A repository with `apps/app-0` … `apps/app-{n-1}`, served over HTTP.
fn monorepo(name: &str, n: usize) -> (Fixture, GitHttpServer, String) {
    let f = Fixture::new(name);
    for i in 0..n {
        f.write(&format!("apps/app-{i}/cm.yaml"), format!("name: app-{i}\nversion: 1\n"));
    }
    f.commit("apps");
    let server = GitHttpServer::start(f.bare.parent().unwrap(), HttpAuth::None, None);
    let url = server.url("repo.git");
    (f, server, url)
}

#[tokio::test]
async fn ten_followers_of_one_repository_list_it_once_per_interval() {
    let (f, server, url) = monorepo("shared-ten", 10);
    let src = GitSource::new(git::temp_dir("cache-shared-ten"));
    let interval = Duration::from_secs(60);

    let first = follow(&src, &url, "app-0", "apps/app-0", within(interval)).await;
    let listings_after_first = server.ref_listings.load(Ordering::SeqCst);
    for i in 1..10 {
        let a = follow(&src, &url, &format!("app-{i}"), &format!("apps/app-{i}"), within(interval)).await;
        assert_eq!(a.commit, first.commit);
        assert_eq!(a.source_id, first.source_id, "one shared source");
        assert!(!a.fetched && !a.moved);
        let text = std::fs::read_to_string(a.dir.join("cm.yaml")).unwrap();
        assert_eq!(text, format!("name: app-{i}\nversion: 1\n"), "each follower reads its own path");
    }
    let stats = src.stats();
    assert_eq!((stats.connects, stats.fetches), (1, 1), "one listing and one fetch for ten followers");
    assert_eq!(server.ref_listings.load(Ordering::SeqCst), listings_after_first, "no request after the first");
    let mut fellows = src.fellow_followers(&first.source_id, &CacheKey::new("team", "app-0"));
    fellows.sort();
    assert_eq!(fellows.len(), 9, "{fellows:?}");

    // A new commit: a follower whose interval has passed (or that handles a request made
    // after the listing) lists the remote again, sees it, and says the source moved; the
    // others take that listing without connecting.
    f.write("apps/app-3/cm.yaml", "name: app-3\nversion: 2\n");
    let second = f.commit("app-3 v2");
    let stale = follow(&src, &url, "app-1", "apps/app-1", within(interval)).await;
    assert_eq!(stale.commit, first.commit, "within its interval, the last listing is taken");
    let requested = SyncOptions { listed_since: Some(SystemTime::now()), ..SyncOptions::default() };
    let moved = follow(&src, &url, "app-2", "apps/app-2", requested).await;
    assert_eq!((moved.commit.as_str(), moved.moved), (second.as_str(), true));
    let woken = follow(&src, &url, "app-3", "apps/app-3", within(interval)).await;
    assert_eq!((woken.commit.as_str(), woken.moved), (second.as_str(), false));
    assert_eq!(std::fs::read_to_string(woken.dir.join("cm.yaml")).unwrap(), "name: app-3\nversion: 2\n");
    assert_eq!(src.stats().connects, 2);

    // An earlier revision (stale fields read it) comes from the same repository: no connection,
    // whatever ref it is asked by.
    let spec = app(&url, "apps/app-3");
    let files = src.read_revision(&CacheKey::new("team", "app-3"), &spec, &first.commit, None, T).await.unwrap();
    assert!(files.iter().any(|(path, bytes)| path.ends_with("cm.yaml") && bytes == b"name: app-3\nversion: 1\n"));
    assert_eq!(src.stats().connects, 2, "the commit was in the shared repository");
}

/// The sync of `team/app-<i>` after `before` was applied (a run at the repository's tip).
async fn resync(src: &GitSource, url: &str, i: usize, before: &Artifact) -> Artifact {
    let options = SyncOptions {
        previous: Some(before.revision.as_str()),
        applied_inputs: before.inputs.as_deref(),
        listed_since: Some(SystemTime::now()),
    };
    follow(src, url, &format!("app-{i}"), &format!("apps/app-{i}"), options).await
}

/// A monorepo's commit is written to disk once, whatever the number of ApplySets at it: each
/// reads its path in the one checkout of the commit, keeps it while another moves on, and the
/// checkout goes once nobody reads it.
#[tokio::test]
async fn one_checkout_per_commit_serves_every_follower() {
    let (f, _server, url) = monorepo("shared-checkout", 10);
    let src = GitSource::new(git::temp_dir("cache-shared-checkout"));
    let now = || SyncOptions { listed_since: Some(SystemTime::now()), ..SyncOptions::default() };
    let mut applied = Vec::new();
    for i in 0..10 {
        applied.push(follow(&src, &url, &format!("app-{i}"), &format!("apps/app-{i}"), now()).await);
    }
    let first = applied[0].checkout.clone();
    assert!(applied.iter().all(|a| a.checkout == first), "one checkout for the commit");
    assert_eq!(src.stats().checkouts, 1, "written once for ten followers");

    // app-3 changes: its follower writes the new commit's checkout; app-1, whose inputs are
    // the same, takes that one too; the others, not synced yet, still read the first.
    f.write("apps/app-3/cm.yaml", "name: app-3\nversion: 2\n");
    let second = f.commit("app-3 v2");
    let resync = |i: usize| resync(&src, &url, i, &applied[i]);
    let changed = resync(3).await;
    assert_eq!((changed.commit.as_str(), changed.inputs_unchanged), (second.as_str(), false));
    assert_ne!(changed.checkout, first);
    assert_eq!(std::fs::read_to_string(changed.dir.join("cm.yaml")).unwrap(), "name: app-3\nversion: 2\n");
    let unchanged = resync(1).await;
    assert_eq!((unchanged.commit.as_str(), unchanged.inputs_unchanged), (second.as_str(), true));
    assert_eq!(unchanged.checkout, changed.checkout, "the commit's checkout, not a copy");
    assert_eq!(src.stats().checkouts, 2);
    let reading = &applied[5];
    assert_eq!(std::fs::read_to_string(reading.dir.join("cm.yaml")).unwrap(), "name: app-5\nversion: 1\n");
    assert_eq!(std::fs::read_to_string(first.join("apps/app-3/cm.yaml")).unwrap(), "name: app-3\nversion: 1\n");

    // Once every follower is at the new commit, nobody reads the first checkout: it is gone.
    for i in (0..10).filter(|i| ![1, 3].contains(i)) {
        assert_eq!(resync(i).await.checkout, changed.checkout);
    }
    assert!(!first.exists(), "the checkout nobody reads is removed");
    assert_eq!(src.stats().checkouts, 2);

    // Deleting the ApplySets: the last one takes the checkout with it.
    for i in 0..9 {
        src.purge(&CacheKey::new("team", format!("app-{i}"))).await.unwrap();
        assert!(changed.checkout.exists(), "app-9 still reads it");
    }
    src.purge(&CacheKey::new("team", "app-9")).await.unwrap();
    assert!(!changed.checkout.exists());
}

#[tokio::test]
async fn other_credentials_never_share_a_listing_or_a_repository() {
    let (_f, _server, url) = monorepo("shared-creds", 2);
    let src = GitSource::new(git::temp_dir("cache-shared-creds"));
    let interval = Duration::from_secs(60);
    let sync = |namespace: &str, credentials: Option<Credentials>| {
        let key = CacheKey::new(namespace, "app");
        let src = &src;
        let spec = app(&url, "apps/app-0");
        async move { src.sync_with(&key, &spec, credentials, T, within(interval)).await.unwrap() }
    };
    let a = sync("tenant-a", Some(Credentials::basic("git", "secret-a"))).await;
    let b = sync("tenant-b", Some(Credentials::basic("git", "secret-b"))).await;
    let c = sync("tenant-c", None).await;
    assert_ne!(a.source_id, b.source_id, "another password is another source");
    assert_ne!(a.source_id, c.source_id);
    assert_ne!(a.repository_id, b.repository_id, "nor a repository");
    assert_eq!(src.stats().connects, 3, "each lists the remote with its own credentials");
    let a_again = sync("tenant-d", Some(Credentials::basic("git", "secret-a"))).await;
    assert_eq!(a_again.source_id, a.source_id, "the same URL and secret content share, whatever the namespace");
    assert_eq!(src.stats().connects, 3);
    assert!(src.fellow_followers(&b.source_id, &CacheKey::new("tenant-b", "app")).is_empty());
}
