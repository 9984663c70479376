//! Test support for the git source: fixture repositories built with the real
//! `git` CLI, a git smart-HTTP server (`git http-backend` behind a small
//! std-only HTTP/1.1 CGI bridge that checks Basic/Bearer auth, optionally
//! over TLS, and that answers configured redirects), an sshd on a loopback port with a deploy key, and a TCP server
//! that accepts and never answers.

#![allow(dead_code)]

pub mod drip;
pub mod proxy;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::support::{free_port, scratch_dir};

/// A fresh directory under the test target's temp dir.
pub fn temp_dir(name: &str) -> PathBuf {
    scratch_dir("git_source", &format!("{name}-{}", std::process::id()))
}

/// Run git with a config isolated from the machine's.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .output()
        .unwrap_or_else(|e| panic!("cannot run git (is it installed?): {e}"));
    assert!(out.status.success(), "git {args:?} in {} failed: {}", dir.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A work repository and a bare repository it pushes to.
pub struct Fixture {
    pub root: PathBuf,
    pub work: PathBuf,
    pub bare: PathBuf,
}

impl Fixture {
    pub fn new(name: &str) -> Fixture {
        let root = temp_dir(name);
        let work = root.join("work");
        let bare = root.join("remote").join("repo.git");
        std::fs::create_dir_all(&work).unwrap();
        std::fs::create_dir_all(&bare).unwrap();
        git(&work, &["init", "-q", "-b", "main"]);
        git(&bare, &["init", "-q", "--bare", "-b", "main"]);
        Fixture { root, work, bare }
    }

    pub fn url(&self) -> String {
        format!("file://{}", self.bare.display())
    }

    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> &Self {
        let p = self.work.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
        self
    }

    pub fn symlink(&self, rel: &str, target: &str) -> &Self {
        let p = self.work.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        let _ = std::fs::remove_file(&p);
        std::os::unix::fs::symlink(target, p).unwrap();
        self
    }

    pub fn remove(&self, rel: &str) -> &Self {
        git(&self.work, &["rm", "-rq", rel]);
        self
    }

    /// Commit everything and push all branches and tags; returns the SHA.
    pub fn commit(&self, msg: &str) -> String {
        git(&self.work, &["add", "-A"]);
        git(&self.work, &["commit", "-q", "--allow-empty", "-m", msg]);
        self.push();
        git(&self.work, &["rev-parse", "HEAD"])
    }

    pub fn push(&self) {
        let bare = self.bare.to_str().unwrap();
        git(&self.work, &["push", "-q", "--force", bare, "refs/heads/*:refs/heads/*", "refs/tags/*:refs/tags/*"]);
    }

    /// Tag HEAD (annotated if `annotated`) and push.
    pub fn tag(&self, name: &str, annotated: bool) {
        if annotated {
            git(&self.work, &["tag", "-a", "-m", name, name]);
        } else {
            git(&self.work, &["tag", name]);
        }
        self.push();
    }

    pub fn checkout_new_branch(&self, name: &str) {
        git(&self.work, &["checkout", "-q", "-b", name]);
    }

    pub fn checkout(&self, name: &str) {
        git(&self.work, &["checkout", "-q", name]);
    }
}

/// Incompressible bytes (xorshift), for size-limit tests.
pub fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    out
}

// ---------------------------------------------------------------------------
// A TCP server that accepts and never answers.

pub struct SilentServer {
    pub port: u16,
    stop: Arc<AtomicBool>,
}

impl SilentServer {
    pub fn start() -> SilentServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        thread::spawn(move || {
            let mut held = Vec::new();
            for conn in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(c) = conn {
                    held.push(c); // keep it open, say nothing
                }
            }
        });
        SilentServer { port, stop }
    }
}

impl Drop for SilentServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

// ---------------------------------------------------------------------------
// git smart HTTP: `git http-backend` behind a minimal HTTP/1.1 server.

#[derive(Clone)]
pub enum HttpAuth {
    None,
    Basic { user: String, password: String },
    Bearer(String),
}

pub struct GitHttpServer {
    pub port: u16,
    stop: Arc<AtomicBool>,
    /// Requests served, by kind.
    pub ref_listings: Arc<AtomicUsize>,
    pub upload_packs: Arc<AtomicUsize>,
    pub unauthorized: Arc<AtomicUsize>,
    /// Requests that carried an `Authorization` header, challenged or not.
    pub authorizations: Arc<AtomicUsize>,
    /// Redirects answered (every request whose path starts with a prefix).
    pub redirected: Arc<AtomicUsize>,
    redirects: Redirects,
}

