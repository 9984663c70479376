//! The git source against real git repositories: local bare repositories
//! over `file://`, a git smart-HTTP server (Basic auth, bearer token, TLS with
//! a private CA) and an sshd with a deploy key, all on this machine.

mod git;
mod support;

// The network transports' tests: HTTP auth, HTTPS, SSH, redirects, servers that never answer.
#[path = "git_source/transports.rs"]
mod transports;

use std::collections::BTreeMap;
use std::time::Duration;

use applyset::source::{Ancestry, CacheKey, ErrorCategory, GitRef, GitSource, Limits, SourceError, SourceSpec};
use git::{Fixture, GitHttpServer, HttpAuth};

const T: Duration = Duration::from_secs(60);

fn source(name: &str) -> GitSource {
    GitSource::new(git::temp_dir(&format!("cache-{name}")))
}

fn spec(url: &str, r: GitRef, path: Option<&str>) -> SourceSpec {
    SourceSpec {
        url: url.to_string(),
        reference: Some(r),
        path: path.map(str::to_string),
        secret_ref: None,
        proxy_secret_ref: None,
    }
}

fn branch(b: &str) -> GitRef {
    GitRef { branch: Some(b.into()), ..Default::default() }
}

fn tag(t: &str) -> GitRef {
    GitRef { tag: Some(t.into()), ..Default::default() }
}

fn semver(r: &str) -> GitRef {
    GitRef { semver: Some(r.into()), ..Default::default() }
}

fn commit(c: &str, b: Option<&str>) -> GitRef {
    GitRef { commit: Some(c.into()), branch: b.map(Into::into), ..Default::default() }
}

fn key(name: &str) -> CacheKey {
    CacheKey::new("default", name)
}

fn read(a: &applyset::source::Artifact, file: &str) -> String {
    std::fs::read_to_string(a.dir.join(file)).unwrap_or_else(|e| panic!("read {file} in {}: {e}", a.dir.display()))
}

fn expect_err(r: Result<applyset::source::Artifact, SourceError>, category: ErrorCategory) -> SourceError {
    match r {
        Ok(a) => panic!("expected {category}, got artifact {a:?}"),
        Err(e) => {
            assert_eq!(e.category(), category, "unexpected error: {e}");
            e
        }
    }
}

#[tokio::test]
async fn branch_tag_and_default_branch() {
    let f = Fixture::new("branch-tag");
    f.write("deploy/cm.yaml", "v: 1\n");
    let c1 = f.commit("one");
    f.tag("v1", true);
    f.write("deploy/cm.yaml", "v: 2\n");
    let c2 = f.commit("two");
    let src = source("branch-tag");

    let a = src.sync(&key("b"), &spec(&f.url(), branch("main"), Some("deploy")), None, T).await.unwrap();
    assert_eq!(a.revision, format!("main@sha1:{c2}"));
    assert_eq!(a.commit, c2);
    assert_eq!(read(&a, "cm.yaml"), "v: 2\n");
    assert!(a.fetched);
    assert!(a.dir.ends_with("deploy"));

    let a = src.sync(&key("t"), &spec(&f.url(), tag("v1"), Some("deploy")), None, T).await.unwrap();
    assert_eq!(a.revision, format!("v1@sha1:{c1}"), "annotated tag peels to its commit");
    assert_eq!(read(&a, "cm.yaml"), "v: 1\n");

    let default = SourceSpec { url: f.url(), reference: None, path: None, secret_ref: None, proxy_secret_ref: None };
    let a = src.sync(&key("d"), &default, None, T).await.unwrap();
    assert_eq!(a.revision, format!("main@sha1:{c2}"));
    assert_eq!(read(&a, "deploy/cm.yaml"), "v: 2\n");

    // Plain local paths work as well as file:// URLs.
    let plain = spec(f.bare.to_str().unwrap(), branch("main"), Some("./deploy/"));
    let a = src.sync(&key("plain"), &plain, None, T).await.unwrap();
    assert_eq!(a.commit, c2);
}

