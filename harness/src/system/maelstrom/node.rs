//! One node of a Maelstrom cluster as a process: the user's binary started in the
//! node's own working directory (`nodes/n1/`), its stderr appended to
//! `nodes/n1/stderr.log`, its stdout read line by line by a thread that hands each
//! line to the router, its stdin written by a thread that takes lines from the
//! router (so a paused node, whose pipe fills, never blocks the router). Each start
//! is one *life*, numbered: what a reader thread reports names the life it read,
//! so a line or an end of output from a node killed since is told apart.
//!
//! A line longer than [`MAX_LINE_BYTES`] is not buffered whole: the reader keeps its
//! start, skips the rest, and reports its length, for the router to refuse it.

use std::ffi::OsString;
use std::fs::OpenOptions;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc as std_mpsc;
use std::time::Instant;

use maelstrom::message::MAX_LINE_BYTES;
use tokio::sync::mpsc::UnboundedSender;

use super::inbound::Inbound;
use crate::error::{HarnessError, Result};
use crate::system::process::piped::PipedChild;

/// How to start a node (again).
#[derive(Debug, Clone)]
pub struct NodeSpec {
    /// Its Maelstrom id: `n1`.
    pub id: String,
    /// Its place among the nodes, from 0.
    pub index: usize,
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// Its environment beyond the harness's own (its fake clock's, if any).
    pub env: Vec<(OsString, OsString)>,
    /// Its working directory: what it writes there survives a kill.
    pub dir: PathBuf,
    pub stderr: PathBuf,
}

/// A running life of a node.
#[derive(Debug)]
pub struct NodeProc {
    pub child: Arc<PipedChild>,
    stdin: std_mpsc::Sender<String>,
    pub life: u64,
}

impl NodeProc {
    /// Queue one line (ending in `\n`) for the node's stdin; false if its stdin is
    /// gone (the node closed it or died).
    pub fn send(&self, line: String) -> bool {
        self.stdin.send(line).is_ok()
    }
}

/// Start life `life` of the node, its lines handed to `inbound`.
pub async fn start(
    spec: &NodeSpec,
    life: u64,
    inbound: UnboundedSender<Inbound>,
) -> Result<NodeProc> {
    std::fs::create_dir_all(&spec.dir)
        .map_err(|e| HarnessError::new(format!("cannot create {}: {e}", spec.dir.display())))?;
    let stderr = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&spec.stderr)
        .map_err(|e| HarnessError::new(format!("cannot open {}: {e}", spec.stderr.display())))?;
    let (child, stdin, stdout) =
        PipedChild::spawn(&spec.program, &spec.args, &spec.env, &spec.dir, stderr)
            .await
            .map_err(|e| HarnessError::new(format!("node {}: {e}", spec.id)))?;
    let child = Arc::new(child);
    let (tx, rx) = std_mpsc::channel::<String>();
    let index = spec.index;
    std::thread::Builder::new()
        .name(format!("{} stdin", spec.id))
        .spawn(move || write_lines(stdin, rx))?;
    std::thread::Builder::new()
        .name(format!("{} stdout", spec.id))
        .spawn(move || read_lines(stdout, index, life, inbound))?;
    Ok(NodeProc {
        child,
        stdin: tx,
        life,
    })
}

fn write_lines(mut stdin: std::process::ChildStdin, rx: std_mpsc::Receiver<String>) {
    for line in rx {
        if stdin.write_all(line.as_bytes()).is_err() || stdin.flush().is_err() {
            return;
        }
    }
}

fn read_lines(
    stdout: std::process::ChildStdout,
    node: usize,
    life: u64,
    inbound: UnboundedSender<Inbound>,
) {
    let mut reader = BufReader::new(stdout);
    loop {
        let mut line = Vec::new();
        match read_bounded(&mut reader, &mut line, MAX_LINE_BYTES) {
            Ok(Some(len)) => {
                let at = Instant::now();
                let too_long = (len > MAX_LINE_BYTES + 1).then_some(len);
                let sent = inbound.send(Inbound::Line {
                    node,
                    life,
                    line,
                    too_long,
                    at,
                });
                if sent.is_err() {
                    return;
                }
            }
            Ok(None) | Err(_) => break,
        }
    }
    let _ = inbound.send(Inbound::Closed { node, life });
}

/// Read one line into `line`, keeping at most `max + 1` bytes of it: its length in
/// bytes (its newline included), or None at the end of the output.
pub fn read_bounded(
    r: &mut impl BufRead,
    line: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Option<usize>> {
    let mut total = 0;
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok((total > 0).then_some(total));
        }
        let (take, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        let room = (max + 1).saturating_sub(line.len());
        line.extend_from_slice(&buf[..take.min(room)]);
        total += take;
        r.consume(take);
        if done {
            return Ok(Some(total));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_read_whole_or_cut_with_their_length() {
        let text = b"short\nthis line is far too long\nend".to_vec();
        let mut r = BufReader::with_capacity(4, &text[..]);
        let mut line = Vec::new();
        assert_eq!(read_bounded(&mut r, &mut line, 10).unwrap(), Some(6));
        assert_eq!(line, b"short\n");
        line.clear();
        assert_eq!(read_bounded(&mut r, &mut line, 10).unwrap(), Some(26));
        assert_eq!(line.len(), 11, "only the start of a long line is kept");
        line.clear();
        assert_eq!(read_bounded(&mut r, &mut line, 10).unwrap(), Some(3));
        assert_eq!(line, b"end");
        line.clear();
        assert_eq!(read_bounded(&mut r, &mut line, 10).unwrap(), None);
    }
}