/// `(path prefix, target)`: a request for `<prefix><rest>?<query>` is
/// answered `301 Location: <target><rest>?<query>`.
type Redirects = Arc<Mutex<Vec<(String, String)>>>;

pub type TlsAcceptor = Arc<openssl::ssl::SslAcceptor>;

impl GitHttpServer {
    /// Serve the repositories under `project_root` on 127.0.0.1 (plain HTTP,
    /// or TLS when `tls` is given).
    pub fn start(project_root: &Path, auth: HttpAuth, tls: Option<TlsAcceptor>) -> GitHttpServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let server = GitHttpServer {
            port,
            stop: stop.clone(),
            ref_listings: Arc::default(),
            upload_packs: Arc::default(),
            unauthorized: Arc::default(),
            authorizations: Arc::default(),
            redirected: Arc::default(),
            redirects: Arc::default(),
        };
        let root = project_root.to_path_buf();
        let (refs, packs, unauth, authorizations) = (
            server.ref_listings.clone(),
            server.upload_packs.clone(),
            server.unauthorized.clone(),
            server.authorizations.clone(),
        );
        let (redirects, redirected) = (server.redirects.clone(), server.redirected.clone());
        thread::spawn(move || {
            for conn in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let _ = conn.set_read_timeout(Some(Duration::from_secs(30)));
                let (root, auth, tls) = (root.clone(), auth.clone(), tls.clone());
                let counters = (refs.clone(), packs.clone(), unauth.clone(), authorizations.clone());
                let redirects = (redirects.clone(), redirected.clone());
                thread::spawn(move || {
                    let redirects = (&redirects.0, &*redirects.1);
                    let result = match tls {
                        Some(acceptor) => match acceptor.accept(conn) {
                            Ok(s) => serve_one(s, &root, &auth, &counters, redirects),
                            Err(_) => Ok(()), // handshake refused by the client
                        },
                        None => serve_one(conn, &root, &auth, &counters, redirects),
                    };
                    if let Err(e) = result {
                        eprintln!("test http server: {e}");
                    }
                });
            }
        });
        server
    }

    pub fn url(&self, repo: &str) -> String {
        format!("http://127.0.0.1:{}/{repo}", self.port)
    }

    /// From now on, answer every request under `/<from>` with a redirect
    /// to `to` (an absolute URL or a path) plus the rest of the request.
    pub fn redirect(&self, from: &str, to: &str) {
        self.redirects.lock().unwrap().push((format!("/{from}"), to.to_string()));
    }
}

impl Drop for GitHttpServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

type Counters = (Arc<AtomicUsize>, Arc<AtomicUsize>, Arc<AtomicUsize>, Arc<AtomicUsize>);