#[tokio::test]
async fn semver_picks_highest_matching_tag() {
    let f = Fixture::new("semver");
    let mut shas = BTreeMap::new();
    for (t, annotated) in [
        ("v1.0.0", false),
        ("v1.2.0", true),
        ("1.5.3", false),
        ("v1.10.0-rc.1", false),
        ("v2.0.0", true),
        ("not-semver", false),
    ] {
        f.write("version.txt", t);
        shas.insert(t, f.commit(t));
        f.tag(t, annotated);
    }
    let src = source("semver");
    let a = src.sync(&key("s"), &spec(&f.url(), semver(">=1.2.0 <2"), None), None, T).await.unwrap();
    assert_eq!(a.revision, format!("1.5.3@sha1:{}", shas["1.5.3"]));
    assert_eq!(read(&a, "version.txt"), "1.5.3");

    let a = src.sync(&key("s"), &spec(&f.url(), semver(">=1.0.0"), None), None, T).await.unwrap();
    assert_eq!(a.revision, format!("v2.0.0@sha1:{}", shas["v2.0.0"]));

    let a = src.sync(&key("s"), &spec(&f.url(), semver("~1.2"), None), None, T).await.unwrap();
    assert_eq!(a.revision, format!("v1.2.0@sha1:{}", shas["v1.2.0"]));

    let e = expect_err(
        src.sync(&key("s"), &spec(&f.url(), semver(">=3"), None), None, T).await,
        ErrorCategory::RefNotFound,
    );
    assert!(e.to_string().contains(">=3"), "{e}");

    expect_err(src.sync(&key("s"), &spec(&f.url(), semver("bogus"), None), None, T).await, ErrorCategory::InvalidSpec);
}

#[tokio::test]
async fn commit_pins() {
    let f = Fixture::new("commit");
    f.write("a.txt", "old");
    let old = f.commit("old");
    f.write("a.txt", "new");
    let new = f.commit("new");
    f.checkout_new_branch("other");
    f.write("a.txt", "other");
    let other = f.commit("other");
    f.checkout("main");
    let src = source("commit");

    let a = src.sync(&key("c"), &spec(&f.url(), commit(&old, None), None), None, T).await.unwrap();
    assert_eq!(a.revision, format!("sha1:{old}"));
    assert_eq!(read(&a, "a.txt"), "old");

    // A cached pinned commit needs no connection at all.
    let before = src.stats();
    let a = src.sync(&key("c"), &spec(&f.url(), commit(&old, None), None), None, T).await.unwrap();
    assert!(!a.fetched);
    assert_eq!(src.stats().connects, before.connects);
    assert_eq!(src.stats().fetches, before.fetches);

    let a = src.sync(&key("cb"), &spec(&f.url(), commit(&old, Some("main")), None), None, T).await.unwrap();
    assert_eq!(a.revision, format!("main@sha1:{old}"));
    let a = src.sync(&key("cb"), &spec(&f.url(), commit(&new, Some("main")), None), None, T).await.unwrap();
    assert_eq!(a.revision, format!("main@sha1:{new}"));
    assert_eq!(read(&a, "a.txt"), "new");

    let e = expect_err(
        src.sync(&key("cb"), &spec(&f.url(), commit(&other, Some("main")), None), None, T).await,
        ErrorCategory::RefNotFound,
    );
    assert!(e.to_string().contains("not on branch main"), "{e}");

    let missing = "0123456789abcdef0123456789abcdef01234567";
    let e = expect_err(
        src.sync(&key("c2"), &spec(&f.url(), commit(missing, None), None), None, T).await,
        ErrorCategory::RefNotFound,
    );
    assert!(e.to_string().contains(missing), "{e}");

    expect_err(
        src.sync(&key("c2"), &spec(&f.url(), commit("abc123", None), None), None, T).await,
        ErrorCategory::InvalidSpec,
    );
}

