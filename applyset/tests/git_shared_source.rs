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
    SourceSpec { url: url.to_owned(), reference: Some(main), path: Some(path.to_owned()), secret_ref: None }
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
