//! A forward HTTP proxy on loopback, as a cluster's egress proxy is: `CONNECT host:port` for
//! https (a tunnel), absolute-form requests (`GET http://host:port/path`) for plain http. It
//! resolves only the host names it was given, so a remote named by one of them is reachable
//! through it and through nothing else; it can require Basic proxy credentials (407 without).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

pub struct ForwardProxy {
    pub port: u16,
    stop: Arc<AtomicBool>,
    /// Requests served, by kind.
    pub tunnels: Arc<AtomicUsize>,
    pub forwarded: Arc<AtomicUsize>,
    pub refused: Arc<AtomicUsize>,
}

/// What the proxy knows: host name → loopback port, and the credentials it requires.
#[derive(Clone)]
struct Rules {
    hosts: HashMap<String, u16>,
    /// `Basic <base64 user:password>`.
    auth: Option<String>,
}

impl ForwardProxy {
    /// A proxy that reaches `name:port` at `127.0.0.1:port` for each `(name, port)` of
    /// `hosts`; with `credentials`, only requests carrying them as `Proxy-Authorization`.
    pub fn start(hosts: &[(&str, u16)], credentials: Option<(&str, &str)>) -> ForwardProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let rules = Rules {
            hosts: hosts.iter().map(|(name, port)| (format!("{name}:{port}"), *port)).collect(),
            auth: credentials
                .map(|(u, p)| format!("Basic {}", openssl::base64::encode_block(format!("{u}:{p}").as_bytes()))),
        };
        let proxy = ForwardProxy {
            port,
            stop: Arc::default(),
            tunnels: Arc::default(),
            forwarded: Arc::default(),
            refused: Arc::default(),
        };
        let (stop, counters) =
            (proxy.stop.clone(), [proxy.tunnels.clone(), proxy.forwarded.clone(), proxy.refused.clone()]);
        let rules = Arc::new(Mutex::new(rules));
        thread::spawn(move || {
            for conn in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let _ = conn.set_read_timeout(Some(Duration::from_secs(30)));
                let (rules, counters) = (rules.lock().unwrap().clone(), counters.clone());
                thread::spawn(move || {
                    if let Err(e) = serve(conn, &rules, &counters) {
                        eprintln!("test proxy: {e}");
                    }
                });
            }
        });
        proxy
    }

    /// `http://127.0.0.1:<port>`.
    pub fn address(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for ForwardProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn serve(conn: TcpStream, rules: &Rules, [tunnels, forwarded, refused]: &[Arc<AtomicUsize>; 3]) -> std::io::Result<()> {
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut head = Vec::new();
    let mut authorized = rules.auth.is_none();
    loop {
        let mut header = String::new();
        reader.read_line(&mut header)?;
        if header.trim_end().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.trim().eq_ignore_ascii_case("proxy-authorization")
        {
            authorized |= rules.auth.as_deref() == Some(value.trim());
            continue;
        }
        head.push(header);
    }
    let mut client = conn;
    if !authorized {
        refused.fetch_add(1, Ordering::SeqCst);
        write!(
            client,
            "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"proxy\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )?;
        return client.flush();
    }
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
    if method == "CONNECT" {
        let Some(port) = rules.hosts.get(target) else { return bad_gateway(client, refused) };
        let upstream = TcpStream::connect(("127.0.0.1", *port))?;
        tunnels.fetch_add(1, Ordering::SeqCst);
        write!(client, "HTTP/1.1 200 Connection established\r\n\r\n")?;
        // Bytes the client sent after its request head stay in the reader's buffer.
        let buffered = reader.buffer().to_vec();
        return pipe(client, upstream, &buffered);
    }
    // Absolute form: `GET http://host:port/path HTTP/1.1`, sent on as origin form.
    let Some(rest) = target.strip_prefix("http://") else { return bad_gateway(client, refused) };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let Some(port) = rules.hosts.get(authority).or_else(|| rules.hosts.get(&format!("{authority}:80"))) else {
        return bad_gateway(client, refused);
    };
    let mut upstream = TcpStream::connect(("127.0.0.1", *port))?;
    forwarded.fetch_add(1, Ordering::SeqCst);
    let version = parts.next().unwrap_or("HTTP/1.1");
    let path = if path.is_empty() { "/" } else { path };
    write!(upstream, "{method} {path} {version}\r\n")?;
    for header in &head {
        upstream.write_all(header.as_bytes())?;
    }
    upstream.write_all(b"\r\n")?;
    let buffered = reader.buffer().to_vec();
    pipe(client, upstream, &buffered)
}

fn bad_gateway(mut client: TcpStream, refused: &AtomicUsize) -> std::io::Result<()> {
    refused.fetch_add(1, Ordering::SeqCst);
    write!(client, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")?;
    client.flush()
}

/// Copies both ways until either side closes; `first` goes upstream before anything else.
fn pipe(client: TcpStream, mut upstream: TcpStream, first: &[u8]) -> std::io::Result<()> {
    upstream.write_all(first)?;
    let (mut client_in, mut upstream_out) = (client.try_clone()?, upstream.try_clone()?);
    let up = thread::spawn(move || {
        let _ = std::io::copy(&mut client_in, &mut upstream_out);
        let _ = upstream_out.shutdown(Shutdown::Write);
    });
    let mut client_out = client;
    let _ = std::io::copy(&mut upstream, &mut client_out);
    let _ = client_out.shutdown(Shutdown::Write);
    let _ = up.join();
    Ok(())
}