#[tokio::test]
async fn fetches_only_when_the_ref_moves() {
    let f = Fixture::new("moves");
    f.write("deploy/a.yaml", "1");
    let c1 = f.commit("one");
    let src = source("moves");
    let k = key("m");
    let s = spec(&f.url(), branch("main"), Some("deploy"));

    let a1 = src.sync(&k, &s, None, T).await.unwrap();
    assert_eq!(a1.commit, c1);
    let st1 = src.stats();
    assert_eq!((st1.connects, st1.fetches, st1.checkouts), (1, 1, 1));
    let pack_dir = src.repository_dir(&a1.repository_id).join("objects/pack");
    let packs = std::fs::read_dir(&pack_dir).unwrap().count();

    // Unchanged: one more ls-remote, no fetch, no new checkout, no new pack.
    let a2 = src.sync(&k, &s, None, T).await.unwrap();
    assert!(a2.network.is_some(), "it listed the remote");
    assert_eq!(a2, applyset::source::Artifact { fetched: false, network: a2.network, ..a1.clone() });
    let st2 = src.stats();
    assert_eq!((st2.connects, st2.fetches, st2.checkouts), (2, 1, 1));
    assert_eq!(std::fs::read_dir(&pack_dir).unwrap().count(), packs);

    // Moved: a new revision, fetched, old checkout gone.
    f.write("deploy/a.yaml", "2");
    let c2 = f.commit("two");
    let a3 = src.sync(&k, &s, None, T).await.unwrap();
    assert_eq!(a3.revision, format!("main@sha1:{c2}"));
    assert!(a3.fetched);
    assert_eq!(read(&a3, "a.yaml"), "2");
    let st3 = src.stats();
    assert_eq!((st3.connects, st3.fetches, st3.checkouts), (3, 2, 2));
    assert!(!a1.checkout.exists(), "the previous checkout is removed");

    // Moving back to a commit already in the cache needs no fetch either.
    git::git(&f.work, &["reset", "-q", "--hard", &c1]);
    f.push();
    let a4 = src.sync(&k, &s, None, T).await.unwrap();
    assert_eq!(a4.commit, c1);
    assert!(!a4.fetched);
    assert_eq!(src.stats().fetches, 2);

    // Purge removes the cache, and the checkout nobody else reads.
    src.purge(&k).await.unwrap();
    assert!(!src.cache_dir(&k).exists());
    assert!(!a4.checkout.exists());
}

/// Over smart HTTP a listing that finds nothing new is one request: the redirect check's
/// answer is the ref advertisement, and libgit2 connects only to fetch.
#[tokio::test]
async fn over_smart_http_an_unchanged_ref_costs_one_request() {
    use std::sync::atomic::Ordering::SeqCst;
    let f = Fixture::new("one-request");
    f.write("deploy/a.yaml", "1");
    let c1 = f.commit("one");
    git::git(&f.work, &["tag", "-a", "-m", "v1", "v1"]);
    f.push();
    let http = GitHttpServer::start(f.bare.parent().unwrap(), HttpAuth::None, None);
    let requests = || (http.ref_listings.load(SeqCst), http.upload_packs.load(SeqCst));
    let src = source("one-request");
    for (name, r) in [("branch", branch("main")), ("default", GitRef::default()), ("tag", tag("v1"))] {
        let s = spec(&http.url("repo.git"), r, Some("deploy"));
        let before = requests();
        let first = src.sync(&key(name), &s, None, T).await.unwrap();
        assert_eq!(first.commit, c1, "{name}");
        let after_first = requests();
        let again = src.sync(&key(name), &s, None, T).await.unwrap();
        let network = again.network;
        assert_eq!(again, applyset::source::Artifact { fetched: false, network, ..first.clone() }, "{name}");
        let after_again = requests();
        assert_eq!((after_again.0 - after_first.0, after_again.1 - after_first.1), (1, 0), "{name}");
        // The first sync of each ref: the check's listing, then libgit2's and its fetch (a
        // shallow fetch is two upload-pack requests); the default branch's and the tag's commit
        // was fetched with the branch already.
        let fetched = name == "branch";
        assert_eq!(after_first.0 - before.0, if fetched { 2 } else { 1 }, "{name}");
        assert_eq!(after_first.1 > before.1, fetched, "{name}");
    }

    // A new commit: the advertisement shows it, libgit2 connects and fetches it.
    f.write("deploy/a.yaml", "2");
    let c2 = f.commit("two");
    let before = requests();
    let moved = src.sync(&key("branch"), &spec(&http.url("repo.git"), branch("main"), Some("deploy")), None, T).await;
    let moved = moved.unwrap();
    assert_eq!((moved.commit.as_str(), moved.fetched), (c2.as_str(), true));
    assert_eq!(read(&moved, "a.yaml"), "2");
    let after = requests();
    assert_eq!(after.0 - before.0, 2);
    assert!(after.1 > before.1);
    // A branch that is not there is told from the advertisement alone.
    let before = requests();
    let missing = src.sync(&key("gone"), &spec(&http.url("repo.git"), branch("gone"), None), None, T).await;
    let e = expect_err(missing, ErrorCategory::RefNotFound);
    assert!(e.to_string().contains("branch gone does not exist on the remote"), "{e}");
    assert_eq!(requests().0 - before.0, 1);
}