/// Serve one request and close the connection.
fn serve_one<S: Read + Write>(
    stream: S,
    root: &Path,
    auth: &HttpAuth,
    counters: &Counters,
    (redirects, redirected): (&Redirects, &AtomicUsize),
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(());
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let target = parts.next().unwrap_or_default().to_string();
    let mut headers = HashMap::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h)?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    let mut body = Vec::new();
    if headers.get("transfer-encoding").is_some_and(|t| t.eq_ignore_ascii_case("chunked")) {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size)?;
            let n = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16).unwrap_or(0);
            let mut chunk = vec![0; n + 2];
            reader.read_exact(&mut chunk)?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
    } else if let Some(len) = headers.get("content-length").and_then(|l| l.parse::<usize>().ok()) {
        body.resize(len, 0);
        reader.read_exact(&mut body)?;
    }
    let mut stream = reader.into_inner();
    if headers.contains_key("authorization") {
        counters.3.fetch_add(1, Ordering::SeqCst);
    }

    // Redirects come first, as a moved repository's do on real servers.
    let redirect = redirects.lock().unwrap().iter().find_map(|(prefix, to)| {
        target
            .strip_prefix(prefix.as_str())
            .filter(|rest| rest.is_empty() || rest.starts_with(['/', '?']))
            .map(|rest| format!("{to}{rest}"))
    });
    if let Some(location) = redirect {
        redirected.fetch_add(1, Ordering::SeqCst);
        write!(
            stream,
            "HTTP/1.1 301 Moved Permanently\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )?;
        return stream.flush();
    }

    let authorized = match auth {
        HttpAuth::None => true,
        HttpAuth::Basic { user, password } => {
            let expected = openssl::base64::encode_block(format!("{user}:{password}").as_bytes());
            headers.get("authorization") == Some(&format!("Basic {expected}"))
        }
        HttpAuth::Bearer(token) => headers.get("authorization") == Some(&format!("Bearer {token}")),
    };
    if !authorized {
        counters.2.fetch_add(1, Ordering::SeqCst);
        let challenge = match auth {
            HttpAuth::Bearer(_) => "Bearer realm=\"git\"",
            _ => "Basic realm=\"git\"",
        };
        write!(
            stream,
            "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: {challenge}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )?;
        return stream.flush();
    }

    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    if path.ends_with("/info/refs") {
        counters.0.fetch_add(1, Ordering::SeqCst);
    } else if path.ends_with("/git-upload-pack") {
        counters.1.fetch_add(1, Ordering::SeqCst);
    }
    let mut cmd = Command::new("git");
    cmd.arg("http-backend")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_PROJECT_ROOT", root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REQUEST_METHOD", &method)
        .env("PATH_INFO", path)
        .env("QUERY_STRING", query)
        .env("REMOTE_ADDR", "127.0.0.1")
        .env("CONTENT_LENGTH", body.len().to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(ct) = headers.get("content-type") {
        cmd.env("CONTENT_TYPE", ct);
    }
    if let Some(ce) = headers.get("content-encoding") {
        cmd.env("HTTP_CONTENT_ENCODING", ce);
    }
    if let Some(p) = headers.get("git-protocol") {
        cmd.env("GIT_PROTOCOL", p);
    }
    if let HttpAuth::Basic { user, .. } = auth {
        cmd.env("REMOTE_USER", user);
    }
    let mut child = cmd.spawn()?;
    let mut stdin = child.stdin.take().unwrap();
    let writer = thread::spawn(move || {
        let _ = stdin.write_all(&body);
    });
    let out = child.wait_with_output()?;
    let _ = writer.join();
    let raw = out.stdout;
    let split = find(&raw, b"\r\n\r\n").map(|i| (i, 4)).or_else(|| find(&raw, b"\n\n").map(|i| (i, 2)));
    let Some((end, sep)) = split else {
        write!(stream, "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")?;
        return stream.flush();
    };
    let head = String::from_utf8_lossy(&raw[..end]).to_string();
    let content = &raw[end + sep..];
    let mut status = "200 OK".to_string();
    let mut response = Vec::new();
    for h in head.lines() {
        if let Some(s) = h.strip_prefix("Status:") {
            status = s.trim().to_string();
        } else if !h.trim().is_empty() {
            response.extend_from_slice(h.trim_end().as_bytes());
            response.extend_from_slice(b"\r\n");
        }
    }
    write!(stream, "HTTP/1.1 {status}\r\n")?;
    stream.write_all(&response)?;
    write!(stream, "Content-Length: {}\r\nConnection: close\r\n\r\n", content.len())?;
    stream.write_all(content)?;
    stream.flush()
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

// ---------------------------------------------------------------------------
// TLS material for an HTTPS test server.

pub struct TestPki {
    pub ca_pem: Vec<u8>,
    pub acceptor: TlsAcceptor,
}

/// A throwaway CA and a server certificate for `127.0.0.1`/`localhost`.
pub fn test_pki() -> TestPki {
    use openssl::ssl::{SslAcceptor, SslMethod};

    let pki = crate::support::pki::ca_and_leaf(&["localhost", "127.0.0.1"]);
    let mut acceptor = SslAcceptor::mozilla_intermediate_v5(SslMethod::tls()).unwrap();
    acceptor.set_private_key(&pki.leaf_key).unwrap();
    acceptor.set_certificate(&pki.leaf).unwrap();
    acceptor.add_extra_chain_cert(pki.ca.clone()).unwrap();
    TestPki { ca_pem: pki.ca.to_pem().unwrap(), acceptor: Arc::new(acceptor.build()) }
}

// ---------------------------------------------------------------------------
// sshd on a loopback port.

pub struct Sshd {
    pub port: u16,
    pub user: String,
    child: Child,
    pub log: PathBuf,
    /// The deploy key (private, OpenSSH format) authorised for git-upload-pack.
    pub client_key: Vec<u8>,
    /// A key the server does not know.
    pub other_key: Vec<u8>,
    /// `known_hosts` line for this server's host key.
    pub known_hosts: String,
    /// `known_hosts` line with a different key for the same host.
    pub wrong_known_hosts: String,
}

fn find_sshd() -> Option<PathBuf> {
    ["/usr/sbin/sshd", "/usr/local/sbin/sshd", "/sbin/sshd"].iter().map(PathBuf::from).find(|p| p.exists())
}

fn keygen(path: &Path) -> (Vec<u8>, String) {
    let out = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "applyset-test", "-f"])
        .arg(path)
        .output()
        .expect("ssh-keygen (openssh-client) is needed for the SSH tests");
    assert!(out.status.success(), "ssh-keygen: {}", String::from_utf8_lossy(&out.stderr));
    let private = std::fs::read(path).unwrap();
    let public = std::fs::read_to_string(path.with_extension("pub")).unwrap();
    (private, public.trim().to_string())
}

