//! A server that answers a ref listing with a valid head and then a body one byte at a time,
//! slowly and forever: a per-read timeout never fires on it, only a deadline does.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

pub struct DripServer {
    pub port: u16,
    stop: Arc<AtomicBool>,
    /// Connections still being dripped to.
    pub open: Arc<AtomicUsize>,
}

impl DripServer {
    pub fn start() -> DripServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (stop, open) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
        let (stop2, open2) = (stop.clone(), open.clone());
        thread::spawn(move || {
            for conn in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(mut conn) = conn else { continue };
                let (stop, open) = (stop2.clone(), open2.clone());
                thread::spawn(move || {
                    open.fetch_add(1, Ordering::SeqCst);
                    let mut request = [0u8; 4096];
                    let _ = conn.read(&mut request);
                    let head = "HTTP/1.1 200 OK\r\nContent-Type: application/x-git-upload-pack-advertisement\r\nContent-Length: 100000\r\n\r\n";
                    let mut ok = conn.write_all(head.as_bytes()).is_ok();
                    while ok && !stop.load(Ordering::SeqCst) {
                        thread::sleep(Duration::from_millis(200));
                        ok = conn.write_all(b"0").and_then(|()| conn.flush()).is_ok();
                    }
                    open.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        DripServer { port, stop, open }
    }
}

impl Drop for DripServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}