#[tokio::test]
async fn missing_refs() {
    let f = Fixture::new("missing");
    f.write("a", "a");
    f.commit("one");
    f.tag("v1", false);
    let src = source("missing");
    let e = expect_err(
        src.sync(&key("x"), &spec(&f.url(), branch("nope"), None), None, T).await,
        ErrorCategory::RefNotFound,
    );
    let msg = e.to_string();
    assert!(msg.contains("branch nope") && msg.contains(&f.url()), "{msg}");
    expect_err(src.sync(&key("x"), &spec(&f.url(), tag("v9"), None), None, T).await, ErrorCategory::RefNotFound);

    let gone = format!("file://{}/does-not-exist.git", f.root.display());
    expect_err(src.sync(&key("x"), &spec(&gone, branch("main"), None), None, T).await, ErrorCategory::Unreachable);

    let conflicting = GitRef { branch: Some("main".into()), tag: Some("v1".into()), ..Default::default() };
    expect_err(src.sync(&key("x"), &spec(&f.url(), conflicting, None), None, T).await, ErrorCategory::InvalidSpec);
    expect_err(
        src.sync(&key("x"), &spec("ftp://example.com/r.git", branch("main"), None), None, T).await,
        ErrorCategory::InvalidSpec,
    );
}

#[tokio::test]
async fn paths_must_stay_inside_the_checkout() {
    let f = Fixture::new("paths");
    f.write("common/base.yaml", "base");
    f.write("app/cm.yaml", "app");
    f.symlink("app/base", "../common"); // inside: fine
    f.write("file.txt", "x");
    f.symlink("evil/escape", "../../../../../../etc");
    f.write("evil/ok.yaml", "x");
    f.symlink("etc", "/etc");
    f.symlink("deep/dangling", "../../outside/nothing");
    let c = f.commit("paths");
    let src = source("paths");
    let run = |path: &'static str| {
        let s = spec(&f.url(), branch("main"), Some(path));
        let src = &src;
        async move { src.sync(&key("p"), &s, None, T).await }
    };

    let a = run("app").await.unwrap();
    assert_eq!(read(&a, "base/base.yaml"), "base");
    assert_eq!(a.commit, c);

    let e = expect_err(run("../outside").await, ErrorCategory::PathEscapes);
    assert!(e.to_string().contains(".."), "{e}");
    expect_err(run("app/../../x").await, ErrorCategory::PathEscapes);
    expect_err(run("/etc").await, ErrorCategory::PathEscapes);
    let e = expect_err(run("evil").await, ErrorCategory::PathEscapes);
    assert!(e.to_string().contains("evil/escape"), "{e}");
    expect_err(run("etc").await, ErrorCategory::PathEscapes);
    expect_err(run("etc/ssl").await, ErrorCategory::PathEscapes);
    expect_err(run("deep").await, ErrorCategory::PathEscapes);

    let e = expect_err(run("nope").await, ErrorCategory::PathNotFound);
    assert!(e.to_string().contains("nope") && e.to_string().contains(&c), "{e}");
    expect_err(run("file.txt").await, ErrorCategory::PathNotFound);
    // The root itself holds escaping links: rejected too.
    let whole = SourceSpec {
        url: f.url(),
        reference: Some(branch("main")),
        path: None,
        secret_ref: None,
        proxy_secret_ref: None,
    };
    expect_err(src.sync(&key("p"), &whole, None, T).await, ErrorCategory::PathEscapes);
}