impl Sshd {
    /// Start sshd as the current user on a free loopback port. Panics with
    /// the reason when sshd is not installed: the SSH tests never skip.
    pub fn start(dir: &Path) -> Sshd {
        let sshd = find_sshd().unwrap_or_else(|| {
            panic!(
                "sshd not found (looked in /usr/sbin, /usr/local/sbin, /sbin): the SSH deploy-key tests need \
                 OpenSSH's server; install it with `apt-get install -y --no-install-recommends openssh-server`"
            )
        });
        std::fs::create_dir_all(dir).unwrap();
        let user =
            String::from_utf8(Command::new("id").arg("-un").output().unwrap().stdout).unwrap().trim().to_string();
        // sshd insists on its privilege-separation directory when run as root.
        if user == "root" {
            let _ = std::fs::create_dir_all("/run/sshd");
        }
        let host_key = dir.join("host_key");
        let (_, host_pub) = keygen(&host_key);
        let (_, other_host_pub) = keygen(&dir.join("other_host_key"));
        let (client_key, client_pub) = keygen(&dir.join("client_key"));
        let (other_key, _) = keygen(&dir.join("other_client_key"));

        let wrapper = dir.join("upload-pack-only.sh");
        std::fs::write(
            &wrapper,
            "#!/bin/sh\ncase \"$SSH_ORIGINAL_COMMAND\" in\n  \"git-upload-pack \"*) exec git-shell -c \"$SSH_ORIGINAL_COMMAND\" ;;\n  *) echo \"only git-upload-pack is allowed\" >&2; exit 1 ;;\nesac\n",
        )
        .unwrap();
        std::os::unix::fs::PermissionsExt::set_mode(&mut std::fs::metadata(&wrapper).unwrap().permissions(), 0o755);
        Command::new("chmod").arg("755").arg(&wrapper).status().unwrap();
        std::fs::write(
            dir.join("authorized_keys"),
            format!(
                "command=\"{}\",no-port-forwarding,no-X11-forwarding,no-agent-forwarding,no-pty {client_pub}\n",
                wrapper.display()
            ),
        )
        .unwrap();

        let port = free_port();
        let config = dir.join("sshd_config");
        std::fs::write(
            &config,
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {hk}\nPidFile {pid}\nAuthorizedKeysFile {ak}\n\
                 StrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n\
                 UsePAM no\nPermitRootLogin prohibit-password\nAllowUsers {user}\nLogLevel VERBOSE\n",
                hk = host_key.display(),
                pid = dir.join("sshd.pid").display(),
                ak = dir.join("authorized_keys").display(),
            ),
        )
        .unwrap();
        let log = dir.join("sshd.log");
        let child = Command::new(&sshd)
            .args(["-D", "-e", "-f"])
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", sshd.display()));
        let mut sshd = Sshd {
            port,
            user,
            child,
            log: log.clone(),
            client_key,
            other_key,
            known_hosts: format!("[127.0.0.1]:{port} {host_pub}\n"),
            wrong_known_hosts: format!("[127.0.0.1]:{port} {other_host_pub}\n"),
        };
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Ok(Some(status)) = sshd.child.try_wait() {
                panic!("sshd exited with {status}: {}", std::fs::read_to_string(&log).unwrap_or_default());
            }
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "sshd did not listen on {port}: {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            thread::sleep(Duration::from_millis(50));
        }
        sshd
    }

    pub fn url(&self, bare: &Path) -> String {
        format!("ssh://{}@127.0.0.1:{}{}", self.user, self.port, bare.display())
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