#[tokio::test]
async fn size_limits() {
    let f = Fixture::new("size");
    f.write("small.yaml", "x");
    f.write("big.bin", git::noise(2 * 1024 * 1024, 42));
    f.commit("big");
    let limits = Limits { max_fetch_bytes: 256 * 1024, ..Limits::default() };

    // Fetch limit over the network path (smart HTTP).
    let http = GitHttpServer::start(f.bare.parent().unwrap(), HttpAuth::None, None);
    let src = source("size-http").with_limits(limits);
    let e = expect_err(
        src.sync(&key("s"), &spec(&http.url("repo.git"), branch("main"), None), None, T).await,
        ErrorCategory::TooLarge,
    );
    assert!(e.to_string().contains("262144"), "{e}");

    // ... and over file://.
    let src = source("size-file").with_limits(limits);
    expect_err(src.sync(&key("s"), &spec(&f.url(), branch("main"), None), None, T).await, ErrorCategory::TooLarge);

    // Checkout limits.
    let src = source("size-checkout").with_limits(Limits { max_checkout_bytes: 1024 * 1024, ..Limits::default() });
    let e =
        expect_err(src.sync(&key("s"), &spec(&f.url(), branch("main"), None), None, T).await, ErrorCategory::TooLarge);
    assert!(e.to_string().contains("checkout"), "{e}");
    let src = source("size-files").with_limits(Limits { max_checkout_files: 1, ..Limits::default() });
    expect_err(src.sync(&key("s"), &spec(&f.url(), branch("main"), None), None, T).await, ErrorCategory::TooLarge);

    // One file over the per-file limit is refused on its header, before it is inflated: 64 MiB
    // of zeros are a few hundred KB in git. Its name is the repository's.
    let zeros = Fixture::new("size-zeros");
    zeros.write("small.yaml", "x");
    zeros.write("zeros.yaml", vec![0u8; 64 * 1024 * 1024]);
    zeros.commit("zeros");
    let src =
        source("size-file-bytes").with_limits(Limits { max_checkout_file_bytes: 1024 * 1024, ..Limits::default() });
    let e = expect_err(
        src.sync(&key("s"), &spec(&zeros.url(), branch("main"), None), None, T).await,
        ErrorCategory::TooLarge,
    );
    assert!(e.to_string().contains(" zeros.yaml is 67108864 bytes"), "{e}");
}

#[tokio::test]
async fn concurrent_syncs_of_one_key() {
    let f = Fixture::new("concurrent");
    f.write("a.yaml", "1");
    let c = f.commit("one");
    let src = std::sync::Arc::new(source("concurrent"));
    let s = spec(&f.url(), branch("main"), None);
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let (src, s) = (src.clone(), s.clone());
        tasks.push(tokio::spawn(async move { src.sync(&key("k"), &s, None, T).await }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap().unwrap().commit, c);
    }
    assert_eq!(src.stats().fetches, 1, "the lock serialises syncs; later ones find the commit cached");
}

#[tokio::test]
async fn history_rewrites_are_told_from_fast_forwards() {
    let f = Fixture::new("ancestry");
    f.write("a.yaml", "a");
    let a = f.commit("a");
    f.write("b.yaml", "b");
    let b = f.commit("b");
    // Over HTTP, so that the cache is shallow as in production.
    let http = GitHttpServer::start(f.bare.parent().unwrap(), HttpAuth::None, None);
    let s = spec(&http.url("repo.git"), branch("main"), None);
    let src = source("ancestry");
    let first = src.sync_since(&key("k"), &s, None, T, None).await.unwrap();
    assert_eq!(first.revision, format!("main@sha1:{b}"));
    assert_eq!(first.change, None);

    // Same commit: no change.
    let same = src.sync_since(&key("k"), &s, None, T, Some(&first.revision)).await.unwrap();
    assert_eq!(same.change, None);

    // A fast-forward.
    f.write("c.yaml", "c");
    let c = f.commit("c");
    let forward = src.sync_since(&key("k"), &s, None, T, Some(&first.revision)).await.unwrap();
    assert_eq!(forward.commit, c);
    let change = forward.change.clone().unwrap();
    assert_eq!(change.previous, first.revision);
    assert_eq!(change.ancestry, Ancestry::Descendant);

    // Force-push backwards: main reset to a, then d on top of it.
    git::git(&f.work, &["reset", "-q", "--hard", &a]);
    f.write("d.yaml", "d");
    let d = f.commit("d");
    let rewritten = src.sync_since(&key("k"), &s, None, T, Some(&forward.revision)).await.unwrap();
    assert_eq!(rewritten.commit, d);
    assert_eq!(rewritten.change.clone().unwrap().ancestry, Ancestry::Rewritten, "{rewritten:?}");

    // Another branch: not compared.
    f.checkout_new_branch("other");
    f.commit("other");
    let other = src
        .sync_since(&key("k"), &spec(&http.url("repo.git"), branch("other"), None), None, T, Some(&rewritten.revision))
        .await
        .unwrap();
    assert_eq!(other.change.unwrap().ancestry, Ancestry::NotCompared);

    // A cache that never held the previous commit cannot tell (another cache: every key of
    // this one shares the source's repository, which holds it).
    let fresh = source("ancestry-fresh");
    let fresh = fresh.sync_since(&key("fresh"), &s, None, T, Some(&format!("main@sha1:{b}"))).await.unwrap();
    assert_eq!(fresh.change.unwrap().ancestry, Ancestry::Unknown);
}
